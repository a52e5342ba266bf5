"""RoPE, the rotary position code (Su et al. 2021), and the conventions real models use.

Row t of a query or key is turned by lesson 04's M_t, one 2x2 block per pair of features:
(a, b) → (a cos ωt + b sin ωt, −a sin ωt + b cos ωt), ω_i = base^(−2i/r). Then
(M_t q)·(M_s k) = q·M_{s−t} k: the score sees the offset s − t only.

Two pairings are in use. "interleaved" pairs features (2i, 2i+1) (Su et al., GPT-J, Meta's
complex-number code); "halves" pairs i with i + r/2 (GPT-NeoX, Hugging Face's rotate_half). They
are the same rotation under a fixed permutation of the features (``rope_permutation``), so a model
converts from one to the other by permuting the rows of W_q and W_k
(``convert_rope_layout``, in course_utils/model_edits.py).

Direction: Su et al.'s R(tθ) = [[cos, −sin], [sin, cos]] is M_{−t}. So Hugging Face's Llama
``apply_rotary_pos_emb`` at positions p equals ``rope_rotate(x, positions=-p, layout="halves")``;
both directions give offset-only scores.
"""

from __future__ import annotations

import torch

from . import _validate
from .attention import attention
from . import encodings
from .encodings import LAYOUTS, _positions


def _rotary_dim(rotary_dim, d: int) -> int:
    if rotary_dim is None:
        return d
    rotary_dim = _validate.integer(rotary_dim, "rotary_dim")
    if rotary_dim <= 0 or rotary_dim % 2 or rotary_dim > d:
        raise ValueError(f"rotary_dim must be a positive even number at most the width {d}, got {rotary_dim}")
    return rotary_dim


def rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, *, layout: str = "interleaved",
                 rotary_dim: int | None = None) -> torch.Tensor:
    """RoPE's one operation: turn feature pair i of every row t of ``x`` [..., n, d] by its angle.

    cos, sin [n, r/2]: the cosine and sine of each row's angle for each of the r/2 pairs (r =
    rotary_dim, default d). Pair (a, b) becomes (a cos + b sin, −a sin + b cos), lesson 04's
    M_t; features r .. d−1 pass through. layout="interleaved" pairs features (2i, 2i+1),
    "halves" pairs i with i + r/2. 1-D RoPE, axial 2-D RoPE and the scaled variants differ only in
    how they make the angles (``rope_rotate``, ``grid_codes.rope_rotate_2d``). No argument checks
    and no in-place writes, so it runs under torch.func.vmap; the public functions check.
    Returns a tensor shaped like x.
    """
    r = x.shape[-1] if rotary_dim is None else rotary_dim
    return rotate_rows(x, *rotation_rows(cos, sin, layout=layout), layout=layout, rotary_dim=r)


def rotation_rows(cos: torch.Tensor, sin: torch.Tensor, *, layout: str = "interleaved"):
    """``rotate_rows``' tables from cos, sin [..., r/2]: C = (cos, cos) and S = (sin, −sin) per
    pair, each [..., r], in ``layout``'s order of features. A model makes them once per forward
    pass and turns every query and key with them."""
    if layout == "interleaved":
        return torch.stack([cos, cos], dim=-1).flatten(-2), torch.stack([sin, -sin], dim=-1).flatten(-2)
    return torch.cat([cos, cos], dim=-1), torch.cat([sin, -sin], dim=-1)


