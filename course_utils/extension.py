"""Longer than trained: stretching RoPE past its training length (lesson 12).

A RoPE model trained on L tokens has seen pair i turn through the angles t·ω_i, t < L. Past L
the slow pairs reach angles never seen in training. Each method below changes the frequencies
ω_i = base^(−2i/d) so that a longer text maps back into (or near) the trained range:

- "linear", position interpolation (Chen et al. 2023): ω_i / s, i.e. position t is read as t/s.
- "ntk", NTK-aware scaling: base' = base·s^(d/(d−2)). The fastest pair (i = 0) is unchanged,
  the slowest is exactly interpolated, ω_{d/2−1}/s; the pairs between are scaled geometrically.
- "dynamic": "ntk" with s following the current length n: s = max(1, factor·n/L − (factor − 1))
  (Hugging Face's "dynamic"; with factor = 1, s = n/L).
- "yarn" (Peng et al. 2023): pair i keeps ω_i if it turns more than β_fast times within L,
  takes ω_i/s if it turns fewer than β_slow times, and blends linearly between; plus an
  attention temperature, ``yarn_attention_scale``.

These match Hugging Face transformers' ROPE_INIT_FUNCTIONS ("linear", "dynamic", "yarn"), which
tests/test_extension.py checks.
"""

from __future__ import annotations

import math

import torch

from . import _validate
from .encodings import frequencies

SCALINGS = ("linear", "ntk", "dynamic", "yarn")
MAX_FACTOR = 10**6


def _factor(factor, name: str = "factor") -> float:
    factor = _validate.real(factor, name)
    if factor < 1 or factor > MAX_FACTOR:
        raise ValueError(f"{name} must be at least 1 (s = new length / trained length) and at most "
                         f"{MAX_FACTOR:,}, got {factor}")
    return factor


def _scaling(scaling, name: str = "scaling") -> str | None:
    if scaling is None:
        return None
    return _validate.choice(scaling, name, SCALINGS)


def _original_max_len(value, scaling: str, name: str = "original_max_len") -> int:
    if value is None:
        raise ValueError(f'scaling="{scaling}" needs {name}, the length L the model was trained on')
    return _validate.integer(value, name, minimum=1, maximum=10**9)


def check_scaling(scaling, factor, original_max_len, d_head: int, betas=(32.0, 1.0), *, prefix: str = "") -> tuple:
    """Check a model's RoPE scaling settings together; the messages use the names prefix + "scaling",
    prefix + "factor", ... Returns the checked (scaling, factor, original_max_len, (beta_fast, beta_slow))."""
    names = [prefix + name for name in ("scaling", "factor", "original_max_len", "beta_fast", "beta_slow")]
    scaling = _scaling(scaling, names[0])
    beta_fast = _validate.real(betas[0], names[3], positive=True)
    beta_slow = _validate.real(betas[1], names[4], positive=True)
    if beta_slow >= beta_fast:
        raise ValueError(f"{names[4]} must be below {names[3]} (turns within L), got {beta_slow} >= {beta_fast}")
    if scaling != "yarn" and (beta_fast, beta_slow) != (32.0, 1.0):
        raise ValueError(f'{names[3]} and {names[4]} are YaRN\'s: they need {names[0]}="yarn"')
    factor = _factor(factor, names[1])
    if original_max_len is not None:
        original_max_len = _validate.integer(original_max_len, names[2], minimum=1, maximum=10**9)
    if scaling is None and (factor != 1 or original_max_len is not None):
        raise ValueError(f'{names[1]} and {names[2]} need a {names[0]} such as "linear"; leave them at 1.0 and None')
    if scaling in ("dynamic", "yarn"):
        _original_max_len(original_max_len, scaling, names[2])
    if scaling in ("ntk", "dynamic") and d_head == 2:
        raise ValueError(f'{names[0]}="{scaling}" changes the base, which one pair per head (d_head = 2) does '
                         "not use: d_head must be at least 4")
    return scaling, factor, original_max_len, (beta_fast, beta_slow)


def _betas(beta_fast, beta_slow) -> tuple[float, float]:
    beta_fast = _validate.real(beta_fast, "beta_fast", positive=True)
    beta_slow = _validate.real(beta_slow, "beta_slow", positive=True)
    if beta_slow >= beta_fast:
        raise ValueError(f"beta_slow must be below beta_fast (turns within L), got {beta_slow} >= {beta_fast}")
    return beta_fast, beta_slow


