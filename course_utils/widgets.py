"""Interactive explorers: move a slider, watch the code (and what it does) change.

Each ``*_explorer`` function returns an ``Explorer``: an ipywidgets ``VBox`` holding the
controls, the figure (a PNG ``Image`` widget) and a line of numbers underneath. Nothing here
computes anything new; every picture is drawn from the functions the lessons use:

- ``sinusoid_explorer`` (lesson 03): d_model, base and the number of positions → the code as a
  heatmap and the similarity PE(t)·PE(t+k) against the offset k.
- ``offset_map_explorer`` (lesson 04): t and k → each (sin, cos) pair as a point on its circle,
  turned by ω_i·k, and PE(t+k) = M_k·PE(t) in numbers.
- ``amplitude_explorer`` (lesson 05): the amplitude A and d_model → how often x + A·PE(t) is still
  nearest its own token x.
- ``four_terms_explorer`` (lesson 06): token and position strength → the four logit terms and
  their sum.
- ``extension_explorer`` (lesson 12): the scale s and a method (none, PI, NTK, YaRN) → each
  RoPE pair's largest angle at the new length against the one it reached in training.
- ``permutation_explorer`` (lesson 01): reorder a sentence → its attention weights and outputs move
  with the words, unless a causal mask or a position code is switched on.

A lesson shows ``explorer.picture()`` (the figure at the starting values, a plain PNG that reads
on GitHub and is kept by nbval) and then the live ``explorer`` in a cell tagged
``nbval-ignore-output``. ``explorer.set(name=value, ...)`` moves controls from code (tests, the
benchmark); every change redraws at once. Figures are drawn with matplotlib's Agg canvas and
encoded with Pillow; an update that only changes data (the usual case) redraws just the changed
artists over a cached background ("blitting"), so a redraw takes tens of milliseconds.
"""

from __future__ import annotations

import io
import math
import random
import statistics
import time
from collections.abc import Callable

import ipywidgets as widgets
import numpy as np
import torch
from IPython.display import Image as StaticImage
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from PIL import Image as PILImage

from . import _validate
from .attention import attention, causal_mask
from .combine import nearest_token_accuracy
from .decomposition import four_term_decomposition
from .encodings import frequencies, offset_similarity, sinusoidal_encoding
from .extension import rope_frequencies
from .relative import offset_matrix

DPI = 72
_SLIDER = {"continuous_update": True, "style": {"description_width": "initial"},
           "layout": widgets.Layout(width="300px")}


def _figure(width: float, height: float) -> Figure:
    """A matplotlib Figure on its own Agg canvas (not pyplot: nothing is shown by accident)."""
    figure = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(figure)
    return figure


def _few_ticks(*axes) -> None:
    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(5, integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(5))


