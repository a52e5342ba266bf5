"""Tests for the lesson-04 checks: check_rotation_block and check_offset_map.

Contract: a check returns True/False, prints exactly one line starting with "✅ Correct" or
"❌ Not yet:", names a recognised mistake in that line, and never raises.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from course_utils import offset_matrix
from course_utils.checks import check_offset_map, check_rotation_block
from conftest import verdict

# Some answers here are built from the course's own functions: the guard stays off.
pytestmark = pytest.mark.usefixtures("course_left_on")


def block(angle: float) -> torch.Tensor:
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[c, s], [-s, c]])


def rotation_block_ref(omega, k):
    return block(omega * k)


def offset_map_ref(k, d_model):
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        m[2 * i:2 * i + 2, 2 * i:2 * i + 2] = block(10_000 ** (-2 * i / d_model) * k)
    return m


# --- the reference and other correct answers pass ------------------------------------------

def test_rotation_block_reference_and_variants_pass(capsys):
    assert verdict(capsys, check_rotation_block, rotation_block_ref)[0] is True
    assert verdict(capsys, check_rotation_block, lambda o, k: rotation_block_ref(o, k).numpy())[0] is True
    assert verdict(capsys, check_rotation_block, lambda o, k: rotation_block_ref(o, k).tolist())[0] is True


def test_offset_map_reference_and_variants_pass(capsys):
    assert verdict(capsys, check_offset_map, offset_map_ref)[0] is True
    assert verdict(capsys, check_offset_map, lambda k, d: offset_matrix(k, d))[0] is True  # float32 is fine
    assert verdict(capsys, check_offset_map, lambda k, d: offset_matrix(k, d).numpy())[0] is True


# --- recognised mistakes ------------------------------------------------------------------------

def _swapped(o, k):
    c, s = math.cos(o * k), math.sin(o * k)
    return torch.tensor([[s, c], [-c, s]])


def _no_minus(o, k):
    c, s = math.cos(o * k), math.sin(o * k)
    return torch.tensor([[c, s], [s, c]])


ROTATION_MISTAKES = {
    "transposed": (lambda o, k: block(o * k).T, "sign of the sine terms"),
    "row-vector / (cos, sin) order = transpose": (lambda o, k: block(-o * k), "sign of the sine terms"),
    "swapped cos and sin": (_swapped, "swapped cos and sin"),
    "missing minus": (_no_minus, "minus sign is missing"),
    "omega only": (lambda o, k: block(o), "rotated by ω instead of ωk"),
    "k only": (lambda o, k: block(k), "rotated by k instead of ωk"),
    "off by one, k + 1": (lambda o, k: block(o * (k + 1)), "Off by one"),
    "off by one, k - 1": (lambda o, k: block(o * (k - 1)), "Off by one"),
    "degrees": (lambda o, k: block(math.radians(o * k)), "degrees"),
}


@pytest.mark.parametrize("name", ROTATION_MISTAKES)
def test_rotation_block_mistakes_are_named(capsys, name):
    answer, hint = ROTATION_MISTAKES[name]
    result, line = verdict(capsys, check_rotation_block, answer)
    assert result is False
    assert hint in line
    assert "expected" in line and "ω=" in line


def test_rotation_block_message_shows_the_image_of_a_basis_vector(capsys):
    _, line = verdict(capsys, check_rotation_block, lambda o, k: block(o * k).T)
    assert "for ω=0.5, k=3 your block sends (sin ωt, cos ωt) = (0, 1) to (-0.997, 0.071); expected (0.997, 0.071)." in line


def _halves(k, d):
    return offset_matrix(k, d, layout="halves")


def _frequencies(exponent):
    def answer(k, d):
        m = torch.zeros(d, d, dtype=torch.float64)
        for i in range(d // 2):
            m[2 * i:2 * i + 2, 2 * i:2 * i + 2] = block(10_000 ** (-exponent * i / d) * k)
        return m

    return answer


def _first_block_only(fill):
    def answer(k, d):
        m = torch.eye(d, dtype=torch.float64) * fill
        m[:2, :2] = block(k)
        return m

    return answer


OFFSET_MISTAKES = {
    "transposed": (lambda k, d: offset_matrix(k, d).T, "sign of the sine terms"),
    "halves layout": (_halves, "halves layout"),
    "base^(-i/d)": (_frequencies(1.0), "10000^(-i/d_model)"),
    "base^(-4i/d)": (_frequencies(4.0), "10000^(-4i/d_model)"),
    "base^(+2i/d)": (_frequencies(-2.0), "10000^(+2i/d_model)"),
    "one frequency for all": (_frequencies(0.0), "same frequency"),
    "first block, identity elsewhere": (_first_block_only(1.0), "Only the first block"),
    "first block, zeros elsewhere": (_first_block_only(0.0), "Only the first block"),
}


@pytest.mark.parametrize("name", OFFSET_MISTAKES)
def test_offset_map_mistakes_are_named(capsys, name):
    answer, hint = OFFSET_MISTAKES[name]
    result, line = verdict(capsys, check_offset_map, answer)
    assert result is False
    assert hint in line
    assert "row" in line and "should be" in line


def test_offset_map_wrong_sign_of_k_is_the_transpose(capsys):
    result, line = verdict(capsys, check_offset_map, lambda k, d: offset_matrix(-k, d))
    assert result is False and "moves back by k" in line


def test_an_unrecognised_wrong_answer_still_fails_cleanly(capsys):
    result, line = verdict(capsys, check_offset_map, lambda k, d: torch.eye(d) * 0.5)
    assert result is False and "row 0 of M_k should be" in line
    result, line = verdict(capsys, check_rotation_block, lambda o, k: torch.eye(2) * 2)
    assert result is False and "expected" in line


# --- junk answers -------------------------------------------------------------------------------

def _raises(*_):
    raise NotImplementedError()


def _crashes(*_):
    raise IndexError("index 4 is out of bounds")


JUNK = {
    "None": (None, "expected a function"),
    "an int": (3, "expected a function"),
    "a string": ("text", "expected a function"),
    "not implemented": (_raises, "NotImplementedError"),
    "crashes": (_crashes, "raised IndexError"),
    "returns None": (lambda *_: None, "returned None"),
    "returns NaN": (lambda *_: torch.full((2, 2), float("nan")), ""),
    "returns a tuple": (lambda *_: (torch.eye(2), 1), "tuple"),
    "returns text": (lambda *_: "a matrix", ""),
    "wrong shape": (lambda *_: torch.zeros(3), "shape"),
    "complex": (lambda *_: torch.eye(2, dtype=torch.complex64), "complex"),
}


@pytest.mark.parametrize("check", [check_rotation_block, check_offset_map], ids=["rotation_block", "offset_map"])
@pytest.mark.parametrize("name", JUNK)
def test_junk_answers_fail_with_one_line(capsys, check, name):
    answer, hint = JUNK[name]
    result, line = verdict(capsys, check, answer)
    assert result is False
    assert hint in line


def test_nan_in_a_right_shaped_answer(capsys):
    def nan_map(k, d):
        m = offset_matrix(k, d)
        m[0, 0] = float("nan")
        return m

    result, line = verdict(capsys, check_offset_map, nan_map)
    assert result is False and "NaN" in line


def test_checks_do_not_modify_numpy_print_state(capsys):
    before = np.get_printoptions()
    verdict(capsys, check_offset_map, offset_map_ref)
    assert np.get_printoptions() == before
