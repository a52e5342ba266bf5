"""The four-terms explorer of lesson 06 (06_four_term_decomposition): token and position strength →
the four logit terms and their sum."""

from __future__ import annotations

import numpy as np
import torch

from .. import _validate
from ..decomposition import four_term_decomposition
from ..encodings import sinusoidal_encoding
from ._base import Explorer, _bounded, _figure, _float_slider


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
