"""Plot helpers shared by the lessons: labelled axes, colour-blind-safe maps, takeaway titles."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes

from . import _validate
from .decomposition import FourTerms


def _axes(ax):
    """``ax`` when it is a matplotlib Axes to draw into, None for a new figure; anything else is refused."""
    if ax is not None and not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes (e.g. from plt.subplots()) or None, got {type(ax).__name__}")
    return ax


def _drawable(matrix, name: str) -> torch.Tensor:
    """A non-empty 2-D float tensor with finite entries, detached on the CPU; bfloat16 becomes float32
    (NumPy, and so matplotlib, has no bfloat16)."""
    matrix = _validate.matrix(matrix, name)
    if not matrix.numel():
        raise ValueError(f"{name} must have at least one row and one column, got shape {tuple(matrix.shape)}")
    matrix = matrix.detach().cpu()
    return matrix.float() if matrix.dtype == torch.bfloat16 else matrix


def attention_heatmap(weights: torch.Tensor, labels: Sequence[str], *, title: str, ax=None):
    """Draw attention weights [n, n] as a heatmap with the tokens on both axes.

    Rows are queries ("who is looking"), columns are keys ("who is looked at"); the colour is
    the weight, 0 to 1 (viridis). Returns the matplotlib Axes.
    """
    weights = _drawable(weights, "weights")
    n_q, n_k = weights.shape
    if isinstance(labels, str) or not isinstance(labels, Sequence):
        raise TypeError(f"labels must be a sequence of token strings, got {type(labels).__name__}")
    if len(labels) != n_k or n_q != n_k:
        raise ValueError(
            f"weights must be square with one row and column per label: {len(labels)} labels, "
            f"weights of shape {tuple(weights.shape)}"
        )
    if not isinstance(title, str):
        raise TypeError(f"title must be a string, got {type(title).__name__}")
    if _axes(ax) is None:
        _, ax = plt.subplots(figsize=(3.6, 3.2))
    image = ax.imshow(weights.numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(n_k), labels, rotation=45, ha="right")
    ax.set_yticks(range(n_q), labels)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="weight")
    return ax


def code_heatmap(code: torch.Tensor, *, title: str, ax=None, signed: bool = True):
    """Draw a position code [n_positions, width] with position t down and dimension i across.

    signed=True uses a diverging map (RdBu) centred on 0 for codes in [-1, 1]; signed=False
    uses viridis for magnitudes. Returns the matplotlib Axes.
    """
    code = _drawable(code, "code")
    if not isinstance(title, str):
        raise TypeError(f"title must be a string, got {type(title).__name__}")
    signed = _validate.flag(signed, "signed")
    if _axes(ax) is None:
        _, ax = plt.subplots(figsize=(6.4, 3.6))
    values = code.numpy()
    if signed:
        limit = max(float(abs(values).max()), 1e-12)
        image = ax.imshow(values, cmap="RdBu", vmin=-limit, vmax=limit, aspect="auto", interpolation="nearest")
    else:
        image = ax.imshow(values, cmap="viridis", aspect="auto", interpolation="nearest")
    ax.set_xlabel("dimension i")
    ax.set_ylabel("position t")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="value")
    return ax


def similarity_vs_offset(codes: dict, *, title: str, reference: int = 0, normalise: bool = False, ax=None):
    """Plot PE(reference) · PE(reference + k) against the offset k, one line per code.

    codes: {label: code [n_positions, width]}. normalise=True divides by the norms (cosine
    similarity). Returns the matplotlib Axes.
    """
    if not isinstance(codes, dict) or not codes:
        raise TypeError("codes must be a non-empty dict {label: code tensor [n_positions, width]}")
    if not isinstance(title, str):
        raise TypeError(f"title must be a string, got {type(title).__name__}")
    reference = _validate.integer(reference, "reference", minimum=0)
    normalise = _validate.flag(normalise, "normalise")
    if _axes(ax) is None:
        _, ax = plt.subplots(figsize=(6.4, 3.6))
    for label, code in codes.items():
        code = _drawable(code, f"codes[{label!r}]").double()
        if reference >= code.shape[0]:
            raise ValueError(f"reference must be a row of every code; codes[{label!r}] has {code.shape[0]} rows")
        rows = code[reference:]
        values = rows @ rows[0]
        if normalise:
            values = values / (rows.norm(dim=1) * rows[0].norm()).clamp_min(1e-12)
        ax.plot(range(len(values)), values.numpy(), label=str(label))
    ax.set_xlabel("offset k")
    ax.set_ylabel("cosine similarity" if normalise else "dot product PE(t)·PE(t+k)")
    ax.set_title(title)
    if len(codes) > 1:
        ax.legend(frameon=False)
    return ax


def matrix_heatmap(matrix: torch.Tensor, *, title: str, ax=None, xlabel: str = "input dimension j",
                   ylabel: str = "output dimension i"):
    """Draw a signed matrix [n, m] (e.g. the offset map M_k) as a heatmap, entry (i, j) at row i, column j.

    Diverging map (RdBu) centred on 0, symmetric limits; blue is positive, red negative.
    Returns the matplotlib Axes.
    """
    matrix = _drawable(matrix, "matrix")
    for name, text in (("title", title), ("xlabel", xlabel), ("ylabel", ylabel)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a string, got {type(text).__name__}")
    if _axes(ax) is None:
        _, ax = plt.subplots(figsize=(4.4, 3.6))
    values = matrix.double().numpy()
    limit = max(float(abs(values).max()), 1e-12)
    image = ax.imshow(values, cmap="RdBu", vmin=-limit, vmax=limit, interpolation="nearest")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="entry")
    return ax


def four_term_heatmaps(terms, *, title: str, xlabel: str = "key position s", ylabel: str = "query position t"):
    """Draw the four terms of a FourTerms and their sum side by side, on one shared colour scale.

    Diverging map (RdBu) centred on 0, so a term's contribution can be compared across panels.
    Returns the matplotlib Figure.
    """

    if not isinstance(terms, FourTerms):
        raise TypeError(f"terms must be a FourTerms (from four_term_decomposition), got {type(terms).__name__}")
    for name, text in (("title", title), ("xlabel", xlabel), ("ylabel", ylabel)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a string, got {type(text).__name__}")
    panels = [*terms, terms.total()]
    names = ["token–token", "token–position", "position–token", "position–position", "sum = logits"]
    limit = max(float(p.detach().abs().max()) for p in panels) or 1.0
    fig, axes = plt.subplots(1, 5, figsize=(13, 3.0), sharey=True)
    for ax, panel, name in zip(axes, panels, names):
        image = ax.imshow(panel.detach().cpu().double().numpy(), cmap="RdBu", vmin=-limit, vmax=limit,
                          interpolation="nearest")
        ax.set_title(name)
        ax.set_xlabel(xlabel)
    axes[0].set_ylabel(ylabel)
    fig.colorbar(image, ax=list(axes), fraction=0.015, pad=0.01, label="logit contribution")
    fig.suptitle(title)
    return fig


def layer_curves(curves: dict, *, title: str, ylabel: str, ax=None, chance: float | None = None,
                 ylim: tuple[float, float] | None = (0.0, 1.03)):
    """Plot one number per layer, one line per label: {label: [value at input, after block 1, ...]}.

    x is the layer (0 = the input to the first block, ℓ = after block ℓ). Each line gets its own
    colour (viridis) and marker, so the lines stay apart in grey or for colour-blind readers.
    ``chance`` draws a dashed reference line. Returns the matplotlib Axes.
    """
    if not isinstance(curves, dict) or not curves:
        raise TypeError("curves must be a non-empty dict {label: sequence of one number per layer}")
    for name, text in (("title", title), ("ylabel", ylabel)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a string, got {type(text).__name__}")
    rows = {}
    for label, values in curves.items():
        try:
            rows[label] = [float(v) for v in values]
        except (TypeError, ValueError):
            raise TypeError(f"curves[{label!r}] must be a sequence of numbers") from None
    lengths = {len(v) for v in rows.values()}
    if len(lengths) != 1 or 0 in lengths:
        raise ValueError(f"curves must all have the same, non-zero number of layers, got lengths {sorted(lengths)}")
    if chance is not None:
        chance = _validate.real(chance, "chance")
    if ylim is not None:
        if not isinstance(ylim, (tuple, list)) or len(ylim) != 2:
            raise TypeError(f"ylim must be a pair (bottom, top) or None, got {ylim!r}")
        ylim = (_validate.real(ylim[0], "ylim[0]"), _validate.real(ylim[1], "ylim[1]"))
        if ylim[0] == ylim[1]:
            raise ValueError(f"ylim must have bottom != top, got {ylim}")
    if _axes(ax) is None:
        _, ax = plt.subplots(figsize=(5.2, 3.6))
    n_points = lengths.pop()
    colours = plt.cm.viridis([0.0, 0.5, 0.82, 0.3, 0.65][: len(rows)] if len(rows) <= 5
                             else [i / (len(rows) - 1) * 0.9 for i in range(len(rows))])
    markers = "osD^vP*X"
    for i, ((label, values), colour) in enumerate(zip(rows.items(), colours)):
        ax.plot(range(n_points), values, marker=markers[i % len(markers)], color=colour, label=str(label))
    if chance is not None:
        ax.axhline(chance, color="0.5", linestyle="--", linewidth=1, label="chance")
    ax.set_xticks(range(n_points), ["input", *(str(i) for i in range(1, n_points))])
    ax.set_xlabel("layer (input, then after block ℓ)")
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_title(title)
    ax.legend(frameon=False, fontsize=9)
    return ax
