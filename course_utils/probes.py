"""Reading information out of a representation: linear probes and a variance split.

A linear probe asks "can a single linear map recover this label from these vectors?" We fit it in
closed form (ridge regression onto one-hot labels, then argmax) on one part of the data and report
accuracy on the rest, so a probe that only memorises scores poorly.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _validate


@dataclass(frozen=True)
class ProbeResult:
    """Accuracy of a linear read-out on the rows it was fitted on and on held-out rows."""

    train_accuracy: float
    test_accuracy: float


def _features_labels(features, labels) -> tuple[torch.Tensor, torch.Tensor]:
    features = _validate.matrix(features, "features")
    if not isinstance(labels, torch.Tensor):
        raise TypeError(f"labels must be a torch.Tensor of class ids, got {type(labels).__name__}")
    if labels.is_floating_point() or labels.dtype == torch.bool or labels.is_complex():
        raise TypeError(f"labels must hold integer class ids, got dtype {labels.dtype}")
    if labels.ndim != 1 or labels.shape[0] != features.shape[0]:
        raise ValueError(
            f"labels must be 1-D with one id per row of features ({features.shape[0]}), got shape {tuple(labels.shape)}"
        )
    if labels.numel() and labels.min() < 0:
        raise ValueError("labels must be non-negative class ids")
    if labels.numel():  # one column (one-hot) or one group mean per class id up to the largest
        _validate.size_budget((features.shape[0] + features.shape[1] + 1) * (int(labels.max()) + 1),
                              "the per-class tables [len(labels) + d + 1, labels.max() + 1]")
    return features.detach().double(), labels.long()


def linear_probe(features, labels, *, test_fraction: float = 0.5, ridge: float = 1e-3, seed: int = 0) -> ProbeResult:
    """Fit a linear read-out from ``features`` [N, d] to ``labels`` [N] and report its accuracy.

    The rows are shuffled with ``seed`` and split: ``test_fraction`` of them are held out. The
    read-out (with a bias) is the ridge-regression solution onto one-hot labels.
    """
    features, labels = _features_labels(features, labels)
    test_fraction = _validate.real(test_fraction, "test_fraction", positive=True)
    if test_fraction >= 1:
        raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction}")
    ridge = _validate.real(ridge, "ridge", positive=True)
    seed = _validate.seed(seed)
    n = features.shape[0]
    n_test = int(round(n * test_fraction))
    if n_test < 1 or n - n_test < 2:
        raise ValueError(f"features must have enough rows to split into fit and held-out parts with "
                         f"test_fraction = {test_fraction:g}, got {n}")
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    test, fit = order[:n_test], order[n_test:]
    design = torch.cat([features, torch.ones(n, 1, dtype=features.dtype)], dim=1)
    classes = int(labels.max()) + 1
    targets = torch.nn.functional.one_hot(labels, classes).double()
    x = design[fit]
    gram = x.T @ x + ridge * torch.eye(x.shape[1], dtype=x.dtype)
    weights = torch.linalg.solve(gram, x.T @ targets[fit])
    predicted = (design @ weights).argmax(dim=1)
    correct = predicted == labels
    return ProbeResult(
        train_accuracy=correct[fit].double().mean().item(),
        test_accuracy=correct[test].double().mean().item(),
    )


def variance_explained(features, labels) -> float:
    """Fraction of the total variance of ``features`` [N, d] explained by the group means of ``labels`` [N].

    1 − (within-group sum of squares) / (total sum of squares): 1 when every vector is its group's
    mean, 0 when the groups have the same mean. Used to ask "how much of this layer is position,
    how much is token?".
    """
    features, labels = _features_labels(features, labels)
    if features.shape[0] < 2:
        raise ValueError("features must have at least 2 rows")
    centred = features - features.mean(dim=0)
    total = (centred**2).sum()
    if total == 0:
        raise ValueError("features has zero variance: nothing to explain")
    classes = int(labels.max()) + 1
    counts = torch.bincount(labels, minlength=classes).double().clamp_min(1)
    sums = torch.zeros(classes, features.shape[1], dtype=features.dtype).index_add_(0, labels, features)
    means = sums / counts[:, None]
    within = ((features - means[labels]) ** 2).sum()
    return (1 - within / total).item()
