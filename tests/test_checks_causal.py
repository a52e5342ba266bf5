"""The lesson 09 checks: reference passes, known mistakes are named, junk never raises."""

import math

import numpy as np
import pytest
import torch

from course_utils.checks import check_bos_share, check_uniform_causal_weights
from conftest import verdict


def reference_weights(n):
    visible = torch.ones(n, n).tril()
    return visible / visible.sum(dim=-1, keepdim=True)


def softmax_weights(n):
    logits = torch.zeros(n, n).masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(logits, dim=-1)


def reference_share(t, b):
    return math.exp(b) / (math.exp(b) + t)


def test_references_pass(capsys):
    assert verdict(capsys, check_uniform_causal_weights, reference_weights)[0] is True
    assert verdict(capsys, check_uniform_causal_weights, softmax_weights)[0] is True
    assert verdict(capsys, check_uniform_causal_weights, lambda n: reference_weights(n).double().numpy())[0] is True
    assert verdict(capsys, check_bos_share, reference_share)[0] is True
    assert verdict(capsys, check_bos_share, lambda t, b: torch.tensor(b).exp() / (torch.tensor(b).exp() + t))[0] is True


@pytest.mark.parametrize(
    "answer, hint",
    [
        (lambda n: torch.ones(n, n).tril() / torch.arange(n)[:, None], "did you divide by t?"),
        (lambda n: torch.ones(n, n).tril() / torch.arange(2, n + 2)[:, None], "not 1/(t + 2)"),
        (lambda n: torch.ones(n, n).tril() / torch.arange(1, n + 1)[None, :], "counts[:, None]"),
        (lambda n: torch.full((n, n), 1.0 / n), "without a mask"),
        (lambda n: torch.ones(n, n).tril(), "do not sum to 1"),
        (lambda n: torch.ones(n, n).tril() / n, "You divided by n"),
        (lambda n: reference_weights(n).T, "transpose"),
        (lambda n: torch.ones(n, n).triu() / torch.arange(n, 0, -1)[:, None], "must not see the future"),
        (lambda n: torch.softmax(torch.ones(n, n).tril(), dim=-1), "above the diagonal"),
        (lambda n: torch.zeros(n, n).masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf")),
         "masked logits"),
    ],
)
def test_uniform_causal_weights_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_uniform_causal_weights, answer)
    assert result is False and hint in line


@pytest.mark.parametrize(
    "answer, hint",
    [
        (lambda t, b: 1 / (t + 1), "left out the bonus b"),
        (lambda t, b: math.exp(b) / (math.exp(b) + t + 1), "counted BOS twice"),
        (lambda t, b: b / (b + t) if b + t else 1.0, "use e^b, not b"),
        (lambda t, b: math.exp(b) / (1 + t), "not normalised"),
        (lambda t, b: t / (math.exp(b) + t), "the t other keys together"),
        (lambda t, b: math.exp(b) / t, "ZeroDivisionError"),
        (lambda t, b: torch.tensor(math.exp(b)) / torch.tensor(float(t)), "did you divide by t?"),
    ],
)
def test_bos_share_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_bos_share, answer)
    assert result is False and hint in line


def test_division_by_zero_in_bos_share_explains_the_denominator(capsys):
    _, line = verdict(capsys, check_bos_share, lambda t, b: 1 / t)
    assert "denominator is e^b + t" in line


def _raises(*args):
    raise NotImplementedError()


def _nan(*args):
    return float("nan")


def _nan_matrix(n):
    return torch.full((n, n), float("nan"))


@pytest.mark.parametrize("check", [check_uniform_causal_weights, check_bos_share])
@pytest.mark.parametrize(
    "junk",
    [None, 3, "text", _raises, _nan, _nan_matrix, lambda *a: torch.zeros(2), lambda *a: "yes", lambda *a: (1, 2),
     lambda *a: np.ones((2, 2, 2))],
)
def test_junk_answers_give_false_and_never_raise(capsys, check, junk):
    result, line = verdict(capsys, check, junk)
    assert result is False
    if junk is _raises:
        assert "NotImplementedError" in line
