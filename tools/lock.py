"""requirements.lock, the verified environment, and binder/requirements.txt, made from it.

    python -m tools.lock [--torch-index URL] [--upgrade]   # `make lock`: re-resolve the lock with
                                                           # uv, then rewrite binder/requirements.txt
    python -m tools.lock --binder                          # rewrite binder/requirements.txt only
    python -m tools.lock --check                           # exit 1 if binder/requirements.txt is
                                                           # not what the lock gives

The lock is ``uv pip compile pyproject.toml --all-extras --universal --python-version 3.11``,
run on a copy of pyproject.toml and the lock in a scratch folder: the copy names ``--torch-index``
(a mirror of PyTorch's CPU-only index) in place of the address in pyproject's
``[[tool.uv.index]]``, so a maintainer behind a mirror, and tests/test_lock.py with a local one,
get exactly the lock that PyTorch's own index gives. uv writes every line, header and ``# via``
comments included; the lock is never edited by hand. The existing lock is uv's starting point:
every pin that still fits is kept (``--upgrade`` moves to the newest versions).

binder/requirements.txt is what ``make lab`` installs on Linux x86-64 with Python 3.11 — the
course's dependencies and its ``lab`` extra, with everything they need — and Notebook 7, which
repo2docker's image starts the server with, at the lock's versions:
the lock's pins whose markers hold there, followed from pyproject's requirements through the
lock's ``# via`` comments. It begins with PyTorch's CPU index as an extra index (pip needs it for
``torch==X+cpu``). repo2docker installs it with pip; tests/test_binder.py checks it is up to date
and simulates Binder's build with it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
LOCK = ROOT / "requirements.lock"
BINDER_REQUIREMENTS = ROOT / "binder" / "requirements.txt"
# The Python the lock is resolved for, the oldest supported one, and the extras it covers.
LOCK_PYTHON = "3.11"
COMPILE = ["pip", "compile", "pyproject.toml", "--all-extras", "--universal", "--python-version",
           LOCK_PYTHON]
TORCH_INDEX_NAME = "pytorch-cpu"
# What `make lab` installs, and so what Binder gets: the dependencies and these extras.
BINDER_EXTRAS = ("lab",)
# And the lock's version of what repo2docker's image already holds and starts the server with
# (`jupyter notebook`, Notebook 7 on jupyter_server): pinned too, so that it agrees with the
# pinned JupyterLab (each Notebook 7.x asks for one JupyterLab 4.x) instead of pip's leaving the
# image's own version beside it.
BINDER_SERVER = ("notebook",)
# Binder's machine, marker by marker: Linux on x86-64, Python 3.11 (binder/runtime.txt), which
# repo2docker takes from conda-forge, its newest 3.11 release. The lock's pins differ only before
# and after 3.11.5 (soupsieve), so 3.11.7, this machine's and CI's, stands for any newer one.
BINDER_MARKERS = dict(sys_platform="linux", platform_system="Linux", platform_machine="x86_64",
                      os_name="posix", implementation_name="cpython",
                      platform_python_implementation="CPython", python_version=LOCK_PYTHON,
                      python_full_version=f"{LOCK_PYTHON}.7")


def normal(name: str) -> str:
    """A package name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def torch_index() -> str:
    """The address of PyTorch's CPU-only index, as pyproject.toml names it for uv."""
    indexes = tomllib.loads(PYPROJECT.read_text())["tool"]["uv"]["index"]
    return next(index["url"] for index in indexes if index["name"] == TORCH_INDEX_NAME)


