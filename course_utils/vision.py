"""Lesson 13's measurements on a trained TinyViT: accuracy on a grid and the residual stream.

The model is in vit.py, the digits in digits.py, the 2-D codes in grid_codes.py, and it trains
with the course's one loop (``training.train``, several seeds side by side). Here:

- ``evaluate_vit``: accuracy on images, on the training grid or another (a new resolution);
- ``vit_features``: the residual stream layer by layer, for lesson 08's ``layer_profile``;
- ``embedded_patches``: the stream entering the first block, with or without the position code;
- ``attention_distance``: how far, on the grid, each head of each block looks;
- ``train_vit``: the name lesson 13 first used, now ``train`` with the ViT's settings (deprecated).
"""

from __future__ import annotations

import warnings

import torch

from . import _validate, digits, exact, grid_codes, vit
from ._deprecation import moved
from .layers import ResidualFeatures
from .training import History, train
from .vit import TinyViT, checked_images

# Moved in 0.2: the 2-D codes to grid_codes.py, the model to vit.py, the data to digits.py.
__getattr__ = moved(__name__, {
    "rope_rotate_2d": grid_codes.rope_rotate_2d, "RESIZE_MODES": (grid_codes.RESIZE_MODES, grid_codes.__name__),
    "MAX_GRID": (grid_codes.MAX_GRID, grid_codes.__name__), "MAX_SPACING": (grid_codes.MAX_SPACING, grid_codes.__name__),
    "ViTOutput": vit.ViTOutput, "GRID_CODES": (vit.GRID_CODES, vit.__name__),
    "DigitPatches": digits.DigitPatches, "load_digits_patches": digits.load_digits_patches,
}, since="0.2")


def train_vit(model, patches: torch.Tensor, labels: torch.Tensor, *, steps: int = 100, batch_size: int = 64,
              lr: float = 2e-2, seed=0, progress: bool = True) -> History | list[History]:
    """Deprecated (0.2): ``train(model, (patches, labels), steps=..., batch_size=..., lr=...,
    seed=..., schedule="warmup_linear")``, the course's one training loop, with lesson 13's
    defaults. Returns what train returns."""
    if not (isinstance(model, TinyViT) or isinstance(model, (list, tuple)) and model
            and all(isinstance(m, TinyViT) for m in model)):
        raise TypeError(f"model must be a TinyViT or a non-empty list of TinyViTs, got {type(model).__name__}")
    warnings.warn("train_vit is deprecated since course_utils 0.2: call train(model, (patches, labels), "
                  "steps=100, batch_size=64, lr=2e-2, seed=..., schedule=\"warmup_linear\")",
                  DeprecationWarning, stacklevel=2)
    return train(model, (patches, labels), steps=steps, batch_size=batch_size, lr=lr, seed=seed,
                 schedule="warmup_linear", progress=progress)


@torch.no_grad()
def evaluate_vit(model: TinyViT, patches: torch.Tensor, labels: torch.Tensor, *, grid=None,
                 spacing=None) -> float:
    """Accuracy of ``model`` on images ``patches`` [N, h·w, patch_dim] with ``labels`` [N].

    grid = (h, w), default the model's training grid: another grid runs the model at a new
    resolution without retraining (see TinyViT); spacing: as in TinyViT.code (default 1).
    """
    patches, labels = checked_images(model, patches, labels, grid)
    was_training = model.training
    model.eval()
    predicted = model(patches, grid=grid, spacing=spacing).argmax(dim=-1)
    model.train(was_training)
    return (predicted == labels).double().mean().item()