def rotate_rows(x: torch.Tensor, c_rows: torch.Tensor, s_rows: torch.Tensor, *, layout: str = "interleaved",
                rotary_dim: int | None = None) -> torch.Tensor:
    """``rotate_pairs`` with its tables made (``rotation_rows``): x·C + swapped·S on the first r
    features, where swapped holds each feature's partner in its pair (b where x holds a, a where
    it holds b). Each element is the same two products and one sum as a·cos + b·sin and
    −sin·a + cos·b, so the bytes are the pairwise formula's, in fewer, whole-row operations."""
    r = x.shape[-1] if rotary_dim is None else rotary_dim
    c_rows, s_rows = c_rows.to(x.dtype).to(x.device), s_rows.to(x.dtype).to(x.device)
    kept = x if r == x.shape[-1] else x[..., :r]
    if layout == "interleaved":
        swapped = torch.stack([kept[..., 1::2], kept[..., 0::2]], dim=-1).flatten(-2)
    else:
        swapped = torch.cat([kept[..., r // 2 :], kept[..., : r // 2]], dim=-1)
    turned = kept * c_rows + swapped * s_rows
    return turned if r == x.shape[-1] else torch.cat([turned, x[..., r:]], dim=-1)


def rope_rotate(x: torch.Tensor, *, positions: torch.Tensor | None = None, base: float = 10_000.0,
                layout: str = "interleaved", rotary_dim: int | None = None,
                frequencies: torch.Tensor | None = None) -> torch.Tensor:
    """Rotate every row of ``x`` [..., n, d] by its position: row t becomes M_t @ x[t].

    M_t is lesson 04's offset matrix on the first r = rotary_dim features (default d), one
    block [[cos ωt, sin ωt], [−sin ωt, cos ωt]] per pair, ω_i = base^(−2i/r); features r .. d−1
    are left as they are. layout="interleaved" pairs features (2i, 2i+1), "halves" pairs i with
    i + r/2. positions: a 1-D tensor with one real position per row (default 0 .. n−1).
    frequencies: [r/2] positive ω_i to use instead of base's (e.g. lesson 12's rope_frequencies).
    The angles t·ω_i are made in float64; ``rotate_pairs`` turns the pairs. Returns a tensor
    shaped like x.
    """
    x = _validate.float_tensor(x, "x", min_dims=2)
    n, d = x.shape[-2], x.shape[-1]
    _validate.d_model(d, "the last dimension of x")
    base = _validate.real(base, "base", positive=True)
    layout = _validate.choice(layout, "layout", LAYOUTS)
    r = _rotary_dim(rotary_dim, d)
    if positions is None:
        positions = torch.arange(n, dtype=torch.float64)
    elif not isinstance(positions, torch.Tensor) or positions.ndim != 1 or positions.shape[0] != n:
        raise ValueError(f"positions must be a 1-D tensor with one position per row of x ({n})")
    elif positions.is_complex() or positions.dtype == torch.bool:
        raise TypeError(f"positions must hold real numbers, got dtype {positions.dtype}")
    elif not torch.isfinite(positions).all():
        raise ValueError("positions contains NaN or infinite values")
    if frequencies is None:
        frequencies = encodings.frequencies(r, base=base)
    else:
        frequencies = _validate.float_tensor(frequencies, "frequencies")
        if frequencies.shape != (r // 2,) or not (frequencies > 0).all():
            raise ValueError(f"frequencies must be {r // 2} positive numbers, one per pair of the {r} turned "
                             f"features (rotary_dim; shape [{r // 2}]), got shape {tuple(frequencies.shape)}")
    angles = positions.detach().to(torch.float64)[:, None] * frequencies.detach().to(torch.float64)[None, :]
    return rotate_pairs(x, torch.cos(angles), torch.sin(angles), layout=layout, rotary_dim=r)


def rope_permutation(d_head: int, *, rotary_dim: int | None = None) -> torch.Tensor:
    """The feature order that turns the interleaved layout into the halves layout. Returns [d_head].

    perm = (0, 2, 4, ..., r−2, 1, 3, ..., r−1, r, ..., d_head−1): pair i, features (2i, 2i+1),
    moves to (i, i + r/2). For every x,
    rope_rotate(x)[..., perm] == rope_rotate(x[..., perm], layout="halves");
    torch.argsort(perm) goes back. Permute the rows of W_q and W_k with it to convert a model.
    """
    d_head = _validate.d_model(d_head, "d_head")
    r = _rotary_dim(rotary_dim, d_head)
    return torch.cat([torch.arange(0, r, 2), torch.arange(1, r, 2), torch.arange(r, d_head)])


def rope_decode_step(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cache_k: torch.Tensor | None = None,
                     cache_v: torch.Tensor | None = None, *, position: float | None = None,
                     base: float = 10_000.0, layout: str = "interleaved"):
    """One step of incremental decoding with a KV cache: attend from a new token to all tokens so far.

    q, k, v [..., 1, d]: the new token's query, key and value, not yet rotated. cache_k [..., t, d]
    holds the earlier keys, each rotated once at its own position; cache_v [..., t, d_v] their
    values (None: an empty cache). The new query and key are rotated at ``position`` (default t,
    the number of cached tokens); values are never rotated. Returns (output [..., 1, d_v],
    cache_k [..., t+1, d], cache_v [..., t+1, d_v]).
    """
    q = _validate.float_tensor(q, "q", min_dims=2)
    k = _validate.float_tensor(k, "k", min_dims=2)
    v = _validate.float_tensor(v, "v", min_dims=2)
    for name, value in (("q", q), ("k", k), ("v", v)):
        if value.shape[-2] != 1:
            raise ValueError(f"{name} must hold the one new token, shape [..., 1, d], got {tuple(value.shape)}")
    if q.shape != k.shape:
        raise ValueError(f"q and k must have the same shape, got {tuple(q.shape)} and {tuple(k.shape)}")
    if cache_k is None and cache_v is None:
        cache_k = k.new_zeros(*k.shape[:-2], 0, k.shape[-1])
        cache_v = v.new_zeros(*v.shape[:-2], 0, v.shape[-1])
    elif cache_k is None or cache_v is None:
        raise ValueError("cache_k and cache_v go together: pass both, or neither for an empty cache")
    cache_k = _validate.float_tensor(cache_k, "cache_k", min_dims=2)
    cache_v = _validate.float_tensor(cache_v, "cache_v", min_dims=2)
    if cache_k.shape[:-2] != k.shape[:-2] or cache_k.shape[-1] != k.shape[-1]:
        raise ValueError(f"cache_k must have shape [..., t, d] matching k {tuple(k.shape)}, got {tuple(cache_k.shape)}")
    if cache_v.shape[:-2] != v.shape[:-2] or cache_v.shape[-1] != v.shape[-1] \
            or cache_v.shape[-2] != cache_k.shape[-2]:
        raise ValueError(f"cache_v must have shape [..., t, d_v] matching v {tuple(v.shape)} and cache_k, "
                         f"got {tuple(cache_v.shape)}")
    if not (q.dtype == k.dtype == v.dtype == cache_k.dtype == cache_v.dtype):
        raise TypeError("q, k, v, cache_k and cache_v must share one dtype")
    t = cache_k.shape[-2]
    position = float(t) if position is None else _validate.real(position, "position")
    where = torch.tensor([position], dtype=torch.float64)
    q = rope_rotate(q, positions=where, base=base, layout=layout)
    k = rope_rotate(k, positions=where, base=base, layout=layout)
    cache_k = torch.cat([cache_k, k], dim=-2)
    cache_v = torch.cat([cache_v, v], dim=-2)
    output, _ = attention(q, cache_k, cache_v)
    return output, cache_k, cache_v


def rope_decay_bound(offsets, d_head: int, *, base: float = 10_000.0) -> torch.Tensor:
    """Su et al.'s (2021, §3.4.3) long-range decay: (2/d) Σ_{j=1}^{d/2} |S_j| at each offset k.

    S_j = Σ_{i<j} e^{i k ω_i}, ω_i = base^(−2i/d). A RoPE score at offset k is at most
    max_i |h_{i+1} − h_i| times Σ_j |S_j|, h_i the pair products of q and k; this mean of |S_j|
    falls, with wiggles, as |k| grows. offsets: an int n (0 .. n−1) or a 1-D sequence of reals.
    Returns float64 [len(offsets)].
    """
    offsets = _positions(offsets, "offsets", expected="an int n or a 1-D sequence/tensor of offsets")
    d_head = _validate.d_model(d_head, "d_head")
    _validate.size_budget(offsets.numel() * d_head, "the partial sums [len(offsets), d_head/2]")
    angles = offsets[:, None] * encodings.frequencies(d_head, base=base)[None, :]
    partial = torch.cumsum(torch.polar(torch.ones_like(angles), angles), dim=-1)  # S_1 .. S_{d/2}
    return partial.abs().mean(dim=-1)

