"""Starting a lesson: one call that makes every number reproducible, and an environment check."""

from __future__ import annotations

import ctypes
import os
import platform
import random
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import torch

from . import _validate

# The course's figure defaults: PNG figures small enough to keep each lesson under 1.5 MB,
# text readable at 100 % zoom, colour-blind-safe maps.
_MATPLOTLIB_DEFAULTS = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 80,
    "savefig.dpi": 80,
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "image.cmap": "viridis",
    "axes.spines.top": False,
    "axes.spines.right": False,
}


# The math libraries pick their code path from the CPU they find: Intel MKL (torch's BLAS on
# x86-64) takes one path on an Intel chip with AVX-512 and another on an AMD one, torch's own kernels
# come in AVX2 and AVX-512 builds. Each sums in its own order, so the last bits of a float32 matmul
# differ, and a training run that starts a bit apart ends a few thousandths apart: the stored
# numbers would hold on one kind of CPU only. So `import course_utils` asks for one path on every
# x86-64 CPU with AVX2, before anything computes (the libraries read these variables at their
# first computation, not at import; tests/test_session.py proves it):
# - MKL_CBWR=AVX2,STRICT: MKL's conditional-numerical-reproducibility mode on its AVX2 branch.
#   Chosen by measurement (tools/fingerprint.py, whose hashes the test suite prints in its header):
#   on an AMD EPYC with AVX-512 (Zen 5) it gave the very hashes an AMD EPYC without AVX-512 gave
#   (../shared/tools/fingerprint_amd_epyc.txt) for matmul, attention, LayerNorm, softmax, 10 AdamW
#   steps and a float64 L-BFGS fit, in both COMPATIBLE and AVX2 modes; AVX2 runs a 1024² matmul at
#   104 GFLOP/s on one thread there against 40 for COMPATIBLE (MKL's SSE2 branch), and the
#   capstone lesson, which trains seven language models, executes in 22–25 s instead of 42 s.
#   STRICT adds MKL's promise that results do not depend on how the arrays are aligned in memory
#   (same hashes, no measurable cost). AVX512 was no candidate: on the Zen 5 MKL_CBWR=AVX512 gave
#   the AVX2 hashes (MKL keeps its AVX-512 code for Intel chips). MKL promises the AVX2 branch's
#   bits on Intel CPUs with AVX2 only: its developer guide ("Getting Started with Conditional
#   Numerical Reproducibility") says a non-Intel CPU runs the AUTO branch under that setting, and
#   only COMPATIBLE is promised on both. Measured on an Intel Xeon and an AMD EPYC (2026-11-27):
#   the AdamW square root, float32 products of a few shapes and every float64 product differ;
#   reproducible.py computes the first two the same way on both vendors, and `make test` checks
#   a lesson strictly where this CPU's fingerprint equals the lines the lesson recorded (the
#   float64 line only for lessons that fit a probe).
# - ONEDNN_MAX_CPU_ISA=AVX2 and ATEN_CPU_CAPABILITY=avx2: oneDNN's and torch's own AVX2 kernels,
#   never their AVX-512 ones.
# A CPU without AVX2 (or not x86-64: an Apple-silicon Mac, Linux on ARM, where torch uses other
# libraries altogether) cannot take these paths: there the lessons run and teach the same thing,
# but stored numbers may differ in their last digits (`reproduces_stored_outputs` says which case
# applies; `make test` then runs nbval in lax mode plus the claims tests).
AVX2_NUMERICS = {"MKL_CBWR": "AVX2,STRICT", "ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}
# Without AVX2 on x86-64: MKL's reproducible baseline branch (SSE2), oneDNN held to AVX2 at most.
FALLBACK_NUMERICS = {"MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"}
# Windows' IsProcessorFeaturePresent flag for AVX2 (winnt.h: PF_AVX2_INSTRUCTIONS_AVAILABLE).
_PF_AVX2_INSTRUCTIONS_AVAILABLE = 40


def _is_x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def _has_avx2() -> bool:
    """True on an x86-64 CPU with AVX2, read without computing anything: /proc/cpuinfo on Linux,
    sysctl on macOS, IsProcessorFeaturePresent on Windows (False when it cannot be read)."""
    if not _is_x86_64():
        return False
    try:
        if sys.platform.startswith("linux"):
            return re.search(r"^flags\s*:.*\bavx2\b", Path("/proc/cpuinfo").read_text(), re.M) is not None
        if sys.platform == "darwin":
            leaf7 = subprocess.run(["sysctl", "-n", "machdep.cpu.leaf7_features"], capture_output=True,
                                   text=True, timeout=10).stdout
            return "AVX2" in leaf7.upper().split()
        if sys.platform == "win32":
            return bool(ctypes.windll.kernel32.IsProcessorFeaturePresent(_PF_AVX2_INSTRUCTIONS_AVAILABLE))
    except (OSError, AttributeError, ValueError):
        return False
    return False


def reproduces_stored_outputs() -> bool:
    """True where the lessons' stored numbers can be expected bit for bit: an x86-64 CPU with AVX2,
    on which `pin_numerics` fixes the AVX2 code paths. Necessary, not sufficient: the probes'
    float64 products differ between Intel and AMD CPUs (tools.fingerprint decides per lesson)."""
    return _has_avx2()


def pin_numerics() -> dict[str, str]:
    """Set the variables that fix the math libraries' code path (see above), unless already set.

    Returns the variables in force. A variable the user set keeps the user's value.
    """
    if _has_avx2():
        wanted = AVX2_NUMERICS
    elif _is_x86_64():
        wanted = FALLBACK_NUMERICS
    else:
        wanted = {}
    for name, value in wanted.items():
        os.environ.setdefault(name, value)
    return {name: os.environ[name] for name in wanted}


def setup(seed: int = 0) -> None:
    """Seed random, NumPy and torch; one torch thread; deterministic algorithms; figure defaults.

    Every lesson calls this first, so re-running a lesson reproduces its stored outputs.
    """
    seed = _validate.integer(seed, "seed", minimum=0)
    if seed >= 2**32:
        raise ValueError(f"seed must be below 2**32, got {seed}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    pin_numerics()  # already done by `import course_utils`; here in case the variables were cleared
    torch.set_num_threads(1)
    # torch.use_deterministic_algorithms(True) also imports torch's compiler to set that
    # compiler's own flag (0.7 s of every lesson's start); the course never compiles, so
    # only the flag eager code reads is set (torch.are_deterministic_algorithms_enabled).
    torch._C._set_deterministic_algorithms(True)

    import matplotlib

    matplotlib.rcParams.update(_MATPLOTLIB_DEFAULTS)
    if "IPython" in sys.modules:
        from IPython import get_ipython

        if get_ipython() is not None:
            from matplotlib_inline.backend_inline import set_matplotlib_formats

            set_matplotlib_formats("png")


SUPPORTED_PYTHONS = ((3, 11), (3, 12), (3, 13))
# requirements.lock, the verified environment, sits in the course folder next to course_utils/.
LOCK = Path(__file__).resolve().parent.parent / "requirements.lock"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _ranges() -> dict[str, str]:
    """{package: its supported range} for what course_utils needs, from the installed metadata."""
    from packaging.requirements import Requirement

    ranges = {}
    for text in metadata.requires("course-utils") or []:
        requirement = Requirement(text)
        if requirement.marker is not None:  # the lab, test, site … extras
            continue
        lower_first = sorted(map(str, requirement.specifier), key=lambda spec: spec[0] != ">")
        ranges[requirement.name] = ", ".join(lower_first)
    return ranges


def _verified(lock: Path = LOCK) -> dict[str, str]:
    """{package: version} of the verified environment (requirements.lock, its pins for this
    machine's Python and platform), or {} when the course folder is not there (e.g. on Colab)."""
    if not lock.is_file():
        return {}
    from packaging.markers import Marker

    pins = {}
    for line in lock.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;]+)(?: ; (.*))?$", line)
        if match and (match.group(3) is None or Marker(match.group(3)).evaluate()):
            pins[_normal(match.group(1))] = match.group(2)
    return pins


