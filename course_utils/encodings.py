"""The sinusoidal position code of Vaswani et al. (2017), and its frequencies.

PE(t)[2i] = sin(t * ω_i), PE(t)[2i+1] = cos(t * ω_i), with ω_i = base^(-2i / d_model).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from . import _validate

LAYOUTS = ("interleaved", "halves")


def frequencies(d_model: int, *, base: float = 10_000.0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The angular frequencies ω_i = base^(-2i/d_model), i = 0 .. d_model/2 - 1.

    Returns [d_model // 2], from ω_0 = 1 (wavelength 2π) down to about 1/base.
    """
    d_model = _validate.d_model(d_model)
    base = _validate.real(base, "base", positive=True)
    dtype = _validate.float_dtype(dtype)
    i = torch.arange(d_model // 2, dtype=torch.float64)
    return torch.exp(-math.log(base) * 2.0 * i / d_model).to(dtype)


def pair_columns(d_model: int, layout: str = "interleaved") -> tuple[torch.Tensor, torch.Tensor]:
    """Which columns of the code hold sin(t·ω_i) and which hold cos(t·ω_i).

    Returns (sin_columns, cos_columns), each [d_model // 2] of column indices:
    interleaved → (0, 2, 4, ...), (1, 3, 5, ...); halves → (0, 1, ..., d/2-1), (d/2, ..., d-1).
    """
    d_model = _validate.d_model(d_model)
    layout = _validate.choice(layout, "layout", LAYOUTS)
    half = d_model // 2
    if layout == "interleaved":
        return torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)
    return torch.arange(half), torch.arange(half, d_model)


def _positions(positions) -> torch.Tensor:
    """An int n (→ 0..n-1) or a 1-D sequence of real positions, as float64 [n]."""
    if isinstance(positions, bool):
        raise TypeError("positions must be an int n or a 1-D sequence of positions, got a bool")
    if isinstance(positions, (int, np.integer)):
        n = _validate.integer(positions, "positions", minimum=0)
        _validate.size_budget(n, "positions")
        return torch.arange(n, dtype=torch.float64)
    if isinstance(positions, torch.Tensor):
        if positions.dtype == torch.bool or positions.is_complex():
            raise TypeError(f"positions must hold real numbers, got dtype {positions.dtype}")
        tensor = positions.detach().to(torch.float64)
    elif isinstance(positions, (Sequence, np.ndarray)) and not isinstance(positions, (str, bytes)):
        try:
            array = np.asarray(positions)
        except ValueError:  # ragged nested lists
            raise ValueError("positions must be 1-D, got a ragged nested sequence") from None
        if array.size and array.dtype.kind not in "iuf":
            kind = {"U": "strings", "S": "bytes", "b": "bools", "c": "complex numbers"}.get(array.dtype.kind, "objects")
            raise TypeError(f"positions must hold real numbers (ints or floats), got {kind}")
        tensor = torch.from_numpy(array.astype(np.float64))
    else:
        raise TypeError(
            f"positions must be an int n or a 1-D sequence/tensor of positions, got {type(positions).__name__}"
        )
    if tensor.ndim != 1:
        raise ValueError(f"positions must be 1-D, got shape {tuple(tensor.shape)}")
    if not torch.isfinite(tensor).all():
        raise ValueError("positions contains NaN or infinite values")
    return tensor


def sinusoidal_encoding(
    positions,
    d_model: int,
    *,
    base: float = 10_000.0,
    layout: str = "interleaved",
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The sinusoidal code PE for each position.

    positions: an int n (positions 0 .. n-1) or a 1-D tensor/sequence of real positions
    (negative and non-integer allowed). layout="interleaved" puts sin(t·ω_i) in column 2i and
    cos(t·ω_i) in column 2i+1; layout="halves" puts all sines first, then all cosines, with
    the same frequencies. Computed in float64, returned as ``dtype``. Returns [n, d_model].
    """
    d_model = _validate.d_model(d_model)
    dtype = _validate.float_dtype(dtype)
    t = _positions(positions)
    _validate.size_budget(t.numel() * d_model, "the position code")
    omega = frequencies(d_model, base=base)
    angles = t[:, None] * omega[None, :]  # [n, d_model/2]
    sin_cols, cos_cols = pair_columns(d_model, layout)
    pe = torch.empty(t.numel(), d_model, dtype=torch.float64)
    pe[:, sin_cols] = torch.sin(angles)
    pe[:, cos_cols] = torch.cos(angles)
    return pe.to(dtype)
