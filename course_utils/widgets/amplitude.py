"""The amplitude explorer of lesson 05 (05_add_or_concatenate): the amplitude A and d_model → how
often x + A·PE(t) is still nearest its own token x."""

from __future__ import annotations

import math

import numpy as np
import torch
from matplotlib.ticker import MaxNLocator

from ..combine import nearest_token_accuracy
from ..encodings import sinusoidal_encoding
from ._base import Explorer, _bounded, _figure, _int_slider, _log_slider


def amplitude_explorer(amplitude: float = 1.0, d_model: int = 64, vocab: int = 64, n_positions: int = 64) -> Explorer:
    """Sliders A (0.01–100) and d_model (16–256) → the fraction of sums x + A·PE(t) whose nearest
    token is x itself: against A (the current A marked) and position by position. Tokens are
    N(0, 1) entries (length ≈ √d), the code has length A·√(d/2). ``amplitude`` sets the A slider;
    ``vocab`` and ``n_positions`` (2–256 each) are fixed when the explorer is made."""
    vocab = _bounded(vocab, "vocab", 2, 256)
    n_positions = _bounded(n_positions, "n_positions", 2, 256)
    controls = {"A": _log_slider("A", amplitude, -2, 2, 0.05, argument="amplitude"),
                "d_model": _int_slider("d_model", d_model, 16, 256, 16)}
    grid = np.logspace(-2, 2, 13)
    figure = _figure(8.4, 3.0)
    sweep_ax, position_ax = figure.subplots(1, 2)
    (sweep,) = sweep_ax.plot(grid, np.zeros_like(grid), "o-", color="tab:blue", markersize=4)
    marker = sweep_ax.axvline(1.0, color="tab:orange", linewidth=2)
    sweep_ax.set(xscale="log", xlim=(grid[0], grid[-1]), ylim=(-0.03, 1.03), xlabel="amplitude A",
                 ylabel="nearest token is right", title="over A (orange: the slider)")
    (per_position,) = position_ax.plot(np.arange(n_positions), np.zeros(n_positions), color="tab:orange")
    position_ax.set(xlim=(0, n_positions - 1), ylim=(-0.03, 1.03), xlabel="position t",
                    ylabel="nearest token is right", title="at this A, position by position")
    position_ax.xaxis.set_major_locator(MaxNLocator(5, integer=True))
    figure.subplots_adjust(left=0.08, right=0.98, bottom=0.17, top=0.89, wspace=0.3)
    cache: dict[int, tuple[torch.Tensor, torch.Tensor, np.ndarray]] = {}

    def tables(d: int):
        if d not in cache:
            generator = torch.Generator().manual_seed(d)
            tokens = torch.randn(vocab, d, generator=generator, dtype=torch.float64)
            code = sinusoidal_encoding(n_positions, d, dtype=torch.float64)
            curve = np.array([nearest_token_accuracy(tokens, a * code).mean().item() for a in grid])
            cache[d] = (tokens, code, curve)
        return cache[d]

    def update(A: float, d_model: int) -> tuple[str, bool]:
        tokens, code, curve = tables(d_model)
        sweep.set_ydata(curve)
        marker.set_xdata([A, A])
        accuracy = nearest_token_accuracy(tokens, A * code)
        per_position.set_ydata(accuracy.numpy())
        readout = (f"token length ≈ {tokens.norm(dim=1).mean().item():.2f}, code length A·√(d/2) = "
                   f"{A * math.sqrt(d_model / 2):.2f}; the nearest token is right for "
                   f"{accuracy.mean().item():.1%} of the {vocab * n_positions} sums "
                   f"(a trained linear read-out recovers the token at every A: lesson 05, section 5)")
        return readout, False

    return Explorer("Adding A·PE to a token: does the token survive?", controls, figure, update,
                    animated=[sweep, marker, per_position])
