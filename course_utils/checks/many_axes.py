"""Checks for lesson 16's exercises: M-RoPE's three position rows, the mask of a streaming cache
(window plus sink tokens) and Llama 4's attention temperature. References are NumPy, independent
of course_utils."""

from __future__ import annotations

import math

import numpy as np
import torch

from ._core import NotYet, as_array, call, close, diagnose, fmt, verdict


def _mrope(segments, rule: str = "paper") -> np.ndarray:
    """[3, n] positions; rule: "paper" (next start s + max(t, h, w)), "hf523" (s + max(h, w)),
    "count" (s + t·h·w), "one_more" (s + max(t, h, w) + 1)."""
    columns, start = [], 0
    for segment in segments:
        if segment[0] == "text":
            for p in range(start, start + segment[1]):
                columns.append((p, p, p))
            start += segment[1]
            continue
        _, t, h, w = segment
        for i in range(t):
            for j in range(h):
                for k in range(w):
                    columns.append((start + i, start + j, start + k))
        start += {"paper": max(t, h, w), "hf523": max(h, w), "count": t * h * w,
                  "one_more": max(t, h, w) + 1}[rule]
    return np.array(columns, dtype=np.int64).T.reshape(3, -1)


def _integers(raw, shown: str) -> None:
    if isinstance(raw, torch.Tensor) and raw.is_floating_point() and not torch.equal(raw, raw.round()):
        raise NotYet(f"for {shown} your positions are not whole numbers: {fmt(raw)}.")


@verdict
def check_mrope_positions(positions_fn) -> str:
    """Check ``positions_fn(segments)`` → the [3, n] M-RoPE positions (time, height, width rows) of
    a prompt of ("text", n) and ("image", t, h, w) segments; the next segment starts one past the
    largest position used, s + max(t, h, w)."""
    cases = (
        [("text", 3)],
        [("text", 2), ("image", 1, 2, 3), ("text", 2)],
        [("image", 1, 2, 2), ("text", 1)],
        [("text", 1), ("image", 3, 2, 2), ("text", 2)],
        [("text", 2), ("image", 2, 3, 2), ("text", 1), ("image", 1, 1, 4), ("text", 2)],
    )
    for segments in cases:
        shown = f"segments = {segments}"
        expected = _mrope(segments)
        raw = call(positions_fn, (list(segments),), shown)
        _integers(raw, shown)
        got = as_array(raw, expected.shape, shown, what="a [3, n] tensor")
        if np.array_equal(got, expected):
            continue
        mistakes = {
            "That is transformers 5.23's rule (the next segment starts at s + max(h, w)); the lesson follows "
            "the Qwen2-VL paper: one past the largest position used, s + max(t, h, w).": _mrope(segments, "hf523"),
            "After an image the next segment starts one past the largest position it used, s + max(t, h, w), "
            "not after its t·h·w tokens.": _mrope(segments, "count"),
            "One too far: the next segment starts at s + max(t, h, w), one past the largest position "
            "s + max(t, h, w) − 1.": _mrope(segments, "one_more"),
            "Height and width are swapped: row 1 is the image row j, row 2 the column k.": expected[[0, 2, 1]],
        }
        hint = next((text + " " for text, wrong in mistakes.items() if np.array_equal(got, wrong)), "")
        shown_got = got.astype(np.int64).tolist() if np.abs(got).max(initial=0) < 1e9 else fmt(got)
        raise NotYet(f"{hint}For {shown} expected {expected.tolist()}, got {shown_got}.")
    return "text counts on in all three rows; an image adds frame, row, column to s."


def _stream_mask(n: int, window: int, sinks: int) -> np.ndarray:
    t = np.arange(n)
    offset = t[:, None] - t[None, :]
    return (offset >= 0) & ((offset < window) | (t[None, :] < sinks))


