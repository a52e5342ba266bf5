"""Tests for course_utils.checks.combine (lesson 05): check_block_parameters, check_as_addition,
check_cosine_similarity.

Contract: a check returns True/False, prints exactly one line starting with "✅ Correct" or
"❌ Not yet:", names a known mistake in that line, and never raises.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course_utils.checks import check_as_addition, check_block_parameters, check_cosine_similarity
from conftest import COMMON_JUNK, raises_not_implemented, verdict


# --- answers written the way a learner would -------------------------------------------------

def block_by_pieces(d, d_ff):
    return 2 * 2 * d + 3 * (d * d + d) + (d * d + d) + (d * d_ff + d_ff) + (d_ff * d + d)


def block_torch(d, d_ff):
    layers = [torch.nn.LayerNorm(d), torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d), torch.nn.LayerNorm(d),
              torch.nn.Linear(d, d_ff), torch.nn.Linear(d_ff, d)]
    return sum(p.numel() for layer in layers for p in layer.parameters())


def as_addition_ref(x, p, w):
    d_x = x.shape[1]
    return x @ w[:, :d_x].T + p @ w[:, d_x:].T


def as_addition_cat(x, p, w):
    return torch.nn.functional.linear(torch.cat([x, p], dim=1), w)


def cosine_ref(a, b):
    return (a * b).sum(dim=1) / (a.norm(dim=1) * b.norm(dim=1))


@pytest.mark.parametrize("check, answer", [
    (check_block_parameters, block_by_pieces),
    (check_block_parameters, block_torch),
    (check_block_parameters, lambda d, d_ff: float(block_by_pieces(d, d_ff))),
    (check_block_parameters, lambda d, d_ff: torch.tensor(block_by_pieces(d, d_ff))),
    (check_as_addition, as_addition_ref),
    (check_as_addition, as_addition_cat),
    (check_as_addition, lambda x, p, w: (as_addition_ref(x.double(), p.double(), w.double())).numpy()),
    (check_cosine_similarity, cosine_ref),
    (check_cosine_similarity, lambda a, b: torch.nn.functional.cosine_similarity(a, b, dim=1)),
    (check_cosine_similarity, lambda a, b: [float(x @ y / (x.norm() * y.norm())) for x, y in zip(a, b)]),
], ids=["block-pieces", "block-torch", "block-float", "block-tensor", "add-ref", "add-cat", "add-numpy",
        "cos-ref", "cos-torch", "cos-list"])
def test_right_answers_pass(capsys, check, answer):
    result, line = verdict(capsys, check, answer)
    assert result is True, line


def total(d, d_ff):
    return block_by_pieces(d, d_ff)


BLOCK_MISTAKES = {
    "no biases": (lambda d, f: 4 * d * d + 2 * d * f + 4 * d, "forgot the biases"),
    "no layernorm": (lambda d, f: total(d, f) - 4 * d, "forgot the two LayerNorms"),
    "layernorm weight only": (lambda d, f: total(d, f) - 2 * d, "weight AND a bias"),
    "one layernorm": (lambda d, f: total(d, f) - 2 * d, "two LayerNorms"),
    "qkv as one": (lambda d, f: total(d, f) - 2 * d * d - 2 * d, "Q, K and V"),
    "no output projection": (lambda d, f: total(d, f) - d * d - d, "output projection"),
    "one mlp matrix": (lambda d, f: total(d, f) - d * f - d, "MLP's two matrices"),
    "d_ff = 4d": (lambda d, f: total(d, 4 * d), "d_ff argument"),
}


@pytest.mark.parametrize("name", BLOCK_MISTAKES)
def test_block_mistakes_are_named(capsys, name):
    answer, hint = BLOCK_MISTAKES[name]
    result, line = verdict(capsys, check_block_parameters, answer)
    assert result is False
    assert hint in line, line


def test_block_message_shows_input_expected_and_got(capsys):
    _, line = verdict(capsys, check_block_parameters, lambda d, f: 12 * d * d)
    assert line.startswith("❌ Not yet: for d_model = 32, d_ff = 128 expected 12704, got 12288.")


def _split(x, p, w):
    d_x = x.shape[1]
    return w[:, :d_x], w[:, d_x:]


ADDITION_MISTAKES = {
    "token part only": (lambda x, p, w: x @ _split(x, p, w)[0].T, "left out the position part"),
    "position part only": (lambda x, p, w: p @ _split(x, p, w)[1].T, "only the position part"),
    "no transpose": (lambda x, p, w: x @ _split(x, p, w)[0] + p @ _split(x, p, w)[1], "transpose"),
    "swapped": (lambda x, p, w: x @ _split(x, p, w)[1].T + p @ _split(x, p, w)[0].T, "swapped"),
    "x + p": (lambda x, p, w: x + p, "added x and p directly"),
}


@pytest.mark.parametrize("name", ADDITION_MISTAKES)
def test_addition_mistakes_are_named(capsys, name):
    answer, hint = ADDITION_MISTAKES[name]
    result, line = verdict(capsys, check_as_addition, answer)
    assert result is False
    assert hint in line, line


def test_addition_split_at_the_wrong_column_fails_without_raising(capsys):
    result, line = verdict(capsys, check_as_addition,
                           lambda x, p, w: x @ w[:, p.shape[1]:].T + p @ w[:, :p.shape[1]].T)
    assert result is False


COSINE_MISTAKES = {
    "dot product": (lambda a, b: (a * b).sum(dim=1), "dot product"),
    "norm of a only": (lambda a, b: (a * b).sum(dim=1) / a.norm(dim=1), "only one of the two lengths"),
    "norm of b only": (lambda a, b: (a * b).sum(dim=1) / b.norm(dim=1), "only one of the two lengths"),
    "squared norms": (lambda a, b: (a * b).sum(dim=1) / (a.norm(dim=1) ** 2 * b.norm(dim=1) ** 2), "squared"),
    "mean": (lambda a, b: (a * b).mean(dim=1) / (a.norm(dim=1) * b.norm(dim=1)), "averaged"),
    "columns": (lambda a, b: (torch.nn.functional.normalize(a, dim=0) * torch.nn.functional.normalize(b, dim=0))
                .sum(dim=1), "columns (dim=0)"),
    "all pairs": (lambda a, b: torch.nn.functional.normalize(a, dim=1) @ torch.nn.functional.normalize(b, dim=1).T,
                  "all pairs"),
}


@pytest.mark.parametrize("name", COSINE_MISTAKES)
def test_cosine_mistakes_are_named(capsys, name):
    answer, hint = COSINE_MISTAKES[name]
    result, line = verdict(capsys, check_cosine_similarity, answer)
    assert result is False
    assert hint in line, line


JUNK = {
    **COMMON_JUNK,
    "nan tensor": lambda *a: torch.full((4,), float("nan")),
    "array of objects": lambda *a: np.array([object()]),
}


@pytest.mark.parametrize("check", [check_block_parameters, check_as_addition, check_cosine_similarity],
                         ids=["block", "addition", "cosine"])
@pytest.mark.parametrize("name", JUNK)
def test_junk_gives_one_not_yet_line(capsys, check, name):
    result, _ = verdict(capsys, check, JUNK[name])
    assert result is False


@pytest.mark.parametrize("check", [check_block_parameters, check_as_addition, check_cosine_similarity],
                         ids=["block", "addition", "cosine"])
def test_not_a_function(capsys, check):
    result, line = verdict(capsys, check, 42)
    assert result is False and "expected a function" in line


@pytest.mark.parametrize("check", [check_block_parameters, check_as_addition, check_cosine_similarity],
                         ids=["block", "addition", "cosine"])
def test_stub_says_replace_not_implemented(capsys, check):
    _, line = verdict(capsys, check, raises_not_implemented)
    assert "NotImplementedError" in line
