"""Fuzzing every homework check with answers that are not answers (issue 6).

The contract of a check: it never raises on a wrong answer, it returns False and prints exactly one
line starting "❌ Not yet:", with nothing on stderr and no warning (a warning shows up in the
notebook as red text under the verdict). The lesson's own solution returns True.

The reference answers are the lessons' solutions themselves, not copies: from every notebook cell
with ``### BEGIN SOLUTION`` the imports and function definitions are run, and the function that
the exercise's test cell (the next cell) passes to its check, ``assert check_x(answer)``, is taken. So a solution that stops passing its check fails here, and
a new check without a solution cell fails ``test_every_check_has_a_lesson_solution``.

Junk comes in two sets: a fixed list (None, numbers, strings, functions that raise every kind of
exception, return NaN, inf, the wrong shape, the wrong dtype, a NumPy array, a list, ...; several
are built from the reference's own result so they have the right shape) run against every check,
and Hypothesis-generated results (random tensors of any shape and dtype, numbers, text, lists).
"""

from __future__ import annotations

import ast
import json
import math
import re
import warnings
from collections.abc import Callable

import numpy as np
import pytest
import torch
from conftest import LESSONS, examples, verdict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import course_utils.checks as checks

EXAMPLES = 50
CHECK_NAMES = sorted(name for name in dir(checks) if name.startswith("check_") and callable(getattr(checks, name)))


# --- the lessons' solutions ----------------------------------------------------------------------

_CHECK_CALL = re.compile(r"^assert (check_\w+)\((\w+)\)[ \t]*$", re.MULTILINE)


def lesson_solutions() -> dict[str, Callable]:
    """{check name: the function a lesson's solution cell passes to it}, from every lesson.

    Only the solution cell's imports and function definitions are run: other statements may use
    names from earlier cells.
    """
    solutions = {}
    for path in LESSONS:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for cell, test in zip(cells, cells[1:]):
            source = "".join(cell["source"])
            if cell["cell_type"] != "code" or "### BEGIN SOLUTION" not in source:
                continue
            tree = ast.parse(source)
            tree.body = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom))]
            namespace = {"math": math, "np": np, "torch": torch}
            exec(compile(tree, str(path), "exec"), namespace)  # noqa: S102 - the course's own lessons
            for check, answer in _CHECK_CALL.findall("".join(test["source"])):
                solutions[check] = namespace[answer]
    return solutions


SOLUTIONS = lesson_solutions()


def test_every_check_has_a_lesson_solution():
    assert set(CHECK_NAMES) == set(checks.__all__), "every check_* in course_utils.checks must be exported"
    assert set(SOLUTIONS) == set(CHECK_NAMES), "every check needs a solution cell in a lesson, and vice versa"


def judge(capsys, check, answer) -> tuple[bool, str]:
    """conftest.verdict (one line, nothing on stderr, returns a bool) plus: no warning at all."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, line = verdict(capsys, check, answer)
    assert not caught, f"the check warned: {[str(w.message) for w in caught]}"
    return result, line


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_the_lesson_solution_passes(capsys, name):
    result, line = judge(capsys, getattr(checks, name), SOLUTIONS[name])
    assert result is True, line


# --- junk ------------------------------------------------------------------------------------------

class _UnprintableError(Exception):
    def __str__(self):
        raise RuntimeError("even its message is broken")


class _Unconvertible:
    """Not a number, not an array: converting it raises."""

    def __array__(self, *args, **kwargs):
        raise RuntimeError("cannot convert")

    def __float__(self):
        raise RuntimeError("cannot convert")


def raising(error: BaseException) -> Callable:
    def answer(*args):
        raise error
    return answer


def returning(value) -> Callable:
    return lambda *args: value


def shaped(make: Callable[[torch.Tensor], object]) -> Callable[[Callable], Callable]:
    """Junk built from the reference's result, so it has the right shape: make(reference result as a tensor)."""
    def build(reference: Callable) -> Callable:
        def answer(*args):
            right = torch.as_tensor(np.asarray(_plain(reference(*args)), dtype=np.float64))
            return make(right)
        return answer
    return build


