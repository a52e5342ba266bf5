"""RoPE at large positions in low precision: the angle t·ω_i rounded (lesson 15).

A model turns pair i of the token at position t by θ = t·ω_i. Computed in float64 the angle is
exact to ~1e-16 relative; in float32 (24-bit significand) t·ω_i is rounded to a relative
2^−24 ≈ 6·10⁻⁸ — at t = 131,072 and ω_0 = 1 that is up to ~0.008 rad; in bfloat16 (8-bit
significand) the position t itself is rounded to a multiple of 2^(⌊log₂ t⌋ − 7): above 32,768
every 256th position only, so neighbouring tokens share one angle. That is why implementations
(Hugging Face's rotary embeddings, Meta's reference code) make the angles in float32 with
autocast off, whatever dtype the model runs in, and then cast cos and sin.

``angle_error`` measures the rounding of the angle itself; ``score_error`` what it does to the
score q·k of a query and a key ``offset`` positions apart (RoPE's promise: a function of the
offset only).
"""

from __future__ import annotations

import math

import torch

from . import _validate
from .rope import rotate_pairs

DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def _positions(positions, name: str = "positions") -> torch.Tensor:
    if not isinstance(positions, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of positions, got {type(positions).__name__}")
    if positions.ndim != 1 or positions.numel() == 0:
        raise ValueError(f"{name} must be a non-empty 1-D tensor, got shape {tuple(positions.shape)}")
    if positions.dtype == torch.bool or positions.is_complex():
        raise TypeError(f"{name} must hold real numbers, got dtype {positions.dtype}")
    positions = positions.to(torch.float64)
    if not torch.isfinite(positions).all() or (positions < 0).any() or (positions > 2**40).any():
        raise ValueError(f"{name} must hold finite positions in 0 .. 2^40")
    return positions


def _dtype(dtype) -> torch.dtype:
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch dtype such as torch.bfloat16, got {dtype!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of float64, float32, float16, bfloat16, got {dtype}")
    return dtype


def angles_in(positions: torch.Tensor, frequencies: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The angles t·ω_i as an implementation computing in ``dtype`` gets them: t and ω_i rounded
    to dtype, their product rounded to dtype, returned in float64. positions [n] → [n, d/2]."""
    positions, frequencies, dtype = _positions(positions), _validate.frequencies(frequencies), _dtype(dtype)
    _validate.size_budget(positions.numel() * frequencies.numel(), "the angles [len(positions), len(frequencies)]")
    return (positions.to(dtype)[:, None] * frequencies.to(dtype)[None, :]).to(torch.float64)


def angle_error(positions: torch.Tensor, frequencies: torch.Tensor, *, dtype: torch.dtype) -> torch.Tensor:
    """|θ_dtype − θ| wrapped to [0, π]: how far the rounded angle of each pair lies from the exact
    t·ω_i (float64). positions [n] (e.g. 0 .. 131071), frequencies [d/2]. Returns float64
    [n, d/2] in radians."""
    rounded = angles_in(positions, frequencies, dtype)
    exact = _positions(positions)[:, None] * _validate.frequencies(frequencies)[None, :]
    return torch.remainder(rounded - exact + math.pi, 2 * math.pi).sub(math.pi).abs()


def score_error(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, *, frequencies: torch.Tensor,
                dtype: torch.dtype, offset: int = 1) -> torch.Tensor:
    """How much rounded angles change RoPE scores: for each query position t in ``positions``,
    the mean over the rows of q and k [m, d] (interleaved pairs, d = 2·len(frequencies)) of
    |q_t·k_{t−offset} with angles made in ``dtype`` − the same with exact angles|, cos and sin
    taken in float64 so only the angles' rounding counts. Returns float64 [n]. Exact angles give
    the same score at every t (it depends on the offset only); rounded ones do not.
    """
    q = _validate.matrix(q, "q").to(torch.float64)
    k = _validate.matrix(k, "k").to(torch.float64)
    frequencies = _validate.frequencies(frequencies)
    if q.shape != k.shape or q.shape[1] != 2 * frequencies.numel():
        raise ValueError(f"q and k must both be [m, d] with d = 2·len(frequencies) = "
                         f"{2 * frequencies.numel()}, got {tuple(q.shape)} and {tuple(k.shape)}")
    positions = _positions(positions)
    offset = _validate.integer(offset, "offset", minimum=0, maximum=2**40)
    if (positions < offset).any():
        raise ValueError(f"positions must all be at least offset ({offset}): the key sits at t − offset")
    _validate.size_budget(positions.numel() * q.numel(), "the rotated rows [len(positions), rows of q and k, d]")

    def scores(angles_q: torch.Tensor, angles_k: torch.Tensor) -> torch.Tensor:
        turned_q = rotate_pairs(q[None], angles_q.cos()[:, None], angles_q.sin()[:, None])
        turned_k = rotate_pairs(k[None], angles_k.cos()[:, None], angles_k.sin()[:, None])
        return (turned_q * turned_k).sum(-1)  # [n, m]

    exact = scores(positions[:, None] * frequencies, (positions - offset)[:, None] * frequencies)
    rounded = scores(angles_in(positions, frequencies, dtype),
                     angles_in(positions - offset, frequencies, dtype))
    return (rounded - exact).abs().mean(dim=1)
