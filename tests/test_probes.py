"""Linear probes and the variance split."""

import pytest
import torch

from course_utils.probes import linear_probe, variance_explained


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


def test_probe_options_are_checked():
    x, y = clusters()
    with pytest.raises(ValueError, match="test_fraction"):
        linear_probe(x, y, test_fraction=1.5)
    with pytest.raises(ValueError, match="ridge"):
        linear_probe(x, y, ridge=0)
    with pytest.raises(ValueError, match="variance"):
        variance_explained(torch.ones(5, 2), torch.arange(5))