def _plain(value):
    return value.detach().double().numpy() if isinstance(value, torch.Tensor) else value


def _wrong(right: torch.Tensor) -> torch.Tensor:
    """Right shape, wrong values: 7 everywhere (no check's answer is constant 7)."""
    return torch.full_like(right, 7.0)


def _generator(*args):
    yield 1.0


# name → a function of the reference that gives the junk answer
FIXED_JUNK: dict[str, Callable[[Callable], object]] = {
    "None": lambda ref: None,
    "a number": lambda ref: 3,
    "a string": lambda ref: "text",
    "a tensor, not a function": lambda ref: torch.zeros(3),
    "a list, not a function": lambda ref: [1, 2],
    **{f"raises {error.__name__}": (lambda error: lambda ref: raising(error("junk")))(error)
       for error in (NotImplementedError, ZeroDivisionError, RuntimeError, ValueError, TypeError, IndexError,
                     KeyError, AttributeError, AssertionError, OverflowError, RecursionError, MemoryError)},
    "raises NotImplementedError without a message": lambda ref: raising(NotImplementedError()),
    "raises an error that cannot be printed": lambda ref: raising(_UnprintableError()),
    "raises an error with a message over several lines": lambda ref: raising(ValueError("one\ntwo\n\n  three")),
    "takes no arguments": lambda ref: (lambda: 1.0),
    "returns None": lambda ref: returning(None),
    "returns NaN": lambda ref: returning(float("nan")),
    "returns inf": lambda ref: returning(float("inf")),
    "returns a string": lambda ref: returning("the answer"),
    "returns a dict": lambda ref: returning({"answer": 1}),
    "returns a generator": lambda ref: _generator,
    "returns an unconvertible object": lambda ref: returning(_Unconvertible()),
    "returns a function": lambda ref: returning(ref),
    "returns its first input": lambda ref: (lambda *args: args[0]),
    "returns a pair of answers": lambda ref: (lambda *args: (ref(*args), ref(*args))),
    "returns a 1-tuple": lambda ref: (lambda *args: (ref(*args),)),
    "returns a wrong list": lambda ref: returning([1.0, 2.0, 3.0]),
    "returns a wrong numpy array": lambda ref: returning(np.ones((2, 2))),
    "returns a numpy string array": lambda ref: returning(np.array(["a", "b"])),
    "returns an empty tensor": lambda ref: returning(torch.zeros(0)),
    "returns a 4-D tensor": lambda ref: returning(torch.zeros(2, 3, 4, 5)),
    "returns NaN of the right shape": shaped(lambda r: torch.full_like(r, float("nan"))),
    "returns inf of the right shape": shaped(lambda r: torch.full_like(r, float("inf"))),
    "returns -inf of the right shape": shaped(lambda r: torch.full_like(r, float("-inf"))),
    "returns the largest float64 of the right shape": shaped(lambda r: torch.full_like(r, 1.7e308)),
    "returns the right answer plus one inf": shaped(lambda r: r.flatten().index_fill(0, torch.tensor([0]),
                                                                                     math.inf).reshape(r.shape)),
    "returns the wrong shape": shaped(lambda r: torch.zeros(*(s + 1 for s in r.shape), 2)),
    "returns the right shape transposed and padded": shaped(lambda r: torch.zeros(*reversed(r.shape), 3)),
    "returns ints of the right shape": shaped(lambda r: _wrong(r).long()),
    "returns bools of the right shape": shaped(lambda r: torch.zeros_like(r, dtype=torch.bool)),
    "returns complex of the right shape": shaped(lambda r: _wrong(r).to(torch.complex64)),
    "returns the right answer as complex": shaped(lambda r: r.to(torch.complex128)),
    "returns the right answer as a complex numpy array": shaped(lambda r: r.numpy().astype(np.complex128)),
    "returns float16 of the right shape": shaped(lambda r: _wrong(r).half()),
    "returns bfloat16 of the right shape": shaped(lambda r: _wrong(r).bfloat16()),
    "returns a wrong numpy array of the right shape": shaped(lambda r: _wrong(r).numpy()),
    "returns a wrong list of the right shape": shaped(lambda r: _wrong(r).tolist()),
    "returns a tensor that needs grad": shaped(lambda r: _wrong(r).requires_grad_()),
}


