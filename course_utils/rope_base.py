"""Choosing RoPE's base: how far apart can two similar tokens be and still find each other?
(lesson 15).

Men et al. (2024, "Base of RoPE Bounds Context Length", NeurIPS) ask for more than RoPE's old
long-range decay (lesson 11): a query should give a token similar to it (a key k* = q + ε) a
larger score than a random key, at every distance m within the context. For q and ε with
independent entries of variance σ², the expected gap is

    E[q·M_m k*] − E[q·M_m k] = σ²·tr(M_m) = 2σ² Σ_i cos(m ω_i) = 2σ²·B_m,

with B_m = Σ_{i<d/2} cos(m ω_i) their B_{m,θ}. It starts at d/2 (m = 0) and, for a small base,
turns negative at some distance: there the similar token scores below a random one on average.
Their bound: the base must be large enough that B_m ≥ 0 for every m up to the context length.
``similar_token_score`` computes B_m, ``first_negative`` where it first drops below 0,
``smallest_bases`` the smallest base of a grid that keeps it non-negative (B_m is not monotone in
the base, so the grid must be fine), and ``sampled_similarity_gap`` measures the gap on random
vectors. ``kept_lead`` and ``wrong_way_share`` summarise any such gap curve — 2·B_m or a trained
head's (``favourite_key_gap``, lesson 15) — the same way.
"""

from __future__ import annotations

import math

import torch

from . import _validate
from .rope import rope_rotate

MAX_LENGTH = 10**7


def _offsets(offsets) -> torch.Tensor:
    if not isinstance(offsets, torch.Tensor):
        raise TypeError(f"offsets must be a torch.Tensor of distances, got {type(offsets).__name__}")
    if offsets.ndim != 1 or offsets.numel() == 0 or offsets.dtype == torch.bool or offsets.is_complex():
        raise ValueError(f"offsets must be a non-empty 1-D tensor of real distances, got shape "
                         f"{tuple(offsets.shape)}, dtype {offsets.dtype}")
    offsets = offsets.to(torch.float64)
    if not torch.isfinite(offsets).all() or offsets.abs().max() > MAX_LENGTH:
        raise ValueError(f"offsets must be finite distances of at most {MAX_LENGTH:,}")
    return offsets


def similar_token_score(offsets: torch.Tensor, frequencies: torch.Tensor) -> torch.Tensor:
    """Men et al.'s B_m = Σ_i cos(m ω_i) at each distance m of ``offsets`` [k]; frequencies
    [d/2]. Returns float64 [k]: the expected score gap of a similar over a random key is 2σ²·B_m."""
    offsets, frequencies = _offsets(offsets), _validate.frequencies(frequencies)
    _validate.size_budget(offsets.numel() * frequencies.numel(), "the angles [len(offsets), len(frequencies)]")
    return torch.cos(offsets[:, None] * frequencies[None, :]).sum(dim=1)


def _gap_curves(gap) -> torch.Tensor:
    gap = _validate.float_tensor(gap, "gap")
    if gap.shape[-1] < 2 or not (gap[..., 0] > 0).all():
        raise ValueError(f"gap must be [..., n] curves over m = 0 .. n-1 (n >= 2) with a positive lead at m = 0, "
                         f"got shape {tuple(gap.shape)}")
    return gap.double()


def kept_lead(gap: torch.Tensor, *, far_from: int) -> torch.Tensor:
    """The share of the lead at m = 0 that a similar key keeps far away: mean(gap[m >= far_from])
    / gap[0]. gap [..., n]: a gap by distance m = 0 .. n-1 (2·B_m, or favourite_key_gap per
    head). Returns float64 [...]: 1 when nothing is lost, 0 when the lead is gone on average."""
    gap = _gap_curves(gap)
    far_from = _validate.integer(far_from, "far_from", minimum=1, maximum=gap.shape[-1] - 1)
    return gap[..., far_from:].mean(-1) / gap[..., 0]


def wrong_way_share(gap: torch.Tensor) -> torch.Tensor:
    """The share of the distances m = 1 .. n-1 at which a similar key scores *below* a random
    one (gap < 0). gap [..., n] as for kept_lead. Returns float64 [...]."""
    return (_gap_curves(gap)[..., 1:] < 0).double().mean(-1)


def first_negative(frequencies: torch.Tensor, *, max_length: int) -> int | None:
    """The smallest distance m in 0 .. max_length with B_m = Σ_i cos(m ω_i) < 0 (frequencies
    [d/2]), or None if B stays non-negative that far: beyond it a similar token scores below a
    random one on average."""
    frequencies = _validate.frequencies(frequencies)
    max_length = _validate.integer(max_length, "max_length", minimum=0, maximum=MAX_LENGTH)
    _validate.size_budget(frequencies.numel() * 2**16, "a block of angles [65536, len(frequencies)]")
    start, size = 0, 256
    while start <= max_length:  # growing blocks: a small base fails early and cheaply
        block = torch.arange(start, min(start + size, max_length + 1), dtype=torch.float64)
        below = torch.cos(block[:, None] * frequencies).sum(1) < 0
        if below.any():
            return int(block[below.nonzero()[0, 0]].item())
        start, size = start + size, min(2 * size, 2**16)
    return None


