"""The lesson 06 checks: reference passes, known mistakes are named, junk never raises."""

import math

import pytest
import torch

from course_utils.checks import check_is_offset_only, check_token_position_term
from conftest import verdict


def reference_term(x, f, w_q, w_k):
    return (x @ w_q) @ (f @ w_k).T


def reference_offset_only(scores):
    n = scores.shape[0]
    return all(bool(((torch.diagonal(scores, k) - torch.diagonal(scores, k)[0]).abs() <= 1e-6).all())
               for k in range(-n + 1, n))


def test_references_pass(capsys):
    assert verdict(capsys, check_token_position_term, reference_term)[0] is True
    assert verdict(capsys, check_is_offset_only, reference_offset_only)[0] is True


@pytest.mark.parametrize(
    "answer, hint",
    [
        (lambda x, f, w_q, w_k: (f @ w_k) @ (x @ w_q).T, "position–token"),
        (lambda x, f, w_q, w_k: (x @ w_k) @ (f @ w_q).T, "swapped the projections"),
        (lambda x, f, w_q, w_k: (x @ w_q) @ (f @ w_k).T / math.sqrt(w_q.shape[1]), "√d_k"),
        (lambda x, f, w_q, w_k: (x @ w_q) @ (f @ w_q).T, "w_q on both sides"),
        (lambda x, f, w_q, w_k: x @ f.T, "left out the projections"),
    ],
)
def test_token_position_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_token_position_term, answer)
    assert result is False and hint in line


def symmetric_only(scores):
    return bool(torch.allclose(scores, scores.T))


def exact_equality(scores):
    n = scores.shape[0]
    return all(bool((torch.diagonal(scores, k) == torch.diagonal(scores, k)[0]).all()) for k in range(-n + 1, n))


def main_diagonal_only(scores):
    return bool(((torch.diagonal(scores) - torch.diagonal(scores)[0]).abs() < 1e-6).all())


@pytest.mark.parametrize(
    "answer, hint",
    [(symmetric_only, "need not be symmetric"), (exact_equality, "tolerance"), (main_diagonal_only, "every diagonal")],
)
def test_offset_only_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_is_offset_only, answer)
    assert result is False and hint in line


def _raises(*args):
    raise NotImplementedError()


def _nan(*args):
    return torch.full((4, 3), float("nan"))


@pytest.mark.parametrize("check", [check_token_position_term, check_is_offset_only])
@pytest.mark.parametrize("junk", [None, 3, "text", _raises, _nan, lambda *a: torch.zeros(2), lambda *a: "yes"])
def test_junk_answers_give_false_and_never_raise(capsys, check, junk):
    result, line = verdict(capsys, check, junk)
    assert result is False
    if junk is _raises:
        assert "NotImplementedError" in line
