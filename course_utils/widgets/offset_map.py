"""The offset-map explorer of lesson 04 (04_relative_offset_linear_map): t and k → each (sin, cos)
pair as a point on its circle, turned by ω_i·k, and PE(t+k) = M_k·PE(t) in numbers."""

from __future__ import annotations

import numpy as np
import torch

from .. import _validate
from ..encodings import frequencies, sinusoidal_encoding
from ..relative import offset_matrix
from ._base import Explorer, _figure, _int_slider


def offset_map_explorer(t: int = 3, k: int = 2, d_model: int = 8) -> Explorer:
    """Sliders t (0–40) and k (-12–12) → each (sin, cos) pair of PE(t) as a point on the unit
    circle (blue), PE(t+k) (orange ring) and M_k·PE(t) (black cross, on top of the ring), and
    the numbers of both vectors. d_model (2–16, even) is fixed when the explorer is made."""
    d_model = _validate.d_model(d_model)
    if d_model > 16:
        raise ValueError(f"d_model must be at most 16 here (one circle per pair), got {d_model}")
    controls = {"t": _int_slider("t", t, 0, 40), "k": _int_slider("k", k, -12, 12)}
    pairs = d_model // 2
    omega = frequencies(d_model)
    figure = _figure(2.1 * pairs, 2.5)
    axes = np.atleast_1d(figure.subplots(1, pairs))
    angle = np.linspace(0, 2 * np.pi, 200)
    markers = []
    for i, ax in enumerate(axes):
        ax.plot(np.cos(angle), np.sin(angle), color="0.8", linewidth=1)
        ax.set(xlim=(-1.25, 1.25), ylim=(-1.25, 1.25), aspect="equal", xticks=[], yticks=[],
               title=f"pair {i}: ω = {omega[i].item():.3g}", xlabel="cos", ylabel="sin" if i == 0 else "")
        start = ax.plot([], [], "o", color="tab:blue", markersize=8)[0]
        target = ax.plot([], [], "o", markerfacecolor="none", markeredgecolor="tab:orange", markersize=14,
                         markeredgewidth=2)[0]
        mapped = ax.plot([], [], "x", color="black", markersize=8, markeredgewidth=2)[0]
        markers.append((start, target, mapped))
    figure.subplots_adjust(left=0.03, right=0.99, bottom=0.1, top=0.85, wspace=0.1)

    def update(t: int, k: int) -> tuple[str, bool]:
        code = sinusoidal_encoding([t, t + k], d_model, dtype=torch.float64)
        mapped = offset_matrix(k, d_model, dtype=torch.float64) @ code[0]
        for i, (start, target, cross) in enumerate(markers):
            start.set_data([code[0, 2 * i + 1]], [code[0, 2 * i]])
            target.set_data([code[1, 2 * i + 1]], [code[1, 2 * i]])
            cross.set_data([mapped[2 * i + 1]], [mapped[2 * i]])
        gap = (mapped - code[1]).abs().max().item()
        cells = "".join(f"<td>{a:+.4f}</td>" for a in code[1].tolist())
        mapped_cells = "".join(f"<td>{a:+.4f}</td>" for a in mapped.tolist())
        readout = (f"<table><tr><td>PE(t+k) = PE({t + k})</td>{cells}</tr>"
                   f"<tr><td>M<sub>{k}</sub>·PE({t})</td>{mapped_cells}</tr></table>"
                   f"each pair turns by ω<sub>i</sub>·k; max |difference| = {gap:.1e}")
        return readout, False

    animated = [artist for trio in markers for artist in trio]
    return Explorer("The offset map: M_k turns every pair by ω·k", controls, figure, update, animated=animated)
