"""M-RoPE, multimodal RoPE (Qwen2-VL; Wang et al. 2024, §2.1): three position rows, one rotation.

A text token has one position p; an image or video token has three, (time, height, width). M-RoPE
gives every token a column of three positions and splits the d_head/2 feature pairs into three
consecutive blocks, ``mrope_section`` = (pairs turned by time, by height, by width): Qwen2-VL's
head of 128 features uses (16, 24, 24). Pair i is turned by ω_i = base^(−2i/d_head) times its own
axis's position, in lesson 11's halves layout (i with i + d_head/2) and the course's direction.

Two facts make it work:

- a text token's three positions are equal, so on text M-RoPE *is* 1-D RoPE (``mrope_rotate``
  with three equal rows equals ``rope_rotate(..., layout="halves")``);
- each pair sees one axis, so a score depends on the three per-axis differences only — lesson
  13's axial 2-D RoPE with a time axis added. There each axis has a whole ladder of its own over
  half the features; here the axes share one ladder, time taking its fastest block and width its
  slowest. Qwen3-VL interleaves instead (``mrope_interleaved``: time, height, width, time, ...),
  so every axis reaches from fast to slow frequencies.

Positions (``mrope_positions``): text counts on by one; an image or video of t×h×w language-model
tokens (after the vision encoder's 2×2 merge) that starts at s gets (s + i, s + j, s + k) for frame
i, row j, column k, in raster order; the next segment starts at s + max(t, h, w).
"""

from __future__ import annotations

import math

import torch

from . import _validate
from . import encodings
from .rope import rotate_pairs

KINDS = ("text", "image")
AXES = ("time", "height", "width")


def _count(value, where: str) -> int:
    return _validate.integer(value, where, minimum=1)


def _segment(segment, i: int) -> tuple[str, int, int, int]:
    """One checked segment as (kind, t, h, w); a text segment of n tokens is ("text", n, 1, 1)."""
    name = f"segments[{i}]"
    if not isinstance(segment, (tuple, list)):
        raise TypeError(f"{name} must be a tuple such as ('text', 5) or ('image', t, h, w), "
                        f"got {type(segment).__name__}")
    if not segment or not isinstance(segment[0], str) or segment[0] not in KINDS:
        kind = segment[0] if segment else None
        raise ValueError(f"{name} must start with 'text' or 'image', got {kind!r}")
    if segment[0] == "text":
        if len(segment) != 2:
            raise ValueError(f"{name} must be ('text', n_tokens), got {len(segment)} entries")
        return "text", _count(segment[1], f"{name} n_tokens"), 1, 1
    if len(segment) != 4:
        raise ValueError(f"{name} must be ('image', t, h, w) in language-model tokens, got {len(segment)} entries")
    t, h, w = (_count(value, f"{name} {axis}") for value, axis in zip(segment[1:], "thw"))
    return "image", t, h, w


