"""Learned position tables (lesson 07): a table of parameters added to the tokens, and how similar
its rows are to each other.

A learned code is a matrix P [max_len, d] of trainable numbers (BERT: nn.Embedding(512, 768)).
A sequence of n <= max_len tokens gets its first n rows added: x_t + P[t].
"""

from __future__ import annotations

import torch

from . import _validate


def add_learned_code(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """The tokens plus the first n rows of the position table: x[..., t, :] + table[t].

    x: [n, d] or [batch, n, d] (one row per token, positions along the second-to-last
    dimension); table: [max_len, d] with max_len >= n. Returns a tensor shaped like x.
    """
    x = _validate.float_tensor(x, "x", min_dims=2)
    table = _validate.matrix(table, "table")
    if x.ndim > 3:
        raise ValueError(f"x must be [n, d] or [batch, n, d], got shape {tuple(x.shape)}")
    n, d = x.shape[-2], x.shape[-1]
    if table.shape[1] != d:
        raise ValueError(f"table must have one column per dimension of x ({d}), got shape {tuple(table.shape)}")
    if n > table.shape[0]:
        raise ValueError(f"table has {table.shape[0]} rows (max_len) but x has {n} positions: a learned code "
                         "has no row for positions past max_len")
    return x + table[:n]


def cosine_similarity_matrix(table: torch.Tensor) -> torch.Tensor:
    """cos(P[t], P[s]) for every pair of rows: [n, d] → [n, n], symmetric, 1 on the diagonal.

    Each row is divided by its length first, so the result is a Gram matrix of unit rows.
    """
    table = _validate.matrix(table, "table")
    lengths = table.norm(dim=1, keepdim=True)
    if bool((lengths == 0).any()):
        raise ValueError("table has a row of zeros; its cosine with other rows is undefined")
    unit = table / lengths
    return unit @ unit.T


def _square(similarity, name: str = "similarity") -> torch.Tensor:
    similarity = _validate.matrix(similarity, name)
    if similarity.shape[0] != similarity.shape[1]:
        raise ValueError(f"{name} must be square [n, n], got shape {tuple(similarity.shape)}")
    return similarity


def neighbour_similarity(similarity: torch.Tensor, offset: int = 1) -> float:
    """Mean of similarity[t, t + offset] over t: the diagonal ``offset`` places above the main one.

    similarity: [n, n]; offset: an integer with |offset| < n (negative = below the diagonal).
    """
    similarity = _square(similarity)
    n = similarity.shape[0]
    offset = _validate.integer(offset, "offset")
    if abs(offset) >= n:
        raise ValueError(f"offset must satisfy |offset| < n = {n} (the size of similarity), got {offset}")
    return float(torch.diagonal(similarity, offset).mean())


def far_similarity(similarity: torch.Tensor, min_offset: int = 5) -> float:
    """Mean of similarity[t, s] over all pairs at least ``min_offset`` apart, |s − t| >= min_offset.

    similarity: [n, n]; min_offset: 1 .. n − 1.
    """
    similarity = _square(similarity)
    n = similarity.shape[0]
    min_offset = _validate.integer(min_offset, "min_offset", minimum=1)
    if min_offset >= n:
        raise ValueError(f"min_offset must be below n = {n} (the size of similarity), got {min_offset}")
    index = torch.arange(n)
    far = (index[None, :] - index[:, None]).abs() >= min_offset
    return float(similarity[far].mean())


def initialise_table(model, *, std: float, seed: int) -> None:
    """Redraw a learned position table in place with N(0, std²) entries, reproducibly from ``seed``.

    model: a TinyTransformer with position="learned". Used to start the table at the same scale as
    the token embeddings (PyTorch's nn.Embedding default is N(0, 1); the model's table starts at
    BERT's std 0.02).
    """
    from .models import LearnedPosition, TinyTransformer

    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if not isinstance(model.position, LearnedPosition):
        raise ValueError(f'model must have a learned position table (position="learned"), got {model.config.position!r}')
    std = _validate.real(std, "std", positive=True)
    seed = _validate.seed(seed)
    weight = model.position.table.weight
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        weight.copy_(torch.randn(weight.shape, generator=generator, dtype=weight.dtype) * std)
