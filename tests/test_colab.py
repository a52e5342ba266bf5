"""Colab: every lesson's set-up cell installs course_utils when it is missing, and a simulated
Colab runs a lesson to the end.

The simulation is a new virtual environment that has what Colab has before a learner does
anything that matters here — its own torch (the local 2.13.0 CPU wheel), a kernel — and no
course_utils. The lesson runs there, outside the course folder, so its first cell must install
the package. It installs from the repository address the lessons name; git is told (through its
`url.<base>.insteadOf` setting, in the environment only) to fetch that address from this
checkout instead, so what gets built and installed is this checkout's committed `main`. pip
takes the other packages the course needs from the package index, as on Colab, with no
constraints: the newest versions inside pyproject's ranges.
"""

import os
import re
import subprocess
import sys
import textwrap
import tomllib

import nbformat
import pytest

import course_utils

from conftest import LESSONS, ROOT

REPOSITORY = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
# The first lines of every lesson's first code cell. Nothing happens where course_utils is
# installed (make lab, Binder, nbval); on Colab it installs the course's package from its
# repository: torch is left as Colab has it (pyproject takes ranges), no restart is needed.
INSTALL = textwrap.dedent(f"""\
    import importlib.util

    if importlib.util.find_spec("course_utils") is None:  # on Colab: install the course
        %pip install -q "git+{REPOSITORY}@main"
        importlib.invalidate_caches()
    """)
LESSON = ROOT / "notebooks" / "01_permutation_equivariance.ipynb"


def _first_code_cell(path) -> str:
    nb = nbformat.read(path, as_version=4)
    return next(cell.source for cell in nb.cells if cell.cell_type == "code")


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda path: path.stem)
def test_every_lessons_first_cell_installs_the_course_when_missing(lesson):
    source = _first_code_cell(lesson)
    assert source.startswith(INSTALL + "\n"), f"{lesson.name}: the set-up cell must begin with\n{INSTALL}"
    assert "setup(" in source


@pytest.mark.parametrize("colab_torch", ["2.8.0+cu126", "2.9.0+cu128", "2.9.0+cpu", "2.13.0+cpu", "2.13.0"])
def test_the_install_keeps_colabs_torch_cpu_or_gpu(colab_torch):
    """pip (Colab's %pip) keeps an installed torch that satisfies the package's range, whatever its
    build label: CUDA (a GPU runtime) or CPU. The lock's CPU pin, and pyproject's uv-only table
    sending Linux torch to PyTorch's CPU index, play no part in this install."""
    from packaging.requirements import Requirement

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    torch = next(Requirement(text) for text in dependencies if Requirement(text).name == "torch")
    assert torch.specifier.contains(colab_torch) and not torch.marker and not torch.url
    assert not any(spec.operator in ("==", "===") for spec in torch.specifier)


def test_readme_has_a_colab_link_for_every_lesson():
    readme = (ROOT / "README.md").read_text()
    base = REPOSITORY.replace("https://github.com/", "https://colab.research.google.com/github/")
    for lesson in LESSONS:
        assert f"({base}/blob/main/notebooks/{lesson.name})" in readme, f"no Colab link for {lesson.name}"
    assert re.search(r"^## On Colab", readme, flags=re.M)


def _run(args, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{args}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


RUN_LESSON = """
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=600, kernel_name="python3").execute()
first = next(c for c in nb.cells if c.cell_type == "code")
print("FIRST CELL:", "".join(o.get("text", "") for o in first.outputs if o.output_type == "stream"))
import importlib.metadata as m
print("INSTALLED:", m.version("course-utils"), "torch", m.version("torch"))
"""


@pytest.mark.skipif(subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "-q", "main"],
                                   capture_output=True).returncode != 0,
                    reason="the checkout has no main branch to install from")
def test_a_fresh_colab_like_environment_installs_the_course_and_runs_a_lesson(tmp_path):
    venv = tmp_path / "colab"
    _run([sys.executable, "-m", "venv", str(venv)], timeout=120)
    python = venv / "bin" / "python"
    # What Colab has before the lesson: torch (the local CPU wheel), a kernel, nothing of ours.
    _run([str(python), "-m", "pip", "install", "-q", "torch==2.13.0", "ipykernel", "nbclient"],
         timeout=900)
    check = "import importlib.util as u; print(u.find_spec('course_utils') is None)"
    assert _run([str(python), "-c", check], cwd=tmp_path).stdout.strip() == "True"

    work = tmp_path / "content"  # Colab's working folder: the lesson alone, no course folder
    work.mkdir()
    (work / LESSON.name).write_bytes(LESSON.read_bytes())
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("VIRTUAL_ENV", "PYTHONPATH", "JUPYTER"))}
    env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0=f"url.{ROOT}.insteadOf",
               GIT_CONFIG_VALUE_0=REPOSITORY, PATH=f"{venv / 'bin'}:{env['PATH']}",
               OMP_NUM_THREADS="1")
    result = _run([str(python), "-c", RUN_LESSON, LESSON.name], cwd=work, env=env, timeout=1200)
    torch_before = "2.13.0+cpu"
    assert f"torch {torch_before}" in result.stdout, "the install must keep the torch it found"
    assert f"INSTALLED: {course_utils.__version__}" in result.stdout
    # The zoo ships inside the installed package: a checkpoint loads, its sha256 checked.
    zoo = _run([str(python), "-c", "from course_utils import pretrained; "
                "print('ZOO', type(pretrained('vit', position='learned', seed=1)).__name__)"],
               cwd=work, env=env, timeout=300)
    assert "ZOO TinyViT" in zoo.stdout
