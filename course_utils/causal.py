"""How a causal mask lets a model without a position code count: the share of the first token.

Under a causal mask the query at position t sees the keys 0 .. t. If all its logits are equal,
each key gets weight 1/(t+1); if the first key (a beginning-of-sequence marker, BOS) scores b
above the others, the BOS key gets e^b / (e^b + t). Either way the weight on BOS falls
monotonically with t, so whatever the BOS value vector writes into the output is a position
signal. Without the mask every query sees all n keys and the weight is the same at every t.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import torch

from . import _validate
from .attention import causal_mask
from .models import TinyTransformer


def uniform_causal_weights(n: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The causal attention weights when every logit is equal: row t is 1/(t+1) on keys 0..t, 0 after.

    Returns [n, n], lower-triangular, each row summing to 1.
    """
    n = _validate.integer(n, "n", minimum=1)
    dtype = _validate.float_dtype(dtype)
    _validate.size_budget(n * n, "the weights [n, n]")
    counts = torch.arange(1, n + 1, dtype=dtype)
    return causal_mask(n).to(dtype) / counts[:, None]


def _positions(t, name: str = "t") -> torch.Tensor:
    """Positions t >= 0 (an int, a sequence of ints or an integer tensor) as a float64 tensor."""
    if isinstance(t, torch.Tensor):
        if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            raise TypeError(f"{name} must hold integer positions, got dtype {t.dtype}")
        positions = t.to(torch.float64)
    elif isinstance(t, (list, tuple)):
        positions = torch.tensor([_validate.integer(v, name) for v in t], dtype=torch.float64)
    else:
        positions = torch.tensor(float(_validate.integer(t, name)), dtype=torch.float64)
    if positions.numel() and positions.min() < 0:
        raise ValueError(f"{name} must be positions >= 0, got a minimum of {int(positions.min())}")
    return positions


def bos_weight(t, bias: float = 0.0) -> torch.Tensor:
    """Causal attention weight on the first key for a query at position t: e^b / (e^b + t).

    The first key's logit is ``bias`` = b above the t other keys', which all tie. b = 0 is
    uniform attention, 1/(t+1). t: an int, a list of ints or an integer tensor of positions
    >= 0. Returns a float64 tensor of t's shape.
    """
    positions = _positions(t)
    bias = _validate.real(bias, "bias")
    # e^-b overflows for b below about -709; e^700 already makes every t >= 1 weigh 0 in float64
    return 1.0 / (1.0 + positions * math.exp(min(-bias, 700.0)))


def fit_bos_bias(first_weights) -> float:
    """The bias b for which bos_weight(t, b) best matches measured weights on the first key.

    first_weights: [n] (n >= 2), the weight a query at position t = 0 .. n-1 puts on key 0
    (entry 0 is 1 under a causal mask and is ignored). Each t >= 1 gives
    b_t = log(w_t t / (1 - w_t)); the median of the b_t is returned.
    """
    weights = _validate.float_tensor(first_weights, "first_weights").detach().to(torch.float64)
    if weights.ndim != 1 or weights.shape[0] < 2:
        raise ValueError(f"first_weights must be 1-D with at least 2 positions, got shape {tuple(weights.shape)}")
    later = weights[1:]
    if (later <= 0).any() or (later >= 1).any():
        raise ValueError("first_weights must lie strictly between 0 and 1 at positions t >= 1")
    t = torch.arange(1, weights.shape[0], dtype=torch.float64)
    return torch.log(later * t / (1 - later)).median().item()


def attention_to_first(model: TinyTransformer, tokens: torch.Tensor, *, layer: int = 0) -> torch.Tensor:
    """Mean attention weight on key 0 (the first token) for every query position, per head.

    tokens: [batch, n]. Returns [n_heads, n]: entry (h, t) is head h's weight from query t to
    key 0 in block ``layer``, averaged over the batch.
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if model.config.n_layers == 0:
        raise ValueError("model has no blocks (n_layers = 0), so there are no attention weights to read")
    layer = _validate.integer(layer, "layer", minimum=0)
    if layer >= model.config.n_layers:
        raise ValueError(f"layer must be below n_layers = {model.config.n_layers}, got {layer}")
    if model._check_tokens(tokens).shape[0] == 0:
        raise ValueError(f"tokens must hold at least one sequence to average over, got shape {tuple(tokens.shape)}")
    with torch.no_grad():
        weights = model(tokens, details=True).attention_weights[layer]  # [batch, heads, n, n]
    return weights[..., 0].mean(dim=0)


def with_mask(model: TinyTransformer, *, causal: bool) -> TinyTransformer:
    """A copy of ``model`` with the same weights, with (causal=True) or without the causal mask."""
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    copy = TinyTransformer(dataclasses.replace(model.config, causal=causal))
    copy.load_state_dict(model.state_dict())
    copy.train(model.training)
    return copy


def permutation_gap(model: TinyTransformer, tokens: torch.Tensor, order) -> float:
    """max |model(tokens[:, order]) - model(tokens)[:, order]|: 0 for a permutation-equivariant model.

    tokens: [batch, n]; order: a permutation of 0 .. n-1 (list or integer tensor). Computed on a
    float64 copy of the model, so float32 rounding (different summation orders) does not blur a
    true zero: an equivariant model gives about 1e-13.
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"tokens must be a torch.Tensor of token ids, got {type(tokens).__name__}")
    if tokens.ndim != 2 or 0 in tokens.shape:
        raise ValueError(f"tokens must have shape [batch, n] with batch, n >= 1, got {tuple(tokens.shape)}")
    n = tokens.shape[1]
    try:
        order = torch.as_tensor(order)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"order must be a list or tensor of positions, got {type(order).__name__}") from None
    if order.ndim != 1 or order.is_floating_point() or order.dtype == torch.bool \
            or sorted(order.tolist()) != list(range(n)):
        raise ValueError(f"order must be a permutation of 0 .. {n - 1} (one entry per position of tokens)")
    exact = copy.deepcopy(model).double().eval()
    with torch.no_grad():
        return (exact(tokens[:, order]) - exact(tokens)[:, order]).abs().max().item()