class Explorer(widgets.VBox):
    """Controls, a figure and a readout, redrawn whenever a control changes.

    update(**values) -> (readout_html, relayout): change the figure's artists for the control
    values; relayout=True asks for a full redraw (axis limits or tick labels changed), False
    redraws only the artists in ``animated`` over the cached background.
    """

    def __init__(self, title: str, controls: dict[str, widgets.ValueWidget], figure: Figure,
                 update: Callable[..., tuple[str, bool]], animated: list | None = None):
        self.controls = controls
        self._title = title
        self.figure = figure
        self._update = update
        self._animated = list(animated or [])
        for artist in self._animated:
            artist.set_animated(True)
        self._background = None
        self._holding = False
        self.image = widgets.Image(format="png")
        self.image.add_class("explorer-figure")
        self.readout = widgets.HTML()
        header = widgets.HTML(f"<b>{title}</b>")
        rows = [widgets.HBox(list(controls.values())[i:i + 3]) for i in range(0, len(controls), 3)]
        super().__init__([header, *rows, self.image, self.readout])
        self.add_class("course-explorer")
        for control in controls.values():
            control.observe(self._changed, names="value")
        self.redraw(relayout=True)

    def __repr__(self) -> str:
        return f"<live explorer ({', '.join(self.controls)}): run the lesson in JupyterLab or on Binder>"

    def values(self) -> dict:
        """The current value of every control, by name."""
        return {name: control.value for name, control in self.controls.items()}

    def _changed(self, _change) -> None:
        if not self._holding:
            self.redraw()

    def set(self, **values) -> None:
        """Move several controls at once (one redraw). Unknown names raise a ValueError."""
        unknown = sorted(set(values) - set(self.controls))
        if unknown:
            raise ValueError(f"unknown control(s) {unknown}; this explorer has {sorted(self.controls)}")
        self._holding = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._holding = False
        self.redraw()

    def redraw(self, relayout: bool = False) -> None:
        """Recompute the figure for the current values and send it to the Image widget."""
        readout, needs_layout = self._update(**self.values())
        canvas = self.figure.canvas
        if relayout or needs_layout or self._background is None:
            canvas.draw()  # animated artists are left out of this: the background is clean
            self._background = canvas.copy_from_bbox(self.figure.bbox)
        else:
            canvas.restore_region(self._background)
        for artist in self._animated:
            self.figure.draw_artist(artist)
        self.readout.value = readout
        self.image.value = self._png()

    def _png(self) -> bytes:
        width, height = self.figure.canvas.get_width_height()
        rgba = PILImage.frombuffer("RGBA", (width, height), self.figure.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        buffer = io.BytesIO()
        rgba.convert("RGB").save(buffer, format="png", compress_level=1)
        return buffer.getvalue()

    def picture(self) -> StaticImage:
        """The figure as it is now, as a plain PNG for a notebook output (reads without a kernel)."""
        return StaticImage(data=self.image.value, format="png")


def random_moves(explorer: Explorer, n: int = 20, *, seed: int = 0) -> list[dict]:
    """``n`` random settings of every control of ``explorer``, each a legal slider position
    (min, max and step of the control itself), for timing and testing redraws."""
    if not isinstance(explorer, Explorer):
        raise TypeError(f"explorer must be an Explorer (from a *_explorer function), got {type(explorer).__name__}")
    n = _validate.integer(n, "n", minimum=1)
    seed = _validate.seed(seed)
    rng = random.Random(seed)
    moves = []
    for _ in range(n):
        values = {}
        for name, control in explorer.controls.items():
            if isinstance(control, widgets.Checkbox):
                values[name] = rng.random() < 0.5
            elif isinstance(control, widgets.Dropdown):
                values[name] = rng.choice(control.options)
            elif isinstance(control, widgets.FloatLogSlider):
                values[name] = control.base ** rng.uniform(control.min, control.max)
            elif isinstance(control, widgets.IntSlider):
                values[name] = rng.randrange(control.min, control.max + 1, control.step)
            else:
                values[name] = rng.uniform(control.min, control.max)
        moves.append(values)
    return moves


def redraw_times(explorer: Explorer, updates: list[dict]) -> dict[str, float]:
    """Time ``explorer.set(**values)`` for each dict in ``updates``. Returns the median and max
    wall-clock ms, and the median CPU ms of this thread (what the redraw itself costs, whatever
    else the machine is doing)."""
    if not isinstance(explorer, Explorer):
        raise TypeError(f"explorer must be an Explorer (from a *_explorer function), got {type(explorer).__name__}")
    if not isinstance(updates, list) or not updates or not all(isinstance(u, dict) for u in updates):
        raise TypeError("updates must be a non-empty list of dicts of control values")
    times, cpu = [], []
    for values in updates:
        start, start_cpu = time.perf_counter(), time.thread_time()
        explorer.set(**values)
        times.append(1000 * (time.perf_counter() - start))
        cpu.append(1000 * (time.thread_time() - start_cpu))
    return {"median_ms": statistics.median(times), "max_ms": max(times), "n": len(times),
            "median_cpu_ms": statistics.median(cpu)}


def _bounded(value, name: str, low: int, high: int, step: int = 1) -> int:
    """An integer argument of an explorer: low .. high in steps of ``step``, named in the message."""
    value = _validate.integer(value, name)
    if not low <= value <= high or (value - low) % step:
        steps = f" in steps of {step}" if step > 1 else ""
        raise ValueError(f"{name} must be between {low} and {high}{steps} for this explorer, got {value}")
    return value


def _int_slider(name: str, value: int, low: int, high: int, step: int = 1) -> widgets.IntSlider:
    value = _bounded(value, name, low, high, step)
    return widgets.IntSlider(value=value, min=low, max=high, step=step, description=name, **_SLIDER)


def _log_slider(name: str, value: float, low_exp: float, high_exp: float, step: float, *,
                argument: str | None = None) -> widgets.FloatLogSlider:
    """A slider labelled ``name``; ``argument`` is the explorer's argument that sets it, when named otherwise."""
    argument = argument or name
    value = _validate.real(value, argument, positive=True)
    if not 10**low_exp <= value <= 10**high_exp:
        raise ValueError(f"{argument} must be between {10**low_exp:g} and {10**high_exp:g} for this explorer, "
                         f"got {value:g}")
    return widgets.FloatLogSlider(value=value, base=10, min=low_exp, max=high_exp, step=step,
                                  description=name, readout_format=".3g", **_SLIDER)


def _float_slider(name: str, value: float, low: float, high: float, step: float) -> widgets.FloatSlider:
    value = _validate.real(value, name)
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high} for this explorer, got {value}")
    return widgets.FloatSlider(value=value, min=low, max=high, step=step, description=name, **_SLIDER)


