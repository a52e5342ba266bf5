"""Homework checks: call ``check_x(your_function)`` and read one line of feedback.

Every check compares the learner's answer with a float64 reference over several inputs,
edge cases included, prints exactly one line that starts with ``✅ Correct`` or
``❌ Not yet:``, and returns True or False. A check never raises: an exception from the
learner's code, a wrong type or shape, NaNs, or a stub that still raises
NotImplementedError all become a ``❌`` line that says what to fix. When a wrong answer
matches a mistake the check knows (a missing scale, a transposed matrix, ...), it names it.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

__all__ = ["check_softmax", "check_attention", "check_permutation_matrix", "check_causal_mask"]

_RTOL, _ATOL = 1e-4, 1e-5


class _NotYet(Exception):
    """A wrong answer: the message says what is wrong, in one line."""


def _verdict(check):
    """Turn a check body (returns the success text or raises _NotYet) into print + bool."""

    @functools.wraps(check)
    def run(*args, **kwargs) -> bool:
        try:
            praise = check(*args, **kwargs)
        except _NotYet as wrong:
            print(f"❌ Not yet: {_one_line(str(wrong))}")
            return False
        except Exception as exc:  # noqa: BLE001 - a check must never raise on an answer
            print(f"❌ Not yet: the check could not judge this answer ({type(exc).__name__}: {_one_line(str(exc))}).")
            return False
        print(f"✅ Correct: {praise}")
        return True

    return run


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 400 else text[:397] + "..."


def _call(fn, args: tuple, shown: str):
    """Call the learner's function; turn its exceptions into a _NotYet that names the input."""
    if not callable(fn):
        raise _NotYet(
            f"expected a function, got {type(fn).__name__}. Pass the function itself, "
            "e.g. check_x(my_function), not my_function(...)."
        )
    try:
        return fn(*args)
    except NotImplementedError:
        raise _NotYet("your function still raises NotImplementedError: replace that line with your code.") from None
    except Exception as exc:  # noqa: BLE001
        raise _NotYet(f"calling it with {shown} raised {type(exc).__name__}: {exc}") from None


def _as_array(value, shape: tuple[int, ...], shown: str, *, what: str = "a tensor") -> np.ndarray:
    """The learner's result as a float64 array of the expected shape, or a _NotYet saying why not."""
    if value is None:
        raise _NotYet(f"for {shown} your function returned None. Did you forget `return`?")
    if isinstance(value, tuple):
        raise _NotYet(f"for {shown} your function returned a tuple of {len(value)} items; return only {what}.")
    if isinstance(value, torch.Tensor):
        if value.is_complex():
            raise _NotYet(f"for {shown} your function returned a complex tensor; expected real numbers.")
        array = value.detach().cpu().to(torch.float64).numpy()
    else:
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise _NotYet(f"for {shown} your function returned {type(value).__name__}; expected {what}.") from None
    if array.shape != tuple(shape):
        raise _NotYet(f"for {shown} expected shape {tuple(shape)}, got {array.shape}.")
    if not np.isfinite(array).all():
        raise _NotYet(f"for {shown} your result contains NaN or inf: {_fmt(array)}.")
    return array


def _fmt(array) -> str:
    """A short, rounded rendering of an array for a one-line message."""
    array = np.round(np.asarray(array, dtype=np.float64), 3) + 0.0  # + 0.0 turns -0.0 into 0.0
    if array.ndim == 0:
        return f"{array:g}"
    if array.size <= 16:
        return "[" + ", ".join(_fmt(row) for row in array) + "]"
    items = ", ".join(f"{x:g}" for x in array.ravel()[:6])
    return f"[{items}, ...] (shape {array.shape})"


