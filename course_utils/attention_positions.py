"""Where attention goes: measurements of a head's weights by offset (lessons 10–12).

The codes that act inside attention live below the models: RoPE in course_utils/rope.py
(Su et al. 2021), ALiBi and the learned relative bias in course_utils/biases.py.

``attention_at_offset``, ``attention_beyond`` and ``attention_entropy`` measure where a head
looks at lengths it never trained on: its weight on the key a given number of steps back, its
share of weight on keys more than a given distance back, and how spread its weights are.
``offset_head`` finds, in a trained model, the head that attends to a given offset (lesson 11's
previous-token head, lesson 12's copy head); the lessons and their claims tests call it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _validate, biases, rope
from ._deprecation import moved
from .models import TinyTransformer

# Lesson 10's biases moved to biases.py (below the models) in 0.2; rope_rotate lives in rope.py.
__getattr__ = moved(__name__, {"alibi_bias": biases.alibi_bias, "alibi_slopes": biases.alibi_slopes,
                               "checked_slopes": biases.checked_slopes, "RelativeBias": biases.RelativeBias,
                               "rope_rotate": rope.rope_rotate}, since="0.2")


def attention_entropy(weights: torch.Tensor) -> torch.Tensor:
    """How spread each query's attention is: −Σ_s w_ts·ln w_ts, in nats (0·ln 0 = 0).

    weights [..., n, n] (rows sum to 1). Returns [..., n]. 0 when a query puts all its weight on
    one key, ln(m) when it spreads evenly over m keys: a causal query at t spreading evenly over
    its t + 1 keys has ln(t + 1).
    """
    weights = _square_weights(weights)
    logs = torch.where(weights > 0, weights.log(), torch.zeros_like(weights))
    return -(weights * logs).sum(dim=-1)


def _square_weights(weights) -> torch.Tensor:
    weights = _validate.float_tensor(weights, "weights", min_dims=2)
    if weights.shape[-2] != weights.shape[-1]:
        raise ValueError(f"weights must be square in its last two dimensions [..., n, n], got {tuple(weights.shape)}")
    return weights


def attention_at_offset(weights: torch.Tensor, offset: int) -> torch.Tensor:
    """Each query's attention weight on the key ``offset`` positions back (s = t − offset).

    weights [..., n, n]: row t (the query) holds the weights on keys s = 0 .. n-1. Returns
    [..., n]: entry t is weights[..., t, t − offset], 0 where t − offset < 0 (no such key).
    offset = 1 is the previous token, offset = 0 the query's own token.
    """
    weights = _square_weights(weights)
    offset = _validate.integer(offset, "offset", minimum=0)
    n = weights.shape[-1]
    out = torch.zeros(weights.shape[:-1], dtype=weights.dtype, device=weights.device)
    if offset < n:
        t = torch.arange(offset, n)
        out[..., offset:] = weights[..., t, t - offset]
    return out


def attention_beyond(weights: torch.Tensor, distance: int) -> torch.Tensor:
    """Share of each query's attention weight on keys more than ``distance`` positions back.

    weights [..., n, n]: row t (the query) holds the weights on keys s = 0 .. n-1 (each row
    sums to 1, e.g. a model's ``attention_weights``). Returns [..., n]: entry t is the sum of
    row t over the keys s < t − distance. Zero for every t <= distance.
    """
    weights = _square_weights(weights)
    n = weights.shape[-1]
    distance = min(_validate.integer(distance, "distance", minimum=0), n)  # n or more: no key that far
    far = (torch.arange(n)[:, None] - torch.arange(n)[None, :]) > distance  # [n, n]: t − s > distance
    return (weights * far.to(weights.dtype)).sum(dim=-1)


@dataclass(frozen=True)
class OffsetHead:
    """The head of one layer that puts the most weight on the key ``offset`` steps back.

    head: its index h; weights [n, n]: its attention on the tokens (averaged over the batch);
    on_offset [n]: its weight on key t − offset at each query t (0 where there is none);
    score: the mean of on_offset over the queries it was chosen on; layer_weights
    [n_heads, n, n]: every head of the layer, averaged over the batch, to compare with."""

    head: int
    weights: torch.Tensor
    on_offset: torch.Tensor
    score: float
    layer_weights: torch.Tensor


def offset_head(model: TinyTransformer, tokens: torch.Tensor, offset: int, *, layer: int = 0,
                queries: range | None = None) -> OffsetHead:
    """Find a model's "offset head": run ``model`` on ``tokens`` [batch, n], average layer
    ``layer``'s attention over the batch, and pick the head with the largest mean weight on key
    t − ``offset`` over the query positions ``queries`` (default offset .. n − 1, every query
    that has such a key). Lesson 10's previous-token head is ``offset_head(model, tokens, 1,
    queries=range(15, 16))``; lesson 11's "weight on t − 1" is ``offset_head(model, tokens,
    1).score``; lesson 12's copy head is ``offset_head(model, tokens, K, queries=range(K, L))``,
    and ``attention_entropy(head.weights)`` how spread it is at each query.
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if model.config.n_layers == 0:
        raise ValueError("model has no attention layer (n_layers = 0)")
    if isinstance(tokens, torch.Tensor) and tokens.ndim == 2 and tokens.shape[0] == 0:
        raise ValueError("tokens must hold at least one sequence [batch >= 1, n] to average over")
    layer = _validate.integer(layer, "layer", minimum=0, maximum=model.config.n_layers - 1)
    with torch.no_grad():  # the model checks tokens: ids [batch, n] of its vocabulary
        weights = model(tokens, details=True).attention_weights[layer].mean(0)  # [heads, n, n]
    n = weights.shape[-1]
    offset = _validate.integer(offset, "offset", minimum=0, maximum=n - 1)
    if queries is None:
        queries = range(offset, n)
    if not isinstance(queries, range) or len(queries) == 0 or queries.start < offset or queries.stop > n \
            or queries.step < 1:
        raise ValueError(f"queries must be a non-empty range of query positions within {offset} .. {n - 1} "
                         f"(each needs a key {offset} steps back), got {queries!r}")
    on_offset = attention_at_offset(weights, offset)
    means = on_offset[:, queries.start:queries.stop:queries.step].mean(1)
    head = int(means.argmax())
    return OffsetHead(head, weights[head], on_offset[head], means[head].item(), weights)