@torch.no_grad()
def vit_features(model: TinyViT, patches: torch.Tensor, labels: torch.Tensor, *,
                 sublayers: bool = True) -> ResidualFeatures:
    """The residual stream of ``model`` on ``patches`` [N, n, patch_dim], flattened for layer_profile.

    Row i·n + j is patch j of image i. positions: the patch index j (row j // width, column
    j % width); tokens: the patch's ink pattern, bit b set when pixel b of the patch is above 0
    (brighter than the mean training pixel, for load_digits_patches' standardised pixels): an id
    0 .. 2^patch_dim − 1, a discrete stand-in for the patch content; targets: the
    image's label; scored: all True. layers: float64 tensors [N·n, d_model]; with ``sublayers``
    (the default) 2·n_layers + 1 of them: the input, then the stream after each attention and
    after each MLP (ViTOutput.residuals); with sublayers=False n_layers + 1: the input and the
    output of each block.
    """
    patches, labels = checked_images(model, patches, labels)
    sublayers = _validate.flag(sublayers, "sublayers")
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
    residuals = out.residuals if sublayers else out.residuals[::2]
    return ResidualFeatures(
        layers=tuple(r.reshape(batch * n, -1).double() for r in residuals),
        positions=torch.arange(n).repeat(batch),
        tokens=ink.reshape(-1),
        targets=labels.repeat_interleave(n),
        scored=torch.ones(batch * n, dtype=torch.bool),
    )


@torch.no_grad()
def embedded_patches(model: TinyViT, patches: torch.Tensor, *, with_code: bool = True) -> torch.Tensor:
    """The stream entering ``model``'s first block, computed in float64: [N·n, d_model].

    patches [N, n, patch_dim] on the training grid; row i·n + j is patch j of image i: its
    patch embedding x_p E + b, plus the model's position code for place j when ``with_code``
    (a learned table or the 2-D sinusoid; "none" and "rope_2d" add nothing, so for them both
    settings give the same rows). Float64 throughout: the 4 pixels of a patch span only 4
    directions of the d_model, and float32 rounding would add noise in the other directions.
    """
    patches, _ = checked_images(model, patches, torch.zeros(_batch(patches), dtype=torch.long))
    with_code = _validate.flag(with_code, "with_code")
    layer = model.patch_embedding
    rows = patches.double().reshape(-1, patches.shape[-1])  # [N·n, patch_dim]
    # exact_matmul: float64 products with the same bits on every CPU (MKL's differ by vendor)
    x = exact.exact_matmul(rows, layer.weight.double().T) + layer.bias.double()
    x = x.reshape(*patches.shape[:-1], model.d_model)
    code = model.code() if with_code else None
    if code is not None:
        x = x + code.detach().double()
    return x.reshape(-1, model.d_model)


@torch.no_grad()
def attention_distance(model: TinyViT, patches: torch.Tensor) -> torch.Tensor:
    """Mean attention distance of every head, in patch widths: float64 [n_layers, n_heads].

    For a query patch q, Σ_k a_qk · |g_q − g_k|, with a_qk the head's attention weights and g the
    (row, column) of a patch on the grid (Euclidean distance), averaged over the n query patches
    and the N images of ``patches`` [N, n, patch_dim] (training grid). Dosovitskiy et al. (2021,
    Figure 7, right) plot this in pixels, per head and depth, for ViT-L/16. Uniform attention over
    a 4×4 grid gives 2.008 (the mean distance between two of its patches); attention to the
    patch itself only, 0.
    """
    patches, _ = checked_images(model, patches, torch.zeros(_batch(patches), dtype=torch.long))
    if not model.blocks:
        raise ValueError("model: a TinyViT with n_layers = 0 has no attention to measure")
    was_training = model.training
    model.eval()
    out = model(patches, details=True)
    model.train(was_training)
    rows, cols = grid_codes.grid_positions(*model.grid)
    where = torch.stack([rows, cols], dim=1).double()
    distance = torch.cdist(where, where)  # [n, n]
    return torch.stack([(weights.double() * distance).sum(dim=-1).mean(dim=(0, 2))
                        for weights in out.attention])


def _batch(patches) -> int:
    """The number of images in ``patches``, for a stand-in label vector (checked_images checks the rest)."""
    return patches.shape[0] if isinstance(patches, torch.Tensor) and patches.ndim >= 1 else 0
