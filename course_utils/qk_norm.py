"""QK-norm: an RMSNorm on queries and keys, and where it sits relative to RoPE (lesson 15).

Qwen3 normalises each head's query and key (RMSNorm over head_dim, a learned gain per feature)
and then rotates them; OLMo 2 normalises the whole query and key vectors over all heads'
features at once (num_attention_heads·head_dim for the query, num_key_value_heads·head_dim for
the key: d_model only without grouped-query attention; one gain per feature) before splitting
heads and rotating. Both put the norm before RoPE. Does the order matter?

- The norm itself commutes with the rotation: M_t is orthogonal, so ‖M_t x‖ = ‖x‖, and the
  root-mean-square of a head (or of all heads, each turned by its own M_t) is unchanged.
- The gain does not: diag(g)·M_t = M_t·diag(g) only when the two features of every rotated pair
  have the same gain. A learned gain is per feature, so rope(norm(x)) ≠ norm(rope(x)) in general:
  after the rotation, a gain applied to one axis of a pair scales a mix of both.
"""

from __future__ import annotations

import torch

from . import _validate


def rms_norm(x: torch.Tensor, gain: torch.Tensor | None = None, *, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm (Zhang and Sennrich 2019) over the last dimension: x / √(mean(x²) + eps) · gain.

    x [..., d]; gain [d] (None: all ones); eps ≥ 0. Returns a tensor shaped like x.
    """
    x = _validate.float_tensor(x, "x")
    eps = _validate.real(eps, "eps")
    if eps < 0:
        raise ValueError(f"eps must be at least 0, got {eps}")
    if eps == 0 and bool((x == 0).all(dim=-1).any()):
        raise ValueError("eps must be positive when a row of x is all zeros (0/0)")
    out = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    if gain is None:
        return out
    gain = _validate.float_tensor(gain, "gain")
    if gain.shape != (x.shape[-1],):
        raise ValueError(f"gain must have shape [d] = ({x.shape[-1]},), got {tuple(gain.shape)}")
    return out * gain.to(out.dtype)
