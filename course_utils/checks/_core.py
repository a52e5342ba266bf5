"""The machinery every check shares: the one-line verdict, calling the learner's code safely,
reading its result, and naming a recognised mistake.

A check body returns the success text or raises ``NotYet(message)``; ``verdict`` turns that
into one printed line and True/False.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from ._guard import course_switched_off, shortcut_in

RTOL, ATOL = 1e-4, 1e-5


class NotYet(Exception):
    """A wrong answer: the message says what is wrong, in one line."""


def verdict(check):
    """Turn a check body (returns the success text or raises NotYet) into print + bool."""

    @functools.wraps(check)
    def run(*args, **kwargs) -> bool:
        try:
            praise = check(*args, **kwargs)
        except NotYet as wrong:
            print(f"❌ Not yet: {one_line(str(wrong))}")
            return False
        except Exception as exc:  # noqa: BLE001 - a check must never raise on an answer
            print(f"❌ Not yet: the check could not judge this answer ({type(exc).__name__}: {one_line(str(exc))}).")
            return False
        print(f"✅ Correct: {praise}")
        return True

    return run


def one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 400 else text[:397] + "..."


def call(fn, args: tuple, shown: str, allow: tuple[str, ...] = ()):
    """Call the learner's function with the course's lesson functions switched off (all but
    the functions named in ``allow``, the exercise's tools; see _guard.py); turn its
    exceptions into a NotYet that names the input, or the course function it called."""
    if not callable(fn):
        raise NotYet(
            f"expected a function, got {type(fn).__name__}. Pass the function itself, "
            "e.g. check_x(my_function), not my_function(...)."
        )
    try:
        with course_switched_off(allow):
            return fn(*args)
    except NotImplementedError:
        raise NotYet("your function still raises NotImplementedError: replace that line with your code.") from None
    except Exception as exc:  # noqa: BLE001
        shortcut = shortcut_in(exc)
        if shortcut is not None:
            raise NotYet(f"this calls the course's `{shortcut}`: write it yourself (while a "
                         f"check runs your function, the course's own versions are switched "
                         f"off).") from None
        raise NotYet(f"calling it with {shown} raised {type(exc).__name__}: {exc}") from None


def as_array(value, shape: tuple[int, ...], shown: str, *, what: str = "a tensor") -> np.ndarray:
    """The learner's result as a float64 array of the expected shape, or a NotYet saying why not."""
    if value is None:
        raise NotYet(f"for {shown} your function returned None. Did you forget `return`?")
    if isinstance(value, tuple):
        raise NotYet(f"for {shown} your function returned a tuple of {len(value)} items; return only {what}.")
    if is_complex(value):
        raise NotYet(f"for {shown} your function returned complex numbers; expected real numbers.")
    if isinstance(value, torch.Tensor):
        array = value.detach().cpu().to(torch.float64).numpy()
    else:
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise NotYet(f"for {shown} your function returned {type(value).__name__}; expected {what}.") from None
    if array.shape != tuple(shape):
        raise NotYet(f"for {shown} expected shape {tuple(shape)}, got {array.shape}.")
    if not np.isfinite(array).all():
        raise NotYet(f"for {shown} your result contains NaN or inf: {fmt(array)}.")
    return array


def is_complex(value) -> bool:
    """True for a complex tensor, NumPy array or number: converting it to float would drop the imaginary part."""
    if isinstance(value, torch.Tensor):
        return value.is_complex()
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype.kind == "c"
    return isinstance(value, complex)


def fmt(array) -> str:
    """A short, rounded rendering of an array for a one-line message."""
    array = np.asarray(array, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # rounding 1e308 to 3 decimals overflows
        rounded = np.round(array, 3)
    array = np.where(np.isfinite(rounded), rounded, array) + 0.0  # + 0.0 turns -0.0 into 0.0
    if array.ndim == 0:
        return f"{array:g}"
    if array.size <= 16:
        return "[" + ", ".join(fmt(row) for row in array) + "]"
    items = ", ".join(f"{x:g}" for x in array.ravel()[:6])
    return f"[{items}, ...] (shape {array.shape})"


def has_nonfinite(value) -> bool:
    """True when the learner's raw result is a tensor/array holding NaN or inf."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return not bool(torch.isfinite(value).all())
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return not bool(np.isfinite(value).all())
    return False


def close(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=RTOL, atol=ATOL))


def diagnose(got: np.ndarray, mistakes: dict[str, np.ndarray]) -> str:
    """The hint for the first known mistake the answer matches, or ''."""
    for hint, wrong in mistakes.items():
        if close(got, wrong):
            return " " + hint
    return ""


