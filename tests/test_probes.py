"""Linear probes (least squares and logistic regression) and the variance split."""

import warnings

import pytest
import torch

from course_utils import exact, probes
from course_utils.probes import linear_probe, logistic_probe, variance_explained


def clusters(n_per=40, classes=4, d=6, spread=0.1, seed=0):
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(classes, d, generator=g, dtype=torch.float64) * 3
    labels = torch.arange(classes).repeat_interleave(n_per)
    return centres[labels] + spread * torch.randn(len(labels), d, generator=g, dtype=torch.float64), labels


def test_probe_reads_separable_labels_and_not_random_ones():
    x, y = clusters()
    assert linear_probe(x, y).test_accuracy == 1.0
    shuffled = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(1))]
    assert linear_probe(x, shuffled).test_accuracy < 0.5


def test_probe_is_deterministic_and_splits_by_fraction():
    x, y = clusters(spread=2.0)
    assert linear_probe(x, y, seed=3) == linear_probe(x, y, seed=3)
    assert 0 <= linear_probe(x, y, test_fraction=0.25).test_accuracy <= 1


def test_variance_explained_is_one_for_pure_groups_and_near_zero_for_noise():
    x, y = clusters(spread=0.0)
    assert variance_explained(x, y) == pytest.approx(1.0)
    g = torch.Generator().manual_seed(0)
    noise = torch.randn(400, 5, generator=g, dtype=torch.float64)
    assert variance_explained(noise, torch.arange(400) % 4) < 0.05
    x, y = clusters(spread=1.0)
    manual_within = sum(((x[y == c] - x[y == c].mean(0)) ** 2).sum() for c in range(4))
    manual = 1 - manual_within / ((x - x.mean(0)) ** 2).sum()
    assert variance_explained(x, y) == pytest.approx(manual.item())


@pytest.mark.parametrize(
    "features, labels, error, word",
    [
        (torch.randn(10), torch.zeros(10, dtype=torch.long), ValueError, "features"),
        (torch.randn(10, 3), torch.zeros(10), TypeError, "labels"),
        (torch.randn(10, 3), torch.zeros(9, dtype=torch.long), ValueError, "labels"),
        (torch.randn(10, 3), -torch.ones(10, dtype=torch.long), ValueError, "labels"),
        ("x", torch.zeros(10, dtype=torch.long), TypeError, "features"),
        (torch.randn(2, 3), torch.zeros(2, dtype=torch.long), ValueError, "features"),
    ],
)
def test_bad_input_is_named(features, labels, error, word):
    with pytest.raises(error, match=word):
        linear_probe(features, labels)
    with pytest.raises(error, match=word):
        logistic_probe(features, labels)


def test_probe_options_are_checked():
    x, y = clusters()
    with pytest.raises(ValueError, match="test_fraction"):
        linear_probe(x, y, test_fraction=1.5)
    with pytest.raises(ValueError, match="ridge"):
        linear_probe(x, y, ridge=0)
    with pytest.raises(ValueError, match="test_fraction"):
        logistic_probe(x, y, test_fraction=1.0)
    with pytest.raises(ValueError, match="seed"):
        logistic_probe(x, y, seed=-1)
    with pytest.raises(ValueError, match="variance"):
        variance_explained(torch.ones(5, 2), torch.arange(5))


# --- logistic_probe ------------------------------------------------------------------------------

