"""The permutation explorer of lesson 01 (01_permutation_equivariance): reorder a sentence → its
attention weights and outputs move with the words, unless a causal mask or a position code is
switched on."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.ticker import MaxNLocator

from .. import _validate
from ..attention import attention, causal_mask
from ..encodings import sinusoidal_encoding
from ._base import Explorer, _figure, _int_slider


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
