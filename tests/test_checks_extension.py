"""The lesson 12 checks: references pass, real mistakes are named, and a near-miss convention
((L − 1) instead of L) is named for what it is."""

import math

import pytest
import torch

from conftest import verdict
from course_utils import frequencies, rope_frequencies, yarn_ramp
from course_utils.checks import check_ntk_base, check_pair_turns, check_yarn_blend

# Some answers here are built from the course's own functions: the guard stays off.
pytestmark = pytest.mark.usefixtures("course_left_on")


def turns(d, length, base, *, minus_one=False):
    return (length - minus_one) * frequencies(d, base=base) / (2 * math.pi)


def blend(omega, gamma, factor):
    return gamma * omega + (1 - gamma) * omega / factor


def test_references_pass(capsys):
    assert verdict(capsys, check_ntk_base, lambda base, s, d: base * s ** (d / (d - 2)))[0] is True
    assert verdict(capsys, check_ntk_base, lambda base, s, d: torch.tensor(base * s ** (d / (d - 2))))[0] is True
    assert verdict(capsys, check_pair_turns, turns)[0] is True
    assert verdict(capsys, check_pair_turns, lambda d, n, b: turns(d, n, b).float())[0] is True
    assert verdict(capsys, check_yarn_blend, blend)[0] is True


def test_the_blend_is_what_the_package_computes():
    omega, gamma = frequencies(32), yarn_ramp(32, original_max_len=64)
    torch.testing.assert_close(blend(omega, gamma, 8.0),
                               rope_frequencies(32, scaling="yarn", factor=8.0, original_max_len=64))


@pytest.mark.parametrize("answer, hint", [
    (lambda base, s, d: base * s, "That is base·s"),
    (lambda base, s, d: base * s ** ((d - 2) / d), "upside down"),
    (lambda base, s, d: base / s ** (d / (d - 2)), "You divided"),
    (lambda base, s, d: None, "return"),
    (lambda base, s, d: "base", "expected one number"),
    (lambda base, s, d: 1 / 0, "ZeroDivisionError"),
])
def test_ntk_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_ntk_base, answer)
    assert result is False and hint in line, line


@pytest.mark.parametrize("answer, hint", [
    (lambda d, n, b: turns(d, n, b) * 2 * math.pi, "radians"),
    (lambda d, n, b: 2 * math.pi / frequencies(d, base=b), "wavelengths in positions"),
    (lambda d, n, b: 2 * math.pi / frequencies(d, base=b) / n, "upside down"),
    (lambda d, n, b: turns(d, n, b, minus_one=True), "count turns over L itself"),
    (lambda d, n, b: n * b ** (-torch.arange(d // 2) / d) / (2 * math.pi), "i/d in the exponent"),
    (lambda d, n, b: turns(d, n, b)[:-1], "shape"),
])
def test_turns_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_pair_turns, answer)
    assert result is False and hint in line, line
    if hint == "count turns over L itself":
        assert "wrong" not in line


@pytest.mark.parametrize("answer, hint", [
    (lambda w, g, s: blend(w, 1 - g, s), "swapped"),
    (lambda w, g, s: 1 / (g / w + (1 - g) * s / w), "blended wavelengths"),
    (lambda w, g, s: g * w + (1 - g) * w * s, "multiplies by s"),
    (lambda w, g, s: w / s, "position interpolation for every pair"),
    (lambda w, g, s: (w, g), "tuple"),
])
def test_blend_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_yarn_blend, answer)
    assert result is False and hint in line, line
