"""Checks for lesson 14's exercises: bits per character, next-character windows, and the context a
sliding window leaves. References are float64 NumPy, independent of course_utils.text."""

from __future__ import annotations

import math

import numpy as np
import torch

from ._core import NotYet, as_array, call, close, diagnose, fmt, verdict


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _number(value, shown: str) -> float:
    """The learner's result as one float (a Python number, or a tensor/array holding one number)."""
    if isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim and np.prod(value.shape) == 1:
        value = value.reshape(())
    return float(as_array(value, (), shown, what="one number"))


def _length(value) -> int | None:
    """The length of a 1-D answer (tensor, array or list), else None."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return int(value.shape[0]) if value.ndim == 1 else None
    if isinstance(value, (list, tuple)):
        return len(value)
    return None


@verdict
def check_bits_per_character(bits_fn) -> str:
    """Check ``bits_fn(logits, targets)`` → the mean of −log₂ softmax(logits)[target] (one number)."""
    rng = np.random.default_rng(14)
    cases = ((5, 4), (1, 3), (8, 6), (3, 2))
    for n, vocab in cases:
        logits = rng.normal(size=(n, vocab)) * 2
        targets = rng.integers(0, vocab, size=n)
        if n == 3:  # a confident, right prediction and a large logit
            logits[0, targets[0]] = 30.0
        shown = f"logits of shape ({n}, {vocab}) and targets {targets.tolist()}"
        raw = call(bits_fn, (torch.tensor(logits), torch.tensor(targets)), shown)
        got = _number(raw, shown)
        log_p = _log_softmax(logits)[np.arange(n), targets]
        expected = float(-log_p.mean() / math.log(2))
        if close(np.array(got), np.array(expected)):
            continue
        probability = np.exp(_log_softmax(logits))[np.arange(n), targets]
        mistakes = {
            "That is in nats (natural log): divide by ln 2 for bits.": np.array(-log_p.mean()),
            "That is the sum over characters: bits *per character* is the mean.":
                np.array(-log_p.sum() / math.log(2)),
            "You took log₂ of the raw logits: turn them into probabilities with a softmax first.":
                np.array(-np.mean(logits[np.arange(n), targets]) / math.log(2)),
            "That is the mean probability of the right character, not −log₂ of it.": np.array(probability.mean()),
            "The sign: a loss is −log₂ p, a positive number.": np.array(-expected),
        }
        raise NotYet(f"for {shown} expected {expected:.4f} bits, got {got:.4f}." + diagnose(np.array(got), mistakes))
    return "mean −log₂ p(next character), on 4 inputs (one position, a 30-logit guess)."


def _pair(raw, shape, shown: str) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(raw, (tuple, list)) or len(raw) != 2:
        raise NotYet(f"for {shown} return a pair (tokens, targets), got {type(raw).__name__}.")
    return (as_array(raw[0], shape, shown + " (tokens)", what="a [len(starts), length] tensor"),
            as_array(raw[1], shape, shown + " (targets)", what="a [len(starts), length] tensor"))


@verdict
def check_next_character_windows(windows_fn) -> str:
    """Check ``windows_fn(ids, starts, length)`` → (tokens, targets), each [len(starts), length]:
    tokens[b] = ids[s : s + length], targets[b] = ids[s + 1 : s + length + 1] for s = starts[b]."""
    rng = np.random.default_rng(15)
    for size, starts, length in ((20, (0, 7, 3), 5), (12, (11 - 4,), 4), (6, (0, 4), 1), (30, (2, 2, 20), 9)):
        ids = rng.integers(0, 50, size=size)
        shown = f"ids of {size} characters, starts {list(starts)}, length {length}"
        raw = call(windows_fn, (torch.tensor(ids), torch.tensor(starts), length), shown)
        shape = (len(starts), length)
        tokens, targets = _pair(raw, shape, shown)
        expected_tokens = np.stack([ids[s:s + length] for s in starts]).astype(float)
        expected_targets = np.stack([ids[s + 1:s + length + 1] for s in starts]).astype(float)
        if close(tokens, expected_tokens) and close(targets, expected_targets):
            continue
        if not close(tokens, expected_tokens):
            mistakes = {"tokens start one character late: window b reads ids[s], ids[s + 1], ...":
                        expected_targets}
            raise NotYet(f"for {shown} tokens should be {fmt(expected_tokens)}, got {fmt(tokens)}."
                         + diagnose(tokens, mistakes))
        back = np.stack([np.concatenate([[ids[s - 1] if s else ids[-1]], ids[s:s + length - 1]])
                         for s in starts]).astype(float)
        mistakes = {
            "Your targets equal the tokens: a language model predicts the *next* character, ids[s + 1 + t].":
                expected_tokens,
            "Your targets look one character back; they must look one ahead.": back,
        }
        raise NotYet(f"for {shown} targets should be {fmt(expected_targets)}, got {fmt(targets)}."
                     + diagnose(targets, mistakes))
    return "tokens and next-character targets, on 4 inputs (a window ending the text)."


@verdict
def check_last_context(context_fn) -> str:
    """Check ``context_fn(tokens, t, context)`` → the characters a sliding window of ``context``
    lets position t read: tokens[max(0, t − context + 1) : t + 1]."""
    rng = np.random.default_rng(16)
    for n, t, context in ((20, 12, 5), (10, 2, 5), (8, 7, 8), (9, 4, 1), (6, 0, 3)):
        tokens = rng.integers(0, 40, size=n)
        shown = f"tokens of length {n}, t = {t}, context = {context}"
        expected = tokens[max(0, t - context + 1):t + 1].astype(float)
        raw = call(context_fn, (torch.tensor(tokens), t, context), shown)
        length = _length(raw)
        if length is not None and length != expected.shape[0]:
            hint = ""
            if length == expected.shape[0] - 1:
                hint = " Position t reads itself too: the window ends at t, inclusive."
            elif length == context or length == 0:
                hint = (" Near the start there are only t + 1 characters: clip the window's first index "
                        "at 0 (a negative index counts from the end of the tensor).")
            raise NotYet(f"for {shown} expected the {expected.shape[0]} characters {fmt(expected)}, "
                         f"got {length}." + hint)
        got = as_array(raw, expected.shape, shown, what="a 1-D tensor of characters")
        if close(got, expected):
            continue
        shifted = tokens[max(0, t - context):t].astype(float)
        mistakes = {"That window ends at t − 1: position t reads itself too.": shifted}
        raise NotYet(f"for {shown} expected {fmt(expected)}, got {fmt(got)}." + diagnose(got, mistakes))
    return "the last `context` characters up to t, clipped at 0, on 5 inputs (t = 0 too)."
