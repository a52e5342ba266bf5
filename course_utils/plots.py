"""Plot helpers shared by the lessons: labelled axes, colour-blind-safe maps, takeaway titles."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch

from . import _validate


def attention_heatmap(weights: torch.Tensor, labels: Sequence[str], *, title: str, ax=None):
    """Draw attention weights [n, n] as a heatmap with the tokens on both axes.

    Rows are queries ("who is looking"), columns are keys ("who is looked at"); the colour is
    the weight, 0 to 1 (viridis). Returns the matplotlib Axes.
    """
    weights = _validate.matrix(weights, "weights")
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
    if ax is None:
        _, ax = plt.subplots(figsize=(3.6, 3.2))
    image = ax.imshow(weights.detach().cpu().numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(n_k), labels, rotation=45, ha="right")
    ax.set_yticks(range(n_q), labels)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="weight")
    return ax
