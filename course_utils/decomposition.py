"""The four-term decomposition of attention scores and logits when position is added to the token.

With q = (x + e) @ w_q and k = (y + f) @ w_k (row vectors, weights right-multiplied), the score is
    q @ k.T = x w_q (y w_k)^T + x w_q (f w_k)^T + e w_q (y w_k)^T + e w_q (f w_k)^T
              token-token       token-position    position-token    position-position
and the logit is the score divided by √d_k (d_k = the width of q and k), term by term.
``offset_only_r2`` and ``offset_dependence`` measure how far a term is from depending only on
the offset s − t. On a trained TinyTransformer, ``model_four_terms`` splits the first block's
logits; ``without_terms`` runs the model with some terms dropped (what a term is needed for);
``term_subspaces`` gives the rows each side of the terms is made of (for principal angles);
``offset_pull``/``key_pull`` and ``offset_argmax_share``/``key_argmax_share`` say how much a term
favours the right key, at a fixed offset or at a key named per row; ``weight_on_key`` reads the
attention weight there.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from . import _validate
from .attention import causal_mask
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


def _checked_model(model, head) -> int:
    """Check that ``model`` adds an input code and has a block with head ``head``; return head."""
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
    return head


def _head_projections(model, head: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Head ``head``'s query and key maps of the first block, with the bias as a last row:
    w_q, w_k [d + 1, d_head] (float64), to right-multiply [..., d + 1] rows."""
    d, d_head = model.config.d_model, model.config.d_model // model.config.n_heads
    attention = model.blocks[0].attention
    weight, bias = attention.qkv.weight.double(), attention.qkv.bias.double()
    rows_q = slice(head * d_head, (head + 1) * d_head)
    rows_k = slice(d + head * d_head, d + (head + 1) * d_head)
    w_q = torch.cat([weight[rows_q].T, bias[rows_q][None]], dim=0)
    w_k = torch.cat([weight[rows_k].T, bias[rows_k][None]], dim=0)
    return w_q, w_k