def _settings() -> settings:
    return settings(max_examples=examples(EXAMPLES), deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_fixed_junk_gets_one_not_yet_line(capsys, name):
    check, reference = getattr(checks, name), SOLUTIONS[name]
    failures = []
    for label, make in FIXED_JUNK.items():
        try:
            result, line = judge(capsys, check, make(reference))
        except BaseException as error:  # noqa: BLE001 - collect every broken contract, then report them all
            failures.append(f"{label}: {type(error).__name__}: {error}")
            continue
        if result is not False:
            failures.append(f"{label}: the check said {line!r}")
    assert not failures, f"{name}:\n" + "\n".join(failures)


# --- Hypothesis junk -------------------------------------------------------------------------------

_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.bool,
           torch.complex64)


@st.composite
def random_tensors(draw):
    shape = draw(st.lists(st.integers(0, 5), max_size=4))
    values = torch.randn(shape, generator=torch.Generator().manual_seed(draw(st.integers(0, 2**16))),
                         dtype=torch.float64) * draw(st.sampled_from((1.0, 100.0, 1e30, 1e300)))
    if values.numel() and draw(st.booleans()):
        values.view(-1)[0] = draw(st.sampled_from((math.nan, math.inf, -math.inf)))
    dtype = draw(st.sampled_from(_DTYPES))
    if dtype == torch.bool:
        return values > 0
    if not (dtype.is_floating_point or dtype.is_complex):
        return torch.nan_to_num(values).clamp(-1e6, 1e6).to(dtype)
    return values.to(dtype)


results = st.one_of(
    random_tensors(),
    random_tensors().filter(lambda t: t.dtype != torch.bfloat16).map(lambda t: t.numpy()),
    random_tensors().map(lambda t: t.tolist()),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**30), 10**30),
    st.complex_numbers(),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
    st.lists(st.floats(), max_size=4),
    st.tuples(st.floats(), st.floats()),
)

_EXCEPTIONS = (NotImplementedError, ZeroDivisionError, RuntimeError, ValueError, TypeError, IndexError, KeyError,
               ArithmeticError, LookupError, OSError, Exception)


def _near(reference, scale, noise_seed):
    """The reference's result with random noise added: right shape, (almost always) wrong values."""
    def answer(*args):
        right = torch.as_tensor(np.asarray(_plain(reference(*args)), dtype=np.float64))
        generator = torch.Generator().manual_seed(noise_seed)
        return right + scale * (1 + torch.rand(right.shape, generator=generator, dtype=torch.float64))
    return answer


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_random_junk_gets_one_not_yet_line(capsys, name):
    check, reference = getattr(checks, name), SOLUTIONS[name]
    answers = st.one_of(
        results.map(returning),
        results,  # not even a function
        st.sampled_from(_EXCEPTIONS).map(lambda error: raising(error("random junk"))),
        st.builds(lambda scale, seed: _near(reference, scale, seed),
                  st.sampled_from((1.0, 1e6, -1e3)), st.integers(0, 2**16)),
    )

    @_settings()
    @given(answers)
    def junk(answer):
        result, line = judge(capsys, check, answer)
        assert result is False, line

    junk()


def test_the_fuzzer_catches_a_broken_check(capsys, monkeypatch):
    """The contract can fail: if the checks stop folding a learner's error message onto one line, the
    verdict takes several lines and the fixed junk says so."""
    from course_utils.checks import _core

    monkeypatch.setattr(_core, "one_line", lambda text: text)
    with pytest.raises(AssertionError, match="several lines: .*expected one line"):
        test_fixed_junk_gets_one_not_yet_line(capsys, "check_bos_share")
