"""Tests for course_utils.checks.

Contract: a check returns True/False, prints exactly one line starting with "✅ Correct" or
"❌ Not yet:", names a known mistake in that line, and never raises.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from course_utils.checks import check_attention, check_causal_mask, check_permutation_matrix, check_softmax
from conftest import verdict


# --- reference answers and a right-shaped result for each check ------------------------------

def softmax_ref(x):
    return torch.softmax(x, dim=-1)


def attention_ref(q, k, v):
    return torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), dim=-1) @ v


def permutation_ref(order):
    return torch.eye(len(order))[order]


def causal_ref(n):
    return torch.ones(n, n, dtype=torch.bool).tril()


CHECKS = {
    "softmax": (check_softmax, softmax_ref, lambda x: tuple(x.shape)),
    "attention": (check_attention, attention_ref, lambda q, k, v: (q.shape[0], v.shape[1])),
    "permutation_matrix": (check_permutation_matrix, permutation_ref, lambda order: (len(order), len(order))),
    "causal_mask": (check_causal_mask, causal_ref, lambda n: (n, n)),
}


@pytest.mark.parametrize("name", CHECKS)
def test_reference_passes(capsys, name):
    check, reference, _ = CHECKS[name]
    result, line = verdict(capsys, check, reference)
    assert result is True


def test_alternative_correct_answers_pass(capsys):
    def softmax_numpy(x):  # a NumPy array is fine too
        x = x.numpy()
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def attention_float64(q, k, v):
        q, k, v = q.double(), k.double(), v.double()
        return torch.softmax(q @ k.T / q.shape[-1] ** 0.5, dim=-1) @ v

    assert verdict(capsys, check_softmax, softmax_numpy)[0] is True
    assert verdict(capsys, check_attention, attention_float64)[0] is True
    assert verdict(capsys, check_permutation_matrix, lambda o: torch.eye(len(o), dtype=torch.int64)[o])[0] is True
    assert verdict(capsys, check_causal_mask, lambda n: torch.tril(torch.ones(n, n)).bool())[0] is True


# --- realistic wrong answers: fail, and say why ---------------------------------------------

def softmax_no_division(x):
    return torch.exp(x)


def softmax_whole_tensor(x):
    e = torch.exp(x - x.max())
    return e / e.sum()


def softmax_dim0(x):
    e = torch.exp(x - x.max())
    return e / e.sum(dim=0, keepdim=True)


def softmax_no_max_subtraction(x):
    e = torch.exp(x)
    return e / e.sum(dim=-1, keepdim=True)


def attention_no_scale(q, k, v):
    return torch.softmax(q @ k.T, dim=-1) @ v


def attention_divided_by_d_k(q, k, v):
    return torch.softmax(q @ k.T / q.shape[-1], dim=-1) @ v


def attention_softmax_dim0(q, k, v):
    return torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), dim=0) @ v


def attention_returns_weights_too(q, k, v):
    w = torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), dim=-1)
    return w @ v, w


def attention_no_max_subtraction(q, k, v):
    s = torch.exp(q @ k.T / math.sqrt(q.shape[-1]))
    return (s / s.sum(dim=-1, keepdim=True)) @ v


def permutation_transposed(order):
    return torch.eye(len(order))[:, order]


def permutation_by_argsort(order):  # the inverse permutation, i.e. the transpose again
    return torch.eye(len(order))[torch.argsort(torch.tensor(order))]


def permutation_returns_order(order):
    return torch.tensor(order, dtype=torch.float32)


def permutation_forgot_return(order):
    torch.eye(len(order))[order]


def causal_upper(n):
    return torch.ones(n, n, dtype=torch.bool).triu()


def causal_inverted(n):
    return ~torch.ones(n, n, dtype=torch.bool).tril()


def causal_no_diagonal(n):
    return torch.ones(n, n, dtype=torch.bool).tril(-1)


def causal_float(n):
    return torch.ones(n, n).tril()


def causal_int(n):
    return torch.tril(torch.ones(n, n, dtype=torch.int64))


WRONG = [
    (check_softmax, softmax_no_division, ["without dividing by the sum"]),
    (check_softmax, softmax_whole_tensor, ["whole tensor", "dim=-1"]),
    (check_softmax, softmax_dim0, ["dim=0", "dim=-1"]),
    (check_softmax, softmax_no_max_subtraction, ["Subtract", "maximum", "overflows"]),
    (check_attention, attention_no_scale, ["not divided by √d_k"]),
    (check_attention, attention_divided_by_d_k, ["instead of √d_k"]),
    (check_attention, attention_softmax_dim0, ["dim=0", "dim=-1"]),
    (check_attention, attention_returns_weights_too, ["pair", "not the weights"]),
    (check_attention, attention_no_max_subtraction, ["overflows", "maximum"]),
    (check_permutation_matrix, permutation_transposed, ["transpose", "P[i, order[i]] = 1"]),
    (check_permutation_matrix, permutation_by_argsort, ["transpose"]),
    (check_permutation_matrix, permutation_returns_order, ["expected shape (3, 3)", "got (3,)"]),
    (check_permutation_matrix, permutation_forgot_return, ["returned None", "return"]),
    (check_causal_mask, causal_upper, ["see the future", "tril"]),
    (check_causal_mask, causal_inverted, ["blocked", "may attend"]),
    (check_causal_mask, causal_no_diagonal, ["diagonal"]),
    (check_causal_mask, causal_float, [".bool()", "float32"]),
    (check_causal_mask, causal_int, [".bool()", "int64"]),
]


@pytest.mark.parametrize("check, answer, hints", WRONG, ids=[a.__name__ for _, a, _ in WRONG])
def test_wrong_answer_fails_and_names_the_mistake(capsys, check, answer, hints):
    result, line = verdict(capsys, check, answer)
    assert result is False
    for hint in hints:
        assert hint in line


def test_hints_are_specific(capsys):
    """A hint for one mistake is not printed for another."""
    _, whole = verdict(capsys, check_softmax, softmax_whole_tensor)
    _, dim0 = verdict(capsys, check_softmax, softmax_dim0)
    assert "dim=0" not in whole and "whole tensor" not in dim0
    _, no_scale = verdict(capsys, check_attention, attention_no_scale)
    _, by_d_k = verdict(capsys, check_attention, attention_divided_by_d_k)
    assert "instead of" not in no_scale and "not divided" not in by_d_k
    _, identity = verdict(capsys, check_permutation_matrix, lambda order: torch.eye(len(order)))
    assert "transpose" not in identity and "expected" in identity
    _, upper = verdict(capsys, check_causal_mask, causal_upper)
    _, no_diag = verdict(capsys, check_causal_mask, causal_no_diagonal)
    assert "left out the diagonal" not in upper and "see the future" not in no_diag


def test_attention_nan_on_small_scores_is_not_blamed_on_overflow(capsys):
    def zero_over_zero(q, k, v):  # NaN for a reason that has nothing to do with large scores
        w = torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), dim=-1)
        return (w @ v) * 0 / 0

    result, line = verdict(capsys, check_attention, zero_over_zero)
    assert result is False
    assert "NaN" in line
    assert "overflow" not in line


# --- junk answers: False, one ❌ line, never an exception ------------------------------------

def _raises_not_implemented(*args):
    raise NotImplementedError


def _raises_value_error(*args):
    raise ValueError("something\nwent   wrong\n\nover several lines")


def _returns_none(*args):
    return None


def _nan_of_right_shape(shape_of):
    return lambda *args: torch.full(shape_of(*args), float("nan"))


def _inf_of_right_shape(shape_of):
    return lambda *args: torch.full(shape_of(*args), float("inf"))


def _wrong_shape(shape_of):
    return lambda *args: torch.zeros(*(s + 1 for s in shape_of(*args)), 2)


def _a_tuple(reference):
    return lambda *args: (reference(*args), reference(*args))


def _a_string(*args):
    return "the answer"


def _a_dict(*args):
    return {"answer": 1}


def _a_complex_tensor(shape_of):
    return lambda *args: torch.zeros(shape_of(*args), dtype=torch.complex64)


class _Unconvertible:
    def __array__(self, *args, **kwargs):
        raise RuntimeError("cannot convert")


JUNK = {
    "None": (lambda reference, shape_of: None, "expected a function"),
    "int": (lambda reference, shape_of: 3, "expected a function"),
    "str": (lambda reference, shape_of: "text", "expected a function"),
    "tensor-not-function": (lambda reference, shape_of: torch.zeros(3), "expected a function"),
    "raises-NotImplementedError": (lambda reference, shape_of: _raises_not_implemented, "NotImplementedError"),
    "raises-ValueError": (lambda reference, shape_of: _raises_value_error, "raised ValueError: something went wrong"),
    "wrong-arity": (lambda reference, shape_of: (lambda: None), "raised TypeError"),
    "returns-None": (lambda reference, shape_of: _returns_none, "None"),
    "returns-NaN": (lambda reference, shape_of: _nan_of_right_shape(shape_of), "NaN"),
    "returns-inf": (lambda reference, shape_of: _inf_of_right_shape(shape_of), "inf"),
    "returns-wrong-shape": (lambda reference, shape_of: _wrong_shape(shape_of), "shape"),
    "returns-tuple": (lambda reference, shape_of: _a_tuple(reference), ("tuple", "pair")),
    "returns-1-tuple": (lambda reference, shape_of: (lambda *a: (reference(*a),)), "tuple"),
    "returns-string": (lambda reference, shape_of: _a_string, "str"),
    "returns-dict": (lambda reference, shape_of: _a_dict, "dict"),
    "returns-complex": (lambda reference, shape_of: _a_complex_tensor(shape_of), "complex"),
    "returns-unconvertible": (lambda reference, shape_of: (lambda *a: _Unconvertible()), "cannot convert"),
}


@pytest.mark.parametrize("junk", JUNK)
@pytest.mark.parametrize("name", CHECKS)
def test_junk_answers_fail_without_raising(capsys, name, junk):
    check, reference, shape_of = CHECKS[name]
    make, expected = JUNK[junk]
    result, line = verdict(capsys, check, make(reference, shape_of))
    assert result is False
    expected = (expected,) if isinstance(expected, str) else expected
    assert any(word in line for word in expected), line


def test_not_implemented_message_says_what_to_do(capsys):
    for check in (check_softmax, check_attention, check_permutation_matrix, check_causal_mask):
        _, line = verdict(capsys, check, _raises_not_implemented)
        assert "still raises NotImplementedError" in line


def test_passing_the_result_instead_of_the_function(capsys):
    _, line = verdict(capsys, check_softmax, softmax_ref(torch.tensor([1.0, 2.0])))
    assert "Pass the function itself" in line


def test_learner_input_is_not_shared_between_calls(capsys):
    """An answer that modifies its input in place must not corrupt the check's reference."""
    def softmax_in_place(x):
        x.sub_(x.max(dim=-1, keepdim=True).values).exp_()
        return x.div_(x.sum(dim=-1, keepdim=True))

    assert verdict(capsys, check_softmax, softmax_in_place)[0] is True
