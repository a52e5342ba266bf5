"""The four-term decomposition of attention scores and logits when position is added to the token.

With q = (x + e) @ w_q and k = (y + f) @ w_k (row vectors, weights right-multiplied), the score is
    q @ k.T = x w_q (y w_k)^T + x w_q (f w_k)^T + e w_q (y w_k)^T + e w_q (f w_k)^T
              token-token       token-position    position-token    position-position
and the logit is the score divided by √d_k (d_k = the width of q and k), term by term.
``offset_only_r2`` and ``offset_dependence`` measure how far a term is from depending only on
the offset s − t.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from . import _validate
from .models import INPUT_CODES, TinyTransformer


class FourTerms(NamedTuple):
    """The four parts of the attention scores q·kᵀ (or of the logits q·kᵀ/√d_k), each [n_x, n_y]."""

    token_token: torch.Tensor
    token_position: torch.Tensor
    position_token: torch.Tensor
    position_position: torch.Tensor

    def total(self) -> torch.Tensor:
        """The sum of the four terms: the whole score (or logit) matrix."""
        return self.token_token + self.token_position + self.position_token + self.position_position


def four_term_decomposition(x, e, y, f, w_q, w_k, *, scaled: bool = False) -> FourTerms:
    """Split the scores (x + e) @ w_q @ ((y + f) @ w_k).T into four terms.

    x: token embeddings of the queries [n_x, d]; e: their position codes [n_x, d];
    y: token embeddings of the keys [n_y, d]; f: their position codes [n_y, d];
    w_q, w_k: projections [d, d_k]. Returns FourTerms, each field [n_x, n_y]: the four parts of
    the score q·kᵀ, or with ``scaled=True`` of the logit q·kᵀ/√d_k that softmax receives.
    """
    scaled = _validate.flag(scaled, "scaled")
    named = {"x": x, "e": e, "y": y, "f": f, "w_q": w_q, "w_k": w_k}
    for name, value in named.items():
        _validate.matrix(value, name)
    dtypes = {value.dtype for value in named.values()}
    if len(dtypes) != 1:
        raise TypeError(f"x, e, y, f, w_q and w_k must share one dtype, got {sorted(map(str, dtypes))}")
    if x.shape != e.shape:
        raise ValueError(f"e must have the shape of x (one code per query token), got x {tuple(x.shape)}, e {tuple(e.shape)}")
    if y.shape != f.shape:
        raise ValueError(f"f must have the shape of y (one code per key token), got y {tuple(y.shape)}, f {tuple(f.shape)}")
    d = x.shape[1]
    if y.shape[1] != d:
        raise ValueError(f"x and y must have the same width d, got {d} and {y.shape[1]}")
    if w_q.shape[0] != d or w_k.shape[0] != d:
        raise ValueError(
            f"w_q and w_k must have {d} rows (the width of x and y), got w_q {tuple(w_q.shape)}, w_k {tuple(w_k.shape)}"
        )
    if w_q.shape[1] != w_k.shape[1]:
        raise ValueError(f"w_q and w_k must map to the same d_k, got w_q {tuple(w_q.shape)}, w_k {tuple(w_k.shape)}")
    scale = w_q.shape[1] ** -0.5 if scaled else 1.0
    xq, eq = x @ w_q * scale, e @ w_q * scale
    yk, fk = y @ w_k, f @ w_k
    return FourTerms(
        token_token=xq @ yk.T,
        token_position=xq @ fk.T,
        position_token=eq @ yk.T,
        position_position=eq @ fk.T,
    )


def model_four_terms(model, tokens: torch.Tensor, *, head: int = 0) -> FourTerms:
    """The four terms of head ``head``'s attention logits in the first block of a TinyTransformer.

    The first block sees LayerNorm(x + e), with x the token embeddings and e the (scaled) position
    code. LayerNorm subtracts a mean (linear) and divides by one number per token, so
    LN(x + e) = x̃ + ẽ exactly, with x̃ = γ⊙(x − mean x)/σ + β and ẽ = γ⊙(e − mean e)/σ. Both
    share σ = σ(x + e), so ẽ depends on the token too, and x̃ on the position. The projection
    biases go with the token side. Each term is divided by √d_head, so the four add up to the
    model's own attention logits. tokens: [n] (one sequence). Returns FourTerms [n, n].
    """

    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    config = model.config

    if config.position not in INPUT_CODES or config.combine != "add":
        raise ValueError('model must add an input position code (e.g. position="sinusoidal", combine="add")')
    if config.n_layers < 1:
        raise ValueError("model must have at least one block")
    head = _validate.integer(head, "head", minimum=0)
    if head >= config.n_heads:
        raise ValueError(f"head must be below n_heads = {config.n_heads}, got {head}")
    if not isinstance(tokens, torch.Tensor) or tokens.ndim != 1:
        raise ValueError("tokens must be a 1-D tensor of token ids (one sequence)")
    model._check_tokens(tokens[None])
    with torch.no_grad():
        x = model.token_embedding(tokens).double()
        e = (config.position_scale * model.position(tokens.shape[0])).double()
        norm = model.blocks[0].ln_attention
        h = x + e
        sigma = torch.sqrt(h.var(dim=-1, correction=0) + norm.eps)[:, None]
        gamma, beta = norm.weight.double(), norm.bias.double()
        x_tilde = gamma * (x - x.mean(dim=-1, keepdim=True)) / sigma + beta
        e_tilde = gamma * (e - e.mean(dim=-1, keepdim=True)) / sigma
        d, d_head = config.d_model, config.d_model // config.n_heads
        weight, bias = model.blocks[0].attention.qkv.weight.double(), model.blocks[0].attention.qkv.bias.double()
        rows_q = slice(head * d_head, (head + 1) * d_head)
        rows_k = slice(d + head * d_head, d + (head + 1) * d_head)
        # a constant 1 (token side) / 0 (position side) column carries the projection biases
        one, zero = torch.ones(len(tokens), 1, dtype=x.dtype), torch.zeros(len(tokens), 1, dtype=x.dtype)
        w_q = torch.cat([weight[rows_q].T, bias[rows_q][None]], dim=0)
        w_k = torch.cat([weight[rows_k].T, bias[rows_k][None]], dim=0)
        x_aug, e_aug = torch.cat([x_tilde, one], dim=1), torch.cat([e_tilde, zero], dim=1)
        return four_term_decomposition(x_aug, e_aug, x_aug, e_aug, w_q, w_k, scaled=True)


def offset_dependence(scores: torch.Tensor) -> float:
    """How far ``scores`` [n, n] is from depending only on the offset s − t.

    The largest spread (max − min) along any diagonal s − t = k: 0 for a Toeplitz matrix.
    """
    scores = _validate.matrix(scores, "scores")
    n = scores.shape[0]
    if scores.shape[1] != n:
        raise ValueError(f"scores must be square [n, n], got {tuple(scores.shape)}")
    if n == 0:
        raise ValueError("scores must have at least one row, got shape (0, 0)")
    scores = scores.detach()
    spreads = [torch.diagonal(scores, k).max() - torch.diagonal(scores, k).min() for k in range(-n + 1, n)]
    return float(torch.stack(spreads).max())


def _square_scores(scores) -> tuple[torch.Tensor, int]:
    """Check that ``scores`` is a non-empty real tensor [..., n, n]; return (scores, n)."""
    scores = _validate.float_tensor(scores, "scores", min_dims=2)
    n = scores.shape[-1]
    if scores.shape[-2] != n:
        raise ValueError(f"scores must be square in its last two dimensions, got {tuple(scores.shape)}")
    if not scores.numel():
        raise ValueError(f"scores must not be empty, got shape {tuple(scores.shape)}")
    return scores, n


def offset_only_r2(scores: torch.Tensor) -> float:
    """R² of the best fit of ``scores`` [..., n, n] by a function of the offset s − t alone.

    The least-squares fit g(k) is the mean of all entries with s − t = k (over every diagonal
    and every leading dimension). Returns 1 − Σ (scores − g(s − t))² / Σ (scores − mean)²:
    1 for a matrix constant along each diagonal (Toeplitz), 0 when the offset explains none of
    the variation. A constant matrix counts as offset-only (1.0).
    """
    scores, n = _square_scores(scores)
    scores = scores.detach().double()
    scale = scores.abs().max()
    if scale == 0:
        return 1.0
    scores = scores / scale  # R² does not change; no overflow when squaring
    positions = torch.arange(n)
    offsets = positions[None, :] - positions[:, None]  # [n, n], s − t
    per_offset = scores.reshape(-1, n, n).mean(dim=0)  # equal counts on a diagonal: mean of means
    fitted = torch.zeros(n, n, dtype=torch.float64)
    for k in range(-n + 1, n):
        fitted[offsets == k] = torch.diagonal(per_offset, k).mean()
    total = ((scores - scores.mean()) ** 2).sum()
    if total <= 1e-24 * scores.numel():  # constant up to rounding
        return 1.0
    return min(1.0, max(0.0, 1.0 - (((scores - fitted) ** 2).sum() / total).item()))


def offset_profile(scores: torch.Tensor, offsets: range) -> torch.Tensor:
    """Mean of ``scores`` [..., n, n] along each diagonal s − t = k, for k in ``offsets``.

    Leading dimensions (e.g. a batch of sequences) are averaged too. Returns [len(offsets)].
    """
    scores, n = _square_scores(scores)
    if not isinstance(offsets, range) or not len(offsets):
        raise TypeError("offsets must be a non-empty range of offsets k = s - t")
    scores = scores.detach()
    if max(abs(offsets.start), abs(offsets[-1])) >= n:
        raise ValueError(f"offsets must lie within -(n-1) .. n-1 = {n - 1} for scores with n = {n}, got {offsets}")
    return torch.stack([torch.diagonal(scores, k, dim1=-2, dim2=-1).mean() for k in offsets])


def _scores_and_offset(scores, k) -> tuple[torch.Tensor, int, int]:
    """Check square, non-empty ``scores`` [..., n, n] and an offset k inside them; (scores, n, k)."""
    scores, n = _square_scores(scores)
    scores = scores.detach()
    k = _validate.integer(k, "k")
    if abs(k) >= n:
        raise ValueError(f"k must lie within -(n-1) .. n-1 = {n - 1} for scores with n = {n}, got {k}")
    return scores, n, k


def offset_pull(scores: torch.Tensor, k: int) -> float:
    """How much ``scores`` [..., n, n] favours the key at offset k: the mean over rows t (with
    t + k inside) and over leading dimensions of scores[t, t+k] − mean_s scores[t, s].

    Positive: the scores pull attention towards s = t + k; negative: away from it.
    """
    scores, n, k = _scores_and_offset(scores, k)
    rows = range(max(0, -k), min(n, n - k))
    values = torch.diagonal(scores, k, dim1=-2, dim2=-1)
    return (values - scores[..., rows, :].mean(dim=-1)).mean().item()


def offset_argmax_share(scores: torch.Tensor, k: int) -> float:
    """How often the largest entry of a row of ``scores`` [..., n, n] sits at offset k.

    The fraction of rows t (with t + k inside 0 .. n-1, over every leading dimension) whose
    largest entry is at s = t + k: what a term on its own would pick as the key to attend to.
    Ties go to the first (leftmost) largest entry.
    """
    scores, n, k = _scores_and_offset(scores, k)
    rows = torch.arange(max(0, -k), min(n, n - k))
    picked = scores[..., rows, :].argmax(dim=-1)
    return (picked == rows + k).double().mean().item()
