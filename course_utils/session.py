"""Starting a lesson: one call that makes every number reproducible, and an environment check."""

from __future__ import annotations

import random
import sys
from importlib import metadata

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
