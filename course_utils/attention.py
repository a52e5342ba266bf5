"""Scaled dot-product attention and the causal mask.

attention(q, k, v) = softmax(q @ k.T / sqrt(d_k)) @ v, row by row: each query row gets a
weighted average of the value rows. Nothing in it looks at *which* row a token sits in.
"""

from __future__ import annotations

import math

import torch

from . import _validate
from .reproducible import matmul


def causal_mask(n: int) -> torch.Tensor:
    """The causal (GPT-style) mask: query i may attend to keys j <= i.

    Boolean, True = may attend (the convention of torch's scaled_dot_product_attention).
    Returns [n, n], lower-triangular including the diagonal.
    """
    n = _validate.integer(n, "n", minimum=0)
    _validate.size_budget(n * n, "the causal mask [n, n]")
    return torch.ones(n, n, dtype=torch.bool).tril()


def _check_mask(mask, scores_shape: torch.Size) -> torch.Tensor:
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a boolean torch.Tensor (True = may attend), got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask must have dtype torch.bool (True = may attend), got {mask.dtype}; "
            "for a 0/1 tensor use mask.bool()"
        )
    n_q, n_k = scores_shape[-2:]
    if tuple(mask.shape) not in ((n_q, n_k), tuple(scores_shape)):
        raise ValueError(
            f"mask must have shape ({n_q}, {n_k}) or {tuple(scores_shape)} to match "
            f"{n_q} queries and {n_k} keys, got {tuple(mask.shape)}"
        )
    if n_k and not mask.any(dim=-1).all():
        raise ValueError("mask has a query row with no True entry: that query could attend to nothing")
    return mask


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None):
    """Scaled dot-product attention over the last two dimensions.

    q: [..., n_q, d_k], k: [..., n_k, d_k], v: [..., n_k, d_v], with the same leading batch
    dimensions (no broadcasting). mask: optional bool [n_q, n_k] or [..., n_q, n_k],
    True = may attend. Returns (output [..., n_q, d_v], weights [..., n_q, n_k]); each row of
    weights sums to 1.
    """
    q = _validate.float_tensor(q, "q", min_dims=2)
    k = _validate.float_tensor(k, "k", min_dims=2)
    v = _validate.float_tensor(v, "v", min_dims=2)
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k and v must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        raise ValueError(
            "q, k and v must have the same leading (batch) dimensions, got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same last dimension d_k, got q {tuple(q.shape)} and k {tuple(k.shape)}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have one row per key (same n_k), got k {tuple(k.shape)} and v {tuple(v.shape)}"
        )
    if k.shape[-2] == 0:
        raise ValueError(f"k and v must hold at least one key (n_k >= 1), got k {tuple(k.shape)}")
    if q.shape[-1] == 0:
        raise ValueError("q and k must have d_k >= 1 (the last dimension is empty)")
    if mask is not None:
        mask = _check_mask(mask, q.shape[:-1] + k.shape[-2:-1])
    output, weights, _ = scaled_dot_product(q, k, v, mask)
    return output, weights


def scaled_dot_product(q, k, v, mask=None, bias=None):
    """The computation behind ``attention``, without argument checks, for models on a hot path.

    Returns (output [..., n_q, d_v], weights [..., n_q, n_k], logits [..., n_q, n_k]); the logits
    are q k^T / sqrt(d_k) plus ``bias`` (a score bias such as ALiBi's), before the mask.
    """
    logits = matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if bias is not None:
        logits = logits + bias
    scores = logits if mask is None else logits.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return matmul(weights, v), weights, logits
