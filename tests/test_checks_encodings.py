"""Tests for course_utils.checks.encodings (lesson 03): check_wavelengths,
check_sinusoidal_encoding, check_offset_similarity.

Contract: a check returns True/False, prints exactly one line starting with "✅ Correct" or
"❌ Not yet:", names a known mistake in that line, and never raises.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from course_utils.checks import check_offset_similarity, check_sinusoidal_encoding, check_wavelengths
from conftest import COMMON_JUNK, raises_not_implemented, verdict


# --- answers, right and wrong, written the way a learner would ----------------------------------

def omega(d_model, base=10_000.0, power=lambda i, d: 2 * i / d):
    return torch.tensor([base ** -power(i, d_model) for i in range(d_model // 2)], dtype=torch.float64)


def wavelengths_ref(d_model, base=10_000.0):
    return 2 * math.pi / omega(d_model, base)


def encoding(n, d_model, *, power=lambda i, d: 2 * i / d, start=0, swap=False, halves=False, sin_only=False,
             dtype=torch.float32):
    t = torch.arange(start, start + n, dtype=torch.float64)[:, None]
    angles = t * omega(d_model, power=power)[None, :]
    first, second = torch.sin(angles), torch.sin(angles) if sin_only else torch.cos(angles)
    if swap:
        first, second = second, first
    if halves:
        pe = torch.cat([first, second], dim=1)
    else:
        pe = torch.stack([first, second], dim=2).reshape(n, d_model)
    return pe.to(dtype)


def encoding_ref(n, d_model):
    return encoding(n, d_model)


def encoding_loop(n, d_model):  # a textbook loop over the columns, float32 throughout
    pe = torch.zeros(n, d_model)
    for pos in range(n):
        for i in range(0, d_model, 2):
            pe[pos, i] = math.sin(pos / 10_000 ** (i / d_model))
            pe[pos, i + 1] = math.cos(pos / 10_000 ** (i / d_model))
    return pe


def similarity_ref(k, d_model):
    return sum(math.cos(k * 10_000 ** (-2 * i / d_model)) for i in range(d_model // 2))


# --- references and alternative correct answers pass ------------------------------------------

@pytest.mark.parametrize("check, answer", [
    (check_wavelengths, wavelengths_ref),
    (check_wavelengths, lambda d, base: (2 * math.pi / omega(d, base)).float()),
    (check_wavelengths, lambda d, base: [2 * math.pi * base ** (2 * i / d) for i in range(d // 2)]),
    (check_wavelengths, lambda d, base: np.array([2 * math.pi * base ** (2 * i / d) for i in range(d // 2)])),
    (check_sinusoidal_encoding, encoding_ref),
    (check_sinusoidal_encoding, encoding_loop),
    (check_sinusoidal_encoding, lambda n, d: encoding(n, d, dtype=torch.float64).numpy()),
    (check_offset_similarity, similarity_ref),
    (check_offset_similarity, lambda k, d: torch.cos(k * omega(d)).sum()),  # a 0-d tensor
    (check_offset_similarity, lambda k, d: torch.cos(k * omega(d)).sum().reshape(1)),  # one number in a [1]
    (check_offset_similarity, lambda k, d: float(encoding(1, d, start=0)[0] @ encoding(1, d, start=k)[0])
        if float(k).is_integer() else similarity_ref(k, d)),
], ids=["wl-ref", "wl-float32", "wl-list", "wl-numpy", "pe-ref", "pe-loop", "pe-numpy", "sim-ref", "sim-0d",
        "sim-1elem", "sim-dot"])
def test_right_answers_pass(capsys, check, answer):
    result, line = verdict(capsys, check, answer)
    assert result is True, line


# --- recognised mistakes fail with a hint naming them -----------------------------------------

WAVELENGTH_MISTAKES = {
    "frequencies": (lambda d, base: omega(d, base), "You returned the frequencies"),
    "no 2π": (lambda d, base: 1 / omega(d, base), "multiply by 2π"),
    "reversed": (lambda d, base: wavelengths_ref(d, base).flip(0), "longest wavelength comes first"),
    "i/d": (lambda d, base: 2 * math.pi / omega(d, base, lambda i, dd: i / dd), "exponent is i/d_model"),
    "4i/d": (lambda d, base: 2 * math.pi / omega(d, base, lambda i, dd: 4 * i / dd), "4i/d_model"),
    "t2t": (lambda d, base: 2 * math.pi / omega(d, base, lambda i, dd: i / max(dd // 2 - 1, 1)), "tensor2tensor"),
    "fixed base": (lambda d, base: wavelengths_ref(d), "use the base argument"),
}


@pytest.mark.parametrize("name", WAVELENGTH_MISTAKES)
def test_wavelength_mistakes_are_named(capsys, name):
    answer, hint = WAVELENGTH_MISTAKES[name]
    result, line = verdict(capsys, check_wavelengths, answer)
    assert result is False
    assert hint in line, line


ENCODING_MISTAKES = {
    "swapped": (lambda n, d: encoding(n, d, swap=True), "Sine and cosine are swapped"),
    "halves": (lambda n, d: encoding(n, d, halves=True), "'halves' layout"),
    "start at 1": (lambda n, d: encoding(n, d, start=1), "positions start at 1"),
    "i/d": (lambda n, d: encoding(n, d, power=lambda i, dd: i / dd), "exponent is i/d_model"),
    "4i/d": (lambda n, d: encoding(n, d, power=lambda i, dd: 4 * i / dd), "4i/d_model"),
    "inverted": (lambda n, d: encoding(n, d, power=lambda i, dd: -2 * i / dd, dtype=torch.float64),
                 "grow instead of shrinking"),
    "t2t halves": (lambda n, d: encoding(n, d, power=lambda i, dd: i / max(dd // 2 - 1, 1), halves=True),
                   "tensor2tensor/fairseq variant"),
    "t2t interleaved": (lambda n, d: encoding(n, d, power=lambda i, dd: i / max(dd // 2 - 1, 1)),
                        "tensor2tensor/fairseq spacing"),
    "sin only": (lambda n, d: encoding(n, d, sin_only=True), "odd columns hold sines"),
    "transposed": (lambda n, d: encoding(n, d).T, "Transpose it"),
}


@pytest.mark.parametrize("name", ENCODING_MISTAKES)
def test_encoding_mistakes_are_named(capsys, name):
    answer, hint = ENCODING_MISTAKES[name]
    result, line = verdict(capsys, check_sinusoidal_encoding, answer)
    assert result is False
    assert hint in line, line


SIMILARITY_MISTAKES = {
    "sum of sin": (lambda k, d: sum(math.sin(k * 10_000 ** (-2 * i / d)) for i in range(d // 2)), "You summed sines"),
    "mean": (lambda k, d: similarity_ref(k, d) / (d // 2), "averaged instead of summing"),
    "twice": (lambda k, d: 2 * similarity_ref(k, d), "twice the right one"),
    "d terms": (lambda k, d: sum(math.cos(k * 10_000 ** (-2 * i / d)) for i in range(d)), "summed d_model terms"),
    "i/d": (lambda k, d: sum(math.cos(k * 10_000 ** (-i / d)) for i in range(d // 2)), "exponent is i/d_model"),
    "column index": (lambda k, d: sum(math.cos(k * 10_000 ** (-2 * i / d)) for i in range(0, d, 2)), "4i/d_model"),
    "inverted": (lambda k, d: sum(math.cos(k * 10_000 ** (2 * i / d)) for i in range(d // 2)),
                 "grow instead of shrinking"),
}


@pytest.mark.parametrize("name", SIMILARITY_MISTAKES)
def test_similarity_mistakes_are_named(capsys, name):
    answer, hint = SIMILARITY_MISTAKES[name]
    result, line = verdict(capsys, check_offset_similarity, answer)
    assert result is False
    assert hint in line, line


def test_the_message_shows_the_input_expected_and_got(capsys):
    _, line = verdict(capsys, check_offset_similarity, SIMILARITY_MISTAKES["sum of sin"][0])
    assert line.startswith("❌ Not yet: for k = 1, d_model = 16 expected 7.485, got ")
    _, line = verdict(capsys, check_sinusoidal_encoding, ENCODING_MISTAKES["swapped"][0])
    assert "for n = 5, d_model = 8, row t = 0: expected [0, 1, 0, 1, 0, 1, 0, 1], got [1, 0, 1, 0, 1, 0, 1, 0]." in line


# --- junk never raises ----------------------------------------------------------------------

JUNK = {
    **COMMON_JUNK,
    "nan tensor": lambda *a: torch.full((40, 40), float("nan")),
}


@pytest.mark.parametrize("check", [check_wavelengths, check_sinusoidal_encoding, check_offset_similarity],
                         ids=["wavelengths", "encoding", "similarity"])
@pytest.mark.parametrize("name", JUNK)
def test_junk_gives_one_not_yet_line(capsys, check, name):
    result, line = verdict(capsys, check, JUNK[name])
    assert result is False


@pytest.mark.parametrize("check", [check_wavelengths, check_sinusoidal_encoding, check_offset_similarity],
                         ids=["wavelengths", "encoding", "similarity"])
@pytest.mark.parametrize("answer", [None, 3, "text", encoding_ref(3, 4)], ids=["None", "3", "text", "a tensor"])
def test_passing_something_that_is_not_a_function(capsys, check, answer):
    result, line = verdict(capsys, check, answer)
    assert result is False
    assert "expected a function" in line


def test_not_implemented_says_so(capsys):
    _, line = verdict(capsys, check_sinusoidal_encoding, raises_not_implemented)
    assert "NotImplementedError" in line


def test_the_learners_inputs_are_not_shared_between_calls(capsys):
    seen = []

    def spy(n, d_model):
        seen.append((n, d_model))
        return encoding_ref(n, d_model)

    assert verdict(capsys, check_sinusoidal_encoding, spy)[0] is True
    assert (1, 2) in seen and len(seen) >= 4
