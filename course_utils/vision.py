"""Lesson 13's models on a grid: a tiny vision transformer on scikit-learn's digits.

The 2-D codes and their algebra (``grid_positions``, ``patchify``, ``sinusoidal_encoding_2d``,
``rope_rotate_2d``, ``resize_table``) live below the models, in course_utils/grid_codes.py. Here:

- ``TinyViT``: a linear patch embedding, a position code ("none", "sinusoidal_1d" in raster
  order, "sinusoidal_2d", "learned", "rope_2d"), the course's transformer ``Block``s and mean
  pooling; ``forward(patches, grid=(h, w))`` runs it on another grid (the learned table resized
  by ``resize_table``, the fixed codes recomputed).
- ``load_digits_patches``: scikit-learn's 1,797 bundled 8×8 handwritten digits, split once
  (stratified, fixed random_state), as patches; ``upsample=2`` gives the same digits at 16×16.
- ``train_vit``, ``evaluate_vit`` and ``vit_features`` (the residual stream layer by layer, for
  lesson 08's ``layer_profile``).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from . import _validate, grid_codes
from ._deprecation import moved
from .encodings import sinusoidal_encoding
from .grid_codes import (checked_d_model_2d, checked_grid, checked_spacing, grid_positions, patchify,
                         resize_table, rope_tables_2d, sinusoidal_encoding_2d)
from .layers import ResidualFeatures
from .models import Block
from .rope import rotate_pairs
from .training import History

# The 2-D codes moved to grid_codes.py (below the models) in 0.2.
__getattr__ = moved(__name__, {name: getattr(grid_codes, name) for name in ("rope_rotate_2d", "RESIZE_MODES",
                                                                           "MAX_GRID", "MAX_SPACING")},
                    since="0.2", home=grid_codes.__name__)

GRID_CODES = ("none", "sinusoidal_1d", "sinusoidal_2d", "learned", "rope_2d")


@dataclass(frozen=True)
class DigitPatches:
    """The digits as patches. train_patches [N_train, n, p·p], test_patches [N_test, n, p·p]
    (float32, pixels standardised: 0 is the mean training pixel, 1 its standard deviation);
    train_labels, test_labels [N] (long, the digit 0–9);
    grid = (rows, columns) of patches, n = rows·columns; patch_size p in pixels."""

    train_patches: torch.Tensor
    train_labels: torch.Tensor
    test_patches: torch.Tensor
    test_labels: torch.Tensor
    grid: tuple[int, int]
    patch_size: int


@functools.lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits  # imported here: scikit-learn loads slowly

    digits = load_digits()
    return digits.images.astype(np.float32) / 16.0, digits.target.astype(np.int64)


def load_digits_patches(*, patch_size: int = 2, upsample: int = 1, test_fraction: float = 0.25,
                        random_state: int = 0) -> DigitPatches:
    """scikit-learn's bundled handwritten digits (1,797 scans of 8×8, no download) as patches.

    Pixels are standardised with the mean and standard deviation of all training pixels. upsample=k
    then enlarges every image to 8k×8k by bilinear interpolation (align_corners=False) before
    cutting patches of patch_size pixels, so the same digit gives k² times as many patches, each
    covering 1/k² of the area. The split into train
    and test images is sklearn's train_test_split(stratify=labels, random_state=random_state,
    test_size=test_fraction): the same images for every upsample and patch_size.
    """
    patch_size = _validate.integer(patch_size, "patch_size", minimum=1, maximum=8 * 16)
    upsample = _validate.integer(upsample, "upsample", minimum=1, maximum=16)
    test_fraction = _validate.real(test_fraction, "test_fraction", positive=True)
    if not 0.01 <= test_fraction <= 0.99:
        raise ValueError(f"test_fraction must be between 0.01 and 0.99, got {test_fraction}")
    random_state = _validate.integer(random_state, "random_state", minimum=0, maximum=2**32 - 1)
    size = 8 * upsample
    if size % patch_size:
        raise ValueError(f"patch_size must divide the image size {size} (8 × upsample), got {patch_size}")
    from sklearn.model_selection import train_test_split

    images, labels = _digits()
    train, test = train_test_split(np.arange(len(labels)), test_size=test_fraction, stratify=labels,
                                   random_state=random_state)
    mean, std = images[train].mean(), images[train].std()
    pixels = torch.from_numpy((images - mean) / std)
    if upsample > 1:
        pixels = nn.functional.interpolate(pixels[:, None], scale_factor=upsample, mode="bilinear",
                                           align_corners=False)[:, 0]
    patches = patchify(pixels, patch_size)
    targets = torch.from_numpy(labels)
    train, test = torch.from_numpy(train), torch.from_numpy(test)
    return DigitPatches(patches[train], targets[train], patches[test], targets[test],
                        (size // patch_size, size // patch_size), patch_size)


@dataclass
class ViTOutput:
    """logits [batch, n_classes]; residuals: 2·n_layers + 1 tensors [batch, n, d_model]: the input
    to the first block, then the stream after each sub-layer (block 1's attention, block 1's MLP
    = the output of block 1, block 2's attention, ...)."""

    logits: torch.Tensor
    residuals: list[torch.Tensor] = field(default_factory=list)


class TinyViT(nn.Module):
    """A tiny vision transformer: patches [batch, n, patch_dim] → logits [batch, n_classes].

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

    def __init__(self, *, position: str = "learned", grid=(4, 4), patch_dim: int = 4, d_model: int = 32,
                 n_heads: int = 2, n_layers: int = 1, n_classes: int = 10, d_ff: int | None = None,
                 base: float = 10_000.0, seed: int = 0):
        super().__init__()
        self.position = _validate.choice(position, "position", GRID_CODES)
        self.grid = checked_grid(grid)
        patch_dim = _validate.integer(patch_dim, "patch_dim", minimum=1, maximum=4096)
        self.d_model = checked_d_model_2d(d_model)
        n_heads = _validate.integer(n_heads, "n_heads", minimum=1)
        if self.d_model % n_heads:
            raise ValueError(f"d_model must be divisible by n_heads, got d_model {self.d_model}, n_heads {n_heads}")
        if position == "rope_2d" and (self.d_model // n_heads) % 4:
            raise ValueError(f"2-D RoPE splits each head in two halves of pairs: d_model / n_heads must be divisible "
                             f"by 4, got d_model {self.d_model}, n_heads {n_heads}")
        self.n_heads = n_heads
        n_layers = _validate.integer(n_layers, "n_layers", minimum=0, maximum=64)
        n_classes = _validate.integer(n_classes, "n_classes", minimum=1, maximum=100_000)
        d_ff = 4 * self.d_model if d_ff is None else _validate.integer(d_ff, "d_ff", minimum=1)
        self.base = _validate.real(base, "base", positive=True)
        seed = _validate.seed(seed)
        d = self.d_model
        _validate.size_budget(n_layers * (4 * d * d + 2 * d * d_ff) + (patch_dim + n_classes) * d,
                              "the weights (patch_dim, d_model, d_ff, n_layers, n_classes)")
        _validate.size_budget(self.grid[0] * self.grid[1] * d, "the position table [grid[0]·grid[1], d_model]")
        self.patch_dim = patch_dim
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.patch_embedding = nn.Linear(patch_dim, d)
            self.table = (nn.Parameter(0.02 * torch.randn(self.grid[0] * self.grid[1], d))
                          if position == "learned" else None)
            self.blocks = nn.ModuleList(Block(d, n_heads, d_ff) for _ in range(n_layers))
            self.ln_final = nn.LayerNorm(d)
            self.head = nn.Linear(d, n_classes)

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
        return lambda x: rotate_pairs(x, cos, sin)  # rope_rotate_2d, its tables computed once

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
                x, _, _ = block(x, None, None, rotate)
            finally:
                if hook is not None:
                    hook.remove()
            if details:
                out.residuals.append(x)
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


def _check_data(model, patches, labels, grid=None) -> tuple[torch.Tensor, torch.Tensor]:
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


class _Logits(nn.Module):
    """A TinyViT's logits on its training grid, unchecked: what torch.func.vmap runs."""

    def __init__(self, model: TinyViT):
        super().__init__()
        self.model = model

    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        return self.model._run(patches, self.model.grid, 1.0)


def _same_design(models) -> list[TinyViT]:
    if isinstance(models, TinyViT):
        return [models]
    if not isinstance(models, (list, tuple)) or not models or not all(isinstance(m, TinyViT) for m in models):
        raise TypeError("model must be a TinyViT or a non-empty list of TinyViTs")
    first = models[0]
    shapes = {name: p.shape for name, p in first.named_parameters()}
    for other in models[1:]:
        if (other.position, other.grid, other.base) != (first.position, first.grid, first.base) or \
                {name: p.shape for name, p in other.named_parameters()} != shapes:
            raise ValueError("model: models trained together must have the same design (position, grid, "
                             "widths, layers); only their seeds may differ")
    if len({id(m) for m in models}) != len(models):
        raise ValueError("model: the list holds the same model twice")
    return list(models)


def train_vit(model, patches: torch.Tensor, labels: torch.Tensor, *, steps: int = 100,
              batch_size: int = 64, lr: float = 2e-2, seed=0, progress: bool = True):
    """Train ``model`` on images ``patches`` [N, n, patch_dim] with ``labels`` [N] (AdamW, cross-entropy).

    Each step takes ``batch_size`` images drawn without replacement by a generator seeded with
    ``seed`` (a fresh shuffle whenever the images run out). The learning rate rises linearly to
    ``lr`` over the first tenth of the steps, then falls linearly to 0. Returns the History of
    per-step loss and accuracy; the model is left in eval mode.

    ``model`` may be a list of TinyViTs of one design (seeds differ) and ``seed`` a list with one
    seed per model: they are trained side by side, each on its own batches, in one vectorised
    pass per step (torch.func.vmap) — each model's arithmetic is its own, so the result is what
    training it alone gives, up to float rounding, in a fraction of the time. Returns one
    History per model.
    """
    models = _same_design(model)
    patches, labels = _check_data(models[0], patches, labels)
    steps = _validate.steps(steps, "steps")
    batch_size = _validate.integer(batch_size, "batch_size", minimum=1)
    lr = _validate.real(lr, "lr", positive=True)
    if lr > 1:
        raise ValueError(f"lr must be at most 1 (AdamW moves every weight by about lr per step), got {lr}")
    seeds = seed if isinstance(seed, (list, tuple)) else [seed]
    if isinstance(model, TinyViT) != (not isinstance(seed, (list, tuple))) or len(seeds) != len(models):
        raise ValueError("seed must be one seed for one model, or a list with one seed per model")
    generators = [torch.Generator().manual_seed(_validate.seed(s)) for s in seeds]
    progress = _validate.flag(progress, "progress")
    batch_size = min(batch_size, patches.shape[0])
    _validate.size_budget(len(models) * batch_size * models[0].n_heads * patches.shape[1] ** 2,
                          "the attention weights [models, batch_size, n_heads, n, n]")

    from torch.func import functional_call, stack_module_state, vmap

    for m in models:
        m.train()
    params, buffers = stack_module_state(models)  # [models, ...] copies of every weight
    template = _Logits(copy.deepcopy(models[0]).to("meta"))
    names = {name: "model." + name for name in params}

    def logits_of(p, b, x):
        return functional_call(template, ({names[k]: v for k, v in p.items()},
                                          {"model." + k: v for k, v in b.items()}), (x,))

    optimiser = torch.optim.AdamW(params.values(), lr=lr, weight_decay=0.0, foreach=True)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min((step + 1) / warmup, (steps - step) / max(1, steps - warmup)))
    histories = [History() for _ in models]
    orders = [torch.empty(0, dtype=torch.long) for _ in models]
    for _ in tqdm(range(steps), desc="training the ViT", disable=not progress, leave=False):
        rows = []
        for i, generator in enumerate(generators):
            if orders[i].numel() < batch_size:
                orders[i] = torch.randperm(patches.shape[0], generator=generator)
            rows.append(orders[i][:batch_size])
            orders[i] = orders[i][batch_size:]
        rows = torch.stack(rows)  # [models, batch_size]
        logits = vmap(logits_of)(params, buffers, patches[rows])  # [models, batch_size, classes]
        targets = labels[rows]
        losses = nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none").mean(dim=1)
        optimiser.zero_grad()
        losses.sum().backward()  # each model's gradient comes from its own loss only
        optimiser.step()
        schedule.step()
        correct = (logits.argmax(dim=-1) == targets).float().mean(dim=1)
        for history, loss, accuracy in zip(histories, losses.tolist(), correct.tolist()):
            history.loss.append(loss)
            history.accuracy.append(accuracy)
    with torch.no_grad():
        for i, m in enumerate(models):
            for name, p in m.named_parameters():
                p.copy_(params[name][i])
            m.eval()
    return histories[0] if isinstance(model, TinyViT) else histories


