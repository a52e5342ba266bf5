"""Reading information out of a representation: linear probes and a variance split.

A linear probe asks "can a single linear map recover this label from these vectors?" It is fitted
on one part of the data and scored on the rest, so a probe that only memorises scores poorly. Two
ways to fit the same kind of read-out (scores hW + b, predicted class argmax):

- ``linear_probe``: least squares onto one-hot labels, in closed form. Fast, but a weak classifier:
  when many classes lie along a line, the middle classes' scores are never the largest ("masking",
  Hastie, Tibshirani & Friedman, *The Elements of Statistical Learning*, 2nd ed. 2009, §4.2).
- ``logistic_probe``: multinomial logistic regression (the objective of scikit-learn's
  ``LogisticRegression``, fitted in torch float64 so it gives the same result on every CPU), which
  fits the argmax itself and has no such blind spot. Use it to ask whether a label is linearly
  readable.
"""

from __future__ import annotations

from dataclasses import dataclass

import warnings

import torch

from . import _validate

# The logistic probe's settings, fixed so every lesson reads with the same instrument: a weak L2
# penalty (strength 1/C) on standardised features, so the probe can make the large weights that
# many classes in few directions need (with scikit-learn's default C = 1, eight classes along a
# line are read at about 0.6), and enough L-BFGS iterations to converge on the lessons' data: a
# fit counts as converged when no gradient component of the (mean) objective exceeds
# LOGISTIC_TOLERANCE, scikit-learn's default tolerance for the same objective.
LOGISTIC_C = 100.0
LOGISTIC_MAX_ITER = 1000
LOGISTIC_TOLERANCE = 1e-4
# A nearly separable probe can need more: L-BFGS's path, and so the number of iterations, depends
# on the last bits of float64 products, which the CPU's BLAS computes its own way (an AMD EPYC
# needed about 1,800 on lesson 13's control probe, where an Intel Xeon needed under 1,000). So a
# fit that has not converged gets up to LOGISTIC_ROUNDS rounds of LOGISTIC_MAX_ITER iterations.
LOGISTIC_ROUNDS = 20
# L-BFGS itself runs on until every gradient component is below 1e-6 (or it has used its
# evaluations): with so weak a penalty the objective is flat along some directions (curvature down
# to 1/(C·n)), so a fit stopped at 1e-4 can sit a few hundredths from the optimum in a weight. On
# the probes of lessons 08 and 13, 1e-6 ends within 4e-7 of the optimum's objective (a fit run to
# 1e-10) and predicts every fitted row as it does, at a third of the time 1e-8 takes.
_LBFGS_TARGET = 1e-6
# How many float64 fits (either probe) this process has made: tools/execute.py asks, because a
# fit's float64 products go through MKL, whose double-precision kernels differ by CPU vendor.
_FITS = [0]


def fits_made() -> int:
    """The number of linear or logistic probe fits made since the course was imported."""
    return _FITS[0]


@dataclass(frozen=True)
class ProbeResult:
    """Accuracy of a linear read-out on the rows it was fitted on and on held-out rows."""

    train_accuracy: float
    test_accuracy: float
    converged: bool = True  # False: the fit stopped short of LOGISTIC_TOLERANCE (a warning said so)


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


def _split(n: int, test_fraction, seed) -> tuple[torch.Tensor, torch.Tensor]:
    """Shuffle row indices 0 .. n-1 with ``seed``; return (fit rows, held-out rows).

    ``test_fraction`` of the rows (rounded) are held out; at least 1 held out and 2 fitted.
    """
    test_fraction = _validate.real(test_fraction, "test_fraction", positive=True)
    if test_fraction >= 1:
        raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction}")
    seed = _validate.seed(seed)
    n_test = int(round(n * test_fraction))
    if n_test < 1 or n - n_test < 2:
        raise ValueError(f"features must have enough rows to split into fit and held-out parts with "
                         f"test_fraction = {test_fraction:g}, got {n}")
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    return order[n_test:], order[:n_test]


def _result(predicted: torch.Tensor, labels: torch.Tensor, fit, test,
            converged: bool = True) -> ProbeResult:
    correct = predicted == labels
    return ProbeResult(
        train_accuracy=correct[fit].double().mean().item(),
        test_accuracy=correct[test].double().mean().item(),
        converged=converged,
    )


def linear_probe(features, labels, *, test_fraction: float = 0.5, ridge: float = 1e-3,
                 seed: int = 0) -> ProbeResult:
    """Fit a linear read-out from ``features`` [N, d] to ``labels`` [N] and report its accuracy.

    The rows are shuffled with ``seed`` and split: ``test_fraction`` of them are held out. The
    read-out (with a bias) is the ridge-regression solution onto one-hot labels. It can miss
    classes that a linear read-out separates perfectly (see ``logistic_probe``).
    """
    features, labels = _features_labels(features, labels)
    ridge = _validate.real(ridge, "ridge", positive=True)
    _FITS[0] += 1
    fit, test = _split(features.shape[0], test_fraction, seed)
    n = features.shape[0]
    design = torch.cat([features, torch.ones(n, 1, dtype=features.dtype)], dim=1)
    classes = int(labels.max()) + 1
    targets = torch.nn.functional.one_hot(labels, classes).double()
    x = design[fit]
    gram = x.T @ x + ridge * torch.eye(x.shape[1], dtype=x.dtype)
    weights = torch.linalg.solve(gram, x.T @ targets[fit])
    return _result((design @ weights).argmax(dim=1), labels, fit, test)


