"""Tests for course_utils.session: setup(seed) and environment_report()."""

from __future__ import annotations

import random
import sys
from importlib import metadata

import matplotlib
import numpy as np
import pytest
import torch

from course_utils import environment_report, setup
from course_utils import session


@pytest.fixture(autouse=True)
def restore_global_state():
    """setup() changes process-wide state; put it back so other test files are unaffected."""
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch_rng = torch.get_rng_state()
    np_rng = np.random.get_state()
    py_rng = random.getstate()
    rc = matplotlib.rcParams.copy()
    yield
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(deterministic)
    torch.set_rng_state(torch_rng)
    np.random.set_state(np_rng)
    random.setstate(py_rng)
    matplotlib.rcParams.update(rc)


def draws():
    return torch.randn(5), np.random.rand(5), [random.random() for _ in range(5)]


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**32 - 1])
def test_same_seed_same_numbers(seed):
    setup(seed)
    t1, n1, r1 = draws()
    draws()  # move every generator on
    setup(seed)
    t2, n2, r2 = draws()
    assert torch.equal(t1, t2)
    assert np.array_equal(n1, n2)
    assert r1 == r2


def test_different_seeds_differ():
    setup(0)
    t0, n0, r0 = draws()
    setup(1)
    t1, n1, r1 = draws()
    assert not torch.equal(t0, t1)
    assert not np.array_equal(n0, n1)
    assert r0 != r1


def test_default_seed_is_zero():
    setup()
    a = draws()
    setup(0)
    b = draws()
    assert torch.equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[2] == b[2]


def test_threads_and_determinism():
    torch.use_deterministic_algorithms(False)
    setup(3)
    assert torch.get_num_threads() == 1
    assert torch.are_deterministic_algorithms_enabled()


def test_figure_defaults():
    setup(0)
    assert tuple(matplotlib.rcParams["figure.figsize"]) == (6.4, 3.6)
    assert matplotlib.rcParams["figure.dpi"] == 80
    assert matplotlib.rcParams["image.cmap"] == "viridis"


def test_numpy_integer_seed():
    setup(np.int64(7))
    a = torch.randn(3)
    setup(7)
    assert torch.equal(a, torch.randn(3))


@pytest.mark.parametrize("seed", [-1, -(2**40), 2**32, 2**64])
def test_seed_out_of_range(seed):
    with pytest.raises(ValueError, match="seed"):
        setup(seed)


@pytest.mark.parametrize("seed", [1.5, 1.0, "1", None, True])
def test_seed_wrong_type(seed):
    with pytest.raises(TypeError, match="seed"):
        setup(seed)


def test_refused_seed_changes_nothing():
    torch.use_deterministic_algorithms(False)
    before = torch.get_rng_state()
    with pytest.raises(ValueError):
        setup(2**32)
    assert torch.equal(torch.get_rng_state(), before)
    assert not torch.are_deterministic_algorithms_enabled()


# --- environment_report ----------------------------------------------------------------------

def _report(capsys) -> tuple[bool, list[str]]:
    ok = environment_report()
    return ok, capsys.readouterr().out.splitlines()


def _line(lines: list[str], name: str) -> str:
    return next(line for line in lines if line.split()[1] == name)


def test_environment_report(capsys):
    ok, lines = _report(capsys)
    assert ok is True, "the tests run in the verified environment (requirements.lock)"
    ranges = session._ranges()
    assert {"torch", "numpy", "scikit-learn"} <= set(ranges)
    # one line for Python, one per package, one for the CPU, one verdict
    assert len(lines) == len(ranges) + 3
    assert lines[0].startswith("✅ Python 3.11")
    assert lines[-2].startswith("✅ CPU x86-64 with AVX2") == session.reproduces_stored_outputs()
    for line, name in zip(lines[1:-2], ranges):
        assert line.startswith("✅ ") and line.split()[1] == name
    assert lines[-1] == "Ready: every number in the lessons will match."
    assert all(len(line) <= 88 for line in lines)


def test_ranges_come_from_the_installed_metadata():
    ranges = session._ranges()
    assert ranges["torch"].startswith(">=") and "==" not in "".join(ranges.values())
    assert "pytest" not in ranges and "jupyterlab" not in ranges  # extras are not the lessons' needs


