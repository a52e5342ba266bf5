"""Reading information out of a representation: linear probes and a variance split.

A linear probe asks "can a single linear map recover this label from these vectors?" It
is fitted on one part of the data and scored on the rest, so a probe that only memorises
scores poorly. Two ways to fit the same kind of read-out (scores hW + b, predicted class
argmax):

- ``linear_probe``: least squares onto one-hot labels, in closed form. Fast, but a weak
  classifier: when many classes lie along a line, the middle classes' scores are never
  the largest ("masking", Hastie, Tibshirani & Friedman, *The Elements of Statistical
  Learning*, 2nd ed. 2009, §4.2).
- ``logistic_probe``: multinomial logistic regression (the objective of scikit-learn's
  ``LogisticRegression``, fitted in torch float64 so it gives the same result on every
  CPU), which fits the argmax itself and has no such blind spot. Use it to ask whether a
  label is linearly readable.
"""

from __future__ import annotations

from dataclasses import dataclass

import warnings

import torch

from . import _validate, exact

# The logistic probe's settings, fixed so every lesson reads with the same instrument: a
# weak L2 penalty (strength 1/C) on standardised features, so the probe can make the
# large weights that many classes in few directions need (with scikit-learn's default
# C = 1, eight classes along a line are read at about 0.6), and enough L-BFGS iterations
# to converge on the lessons' data: a fit counts as converged when no gradient component
# of the (mean) objective exceeds LOGISTIC_TOLERANCE, scikit-learn's default tolerance
# for the same objective.
LOGISTIC_C = 100.0
LOGISTIC_TOLERANCE = 1e-4
# A nearly separable probe can need thousands of iterations (lesson 13's control probe
# needs about 2,000); a fit gets up to LOGISTIC_MAX_ITER before it is declared
# unconverged.
LOGISTIC_MAX_ITER = 20_000
# L-BFGS itself runs on until every gradient component is below 1e-6 (or it stops making
# progress): with so weak a penalty the objective is flat along some directions
# (curvature down to 1/(C·n)), so a fit stopped at 1e-4 can sit a few hundredths from
# the optimum in a weight. On the 170 fits the lessons make (course_utils 0.12), 1e-6
# ends within 1e-5 of the objective a 1e-8 fit reaches and predicts 43 of their
# 286,432 rows differently (in 13 fits), in half the time 1e-8 takes.
_LBFGS_TARGET = 1e-6
_LBFGS_HISTORY = 20
# The same bits on every CPU. A float64 product computed by MKL differs in its last bits
# between Intel and AMD CPUs, and L-BFGS, hundreds of steps long, carries such
# differences into the weights (12 of the lessons' 170 fits predicted some row
# differently, emulated). So every product here is exact.exact_matmul's (exact
# slices, added in one fixed order), every other operation is torch's own elementwise or
# reduction code, and the features are first put on a grid of _FEATURE_BITS bits (one
# power of two for all entries, at most about 1e-6 of the largest standardised feature),
# which lets a product cut only its other operand.
_FEATURE_BITS = 26
_PRODUCT_BITS = 40  # bits kept of the weights and residuals in a product (2 × 20)


@dataclass(frozen=True)
class ProbeResult:
    """Accuracy of a linear read-out on the rows it was fitted on and on held-out
    rows."""

    train_accuracy: float
    test_accuracy: float
    # False: the fit stopped short of LOGISTIC_TOLERANCE (a warning said so)
    converged: bool = True


def _features_labels(features, labels) -> tuple[torch.Tensor, torch.Tensor]:
    features = _validate.matrix(features, "features")
    if not isinstance(labels, torch.Tensor):
        raise TypeError(
            f"labels must be a torch.Tensor of class ids, got {type(labels).__name__}"
        )
    if labels.is_floating_point() or labels.dtype == torch.bool or labels.is_complex():
        raise TypeError(f"labels must hold integer class ids, got dtype {labels.dtype}")
    if labels.ndim != 1 or labels.shape[0] != features.shape[0]:
        raise ValueError(
            f"labels must be 1-D with one id per row of features "
            f"({features.shape[0]}), got shape {tuple(labels.shape)}"
        )
    if labels.numel() and labels.min() < 0:
        raise ValueError("labels must be non-negative class ids")
    if labels.numel():  # one column (one-hot) or one group mean per class id up to max
        _validate.size_budget(
            (features.shape[0] + features.shape[1] + 1) * (int(labels.max()) + 1),
            "the per-class tables [len(labels) + d + 1, labels.max() + 1]",
        )
    return features.detach().double(), labels.long()