def _split_input(model, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """LN(x + e) = x̃ + ẽ for tokens [batch, n], in float64, each [batch, n, d + 1]: a last
    column of 1 (token side) / 0 (position side) carries the projection biases."""
    config = model.config
    x = model.token_embedding(tokens).double()
    e = (config.position_scale * model.position(tokens.shape[-1])).double().expand_as(x)
    norm = model.blocks[0].ln_attention
    sigma = torch.sqrt((x + e).var(dim=-1, correction=0, keepdim=True) + norm.eps)
    gamma, beta = norm.weight.double(), norm.bias.double()
    x_tilde = gamma * (x - x.mean(dim=-1, keepdim=True)) / sigma + beta
    e_tilde = gamma * (e - e.mean(dim=-1, keepdim=True)) / sigma
    ones = torch.ones(*x.shape[:-1], 1, dtype=x.dtype)
    return torch.cat([x_tilde, ones], dim=-1), torch.cat([e_tilde, 0 * ones], dim=-1)


def model_four_terms(model, tokens: torch.Tensor, *, head: int = 0) -> FourTerms:
    """The four terms of head ``head``'s attention logits in the first block of a TinyTransformer.

    The first block sees LayerNorm(x + e), with x the token embeddings and e the (scaled) position
    code. LayerNorm subtracts a mean (linear) and divides by one number per token, so
    LN(x + e) = x̃ + ẽ exactly, with x̃ = γ⊙(x − mean x)/σ + β and ẽ = γ⊙(e − mean e)/σ. Both
    share σ = σ(x + e), so ẽ depends on the token too, and x̃ on the position. The projection
    biases go with the token side. Each term is divided by √d_head, so the four add up to the
    model's own attention logits. tokens: [n] (one sequence). Returns FourTerms [n, n].
    """
    head = _checked_model(model, head)
    if not isinstance(tokens, torch.Tensor) or tokens.ndim != 1:
        raise ValueError("tokens must be a 1-D tensor of token ids (one sequence)")
    model._check_tokens(tokens[None])
    with torch.no_grad():
        x_aug, e_aug = _split_input(model, tokens.long()[None])
        w_q, w_k = _head_projections(model, head)
        return four_term_decomposition(x_aug[0], e_aug[0], x_aug[0], e_aug[0], w_q, w_k, scaled=True)


class WithoutTerms(NamedTuple):
    """A forward pass with some of one head's four logit terms dropped.

    logits: the model's outputs [batch, n, n_outputs]; weights: that head's attention weights in
    the first block [batch, n, n] (float64), computed from the terms that were kept.
    """

    logits: torch.Tensor
    weights: torch.Tensor


def without_terms(model, tokens: torch.Tensor, drop, *, head: int = 0) -> WithoutTerms:
    """Run ``model`` on tokens [batch, n] with the terms named in ``drop`` removed from head
    ``head``'s attention logits in the first block; everything else runs as usual.

    drop: a term name or a tuple of them, from FourTerms' fields ("token_token",
    "token_position", "position_token", "position_position"); () drops nothing and gives the
    model's own outputs (to float rounding). Dropping a term sets it to 0 in every logit, which
    removes what it adds to some keys over others. Returns WithoutTerms(logits [batch, n,
    n_outputs], weights [batch, n, n]).
    """
    head = _checked_model(model, head)
    names = (drop,) if isinstance(drop, str) else drop
    if not isinstance(names, (tuple, list)) or not all(isinstance(name, str) for name in names):
        raise TypeError(f"drop must be a term name or a tuple of them, got {drop!r}")
    for name in names:
        _validate.choice(name, "drop", FourTerms._fields)
    if not isinstance(tokens, torch.Tensor) or tokens.ndim != 2 or not len(tokens):
        raise ValueError("tokens must be a 2-D tensor of token ids [batch, n] with batch >= 1")
    tokens = model._check_tokens(tokens)
    config, block = model.config, model.blocks[0]
    batch, n = tokens.shape
    d, heads = config.d_model, config.n_heads
    with torch.no_grad():
        x_aug, e_aug = _split_input(model, tokens)
        w_q, w_k = _head_projections(model, head)
        scale = (d // heads) ** -0.5
        query = {"token": x_aug @ w_q * scale, "position": e_aug @ w_q * scale}
        key = {"token": x_aug @ w_k, "position": e_aug @ w_k}
        kept = torch.zeros(batch, n, n, dtype=torch.float64)
        for name in FourTerms._fields:
            if name not in names:
                side_q, side_k = name.split("_")
                kept = kept + query[side_q] @ key[side_k].mT
        h = model.embed(tokens)
        q, k, v = block.attention.qkv(block.ln_attention(h)).view(batch, n, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
        logits = (q.double() @ k.double().mT) * scale  # [batch, heads, n, n]
        logits[:, head] = kept
        if config.causal:
            logits = logits.masked_fill(~causal_mask(n), float("-inf"))
        weights = torch.softmax(logits, dim=-1)
        mixed = (weights.to(v.dtype) @ v).transpose(1, 2).reshape(batch, n, d)
        x = h + block.attention.out(mixed)
        x = x + block.mlp(block.ln_mlp(x))
        mask = causal_mask(n) if config.causal else None
        for later in model.blocks[1:]:
            if config.reapply_position:
                x = x + config.position_scale * model.position(n)
            x = later(x, mask)[0]
        return WithoutTerms(logits=model.head(model.ln_final(x)), weights=weights[:, head])


class TermSubspaces(NamedTuple):
    """The directions each side of the four terms can take, as rows (what the first block sees,
    up to LayerNorm's per-token 1/σ, which scales a row and leaves its span alone).

    token [vocab + 1, d]: γ⊙(x_v − mean x_v) for every token v, and a last row β (the shared
    part); position [n, d]: γ⊙(e_t − mean e_t) for t = 0 .. n-1. Through head ``head``'s maps
    (projection biases on the token side, as in model_four_terms): query_token and key_token
    [vocab + 1, d_head], query_position and key_position [n, d_head]. The token–position term
    is query_token · key_position; it is 0 when their spans are orthogonal.
    """

    token: torch.Tensor
    position: torch.Tensor
    query_token: torch.Tensor
    key_token: torch.Tensor
    query_position: torch.Tensor
    key_position: torch.Tensor


def term_subspaces(model, n: int, *, head: int = 0) -> TermSubspaces:
    """The token and position rows of a TinyTransformer's first block, before and after head
    ``head``'s query and key maps, for positions 0 .. n-1: feed pairs of them to
    principal_angles. Returns TermSubspaces (float64; see its fields for the shapes)."""
    head = _checked_model(model, head)
    n = _validate.integer(n, "n", minimum=1)
    if model.config.position == "learned" and n > model.config.max_len:
        raise ValueError(f"n must be at most max_len = {model.config.max_len} for a learned code, got {n}")
    _validate.size_budget(n * model.config.d_model, "the position rows [n, d_model]")
    config = model.config
    with torch.no_grad():
        norm = model.blocks[0].ln_attention
        gamma, beta = norm.weight.double(), norm.bias.double()
        x = model.token_embedding.weight.double()
        e = (config.position_scale * model.position(n)).double()
        token = torch.cat([gamma * (x - x.mean(dim=-1, keepdim=True)), beta[None]])
        position = gamma * (e - e.mean(dim=-1, keepdim=True))
        w_q, w_k = _head_projections(model, head)
        bias_column = torch.zeros(len(token), 1, dtype=x.dtype)
        bias_column[-1] = 1.0  # the projection biases ride on the shared row β
        token_aug = torch.cat([token, bias_column], dim=1)
        position_aug = torch.cat([position, torch.zeros(n, 1, dtype=x.dtype)], dim=1)
        return TermSubspaces(token=token, position=position, query_token=token_aug @ w_q,
                             key_token=token_aug @ w_k, query_position=position_aug @ w_q,
                             key_position=position_aug @ w_k)


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


def _square_scores(scores, name: str = "scores") -> tuple[torch.Tensor, int]:
    """Check that ``scores`` (called ``name``) is a non-empty real tensor [..., n, n]; return (scores, n)."""
    scores = _validate.float_tensor(scores, name, min_dims=2)
    n = scores.shape[-1]
    if scores.shape[-2] != n:
        raise ValueError(f"{name} must be square in its last two dimensions, got {tuple(scores.shape)}")
    if not scores.numel():
        raise ValueError(f"{name} must not be empty, got shape {tuple(scores.shape)}")
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


def _scores_and_keys(scores, keys, name: str = "scores") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Check ``scores`` [..., n, n] and ``keys`` [..., n] (one key per row); return (scores, the
    keys clamped into 0 .. n-1, which rows count: keys inside 0 .. n-1)."""
    scores, n = _square_scores(scores, name)
    if not isinstance(keys, torch.Tensor) or keys.is_floating_point() or keys.is_complex() \
            or keys.dtype == torch.bool:
        raise TypeError(f"keys must be a tensor of integer key positions, got {type(keys).__name__}"
                        + (f" of {keys.dtype}" if isinstance(keys, torch.Tensor) else ""))
    if tuple(keys.shape) != tuple(scores.shape[:-1]):
        raise ValueError(f"keys must have one key per row of {name}, shape {tuple(scores.shape[:-1])}, "
                         f"got {tuple(keys.shape)}")
    counted = (keys >= 0) & (keys < n)
    if not counted.any():
        raise ValueError(f"keys must name at least one key inside 0 .. n-1 = {n - 1}")
    return scores.detach(), keys.long().clamp(0, n - 1), counted


def key_pull(scores: torch.Tensor, keys: torch.Tensor) -> float:
    """How much ``scores`` [..., n, n] favours the key each row should attend to: the mean over
    rows of scores[t, keys[t]] − mean_s scores[t, s].

    keys: [..., n] integer, one key position per row (offset_pull is the case keys[t] = t + k);
    rows whose key lies outside 0 .. n-1 (e.g. -1) do not count. Positive: pulls to the key.
    """
    scores, keys, counted = _scores_and_keys(scores, keys)
    at_key = scores.gather(-1, keys[..., None])[..., 0]
    return (at_key - scores.mean(dim=-1))[counted].mean().item()


def key_argmax_share(scores: torch.Tensor, keys: torch.Tensor) -> float:
    """How often the largest entry of a row of ``scores`` [..., n, n] is that row's key.

    keys: [..., n] integer, as in key_pull (rows with a key outside 0 .. n-1 do not count). Ties
    go to the first largest entry.
    """
    scores, keys, counted = _scores_and_keys(scores, keys)
    return (scores.argmax(dim=-1) == keys)[counted].double().mean().item()


def weight_on_key(weights: torch.Tensor, keys: torch.Tensor) -> float:
    """The mean attention weight that rows of ``weights`` [..., n, n] put on their key.

    keys: [..., n] integer, as in key_pull (rows with a key outside 0 .. n-1 do not count).
    1 when every row attends to its key alone; 1/n for uniform attention.
    """
    weights, keys, counted = _scores_and_keys(weights, keys, "weights")
    return weights.gather(-1, keys[..., None])[..., 0][counted].double().mean().item()