def yarn_ramp(d: int, *, original_max_len: int, base: float = 10_000.0, beta_fast: float = 32.0,
              beta_slow: float = 1.0) -> torch.Tensor:
    """YaRN's per-pair weight γ_i of the original frequency. Returns float64 [d/2] in [0, 1].

    Pair i turns r_i = L·ω_i/(2π) times within L = original_max_len. γ_i = 1 (keep ω_i) for the
    pairs that turn at least β_fast times, 0 (interpolate, ω_i/s) for those that turn at most
    β_slow times, and a straight line in i between. As in the YaRN code (and Hugging Face's
    default, truncate=True), the two ends of the ramp are rounded outward to whole pair indices.
    """
    d = _validate.d_model(d, "d")
    base = _validate.real(base, "base", positive=True)
    if base <= 1:
        raise ValueError(f"base must be greater than 1, got {base}")
    original_max_len = _original_max_len(original_max_len, "yarn")
    beta_fast, beta_slow = _betas(beta_fast, beta_slow)

    def pair_index(turns: float) -> float:  # the (real) i at which r_i = turns
        return d * math.log(original_max_len / (turns * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(pair_index(beta_fast)), 0)
    high = min(math.ceil(pair_index(beta_slow)), d - 1)
    if low == high:
        high += 0.001
    i = torch.arange(d // 2, dtype=torch.float64)
    return 1 - ((i - low) / (high - low)).clamp(0, 1)


def rope_frequencies(d: int, *, base: float = 10_000.0, scaling: str | None = None, factor: float = 1.0,
                     original_max_len: int | None = None, length: int | None = None,
                     beta_fast: float = 32.0, beta_slow: float = 1.0) -> torch.Tensor:
    """RoPE's frequencies ω_i for d features, stretched by ``scaling``. Returns float64 [d/2].

    scaling: None (ω_i = base^(−2i/d)), "linear" (ω_i/factor), "ntk" (base·factor^(d/(d−2))),
    "dynamic" ("ntk" with s = max(1, factor·length/original_max_len − (factor − 1)); needs
    ``length``, the current sequence length) or "yarn" (γ_i·ω_i + (1 − γ_i)·ω_i/factor, γ from
    ``yarn_ramp``). factor = s ≥ 1, typically new length / trained length L = original_max_len.
    """
    d = _validate.d_model(d, "d")
    base = _validate.real(base, "base", positive=True)
    scaling = _scaling(scaling)
    factor = _factor(factor)
    _betas(beta_fast, beta_slow)
    if original_max_len is not None:
        original_max_len = _validate.integer(original_max_len, "original_max_len", minimum=1, maximum=10**9)
    if length is not None:
        length = _validate.integer(length, "length", minimum=1, maximum=10**9)
    omega = frequencies(d, base=base)
    if scaling is None:
        return omega
    if scaling == "linear":
        return omega / factor
    if scaling == "yarn":
        gamma = yarn_ramp(d, original_max_len=original_max_len, base=base, beta_fast=beta_fast,
                          beta_slow=beta_slow)
        return gamma * omega + (1 - gamma) * omega / factor
    if scaling == "dynamic":
        original_max_len = _original_max_len(original_max_len, scaling)
        if length is None:
            raise ValueError('scaling="dynamic" needs length, the current sequence length')
        factor = max(1.0, factor * length / original_max_len - (factor - 1))
    if d == 2:
        raise ValueError(f'scaling="{scaling}" changes the base, which d = 2 (one pair, ω_0 = 1) does not use: '
                         "d must be at least 4")
    return frequencies(d, base=base * factor ** (d / (d - 2)))


def angle_coverage(frequencies: torch.Tensor, length: int) -> torch.Tensor:
    """Share of the circle each pair has turned through at positions 0 .. length − 1. Returns [d/2].

    frequencies [d/2] (e.g. rope_frequencies(d)): pair i reaches angles 0 .. (length − 1)·ω_i,
    so it covers min(1, (length − 1)·ω_i / 2π) of the circle. 1 means every angle was seen; a
    pair below 1 meets new angles as soon as a text is longer.
    """
    frequencies = _validate.float_tensor(frequencies, "frequencies")
    if frequencies.ndim != 1 or not (frequencies > 0).all():
        raise ValueError(f"frequencies must be a 1-D tensor of positive ω_i, got shape {tuple(frequencies.shape)}")
    length = _validate.integer(length, "length", minimum=1, maximum=10**9)
    return ((length - 1) * frequencies.to(torch.float64) / (2 * math.pi)).clamp(max=1.0)


def yarn_attention_scale(factor: float) -> float:
    """YaRN's attention temperature: √(1/t) = 0.1·ln(s) + 1 for s > 1, else 1 (Peng et al. 2023).

    Queries and keys are both multiplied by it, so every logit grows by its square: a sharper
    softmax, against the flatter attention that longer contexts bring.
    """
    factor = _factor(factor)
    return 1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0
