"""scikit-learn's bundled handwritten digits as patches on a grid (lesson 13's data).

1,797 scans of 8×8 pixels that ship with scikit-learn (no download), split once into training and
test images (stratified, fixed random_state) and cut into patches in raster order
(``grid_codes.patchify``); ``upsample=2`` gives the same digits at 16×16.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from . import _validate
from .grid_codes import patchify


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
