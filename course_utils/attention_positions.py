"""Position inside attention instead of at the input: RoPE, ALiBi and a learned relative bias.

- RoPE (Su et al. 2021) rotates each query and key by its own position with lesson 04's
  rotations: (M_t q)·(M_s k) = q·M_{s-t} k, so the score sees only the offset s − t.
- ALiBi (Press et al. 2022) adds a fixed penalty −m_h·|t − s| to head h's logits.
- A relative bias (Shaw et al. 2018; Raffel et al. 2020, T5) adds a learned number per head and
  per offset s − t, offsets beyond ±max_distance sharing the end values.
"""

from __future__ import annotations

import torch
from torch import nn

from . import _validate
from .encodings import frequencies


def rope_rotate(x: torch.Tensor, positions: torch.Tensor | None = None, *, base: float = 10_000.0) -> torch.Tensor:
    """Rotate every row of ``x`` [..., n, d] by its position, pair by pair: row t becomes M_t @ x[t].

    M_t is lesson 04's offset matrix (interleaved (sin, cos) pairs, ω_i = base^(-2i/d)), so
    rope_rotate(q)[t] · rope_rotate(k)[s] depends on q, k and s − t only. positions defaults
    to 0 .. n-1 ([n] reals allowed). Returns a tensor shaped like x.
    """
    x = _validate.float_tensor(x, "x", min_dims=2)
    n, d = x.shape[-2], x.shape[-1]
    _validate.d_model(d, "the last dimension of x")
    if positions is None:
        positions = torch.arange(n, dtype=torch.float64)
    elif not isinstance(positions, torch.Tensor) or positions.ndim != 1 or positions.shape[0] != n:
        raise ValueError(f"positions must be a 1-D tensor with one position per row of x ({n})")
    elif positions.is_complex() or positions.dtype == torch.bool:
        raise TypeError(f"positions must hold real numbers, got dtype {positions.dtype}")
    elif not torch.isfinite(positions).all():
        raise ValueError("positions contains NaN or infinite values")
    angles = positions.to(torch.float64)[:, None] * frequencies(d, base=base)[None, :]  # [n, d/2]
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    first, second = x[..., 0::2], x[..., 1::2]
    rotated = torch.empty_like(x)
    rotated[..., 0::2] = cos * first + sin * second
    rotated[..., 1::2] = -sin * first + cos * second
    return rotated


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi's per-head slopes m_h = 2^(-8h/n_heads), h = 1 .. n_heads (Press et al. 2022). Returns [n_heads]."""
    n_heads = _validate.integer(n_heads, "n_heads", minimum=1)
    _validate.size_budget(n_heads, "n_heads")
    return 2.0 ** (-8.0 * torch.arange(1, n_heads + 1, dtype=torch.float64) / n_heads)


def alibi_bias(n: int, n_heads: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The ALiBi logit bias −m_h·|t − s| for query t and key s. Returns [n_heads, n, n].

    With a causal mask only s ≤ t is used, which is ALiBi's original −m_h·(t − s).
    """
    n = _validate.integer(n, "n", minimum=1)
    dtype = _validate.float_dtype(dtype)
    _validate.size_budget(n * n * _validate.integer(n_heads, "n_heads", minimum=1), "the ALiBi bias [n_heads, n, n]")
    distance = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).abs().to(torch.float64)
    return (-alibi_slopes(n_heads)[:, None, None] * distance).to(dtype)


class RelativeBias(nn.Module):
    """A learned logit bias per head and per offset s − t, clipped to ±max_distance.

    forward(n) → [n_heads, n, n]. Parameters: n_heads × (2·max_distance + 1) numbers, whatever n is.
    """

    def __init__(self, n_heads: int, max_distance: int = 8):
        super().__init__()
        self.n_heads = _validate.integer(n_heads, "n_heads", minimum=1)
        self.max_distance = _validate.integer(max_distance, "max_distance", minimum=1)
        _validate.size_budget(self.n_heads * (2 * self.max_distance + 1), "the table [n_heads, 2·max_distance + 1]")
        self.values = nn.Parameter(torch.zeros(self.n_heads, 2 * self.max_distance + 1))

    def forward(self, n: int) -> torch.Tensor:
        n = _validate.integer(n, "n", minimum=1)
        _validate.size_budget(self.n_heads * n * n, "the bias [n_heads, n, n]")
        offsets = torch.arange(n)[None, :] - torch.arange(n)[:, None]  # [n, n]: s − t
        index = offsets.clamp(-self.max_distance, self.max_distance) + self.max_distance
        return self.values[:, index]