def test_verified_versions_come_from_the_lock(tmp_path):
    # On Linux the lock pins PyTorch's CPU-only build; elsewhere PyPI's wheel (also a CPU build).
    assert session._verified()["torch"] == ("2.13.0+cpu" if sys.platform.startswith("linux") else "2.13.0")
    assert session._verified(tmp_path / "absent.lock") == {}
    lock = tmp_path / "requirements.lock"
    lock.write_text("numpy==1.0 ; sys_platform == 'nowhere'\nnumpy==2.0\n    # via x\n")
    assert session._verified(lock) == {"numpy": "2.0"}


def test_another_supported_version_is_a_warning_not_a_failure(capsys, monkeypatch):
    real_version = metadata.version
    monkeypatch.setattr(session.metadata, "version",
                        lambda name: "1.26.4" if name == "numpy" else real_version(name))
    ok, lines = _report(capsys)
    assert ok is False
    assert _line(lines, "numpy").startswith("⚠️") and "(verified: 2.4.6)" in _line(lines, "numpy")
    assert lines[-2].startswith("Supported: every lesson runs") and "last digits" in lines[-1]


def test_a_missing_or_unsupported_package_fails(capsys, monkeypatch):
    real_version = metadata.version

    def fake_version(name):
        if name == "numpy":
            return "1.0.0"
        if name == "tqdm":
            raise metadata.PackageNotFoundError(name)
        return real_version(name)

    monkeypatch.setattr(session.metadata, "version", fake_version)
    ok, lines = _report(capsys)
    assert ok is False
    assert _line(lines, "numpy").startswith("❌") and "1.0.0 (needs >=1.26, <3)" in _line(lines, "numpy")
    assert _line(lines, "tqdm").startswith("❌") and "missing" in _line(lines, "tqdm")
    assert lines[-1].startswith("Not supported here")


@pytest.mark.parametrize("version, mark", [((3, 12), "⚠️"), ((3, 13), "⚠️"), ((3, 10), "❌"),
                                           ((3, 14), "❌")])
def test_environment_report_names_the_python(capsys, monkeypatch, version, mark):
    monkeypatch.setattr(session.sys, "version_info", (*version, 0, "final", 0))
    ok, lines = _report(capsys)
    assert ok is False
    assert lines[0].startswith(f"{mark} Python {version[0]}.{version[1]} (supported: 3.11")


def test_environment_report_on_colab_without_the_course_folder(capsys, monkeypatch):
    """Installed from the repository, the package has no requirements.lock beside it."""
    monkeypatch.setattr(session, "LOCK", session.LOCK.with_name("absent.lock"))
    monkeypatch.setattr(session, "_verified", lambda lock=None: {})
    ok, lines = _report(capsys)
    assert ok is False
    assert _line(lines, "torch").startswith("⚠️") and "verified" not in _line(lines, "torch")
    assert "the course's requirements.lock" in lines[-1]


def test_environment_report_accepts_a_local_version_suffix(capsys, monkeypatch):
    pinned = session._verified()["torch"]
    real_version = metadata.version
    monkeypatch.setattr(session.metadata, "version",
                        lambda name: f"{pinned}+cu121" if name == "torch" else real_version(name))
    _, lines = _report(capsys)
    assert _line(lines, "torch").startswith("✅")


def test_environment_report_without_installed_metadata(capsys, monkeypatch):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(session.metadata, "requires", not_installed)
    ok, lines = _report(capsys)
    assert ok is False
    assert any(line.startswith("❌") for line in lines)


# --- one code path for the math libraries on every CPU ---------------------------------------------

_PINNED = ("MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY")
# A float32 matmul and a long sum: both take a different summation order on MKL's default path
# and torch's AVX-512/AVX2/default kernels, so their last bits tell which path ran.
_PROBE = """
import os, sys, torch
{before}
torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
a, b = torch.randn(64, 333, generator=g), torch.randn(333, 47, generator=g)
print(repr((a @ b).double().sum().item()), repr(torch.randn(100_003, generator=g).sum().item()),
      {{name: os.environ.get(name) for name in {names}}})
"""


def _probe(before: str, **env: str) -> str:
    import os
    import subprocess

    clean = {k: v for k, v in os.environ.items() if k not in _PINNED}
    code = _PROBE.format(before=before, names=_PINNED)
    return subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True,
                          text=True, check=True).stdout


