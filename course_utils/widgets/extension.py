"""The extension explorer of lesson 12 (12_longer_than_trained): the scale s and a method (none,
PI, NTK, YaRN) → each RoPE pair's largest angle at the new length against the one it reached in
training."""

from __future__ import annotations

import math

import ipywidgets as widgets
import numpy as np
from matplotlib.ticker import MaxNLocator

from .. import _validate
from ..extension import rope_frequencies
from ._base import Explorer, _bounded, _figure, _float_slider


EXTENSION_METHODS = ("none", "linear", "ntk", "yarn")


def extension_explorer(s: float = 4.0, method: str = "yarn", d_head: int = 32,
                       trained_length: int = 64) -> Explorer:
    """Slider s (1–16) and a method (none, linear = PI, ntk, yarn) → for each pair i of a RoPE head
    of width d_head (8–128), the largest angle it reaches in training (positions < L =
    trained_length, 8–4096) and at the new length s·L with the method's frequencies. A pair whose
    new angle passes its trained one by more than one position's step (L·ω_i), without having
    turned a full circle in training, meets angles it never saw."""
    controls = {"s": _float_slider("s", s, 1.0, 16.0, 0.5),
                "method": widgets.Dropdown(options=EXTENSION_METHODS,
                                           value=_validate.choice(method, "method", EXTENSION_METHODS),
                                           description="method", layout=widgets.Layout(width="220px"))}
    d_head = _bounded(d_head, "d_head", 8, 128, 2)
    trained_length = _bounded(trained_length, "trained_length", 8, 4096)
    pairs = np.arange(d_head // 2)
    omega_trained = rope_frequencies(d_head).numpy()
    trained = (trained_length - 1) * omega_trained
    figure = _figure(8.4, 3.2)
    ax = figure.subplots()
    ax.semilogy(pairs, trained, "o-", color="0.55", label=f"trained, t < L = {trained_length}")
    (new_line,) = ax.semilogy([], [], "o-", color="tab:red", label="new length s·L")
    (unseen_marks,) = ax.semilogy([], [], "x", color="black", markersize=9, label="angles never seen")
    ax.axhline(2 * math.pi, color="tab:blue", linewidth=0.8, linestyle="--")
    ax.text(pairs[-1], 2 * math.pi * 1.3, "one full turn (2π)", ha="right", color="tab:blue")
    low = trained.min() / 20
    ax.set(xlabel="pair i (fast → slow)", ylabel="largest angle (radians)",
           ylim=(low, 16 * trained_length * 2), xlim=(-0.5, pairs[-1] + 0.5))
    ax.xaxis.set_major_locator(MaxNLocator(8, integer=True))
    ax.legend(loc="lower left", fontsize=9)
    figure.subplots_adjust(left=0.12, right=0.98, bottom=0.16, top=0.95)

    def update(s: float, method: str) -> tuple[str, bool]:
        scaling = None if method == "none" else method
        omega = rope_frequencies(d_head, scaling=scaling, factor=s if scaling else 1.0,
                                 original_max_len=trained_length)
        reached = (round(s * trained_length) - 1) * omega.numpy()
        # beyond the trained range by more than one position's step (PI maps s·L positions into [0, L))
        unseen = (reached > trained + omega_trained * (1 + 1e-9)) & (trained < 2 * math.pi)
        new_line.set_data(pairs, reached)
        unseen_marks.set_data(pairs[unseen], reached[unseen])
        readout = (f"{int(unseen.sum())} of {d_head // 2} pairs reach angles never seen in training; "
                   f"neighbours differ by {omega[0].item():.3f} rad in the fastest pair "
                   f"(trained: 1.000) and {omega[-1].item():.2e} rad in the slowest")
        return readout, False

    return Explorer("Longer than trained: each pair's angles at the new length", controls, figure, update,
                    animated=[new_line, unseen_marks])