def _standardised(features: torch.Tensor, fit: torch.Tensor) -> torch.Tensor:
    """Each column scaled to zero mean and unit spread over the fit rows (constant columns: 0)."""
    x = features
    scale = x[fit].abs().amax(dim=0)  # first to [-1, 1], so squares cannot overflow
    x = x / torch.where(scale > 0, scale, torch.ones_like(scale))
    mean, spread = x[fit].mean(dim=0), x[fit].std(dim=0, correction=0)
    return (x - mean) / torch.where(spread > 1e-12, spread, torch.ones_like(spread))


def _fit_logistic(x: torch.Tensor, y: torch.Tensor, classes: int) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """Weights W [d, classes] and bias b [classes] minimising the mean cross-entropy of xW + b
    against ``y`` [n] plus |W|² / (2·C·n): scikit-learn's multinomial objective with C =
    LOGISTIC_C, bias unpenalised. Full-batch L-BFGS in float64, from zeros: deterministic. The
    gradient is written out (softmax minus one-hot), not taken by autograd: the same numbers in
    a quarter less time, for a fit that makes hundreds of small steps."""
    n, d = x.shape
    weights = torch.zeros(d, classes, dtype=torch.float64)
    bias = torch.zeros(classes, dtype=torch.float64)
    weights.grad, bias.grad = torch.zeros_like(weights), torch.zeros_like(bias)
    one_hot = torch.nn.functional.one_hot(y, classes).to(torch.float64)  # [n, classes]
    x_t = x.T.contiguous()
    optimiser = torch.optim.LBFGS([weights, bias], max_iter=LOGISTIC_MAX_ITER, history_size=20,
                                  tolerance_grad=_LBFGS_TARGET, tolerance_change=0.0,
                                  line_search_fn="strong_wolfe")

    def objective() -> torch.Tensor:
        log_p = torch.log_softmax(torch.addmm(bias, x, weights), dim=1)
        loss = -(log_p * one_hot).sum() / n + (weights * weights).sum() / (2 * LOGISTIC_C * n)
        residual = (log_p.exp() - one_hot) / n  # d loss / d scores [n, classes]
        torch.mm(x_t, residual, out=weights.grad).add_(weights, alpha=1 / (LOGISTIC_C * n))
        torch.sum(residual, dim=0, out=bias.grad)
        return loss

    with torch.no_grad():
        for _ in range(LOGISTIC_ROUNDS):
            optimiser.step(objective)
            objective()  # the gradient at the final point
            largest = max(weights.grad.abs().max().item(), bias.grad.abs().max().item())
            if largest <= LOGISTIC_TOLERANCE:
                return weights, bias, True
    warnings.warn(f"features: the logistic probe did not converge within "
                  f"{LOGISTIC_ROUNDS * LOGISTIC_MAX_ITER} iterations (largest gradient {largest:.1e}), "
                  f"so its accuracy depends on where the optimiser stopped (ProbeResult.converged is "
                  f"False); check the features", RuntimeWarning, stacklevel=3)
    return weights, bias, False


def logistic_probe(features, labels, *, test_fraction: float = 0.5, seed: int = 0) -> ProbeResult:
    """Fit a multinomial logistic-regression read-out from ``features`` [N, d] to ``labels`` [N].

    The same split as ``linear_probe`` (shuffled with ``seed``; ``test_fraction`` held out). Each
    feature is standardised with the fitted rows' mean and spread, then scores hW + b are fitted
    to maximise the likelihood of the labels with an L2 penalty |W|²/(2C) (C = LOGISTIC_C, bias
    unpenalised): scikit-learn's ``LogisticRegression(C=LOGISTIC_C)``, written in torch float64
    and fitted by full-batch L-BFGS (tests/test_probes.py compares the two). The prediction is
    argmax(hW + b), a linear read-out like the least-squares one. If the fitted rows hold one
    class only, that class is predicted everywhere. A fit that does not converge within
    LOGISTIC_ROUNDS · LOGISTIC_MAX_ITER iterations warns and returns converged=False.
    """
    features, labels = _features_labels(features, labels)
    fit, test = _split(features.shape[0], test_fraction, seed)
    classes = labels[fit].unique()  # sorted; only the classes the fitted rows hold get a score
    if len(classes) == 1:
        return _result(torch.full_like(labels, int(classes[0])), labels, fit, test)
    x = _standardised(features, fit)
    _FITS[0] += 1
    weights, bias, converged = _fit_logistic(x[fit], torch.searchsorted(classes, labels[fit]),
                                             len(classes))
    predicted = classes[(x @ weights + bias).argmax(dim=1)]
    return _result(predicted, labels, fit, test, converged)


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
