"""Run a command with MKL on the code paths it takes on an AMD Zen CPU (for authors).

torch's MKL asks a few of its own service functions which CPU it runs on (an Intel one?
a Zen?) and picks its kernels from the answers. Those functions are called through the
dynamic linker, so a small library loaded first (LD_PRELOAD) can answer "not Intel, a
Zen" on an Intel machine. Everything else is the real CPU. Checked against an AMD EPYC
(Zen 4) on 2026-11-27, with the course as it was then (commit 3d59e87): under this
emulation an Intel Xeon prints that AMD's lines of ../shared/tools/op_hashes.py
--cr-sqrt, 215 of 220 (MKL's float32 products at every shape, its exp, log and erf; the
other five train side by side with torch's foreach square root, which that flag does not
replace) and its float64 lines of ``python -m tools.fingerprint --detail``. The one
routine it does not reproduce is MKL's float32 square root (neither vendor's bytes),
which the course no longer uses. So a change to the course's arithmetic can be checked
for both vendors on one machine:

    python -m tools.as_amd python -m tools.fingerprint --detail
    python -m tools.as_amd python -m pytest notebooks/05_*.ipynb --nbval ...

An emulation is evidence, not proof: the last word is a real AMD CPU. Linux x86-64 with
gcc.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

# Each answer MKL asks for: the Zen's where the emulation needs one, else the real
# function's.
ANSWERS = {"mkl_serv_intel_cpu": 0, "mkl_serv_intel_cpu_true": 0,
           "mkl_serv_cpuiszen": 1}

_SOURCE = "/* MKL's questions about the CPU, answered as on an AMD Zen */\n" + "".join(
    f"int {name}(void) {{ return {value}; }}\n" for name, value in ANSWERS.items())


def torch_library() -> Path:
    """libtorch_cpu.so, which holds torch's MKL (found without importing torch)."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise RuntimeError("torch is not installed in this Python")
    return Path(spec.origin).parent / "lib" / "libtorch_cpu.so"


def library() -> Path:
    """The compiled answers (built once with gcc into ~/.cache/course-as-amd/)."""
    digest = hashlib.sha256(_SOURCE.encode()).hexdigest()[:12]
    target = Path.home() / ".cache" / "course-as-amd" / f"answers-{digest}.so"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        source = target.with_suffix(".c")
        source.write_text(_SOURCE)
        command = ["gcc", "-shared", "-fPIC", "-O2", "-o", str(target), str(source)]
        subprocess.run(command, check=True)
    return target


def environment() -> dict[str, str]:
    """This process's environment with the answers preloaded."""
    if sys.platform != "linux" or not torch_library().is_file():
        raise RuntimeError("the emulation needs Linux and torch's libtorch_cpu.so")
    preload = " ".join(filter(None, [str(library()), os.environ.get("LD_PRELOAD", "")]))
    return {**os.environ, "LD_PRELOAD": preload}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(__doc__.splitlines()[0])
        print("usage: python -m tools.as_amd COMMAND [ARGS...]")
        return 2
    return subprocess.run(argv, env=environment()).returncode


if __name__ == "__main__":
    sys.exit(main())
