"""Multi-head latent attention (MLA, DeepSeek-V2 2024 and V3 2024) and its decoupled RoPE
(lesson 15).

MLA caches one small latent vector c_t = W_DKV h_t [r] per token instead of every head's key and
value. Head h's key is k_t = W_UK^h c_t [d_nope], so its score is

    q_s·k_t = q_sᵀ W_UK^h c_t = (W_UK^hᵀ q_s)·c_t,

and W_UK^h can be "absorbed" into the query side: the score reads the latent directly and no key
is ever decompressed. RoPE between them breaks this: (M_s q_s)·(M_t W_UK^h c_t) =
q_sᵀ M_{t−s} W_UK^h c_t, and a matrix that depends on t − s cannot be folded
into the query once for all keys. So DeepSeek leaves the latent part un-rotated ("nope") and adds
a small separate part that carries position: a rotated query q^R [d_rope] per head and ONE rotated
key k^R_t [d_rope] shared by all heads, cached next to the latent. The score is the sum of the
two dot products, and the latent part absorbs as before.
"""

from __future__ import annotations

import torch

from . import _validate
from .rope import rope_rotate


def _tensor(value, name: str, ndim: int, shape_text: str) -> torch.Tensor:
    value = _validate.float_tensor(value, name)
    if value.ndim != ndim:
        raise ValueError(f"{name} must have shape {shape_text}, got {tuple(value.shape)}")
    return value.to(torch.float64)


def mla_scores(q_nope: torch.Tensor, latent: torch.Tensor, w_uk: torch.Tensor, *,
               q_rope: torch.Tensor | None = None, k_rope: torch.Tensor | None = None,
               absorbed: bool = False, rotate_nope: bool = False) -> torch.Tensor:
    """Attention scores (before scale and mask) of MLA. Returns float64 [heads, n, n], entry
    [h, s, t] the score of query s on key t.

    q_nope [n, heads, d_nope] the queries' latent part; latent [n, r] the cached c_t; w_uk
    [heads, d_nope, r] the up-projection (head h's key is w_uk[h] @ c_t). Optional decoupled
    RoPE part: q_rope [n, heads, d_rope] and the shared key k_rope [n, d_rope], both turned by
    rope_rotate at positions 0 .. n−1 here (interleaved pairs, base 10⁴) and added to the score.

    absorbed=False decompresses every key; absorbed=True folds w_uk into the queries and reads
    the latent. rotate_nope=True also turns the latent part by RoPE (what MLA avoids): exact when
    not absorbed; absorbed, only the query can be turned — the latent has no position — so the
    result is what absorption would compute, and the lesson shows it is not the score.
    """
    q_nope = _tensor(q_nope, "q_nope", 3, "[n, heads, d_nope]")
    latent = _tensor(latent, "latent", 2, "[n, r]")
    w_uk = _tensor(w_uk, "w_uk", 3, "[heads, d_nope, r]")
    n, heads, d_nope = q_nope.shape
    if latent.shape[0] != n:
        raise ValueError(f"latent must have one row per token of q_nope ({n}), got {tuple(latent.shape)}")
    if w_uk.shape != (heads, d_nope, latent.shape[1]):
        raise ValueError(f"w_uk must have shape [heads, d_nope, r] = {(heads, d_nope, latent.shape[1])}, "
                         f"got {tuple(w_uk.shape)}")
    absorbed = _validate.flag(absorbed, "absorbed")
    rotate_nope = _validate.flag(rotate_nope, "rotate_nope")
    _validate.size_budget(heads * n * max(n, d_nope, latent.shape[1]), "the scores [heads, n, n] of q_nope, latent and w_uk")
    if rotate_nope:
        _validate.d_model(d_nope, "d_nope (the last dimension of q_nope)")
        q_nope = rope_rotate(q_nope.transpose(0, 1)).transpose(0, 1)
    if absorbed:
        scores = torch.einsum("shd,hdr,tr->hst", q_nope, w_uk, latent)
    else:
        keys = torch.einsum("hdr,tr->thd", w_uk, latent)
        if rotate_nope:
            keys = rope_rotate(keys.transpose(0, 1)).transpose(0, 1)
        scores = torch.einsum("shd,thd->hst", q_nope, keys)
    if (q_rope is None) != (k_rope is None):
        raise ValueError("q_rope and k_rope go together: give both (the decoupled RoPE part) or neither")
    if q_rope is not None:
        q_rope = _tensor(q_rope, "q_rope", 3, "[n, heads, d_rope]")
        k_rope = _tensor(k_rope, "k_rope", 2, "[n, d_rope]")
        if q_rope.shape[:2] != (n, heads) or k_rope.shape != (n, q_rope.shape[2]):
            raise ValueError(f"q_rope must be [n, heads, d_rope] = [{n}, {heads}, d_rope] and k_rope "
                             f"[n, d_rope]; got {tuple(q_rope.shape)} and {tuple(k_rope.shape)}")
        _validate.d_model(q_rope.shape[2], "d_rope (the last dimension of q_rope)")
        turned_q = rope_rotate(q_rope.transpose(0, 1))  # [heads, n, d_rope]
        turned_k = rope_rotate(k_rope)  # [n, d_rope]: one key for all heads
        scores = scores + torch.einsum("hse,te->hst", turned_q, turned_k)
    return scores


def mla_cache_elements(*, n_heads: int, kv_lora_rank: int, qk_rope_head_dim: int, qk_nope_head_dim: int,
                       v_head_dim: int) -> dict[str, int]:
    """Numbers cached per token per layer (config.json names of DeepSeek-V2/V3):
    {"mla": kv_lora_rank + qk_rope_head_dim (the latent and the shared RoPE key),
     "full": n_heads · (qk_nope_head_dim + qk_rope_head_dim + v_head_dim) (every head's key and
     value, as multi-head attention would cache them with these head sizes)}. Multiply by 2 for
    bytes in bf16. DeepSeek-V2's Table 1 compares with a plainer MHA baseline, 2·n_h·d_h (keys
    and values of d_h = qk_nope_head_dim each): 32,768 rather than 40,960 at V3's sizes."""
    sizes = {name: _validate.integer(value, name, minimum=1, maximum=10**7) for name, value in
             (("n_heads", n_heads), ("kv_lora_rank", kv_lora_rank), ("qk_rope_head_dim", qk_rope_head_dim),
              ("qk_nope_head_dim", qk_nope_head_dim), ("v_head_dim", v_head_dim))}
    return {"mla": sizes["kv_lora_rank"] + sizes["qk_rope_head_dim"],
            "full": sizes["n_heads"] * (sizes["qk_nope_head_dim"] + sizes["qk_rope_head_dim"]
                                        + sizes["v_head_dim"])}
