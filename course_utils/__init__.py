"""course_utils: the code behind "Positional Encodings, Derived".

A lesson imports what it needs from here:

    from course_utils import setup, sinusoidal_encoding, attention

One module per idea, named as in the lessons: naive (lesson 02), encodings (03), relative (04),
combine (05), decomposition (06), learned (07), layers (08), causal (09), biases,
attention_positions and position_free (10), rope and model_edits (11), extension (12),
grid_codes, digits, vit and vision (13), text and corpus (14), rope_config, rope_base,
rope_precision, qk_norm, mla and position_ids (15), mrope, interleaving and streaming (16);
attention, models, tasks, training, probes, plots, widgets, display and session are shared by
all; zoo loads the converged checkpoints that lessons study instead of training for minutes;
evidence prints a trained section's "How we know" footer from the record beside the zoo's
manifest (the 2x rule and further seeds, computed once); checks holds the homework checks.

The house, from the ground up. A module imports only modules on its own floor or below, never
in a circle and never inside a function (tests/test_import_graph.py enforces all three, from this
table):

    floor 1  _validate, _deprecation        argument checks; names importable from where they were
    floor 2  session, display, encodings, naive, relative, rope, extension, biases, grid_codes,
             attention, probes, tasks, digits, combine, corpus, rope_config, position_free, mrope,
             rope_base, rope_precision, qk_norm, mla, interleaving, reproducible, exact,
             evidence
                                            position math and measurements, free of models
    floor 3  models, vit, input_codes       the model family: one Block, the codes below
    floor 4  model_edits, attention_positions, causal, decomposition, layers, learned, text, zoo,
             position_ids, streaming
                                            work on models: edit, measure, read, feed, load
    floor 5  training                       the one training loop: tasks, texts, images
    floor 6  vision, recipes                lesson 13's measurements of a trained ViT; the
                                            lessons' trained set-ups, shared with the record
    floor 7  plots, widgets                 figures and explorers
    floor 8  __init__                       this namespace

checks/ stands apart: the homework checks keep their own references and import nothing from the
rest of the package (a check that called the package would agree with its bugs).
"""

# First of all: fix the math libraries' code path before anything computes (see session.py).
from .session import pin_numerics as _pin_numerics

_pin_numerics()

from .attention import attention, causal_mask
from .attention_positions import (attention_at_offset, attention_beyond, attention_entropy, favourite_key_gap,
                                  offset_head, OffsetHead, pair_logits, rival_margin, RivalMargin, without_pairs)
from .biases import alibi_bias, alibi_slopes, RelativeBias
from .causal import (attention_to_first, bos_weight, fit_bos_bias, permutation_gap, uniform_causal_weights,
                     with_mask)
from .combine import (block_parameters, cosine_spread, effective_rank, nearest_token_accuracy, principal_angles,
                      principal_directions, Recovery, share_in_subspace, token_recovery)
from .decomposition import (four_term_decomposition, FourTerms, key_argmax_share, key_pull, model_four_terms,
                            offset_argmax_share, offset_dependence, offset_only_r2, offset_profile, offset_pull,
                            term_subspaces, weight_on_key, without_terms)
from .display import claims_table, magnitude, per_seed_table, range_means, rounded, seed_table
from .evidence import evidence, how_we_know
from .encodings import frequencies, offset_similarity, pair_columns, sinusoidal_encoding
from .extension import angle_coverage, rope_frequencies, RopeScaling, yarn_attention_scale, yarn_ramp
from .layers import (layer_profile, LayerProfile, moving_average, position_labels, residual_features,
                     ResidualFeatures, steps_to_accuracy)
from .learned import (add_learned_code, band_summary, cosine_similarity_matrix, far_similarity,
                      initialise_table, neighbour_similarity, relative_movement, weight_back)
from .model_edits import convert_rope_layout, with_attn_temperature, with_rope_scaling
from .models import count_parameters, ModelConfig, TinyTransformer
from .mrope import mrope_axes, mrope_positions, mrope_rotate
from .naive import binary_encoding, integer_encoding, normalised_encoding, one_hot_encoding
from .plots import (attention_heatmap, code_heatmap, four_term_heatmaps, layer_curves, matrix_heatmap,
                    similarity_vs_offset)
from .position_free import most_frequent_earlier, position_free_accuracy
from .probes import linear_probe, logistic_probe, variance_explained
from .reproducible import AdamW
from .relative import commuting_map, fit_offset_map, least_squares_map, offset_matrix
from .rope import rope_decay_bound, rope_decode_step, rope_permutation, rope_rotate
from .rope_config import llama3_bands, rope_frequencies_from_config
from .rope_base import (first_negative, kept_lead, sampled_similarity_gap, similar_token_score, smallest_bases,
                        wrong_way_share)
from .rope_precision import angle_error, score_error
from .qk_norm import rms_norm
from .mla import mla_cache_elements, mla_scores
from .position_ids import packed_document_bits, position_ids
from .streaming import (attention_entropy_by_position, dynamic_cache_gap, long_context_scale,
                         streaming_attention, streaming_loss)
