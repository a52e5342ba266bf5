"""Binder: the environment repo2docker builds, the postBuild step, and the launch links."""

import os
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

from conftest import LESSONS, ROOT

BINDER = ROOT / "binder"
# Packages Binder's base image installs to run the server; pinning them could fight the image.
BASE_IMAGE_PACKAGES = ("notebook", "jupyter_server", "jupyter-server", "jupyterhub", "jupyterhub-singleuser",
                       "traitlets", "tornado")


def _conda_specs() -> dict[str, str]:
    text = (BINDER / "environment.yml").read_text()
    return dict(re.findall(r"^  - ([\w.-]+)(?:=([\w.*]+))?$", text, flags=re.M))


def _repository() -> str:
    url = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    match = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+)", url)
    assert match, f"pyproject's Repository must be a GitHub address, got {url}"
    return match.group(1)


def test_binder_environment_is_the_root_environment():
    assert (BINDER / "environment.yml").read_bytes() == (ROOT / "environment.yml").read_bytes(), (
        "binder/environment.yml and environment.yml differ: repo2docker reads only binder/, so keep them identical"
    )


def test_binder_environment_is_complete_and_cpu_only():
    text = (BINDER / "environment.yml").read_text()
    assert re.search(r"^channels:\n  - conda-forge\n(?!  - )", text, flags=re.M), "conda-forge only"
    specs = _conda_specs()
    assert specs.get("python") == "3.11"
    assert "pytorch-cpu" in specs and "pytorch" not in specs and not re.search(r"cuda|pytorch-gpu", text)
    for needed in ("numpy", "matplotlib", "ipywidgets", "jupyterlab", "nbval", "ipykernel", "tqdm"):
        assert needed in specs, f"binder/environment.yml lacks {needed}"
    assert specs["ipywidgets"].split(".")[0] == "8" and specs["jupyterlab"].split(".")[0] == "4"
    for package in BASE_IMAGE_PACKAGES:
        assert package not in specs, f"{package} comes with Binder's base image; do not pin it"
    assert "playwright" not in specs, "the browser test's tools are for CI, not for learners"


def test_post_build_is_strict_and_installs_the_course():
    path = BINDER / "postBuild"
    lines = path.read_text().splitlines()
    assert lines[0].startswith("#!") and "bash" in lines[0]
    first_command = next(line for line in lines[1:] if line.strip() and not line.startswith("#"))
    assert first_command == "set -euo pipefail"
    assert "pip install --no-deps -e ." in path.read_text()
    assert os.access(path, os.X_OK), "postBuild must be executable"
    mode = subprocess.run(["git", "ls-files", "-s", "binder/postBuild"], cwd=ROOT, capture_output=True, text=True)
    if mode.stdout:  # committed: git must record the executable bit, or Binder will not run it
        assert mode.stdout.startswith("100755"), mode.stdout
    subprocess.run(["bash", "-n", str(path)], check=True)


@pytest.mark.parametrize("committed", [True, False], ids=["student copies committed", "student copies missing"])
def test_post_build_runs_and_builds_missing_student_copies(tmp_path, committed):
    """Run postBuild in a copy of the course with a stand-in pip that only records its arguments."""
    work = tmp_path / "course"
    shutil.copytree(ROOT / "notebooks", work / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copytree(BINDER, work / "binder")
    shutil.copytree(ROOT / "tools", work / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    if not committed:
        shutil.rmtree(work / "notebooks" / "student")
    fake = tmp_path / "bin"
    fake.mkdir()
    log = tmp_path / "pip.log"
    (fake / "python").write_text(
        "#!/usr/bin/env bash\n"
        f'if [ "$1 $2" = "-m pip" ]; then shift 2; echo "$@" >> {log}; exit 0; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    (fake / "python").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    result = subprocess.run(["bash", "binder/postBuild"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert log.read_text().split() == ["install", "--no-deps", "-e", "."]
    students = sorted(p.name for p in (work / "notebooks" / "student").glob("[0-9][0-9]_*.ipynb"))
    assert students == [p.name for p in LESSONS]
    for name in students:
        built = (work / "notebooks" / "student" / name).read_bytes()
        assert built == (ROOT / "notebooks" / "student" / name).read_bytes(), f"{name}: postBuild built a different copy"


def test_readme_has_a_binder_badge_that_opens_lesson_00_in_jupyterlab():
    readme = (ROOT / "README.md").read_text()
    badge = f"(https://mybinder.org/v2/gh/{_repository()}/HEAD?urlpath=lab/tree/notebooks/00_start_here.ipynb)"
    assert f"[![Launch the course on Binder](https://mybinder.org/badge_logo.svg)]{badge}" in readme
    assert readme.index("badge_logo.svg") < readme.index("## Start")


def test_readme_has_a_binder_link_for_every_lesson():
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"https://mybinder\.org/v2/gh/([\w.-]+/[\w.-]+)/HEAD\?urlpath=lab/tree/([\w/.-]+)", readme)
    assert {repo for repo, _ in links} == {_repository()}, "every Binder link points at the repository in pyproject"
    targets = [path for _, path in links]
    for lesson in LESSONS:
        assert f"notebooks/{lesson.name}" in targets, f"no Binder link for {lesson.name}"
    for path in targets:
        assert (ROOT / path).is_file(), f"a Binder link opens {path}, which does not exist"
    for row in re.findall(r"^\| (\d\d) \| .*$", readme, flags=re.M):
        assert f"lab/tree/notebooks/{row}_" in readme


def test_readme_says_binder_sessions_are_temporary_and_how_to_keep_work():
    section = (ROOT / "README.md").read_text().split("## On Binder", 1)[1].split("\n## ", 1)[0]
    assert "temporary" in section and "Download" in section and "make lab" in section
