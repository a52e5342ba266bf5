"""Starting a lesson: one call that makes every number reproducible, and an environment check."""

from __future__ import annotations

import os
import platform
import random
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


# The math libraries pick their code path from the CPU they find: Intel MKL takes one path on an
# Intel chip with AVX-512 and another on an AMD one, torch's own kernels come in AVX2 and AVX-512
# builds. Each path sums in its own order, so the last bits of a float32 matmul differ, and a
# training run that starts a bit apart ends a few thousandths apart: the stored numbers would hold
# on one kind of CPU only. These variables ask for one path on every x86 CPU (MKL's "conditional
# numerical reproducibility" mode and torch's AVX2 kernels; that this makes an AVX-512 Intel chip
# match an AVX2 AMD one is what those modes promise, not yet checked by this course). The
# libraries read them when they first compute, not when they are imported, so `import
# course_utils` sets them before any lesson computes anything (tests/test_session.py proves it).
PORTABLE_NUMERICS = {"MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"}
AVX2_KERNELS = {"ATEN_CPU_CAPABILITY": "avx2"}


def _has_avx2() -> bool:
    """True on an x86-64 Linux CPU that has AVX2 (forcing AVX2 kernels elsewhere would crash or warn)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        return " avx2" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def pin_numerics() -> dict[str, str]:
    """Set the variables that fix the math libraries' code path (see above), unless already set.

    Returns the variables in force. A variable the user set keeps the user's value.
    """
    wanted = dict(PORTABLE_NUMERICS)
    if _has_avx2():
        wanted.update(AVX2_KERNELS)
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
    torch.use_deterministic_algorithms(True)

    import matplotlib

    matplotlib.rcParams.update(_MATPLOTLIB_DEFAULTS)
    if "IPython" in sys.modules:
        from IPython import get_ipython

        if get_ipython() is not None:
            from matplotlib_inline.backend_inline import set_matplotlib_formats

            set_matplotlib_formats("png")


def _pins() -> dict[str, str]:
    """The exact versions course-utils pins, read from its installed metadata."""
    pins = {}
    for requirement in metadata.requires("course-utils") or []:
        if ";" in requirement:  # extras such as the test tools
            continue
        name, _, version = requirement.partition("==")
        pins[name.strip()] = version.strip()
    return pins


def environment_report() -> bool:
    """Print one line per pinned package: the version installed and whether it is the pinned one.

    Returns True when Python is 3.11 and every pinned package has its pinned version.
    """
    ok = sys.version_info[:2] == (3, 11)
    print(f"{'✅' if ok else '❌'} Python {sys.version_info[0]}.{sys.version_info[1]} (the course needs 3.11)")
    try:
        pins = _pins()
    except metadata.PackageNotFoundError:
        print("❌ course_utils is imported from the source folder but not installed: run `make lab`.")
        return False
    for name, pinned in pins.items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = "missing"
        match = installed.split("+")[0] == pinned
        ok &= match
        print(f"{'✅' if match else '❌'} {name} {installed}" + ("" if match else f" (the course pins {pinned})"))
    print("Ready: every number in the lessons will match." if ok else
          "Not the pinned environment: run `make lab` from the course folder.")
    return ok