@torch.no_grad()
def evaluate_vit(model: TinyViT, patches: torch.Tensor, labels: torch.Tensor, *, grid=None,
                 spacing=None) -> float:
    """Accuracy of ``model`` on images ``patches`` [N, h·w, patch_dim] with ``labels`` [N].

    grid = (h, w), default the model's training grid: another grid runs the model at a new
    resolution without retraining (see TinyViT); spacing: as in TinyViT.code (default 1).
    """
    patches, labels = _check_data(model, patches, labels, grid)
    was_training = model.training
    model.eval()
    predicted = model(patches, grid=grid, spacing=spacing).argmax(dim=-1)
    model.train(was_training)
    return (predicted == labels).double().mean().item()


@torch.no_grad()
def vit_features(model: TinyViT, patches: torch.Tensor, labels: torch.Tensor) -> ResidualFeatures:
    """The residual stream of ``model`` on ``patches`` [N, n, patch_dim], flattened for layer_profile.

    Row i·n + j is patch j of image i. positions: the patch index j (row j // width, column
    j % width); tokens: the patch's ink pattern, bit b set when pixel b of the patch is above 0
    (brighter than the mean training pixel, for load_digits_patches' standardised pixels): an id
    0 .. 2^patch_dim − 1, a discrete stand-in for the patch content; targets: the
    image's label; scored: all True. layers: 2·n_layers + 1 float64 tensors [N·n, d_model]: the
    input, then the stream after each attention and after each MLP (ViTOutput.residuals).
    """
    patches, labels = _check_data(model, patches, labels)
    if model.patch_dim > 30:
        raise ValueError(f"patches: an ink pattern of {model.patch_dim} pixels has too many ids; use patches of "
                         "at most 30 pixels")
    was_training = model.training
    model.eval()
    out = model(patches, details=True)
    model.train(was_training)
    batch, n, _ = patches.shape
    bits = 2 ** torch.arange(model.patch_dim)
    ink = ((patches > 0).long() * bits).sum(dim=-1)
    return ResidualFeatures(
        layers=tuple(r.reshape(batch * n, -1).double() for r in out.residuals),
        positions=torch.arange(n).repeat(batch),
        tokens=ink.reshape(-1),
        targets=labels.repeat_interleave(n),
        scored=torch.ones(batch * n, dtype=torch.bool),
    )