def _split(n: int, test_fraction, seed) -> tuple[torch.Tensor, torch.Tensor]:
    """Shuffle row indices 0 .. n-1 with ``seed``; return (fit rows, held-out rows).

    ``test_fraction`` of the rows (rounded) are held out; at least 1 held out and 2
    fitted.
    """
    test_fraction = _validate.real(test_fraction, "test_fraction", positive=True)
    if test_fraction >= 1:
        raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction}")
    seed = _validate.seed(seed)
    n_test = int(round(n * test_fraction))
    if n_test < 1 or n - n_test < 2:
        raise ValueError(
            f"features must have enough rows to split into fit and held-out parts with "
            f"test_fraction = {test_fraction:g}, got {n}"
        )
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    return order[n_test:], order[:n_test]


def _result(
    predicted: torch.Tensor, labels: torch.Tensor, fit, test, converged: bool = True
) -> ProbeResult:
    correct = predicted == labels
    return ProbeResult(
        train_accuracy=correct[fit].double().mean().item(),
        test_accuracy=correct[test].double().mean().item(),
        converged=converged,
    )


def linear_probe(
    features, labels, *, test_fraction: float = 0.5, ridge: float = 1e-3, seed: int = 0
) -> ProbeResult:
    """Fit a linear read-out from ``features`` [N, d] to ``labels`` [N] and report its
    accuracy.

    The rows are shuffled with ``seed`` and split: ``test_fraction`` of them are held
    out. The read-out (with a bias) is the ridge-regression solution onto one-hot
    labels. It can miss classes that a linear read-out separates perfectly (see
    ``logistic_probe``).
    """
    features, labels = _features_labels(features, labels)
    ridge = _validate.real(ridge, "ridge", positive=True)
    fit, test = _split(features.shape[0], test_fraction, seed)
    n = features.shape[0]
    design = torch.cat([features, torch.ones(n, 1, dtype=features.dtype)], dim=1)
    classes = int(labels.max()) + 1
    targets = torch.nn.functional.one_hot(labels, classes).double()
    x = design[fit]
    gram = exact.exact_matmul(x.T, x)
    gram += ridge * torch.eye(x.shape[1], dtype=x.dtype)
    weights = _solve_symmetric(gram, exact.exact_matmul(x.T, targets[fit]))
    return _result(
        exact.exact_matmul(design, weights).argmax(dim=1), labels, fit, test
    )


