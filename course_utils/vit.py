"""A tiny vision transformer: the course's model family on a grid of patches (lesson 13).

``TinyViT`` is built from the same parts as ``TinyTransformer``: the pre-LN ``Block`` (attention
and MLP) of models.py, the 2-D position codes of grid_codes.py, and RoPE's one rotation
(``rope.rotate_pairs``). Patches [batch, n, patch_dim] in raster order → logits [batch, n_classes].
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch
from torch import nn

from . import _validate
from .encodings import sinusoidal_encoding
from .grid_codes import (checked_d_model_2d, checked_grid, checked_spacing, grid_positions, resize_table,
                         rope_tables_2d, sinusoidal_encoding_2d)
from .models import Block
from .reproducible import Linear
from .rope import rotate_rows, rotation_rows

GRID_CODES = ("none", "sinusoidal_1d", "sinusoidal_2d", "learned", "rope_2d")


@dataclass(frozen=True)
class ViTConfig:
    """Everything that defines a TinyViT, checked when it is made (the grid's ModelConfig).

    position: "none", "sinusoidal_1d", "sinusoidal_2d", "learned" or "rope_2d"; grid: the
    training grid (rows, columns) of patches; patch_dim: pixels per patch; d_model (divisible by
    4), n_heads, n_layers, n_classes, d_ff (None: 4·d_model); base: the codes' θ.
    """

    position: str = "learned"
    grid: tuple[int, int] = (4, 4)
    patch_dim: int = 4
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 1
    n_classes: int = 10
    d_ff: int | None = None
    base: float = 10_000.0

    def __post_init__(self):
        # The config keeps the checked values (a list grid becomes a tuple), never the raw ones.
        def keep(name: str, value) -> None:
            object.__setattr__(self, name, value)

        keep("position", _validate.choice(self.position, "position", GRID_CODES))
        keep("grid", checked_grid(self.grid))
        keep("patch_dim", _validate.integer(self.patch_dim, "patch_dim", minimum=1, maximum=4096))
        keep("d_model", d := checked_d_model_2d(self.d_model))
        keep("n_heads", n_heads := _validate.integer(self.n_heads, "n_heads", minimum=1))
        if d % n_heads:
            raise ValueError(f"d_model must be divisible by n_heads, got d_model {d}, n_heads {n_heads}")
        if self.position == "rope_2d" and (d // n_heads) % 4:
            raise ValueError(f"2-D RoPE splits each head in two halves of pairs: d_model / n_heads must be divisible "
                             f"by 4, got d_model {d}, n_heads {n_heads}")
        keep("n_layers", n_layers := _validate.integer(self.n_layers, "n_layers", minimum=0, maximum=64))
        keep("n_classes", n_classes := _validate.integer(self.n_classes, "n_classes", minimum=1, maximum=100_000))
        if self.d_ff is not None:
            keep("d_ff", _validate.integer(self.d_ff, "d_ff", minimum=1))
        keep("base", _validate.real(self.base, "base", positive=True))
        d_ff = self.d_ff or 4 * d
        _validate.size_budget(n_layers * (4 * d * d + 2 * d * d_ff) + (self.patch_dim + n_classes) * d,
                              "the weights (patch_dim, d_model, d_ff, n_layers, n_classes)")
        _validate.size_budget(self.grid[0] * self.grid[1] * d, "the position table [grid[0]·grid[1], d_model]")


_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ViTConfig)}


@dataclass
class ViTOutput:
    """logits [batch, n_classes]; residuals: 2·n_layers + 1 tensors [batch, n, d_model]: the input
    to the first block, then the stream after each sub-layer (block 1's attention, block 1's MLP
    = the output of block 1, block 2's attention, ...); attention: n_layers tensors [batch,
    n_heads, n, n], each block's attention weights (row q: how query patch q spreads its weight
    over the patches)."""

    logits: torch.Tensor
    residuals: list[torch.Tensor] = field(default_factory=list)
    attention: list[torch.Tensor] = field(default_factory=list)


class TinyViT(nn.Module):
    """A tiny vision transformer: patches [batch, n, patch_dim] → logits [batch, n_classes].

    TinyViT(ViTConfig(position="rope_2d"), seed=0), or the same settings as keywords:
    TinyViT(position="rope_2d", seed=0). ``seed`` makes the initial weights reproducible.

    patch embedding (one Linear) ⊕ position code → n_layers of the course's pre-LN ``Block`` →
    LayerNorm → mean over the patches → Linear. Mean pooling, not a class token: every token is
    a patch with a grid position, and without a position code the model is a function of the
    bag of patches. position: "none", "sinusoidal_1d" (the 1-D code of the raster index
    y·width + x), "sinusoidal_2d" (sinusoidal_encoding_2d), "learned" (a table, one row per
    patch, initialised N(0, 0.02²), the usual choice) or "rope_2d" (rope_rotate_2d on queries and keys
    in every layer, nothing added). ``grid`` is the training grid (rows, columns).
    forward(patches, grid=(h, w)) runs on another grid: the fixed codes and RoPE are recomputed
    at the new integer positions (or at positions times ``spacing``), the learned table is
    resized bicubically (resize_table). details=True returns a ViTOutput.
    """

    def __init__(self, config: ViTConfig | None = None, *, position: str = "learned", grid=(4, 4),
                 patch_dim: int = 4, d_model: int = 32, n_heads: int = 2, n_layers: int = 1, n_classes: int = 10,
                 d_ff: int | None = None, base: float = 10_000.0, seed: int = 0):
        super().__init__()
        settings = dict(position=position, grid=grid, patch_dim=patch_dim, d_model=d_model, n_heads=n_heads,
                        n_layers=n_layers, n_classes=n_classes, d_ff=d_ff, base=base)
        if config is None:
            config = ViTConfig(**settings)
        elif not isinstance(config, ViTConfig):
            raise TypeError(f"config must be a ViTConfig (or None, with the settings as keywords), got "
                            f"{type(config).__name__}")
        elif any(value is not default and not (type(value) is type(default) and value == default)
                 for value, default in zip(settings.values(), _DEFAULTS.values())):
            raise ValueError("config: pass a ViTConfig or its settings as keywords, not both")
        seed = _validate.seed(seed)
        self.config = config
        # the settings the forward pass reads, as attributes (lesson 13 reads model.position, model.grid)
        self.position, self.grid, self.patch_dim = config.position, config.grid, config.patch_dim
        self.d_model, self.n_heads, self.base = config.d_model, config.n_heads, config.base
        d, n_heads, n_layers, n_classes = config.d_model, config.n_heads, config.n_layers, config.n_classes
        d_ff, patch_dim = config.d_ff or 4 * d, config.patch_dim
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.patch_embedding = Linear(patch_dim, d)
            self.table = (nn.Parameter(0.02 * torch.randn(self.grid[0] * self.grid[1], d))
                          if self.position == "learned" else None)
            self.blocks = nn.ModuleList(Block(d, n_heads, d_ff) for _ in range(n_layers))
            self.ln_final = nn.LayerNorm(d)
            self.head = Linear(d, n_classes)

    def _where(self, grid, spacing) -> tuple[tuple[int, int], float]:
        grid = self.grid if grid is None else checked_grid(grid)
        return grid, 1.0 if spacing is None else checked_spacing(spacing)

    def code(self, grid=None, spacing=None) -> torch.Tensor | None:
        """The code added to the patch embeddings on ``grid`` (default: the training grid),
        [h·w, d_model], or None for "none" and "rope_2d". ``spacing`` (default 1) multiplies the
        grid coordinates of "sinusoidal_2d" and the raster index of "sinusoidal_1d"; a learned
        table has rows for the training grid only and is resized (resize_table) to any other."""
        (h, w), spacing = self._where(grid, spacing)
        if self.position == "learned":
            return self.table if (h, w) == self.grid else resize_table(self.table, self.grid, (h, w))
        if self.position == "sinusoidal_2d":
            return sinusoidal_encoding_2d(h, w, self.d_model, base=self.base, spacing=spacing)
        if self.position == "sinusoidal_1d":
            return sinusoidal_encoding(torch.arange(h * w) * spacing, self.d_model, base=self.base)
        return None

    def rotary(self, grid=None, spacing=None):
        """For "rope_2d": the function turning queries and keys [..., h·w, d_head] by their grid
        positions times ``spacing`` (rope_rotate_2d). Else None."""
        if self.position != "rope_2d":
            return None
        grid, spacing = self._where(grid, spacing)
        rows, cols = grid_positions(*grid)
        d_head = self.d_model // self.n_heads
        cos, sin = rope_tables_2d(rows * spacing, cols * spacing, d_head, self.base)
        c_rows, s_rows = rotation_rows(cos, sin)
        return lambda x: rotate_rows(x, c_rows, s_rows)  # rope_rotate_2d, its tables made once

    def forward(self, patches: torch.Tensor, *, grid=None, spacing=None, details: bool = False):
        grid, spacing = self._where(grid, spacing)
        return self._run(self._check_patches(patches, grid), grid, spacing, details)

    def _run(self, patches: torch.Tensor, grid: tuple[int, int], spacing: float, details: bool = False):
        """forward without the argument checks (train_vit calls it under torch.func.vmap)."""
        x = self.patch_embedding(patches)
        code = self.code(grid, spacing)
        if code is not None:
            x = x + code.to(x.dtype)
        rotate = self.rotary(grid, spacing)
        out = ViTOutput(logits=torch.empty(0), residuals=[x])
        for block in self.blocks:
            # the stream between the attention and the MLP is the input of the block's ln_mlp
            hook = (block.ln_mlp.register_forward_pre_hook(lambda _, args: out.residuals.append(args[0]))
                    if details else None)
            try:
                x, weights, _ = block(x, None, None, rotate)
            finally:
                if hook is not None:
                    hook.remove()
            if details:
                out.residuals.append(x)
                out.attention.append(weights)
        out.logits = self.head(self.ln_final(x).mean(dim=1))
        return out if details else out.logits

    def _check_patches(self, patches, grid: tuple[int, int]) -> torch.Tensor:
        patches = _validate.float_tensor(patches, "patches", min_dims=3)
        n = grid[0] * grid[1]
        if patches.ndim != 3 or patches.shape[1] != n or patches.shape[2] != self.patch_dim:
            raise ValueError(f"patches must have shape [batch, {n}, {self.patch_dim}] for a {grid[0]}×{grid[1]} grid "
                             f"(grid) of patches of {self.patch_dim} pixels, got {tuple(patches.shape)}")
        _validate.size_budget(patches.shape[0] * self.n_heads * n * n,
                              "the attention weights [batch, n_heads, n, n] of patches")
        return patches.to(self.patch_embedding.weight.dtype)


def checked_images(model, patches, labels, grid=None) -> tuple[torch.Tensor, torch.Tensor]:
    """``patches`` [N, h·w, patch_dim] and integer ``labels`` [N] checked against ``model`` (a
    TinyViT) on ``grid`` (default its training grid); returns them as the model's dtype and long."""
    if not isinstance(model, TinyViT):
        raise TypeError(f"model must be a TinyViT, got {type(model).__name__}")
    patches = model._check_patches(patches, model.grid if grid is None else checked_grid(grid))
    if not isinstance(labels, torch.Tensor) or labels.is_floating_point() or labels.is_complex() \
            or labels.dtype == torch.bool:
        raise TypeError("labels must be a tensor of integer class ids")
    if labels.shape != (patches.shape[0],):
        raise ValueError(f"labels must have shape [{patches.shape[0]}], one per image of patches, "
                         f"got {tuple(labels.shape)}")
    n_classes = model.head.out_features
    if labels.numel() and (labels.min() < 0 or labels.max() >= n_classes):
        raise ValueError(f"labels must be class ids in 0 .. {n_classes - 1} (the model's n_classes)")
    if patches.shape[0] == 0:
        raise ValueError("patches must hold at least one image")
    return patches, labels.long()