def test_importing_the_course_pins_the_code_path_before_anything_computes():
    """`import course_utils` after `import torch` gives the very numbers of a process started with
    the variables already set: the libraries read them at their first computation."""
    pinned = session.AVX2_NUMERICS if session._has_avx2() else session.FALLBACK_NUMERICS
    assert _probe("import course_utils") == _probe("", **pinned)
    assert f"'MKL_CBWR': '{pinned['MKL_CBWR']}'" in _probe("import course_utils")


def test_the_pinned_mkl_branch_is_avx2_and_strict_where_the_cpu_has_avx2():
    """The fastest branch whose fingerprint matched across the CPUs we compared (session.py)."""
    assert session.AVX2_NUMERICS == {"MKL_CBWR": "AVX2,STRICT", "ONEDNN_MAX_CPU_ISA": "AVX2",
                                     "ATEN_CPU_CAPABILITY": "avx2"}


def test_the_pinned_branch_changes_the_numbers():
    """The variables really reach MKL: its SSE2 branch (COMPATIBLE) sums in another order."""
    if not session._has_avx2():
        pytest.skip("needs an x86-64 CPU with AVX2 (MKL's AVX2 branch)")
    assert _probe("", MKL_CBWR="COMPATIBLE") != _probe("", MKL_CBWR="AVX2,STRICT")


@pytest.mark.parametrize("machine, system, has, pins", [
    ("x86_64", "linux", True, "AVX2,STRICT"),
    ("AMD64", "win32", True, "AVX2,STRICT"),
    ("x86_64", "darwin", True, "AVX2,STRICT"),
    ("x86_64", "linux", False, "COMPATIBLE"),
    ("arm64", "darwin", False, None),
    ("aarch64", "linux", False, None),
])
def test_pins_by_platform(monkeypatch, machine, system, has, pins):
    """AVX2 is read without computing on Linux (/proc/cpuinfo), macOS (sysctl) and Windows
    (IsProcessorFeaturePresent); arm64 gets no x86 pins, and no promise of bit-equal outputs."""
    import subprocess
    import types

    monkeypatch.setattr(session.platform, "machine", lambda: machine)
    monkeypatch.setattr(session.sys, "platform", system)
    flags = "fpu sse2 avx avx2 fma" if has else "fpu sse2 avx"
    monkeypatch.setattr(session.Path, "read_text", lambda self: f"processor\t: 0\nflags\t\t: {flags}\n")
    leaf7 = "RDWRFSGS TSC_THREAD_OFFSET BMI1 " + ("AVX2 " if has else "") + "SMEP BMI2"
    monkeypatch.setattr(session.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=leaf7 + "\n"))
    kernel32 = types.SimpleNamespace(IsProcessorFeaturePresent=lambda flag: int(has and flag == 40))
    monkeypatch.setattr(session.ctypes, "windll", types.SimpleNamespace(kernel32=kernel32), raising=False)
    for name in _PINNED:
        monkeypatch.delenv(name, raising=False)
    assert session._has_avx2() is has
    assert session.reproduces_stored_outputs() is has
    assert session.pin_numerics().get("MKL_CBWR") == pins


def test_a_variable_the_user_set_is_kept(monkeypatch):
    monkeypatch.setenv("MKL_CBWR", "AUTO")
    assert session.pin_numerics()["MKL_CBWR"] == "AUTO"


def test_environment_report_on_a_cpu_without_avx2_warns_about_the_last_digits(capsys, monkeypatch):
    monkeypatch.setattr(session, "reproduces_stored_outputs", lambda: False)
    ok, lines = _report(capsys)
    assert ok is False
    assert lines[-3].startswith("⚠️ CPU ") and "last digits" in lines[-3]
    assert lines[-2].startswith("Supported: every lesson runs")


def test_a_cpu_build_suffix_on_either_side_is_the_verified_version(capsys, monkeypatch, tmp_path):
    """requirements.lock pins torch 2.13.0+cpu on Linux: an installed 2.13.0 (or +cu130) is the
    same code on the CPU, so it is ✅, like 2.13.0+cpu against a lock that says 2.13.0."""
    lock = tmp_path / "requirements.lock"
    lock.write_text(f"torch=={metadata.version('torch').split('+')[0]}+cpu\n")
    verified = session._verified
    monkeypatch.setattr(session, "_verified", lambda: verified(lock))
    assert session._verified()["torch"].endswith("+cpu")
    ok, lines = _report(capsys)
    assert _line(lines, "torch").startswith("✅")
