"""Positions on a grid: the 2-D position codes and their algebra, free of models (lesson 13).

An image [height, width] cut into p×p patches (``patchify``) is a grid of (height/p)×(width/p)
tokens, read in raster order: patch index y·width + x for row y and column x
(``grid_positions``). The codes:

- ``sinusoidal_encoding_2d``: MAE's 2-D sin-cos code (He et al. 2022): the first d/2 columns are
  the 1-D code of the column x, the last d/2 the 1-D code of the row y, each half sines then
  cosines with ω_i = base^(−2i/(d/2)).
- ``rope_rotate_2d``: axial 2-D RoPE (Heo et al. 2024): in each head the first half of the
  features turns with the column, the second half with the row, so a score depends on
  (Δrow, Δcolumn) only. The rotation is RoPE's one operation, ``rope.rotate_pairs``; only the
  angles (``rope_tables_2d``) are 2-D.
- ``resize_table``: a learned table for one grid resampled to another (timm, MAE).
"""

from __future__ import annotations

import torch
from torch import nn

from . import _validate
from .encodings import frequencies, sinusoidal_encoding
from .rope import rotate_pairs

RESIZE_MODES = ("bicubic", "bilinear", "nearest")
MAX_GRID = 1024  # rows or columns of a grid; larger is refused
MAX_SPACING = 1e6  # the distance between neighbouring patches; larger is refused


def checked_grid(grid, name: str = "grid") -> tuple[int, int]:
    if not isinstance(grid, (tuple, list)) or len(grid) != 2:
        raise TypeError(f"{name} must be a pair (height, width) of patch rows and columns, got {grid!r}")
    height = _validate.integer(grid[0], f"{name}[0]", minimum=1, maximum=MAX_GRID)
    width = _validate.integer(grid[1], f"{name}[1]", minimum=1, maximum=MAX_GRID)
    return height, width


def checked_spacing(spacing) -> float:
    spacing = _validate.real(spacing, "spacing", positive=True)
    if spacing > MAX_SPACING:
        raise ValueError(f"spacing must be at most {MAX_SPACING:g} (a distance between neighbouring patches), "
                         f"got {spacing:g}")
    return spacing


