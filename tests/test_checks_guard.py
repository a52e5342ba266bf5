"""Homework a teacher can trust (issue 41): no answer scores by calling the course's own
implementation, and no rebound or patched check scores either.

While a check runs an answer, every function of the course's lesson modules is switched
off (course_utils/checks/_guard.py), so the twin that the lesson imports beside its
exercise raises, however the answer reaches it. The locked test cell imports its check
afresh and its hidden part judges again with ``fresh_check``, a copy of the checks read
from disk.
"""

from __future__ import annotations

import functools
import math

import pytest
import torch
from conftest import verdict

import course_utils
import course_utils.checks as checks
from course_utils.checks import _guard
from course_utils.checks._fresh import fresh_check

# Each exercise whose lesson imports (or whose course holds) the same job, and an answer
# that hands the work to it. The stand-in raises as soon as it is called, whatever the
# arguments, so the answers need not match the twin's signature.
SHORTCUTS = {
    "check_attention": lambda q, k, v: course_utils.attention(q, k, v)[0],
    "check_causal_mask": lambda n: course_utils.causal_mask(n),
    "check_wavelengths": lambda d, base: (
        2 * math.pi / course_utils.frequencies(d, base=base)
    ),
    "check_sinusoidal_encoding": lambda n, d: course_utils.sinusoidal_encoding(n, d),
    "check_offset_similarity": lambda k, d: course_utils.offset_similarity([k], d)[0],
    "check_offset_map": lambda k, d: course_utils.offset_matrix(k, d),
    "check_alibi_bias": lambda n, slope: course_utils.alibi_bias(n, 1, slopes=[slope])[
        0
    ],
    "check_rope_rotate": lambda x: course_utils.rope_rotate(x),
    "check_rope_permutation": lambda d: course_utils.rope_permutation(d),
    "check_rope_complex": lambda x, p: course_utils.rope_rotate(x, positions=p),
    "check_decode_step": lambda q, k, v, ck, cv: course_utils.rope_decode_step(
        q, k, v, ck, cv
    )[0],
    "check_variance_explained_by": lambda f, labels: course_utils.variance_explained(
        f, labels
    ),
    "check_patchify": lambda images, p: course_utils.patchify(images, p),
    "check_sinusoidal_2d": lambda h, w, d: course_utils.sinusoidal_encoding_2d(h, w, d),
    "check_position_ids": lambda ids: course_utils.position_ids(ids),
    "check_mrope_positions": lambda segments: course_utils.mrope_positions(segments),
}


@pytest.mark.parametrize("name", sorted(SHORTCUTS))
def test_an_answer_that_calls_the_course_scores_nothing(capsys, name):
    result, line = verdict(capsys, getattr(checks, name), SHORTCUTS[name])
    assert (
        result is False
        and "this calls the course's" in line
        and "write it yourself" in line
    )
    # and the course works again afterwards
    assert course_utils.sinusoidal_encoding(3, 4).shape == (3, 4)


def test_no_route_to_a_twin_gets_through(capsys):
    """An alias, a default argument, a closure, the module attribute, a
    functools.partial, or another course function that calls the twin: each reaches a
    function whose code is switched off."""
    alias = course_utils.sinusoidal_encoding

    def with_default(n, d, encode=course_utils.sinusoidal_encoding):
        return encode(n, d)

    def closure():
        encode = course_utils.encodings.sinusoidal_encoding
        return lambda n, d: encode(n, d)

    routes = {
        "alias": lambda n, d: alias(n, d),
        "default": with_default,
        "closure": closure(),
        "module": lambda n, d: course_utils.encodings.sinusoidal_encoding(n, d),
        "partial": functools.partial(course_utils.sinusoidal_encoding),
        # the models' own code module (infrastructure) builds its table with the twin
        "a course class": lambda n, d: course_utils.input_codes.SinusoidalPosition(
            d, n
        )(n),
    }
    for route, answer in routes.items():
        result, line = verdict(capsys, checks.check_sinusoidal_encoding, answer)
        assert result is False and "this calls the course's" in line, route