def _solve_symmetric(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The solution of a X = b for a symmetric positive-definite a [p, p], b [p, k]:
    Gaussian elimination (no pivoting needed) written in torch's elementwise operations,
    so it has the same bits on every CPU (torch.linalg.solve calls LAPACK, whose kernels
    differ by vendor)."""
    p = a.shape[0]
    system = torch.cat([a, b], dim=1)  # [p, p + k], reduced in place to triangular
    for j in range(p - 1):
        factors = system[j + 1 :, j] / system[j, j]
        system[j + 1 :, j:] -= factors[:, None] * system[j, j:]
    solution = torch.empty_like(b)
    for j in reversed(range(p)):
        known = (system[j, j + 1 : p, None] * solution[j + 1 :]).sum(dim=0)
        solution[j] = (system[j, p:] - known) / system[j, j]
    return solution


def _standardised(features: torch.Tensor, fit: torch.Tensor) -> torch.Tensor:
    """Each column scaled to zero mean and unit spread over the fit rows (constant
    columns: 0)."""
    x = features
    scale = x[fit].abs().amax(dim=0)  # first to [-1, 1], so squares cannot overflow
    x = x / torch.where(scale > 0, scale, torch.ones_like(scale))
    mean, spread = x[fit].mean(dim=0), x[fit].std(dim=0, correction=0)
    return (x - mean) / torch.where(spread > 1e-12, spread, torch.ones_like(spread))


def _dot(a: torch.Tensor, b: torch.Tensor) -> float:
    """a · b of two 1-D float64 tensors by torch's own summation (torch.dot calls the
    BLAS)."""
    return (a * b).sum().item()


def _lbfgs(objective, start: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Minimise ``objective`` (θ [p] → (value, gradient [p])) from ``start`` by L-BFGS
    (Nocedal & Wright, *Numerical Optimization*, 2nd ed. 2006, Algorithm 7.4 with a
    backtracking line search), until every gradient component is below _LBFGS_TARGET,
    the line search can no longer lower the value, or LOGISTIC_MAX_ITER steps. Returns θ
    and its largest gradient component."""
    theta = start
    value, grad = objective(theta)
    steps, changes, curvatures = [], [], []  # s_i, y_i, 1 / (y_i · s_i)
    scale = 1.0  # H's initial scale, s·y / y·y of the newest pair
    for iteration in range(LOGISTIC_MAX_ITER):
        largest = grad.abs().max().item()
        if largest <= _LBFGS_TARGET:
            break
        direction = -grad  # the two-loop recursion: direction = −H·grad
        alphas = []
        for s, y, rho in zip(reversed(steps), reversed(changes), reversed(curvatures)):
            alphas.append(rho * _dot(s, direction))
            direction.add_(y, alpha=-alphas[-1])
        if steps:
            direction.mul_(scale)
        for s, y, rho, alpha in zip(steps, changes, curvatures, reversed(alphas)):
            direction.add_(s, alpha=alpha - rho * _dot(y, direction))
        slope = _dot(grad, direction)
        if slope >= 0:  # not a descent direction: start the memory afresh
            direction, slope = -grad, -_dot(grad, grad)
            steps, changes, curvatures = [], [], []
        t = 1.0 if iteration else min(1.0, 1.0 / grad.abs().sum().item())
        while True:  # backtrack until the value falls enough (Armijo, c1 = 1e-4)
            trial = torch.add(theta, direction, alpha=t)
            trial_value, trial_grad = objective(trial)
            if trial_value <= value + 1e-4 * t * slope:
                break
            bend = 2 * (trial_value - value - slope * t)  # the quadratic's minimum
            shorter = -slope * t * t / bend if bend > 0 else 0.5 * t
            t = min(max(shorter, 0.1 * t), 0.5 * t)
            if t < 1e-20:
                return theta, largest  # no step lowers the value: as far as it goes
        s, y = trial - theta, trial_grad - grad
        ys, yy = _dot(y, s), _dot(y, y)
        if ys > 1e-10 * yy:  # keep only pairs with positive curvature
            steps.append(s), changes.append(y), curvatures.append(1.0 / ys)
            scale = ys / yy
            if len(steps) > _LBFGS_HISTORY:
                del steps[0], changes[0], curvatures[0]
        theta, value, grad = trial, trial_value, trial_grad
    return theta, grad.abs().max().item()


def _scores(x: exact.ExactProduct, weights: torch.Tensor,
            bias: torch.Tensor) -> torch.Tensor:
    """x W + b for x [n, d] on the probe's grid (_FEATURE_BITS), prepared as an
    ExactProduct: the same bits on every CPU."""
    return x(weights, bits=_PRODUCT_BITS) + bias