def _dips_below_zero(frequencies: torch.Tensor, length: int, step: int) -> bool:
    """Whether B_m < 0 for some m of 0, step, 2·step, ... ≤ length (frequencies float64 [d/2])."""
    rows = 2**16
    for start in range(0, length + 1, step * rows):
        m = torch.arange(start, min(start + step * rows, length + 1), step, dtype=torch.float64)
        if bool((torch.cos(m[:, None] * frequencies).sum(1) < 0).any()):
            return True
    return False


def smallest_bases(lengths, d: int, *, bases: torch.Tensor) -> list[float]:
    """For each context length L of ``lengths``, the smallest of ``bases`` whose B_m stays ≥ 0
    for every m = 0 .. L (ω_i = base^(−2i/d)), Men et al.'s lower bound searched on a grid;
    nan if no base of the grid does. d even; bases a 1-D tensor of at most 1000 values above 1.

    B_m is not monotone in the base (at d = 128, base 8.4·10⁴ keeps B_m ≥ 0 up to 8,192 while
    10⁵ does not), so the answer depends on the grid: a coarse grid can overstate the bound
    several times over; use a fine one (e.g. 256 bases per decade). Every base of the grid below
    the answer is checked at every m ≤ L: a strided pass (every 16th m) rejects most of them
    cheaply, an exact pass over all m confirms a base before it is returned.
    """
    if not isinstance(lengths, (list, tuple)) or not lengths:
        raise TypeError(f"lengths must be a non-empty list of context lengths, got {type(lengths).__name__}")
    lengths = [_validate.integer(n, "lengths", minimum=1, maximum=MAX_LENGTH) for n in lengths]
    d = _validate.d_model(d, "d")
    _validate.size_budget((d // 2) * 2**16, "a block of angles [65536, d/2] (d)")
    bases = _validate.float_tensor(bases, "bases")
    if bases.ndim != 1 or not (bases > 1).all() or bases.numel() > 1000:
        raise ValueError(f"bases must be a 1-D tensor of at most 1000 bases above 1, got shape "
                         f"{tuple(bases.shape)}")
    exponents = torch.arange(0, d, 2, dtype=torch.float64) / d
    grid = sorted(set(bases.to(torch.float64).tolist()))
    found, i = {}, 0
    for n in sorted(set(lengths)):  # a base that fails L fails every longer length: i only grows
        while i < len(grid):
            w = grid[i] ** -exponents
            if not _dips_below_zero(w, n, 16) and not _dips_below_zero(w, n, 1):
                break
            i += 1
        found[n] = grid[i] if i < len(grid) else math.nan
    return [found[n] for n in lengths]


def sampled_similarity_gap(offsets: torch.Tensor, frequencies: torch.Tensor, *, n_samples: int = 2000,
                           noise: float = 0.5, seed: int = 0) -> torch.Tensor:
    """The measured gap E[q·M_m k*] − E[q·M_m k] of ``n_samples`` random queries q ~ N(0, I_d),
    similar keys k* = q + noise·N(0, I_d) and random keys k ~ N(0, I_d), at each distance m of
    ``offsets`` [k] (rope_rotate, interleaved pairs, d = 2·len(frequencies)). Returns float64
    [k]; Men et al.'s expectation is 2·B_m (σ² = 1)."""
    offsets, frequencies = _offsets(offsets), _validate.frequencies(frequencies)
    n_samples = _validate.integer(n_samples, "n_samples", minimum=1, maximum=10**6)
    noise = _validate.real(noise, "noise")
    if noise < 0:
        raise ValueError(f"noise must be at least 0, got {noise}")
    seed = _validate.seed(seed)
    d = 2 * frequencies.numel()
    _validate.size_budget(n_samples * offsets.numel() * d * 3, "the samples [n_samples, len(offsets), 2·len(frequencies)]")
    generator = torch.Generator().manual_seed(seed % 2**63)
    q = torch.randn(n_samples, 1, d, generator=generator, dtype=torch.float64)
    similar = q + noise * torch.randn(n_samples, 1, d, generator=generator, dtype=torch.float64)
    other = torch.randn(n_samples, 1, d, generator=generator, dtype=torch.float64)
    m = offsets.numel()
    zeros = torch.zeros(m, dtype=torch.float64)
    turned = [rope_rotate(x.expand(-1, m, -1), positions=p, frequencies=frequencies)
              for x, p in ((q, zeros), (similar, offsets), (other, offsets))]
    return ((turned[0] * turned[1]).sum(-1) - (turned[0] * turned[2]).sum(-1)).mean(dim=0)