def _in_range(version: str, specifier: str) -> bool:
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(specifier).contains(version.split("+")[0], prereleases=True)


def environment_report() -> bool:
    """Print one line for Python and one per package the lessons need: ✅ the verified version
    (requirements.lock), ⚠️ another supported version, ❌ missing or unsupported; one for the CPU
    (✅ where stored outputs reproduce bit for bit, see `reproduces_stored_outputs`); a verdict.

    Returns True when every line is ✅: then every stored number in the lessons will match.
    """
    version = tuple(sys.version_info[:2])
    verified_python = (3, 11)
    python = "✅" if version == verified_python else "⚠️" if version in SUPPORTED_PYTHONS else "❌"
    print(f"{python} Python {version[0]}.{version[1]} (supported: 3.11, 3.12, 3.13; "
          f"the stored outputs were made with 3.11)")
    marks = [python]
    try:
        ranges = _ranges()
    except metadata.PackageNotFoundError:
        print("❌ course_utils is imported from the source folder but not installed: run `make lab`.")
        return False
    verified = _verified()
    for name, specifier in ranges.items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = None
        pinned = verified.get(_normal(name))
        if installed is None:
            mark, note = "❌", f"missing (needs {specifier})"
        elif not _in_range(installed, specifier):
            mark, note = "❌", f"{installed} (needs {specifier})"
        elif pinned is None or installed.split("+")[0] != pinned.split("+")[0]:  # +cpu: same code
            mark, note = "⚠️", installed + (f" (verified: {pinned})" if pinned else "")
        else:
            mark, note = "✅", installed
        marks.append(mark)
        print(f"{mark} {name} {note}")
    cpu = "✅" if reproduces_stored_outputs() else "⚠️"
    marks.append(cpu)
    if cpu == "✅":
        print("✅ CPU x86-64 with AVX2: the course pins its math kernels (exact numbers)")
    else:
        print(f"⚠️ CPU {platform.machine()}, not x86-64 with AVX2: other math kernels (last digits)")
    if "❌" in marks:
        print("Not supported here: run `make lab` in the course folder (see the README).")
    elif "⚠️" in marks:
        where = "requirements.lock" if verified else "the course's requirements.lock"
        print("Supported: every lesson runs, but trained numbers may differ from the stored ones")
        print(f"in the last digits (the verified versions are in {where}; `make lab` installs them).")
    else:
        print("Ready: every number in the lessons will match.")
    return set(marks) == {"✅"}
