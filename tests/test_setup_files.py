"""The set-up files agree with each other: pins, conda environment, Makefile, CI, README."""

import re
import subprocess
import tomllib

import pytest
from packaging.requirements import Requirement

from conftest import ROOT, lock_python, read_lock

CONDA_NAME = {"torch": "pytorch-cpu"}
# The conda route (environment.yml, Binder) carries the learner's packages and the tools that run
# nbval; the browser, website, grading and RoPE-reference tools are for CI and teachers.
CONDA_EXTRAS = ("lab", "test")
NOT_IN_CONDA = {"transformers", "uv"}


def _names(requirements: list[str]) -> list[str]:
    return [Requirement(text).name.lower() for text in requirements]


def _conda_packages() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = _names(project["dependencies"])
    for extra in CONDA_EXTRAS:
        names += _names(project["optional-dependencies"][extra])
    return [name for name in names if name not in NOT_IN_CONDA]


def test_torch_is_the_local_cpu_wheel():
    assert read_lock()["torch"] == "2.13.0"


def test_environment_yml_matches_the_lock():
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"^channels:\n  - conda-forge$", text, flags=re.M)
    conda = dict(re.findall(r"^  - ([\w.-]+)=([\w.]+)$", text, flags=re.M))
    assert conda.pop("python") == lock_python()
    lock = read_lock()
    for name in _conda_packages():
        conda_name = CONDA_NAME.get(name, name)
        major_minor = ".".join(lock[name].split(".")[:2])
        assert conda.get(conda_name) == major_minor, (
            f"environment.yml: {conda_name}={conda.get(conda_name)}, requirements.lock {lock[name]}")
    assert "pytorch-cpu" in conda and "pytorch" not in conda, "the conda route must use the CPU build"


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
    # Lax mode only where stored outputs cannot reproduce (not x86-64 with AVX2): tools/fingerprint.py
    test = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "tools.fingerprint --exact; then $(MAKE) --no-print-directory test-exact;" in test
    assert "else $(MAKE) --no-print-directory test-lax;" in test
    assert "--nbval-lax" not in makefile.split("\ntest-exact:", 1)[1].split("\n\n", 1)[0]


def test_make_test_checks_every_lesson_with_one_and_two_threads():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\ntest-exact:", 1)[1].split("\n\n", 1)[0]
    runs = [line for line in recipe.splitlines() if "$(LESSONS) $(NBVAL)" in line]
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