@verdict
def check_stream_mask(mask_fn) -> str:
    """Check ``mask_fn(n, window, sinks)`` → bool [n, n], entry [t, s] True when query t may read key
    s in a streaming cache: s ≤ t, and s is among the last ``window`` tokens (t − s < window) or one
    of the first ``sinks``."""
    for n, window, sinks in ((6, 3, 0), (8, 3, 2), (5, 5, 1), (4, 1, 0), (7, 2, 3), (3, 4, 0), (1, 1, 1)):
        shown = f"n = {n}, window = {window}, sinks = {sinks}"
        raw = call(mask_fn, (n, window, sinks), shown)
        got = as_array(raw, (n, n), shown, what="a [n, n] boolean tensor")
        expected = _stream_mask(n, window, sinks).astype(np.float64)
        if np.array_equal(got != 0, expected != 0) and set(np.unique(got)) <= {0.0, 1.0}:
            continue
        t = np.arange(n)
        offset = t[:, None] - t[None, :]
        mistakes = {
            "The window is one too wide: it holds `window` tokens, the query's own included (t − s < window).":
                (offset >= 0) & ((offset <= window) | (t[None, :] < sinks)),
            "The sink tokens are missing: the first `sinks` keys stay readable at every later query.":
                _stream_mask(n, window, 0),
            "A sink is readable before it arrives: the causal rule s ≤ t holds for the sinks too.":
                ((offset >= 0) & (offset < window)) | (t[None, :] < sinks),
            "Rows and columns are swapped: entry [t, s] is query t reading key s.":
                _stream_mask(n, window, sinks).T,
        }
        hint = next((" " + text for text, wrong in mistakes.items()
                     if np.array_equal(got != 0, np.asarray(wrong))), "")
        if not set(np.unique(got)) <= {0.0, 1.0}:
            raise NotYet(f"for {shown} your mask holds {fmt(np.unique(got))}; return True/False (or 1/0).")
        row = int(np.nonzero(((got != 0) != (expected != 0)).any(axis=1))[0][0])
        raise NotYet(f"for {shown}, query t = {row} should read keys {np.nonzero(expected[row])[0].tolist()}, "
                     f"yours reads {np.nonzero(got[row])[0].tolist()}." + hint)
    return "causal, the last `window` keys, and the first `sinks` once they arrived."


def _llama4(t: np.ndarray, floor_scale: int, attn_scale: float) -> np.ndarray:
    return 1.0 + attn_scale * np.log1p(np.floor((t + 1) / floor_scale))


@verdict
def check_llama4_scale(scale_fn) -> str:
    """Check ``scale_fn(positions, floor_scale, attn_scale)`` → Llama 4's query multiplier
    1 + attn_scale·ln(1 + ⌊(t + 1)/floor_scale⌋) at each position t (float tensor shaped like
    positions)."""
    cases = ((np.arange(40), 8, 0.1), (np.array([0, 8190, 8191, 8192, 16383, 10**6]), 8192, 0.1),
             (np.arange(6), 1, 0.5), (np.array([7, 3, 100]), 4, 0.25))
    for t, floor_scale, attn_scale in cases:
        shown = f"positions = {fmt(t)}, floor_scale = {floor_scale}, attn_scale = {attn_scale:g}"
        raw = call(scale_fn, (torch.tensor(t), floor_scale, attn_scale), shown)
        got = as_array(raw, t.shape, shown, what="a float tensor shaped like positions")
        expected = _llama4(t, floor_scale, attn_scale)
        if close(got, expected):
            continue
        mistakes = {
            "Off by one: Llama 4 counts t + 1 tokens (positions start at 0), ⌊(t + 1)/floor_scale⌋.":
                1.0 + attn_scale * np.log1p(np.floor(t / floor_scale)),
            "The floor is missing: the scale grows in steps of floor_scale tokens.":
                1.0 + attn_scale * np.log1p((t + 1) / floor_scale),
            "Use the natural logarithm (torch.log1p), not log10.":
                1.0 + attn_scale * np.log10(1 + np.floor((t + 1) / floor_scale)),
            "The 1 + is missing: the multiplier is 1 where ⌊(t + 1)/floor_scale⌋ = 0.":
                attn_scale * np.log1p(np.floor((t + 1) / floor_scale)),
            "attn_scale multiplies the logarithm, it does not go inside it.":
                1.0 + np.log1p(attn_scale * np.floor((t + 1) / floor_scale)),
        }
        raise NotYet(f"for {shown} expected {fmt(expected)}, got {fmt(got)}." + diagnose(got, mistakes))
    return f"1 + β·ln(1 + ⌊(t + 1)/F⌋): 1 for t + 1 < F, {1 + 0.1 * math.log(2):.3f} (β = 0.1) from F to 2F."