# ---------------------------------------------------------------- lesson 03: the sinusoidal code

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


# ---------------------------------------------------------------- lesson 04: the offset map

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


# ---------------------------------------------------------------- lesson 05: add, and scale

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


# ---------------------------------------------------------------- lesson 06: the four terms

TERM_TITLES = ("token–token", "token–position", "position–token", "position–position", "sum = logits")


def four_terms_explorer(token_strength: float = 1.0, position_strength: float = 1.0, n: int = 16,
                        d_model: int = 32) -> Explorer:
    """Sliders for the token strength a and position strength b (0–2) → the four terms of the
    logits (a·x + b·e) W_q ((a·x + b·e) W_k)^T / √d_k, and their sum, on one colour scale.
    The terms scale as a², a·b, b·a and b²; x repeats 4 random tokens, e is the sinusoidal code,
    W_q and W_k are random [d, d/2] (as in lesson 06). ``n`` (2–64 positions) and ``d_model``
    (even, 2–128) are fixed when the explorer is made."""
    n = _bounded(n, "n", 2, 64)
    d_model = _validate.d_model(d_model)
    if d_model > 128:
        raise ValueError(f"d_model must be at most 128 here, got {d_model}")
    controls = {"token_strength": _float_slider("token_strength", token_strength, 0.0, 2.0, 0.05),
                "position_strength": _float_slider("position_strength", position_strength, 0.0, 2.0, 0.05)}
    generator = torch.Generator().manual_seed(0)
    table = torch.randn(4, d_model, generator=generator, dtype=torch.float64)
    x = table[torch.randint(0, 4, (n,), generator=generator)]
    e = sinusoidal_encoding(n, d_model, dtype=torch.float64)
    w_q, w_k = (torch.randn(d_model, d_model // 2, generator=generator, dtype=torch.float64) / d_model**0.5
                for _ in range(2))
    unit = four_term_decomposition(x, e, x, e, w_q, w_k, scaled=True)  # a = b = 1; see update
    limit = max(max(term.abs().max().item() for term in (*unit, unit.total())), 1e-9)  # at a = b = 1
    figure = _figure(11.0, 2.6)
    axes = figure.subplots(1, 5)
    images = []
    for ax, title in zip(axes, TERM_TITLES):
        images.append(ax.imshow(np.zeros((n, n)), cmap="RdBu", vmin=-limit, vmax=limit, interpolation="nearest"))
        ax.set(title=title, xlabel="key s", xticks=[0, n - 1], yticks=[0, n - 1])
    axes[0].set_ylabel("query t")
    figure.subplots_adjust(left=0.04, right=0.99, bottom=0.16, top=0.88, wspace=0.25)

    def update(token_strength: float, position_strength: float) -> tuple[str, bool]:
        a, b = token_strength, position_strength
        scaled = [a * a * unit.token_token, a * b * unit.token_position,
                  b * a * unit.position_token, b * b * unit.position_position]
        for image, term in zip(images, [*scaled, sum(scaled)]):
            image.set_data(term.numpy())
        spreads = ", ".join(f"{title} {term.std().item():.3f}" for title, term in zip(TERM_TITLES, scaled))
        return f"spread (std) of each term: {spreads}", False

    return Explorer("The four terms of every logit: token vs position strength", controls, figure, update,
                    animated=images)


# ---------------------------------------------------------------- lesson 01: permutation

def permutation_explorer(sentence: str = "the cat sat on a mat", d_model: int = 8) -> Explorer:
    """Slider ``shuffle`` (0 = the original order, 1–23 = other orders), and switches for a causal
    mask and an added sinusoidal code → the attention weights and the outputs of the reordered
    sentence, with each word's output compared with its output in the original order."""
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a string of words, got {type(sentence).__name__}")
    words = sentence.split()
    if not 2 <= len(words) <= 12:
        raise ValueError(f"sentence must have 2 to 12 words, got {len(words)}")
    d_model = _validate.d_model(d_model)
    if d_model > 64:
        raise ValueError(f"d_model must be at most 64 here, got {d_model}")
    controls = {"shuffle": _int_slider("shuffle", 0, 0, 23),
                "causal_mask": widgets.Checkbox(value=False, description="causal mask", indent=False),
                "position_code": widgets.Checkbox(value=False, description="add position code", indent=False)}
    n = len(words)
    generator = torch.Generator().manual_seed(0)
    embedding = {word: torch.randn(d_model, generator=generator) for word in dict.fromkeys(words)}
    w_q, w_k, w_v = (torch.randn(d_model, d_model, generator=generator) / d_model**0.5 for _ in range(3))
    orders = [list(range(n))] + [torch.randperm(n, generator=generator).tolist() for _ in range(23)]
    figure = _figure(8.4, 3.2)
    weight_ax, output_ax = figure.subplots(1, 2)
    weights_image = weight_ax.imshow(np.zeros((n, n)), cmap="viridis", vmin=0, vmax=1)
    output_image = output_ax.imshow(np.zeros((n, d_model)), cmap="RdBu", vmin=-1.5, vmax=1.5, aspect="auto")
    weight_ax.set(title="attention weights", xlabel="key", xticks=range(n), yticks=range(n))
    output_ax.set(title="outputs (a row per word)", xlabel="output dimension", yticks=range(n))
    weight_ax.tick_params(labelbottom=False, labelleft=False)
    output_ax.tick_params(labelleft=False)
    output_ax.xaxis.set_major_locator(MaxNLocator(5, integer=True))
    weight_ax.xaxis.labelpad = 28
    # The word labels are text artists, not tick labels, so a new order is redrawn by blitting.
    label_texts = [weight_ax.text(j, -0.04, "", transform=weight_ax.get_xaxis_transform(), rotation=45,
                             ha="right", va="top") for j in range(n)]
    label_texts += [ax.text(-0.03, j, "", transform=ax.get_yaxis_transform(), ha="right", va="center")
               for ax in (weight_ax, output_ax) for j in range(n)]
    figure.subplots_adjust(left=0.1, right=0.98, bottom=0.22, top=0.9, wspace=0.35)

    def run(order: list[int], mask: bool, code: bool):
        x = torch.stack([embedding[words[i]] for i in order])
        if code:
            x = x + sinusoidal_encoding(n, d_model)
        return attention(x @ w_q, x @ w_k, x @ w_v, causal_mask(n) if mask else None)

    def update(shuffle: int, causal_mask: bool, position_code: bool) -> tuple[str, bool]:
        order = orders[shuffle]
        out, weights = run(order, causal_mask, position_code)
        reference, _ = run(orders[0], causal_mask, position_code)
        labels = [words[i] for i in order]
        weights_image.set_data(weights.numpy())
        output_image.set_data(out.numpy())
        for text, word in zip(label_texts, labels * 3):
            text.set_text(word)
        gap = (out - reference[order]).abs().max().item()  # row j of out is word order[j]
        moved = [words[i] for j, i in enumerate(order) if not torch.allclose(out[j], reference[i], atol=1e-6)]
        if not moved:
            verdict = "every word's output is exactly what it was in the original order: it just moved with the word"
        else:
            verdict = f"outputs changed for {', '.join(moved)}"
        return f"order: {' '.join(labels)}<br>{verdict} (max |difference| {gap:.4f})", False

    return Explorer("Reorder the words: attention outputs move with them", controls, figure, update,
                    animated=[weights_image, output_image, *label_texts])


# ---------------------------------------------------------------- lesson 12: longer than trained

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


EXPLORERS = {
    "sinusoid": sinusoid_explorer,
    "offset_map": offset_map_explorer,
    "amplitude": amplitude_explorer,
    "four_terms": four_terms_explorer,
    "permutation": permutation_explorer,
    "extension": extension_explorer,
}
