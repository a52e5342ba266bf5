"""The sinusoidal-code explorer of lesson 03 (03_sinusoidal_encoding): d_model, base and the
number of positions → the code as a heatmap and the similarity PE(t)·PE(t+k) against the offset k."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..encodings import frequencies, offset_similarity, sinusoidal_encoding
from ._base import Explorer, _figure, _int_slider, _log_slider


def _tick_texts(ax, axis: str, count: int) -> list:
    """``count`` animated text artists along the x or y axis of ``ax`` (axes-fraction positions
    set later by ``_place_ticks``), standing in for tick labels so a new range needs no relayout."""
    ax.set_xticks([]) if axis == "x" else ax.set_yticks([])
    if axis == "x":
        return [ax.text(0, -0.03, "", transform=ax.transAxes, ha="center", va="top") for _ in range(count)]
    return [ax.text(-0.02, 0, "", transform=ax.transAxes, ha="right", va="center") for _ in range(count)]


def _place_ticks(texts: list, axis: str, values: list[int], fractions: list[float]) -> None:
    for text, value, fraction in zip(texts, values, fractions):
        text.set_text(str(value))
        text.set_position((fraction, -0.03) if axis == "x" else (-0.02, fraction))


def _quarters(size: int) -> list[int]:
    """0, a quarter, a half, three quarters of ``size`` and its last index, as integers."""
    return [0, size // 4, size // 2, 3 * size // 4, size - 1]


def sinusoid_explorer(d_model: int = 32, base: float = 10_000.0, n_positions: int = 64) -> Explorer:
    """Sliders d_model (4–128), base (10–100 000) and n_positions (16–256) → the code PE [n, d]
    as a heatmap, and the normalised similarity PE(t)·PE(t+k) / (d/2) for k = 0 .. n-1 (the
    same for every t, lesson 03 section 4). The axes always span the whole code, so their
    labels are redrawn as text (a slider move never needs a full relayout)."""
    controls = {"d_model": _int_slider("d_model", d_model, 4, 128, 4),
                "base": _log_slider("base", base, 1, 5, 0.1),
                "n_positions": _int_slider("n_positions", n_positions, 16, 256, 16)}
    figure = _figure(8.4, 3.0)
    code_ax, curve_ax = figure.subplots(1, 2, width_ratios=[1, 1.3])
    image = code_ax.imshow(np.zeros((2, 2)), cmap="RdBu", vmin=-1, vmax=1, aspect="auto", interpolation="nearest",
                           extent=(0, 1, 1, 0))
    code_ax.set(xlabel="dimension i", ylabel="position t", title="PE(t)")
    (curve,) = curve_ax.plot([], [], color="tab:blue")
    curve_ax.axhline(0.0, color="0.6", linewidth=0.8)
    curve_ax.set(xlabel="offset k", ylabel="PE(t)·PE(t+k) / (d/2)", xlim=(0, 1), ylim=(-0.6, 1.05),
                 title="similarity depends only on k")
    code_ax.xaxis.labelpad = curve_ax.xaxis.labelpad = code_ax.yaxis.labelpad = 18
    ticks = {"dimension": _tick_texts(code_ax, "x", 5), "position": _tick_texts(code_ax, "y", 5),
             "offset": _tick_texts(curve_ax, "x", 5)}
    figure.subplots_adjust(left=0.08, right=0.98, bottom=0.17, top=0.89, wspace=0.3)

    def update(d_model: int, base: float, n_positions: int) -> tuple[str, bool]:
        code = sinusoidal_encoding(n_positions, d_model, base=base, dtype=torch.float64)
        image.set_data(code.numpy())
        offsets = np.arange(n_positions)
        similarity = offset_similarity(offsets.astype(float), d_model, base=base) / (d_model / 2)
        curve.set_data(offsets / (n_positions - 1), similarity.numpy())
        for name, size in (("dimension", d_model), ("position", n_positions)):
            values = _quarters(size)
            _place_ticks(ticks[name], "x" if name == "dimension" else "y", values,
                         [(v + 0.5) / size if name == "dimension" else 1 - (v + 0.5) / size for v in values])
        values = _quarters(n_positions)
        _place_ticks(ticks["offset"], "x", values, [v / (n_positions - 1) for v in values])
        wavelengths = 2 * math.pi / frequencies(d_model, base=base)
        below = (similarity < 0.5).nonzero()
        first_half = f"first drops below 0.5 at k = {int(below[0])}" if len(below) else "stays above 0.5"
        readout = (f"wavelengths from {wavelengths[0].item():.2f} to {wavelengths[-1].item():,.0f} positions; "
                   f"similarity at k = 1: {similarity[1].item():.4f}, {first_half}")
        return readout, False

    animated = [image, curve, *(text for texts in ticks.values() for text in texts)]
    return Explorer("The sinusoidal code: width, base and length", controls, figure, update, animated=animated)
