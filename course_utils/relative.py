"""The relative-offset map: the fixed matrix M_k with PE(t + k) = M_k @ PE(t) for every t.

From the angle-addition formulas, each (sin, cos) pair of frequency ω is rotated by ωk:
    sin(ω(t+k)) =  cos(ωk)·sin(ωt) + sin(ωk)·cos(ωt)
    cos(ω(t+k)) = -sin(ωk)·sin(ωt) + cos(ωk)·cos(ωt)
"""

from __future__ import annotations

import torch

from . import _validate
from .encodings import frequencies, pair_columns


def offset_matrix(
    k: float,
    d_model: int,
    *,
    base: float = 10_000.0,
    layout: str = "interleaved",
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The matrix M_k with M_k @ pe[t] == pe[t + k] for every position t (column vectors).

    Block-diagonal in the interleaved layout: one 2x2 rotation [[cos ωk, sin ωk],
    [-sin ωk, cos ωk]] per (sin, cos) pair, ω_i = base^(-2i/d_model); the same blocks
    scattered over columns (i, d/2 + i) in the "halves" layout. k may be any real number.
    Returns [d_model, d_model].
    """
    k = _validate.real(k, "k")
    d_model = _validate.d_model(d_model)
    dtype = _validate.float_dtype(dtype)
    _validate.size_budget(d_model * d_model, "the offset matrix")
    angle = frequencies(d_model, base=base) * k  # [d_model/2], float64
    cos, sin = torch.cos(angle), torch.sin(angle)
    s, c = pair_columns(d_model, layout)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[s, s] = cos
    m[s, c] = sin
    m[c, s] = -sin
    m[c, c] = cos
    return m.to(dtype)