def mrope_positions(segments) -> torch.Tensor:
    """The three M-RoPE position rows of a prompt made of text, images and videos. Returns [3, n].

    segments: a list of ("text", n_tokens) and ("image", t, h, w), in prompt order. An image or
    video is t frames × h rows × w columns of language-model tokens, i.e. after the vision
    encoder's 2×2 merge (Qwen2-VL's ``grid_thw`` holds 2h and 2w patches); t > 1 is a video (t
    counts merged pairs of frames). n = Σ n_tokens + Σ t·h·w. Row 0 is time, row 1 height, row
    2 width; int64.

    Text at position s: all three rows s, s+1, ... A vision segment starting at s: frame i, row j,
    column k (raster order, frame by frame) gets (s + i, s + j, s + k). The next segment starts at
    s + max(t, h, w), one past the largest position the segment used, as the Qwen2-VL paper
    (Wang et al. 2024, §2.1: each modality starts one past the previous one's largest position)
    and transformers 4.x do it. This equals transformers 5.23's Qwen2-VL
    ``get_rope_index`` whenever t ≤ max(h, w); for a video with t > max(h, w) that version starts
    the next segment at s + max(h, w), reusing time positions the video's last frames already hold
    (and its own generation offset, ``rope_deltas``, then continues from the maximum + 1 anyway).

    Two vision segments need text between them (real prompts put vision-start and vision-end
    tokens there; transformers merges two adjacent images, or videos, into one group and fails):
    ValueError.
    """
    if not isinstance(segments, (list, tuple)):
        raise TypeError(f"segments must be a list of ('text', n) and ('image', t, h, w) tuples, "
                        f"got {type(segments).__name__}")
    checked = [_segment(segment, i) for i, segment in enumerate(segments)]
    for i in range(1, len(checked)):
        if checked[i][0] == "image" and checked[i - 1][0] == "image":
            raise ValueError(f"segments[{i - 1}] and segments[{i}] are two images/videos with no text between "
                             "them; real prompts put vision-start/-end tokens there: add ('text', 2)")
    n = sum(t * h * w for _, t, h, w in checked)
    _validate.size_budget(3 * n, "the positions [3, n] (n from segments)")
    rows, start = [], 0
    for kind, t, h, w in checked:
        if kind == "text":
            rows.append(torch.arange(start, start + t, dtype=torch.long).expand(3, t))
            start += t
            continue
        grid = torch.meshgrid(torch.arange(t), torch.arange(h), torch.arange(w), indexing="ij")
        rows.append(torch.stack([axis.reshape(-1) for axis in grid]) + start)
        start += max(t, h, w)
    return torch.cat(rows, dim=1) if rows else torch.zeros(3, 0, dtype=torch.long)


def _section(mrope_section, pairs: int | None = None) -> tuple[int, int, int]:
    """mrope_section as three non-negative ints, summing to ``pairs`` when given."""
    if not isinstance(mrope_section, (list, tuple)):
        raise TypeError(f"mrope_section must be a list of 3 ints (pairs turned by time, height, width), "
                        f"got {type(mrope_section).__name__}")
    if len(mrope_section) != 3:
        raise ValueError(f"mrope_section must hold 3 ints (time, height, width), got {len(mrope_section)}")
    section = tuple(_validate.integer(value, f"mrope_section[{i}]", minimum=0)
                    for i, value in enumerate(mrope_section))
    if sum(section) == 0:
        raise ValueError("mrope_section must give at least one pair to some axis, got (0, 0, 0)")
    _validate.size_budget(sum(section), "mrope_section's total number of pairs")
    if pairs is not None and sum(section) != pairs:
        raise ValueError(f"mrope_section must sum to d_head/2 = {pairs} (the last dimension of x is "
                         f"{2 * pairs}), got {list(section)} summing to {sum(section)}")
    return section


def _pair_axes(section: tuple[int, int, int], interleaved: bool) -> torch.Tensor:
    """The axis (0 time, 1 height, 2 width) that turns each pair. Returns int64 [Σ section].

    Blocks (Qwen2-VL): s_0 time pairs, then s_1 height, then s_2 width. Interleaved (Qwen3-VL):
    pairs cycle time, height, width, time, ... while height and width have pairs left; the rest
    are time's, so every axis reaches from the fastest frequencies to near the slowest.
    """
    if not interleaved:
        return torch.repeat_interleave(torch.arange(3), torch.tensor(section))
    axes = torch.zeros(sum(section), dtype=torch.long)
    for axis in (1, 2):
        axes[axis:3 * section[axis]:3] = axis
    if tuple(torch.bincount(axes, minlength=3).tolist()) != section:
        raise ValueError(f"mrope_section {list(section)} cannot be interleaved (time, height, width, time, ...): "
                         f"with mrope_interleaved, 3·height must be at most {sum(section) + 1} and 3·width at "
                         f"most {sum(section)} (the number of pairs, +1 for height)")
    return axes


