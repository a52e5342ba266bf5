"""Checks for lesson 10's exercises: the ALiBi bias and the RoPE rotation."""

from __future__ import annotations

import numpy as np
import torch

from ._core import NotYet, as_array, call, close, diagnose, fmt, verdict


def _alibi(n: int, slope: float) -> np.ndarray:
    t = np.arange(n)
    return -slope * np.abs(t[:, None] - t[None, :])


@verdict
def check_alibi_bias(alibi_bias_fn) -> str:
    """Check ``alibi_bias_fn(n, slope)`` → [n, n] with entry (t, s) = −slope·|t − s|."""
    for n, slope in ((4, 0.5), (1, 0.25), (6, 0.0625), (3, 1.0)):
        shown = f"n = {n}, slope = {slope:g}"
        got = as_array(call(alibi_bias_fn, (n, slope), shown), (n, n), shown, what="an [n, n] tensor")
        expected = _alibi(n, slope)
        if close(got, expected):
            continue
        t = np.arange(n)
        mistakes = {
            "The sign is flipped: ALiBi is a penalty, −slope·|t − s|, so distant keys score lower.": -expected,
            "You used t − s without the absolute value: keys after the query would be rewarded.":
                -slope * (t[:, None] - t[None, :]),
            "You used s − t without the absolute value; the penalty is −slope·|t − s|.":
                -slope * (t[None, :] - t[:, None]),
            "The slope is missing: multiply the distance |t − s| by the head's slope.": _alibi(n, 1.0),
            "You divided by the slope instead of multiplying.": _alibi(n, 1.0 / slope),
        }
        raise NotYet(f"for {shown} expected {fmt(expected)}, got {fmt(got)}." + diagnose(got, mistakes))
    return "−slope·|t − s| for 4 (n, slope), including n = 1."


def _rotate(x: np.ndarray, positions: np.ndarray, omega: np.ndarray, *, layout: str = "interleaved") -> np.ndarray:
    angles = positions[:, None] * omega[None, :]
    cos, sin = np.cos(angles), np.sin(angles)
    half = x.shape[1] // 2
    first, second = (x[:, 0::2], x[:, 1::2]) if layout == "interleaved" else (x[:, :half], x[:, half:])
    out = np.empty_like(x)
    a, b = cos * first + sin * second, -sin * first + cos * second
    if layout == "interleaved":
        out[:, 0::2], out[:, 1::2] = a, b
    else:
        out[:, :half], out[:, half:] = a, b
    return out


@verdict
def check_rope_rotate(rope_fn) -> str:
    """Check ``rope_fn(x)`` → row t of x [n, d] rotated by M_t (interleaved pairs, ω_i = 10000^(-2i/d))."""
    rng = np.random.default_rng(10)
    for n, d in ((5, 4), (1, 2), (8, 8), (3, 6)):
        x = rng.normal(size=(n, d))
        shown = f"x of shape ({n}, {d})"
        got = as_array(call(rope_fn, (torch.tensor(x, dtype=torch.float64),), shown), (n, d), shown)
        t = np.arange(n, dtype=np.float64)
        omega = 10_000.0 ** (-2.0 * np.arange(d // 2) / d)
        expected = _rotate(x, t, omega)
        if close(got, expected):
            continue
        mistakes = {
            "You rotate by M_{−t}, Su et al.'s direction (and Meta's, Hugging Face's): an equivalent "
            "convention, scores still depend only on s − t, but here we ask for lesson 04's M_t, "
            "[[cos, sin], [−sin, cos]] (lesson 11).":
                _rotate(x, -t, omega),
            "Positions start at 0: the first row is not rotated at all.": _rotate(x, t + 1, omega),
            "You paired column i with column i + d/2 (halves, GPT-NeoX's and Hugging Face's pairing): the "
            "same rotation with the features permuted (lesson 11), but this exercise pairs columns 2i "
            "and 2i+1.": _rotate(x, t, omega, layout="halves"),
            "The frequencies use i/d in the exponent; ω_i = 10000^(−2i/d).":
                _rotate(x, t, 10_000.0 ** (-np.arange(d // 2) / d)),
            "Every pair is rotated by the same angle t; each pair i has its own frequency ω_i.":
                _rotate(x, t, np.ones(d // 2)),
        }
        raise NotYet(f"for {shown} expected {fmt(expected)}, got {fmt(got)}." + diagnose(got, mistakes))
    return "row t rotated by M_t, pair by pair, for 4 shapes (one row, d = 2)."