from .session import environment_report, setup
from .tasks import make_batch, n_classes, scored_accuracy
from .text import (context_gain, counts_by_position, load_text_corpus, loss_by_position, text_batch,
                   text_windows, unigram_bigram_bits, validation_split)
from .training import accuracy_by_position, evaluate, train
from .recipes import (copy_accuracy, copy_offset_models, four_term_model, four_term_models,
                      last_copy_ablation, last_copy_models, last_copy_test_batch, layer_stack_model,
                      layer_stack_models, own_index_models, previous_token_model, read_past)
from .grid_codes import grid_positions, patchify, resize_table, rope_rotate_2d, sinusoidal_encoding_2d
from .digits import load_digits_patches
# train_vit: deprecated, kept out of __all__
from .vision import attention_distance, embedded_patches, evaluate_vit, train_vit, vit_features
from .vit import TinyViT, ViTConfig
from .zoo import budget_report, pretrained, zoo_manifest

__all__ = [
    "accuracy_by_position",
    "AdamW",
    "add_learned_code",
    "alibi_bias",
    "alibi_slopes",
    "angle_coverage",
    "angle_error",
    "attention",
    "attention_at_offset",
    "attention_beyond",
    "attention_distance",
    "attention_entropy",
    "attention_entropy_by_position",
    "attention_heatmap",
    "attention_to_first",
    "band_summary",
    "binary_encoding",
    "block_parameters",
    "bos_weight",
    "budget_report",
    "causal_mask",
    "claims_table",
    "code_heatmap",
    "commuting_map",
    "context_gain",
    "convert_rope_layout",
    "copy_accuracy",
    "copy_offset_models",
    "cosine_similarity_matrix",
    "cosine_spread",
    "count_parameters",
    "counts_by_position",
    "dynamic_cache_gap",
    "effective_rank",
    "embedded_patches",
    "environment_report",
    "evaluate",
    "evaluate_vit",
    "evidence",
    "far_similarity",
    "favourite_key_gap",
    "first_negative",
    "fit_bos_bias",
    "fit_offset_map",
    "four_term_decomposition",
    "four_term_heatmaps",
    "four_term_model",
    "four_term_models",
    "FourTerms",
    "frequencies",
    "grid_positions",
    "how_we_know",
    "initialise_table",
    "integer_encoding",
    "kept_lead",
    "key_argmax_share",
    "key_pull",
    "last_copy_ablation",
    "last_copy_models",
    "last_copy_test_batch",
    "layer_curves",
    "layer_profile",
    "layer_stack_model",
    "layer_stack_models",
    "LayerProfile",
    "least_squares_map",
    "linear_probe",
    "llama3_bands",
    "load_digits_patches",
    "load_text_corpus",
    "logistic_probe",
    "long_context_scale",
    "loss_by_position",
    "magnitude",
    "make_batch",
    "matrix_heatmap",
    "mla_cache_elements",
    "mla_scores",
    "model_four_terms",
    "ModelConfig",
    "most_frequent_earlier",
    "moving_average",
    "mrope_axes",
    "mrope_positions",
    "mrope_rotate",
    "n_classes",
    "nearest_token_accuracy",
    "neighbour_similarity",
    "normalised_encoding",
    "offset_argmax_share",
    "offset_dependence",
    "offset_head",
    "offset_matrix",
    "offset_only_r2",
    "offset_profile",
    "offset_pull",
    "offset_similarity",
    "OffsetHead",
    "one_hot_encoding",
    "packed_document_bits",
    "own_index_models",
    "pair_columns",
    "pair_logits",
    "patchify",
    "per_seed_table",
    "permutation_gap",
    "position_free_accuracy",
    "position_ids",
    "position_labels",
    "pretrained",
    "previous_token_model",
    "principal_angles",
    "principal_directions",
    "range_means",
    "read_past",
    "Recovery",
    "relative_movement",
    "RelativeBias",
    "residual_features",
    "ResidualFeatures",
    "resize_table",
    "rival_margin",
    "RivalMargin",
    "rms_norm",
    "rope_decay_bound",
    "rope_decode_step",
    "rope_frequencies",
    "rope_frequencies_from_config",
    "rope_permutation",
    "rope_rotate",
    "rope_rotate_2d",
    "RopeScaling",
    "rounded",
    "sampled_similarity_gap",
    "score_error",
    "scored_accuracy",
    "seed_table",
    "setup",
    "share_in_subspace",
    "similar_token_score",
    "similarity_vs_offset",
    "sinusoidal_encoding",
    "sinusoidal_encoding_2d",
    "smallest_bases",
    "steps_to_accuracy",
    "streaming_attention",
    "streaming_loss",
    "term_subspaces",
    "text_batch",
    "text_windows",
    "TinyTransformer",
    "TinyViT",
    "token_recovery",
    "train",
    "uniform_causal_weights",
    "unigram_bigram_bits",
    "validation_split",
    "variance_explained",
    "vit_features",
    "ViTConfig",
    "weight_back",
    "weight_on_key",
    "with_attn_temperature",
    "with_mask",
    "with_rope_scaling",
    "without_pairs",
    "without_terms",
    "wrong_way_share",
    "yarn_attention_scale",
    "yarn_ramp",
    "zoo_manifest",
]
__version__ = "0.12.0"
