"""The machinery every explorer shares: the ``Explorer`` widget (controls, a figure, a readout,
redrawn by blitting), ``random_moves`` and ``redraw_times`` (tests and the benchmark), and the
slider and tick helpers that check an explorer's arguments. The explorers themselves live one per
module beside this one (see the package docstring)."""

from __future__ import annotations

import io
import random
import statistics
import time
from collections.abc import Callable

import ipywidgets as widgets
from IPython.display import Image as StaticImage
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from PIL import Image as PILImage

from .. import _validate

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

