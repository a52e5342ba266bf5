"""Checks for lesson 13's exercises: cutting images into patches, MAE's 2-D sin-cos code and axial
2-D RoPE. References are float64 NumPy, independent of course_utils.vision."""

from __future__ import annotations

import numpy as np
import torch

from ._core import NotYet, as_array, call, close, diagnose, fmt, verdict
from .attention_positions import _rotate

BASE = 10_000.0
EQUIVALENT = ("an equivalent convention (a fixed permutation of the columns, which a model's weights "
              "absorb), but not MAE's layout, asked for here")


# --- exercise 1: patches -----------------------------------------------------------------------

def _patches(images: np.ndarray, p: int, *, order: str = "raster", inner: str = "rows") -> np.ndarray:
    """[b, H, W] → [b, (H/p)(W/p), p·p]; order "columns" lists patches column by column, inner
    "columns" reads each patch's pixels column by column (the known mistakes)."""
    b, h, w = images.shape
    grid = images.reshape(b, h // p, p, w // p, p).transpose(0, 1, 3, 2, 4)  # [b, gy, gx, py, px]
    if order == "columns":
        grid = grid.transpose(0, 2, 1, 3, 4)
    if inner == "columns":
        grid = grid.transpose(0, 1, 2, 4, 3)
    return grid.reshape(b, -1, p * p)


@verdict
def check_patchify(patchify_fn) -> str:
    """Check ``patchify_fn(images, p)`` → [batch, (H/p)·(W/p), p·p], patches in raster order."""
    rng = np.random.default_rng(13)
    for batch, h, w, p in ((2, 8, 8, 2), (1, 4, 6, 2), (3, 6, 6, 3), (1, 2, 2, 1), (2, 8, 4, 4)):
        images = rng.normal(size=(batch, h, w))
        shown = f"images of shape ({batch}, {h}, {w}) and p = {p}"
        n = (h // p) * (w // p)
        got = as_array(call(patchify_fn, (torch.tensor(images), p), shown), (batch, n, p * p), shown,
                       what=f"a [batch, {n}, {p * p}] tensor")
        expected = _patches(images, p)
        if close(got, expected):
            continue
        mistakes = {
            "Your patches are strips of p·p pixels of one row (a plain reshape): split H into (H/p, p) "
            "and W into (W/p, p), then bring the two p axes together.": images.reshape(batch, n, p * p),
            "Your patches come column by column (patch index x·(H/p) + y); raster order is row by "
            "row, y·(W/p) + x.": _patches(images, p, order="columns"),
            "Your patches are in raster order, but each patch's pixels are read column by column; read "
            "them row by row.": _patches(images, p, inner="columns"),
        }
        raise NotYet(f"for {shown} expected {fmt(expected)}, got {fmt(got)}." + diagnose(got, mistakes))
    return "p×p squares in raster order, pixels row by row; 5 shapes (p = 1 too)."


# --- exercise 2: MAE's 2-D sin-cos code ----------------------------------------------------------

def _code_1d(t: np.ndarray, d: int, *, interleaved: bool = False, exponent: float = 2.0) -> np.ndarray:
    """MAE's 1-D code [len(t), d]: sines then cosines, ω_i = base^(−2i/d) (or a known variant)."""
    omega = BASE ** (-exponent * np.arange(d // 2) / d)
    angles = np.outer(t, omega)
    if interleaved:
        code = np.empty((len(t), d))
        code[:, 0::2], code[:, 1::2] = np.sin(angles), np.cos(angles)
        return code
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def _code_2d(height: int, width: int, d: int, *, swap: bool = False, column_major: bool = False,
             **variant) -> np.ndarray:
    index = np.arange(height * width)
    if column_major:
        x, y = index // height, index % height
    else:
        y, x = index // width, index % width
    first, second = (y, x) if swap else (x, y)
    return np.concatenate([_code_1d(first.astype(float), d // 2, **variant),
                           _code_1d(second.astype(float), d // 2, **variant)], axis=1)


@verdict
def check_sinusoidal_2d(code_fn) -> str:
    """Check ``code_fn(height, width, d_model)`` → MAE's 2-D sin-cos code [height·width, d_model]."""
    for height, width, d in ((3, 5, 8), (4, 4, 16), (2, 3, 4), (1, 1, 8), (5, 2, 12)):
        shown = f"height = {height}, width = {width}, d_model = {d}"
        got = as_array(call(code_fn, (height, width, d), shown), (height * width, d), shown,
                       what=f"a [{height * width}, {d}] tensor")
        expected = _code_2d(height, width, d)
        if close(got, expected):
            continue
        mistakes = {
            "Your first half encodes the row y, the second the column x: " + EQUIVALENT +
            " (first half: the column x).": _code_2d(height, width, d, swap=True),
            "Your sines and cosines are interleaved inside each half: " + EQUIVALENT +
            " (sines, then cosines).": _code_2d(height, width, d, interleaved=True),
            "Your row index is x·height + y (column-major); raster order is y·width + x.":
                _code_2d(height, width, d, column_major=True),
            "Your frequencies use d_model in the exponent; each half is a 1-D code of width d_model/2, "
            "so ω_i = 10000^(−2i/(d_model/2)).": _code_2d(height, width, d, exponent=1.0),
        }
        raise NotYet(f"for {shown} expected {fmt(expected)}, got {fmt(got)}." + diagnose(got, mistakes))
    return "MAE's layout (column x, then row y; sines, then cosines), 5 grids (1×1 too)."


# --- exercise 3: axial 2-D RoPE ---------------------------------------------------------------

def _rope_2d(x: np.ndarray, rows: np.ndarray, cols: np.ndarray, *, swap: bool = False,
             full: bool = False, width: int = 0) -> np.ndarray:
    d = x.shape[1]
    if full:  # 1-D RoPE of the raster index
        return _rotate(x, rows * width + cols, BASE ** (-2.0 * np.arange(d // 2) / d))
    half = d // 2
    omega = BASE ** (-2.0 * np.arange(half // 2) / half)
    first, second = (rows, cols) if swap else (cols, rows)
    return np.concatenate([_rotate(x[:, :half], first, omega), _rotate(x[:, half:], second, omega)], axis=1)


@verdict
def check_rope_2d(rope_fn) -> str:
    """Check ``rope_fn(x, rows, cols)`` → x [n, d]: features 0 .. d/2−1 turned by the column,
    d/2 .. d−1 by the row (interleaved pairs, ω_i = 10000^(−2i/(d/2)))."""
    rng = np.random.default_rng(14)
    for height, width, d in ((3, 4, 8), (2, 2, 4), (4, 3, 16), (1, 5, 8)):
        n = height * width
        x = rng.normal(size=(n, d))
        index = np.arange(n)
        rows, cols = (index // width).astype(float), (index % width).astype(float)
        shown = f"x of shape ({n}, {d}) on a {height}×{width} grid"
        args = (torch.tensor(x), torch.tensor(rows), torch.tensor(cols))
        # the exercise builds on the 1-D rope_rotate, which lessons 10-11 had the learner write
        got = as_array(call(rope_fn, args, shown, allow=("rope_rotate",)), (n, d), shown,
                       what=f"an [{n}, {d}] tensor")
        expected = _rope_2d(x, rows, cols)
        if close(got, expected):
            continue
        mistakes = {
            "Your first half turns with the row, the second with the column: an equivalent convention "
            "(W_q and W_k can absorb the permutation), but here the column half comes first, as in "
            "sinusoidal_encoding_2d.": _rope_2d(x, rows, cols, swap=True),
            "You rotated the whole vector by the raster index y·width + x: that is 1-D RoPE on the "
            "flattened grid, whose scores depend on (Δrow·width + Δcol), not on (Δrow, Δcol).":
                _rope_2d(x, rows, cols, full=True, width=width),
            "Only the column half is turned: the second half must turn with the row.":
                np.concatenate([_rope_2d(x, rows, cols)[:, : d // 2], x[:, d // 2:]], axis=1),
        }
        raise NotYet(f"for {shown} expected {fmt(expected)}, got {fmt(got)}." + diagnose(got, mistakes))
    return "column half, then row half, each as lesson 11's rope_rotate; 4 grids."
