"""Changing a trained model without retraining it: RoPE's pair layout and RoPE's scaling rule.

Each function takes a trained TinyTransformer and returns a copy with the same weights (the
original is not changed), so these operations sit above the models they change:

- ``convert_rope_layout`` (lesson 11): interleaved ↔ halves pairs, permuting the rows of W_q and
  W_k so that every score stays the same (or not, to show what a port that forgets does).
- ``with_rope_scaling`` (lesson 12): position interpolation, NTK-aware, dynamic or YaRN
  frequencies for a model trained with plain RoPE.
- ``with_attn_temperature`` (lesson 16): Llama 4's query temperature on a model's NoPE layers.
"""

from __future__ import annotations

import dataclasses

import torch

from . import _validate
from .encodings import LAYOUTS
from .extension import SCALINGS, RopeScaling, loose_settings_given
from .models import TinyTransformer
from .rope import rope_permutation


def convert_rope_layout(model, layout: str, *, permute: bool = True):
    """A copy of a RoPE TinyTransformer that uses ``layout``, with the same scores if permute=True.

    Each head's query and key rows of every attention layer are permuted with rope_permutation
    (or its inverse), so the logits are unchanged. permute=False only switches the layout, as a
    port that forgets the permutation does. ``model`` itself is not changed.
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if model.config.position != "rope":
        raise ValueError(f'model must use position="rope", got position="{model.config.position}"')
    layout = _validate.choice(layout, "layout", LAYOUTS)
    permute = _validate.flag(permute, "permute")
    config = dataclasses.replace(model.config, rope_layout=layout)
    converted = TinyTransformer(config)
    converted.load_state_dict(model.state_dict())
    n_heads, d_model = config.n_heads, config.d_model
    d_head = d_model // n_heads
    order = torch.arange(d_head)
    if permute and layout != model.config.rope_layout:
        perm = rope_permutation(d_head)
        order = perm if layout == "halves" else torch.argsort(perm)
    rows = (torch.arange(2 * n_heads)[:, None] * d_head + order[None, :]).reshape(-1)  # q and k rows
    with torch.no_grad():
        for block in converted.blocks:
            qkv = block.attention.qkv
            qkv.weight[: 2 * d_model] = qkv.weight[rows].clone()
            qkv.bias[: 2 * d_model] = qkv.bias[rows].clone()
    return converted


def with_rope_scaling(model, scaling: str | RopeScaling | None, *, factor: float = 1.0,
                      original_max_len: int | None = None, beta_fast: float = 32.0, beta_slow: float = 1.0):
    """A copy of a trained position="rope" TinyTransformer, same weights, with ``scaling`` applied.

    No retraining: only the frequencies (and, for "yarn", the attention temperature) change. The
    copy can be fine-tuned like any model; ``model`` itself is not changed. scaling: "linear",
    "ntk", "dynamic" or "yarn" with its settings as arguments (original_max_len, the training
    length L, for "dynamic" and "yarn"; beta_fast and beta_slow, YaRN's thresholds in turns
    within L, see yarn_ramp), or a RopeScaling record holding them all, or None for plain RoPE.
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if model.config.position != "rope":
        raise ValueError(f'model must use position="rope", got position="{model.config.position}"')
    if isinstance(scaling, RopeScaling) or scaling is None:
        if loose_settings_given(factor, original_max_len, beta_fast, beta_slow):
            raise ValueError("factor, original_max_len, beta_fast and beta_slow go with a scaling such as "
                             '"linear"; a RopeScaling record holds its own, and None is plain RoPE')
        rule = scaling
    else:
        rule = RopeScaling(_validate.choice(scaling, "scaling", SCALINGS), factor, original_max_len, beta_fast,
                           beta_slow)
    config = dataclasses.replace(model.config, rope_scaling=rule)  # ModelConfig checks it with the model
    scaled = TinyTransformer(config)
    scaled.load_state_dict(model.state_dict())
    scaled.train(model.training)
    return scaled


def with_attn_temperature(model, *, floor_scale: int, attn_scale: float = 0.1):
    """A copy of a trained RoPE TinyTransformer with NoPE layers (ModelConfig.nope_layers), same
    weights, whose NoPE layers multiply each query at position t by Llama 4's
    1 + attn_scale·ln(1 + ⌊(t + 1) / floor_scale⌋) (``attn_temperature_tuning``; Llama 4 uses
    floor_scale 8,192 and attn_scale 0.1). Positions t + 1 < floor_scale are read as before.
    ``model`` itself is not changed.
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if not model.config.nope_layers:
        raise ValueError("model has no NoPE layers (ModelConfig.nope_layers): Llama 4's temperature scales "
                         "only the queries of layers without RoPE")
    floor_scale = _validate.integer(floor_scale, "floor_scale", minimum=1, maximum=10**9)
    attn_scale = _validate.real(attn_scale, "attn_scale")
    config = dataclasses.replace(model.config, attn_temperature=(floor_scale, attn_scale))
    tuned = TinyTransformer(config)
    tuned.load_state_dict(model.state_dict())
    tuned.train(model.training)
    return tuned
