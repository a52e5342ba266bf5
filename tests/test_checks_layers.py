"""Tests for course_utils.checks.layers (lesson 08): check_position_labels, check_variance_explained_by.

Contract: a check returns True/False, prints exactly one line starting with "✅ Correct" or
"❌ Not yet:", names a known mistake in that line, and never raises.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from course_utils.checks import check_position_labels, check_variance_explained_by
from course_utils.checks.layers import _split, _variance_cases
from conftest import verdict

# Some answers here are built from the course's own functions: the guard stays off.
pytestmark = pytest.mark.usefixtures("course_left_on")


# --- answers written the way a learner would -------------------------------------------------

def labels_repeat(batch_size, n):
    return torch.arange(n).repeat(batch_size)


def labels_loop(batch_size, n):
    return torch.tensor([t for _ in range(batch_size) for t in range(n)])


def labels_modulo(batch_size, n):
    return torch.arange(batch_size * n) % n


def labels_expand(batch_size, n):
    return torch.arange(n).expand(batch_size, n).reshape(-1)


def variance_reference(features, labels):
    centred = features - features.mean(dim=0)
    means = torch.stack([features[labels == g].mean(dim=0) for g in labels.unique()])
    index = torch.searchsorted(labels.unique(), labels)
    return 1 - ((features - means[index]) ** 2).sum() / (centred**2).sum()


def variance_between(features, labels):
    grand = features.mean(dim=0)
    between = sum((labels == g).sum() * ((features[labels == g].mean(dim=0) - grand) ** 2).sum()
                  for g in labels.unique())
    return (between / ((features - grand) ** 2).sum()).item()


def variance_library(features, labels):
    from course_utils import variance_explained

    return variance_explained(features, labels)


@pytest.mark.parametrize("check, answer", [
    (check_position_labels, labels_repeat),
    (check_position_labels, labels_loop),
    (check_position_labels, labels_modulo),
    (check_position_labels, labels_expand),
    (check_position_labels, lambda b, n: torch.arange(n, dtype=torch.int32).repeat(b)),
    (check_variance_explained_by, variance_reference),
    (check_variance_explained_by, variance_between),
    (check_variance_explained_by, variance_library),
    (check_variance_explained_by, lambda f, y: float(variance_reference(f, y))),
], ids=["labels-repeat", "labels-loop", "labels-modulo", "labels-expand", "labels-int32",
        "var-ref", "var-between", "var-library", "var-float"])
def test_right_answers_pass(capsys, check, answer):
    result, line = verdict(capsys, check, answer)
    assert result is True, line


LABEL_MISTAKES = {
    "repeat_interleave": (lambda b, n: torch.arange(n).repeat_interleave(b), "repeat_interleave"),
    "starts at 1": (lambda b, n: torch.arange(1, n + 1).repeat(b), "start at 0"),
    "not flattened": (lambda b, n: torch.arange(n).repeat(b, 1), ".reshape(-1)"),
    "row index": (lambda b, n: torch.arange(b * n), "starts again at 0 in every sequence"),
    "sequence index": (lambda b, n: torch.arange(b).repeat_interleave(n), "sequence index"),
    "floats": (lambda b, n: torch.arange(n).repeat(b).float(), "integer class ids"),
    "numpy": (lambda b, n: np.tile(np.arange(n), b), "integer class ids"),
}


@pytest.mark.parametrize("name", LABEL_MISTAKES)
def test_label_mistakes_are_named(capsys, name):
    answer, hint = LABEL_MISTAKES[name]
    result, line = verdict(capsys, check_position_labels, answer)
    assert result is False
    assert hint in line, line


def _grand(f):
    return f.mean(dim=0)


def _within(f, y):
    index = torch.searchsorted(y.unique(), y)
    means = torch.stack([f[y == g].mean(dim=0) for g in y.unique()])
    return ((f - means[index]) ** 2), means


def var_inverted(f, y):
    return _within(f, y)[0].sum() / ((f - _grand(f)) ** 2).sum()


def var_uncentred(f, y):
    return 1 - _within(f, y)[0].sum() / (f**2).sum()


def var_unweighted(f, y):
    _, means = _within(f, y)
    return ((means - _grand(f)) ** 2).sum() / ((f - _grand(f)) ** 2).sum()


def var_mean_of_means(f, y):
    _, means = _within(f, y)
    counts = torch.stack([(y == g).sum() for g in y.unique()])
    return (counts[:, None] * (means - means.mean(dim=0)) ** 2).sum() / ((f - _grand(f)) ** 2).sum()


def var_per_dimension(f, y):
    return (1 - _within(f, y)[0].sum(dim=0) / ((f - _grand(f)) ** 2).sum(dim=0)).mean()


def var_empty_groups(f, y):
    groups = range(int(y.max()) + 1)
    between = sum((y == g).sum() * ((f[y == g].mean(dim=0) - _grand(f)) ** 2).sum() for g in groups)
    return between / ((f - _grand(f)) ** 2).sum()


VARIANCE_MISTAKES = {
    "empty groups": (var_empty_groups, "labels.unique()"),
    "inverted": (var_inverted, "NOT explained"),
    "uncentred": (var_uncentred, "subtract features.mean(0)"),
    "unweighted": (var_unweighted, "weighted by the group's size"),
    "mean of means": (var_mean_of_means, "not the average of the group means"),
    "per dimension": (var_per_dimension, "averaged a share per dimension"),
}


@pytest.mark.parametrize("name", VARIANCE_MISTAKES)
def test_variance_mistakes_are_named(capsys, name):
    answer, hint = VARIANCE_MISTAKES[name]
    result, line = verdict(capsys, check_variance_explained_by, answer)
    assert result is False
    assert hint in line, line


def test_the_first_variance_case_tells_every_mistake_apart():
    features, labels = _variance_cases()[0]
    answers = _split(features, labels)
    values = list(answers.values())
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            assert not math.isclose(values[i], values[j], rel_tol=1e-3), (list(answers)[i], list(answers)[j])


def _raises(*_):
    raise NotImplementedError


JUNK = [None, 3, "text", _raises, lambda *a: None, lambda *a: "text", lambda *a: (1, 2),
        lambda *a: float("nan"), lambda *a: torch.full((2, 2), float("nan")), lambda *a: torch.zeros(3),
        lambda *a: 1 / 0]


@pytest.mark.parametrize("check", [check_position_labels, check_variance_explained_by])
@pytest.mark.parametrize("answer", JUNK, ids=[f"junk{i}" for i in range(len(JUNK))])
def test_junk_answers_fail_without_raising(capsys, check, answer):
    result, _ = verdict(capsys, check, answer)
    assert result is False


def test_stub_and_nan_messages_say_what_to_do(capsys):
    _, line = verdict(capsys, check_position_labels, _raises)
    assert "NotImplementedError" in line
    _, line = verdict(capsys, check_variance_explained_by, lambda *a: float("nan"))
    assert "NaN" in line
    _, line = verdict(capsys, check_variance_explained_by, lambda *a: torch.zeros(3))
    assert "expected shape ()" in line