def _has_nonfinite(value) -> bool:
    """True when the learner's raw result is a tensor/array holding NaN or inf."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return not bool(torch.isfinite(value).all())
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return not bool(np.isfinite(value).all())
    return False


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=_RTOL, atol=_ATOL))


def _diagnose(got: np.ndarray, mistakes: dict[str, np.ndarray]) -> str:
    """The hint for the first known mistake the answer matches, or ''."""
    for hint, wrong in mistakes.items():
        if _close(got, wrong):
            return " " + hint
    return ""


# --- lesson 00: softmax ----------------------------------------------------------------------

def _softmax_reference(x: np.ndarray) -> np.ndarray:
    shifted = np.exp(x - x.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


_SOFTMAX_CASES = (
    np.array([1.0, 2.0, 3.0]),
    np.array([[1.0, 2.0], [3.0, 5.0]]),
    np.array([0.0, 0.0, 0.0, 0.0]),
    np.array([-3.0]),
    np.array([[2.0, -1.0, 0.5], [0.0, 4.0, 1.0]]),
    np.array([1000.0, 1001.0, 1002.0]),
)


@_verdict
def check_softmax(softmax) -> str:
    """Check ``softmax(x)``: a tensor of the same shape, exp(x) normalised along the last dimension."""
    for case in _SOFTMAX_CASES:
        x = torch.tensor(case, dtype=torch.float32)
        shown = f"x = {_fmt(case)}"
        got = _call(softmax, (x.clone(),), shown)
        if case.max() > 100 and _has_nonfinite(got):
            raise _NotYet(
                f"for {shown} your softmax gives NaN or inf: exp(1000) overflows. Subtract the "
                "row's maximum before exponentiating; softmax(x) = softmax(x - max(x))."
            )
        got = _as_array(got, case.shape, shown)
        expected = _softmax_reference(case)
        if _close(got, expected):
            continue
        with np.errstate(all="ignore"):
            mistakes = {"You return exp(x) without dividing by the sum.": np.exp(case)}
            if case.ndim == 2:
                e = np.exp(case - case.max())
                mistakes["You normalised over the whole tensor; normalise each row (dim=-1)."] = e / e.sum()
                mistakes["You normalised down the columns (dim=0); softmax runs along the last dimension (dim=-1)."] = (
                    e / e.sum(axis=0, keepdims=True)
                )
        raise _NotYet(
            f"for {shown} expected {_fmt(expected)}, got {_fmt(got)}." + _diagnose(got, mistakes)
        )
    return "softmax matches the reference on 6 inputs, including a 2-D batch and x = [1000, 1001, 1002]."


# --- lesson 01: attention --------------------------------------------------------------------

def _attention_cases() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(1)
    shapes = ((4, 3, 4, 2), (3, 3, 3, 3), (1, 2, 1, 4), (5, 4, 2, 3), (2, 6, 5, 1))  # n_q, d_k, n_k, d_v
    cases = [(rng.normal(size=(nq, dk)), rng.normal(size=(nk, dk)), rng.normal(size=(nk, dv))) for nq, dk, nk, dv in shapes]
    # large logits: a softmax without the max-subtraction overflows here
    cases.append((rng.normal(size=(3, 4)) * 40, rng.normal(size=(3, 4)) * 40, rng.normal(size=(3, 2))))
    return cases


def _attend(scores: np.ndarray, v: np.ndarray, axis: int = -1) -> np.ndarray:
    scores = scores - scores.max(axis=axis, keepdims=True)
    weights = np.exp(scores)
    return (weights / weights.sum(axis=axis, keepdims=True)) @ v


@_verdict
def check_attention(attention_fn) -> str:
    """Check ``attention_fn(q, k, v)`` → softmax(q k^T / √d_k) v, shape [n_q, d_v]."""
    for q, k, v in _attention_cases():
        shown = f"q {q.shape}, k {k.shape}, v {v.shape}"
        args = tuple(torch.tensor(a, dtype=torch.float32) for a in (q, k, v))
        got = _call(attention_fn, args, shown)
        if isinstance(got, tuple) and len(got) == 2:
            raise _NotYet("your function returned a pair; return only the output softmax(q k^T / √d_k) v, not the weights.")
        got = _as_array(got, (q.shape[0], v.shape[1]), shown, what="the output tensor")
        d_k = q.shape[1]
        expected = _attend(q @ k.T / math.sqrt(d_k), v)
        if _close(got, expected):
            continue
        mistakes = {
            "It looks like the scores are not divided by √d_k.": _attend(q @ k.T, v),
            "It looks like you divided by d_k instead of √d_k.": _attend(q @ k.T / d_k, v),
            "It looks like the softmax runs down the columns (dim=0); each query's weights (a row, dim=-1) must sum to 1.":
                _attend(q @ k.T / math.sqrt(d_k), v, axis=0) if q.shape[0] == k.shape[0] else np.full_like(expected, np.nan),
        }
        raise _NotYet(f"for {shown} expected {_fmt(expected)}, got {_fmt(got)}." + _diagnose(got, mistakes))
    return "your attention matches softmax(q k^T / √d_k) v on 6 inputs, including n_q = 1, d_v = 1 and large logits."


@_verdict
def check_permutation_matrix(permutation_matrix) -> str:
    """Check ``permutation_matrix(order)`` → P [n, n] with (P @ x)[i] == x[order[i]]."""
    cases = ([2, 0, 1], [0, 1, 2, 3], [1, 0], [0], [3, 0, 4, 1, 2])
    for order in cases:
        n = len(order)
        shown = f"order = {order}"
        got = _call(permutation_matrix, (list(order),), shown)
        got = _as_array(got, (n, n), shown, what="an n×n matrix")
        expected = np.eye(n)[order]
        if _close(got, expected):
            continue
        hint = _diagnose(got, {
            "You built the transpose: P[order[i], i] = 1 moves row i to position order[i]; "
            "we want row i of P @ x to be row order[i] of x, so P[i, order[i]] = 1.": expected.T,
        })
        raise _NotYet(f"for {shown} expected {_fmt(expected)}, got {_fmt(got)}." + hint)
    return "P @ x puts row order[i] of x in row i, for 5 orders including the identity and n = 1."


@_verdict
def check_causal_mask(causal_mask_fn) -> str:
    """Check ``causal_mask_fn(n)`` → bool [n, n], True where query i may attend to key j (j ≤ i)."""
    for n in (4, 1, 6):
        shown = f"n = {n}"
        got = _call(causal_mask_fn, (n,), shown)
        expected = np.tril(np.ones((n, n)))
        array = _as_array(got, (n, n), shown, what="a boolean [n, n] tensor")
        if not _close(array, expected):
            mistakes = {
                "Your mask lets each token see the future: True must sit on and below the diagonal "
                "(torch.tril), not above it.": np.triu(np.ones((n, n))),
                "Your True entries mean 'blocked' (the nn.MultiheadAttention convention); here True "
                "means 'may attend'.": 1.0 - expected,
                "You left out the diagonal: a token may attend to itself (key j = query i).":
                    np.tril(np.ones((n, n)), -1),
            }
            raise _NotYet(f"for {shown} expected {_fmt(expected)}, got {_fmt(array)}." + _diagnose(array, mistakes))
        if not isinstance(got, torch.Tensor) or got.dtype != torch.bool:
            kind = f"a {got.dtype} tensor" if isinstance(got, torch.Tensor) else f"a {type(got).__name__}"
            raise _NotYet(
                f"the pattern is right, but you returned {kind}; attention needs a torch.bool mask "
                "(True = may attend): add .bool()."
            )
    return "True exactly on and below the diagonal, as a torch.bool tensor, for n = 4, 1 and 6."
