"""Homework checks: call ``check_x(your_function)`` and read one line of feedback.

Every check compares the learner's answer with a float64 reference over several inputs,
edge cases included, prints exactly one line that starts with ``✅ Correct`` or
``❌ Not yet:``, and returns True or False. A check never raises: an exception from the
learner's code, a wrong type or shape, NaNs, or a stub that still raises
NotImplementedError all become a ``❌`` line that says what to fix. When a wrong answer
matches a mistake the check knows (a missing scale, a transposed matrix, ...), it names it.
"""

from .attention import check_attention, check_causal_mask, check_permutation_matrix, check_softmax
from .combine import check_as_addition, check_block_parameters, check_cosine_similarity
from .naive import check_binary_code, check_hamming_distance, check_normalised_positions
from .decomposition import check_is_offset_only, check_token_position_term
from .encodings import check_offset_similarity, check_sinusoidal_encoding, check_wavelengths
from .relative import check_offset_map, check_rotation_block

__all__ = ["check_as_addition", "check_block_parameters", "check_cosine_similarity",
           "check_attention", "check_causal_mask", "check_permutation_matrix", "check_softmax",
           "check_binary_code", "check_hamming_distance", "check_normalised_positions",
           "check_offset_similarity", "check_sinusoidal_encoding", "check_wavelengths",
           "check_offset_map", "check_rotation_block",
           "check_is_offset_only", "check_token_position_term"]
