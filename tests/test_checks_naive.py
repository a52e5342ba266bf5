"""Tests for the lesson-02 checks: check_normalised_positions, check_binary_code, check_hamming_distance.

Same contract as tests/test_checks.py: True/False, exactly one line, the known mistake named,
never an exception — for realistic wrong answers and for junk.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import verdict
from test_checks import JUNK

from course_utils.checks import check_binary_code, check_hamming_distance, check_normalised_positions

# --- reference answers ------------------------------------------------------------------------

def normalised_ref(length):
    return torch.arange(length) / (length - 1)


def binary_ref(t, n_bits):
    return torch.tensor([(t >> b) & 1 for b in range(n_bits)], dtype=torch.float32)


def hamming_ref(a, b):
    return (a != b).sum()


CHECKS = {
    "normalised_positions": (check_normalised_positions, normalised_ref, lambda length: (length,)),
    "binary_code": (check_binary_code, binary_ref, lambda t, n_bits: (n_bits,)),
    "hamming_distance": (check_hamming_distance, hamming_ref, lambda a, b: ()),
}


@pytest.mark.parametrize("name", CHECKS)
def test_reference_passes(capsys, name):
    check, reference, _ = CHECKS[name]
    assert verdict(capsys, check, reference)[0] is True


def test_alternative_correct_answers_pass(capsys):
    alternatives = [
        (check_normalised_positions, lambda n: torch.linspace(0, 1, n)),
        (check_normalised_positions, lambda n: [t / (n - 1) for t in range(n)]),
        (check_normalised_positions, lambda n: np.arange(n) / (n - 1)),
        (check_binary_code, lambda t, n: [(t // 2**b) % 2 for b in range(n)]),
        (check_binary_code, lambda t, n: torch.tensor([bool((t >> b) & 1) for b in range(n)])),
        (check_binary_code, lambda t, n: torch.tensor([int(c) for c in reversed(format(t, f"0{n}b"))])),
        (check_hamming_distance, lambda a, b: int((a - b).abs().sum())),
        (check_hamming_distance, lambda a, b: float(np.count_nonzero(a.numpy() != b.numpy()))),
        (check_hamming_distance, lambda a, b: (a != b).sum(dim=0, keepdim=True)),  # one number in a [1] tensor
        (check_hamming_distance, lambda a, b: (a != b).double().sum()),
    ]
    for check, answer in alternatives:
        assert verdict(capsys, check, answer)[0] is True


# --- realistic wrong answers: fail, and say why ---------------------------------------------

def normalised_by_length(length):
    return torch.arange(length) / length


def normalised_integer_division(length):
    return torch.arange(length) // (length - 1)


def normalised_starts_at_1(length):
    return torch.arange(1, length + 1) / length


def normalised_starts_at_1_over_length_minus_1(length):
    return torch.arange(1, length + 1) / (length - 1)


def normalised_precedence(length):
    return torch.arange(length) / length - 1


def binary_reversed(t, n_bits):
    return torch.tensor([int(c) for c in format(t, f"0{n_bits}b")], dtype=torch.float32)


def binary_signed(t, n_bits):
    return 2 * binary_ref(t, n_bits) - 1


def binary_shifted(t, n_bits):
    return torch.tensor([(t >> (b + 1)) & 1 for b in range(n_bits)], dtype=torch.float32)


def binary_float_division(t, n_bits):
    return torch.tensor([t / 2**b % 2 for b in range(n_bits)])


def binary_one_too_many(t, n_bits):
    return torch.tensor([(t >> b) & 1 for b in range(n_bits + 1)], dtype=torch.float32)


def binary_one_too_few(t, n_bits):
    return torch.tensor([(t >> b) & 1 for b in range(1, n_bits)], dtype=torch.float32)


def hamming_signed_sum(a, b):
    return (a - b).sum()


def hamming_agreements(a, b):
    return (a == b).sum()


def hamming_euclidean(a, b):
    return (a - b).norm()


def hamming_mean(a, b):
    return (a != b).float().mean()


def hamming_per_bit(a, b):
    return a != b


WRONG = [
    (check_normalised_positions, normalised_by_length, ["divided by length", "length - 1"]),
    (check_normalised_positions, normalised_integer_division, ["integer division"]),
    (check_normalised_positions, normalised_starts_at_1, ["start at 1", "t = 0"]),
    (check_normalised_positions, normalised_starts_at_1_over_length_minus_1, ["start at 1"]),
    (check_normalised_positions, normalised_precedence, ["precedence", "t / (length - 1)"]),
    (check_binary_code, binary_reversed, ["reversed order", "least significant"]),
    (check_binary_code, binary_signed, ["±1", "0 or 1"]),
    (check_binary_code, binary_shifted, ["shifted by one", "bit b + 1"]),
    (check_binary_code, binary_float_division, ["float division", "//"]),
    (check_binary_code, binary_one_too_many, ["one bit too many", "range(n_bits)"]),
    (check_binary_code, binary_one_too_few, ["one bit too few", "range(n_bits)"]),
    (check_hamming_distance, hamming_signed_sum, ["summed a - b", "cancel"]),
    (check_hamming_distance, hamming_agreements, ["agree"]),
    (check_hamming_distance, hamming_euclidean, ["Euclidean", "square root"]),
    (check_hamming_distance, hamming_mean, ["averaged", "count"]),
    (check_hamming_distance, hamming_per_bit, ["one per bit", "single number"]),
]


@pytest.mark.parametrize("check, answer, hints", WRONG, ids=[a.__name__ for _, a, _ in WRONG])
def test_wrong_answer_fails_and_names_the_mistake(capsys, check, answer, hints):
    result, line = verdict(capsys, check, answer)
    assert result is False
    assert "expected" in line or "one per bit" in line
    for hint in hints:
        assert hint in line, line


def test_hints_are_specific(capsys):
    """A wrong answer that matches no known mistake gets no hint, and hints do not bleed into each other."""
    _, line = verdict(capsys, check_normalised_positions, lambda n: torch.zeros(n))
    assert line.endswith("got [0, 0, 0, 0, 0].")
    _, line = verdict(capsys, check_binary_code, lambda t, n: torch.ones(n))
    assert line.endswith("got [1, 1, 1, 1].")
    _, line = verdict(capsys, check_hamming_distance, lambda a, b: 7)
    assert line.endswith("expected 6, got 7.")
    _, by_length = verdict(capsys, check_normalised_positions, normalised_by_length)
    assert "start at 1" not in by_length and "integer division" not in by_length
    _, reversed_ = verdict(capsys, check_binary_code, binary_reversed)
    assert "±1" not in reversed_ and "shifted" not in reversed_


def test_mistakes_hidden_by_a_symmetric_first_case_are_still_caught(capsys):
    """Reversing the bits of a palindrome changes nothing; a later case must catch it."""
    def reversed_except_11(t, n_bits):
        return binary_ref(t, n_bits) if t == 11 else binary_reversed(t, n_bits)

    result, line = verdict(capsys, check_binary_code, reversed_except_11)
    assert result is False and "reversed order" in line


# --- junk answers: False, one ❌ line, never an exception ------------------------------------

@pytest.mark.parametrize("junk", JUNK)
@pytest.mark.parametrize("name", CHECKS)
def test_junk_answers_fail_without_raising(capsys, name, junk):
    check, reference, shape_of = CHECKS[name]
    make, expected = JUNK[junk]
    result, line = verdict(capsys, check, make(reference, shape_of))
    assert result is False
    expected = (expected,) if isinstance(expected, str) else expected
    assert any(word in line for word in expected), line


@pytest.mark.parametrize("name", CHECKS)
def test_not_implemented_message_says_what_to_do(capsys, name):
    def stub(*args):
        raise NotImplementedError()

    _, line = verdict(capsys, CHECKS[name][0], stub)
    assert "still raises NotImplementedError" in line


def test_learner_input_changed_in_place_does_not_break_the_check(capsys):
    def hamming_in_place(a, b):
        a.sub_(b).abs_()
        return a.sum()

    assert verdict(capsys, check_hamming_distance, hamming_in_place)[0] is True
