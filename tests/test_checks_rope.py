"""The lesson 11 checks (and lesson 10's RoPE check): references pass, real mistakes are named,
and an equivalent convention is called equivalent, not wrong."""

import math

import pytest
import torch

from conftest import verdict
from course_utils import rope_rotate
from course_utils.checks import check_decode_step, check_rope_complex, check_rope_permutation, check_rope_rotate

# Some answers here are built from the course's own functions: the guard stays off.
pytestmark = pytest.mark.usefixtures("course_left_on")


def permutation(d):
    return torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])


def complex_rope(x, positions, sign=-1.0, halves=False, exponent=2.0):
    n, d = x.shape
    omega = 10_000.0 ** (-exponent * torch.arange(d // 2, dtype=torch.float64) / d)
    phase = torch.polar(torch.ones(n, d // 2, dtype=torch.float64), sign * positions[:, None] * omega)
    if halves:
        pairs = torch.complex(x[:, : d // 2], x[:, d // 2:]) * phase
        return torch.cat([pairs.real, pairs.imag], dim=1)
    return torch.view_as_real(torch.view_as_complex(x.reshape(n, d // 2, 2).contiguous()) * phase).reshape(n, d)


def decode(q, k, v, cache_k, cache_v, *, position=None, rotate_v=False, layout="interleaved",
           transpose=True, scale=None):
    where = torch.tensor([float(cache_k.shape[0] if position is None else position)])
    q_rot = rope_rotate(q[None], positions=where, layout=layout)
    keys = torch.cat([cache_k, rope_rotate(k[None], positions=where, layout=layout)])
    new_v = rope_rotate(v[None], positions=where) if rotate_v else v[None]
    scores = q_rot @ (keys.T if transpose else keys)
    weights = torch.softmax(scores / (scale or math.sqrt(q.shape[-1])), dim=-1)
    return (weights @ torch.cat([cache_v, new_v]))[0]


def test_references_pass(capsys):
    assert verdict(capsys, check_rope_permutation, permutation)[0] is True
    assert verdict(capsys, check_rope_permutation, lambda d: permutation(d).tolist())[0] is True
    assert verdict(capsys, check_rope_complex, complex_rope)[0] is True
    assert verdict(capsys, check_rope_complex, lambda x, p: rope_rotate(x, positions=p))[0] is True
    assert verdict(capsys, check_rope_complex, lambda x, p: rope_rotate(x.float(), positions=p))[0] is True
    assert verdict(capsys, check_decode_step, decode)[0] is True


@pytest.mark.parametrize("answer, hint", [
    (lambda d: torch.argsort(permutation(d)), "the way back"),
    (lambda d: torch.arange(d), "leaves every feature where it is"),
    (lambda d: torch.cat([torch.arange(1, d, 2), torch.arange(0, d, 2)]), "Odd features first"),
])
def test_permutation_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_rope_permutation, answer)
    assert result is False and hint in line, line
    assert "[0, 2, 4, 6, 1, 3, 5, 7]" not in line, "the check must not print the answer"


def test_permutation_indices_must_be_whole_numbers(capsys):
    result, line = verdict(capsys, check_rope_permutation, lambda d: permutation(d).double())
    assert result is False and "whole-number indices" in line, line
    assert verdict(capsys, check_rope_permutation, lambda d: permutation(d).numpy())[0] is True


@pytest.mark.parametrize("answer, hint", [
    (lambda x, p: complex_rope(x, p, sign=1.0), "equivalent convention"),
    (lambda x, p: complex_rope(x, p + 1), "ω(t + 1)"),
    (lambda x, p: complex_rope(x, p, halves=True), "x[2i] + i·x[2i+1]"),
    (lambda x, p: complex_rope(x, p, sign=1.0, halves=True), "Hugging Face's exact convention"),
    (lambda x, p: torch.view_as_complex(x.reshape(x.shape[0], -1, 2).contiguous()), "view_as_real"),
    (lambda x, p: complex_rope(x, p, exponent=4.0), "The exponent is 4i/d"),
    (lambda x, p: complex_rope(x, torch.arange(x.shape[0], dtype=torch.float64)), "row number"),
])
def test_complex_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_rope_complex, answer)
    assert result is False and hint in line, line
    if hint == "equivalent convention":
        assert "Su et al." in line and "wrong" not in line
    assert not line.endswith("..."), "the hint must not be cut off by the 400-character limit"


@pytest.mark.parametrize("answer, hint", [
    (lambda q, k, v, ck, cv: decode(q, k, v, ck, cv, position=0), "forgot the cache offset"),
    (lambda q, k, v, ck, cv: decode(q, k, v, ck, cv, position=ck.shape[0] + 1), "not t + 1"),
    (lambda q, k, v, ck, cv: decode(q, k, v, ck, cv, rotate_v=True), "You rotated the value v"),
    (lambda q, k, v, ck, cv: decode(q, k, v, rope_rotate(ck), cv), "rotated the cached keys again"),
    (lambda q, k, v, ck, cv: decode(q, k, v, ck, cv, position=-ck.shape[0]), "one model must use one"),
    (lambda q, k, v, ck, cv: decode(q, k, v, ck, cv, layout="halves"), "(halves)"),
    (lambda q, k, v, ck, cv: decode(q, k, v, ck, cv, transpose=False), "multiply q by keys.T"),
    (lambda q, k, v, ck, cv: decode(q, k, v, ck, cv, scale=q.shape[-1]), "divided the scores by d"),
])
def test_decode_step_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_decode_step, answer)
    assert result is False and hint in line, line


def test_lesson_10s_check_calls_su_et_als_direction_equivalent(capsys):
    result, line = verdict(capsys, check_rope_rotate, lambda x: rope_rotate(x, positions=-torch.arange(x.shape[0])))
    assert result is False and "equivalent convention" in line and "wrong way" not in line, line
    assert not line.endswith("..."), "the hint must not be cut off by the 400-character limit"
    result, line = verdict(capsys, check_rope_rotate, lambda x: rope_rotate(x, layout="halves"))
    assert result is False and "the same rotation with the features permuted" in line, line
    assert not line.endswith("..."), "the hint must not be cut off by the 400-character limit"
