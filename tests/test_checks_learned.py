"""Tests for course_utils.checks.learned (lesson 07): check_add_learned_code,
check_cosine_similarity_matrix, check_neighbour_similarity.

Contract: a check returns True/False, prints exactly one line starting with "✅ Correct" or
"❌ Not yet:", names a known mistake in that line, and never raises.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils.checks import check_add_learned_code, check_cosine_similarity_matrix, check_neighbour_similarity
from conftest import COMMON_JUNK, raises_not_implemented, verdict


# --- answers written the way a learner would -------------------------------------------------

def add_ref(x, table):
    return x + table[: x.shape[1]]


def add_loop(x, table):
    out = x.clone()
    for t in range(x.shape[1]):
        out[:, t] += table[t]
    return out


def add_embedding(x, table):
    return x + torch.nn.functional.embedding(torch.arange(x.shape[1]), table)[None]


def cos_ref(table):
    unit = table / table.norm(dim=1, keepdim=True)
    return unit @ unit.T


def cos_torch(table):
    return torch.nn.functional.cosine_similarity(table[:, None, :], table[None, :, :], dim=-1)


def neighbour_ref(sim, offset):
    return torch.diagonal(sim, offset).mean()


def neighbour_loop(sim, offset):
    n = sim.shape[0]
    return sum(float(sim[t, t + offset]) for t in range(n - offset)) / (n - offset)


@pytest.mark.parametrize("check, answer", [
    (check_add_learned_code, add_ref),
    (check_add_learned_code, add_loop),
    (check_add_learned_code, add_embedding),
    (check_add_learned_code, lambda x, table: (x.double() + table.double()[: x.shape[1]]).numpy()),
    (check_cosine_similarity_matrix, cos_ref),
    (check_cosine_similarity_matrix, cos_torch),
    (check_cosine_similarity_matrix, lambda t: cos_ref(t.double()).tolist()),
    (check_neighbour_similarity, neighbour_ref),
    (check_neighbour_similarity, neighbour_loop),
    (check_neighbour_similarity, lambda sim, k: np.diagonal(sim.numpy(), k).mean()),
], ids=["add-ref", "add-loop", "add-embedding", "add-numpy", "cos-ref", "cos-torch", "cos-list",
        "neighbour-ref", "neighbour-loop", "neighbour-numpy"])
def test_right_answers_pass(capsys, check, answer):
    result, line = verdict(capsys, check, answer)
    assert result is True, line


ADD_MISTAKES = {
    "whole table": (lambda x, t: x + t, "whole table"),
    "whole table, rows first": (lambda x, t: t + x, "whole table"),
    "off by one": (lambda x, t: x + t[1: x.shape[1] + 1], "Off by one"),
    "last rows": (lambda x, t: x + t[-x.shape[1]:], "last n rows"),
    "batch index": (lambda x, t: x + t[: x.shape[0]][:, None, :], "index in the batch"),
    "sliced by batch": (lambda x, t: x + t[: x.shape[0]], "batch size"),
    "multiplied": (lambda x, t: x * t[: x.shape[1]], "multiplied"),
    "code only": (lambda x, t: t[: x.shape[1]], "code alone"),
    "code only, broadcast": (lambda x, t: t[: x.shape[1]].expand_as(x).clone(), "code alone"),
}


@pytest.mark.parametrize("name", ADD_MISTAKES)
def test_add_mistakes_are_named(capsys, name):
    answer, hint = ADD_MISTAKES[name]
    result, line = verdict(capsys, check_add_learned_code, answer)
    assert result is False
    assert hint in line, line


def test_add_message_shows_input_expected_and_got(capsys):
    _, line = verdict(capsys, check_add_learned_code, lambda x, t: x + 1.0)
    assert line.startswith("❌ Not yet: for x of shape (3, 5, 4) (batch, n, d) and table of shape (8, 4)")
    assert "expected [" in line and "got [" in line


def test_add_does_not_accept_an_answer_that_edits_only_some_rows(capsys):
    result, _ = verdict(capsys, check_add_learned_code, lambda x, t: torch.cat([x[:, :1] + t[:1], x[:, 1:]], dim=1))
    assert result is False


def _gram(t):
    return t @ t.T


def _columns(t):
    c = t / t.norm(dim=0, keepdim=True)
    return c @ c.T


def _unit(t):
    return t / t.norm(dim=1, keepdim=True)


COSINE_MISTAKES = {
    "gram": (_gram, "Gram matrix"),
    "columns": (_columns, "normalised the columns"),
    "one side (left)": (lambda t: _unit(t) @ t.T, "only one side"),
    "one side (right)": (lambda t: t @ _unit(t).T, "only one side"),
    "cosine distance": (lambda t: 1 - cos_ref(t), "cosine distance"),
    "euclidean": (lambda t: torch.cdist(t, t), "Euclidean distances"),
    "squared norms": (lambda t: _gram(t) / (t.norm(dim=1)[:, None] ** 2 * t.norm(dim=1)[None, :] ** 2), "squared"),
    "dimensions": (lambda t: _unit(t.T) @ _unit(t.T).T, "compares the dimensions"),
}


@pytest.mark.parametrize("name", COSINE_MISTAKES)
def test_cosine_matrix_mistakes_are_named(capsys, name):
    answer, hint = COSINE_MISTAKES[name]
    result, line = verdict(capsys, check_cosine_similarity_matrix, answer)
    assert result is False
    assert hint in line, line


NEIGHBOUR_MISTAKES = {
    "main diagonal": (lambda s, k: torch.diagonal(s).mean(), "main diagonal"),
    "below": (lambda s, k: torch.diagonal(s, -k).mean(), "below the main one"),
    "both": (lambda s, k: torch.cat([torch.diagonal(s, k), torch.diagonal(s, -k)]).mean(), "both diagonals"),
    "sum": (lambda s, k: torch.diagonal(s, k).sum(), "summed"),
    "divided by n": (lambda s, k: torch.diagonal(s, k).sum() / s.shape[0], "divided by n"),
    "whole matrix": (lambda s, k: s.mean(), "whole matrix"),
}


@pytest.mark.parametrize("name", NEIGHBOUR_MISTAKES)
def test_neighbour_mistakes_are_named(capsys, name):
    answer, hint = NEIGHBOUR_MISTAKES[name]
    result, line = verdict(capsys, check_neighbour_similarity, answer)
    assert result is False
    assert hint in line, line


def test_neighbour_offset_zero_and_last_diagonal_are_tested(capsys):
    # right except at offset 0 (returns 1, as for a cosine matrix's diagonal) -> must fail
    result, _ = verdict(capsys, check_neighbour_similarity,
                        lambda s, k: torch.tensor(1.0) if k == 0 else torch.diagonal(s, k).mean())
    assert result is False
    # breaks on a diagonal of one entry -> must fail without raising
    result, line = verdict(capsys, check_neighbour_similarity,
                           lambda s, k: torch.diagonal(s, k)[:-1].mean() if s.shape[0] - k == 1 else
                           torch.diagonal(s, k).mean())
    assert result is False


JUNK = {
    **COMMON_JUNK,
    "nan tensor": lambda *a: torch.full((4,), float("nan")),
    "array of objects": lambda *a: np.array([object()]),
    "nan like the input": lambda first, *rest: torch.full_like(first, float("nan")),
}

CHECKS = [check_add_learned_code, check_cosine_similarity_matrix, check_neighbour_similarity]
IDS = ["add", "cosine-matrix", "neighbour"]


@pytest.mark.parametrize("check", CHECKS, ids=IDS)
@pytest.mark.parametrize("name", JUNK)
def test_junk_gives_one_not_yet_line(capsys, check, name):
    result, _ = verdict(capsys, check, JUNK[name])
    assert result is False


@pytest.mark.parametrize("check", CHECKS, ids=IDS)
def test_not_a_function(capsys, check):
    result, line = verdict(capsys, check, 42)
    assert result is False and "expected a function" in line


@pytest.mark.parametrize("check", CHECKS, ids=IDS)
def test_stub_says_replace_not_implemented(capsys, check):
    _, line = verdict(capsys, check, raises_not_implemented)
    assert "NotImplementedError" in line


def test_checks_do_not_modify_learner_visible_state(capsys):
    """An answer that edits its inputs in place still gets judged on fresh inputs every time."""
    def in_place(x, table):
        x += table[: x.shape[1]]
        table.zero_()
        return x

    result, line = verdict(capsys, check_add_learned_code, in_place)
    assert result is True, line