def grid_positions(height: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Row and column of every patch of a height×width grid in raster order. Returns (rows [n], cols [n]).

    n = height·width; patch index y·width + x has row y and column x (long tensors).
    """
    height = _validate.integer(height, "height", minimum=1, maximum=MAX_GRID)
    width = _validate.integer(width, "width", minimum=1, maximum=MAX_GRID)
    index = torch.arange(height * width)
    return index // width, index % width


def checked_d_model_2d(d_model, name: str = "d_model") -> int:
    d_model = _validate.d_model(d_model, name)
    if d_model % 4:
        raise ValueError(f"{name} must be divisible by 4 (two halves of sin/cos pairs), got {d_model}")
    return d_model


def sinusoidal_encoding_2d(height: int, width: int, d_model: int, *, base: float = 10_000.0,
                           spacing: float = 1.0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """MAE's 2-D sin-cos position code for a height×width grid. Returns [height·width, d_model].

    Row y·width + x (raster order) is [PE_{d/2}(x), PE_{d/2}(y)]: the first d_model/2 columns
    encode the column x, the last d_model/2 the row y, each as the 1-D code with all sines, then
    all cosines, ω_i = base^(−2i/(d_model/2)). d_model must be divisible by 4. Equal to
    ``get_2d_sincos_pos_embed(d_model, n)`` of MAE's util/pos_embed.py for a square grid (no
    class token), whose variable emb_h in fact holds the column (its meshgrid puts w first).
    spacing: the distance between neighbouring patches (positions x·spacing, y·spacing; 0.5
    puts a 2× finer grid on the same coordinates). Computed in float64, returned as ``dtype``.
    """
    d_model = checked_d_model_2d(d_model)
    dtype = _validate.float_dtype(dtype)
    spacing = checked_spacing(spacing)
    rows, cols = grid_positions(height, width)
    rows, cols = rows * spacing, cols * spacing
    _validate.size_budget(rows.numel() * d_model, "the code [height·width, d_model]")
    half = d_model // 2
    code_x = sinusoidal_encoding(cols, half, base=base, layout="halves", dtype=torch.float64)
    code_y = sinusoidal_encoding(rows, half, base=base, layout="halves", dtype=torch.float64)
    return torch.cat([code_x, code_y], dim=1).to(dtype)


def _grid_coordinates(values, n: int, name: str) -> torch.Tensor:
    if not isinstance(values, torch.Tensor) or values.ndim != 1 or values.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D tensor with one position per row of x ({n})")
    if values.is_complex() or values.dtype == torch.bool:
        raise TypeError(f"{name} must hold real numbers, got dtype {values.dtype}")
    if not torch.isfinite(values.double()).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return values.detach().double()


def rope_tables_2d(rows: torch.Tensor, cols: torch.Tensor, d: int, base: float = 10_000.0):
    """Axial 2-D RoPE's cos and sin [n, d/2] for ``rotate_pairs`` (interleaved pairs (2j, 2j+1)):
    pairs j < d/4 turn with the column (ω_j), the others with the row (ω_{j − d/4});
    ω_i = base^(−2i/(d/2)). rows, cols: float64 [n]. No argument checks (a model computes these
    once per forward pass; rope_rotate_2d checks)."""
    omega = frequencies(d // 2, base=base)  # [d/4]
    angles = torch.cat([cols[:, None] * omega[None, :], rows[:, None] * omega[None, :]], dim=1)
    return torch.cos(angles), torch.sin(angles)


def rope_rotate_2d(x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, *,
                   base: float = 10_000.0) -> torch.Tensor:
    """Axial 2-D RoPE: turn every row of ``x`` [..., n, d] by its grid position (rows[t], cols[t]).

    Features 0 .. d/2−1 are rotated by the column, features d/2 .. d−1 by the row, each half as
    lesson 11's rope_rotate does it (interleaved pairs, ω_i = base^(−2i/(d/2))): the same split
    as sinusoidal_encoding_2d. Then (R_p q)·(R_p' k) depends on (row' − row, col' − col) only.
    rows, cols: 1-D real tensors [n]. d must be divisible by 4. Returns a tensor shaped like x.
    """
    x = _validate.float_tensor(x, "x", min_dims=2)
    n, d = x.shape[-2], x.shape[-1]
    checked_d_model_2d(d, "the last dimension of x")
    rows = _grid_coordinates(rows, n, "rows")
    cols = _grid_coordinates(cols, n, "cols")
    base = _validate.real(base, "base", positive=True)
    return rotate_pairs(x, *rope_tables_2d(rows, cols, d, base))


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """Cut images [batch, H, W] into p×p patches in raster order. Returns [batch, (H/p)·(W/p), p·p].

    Patch y·(W/p) + x holds the pixels of rows p·y .. p·y+p−1 and columns p·x .. p·x+p−1, read
    row by row. H and W must be multiples of p.
    """
    images = _validate.float_tensor(images, "images", min_dims=3)
    if images.ndim != 3:
        raise ValueError(f"images must have shape [batch, height, width], got {tuple(images.shape)}")
    p = _validate.integer(patch_size, "patch_size", minimum=1)
    batch, h, w = images.shape
    if h % p or w % p:
        raise ValueError(f"patch_size must divide the image height and width ({h}×{w}), got {p}")
    grid = images.reshape(batch, h // p, p, w // p, p).permute(0, 1, 3, 2, 4)  # [b, gy, gx, p, p]
    return grid.reshape(batch, (h // p) * (w // p), p * p)


def resize_table(table: torch.Tensor, old_grid, new_grid, *, mode: str = "bicubic") -> torch.Tensor:
    """A position table for one grid, resampled to another, as timm and MAE do for a new resolution.

    table [old_h·old_w, d] (raster order) is read as a d-channel image old_h×old_w and resized
    with torch's interpolate (mode "bicubic", "bilinear" or "nearest", align_corners=False).
    Returns [new_h·new_w, d].
    """
    table = _validate.matrix(table, "table")
    old_h, old_w = checked_grid(old_grid, "old_grid")
    new_h, new_w = checked_grid(new_grid, "new_grid")
    mode = _validate.choice(mode, "mode", RESIZE_MODES)
    if table.shape[0] != old_h * old_w:
        raise ValueError(f"table must have one row per patch of old_grid ({old_h}×{old_w} = {old_h * old_w}), "
                         f"got {table.shape[0]} rows")
    d = table.shape[1]
    _validate.size_budget(new_h * new_w * d, "the resized table [new_h·new_w, d]")
    image = table.reshape(1, old_h, old_w, d).permute(0, 3, 1, 2)
    options = {} if mode == "nearest" else {"align_corners": False}
    resized = nn.functional.interpolate(image.float() if table.dtype in (torch.float16, torch.bfloat16) else image,
                                        size=(new_h, new_w), mode=mode, **options)
    return resized.permute(0, 2, 3, 1).reshape(new_h * new_w, d).to(table.dtype)
