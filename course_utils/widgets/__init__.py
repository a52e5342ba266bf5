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

from ._base import DPI, Explorer, random_moves, redraw_times
from .amplitude import amplitude_explorer
from .extension import EXTENSION_METHODS, extension_explorer
from .four_terms import TERM_TITLES, four_terms_explorer
from .offset_map import offset_map_explorer
from .permutation import permutation_explorer
from .sinusoid import sinusoid_explorer

__all__ = ["DPI", "EXPLORERS", "EXTENSION_METHODS", "Explorer", "TERM_TITLES", "amplitude_explorer",
           "extension_explorer", "four_terms_explorer", "offset_map_explorer", "permutation_explorer",
           "random_moves", "redraw_times", "sinusoid_explorer"]

EXPLORERS = {
    "sinusoid": sinusoid_explorer,
    "offset_map": offset_map_explorer,
    "amplitude": amplitude_explorer,
    "four_terms": four_terms_explorer,
    "permutation": permutation_explorer,
    "extension": extension_explorer,
}
