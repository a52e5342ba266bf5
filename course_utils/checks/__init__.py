"""Homework checks: call ``check_x(your_function)`` and read one line of feedback.

Every check compares the learner's answer with a float64 reference over several inputs,
edge cases included, prints exactly one line that starts with ``✅ Correct`` or
``❌ Not yet:``, and returns True or False. A check never raises: an exception from the
learner's code, a wrong type or shape, NaNs, or a stub that still raises
NotImplementedError all become a ``❌`` line that says what to fix. When a wrong answer
matches a mistake the check knows (a missing scale, a transposed matrix, ...), it names it.
"""

from .attention import check_attention, check_causal_mask, check_permutation_matrix, check_softmax

__all__ = ["check_attention", "check_causal_mask", "check_permutation_matrix", "check_softmax"]