def along_a_line(classes=8, per_class=300, noise=0.1, extra_dims=0, seed=0):
    """Class k near x = k on one axis (plus small noise in ``extra_dims`` other directions)."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(classes).repeat(per_class)
    x = labels[:, None].double() + noise * torch.randn(len(labels), 1, generator=g, dtype=torch.float64)
    if extra_dims:
        x = torch.cat([x, noise * torch.randn(len(labels), extra_dims, generator=g, dtype=torch.float64)], 1)
    return x, labels


@pytest.mark.parametrize("extra_dims", [0, 1, 3])
def test_least_squares_masks_classes_along_a_line_and_logistic_does_not(extra_dims):
    """Regression onto one-hot labels: every class's fitted line passes through (mean x, 1/K), so
    only the two end classes are ever predicted (accuracy about 2/K); softmax scores separate them."""
    x, y = along_a_line(extra_dims=extra_dims)
    assert linear_probe(x, y).test_accuracy == pytest.approx(2 / 8, abs=0.03)
    assert logistic_probe(x, y).test_accuracy == 1.0
    assert logistic_probe(x, y).train_accuracy == 1.0


def test_a_few_classes_along_a_line_are_already_masked():
    x, y = along_a_line(classes=3, noise=0.15)
    assert linear_probe(x, y).test_accuracy < 0.9
    assert logistic_probe(x, y).test_accuracy == 1.0


def test_logistic_probe_reads_separable_labels_and_not_random_ones():
    x, y = clusters()
    assert logistic_probe(x, y).test_accuracy == 1.0
    shuffled = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(1))]
    assert logistic_probe(x, shuffled).test_accuracy < 0.5


def test_logistic_probe_uses_the_same_split_as_the_least_squares_probe():
    """With features that carry no information both probes predict the fitted rows' most common
    class, so their accuracies agree exactly only if they split the rows the same way."""
    labels = torch.randint(0, 3, (41,), generator=torch.Generator().manual_seed(0))
    constant = torch.ones(41, 2, dtype=torch.float64)
    results = set()
    for seed in range(6):
        for fraction in (0.3, 0.5):
            least_squares = linear_probe(constant, labels, seed=seed, test_fraction=fraction)
            logistic = logistic_probe(constant, labels, seed=seed, test_fraction=fraction)
            assert logistic.train_accuracy == pytest.approx(least_squares.train_accuracy)
            assert logistic.test_accuracy == pytest.approx(least_squares.test_accuracy)
            results.add(round(logistic.test_accuracy, 6))
    assert len(results) > 1  # the seeds really give different splits


def test_logistic_probe_is_deterministic_and_warning_free():
    x, y = clusters(spread=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = logistic_probe(x, y, seed=3)
        assert logistic_probe(x, y, seed=3) == first
        assert logistic_probe(x.float(), y, seed=3) == first  # computed in float64 either way
    assert 0 <= logistic_probe(x, y, test_fraction=0.25).test_accuracy <= 1


def test_logistic_probe_ignores_the_scale_of_a_feature():
    x, y = clusters(spread=1.0)
    scaled = x * torch.tensor([1e-6, 1.0, 1e6, 1.0, 1.0, 1.0], dtype=torch.float64)
    assert logistic_probe(scaled, y) == logistic_probe(x, y)


def test_logistic_probe_with_one_class_in_the_fitted_rows_predicts_it():
    x = torch.randn(6, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert logistic_probe(x, torch.zeros(6, dtype=torch.long)).test_accuracy == 1.0
    assert logistic_probe(x, torch.full((6,), 4)).train_accuracy == 1.0


def test_logistic_probe_says_when_a_fit_is_unfinished(monkeypatch):
    """If L-BFGS stops before converging, the accuracy would depend on where it stopped: a
    RuntimeWarning names the features, the result says converged=False, and the lesson goes on."""
    monkeypatch.setattr(probes, "LOGISTIC_MAX_ITER", 2)
    x, y = along_a_line(classes=5, per_class=20)
    with pytest.warns(RuntimeWarning, match="features.*did not converge within 2 iterations"):
        result = logistic_probe(x, y)
    assert result.converged is False


def test_probes_do_not_depend_on_the_order_of_a_products_terms(monkeypatch):
    """MKL sums a float64 product in an order that differs by CPU vendor. The probes' products
    are exact slice products, so a BLAS that summed in another order gives the same bits: here
    every product the probes make is computed with its terms in reverse order."""
    g = torch.Generator().manual_seed(3)
    centres = torch.randn(6, 40, generator=g, dtype=torch.float64)
    y = torch.randint(0, 6, (300,), generator=g)
    x = centres[y] + 2.0 * torch.randn(300, 40, generator=g, dtype=torch.float64)
    before = (probes.logistic_probe(x, y), probes.linear_probe(x, y))
    weights = probes._fit_logistic(exact.on_grid(x, probes._FEATURE_BITS), y, 6)
    real_bmm, real_matmul = torch.bmm, torch.Tensor.__matmul__
    monkeypatch.setattr(torch, "bmm", lambda a, b: real_bmm(a.flip(-1), b.flip(-2)))
    monkeypatch.setattr(torch.Tensor, "__matmul__",
                        lambda a, b: real_matmul(a.flip(-1), b.flip(-2)))
    reversed_sum = real_matmul(x[:, :40].flip(-1), x.T[:40].flip(-2))
    assert not torch.equal(reversed_sum, real_matmul(x, x.T))  # the order does matter
    assert (probes.logistic_probe(x, y), probes.linear_probe(x, y)) == before
    again = probes._fit_logistic(exact.on_grid(x, probes._FEATURE_BITS), y, 6)
    assert all(torch.equal(a, b) for a, b in zip(weights[:2], again[:2]))


@pytest.mark.parametrize("noise, classes", [(1.0, 16), (3.0, 8), (0.3, 5)])
def test_logistic_probe_fits_scikit_learns_objective(noise, classes):
    """The probe is scikit-learn's LogisticRegression(C=LOGISTIC_C) written in torch float64 (so it
    does not depend on OpenBLAS's CPU-chosen kernels): scikit-learn, run to a tight tolerance on the
    same standardised rows, reaches the same objective (to 1e-6: the probe stops once no gradient
    component exceeds 1e-6) and the same predictions."""
    from sklearn.linear_model import LogisticRegression

    g = torch.Generator().manual_seed(classes)
    centres = torch.randn(classes, 12, generator=g, dtype=torch.float64)
    y = torch.randint(0, classes, (600,), generator=g)
    x = centres[y] + noise * torch.randn(600, 12, generator=g, dtype=torch.float64)
    fit, _ = probes._split(600, 0.5, 0)
    standard = exact.on_grid(probes._standardised(x, fit), probes._FEATURE_BITS)
    weights, bias, converged = probes._fit_logistic(standard[fit], y[fit], classes)
    assert converged
    reference = LogisticRegression(C=probes.LOGISTIC_C, max_iter=20_000, tol=1e-12)
    reference.fit(standard[fit].numpy(), y[fit].numpy())
    def objective(w, b):
        return (torch.nn.functional.cross_entropy(standard[fit] @ w + b, y[fit])
                + (w * w).sum() / (2 * probes.LOGISTIC_C * len(fit))).item()

    best = objective(torch.from_numpy(reference.coef_.T.copy()), torch.from_numpy(reference.intercept_.copy()))
    assert -1e-9 <= objective(weights, bias) - best <= 1e-6
    assert torch.equal(torch.from_numpy(reference.predict(standard.numpy())), (standard @ weights + bias).argmax(1))
