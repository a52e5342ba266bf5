"""Shared test fixtures: paths into the repository, independent of the working directory."""

import functools
import os
import re
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import settings

# `make test` and CI give the same verdict on every run and every machine: Hypothesis draws its
# examples from a fixed seed (derandomize) and keeps no example database between runs. Authors
# who want fresh random examples choose another profile: HYPOTHESIS_PROFILE=random, or `make
# fuzz` (the fuzz profile: random, ten times the examples, seed printed by the make target).
settings.register_profile("deterministic", derandomize=True, database=None, print_blob=True)
settings.register_profile("random", derandomize=False, database=None, print_blob=True)
settings.register_profile("fuzz", derandomize=False, database=None, print_blob=True)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "deterministic")
settings.load_profile(PROFILE)


def examples(n: int) -> int:
    """A property test's number of examples: n, or ten times n under `make fuzz`."""
    return 10 * n if PROFILE == "fuzz" else n

ROOT = Path(__file__).resolve().parent.parent
# The authoring tools (tools/: execute, student, bench) are not installed: import them from here.
sys.path.insert(0, str(ROOT))

from course_utils.evidence import evidence_record  # noqa: E402 (after the path)
from tools import pretrain  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"
LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def read_lock(environment: dict[str, str] | None = None) -> dict[str, str]:
    """requirements.lock as {normalised package name: pinned version}, for the pins whose
    environment marker holds here (or in ``environment``: marker variables that override ours)."""
    from packaging.markers import Marker

    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;]+)(?: ; (.*))?$", line)
        if match and (match.group(3) is None or Marker(match.group(3)).evaluate(environment)):
            pins[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(2)
    return pins


def lock_python() -> str:
    """The Python version requirements.lock was resolved for (its uv command's --python-version)."""
    match = re.search(r"--python-version (3\.\d+)", (ROOT / "requirements.lock").read_text())
    assert match, "requirements.lock does not say which Python it was resolved for"
    return match.group(1)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture
def course_left_on(monkeypatch):
    """Checks run answers with the course's own functions switched off (checks/_guard.py).
    Tests of a check's logic that build their answers from those functions (a reference, a
    known mistake) use this to leave the course on; tests/test_checks_guard.py tests the
    guard itself."""
    import contextlib

    import course_utils.checks._core as core

    monkeypatch.setattr(core, "course_switched_off", lambda allow=(): contextlib.nullcontext())


def verdict(capsys, check, answer) -> tuple[bool, str]:
    """Run a homework check and assert its contract: it returns a bool and prints exactly one
    line, "✅ Correct…" when it returns True and "❌ Not yet:…" when it returns False, and nothing
    on stderr. Returns (result, the line)."""
    capsys.readouterr()  # drop anything printed before
    result = check(answer)
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert out.err == ""
    assert len(lines) == 1, f"expected one line, got {lines!r}"
    assert type(result) is bool
    assert lines[0].startswith("✅ Correct" if result else "❌ Not yet:")
    return result, lines[0]


def raises_not_implemented(*args):
    raise NotImplementedError()


def raises_value_error(*args):
    raise ValueError("boom")


# Answers a learner might hand a check that are not answers at all; every check must say "❌"
# to each of them and never raise. Test files add junk shaped for their own checks.
COMMON_JUNK = {
    "None": lambda *a: None,
    "int": lambda *a: 3,
    "text": lambda *a: "text",
    "not implemented": raises_not_implemented,
    "value error": raises_value_error,
    "nan": lambda *a: float("nan"),
    "tuple": lambda *a: (1.0, 2.0),
    "wrong shape": lambda *a: torch.zeros(3, 5, 7),
    "complex": lambda *a: torch.zeros(2, dtype=torch.complex64),
}


def pytest_report_header(config) -> list[str]:
    """Name the CPU, the pinned kernels and the numerics fingerprint at the top of every run, so a
    strict-nbval failure on a learner's machine can be told apart from a wrong lesson
    (tools/fingerprint.py; run in a fresh process, under the pins `import course_utils` sets)."""
    import subprocess

    done = subprocess.run([sys.executable, "-m", "tools.fingerprint"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        return [f"numerics fingerprint failed: {done.stderr.strip().splitlines()[-1:]}"]
    return done.stdout.splitlines()


@functools.cache
def _evidence_is_exact_here() -> bool:
    """True where this CPU's float32 fingerprint is the one the evidence record was made with."""
    made_on = evidence_record().get("numerics", {}).get("fingerprint", {})
    return pretrain.fingerprint.reproduces(made_on, pretrain.numerics()["fingerprint"])


def assert_recorded(values, recorded) -> None:
    """The claims tests' re-run equals the evidence record (course_utils/zoo/evidence.json):
    bit for bit where the fingerprint matches, within 0.02 elsewhere."""
    values, recorded = list(values), list(recorded)
    if _evidence_is_exact_here():
        assert values == recorded, "the evidence record is stale: run `make evidence`"
    else:
        assert values == pytest.approx(recorded, abs=0.02)
