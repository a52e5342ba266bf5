"""Checks for lesson 11's exercises: the layout permutation, RoPE with complex numbers, and a
decoding step with a KV cache. References are float64 NumPy, independent of course_utils.rope."""

from __future__ import annotations

import numpy as np
import torch

from ._core import NotYet, as_array, call, close, diagnose, fmt, is_complex, verdict
from .attention_positions import _rotate

EQUIVALENT = ("Su et al.'s (and Meta's, Hugging Face's) direction: an equivalent convention, scores "
              "still depend only on s − t, but here we use the course's M_t")


def _omega(d: int) -> np.ndarray:
    return 10_000.0 ** (-2.0 * np.arange(d // 2) / d)


def _permutation(d: int) -> np.ndarray:
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)]).astype(np.float64)


@verdict
def check_rope_permutation(permutation_fn) -> str:
    """Check ``permutation_fn(d)`` → [d] indices with x[..., perm] = the halves layout of x."""
    for d in (8, 2, 6, 12):
        shown = f"d = {d}"
        raw = call(permutation_fn, (d,), shown)
        kind = getattr(raw, "dtype", None)
        if kind is not None and not (isinstance(kind, torch.dtype) and not kind.is_floating_point
                                     and not kind.is_complex and kind != torch.bool
                                     or isinstance(kind, np.dtype) and kind.kind in "iu"):
            raise NotYet(f"for {shown} your indices are {kind} numbers, and x[..., perm] needs "
                         "whole-number indices: build perm from torch.arange (a long tensor).")
        got = as_array(raw, (d,), shown, what="a [d] tensor of indices")
        expected = _permutation(d)
        if close(got, expected):
            continue
        mistakes = {
            "That is the way back, halves → interleaved (torch.argsort of the answer): x[..., perm] must "
            "put feature 2i at place i and feature 2i+1 at place i + d/2.": np.argsort(expected).astype(float),
            "That leaves every feature where it is; pairs (2i, 2i+1) must move to (i, i + d/2).":
                np.arange(d, dtype=np.float64),
            "Odd features first: the first coordinate of pair i is feature 2i, and it goes to place i.":
                np.concatenate([np.arange(1, d, 2), np.arange(0, d, 2)]).astype(np.float64),
        }
        hint = diagnose(got, mistakes) or (" Pair i is features (2i, 2i+1): x[..., perm] must put "
                                           "feature 2i at place i and feature 2i+1 at place i + d/2.")
        raise NotYet(f"for {shown} your perm {fmt(got)} does not give the halves layout." + hint)
    return "x[..., perm] turns interleaved pairs into halves, for 4 widths (d = 2 too)."


