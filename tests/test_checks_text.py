"""The lesson 14 checks: references pass (tensors, numbers, lists), real mistakes are named, and
the learner's exceptions and wrong types become one ❌ line."""

import math

import numpy as np
import pytest
import torch

from conftest import verdict
from course_utils.checks import check_bits_per_character, check_last_context, check_next_character_windows


def bits(logits, targets):
    log_p = torch.log_softmax(logits.double(), dim=-1)
    return (-log_p[torch.arange(len(targets)), targets] / math.log(2)).mean().item()


def windows(ids, starts, length):
    index = starts[:, None] + torch.arange(length)
    return ids[index], ids[index + 1]


def last_context(tokens, t, context):
    return tokens[max(0, t - context + 1):t + 1]


def test_references_pass(capsys):
    assert verdict(capsys, check_bits_per_character, bits)[0] is True
    assert verdict(capsys, check_bits_per_character, lambda l, t: torch.tensor(bits(l, t)))[0] is True
    assert verdict(capsys, check_bits_per_character,
                   lambda l, t: torch.nn.functional.cross_entropy(l, t) / math.log(2))[0] is True
    assert verdict(capsys, check_next_character_windows, windows)[0] is True
    assert verdict(capsys, check_next_character_windows,
                   lambda i, s, n: tuple(x.numpy() for x in windows(i, s, n)))[0] is True
    assert verdict(capsys, check_last_context, last_context)[0] is True
    assert verdict(capsys, check_last_context, lambda x, t, c: last_context(x, t, c).tolist())[0] is True


@pytest.mark.parametrize("answer, hint", [
    (lambda l, t: bits(l, t) * math.log(2), "nats"),
    (lambda l, t: bits(l, t) * len(t), "sum"),
    (lambda l, t: (-l[torch.arange(len(t)), t] / math.log(2)).mean(), "softmax"),
    (lambda l, t: torch.softmax(l, -1)[torch.arange(len(t)), t].mean(), "probability"),
    (lambda l, t: -bits(l, t), "sign"),
])
def test_bits_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_bits_per_character, answer)
    assert result is False and hint in line, line


def test_windows_mistakes_are_named(capsys):
    same = verdict(capsys, check_next_character_windows, lambda i, s, n: (windows(i, s, n)[0],) * 2)
    assert same[0] is False and "next" in same[1]
    late = verdict(capsys, check_next_character_windows, lambda i, s, n: (windows(i, s, n)[1],) * 2)
    assert late[0] is False and "one character late" in late[1]
    back = verdict(capsys, check_next_character_windows,
                   lambda i, s, n: (windows(i, s, n)[0], i[(s[:, None] + torch.arange(n) - 1) % len(i)]))
    assert back[0] is False and "one character back" in back[1]
    single = verdict(capsys, check_next_character_windows, lambda i, s, n: windows(i, s, n)[0])
    assert single[0] is False and "pair" in single[1]


@pytest.mark.parametrize("answer, hint", [
    (lambda x, t, c: x[t - c + 1:t + 1], "clip"),
    (lambda x, t, c: x[max(0, t - c):t], "reads itself"),
    (lambda x, t, c: x[max(0, t - c + 1):t], "inclusive"),
])
def test_context_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_last_context, answer)
    assert result is False and hint in line, line


@pytest.mark.parametrize("check", [check_bits_per_character, check_next_character_windows, check_last_context])
@pytest.mark.parametrize("answer", [
    lambda *a: None,
    lambda *a: 1 / 0,
    lambda *a: np.full(3, np.nan),
    "not a function",
])
def test_broken_answers_get_one_line(capsys, check, answer):
    assert verdict(capsys, check, answer)[0] is False


def test_a_stub_is_told_to_write_code(capsys):
    def stub(*args):
        raise NotImplementedError()

    result, line = verdict(capsys, check_last_context, stub)
    assert result is False and "NotImplementedError" in line
