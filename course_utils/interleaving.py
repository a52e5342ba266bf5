"""Position layer by layer: which blocks of a RoPE model rotate, which read through a window,
and Llama 4's temperature on the blocks that do not rotate (lesson 16).

A RoPE model may leave some blocks without the rotation — **NoPE layers**, as in SmolLM3's
``no_rope_layers`` (1 = the layer rotates, 0 = it does not) and Llama 4's iRoPE — and may let the
rotating blocks attend only to the last ``rope_window`` keys (Command A's sliding-window RoPE
layers, Llama 4's chunked ones), while the NoPE blocks read the whole prefix. Llama 4 multiplies
the queries of its NoPE blocks by 1 + attn_scale·ln(1 + ⌊(t + 1) / floor_scale⌋)
(``attn_temperature_tuning``). ``layer_plan`` turns a model's settings into one
``LayerPlan`` per block; the model and the streaming reader both follow it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _validate
from .attention import causal_mask


@dataclass(frozen=True)
class LayerPlan:
    """One block's share of the position code: ``rotates`` (RoPE turns its queries and keys),
    ``window`` (it attends to the last ``window`` keys only; None: every earlier key) and
    ``query_scale`` (float64 [n, 1], its queries' multiplier, or None)."""

    rotates: bool
    window: int | None
    query_scale: torch.Tensor | None


def checked_nope_layers(nope_layers, n_layers: int) -> tuple[int, ...]:
    """``nope_layers`` as a sorted tuple of distinct block indices 0 .. n_layers − 1."""
    if not isinstance(nope_layers, (tuple, list)):
        raise TypeError(f"nope_layers must be a tuple (or list) of block indices such as (1,), "
                        f"got {type(nope_layers).__name__}")
    indices = [_validate.integer(i, "nope_layers", minimum=0, maximum=max(n_layers - 1, 0)) for i in nope_layers]
    if indices and n_layers == 0:
        raise ValueError("nope_layers: the model has no blocks (n_layers = 0)")
    if len(set(indices)) != len(indices):
        raise ValueError(f"nope_layers must not repeat a block, got {tuple(indices)}")
    return tuple(sorted(indices))


def llama4_temperature(positions: torch.Tensor, *, floor_scale: int, attn_scale: float) -> torch.Tensor:
    """Llama 4's query multiplier 1 + attn_scale·ln(1 + ⌊(t + 1) / floor_scale⌋) at each position
    t of ``positions`` (whole numbers ≥ 0, any shape). Returns float64, the shape of positions."""
    floor_scale = _validate.integer(floor_scale, "floor_scale", minimum=1, maximum=10**9)
    attn_scale = _validate.real(attn_scale, "attn_scale")
    count = positions.to(torch.float64) + 1
    return 1.0 + attn_scale * torch.log1p(torch.floor(count / floor_scale))


def window_mask(n: int, window: int) -> torch.Tensor:
    """Causal sliding window: True where query t may read key s, 0 ≤ t − s < window. [n, n] bool."""
    n = _validate.integer(n, "n", minimum=1)
    window = _validate.integer(window, "window", minimum=1)
    t = torch.arange(n)
    offset = t[:, None] - t[None, :]
    return causal_mask(n) & (offset < window)


def layer_plan(config, n: int, start: int = 0) -> list[LayerPlan]:
    """One LayerPlan per block of a model with ModelConfig ``config`` reading positions start ..
    start + n − 1. Without nope_layers, rope_window or attn_temperature every block is alike."""
    rotates = config.position == "rope"
    scale = None
    if config.attn_temperature is not None:
        floor_scale, attn_scale = config.attn_temperature
        positions = torch.arange(start, start + n)
        scale = llama4_temperature(positions, floor_scale=floor_scale, attn_scale=attn_scale)[:, None]
    plan = []
    for index in range(config.n_layers):
        nope = index in config.nope_layers
        plan.append(LayerPlan(rotates=rotates and not nope, window=None if nope else config.rope_window,
                              query_scale=scale if nope else None))
    return plan
