"""Homework checks: call ``check_x(your_function)`` and read one line of feedback.

Every check compares the learner's answer with a float64 reference over several inputs,
edge cases included, prints exactly one line that starts with ``✅ Correct`` or
``❌ Not yet:``, and returns True or False. A check never raises: an exception from the
learner's code, a wrong type or shape, NaNs, or a stub that still raises
NotImplementedError all become a ``❌`` line that says what to fix. When a wrong answer
matches a mistake the check knows (a missing scale, a transposed matrix, ...), it names it.
"""

from .attention import check_attention, check_causal_mask, check_permutation_matrix, check_softmax
from .attention_positions import check_alibi_bias, check_rope_rotate
from .causal import check_bos_share, check_uniform_causal_weights
from .combine import check_as_addition, check_block_parameters, check_cosine_similarity
from .decomposition import check_is_offset_only, check_token_position_term
from .encodings import check_offset_similarity, check_sinusoidal_encoding, check_wavelengths
from .extension import check_ntk_base, check_pair_turns, check_yarn_blend
from .layers import check_position_labels, check_variance_explained_by
from .learned import check_add_learned_code, check_cosine_similarity_matrix, check_neighbour_similarity
from .many_axes import check_llama4_scale, check_mrope_positions, check_stream_mask
from .naive import check_binary_code, check_hamming_distance, check_normalised_positions
from .relative import check_offset_map, check_rotation_block
from .rope import check_decode_step, check_rope_complex, check_rope_permutation
from .rope_today import check_absorbed_scores, check_llama3_frequencies, check_position_ids
from .text import check_bits_per_character, check_last_context, check_next_character_windows
from .vision import check_patchify, check_rope_2d, check_sinusoidal_2d

__all__ = [
    "check_absorbed_scores",
    "check_add_learned_code",
    "check_alibi_bias",
    "check_as_addition",
    "check_attention",
    "check_binary_code",
    "check_bits_per_character",
    "check_block_parameters",
    "check_bos_share",
    "check_causal_mask",
    "check_cosine_similarity",
    "check_cosine_similarity_matrix",
    "check_decode_step",
    "check_hamming_distance",
    "check_is_offset_only",
    "check_last_context",
    "check_llama3_frequencies",
    "check_llama4_scale",
    "check_mrope_positions",
    "check_neighbour_similarity",
    "check_next_character_windows",
    "check_normalised_positions",
    "check_ntk_base",
    "check_offset_map",
    "check_offset_similarity",
    "check_pair_turns",
    "check_patchify",
    "check_permutation_matrix",
    "check_position_ids",
    "check_position_labels",
    "check_rope_2d",
    "check_rope_complex",
    "check_rope_permutation",
    "check_rope_rotate",
    "check_rotation_block",
    "check_sinusoidal_2d",
    "check_sinusoidal_encoding",
    "check_softmax",
    "check_stream_mask",
    "check_token_position_term",
    "check_uniform_causal_weights",
    "check_variance_explained_by",
    "check_wavelengths",
    "check_yarn_blend",
]
