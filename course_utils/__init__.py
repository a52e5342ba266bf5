"""course_utils: the code behind "Positional Encodings, Derived".

A lesson imports what it needs from here:

    from course_utils import setup, sinusoidal_encoding, attention
"""

from .attention import attention, causal_mask
from .combine import (Recovery, block_parameters, cosine_spread, effective_rank, principal_angles,
                      principal_directions, share_in_subspace, token_recovery)
from .decomposition import FourTerms, four_term_decomposition, model_four_terms, offset_dependence, offset_profile
from .display import rounded
from .encodings import frequencies, offset_similarity, pair_columns, sinusoidal_encoding
from .models import ModelConfig, TinyTransformer, count_parameters
from .naive import binary_encoding, integer_encoding, normalised_encoding, one_hot_encoding
from .probes import linear_probe, variance_explained
from .plots import attention_heatmap, code_heatmap, four_term_heatmaps, matrix_heatmap, similarity_vs_offset
from .relative import fit_offset_map, least_squares_map, offset_matrix
from .session import environment_report, setup
from .tasks import make_batch, n_classes
from .training import evaluate, train

__all__ = [
    "Recovery", "block_parameters", "cosine_spread", "effective_rank", "principal_angles",
    "principal_directions", "share_in_subspace", "token_recovery",
    "FourTerms",
    "ModelConfig",
    "TinyTransformer",
    "count_parameters",
    "evaluate",
    "linear_probe",
    "make_batch",
    "n_classes",
    "train",
    "variance_explained",
    "attention",
    "attention_heatmap",
    "binary_encoding",
    "causal_mask",
    "code_heatmap",
    "environment_report",
    "fit_offset_map",
    "four_term_decomposition",
    "four_term_heatmaps",
    "model_four_terms",
    "frequencies",
    "integer_encoding",
    "least_squares_map",
    "matrix_heatmap",
    "normalised_encoding",
    "offset_dependence",
    "offset_matrix",
    "offset_profile",
    "offset_similarity",
    "one_hot_encoding",
    "pair_columns",
    "rounded",
    "setup",
    "similarity_vs_offset",
    "sinusoidal_encoding",
]
__version__ = "0.1.0"