def _fit_logistic(
    x: torch.Tensor, y: torch.Tensor, classes: int
) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """Weights W [d, classes] and bias b [classes] minimising the mean cross-entropy of
    xW + b against ``y`` [n] plus |W|² / (2·C·n): scikit-learn's multinomial objective
    with C = LOGISTIC_C, bias unpenalised. ``x`` [n, d] lies on the probe's grid
    (exact.on_grid with _FEATURE_BITS). Full-batch L-BFGS in float64 from zeros,
    the gradient written out (softmax minus one-hot): deterministic, and the same bits
    on every CPU."""
    n, d = x.shape
    one_hot = torch.nn.functional.one_hot(y, classes).to(torch.float64)  # [n, classes]
    size = d * classes
    # d loss / d scores = (softmax − one-hot) / n, so the gradient is
    # (xᵀ·softmax − xᵀ·one-hot) / n: the second product once, the first on
    # probabilities, all below 1
    rows = exact.ExactProduct(x, _FEATURE_BITS)
    columns = exact.ExactProduct(x.T, _FEATURE_BITS)
    targets = columns(one_hot, b_top=1)
    counts, labels = one_hot.sum(dim=0), y[:, None]

    def objective(theta: torch.Tensor) -> tuple[float, torch.Tensor]:
        weights, bias = theta[:size].view(d, classes), theta[size:]
        scores = _scores(rows, weights, bias)
        fit_term = -torch.log_softmax(scores, dim=1).gather(1, labels).sum() / n
        loss = fit_term + (weights * weights).sum(dim=1).sum() / (2 * LOGISTIC_C * n)
        p = torch.softmax(scores, dim=1)
        grad_w = columns(p, bits=_PRODUCT_BITS, b_top=1)
        grad_w = (grad_w - targets) / n + weights / (LOGISTIC_C * n)
        grad_b = (p.sum(dim=0) - counts) / n
        return loss.item(), torch.cat([grad_w.reshape(-1), grad_b])

    theta, largest = _lbfgs(objective, torch.zeros(size + classes, dtype=torch.float64))
    weights, bias = theta[:size].view(d, classes), theta[size:]
    if largest <= LOGISTIC_TOLERANCE:
        return weights, bias, True
    warnings.warn(
        f"features: the logistic probe did not converge within "
        f"{LOGISTIC_MAX_ITER} iterations (largest gradient {largest:.1e}), "
        f"so its accuracy depends on where the optimiser stopped "
        f"(ProbeResult.converged is False); check the features",
        RuntimeWarning,
        stacklevel=3,
    )
    return weights, bias, False


def logistic_probe(
    features, labels, *, test_fraction: float = 0.5, seed: int = 0
) -> ProbeResult:
    """Fit a multinomial logistic-regression read-out from ``features`` [N, d] to
    ``labels`` [N].

    The same split as ``linear_probe`` (shuffled with ``seed``; ``test_fraction`` held
    out). Each feature is standardised with the fitted rows' mean and spread, then
    scores hW + b are fitted to maximise the likelihood of the labels with an L2 penalty
    |W|²/(2C) (C = LOGISTIC_C, bias unpenalised): scikit-learn's
    ``LogisticRegression(C=LOGISTIC_C)``, written in torch float64 and fitted by
    full-batch L-BFGS (tests/test_probes.py compares the two). The prediction is
    argmax(hW + b), a linear read-out like the least-squares one. If the fitted rows
    hold one class only, that class is predicted everywhere. A fit that does not
    converge within LOGISTIC_MAX_ITER iterations warns and returns converged=False.
    """
    features, labels = _features_labels(features, labels)
    fit, test = _split(features.shape[0], test_fraction, seed)
    # sorted; only the classes the fitted rows hold get a score
    classes = labels[fit].unique()
    if len(classes) == 1:
        return _result(torch.full_like(labels, int(classes[0])), labels, fit, test)
    x = exact.on_grid(_standardised(features, fit), _FEATURE_BITS)
    weights, bias, converged = _fit_logistic(
        x[fit], torch.searchsorted(classes, labels[fit]), len(classes)
    )
    scores = _scores(exact.ExactProduct(x, _FEATURE_BITS), weights, bias)
    predicted = classes[scores.argmax(dim=1)]
    return _result(predicted, labels, fit, test, converged)


def variance_explained(features, labels) -> float:
    """Fraction of the total variance of ``features`` [N, d] explained by the group
    means of ``labels`` [N].

    1 − (within-group sum of squares) / (total sum of squares): 1 when every vector is
    its group's mean, 0 when the groups have the same mean. Used to ask "how much of
    this layer is position, how much is token?".
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
    sums = torch.zeros(classes, features.shape[1], dtype=features.dtype).index_add_(
        0, labels, features
    )
    means = sums / counts[:, None]
    within = ((features - means[labels]) ** 2).sum()
    return (1 - within / total).item()
