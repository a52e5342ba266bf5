"""Checks for lesson 12's exercises: NTK's new base, how often each pair turns within the
training length, and YaRN's blend of frequencies. References are float64 NumPy, independent of
course_utils.extension."""

from __future__ import annotations

import math

import numpy as np
import torch

from ._core import NotYet, as_array, call, close, diagnose, fmt, verdict


def _omega(d: int, base: float) -> np.ndarray:
    return base ** (-2.0 * np.arange(d // 2) / d)


def _number(value, shown: str) -> float:
    """The learner's result as one float, or a NotYet saying why not."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, (np.ndarray, np.generic)) and np.size(value) == 1:
        value = float(np.asarray(value).reshape(()))
    if value is None:
        raise NotYet(f"for {shown} your function returned None. Did you forget `return`?")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NotYet(f"for {shown} your function returned {type(value).__name__}; expected one number.")
    if not math.isfinite(value):
        raise NotYet(f"for {shown} your result is {value}; expected a finite number.")
    return float(value)


@verdict
def check_ntk_base(ntk_base_fn) -> str:
    """Check ``ntk_base_fn(base, factor, d)`` → base·factor^(d/(d−2)), the NTK-aware base."""
    for base, factor, d in ((10_000.0, 4.0, 16), (500.0, 2.0, 64), (10_000.0, 1.0, 8), (100.0, 8.0, 4)):
        shown = f"base = {base:g}, factor = {factor:g}, d = {d}"
        got = _number(call(ntk_base_fn, (base, factor, d), shown), shown)
        expected = base * factor ** (d / (d - 2))
        if math.isclose(got, expected, rel_tol=1e-6):
            continue
        mistakes = {
            "That is base·s: then the slowest pair turns s^((d−2)/d) times slower, not s times. Solve "
            "base'^(−(d−2)/d) = base^(−(d−2)/d)/s for base'.": base * factor,
            "The exponent is upside down: (d−2)/d makes the slowest pair slower by less than s.":
                base * factor ** ((d - 2) / d),
            "You divided: a larger base gives slower pairs, so the base must grow with s.":
                base / factor ** (d / (d - 2)),
        }
        hint = diagnose(np.array(got), {k: np.array(v) for k, v in mistakes.items()})
        raise NotYet(f"for {shown} expected {expected:.6g}, got {got:.6g}." + hint)
    return "base' = base·s^(d/(d−2)): pair 0 kept, the last pair s times slower."


@verdict
def check_pair_turns(turns_fn) -> str:
    """Check ``turns_fn(d, length, base)`` → [d/2] full turns of each pair over ``length`` positions."""
    for d, length, base in ((16, 16, 10_000.0), (8, 4096, 10_000.0), (2, 10, 100.0), (64, 2048, 500_000.0)):
        shown = f"d = {d}, length = {length}, base = {base:g}"
        got = as_array(call(turns_fn, (d, length, base), shown), (d // 2,), shown, what="a [d/2] tensor")
        omega = _omega(d, base)
        expected = length * omega / (2 * math.pi)
        if close(got, expected):
            continue
        mistakes = {
            "Those are radians, L·ω_i: one turn is 2π radians.": length * omega,
            "Those are wavelengths in positions, 2π/ω_i: turns = L / wavelength.": 2 * math.pi / omega,
            "That is wavelength / L, upside down: turns = L / wavelength.": 2 * math.pi / omega / length,
            "You counted up to the last position, (L − 1)·ω_i/2π: a fine measure of the largest angle seen, "
            "but YaRN (and Hugging Face) count turns over L itself.": (length - 1) * omega / (2 * math.pi),
            "The frequencies use i/d in the exponent; ω_i = base^(−2i/d).":
                length * base ** (-np.arange(d // 2) / d) / (2 * math.pi),
        }
        raise NotYet(f"for {shown} expected {fmt(expected)}, got {fmt(got)}." + diagnose(got, mistakes))
    return "r_i = L·ω_i/2π: fast pairs turn many times within L, slow ones not once."


@verdict
def check_yarn_blend(blend_fn) -> str:
    """Check ``blend_fn(omega, gamma, factor)`` → γ·ω + (1 − γ)·ω/factor, YaRN's frequencies."""
    rng = np.random.default_rng(12)
    for size, factor in ((8, 4.0), (3, 16.0), (1, 2.0), (6, 1.0)):
        omega = np.sort(rng.uniform(1e-3, 1.0, size))[::-1].copy()
        gamma = np.clip(rng.uniform(-0.3, 1.3, size), 0, 1)
        shown = f"omega = {fmt(omega)}, gamma = {fmt(gamma)}, factor = {factor:g}"
        raw = call(blend_fn, (torch.tensor(omega), torch.tensor(gamma), factor), shown)
        got = as_array(raw, (size,), shown, what="a tensor shaped like omega")
        expected = gamma * omega + (1 - gamma) * omega / factor
        if close(got, expected):
            continue
        mistakes = {
            "γ and 1 − γ are swapped: γ = 1 (a fast pair) keeps its frequency, γ = 0 is interpolated.":
                (1 - gamma) * omega + gamma * omega / factor,
            "You blended wavelengths (1/ω): an averaged wavelength gives a slightly different frequency. "
            "YaRN's code and Hugging Face blend the frequencies.": 1 / (gamma / omega + (1 - gamma) * factor / omega),
            "That multiplies by s: interpolation divides every frequency by s.":
                gamma * omega + (1 - gamma) * omega * factor,
            "That is position interpolation for every pair; γ decides which pairs keep ω.": omega / factor,
        }
        raise NotYet(f"for {shown} expected {fmt(expected)}, got {fmt(got)}." + diagnose(got, mistakes))
    return "γ·ω + (1 − γ)·ω/s: fast pairs kept, slow ones interpolated, a blend between."
