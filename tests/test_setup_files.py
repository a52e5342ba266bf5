"""The set-up files agree with each other: lock, Makefile, conda environment, CI, README."""

import re
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, lock_python, read_lock
from tools import lock as locking

LINUX = dict(sys_platform="linux", platform_system="Linux", platform_machine="x86_64", os_name="posix")


def test_torch_on_linux_is_the_cpu_build():
    assert read_lock(LINUX)["torch"] == "2.13.0+cpu"


@pytest.mark.skipif(sys.platform != "linux", reason="the Makefile's Linux route, shown on Linux")
def test_make_installs_linux_torch_alone_first_then_the_rest_without_its_index(tmp_path):
    """On Linux: the lock's torch with --no-deps (from pip's own local wheels, else TORCH_INDEX),
    then everything with the lock as constraints and no PyTorch index, so pip never asks
    PyTorch's index about another package."""
    venv = tmp_path / "venv"
    listed = subprocess.run(["make", "-s", "-n", "install", f"VENV={venv}", "TORCH_INDEX=https://mirror.example/cpu"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    pin = f"torch=={read_lock(LINUX)['torch']}"
    commands = [line for line in listed.replace("\\\n", " ").splitlines() if " -m pip install" in line]
    assert len(commands) == 2, listed
    torch_step, rest = commands
    assert f"--no-deps --no-index {pin} 2> /dev/null" in torch_step
    assert f"--no-deps --index-url https://mirror.example/cpu {pin}" in torch_step
    assert "-c requirements.lock -e '.[lab]'" in rest and "mirror.example" not in rest and "index" not in rest.split("2>")[0]


def test_the_install_stamp_follows_pyproject_and_the_lock():
    """The venv is re-installed when pyproject.toml or requirements.lock changes: their hash
    names the stamp."""
    makefile = (ROOT / "Makefile").read_text()
    assert "KEY := $(shell cat pyproject.toml $(LOCK) |" in makefile
    assert "$(STAMP): pyproject.toml $(LOCK) | $(BIN)/python" in makefile
    assert "rm -f $(VENV)/.installed-* && touch $@" in makefile


def test_environment_yml_is_python_and_pip_from_conda_and_the_lock_through_pip():
    """No version is kept by hand: conda gives Python (the lock's) and pip; pip installs what
    `make lab` does, at the lock's versions, Linux's CPU torch from PyTorch's index."""
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert environment["channels"] == ["conda-forge"]
    assert environment["dependencies"] == [
        f"python={lock_python()}", "pip",
        {"pip": [f"--extra-index-url {locking.torch_index()}", "-c requirements.lock", "-e .[lab]"]}]
    text = (ROOT / "environment.yml").read_text()
    assert not re.search(r"==|pytorch|cuda", text.split("dependencies:")[1].replace("download.pytorch.org", ""))


def test_ci_runs_make_test_and_hides_nothing():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "set -euo pipefail" in ci and "make test" in ci
    assert "|| true" not in ci and "OMP_NUM_THREADS=1" in ci


def test_readme_shows_the_two_commands_first():
    readme = (ROOT / "README.md").read_text()
    first_code = readme.index("```")
    assert readme.index("make lab") >= first_code and readme.index("make test") >= first_code
    assert readme.index("make lab") < readme.index("conda env create")


def test_makefile_runs_strict_nbval_over_every_lesson():
    makefile = (ROOT / "Makefile").read_text()
    for flag in ("--nbval ", "--nbval-current-env", "--nbval-sanitize-with tests/nbval_sanitize.cfg", "--nbval-cell-timeout"):
        assert flag in makefile
    assert "notebooks/[0-9][0-9]_*.ipynb" in makefile
    # Lax mode only for lessons this CPU cannot reproduce (not x86-64 with AVX2, or a fingerprint
    # other than that of the CPU that executed the lesson): tools/fingerprint.py
    test = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert 'test-split STRICT="$$($(BIN)/python -m tools.fingerprint --strict $(LESSONS))"' in test
    assert "LAX = $(filter-out $(STRICT),$(LESSONS))" in makefile
    split = makefile.split("\ntest-split:", 1)[1].split("\n\n", 1)[0]
    assert "pytest tests $(STRICT) $(NBVAL)" in split and "$(LAX) $(NBVAL_LAX)" in split
    assert "--nbval-lax" not in makefile.split("\ntest-exact:", 1)[1].split("\n\n", 1)[0]


def test_make_test_checks_every_lesson_with_one_and_two_threads():
    makefile = (ROOT / "Makefile").read_text()
    for target, lessons in (("test-exact", "$(LESSONS)"), ("test-split", "$(STRICT)")):
        recipe = makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
        runs = [line for line in recipe.splitlines() if f"{lessons} $(NBVAL)" in line]
        assert len(runs) == 2 and "OMP_NUM_THREADS=2" in runs[1] and "OMP_NUM_THREADS" not in runs[0]
    assert "export OMP_NUM_THREADS ?= 1" in makefile
    assert "--dist loadscope" in makefile, "nbval under xdist needs loadscope: a notebook's cells share one kernel"


@pytest.mark.parametrize("version", ["3.10", "3.14", ""])
def test_make_lab_stops_on_an_unsupported_python_with_one_sentence(tmp_path, version):
    """A stand-in `python` that answers the version question; make must stop before any venv."""
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho {version}\n" if version else "#!/bin/sh\nexit 127\n")
    fake.chmod(0o755)
    venv = tmp_path / "venv"
    result = subprocess.run(["make", "-s", "lab", f"PYTHON={fake}", f"VENV={venv}"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and not venv.exists()
    sentence = result.stdout.strip()
    assert sentence.startswith("The course needs Python 3.11, 3.12 or 3.13, but")
    assert (f"is Python {version}:" if version else "is not a Python that runs:") in sentence
    assert len(sentence.splitlines()) == 1 and "Traceback" not in result.stdout + result.stderr


def test_the_supported_pythons_agree():
    """The Makefile's check, the README's first lines and the lock tests name the same Pythons."""
    makefile = (ROOT / "Makefile").read_text()
    assert "SUPPORTED_PYTHONS := 3.11 3.12 3.13" in makefile
    first_lines = "\n".join((ROOT / "README.md").read_text().splitlines()[:12])
    assert "Python 3.11, 3.12 or 3.13" in first_lines


def test_make_fuzz_runs_every_hypothesis_file_with_a_printed_random_seed():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nfuzz:", 1)[1].split("\n\n", 1)[0]
    assert "HYPOTHESIS_PROFILE=fuzz" in recipe and "--hypothesis-seed=$(FUZZ_SEED)" in recipe
    assert "make fuzz FUZZ_SEED=$(FUZZ_SEED)" in recipe, "a failure must say how to reproduce it"
    listed = subprocess.run(["make", "-s", "-n", "fuzz"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60).stdout
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        if "\nfrom hypothesis import" in path.read_text():
            assert f"tests/{path.name}" in listed, f"make fuzz misses {path.name}"


def test_the_package_version_is_pyprojects_and_the_changelog_names_it():
    import tomllib

    import course_utils

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert course_utils.__version__ == version
    assert f"## {version}" in (ROOT / "CHANGELOG.md").read_text(), "CHANGELOG.md needs a section for this version"
