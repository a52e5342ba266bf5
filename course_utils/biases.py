"""Position as a bias on the attention logits: ALiBi and a learned relative bias (lesson 10).

- ALiBi (Press et al. 2022) adds a fixed penalty −m_h·|t − s| to head h's logits.
- A relative bias (Raffel et al. 2020, T5; after Shaw et al. 2018, who learn a vector per offset)
  adds a learned number per head and per offset s − t, offsets beyond ±max_distance sharing the
  end values.

Both are position math with no model in sight: the models (course_utils/models.py) add these
biases in every attention layer.
"""

from __future__ import annotations

import torch
from torch import nn

from . import _validate


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi's per-head slopes (Press et al. 2022), as in their reference code. Returns [n_heads].

    Heads are numbered h = 1 .. H. For H a power of two, m_h = 2^(-8h/H): a geometric sequence
    from 2^(-8/H) down to 2^(-8) (H = 8: 1/2, 1/4, ..., 1/256). For other H, the reference
    takes the slopes of the closest lower power of two P, then every other slope of 2P, in
    order, until there are H: H = 6 gives [1/4, 1/16, 1/64, 1/256] + [1/2, 1/8].
    """
    n_heads = _validate.integer(n_heads, "n_heads", minimum=1)
    _validate.size_budget(n_heads, "n_heads")
    power = 1 << (n_heads.bit_length() - 1)  # the closest power of two <= n_heads
    slopes = 2.0 ** (-8.0 * torch.arange(1, power + 1, dtype=torch.float64) / power)
    if power == n_heads:
        return slopes
    extra = 2.0 ** (-8.0 * torch.arange(1, 2 * power + 1, 2, dtype=torch.float64) / (2 * power))
    return torch.cat([slopes, extra[: n_heads - power]])


def checked_slopes(slopes, n_heads: int, name: str = "slopes") -> tuple[float, ...]:
    """``slopes`` (a sequence or 1-D tensor of n_heads positive reals) as a tuple of floats."""
    if isinstance(slopes, torch.Tensor):
        if slopes.ndim != 1:
            raise ValueError(f"{name} must be 1-D, one slope per head, got shape {tuple(slopes.shape)}")
        slopes = slopes.tolist()
    if isinstance(slopes, (str, bytes)) or not isinstance(slopes, (tuple, list)):
        raise TypeError(f"{name} must be a tuple of numbers, one per head, got {type(slopes).__name__}")
    if len(slopes) != n_heads:
        raise ValueError(f"{name} must hold one slope per head (n_heads = {n_heads}), got {len(slopes)}")
    return tuple(_validate.real(m, f"every entry of {name}", positive=True) for m in slopes)


def alibi_bias(n: int, n_heads: int, *, slopes=None, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The ALiBi logit bias −m_h·|t − s| for query t and key s. Returns [n_heads, n, n].

    The slopes m_1 .. m_H are alibi_slopes(n_heads) unless ``slopes`` (n_heads positive
    numbers) is given. With a causal mask only s ≤ t is used: ALiBi's original −m_h·(t − s).
    """
    n = _validate.integer(n, "n", minimum=1)
    dtype = _validate.float_dtype(dtype)
    n_heads = _validate.integer(n_heads, "n_heads", minimum=1)
    _validate.size_budget(n * n * n_heads, "the ALiBi bias [n_heads, n, n]")
    if slopes is None:
        m = alibi_slopes(n_heads)
    else:
        m = torch.tensor(checked_slopes(slopes, n_heads), dtype=torch.float64)
    distance = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).abs().to(torch.float64)
    return (-m[:, None, None] * distance).to(dtype)


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