def uv_environment() -> dict[str, str]:
    """uv resolves with this interpreter and never downloads a Python of its own."""
    return {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_PYTHON": sys.executable}


def uv_executable() -> Path:
    return Path(sys.executable).with_name("uv")


def torch_pin(text: str, platform: str = "linux") -> str:
    """The lock's torch version for Linux (``platform="linux"``) or for every other platform."""
    marker = f"sys_platform {'==' if platform == 'linux' else '!='} 'linux'"
    pins = re.findall(rf"^torch==(\S+) ; {marker}$", text, flags=re.M)
    assert len(pins) == 1, f"requirements.lock must pin torch once for {marker}, found {pins}"
    return pins[0]


def find_links() -> list[Path]:
    """The local folders of wheels pip's configuration points to (its find-links), if any."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True,
                            text=True, timeout=60).stdout
    texts = re.findall(r"find-links='([^']*)'", listed) + [os.environ.get("PIP_FIND_LINKS", "")]
    folders = [Path(word.removeprefix("file://")) for text in texts for word in text.split()]
    return [folder for folder in dict.fromkeys(folders) if folder.is_dir()]


def local_torch_wheels(version: str) -> list[Path]:
    """Wheels of ``torch==version`` (e.g. 2.13.0+cpu) in pip's find-links folders."""
    return sorted({wheel for folder in find_links() for wheel in folder.glob(f"torch-{version}-*.whl")})


def torch_mirror(folder: Path, wheels: list[Path]) -> str:
    """A local stand-in for PyTorch's CPU index in ``folder``: a PEP 503 page for torch that links
    ``wheels`` (the very files PyTorch's index serves). Returns its file:// address."""
    (folder / "torch").mkdir(parents=True, exist_ok=True)
    links = []
    for wheel in wheels:
        (folder / "torch" / wheel.name).symlink_to(wheel)
        links.append(f'<a href="{wheel.name.replace("+", "%2B")}">{wheel.name}</a><br>')
    (folder / "torch" / "index.html").write_text(
        "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n")
    return folder.resolve().as_uri()


def reachable(url: str, timeout: float = 10) -> bool:
    """Whether ``url`` answers (PyTorch's index, from where the tests run)."""
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def project_copy(folder: Path, index: str | None = None) -> Path:
    """pyproject.toml, README.md and requirements.lock copied into ``folder``, with ``index`` in
    place of PyTorch's CPU index in the copy of pyproject.toml. Returns ``folder``."""
    text = PYPROJECT.read_text()
    if index is not None:
        line = f'url = "{torch_index()}"'
        assert text.count(line) == 1, f"pyproject.toml must name {torch_index()} once"
        text = text.replace(line, f'url = "{index}"')
    (folder / "pyproject.toml").write_text(text)
    for name in ("README.md", "requirements.lock"):
        shutil.copy(ROOT / name, folder / name)
    return folder


def compile_lock(index: str | None = None, upgrade: bool = False, header: bool = True,
                 ) -> subprocess.CompletedProcess:
    """Run `make lock`'s uv command in a scratch copy of the project (PyTorch's CPU index, or
    ``index`` in its place); the new lock is in ``.stdout`` when uv succeeds."""
    with tempfile.TemporaryDirectory(prefix="course-lock-") as scratch:
        folder = project_copy(Path(scratch), index)
        args = [str(uv_executable()), *COMPILE, *(["--upgrade"] if upgrade else []),
                *([] if header else ["--no-header"]), "--quiet", "-o", "requirements.lock"]
        result = subprocess.run(args, cwd=folder, capture_output=True, text=True, timeout=600,
                                env=uv_environment())
        if result.returncode == 0:
            result.stdout = (folder / "requirements.lock").read_text()
        return result


def lock_entries(text: str) -> list[tuple[str, str, str | None, list[str]]]:
    """The lock's pins: (name, version, marker or None, the packages that need it ("# via"))."""
    entries = []
    for line in text.splitlines():
        pin = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;]+)(?: ; (.*))?$", line)
        if pin:
            entries.append((normal(pin.group(1)), pin.group(2), pin.group(3), []))
            continue
        via = re.match(r"^    # (?:via ?|  )(.*)$", line)
        if via and via.group(1) and entries:
            entries[-1][3].append(via.group(1))
    return entries


def binder_pins(text: str) -> dict[str, str]:
    """{name: version} of every lock pin that `make lab` installs on Binder's machine."""
    from packaging.markers import Marker
    from packaging.requirements import Requirement

    project = tomllib.loads(PYPROJECT.read_text())["project"]
    wanted = project["dependencies"] + [requirement for extra in BINDER_EXTRAS
                                        for requirement in project["optional-dependencies"][extra]]
    roots = {normal(Requirement(requirement).name) for requirement in wanted} | set(BINDER_SERVER)
    here = [(name, version, [normal(parent.split(" ")[0]) for parent in parents])
            for name, version, marker, parents in lock_entries(text)
            if marker is None or Marker(marker).evaluate(BINDER_MARKERS)]
    pins: dict[str, str] = {}
    grew = True
    while grew:  # a package is needed when a root asks for it, or a needed package does
        grew = False
        for name, version, parents in here:
            if name not in pins and (name in roots or any(parent in pins for parent in parents)):
                pins[name], grew = version, True
    missing = roots - set(pins)
    assert not missing, f"requirements.lock lacks {sorted(missing)}: run `make lock`"
    return dict(sorted(pins.items()))


def binder_requirements(text: str) -> str:
    """binder/requirements.txt for the lock ``text``."""
    pins = binder_pins(text)
    lines = [
        "# Binder's environment: repo2docker installs it with pip (Python from binder/runtime.txt).",
        "# Written by `make lock` (python -m tools.lock --binder) from requirements.lock: the pins that",
        "# `make lab` installs on Linux x86-64 with Python 3.11, the course's dependencies and its lab",
        "# extra, and the notebook package Binder starts the server with. Do not edit:",
        "# tests/test_binder.py fails when it differs from the lock.",
        "# torch is the CPU-only build, from PyTorch's own index.",
        f"--extra-index-url {torch_index()}",
        *(f"{name}=={version}" for name, version in pins.items()),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torch-index", help="a mirror of PyTorch's CPU-only index to resolve torch from")
    parser.add_argument("--upgrade", action="store_true", help="move every pin to the newest version")
    parser.add_argument("--binder", action="store_true", help="only rewrite binder/requirements.txt")
    parser.add_argument("--check", action="store_true", help="exit 1 if binder/requirements.txt is stale")
    args = parser.parse_args(argv)
    if args.check:
        if BINDER_REQUIREMENTS.read_text() != binder_requirements(LOCK.read_text()):
            print("binder/requirements.txt differs from requirements.lock: run `make binder`")
            return 1
        return 0
    if not args.binder:
        index = args.torch_index if args.torch_index not in (None, torch_index()) else None
        result = compile_lock(index, upgrade=args.upgrade)
        if result.returncode != 0:
            print(result.stderr, file=sys.stderr, end="")
            return result.returncode
        LOCK.write_text(result.stdout)
        print(f"wrote {LOCK.relative_to(ROOT)}")
    BINDER_REQUIREMENTS.write_text(binder_requirements(LOCK.read_text()))
    print(f"wrote {BINDER_REQUIREMENTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
