"""course_utils: the code behind "Positional Encodings, Derived".

A lesson imports what it needs from here:

    from course_utils import setup, sinusoidal_encoding, attention
"""

from .attention import attention, causal_mask
from .decomposition import FourTerms, four_term_decomposition
from .display import rounded
from .encodings import frequencies, pair_columns, sinusoidal_encoding
from .plots import attention_heatmap
from .relative import offset_matrix
from .session import environment_report, setup

__all__ = [
    "FourTerms",
    "attention",
    "attention_heatmap",
    "causal_mask",
    "environment_report",
    "four_term_decomposition",
    "frequencies",
    "offset_matrix",
    "pair_columns",
    "rounded",
    "setup",
    "sinusoidal_encoding",
]
__version__ = "0.1.0"