def _position_rows(positions, n: int) -> torch.Tensor:
    if not isinstance(positions, torch.Tensor):
        raise TypeError(f"positions must be a torch.Tensor [3, n] (e.g. from mrope_positions), "
                        f"got {type(positions).__name__}")
    if positions.is_complex() or positions.dtype == torch.bool:
        raise TypeError(f"positions must hold real numbers, got dtype {positions.dtype}")
    if positions.shape != (3, n):
        raise ValueError(f"positions must have shape [3, n] = [3, {n}] (time, height, width rows, one "
                         f"column per row of x), got {tuple(positions.shape)}")
    if positions.is_floating_point() and not torch.isfinite(positions).all():
        raise ValueError("positions contains NaN or infinite values")
    return positions.detach().to(torch.float64)


def mrope_rotate(x: torch.Tensor, positions: torch.Tensor, *, mrope_section,
                 base: float = 10_000.0, mrope_interleaved: bool = False) -> torch.Tensor:
    """Rotate every row of ``x`` [..., n, d_head] by its three positions. Returns a tensor shaped like x.

    positions [3, n]: time, height and width position of each row (``mrope_positions``; int64 or
    real). mrope_section: three ints (pairs turned by time, height, width) summing to d_head/2;
    Qwen2-VL: (16, 24, 24) for d_head 128. Pair i (features i and i + d_head/2, the halves
    layout) is turned, as ``rope_rotate`` turns it, by angle ω_i·positions[a(i)], ω_i =
    base^(−2i/d_head), a(i) its axis: pairs 0 .. s_0−1 time, the next s_1 height, the last s_2
    width. mrope_interleaved=True (Qwen3-VL's config key): pairs cycle time, height, width, time,
    ... until height and width have their s_1 and s_2, the rest are time's. Angles in float64.
    With three equal rows p this is rope_rotate(x, positions=p, layout="halves"); transformers'
    Qwen2-VL (Qwen3-VL) rotary embedding at positions P equals this at −P (Su et al.'s direction,
    lesson 11).
    """
    x = _validate.float_tensor(x, "x", min_dims=2)
    n, d = x.shape[-2], x.shape[-1]
    _validate.d_model(d, "the last dimension of x")
    section = _section(mrope_section, d // 2)
    axes = _pair_axes(section, _validate.flag(mrope_interleaved, "mrope_interleaved"))
    rows = _position_rows(positions, n)
    base = _validate.real(base, "base", positive=True)
    omega = encodings.frequencies(d, base=base)
    angles = rows[axes].T * omega[None, :]  # [n, d/2]: pair i reads its axis's row
    return rotate_pairs(x, torch.cos(angles), torch.sin(angles), layout="halves")


def mrope_axes(mrope_section, *, base: float = 10_000.0, mrope_interleaved: bool = False) -> dict[str, dict]:
    """Which feature pairs each axis turns, and how fast: the frequency ladder split three ways.

    mrope_section: three ints (pairs for time, height, width), d_head = 2·Σ; mrope_interleaved as
    in ``mrope_rotate``. Returns {"time" | "height" | "width": {"pairs": tuple of pair indices,
    "n_pairs": int, "fastest": largest ω of its pairs, "slowest": smallest ω,
    "longest_wavelength": 2π/slowest}} with ω_i = base^(−2i/d_head); an axis with no pairs has
    None for the last three. Qwen2-VL (16, 24, 24), base 10⁶: time gets the fastest pairs, width
    the slowest; interleaved (Qwen3-VL, (24, 20, 20)), every axis spans nearly the whole ladder.
    """
    section = _section(mrope_section)
    axes = _pair_axes(section, _validate.flag(mrope_interleaved, "mrope_interleaved"))
    base = _validate.real(base, "base", positive=True)
    omega = encodings.frequencies(2 * sum(section), base=base)
    table = {}
    for a, name in enumerate(AXES):
        pairs = tuple(torch.nonzero(axes == a).flatten().tolist())
        fastest = float(omega[pairs[0]]) if pairs else None
        slowest = float(omega[pairs[-1]]) if pairs else None
        wavelength = (2 * math.pi / slowest if slowest else math.inf) if pairs else None
        table[name] = {"pairs": pairs, "n_pairs": len(pairs), "fastest": fastest, "slowest": slowest,
                       "longest_wavelength": wavelength}
    return table
