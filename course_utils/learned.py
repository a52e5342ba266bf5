"""Learned position tables (lesson 07): a table of parameters added to the tokens, how similar
its rows are to each other, how far training moved them, and where a trained model looks.

A learned code is a matrix P [max_len, d] of trainable numbers (BERT: nn.Embedding(512, 768)).
A sequence of n <= max_len tokens gets its first n rows added: x_t + P[t].
"""

from __future__ import annotations

import torch

from . import _validate
from .input_codes import LearnedPosition
from .models import TinyTransformer


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


def band_summary(table: torch.Tensor, *, min_offset: int = 5) -> dict[str, float]:
    """The numbers lesson 07 uses to call a table banded: the mean cosine similarity of rows one
    and two positions apart, and of all rows at least ``min_offset`` apart.

    table: [rows, d] with rows > max(2, min_offset). Returns {"offset 1": …, "offset 2": …,
    "offset >= {min_offset}": …}. Banded: the first two well above the last.
    """
    table = _validate.matrix(table, "table")
    min_offset = _validate.integer(min_offset, "min_offset", minimum=1)
    rows = table.shape[0]
    if rows <= max(2, min_offset):
        raise ValueError(f"table needs more than max(2, min_offset) = {max(2, min_offset)} rows, got {rows}")
    similarity = cosine_similarity_matrix(table.detach())
    return {"offset 1": neighbour_similarity(similarity, 1), "offset 2": neighbour_similarity(similarity, 2),
            f"offset >= {min_offset}": far_similarity(similarity, min_offset)}


def initialise_table(model, *, std: float, seed: int, table: str = "position") -> None:
    """Redraw a table of a TinyTransformer in place with N(0, std²) entries, reproducibly from ``seed``.

    table="position" (the default): the learned position table; model needs position="learned".
    table="token": the token embedding. PyTorch's nn.Embedding default is N(0, 1) (the model's
    tokens); the model's position table starts at BERT's std 0.02, and BERT draws its token
    table at 0.02 too. Lesson 07 compares these starts.
    """

    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    table = _validate.choice(table, "table", ("position", "token"))
    if table == "position" and not isinstance(model.position, LearnedPosition):
        raise ValueError(f'model must have a learned position table (position="learned"), got {model.config.position!r}')
    std = _validate.real(std, "std", positive=True)
    seed = _validate.seed(seed)
    weight = model.position.table.weight if table == "position" else model.token_embedding.weight
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        weight.copy_(torch.randn(weight.shape, generator=generator, dtype=weight.dtype) * std)


def relative_movement(before: torch.Tensor, after: torch.Tensor) -> torch.Tensor:
    """How far each row moved, as a fraction of its starting length: ‖after[t] − before[t]‖ / ‖before[t]‖.

    before, after: [rows, d], the table at the start and at the end of training. Returns [rows].
    0.2 means a row moved a fifth of its length (its direction barely changed); 10 means the
    training wrote a row ten times longer than the one it started from.
    """
    before = _validate.matrix(before, "before")
    after = _validate.matrix(after, "after")
    if after.shape != before.shape:
        raise ValueError(f"after must have the shape of before {tuple(before.shape)}, got {tuple(after.shape)}")
    lengths = before.detach().norm(dim=1)
    if bool((lengths == 0).any()):
        raise ValueError("before has a row of zeros; a movement relative to its length is undefined")
    return (after.detach() - before.detach()).norm(dim=1) / lengths


@torch.no_grad()
def weight_back(model, tokens: torch.Tensor, back: int = 1, *, first_query: int = 0) -> torch.Tensor:
    """Mean attention weight each head puts on the key ``back`` positions before the query.

    model: a TinyTransformer; tokens: [batch, n]; back: 0 .. n − 1 (1 = the previous token,
    0 = the query's own token). The mean runs over the batch and over every query
    t >= max(back, first_query) (first_query > 0 leaves out the first queries, whose few keys get
    large weights from any head). Returns [n_layers, n_heads]. A head that looks exactly one step
    back has 1.0 at back = 1; a causal head that spreads its weight evenly has 1/(t + 1) at t.
    """

    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if model.config.n_layers < 1:
        raise ValueError("model must have at least one block (n_layers >= 1) to have attention weights")
    tokens = model._check_tokens(tokens)
    n = tokens.shape[1]
    back = _validate.integer(back, "back", minimum=0)
    if back >= n:
        raise ValueError(f"back must be below n = {n} (the length of tokens), got {back}")
    first_query = _validate.integer(first_query, "first_query", minimum=0)
    if max(back, first_query) >= n:
        raise ValueError(f"first_query must be below n = {n} (the length of tokens), got {first_query}")
    was_training = model.training
    model.eval()
    weights = model(tokens, details=True).attention_weights  # n_layers × [batch, heads, n, n]
    model.train(was_training)
    skip = max(back, first_query) - back  # the diagonal's entry j is the query t = back + j
    return torch.stack([torch.diagonal(w, -back, dim1=-2, dim2=-1)[..., skip:].mean(dim=(0, -1)) for w in weights])