@verdict
def check_rope_complex(rope_fn) -> str:
    """Check ``rope_fn(x, positions)`` → x [n, d] rotated by M_t at the given positions (real result)."""
    rng = np.random.default_rng(11)
    for n, d, positions in ((3, 8, (5.0, -2.0, 0.5)), (4, 6, (0.0, 1.0, 2.0, 3.0)), (1, 2, (7.0,)),
                            (5, 6, (3.0, 4.0, 5.0, 6.0, 7.0))):
        x = rng.normal(size=(n, d))
        t = np.array(positions)
        shown = f"x of shape ({n}, {d}) at positions {list(positions)}"
        raw = call(rope_fn, (torch.tensor(x), torch.tensor(t)), shown)
        if is_complex(raw):
            raise NotYet(f"for {shown} your function returned complex numbers. Turn each complex number "
                         "a + ib back into the two real columns (a, b): torch.view_as_real(z).flatten(-2).")
        got = as_array(raw, (n, d), shown, what="an [n, d] real tensor")
        omega = _omega(d)
        expected = _rotate(x, t, omega)
        if close(got, expected):
            continue
        mistakes = {
            f"You multiply by e^(+iωt): {EQUIVALENT}, a + ib times e^(−iωt).": _rotate(x, -t, omega),
            "You rotate by ω(t + 1): use the positions as given.": _rotate(x, t + 1, omega),
            "You paired column i with column i + d/2 (halves); here each complex number is "
            "x[2i] + i·x[2i+1].": _rotate(x, t, omega, layout="halves"),
            "You paired column i with column i + d/2 and multiplied by e^(+iωt): that is Hugging Face's "
            "exact convention; this exercise pairs (2i, 2i+1) and uses e^(−iωt).":
                _rotate(x, -t, omega, layout="halves"),
            "The frequencies use i/d in the exponent; ω_i = 10000^(−2i/d).":
                _rotate(x, t, 10_000.0 ** (-np.arange(d // 2) / d)),
            "The exponent is 4i/d: i already counts pairs (0 .. d/2 − 1), so ω_i = 10000^(−2i/d), "
            "not 10000^(−2·(2i)/d).": _rotate(x, t, 10_000.0 ** (-4.0 * np.arange(d // 2) / d)),
            "You rotated row r by its row number r: rotate it by the position given for it, "
            "positions[r] (a row's place in the tensor is not its position in the text).":
                _rotate(x, np.arange(n, dtype=np.float64), omega),
        }
        raise NotYet(f"for {shown} expected {fmt(expected)}, got {fmt(got)}." + diagnose(got, mistakes))
    return "a + ib times e^(−iωt) is M_t, for 4 inputs (real positions, one row, d = 2)."


def _softmax(scores: np.ndarray) -> np.ndarray:
    weights = np.exp(scores - scores.max())
    return weights / weights.sum()


def _decode(q, k, v, cache_k, cache_v, *, position, omega, layout="interleaved", rotate_v=False,
            rerotate_cache=False, rotate_q=True, scale="sqrt", append=True) -> np.ndarray:
    """The new token's attention output with the given (possibly wrong) choices."""
    t = cache_k.shape[0]
    where = np.array([float(position)])
    q_rot = _rotate(q[None], where, omega, layout=layout)[0] if rotate_q else q
    k_rot = _rotate(k[None], where, omega, layout=layout)[0]
    v_new = _rotate(v[None], where, omega, layout=layout)[0] if rotate_v else v
    cached = _rotate(cache_k, np.arange(t, dtype=np.float64), omega) if rerotate_cache else cache_k
    keys = np.concatenate([cached, k_rot[None]]) if append else cached
    values = np.concatenate([cache_v, v_new[None]]) if append else cache_v
    scores = keys @ q_rot / {"sqrt": np.sqrt(q.shape[0]), "d": q.shape[0], "none": 1.0}[scale]
    return _softmax(scores) @ values


@verdict
def check_decode_step(step_fn) -> str:
    """Check ``step_fn(q, k, v, cache_k, cache_v)`` → the new token's output [d] at position t."""
    rng = np.random.default_rng(12)
    # the first cache is not square (t + 1 keys ≠ d): a missing transpose shows at once
    for t, d in ((2, 4), (0, 2), (5, 6), (1, 8)):
        q, k, v = rng.normal(size=(3, d))
        omega = _omega(d)
        cache_k = _rotate(rng.normal(size=(t, d)), np.arange(t, dtype=np.float64), omega)
        cache_v = rng.normal(size=(t, d))
        shown = f"a cache of t = {t} tokens, d = {d}"
        args = tuple(torch.tensor(a) for a in (q, k, v, cache_k.reshape(t, d), cache_v.reshape(t, d)))
        # the exercise hands over rope_rotate: the step is about the cache, not the rotation
        try:
            raw = call(step_fn, args, shown, allow=("rope_rotate",))
        except NotYet as wrong:
            if "cannot be multiplied" not in str(wrong) and "size mismatch" not in str(wrong):
                raise
            raise NotYet(f"{wrong} The scores are q·k_s for every key s, the keys being rows "
                         "of [t + 1, d]: multiply q by keys.T.") from None
        got = as_array(raw, (d,), shown, what="a [d] tensor")
        inputs = (q, k, v, cache_k.reshape(t, d), cache_v.reshape(t, d))
        expected = _decode(*inputs, position=t, omega=omega)
        if close(got, expected):
            continue
        mistakes = {
            "You forgot the cache offset: the new token is not at position 0 but at t, the number of "
            "cached tokens.": _decode(*inputs, position=0, omega=omega),
            "Positions start at 0: after t cached tokens (positions 0 .. t−1) the new one is at t, "
            "not t + 1.": _decode(*inputs, position=t + 1, omega=omega),
            "You rotated the value v: RoPE rotates only q and k; values carry content, not position.":
                _decode(*inputs, position=t, omega=omega, rotate_v=True),
            "You rotated the cached keys again: each key is rotated once, at its own position, when "
            "it enters the cache.": _decode(*inputs, position=t, omega=omega, rerotate_cache=True),
            "You rotate the new q and k by M_{−t} (Su et al.'s direction) while the cache holds keys "
            "rotated by M_s: either direction works, but one model must use one; here it is M_t.":
                _decode(*inputs, position=-t, omega=omega),
            "You paired column i with column i + d/2 (halves), but the cache was built with "
            "interleaved pairs (2i, 2i+1).": _decode(*inputs, position=t, omega=omega, layout="halves"),
            "The query must be rotated too, at the same position t as its key.":
                _decode(*inputs, position=t, omega=omega, rotate_q=False),
            "The scores need the 1/√d scale before the softmax.":
                _decode(*inputs, position=t, omega=omega, scale="none"),
            "You divided the scores by d; the scale is 1/√d.":
                _decode(*inputs, position=t, omega=omega, scale="d"),
        }
        if t:
            mistakes["The new token must attend to itself too: append its rotated key and its value "
                     "to the cache first."] = _decode(*inputs, position=t, omega=omega, append=False)
        raise NotYet(f"for {shown} expected {fmt(expected)}, got {fmt(got)}." + diagnose(got, mistakes))
    return "new token at position t, keys rotated once, v as is; 4 caches (t = 0 too)."