def test_every_lesson_function_is_off_while_an_answer_runs():
    """Every public function of course_utils outside the infrastructure (argument
    checks, session, display, the models' arithmetic and family, training, data, zoo)
    raises under the guard, and works again after it."""
    lesson_functions = [
        name
        for name in course_utils.__all__
        if callable(getattr(course_utils, name))
        and not isinstance(getattr(course_utils, name), type)
        and getattr(course_utils, name).__module__.split(".")[1]
        not in _guard.INFRASTRUCTURE
    ]
    assert len(lesson_functions) > 100
    with _guard.course_switched_off():
        for name in lesson_functions:
            with pytest.raises(RuntimeError, match=_guard.MARKER):
                getattr(course_utils, name)()
    assert course_utils.offset_matrix(1.0, 4).shape == (4, 4)


def test_a_tool_the_exercise_hands_over_still_runs():
    """Lesson 11's decode step rotates with rope_rotate: that one runs (with the course
    on inside it), its twin rope_decode_step does not."""
    x = torch.randn(3, 4, dtype=torch.float64)
    with _guard.course_switched_off(allow=("rope_rotate",)):
        assert course_utils.rope_rotate(x).shape == (3, 4)
        with pytest.raises(RuntimeError, match="rope_decode_step"):
            course_utils.rope_decode_step(x[:1], x[1:2], x[2:])
    assert course_utils.rope_decode_step(x[:1], x[1:2], x[2:]) is not None


def _right(n, d):
    t = torch.arange(n, dtype=torch.float64)[:, None]
    w = 10_000.0 ** (-2 * torch.arange(d // 2, dtype=torch.float64) / d)
    code = torch.zeros(n, d, dtype=torch.float64)
    code[:, 0::2], code[:, 1::2] = torch.sin(t * w), torch.cos(t * w)
    return code


def test_a_fresh_check_ignores_rebound_and_patched_checks(monkeypatch):
    """What a learner's cell can do before the locked test cell: rebind the name, patch
    the package's attribute, patch the machinery every check shares. The copy from disk
    still judges."""
    wrong = lambda n, d: _right(n, d).flip(1)  # noqa: E731 - sine and cosine swapped
    monkeypatch.setattr(checks, "check_sinusoidal_encoding", lambda f: True)
    monkeypatch.setattr(checks.encodings, "check_sinusoidal_encoding", lambda f: True)
    monkeypatch.setattr(checks._core, "close", lambda a, b: True)
    monkeypatch.setattr(_guard, "course_switched_off", lambda allow=(): None)
    assert checks.check_sinusoidal_encoding(wrong) is True  # the patches are in force
    assert fresh_check("check_sinusoidal_encoding")(wrong) is False
    assert fresh_check("check_sinusoidal_encoding")(_right) is True
    shortcut = lambda n, d: course_utils.sinusoidal_encoding(n, d)  # noqa: E731
    assert fresh_check("check_sinusoidal_encoding")(shortcut) is False


def test_a_fresh_check_is_quiet_and_checks_its_name(capsys):
    assert fresh_check("check_sinusoidal_encoding")(_right) is True
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="name"):
        fresh_check("sinusoidal_encoding")
    with pytest.raises(ValueError, match="no check_nothing"):
        fresh_check("check_nothing")


def test_reloading_the_fresh_module_undoes_a_patch_of_it(monkeypatch):
    """The hidden test calls reload(_fresh).fresh_check: a cell that replaced
    fresh_check with one that always passes is undone by the reload (the module runs
    again from its file)."""
    from importlib import reload

    from course_utils.checks import _fresh

    wrong = lambda n, d: _right(n, d).flip(1)  # noqa: E731
    monkeypatch.setattr(_fresh, "fresh_check", lambda name: lambda answer: True)
    assert reload(_fresh).fresh_check("check_sinusoidal_encoding")(wrong) is False
