"""Binder: the environment repo2docker builds (from requirements.lock), the postBuild step, a
simulated Binder build, and the launch links."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

import course_utils

from conftest import LESSONS, ROOT, lock_python, read_lock
from tools import lock as locking

BINDER = ROOT / "binder"
REQUIREMENTS = BINDER / "requirements.txt"
# What Binder does not get: the authoring, test, website, grading and browser tools.
NOT_ON_BINDER = ("pytest", "nbval", "hypothesis", "pytest-xdist", "transformers", "uv", "playwright",
                 "nbgrader", "jupyter-book", "sphinx-mathjax-offline")


def _repository() -> str:
    url = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    match = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+)", url)
    assert match, f"pyproject's Repository must be a GitHub address, got {url}"
    return match.group(1)


def _pins(text: str) -> dict[str, str]:
    return {locking.normal(name): version for name, version
            in re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$", text, flags=re.M)}


def test_binder_takes_the_pip_route_with_python_3_11():
    """repo2docker prefers a conda environment.yml to requirements.txt: binder/ has none."""
    files = sorted(path.name for path in BINDER.iterdir())
    assert files == ["README.md", "postBuild", "requirements.txt", "runtime.txt"], files
    assert (BINDER / "runtime.txt").read_text() == f"python-{lock_python()}\n"


def test_binder_requirements_are_written_from_the_lock():
    """binder/requirements.txt is what tools/lock.py makes of requirements.lock (`make binder`)."""
    assert REQUIREMENTS.read_text() == locking.binder_requirements(locking.LOCK.read_text()), (
        "binder/requirements.txt differs from requirements.lock: run `make binder`")


def test_binder_requirements_are_the_locks_linux_pins_for_make_lab():
    text = REQUIREMENTS.read_text()
    options = [line for line in text.splitlines() if line.startswith("-")]
    assert options == [f"--extra-index-url {locking.torch_index()}"], "only PyTorch's CPU index"
    pins = _pins(text)
    lock = read_lock(locking.BINDER_MARKERS)
    assert pins["torch"] == "2.13.0+cpu" == lock["torch"]
    assert all(lock[name] == version for name, version in pins.items()), "every pin is the lock's"
    for needed in ("numpy", "matplotlib", "scikit-learn", "ipywidgets", "tqdm", "jupyterlab",
                   "ipykernel", "nbformat", "nbclient", "jupyter-server", "tornado", "notebook"):
        assert needed in pins, f"binder/requirements.txt lacks {needed}"
    for tool in NOT_ON_BINDER:
        assert tool not in pins, f"{tool} is an authoring or test tool: Binder does not get it"
    assert not [name for name in pins if re.match(r"(nvidia|cuda|triton)\b", name)]


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


# --- a simulated Binder build ------------------------------------------------------------------

# What repo2docker builds from: the files of the repository that the build and a lesson use.
COURSE_FILES = ("binder", "course_utils", "notebooks", "tools", "tests/nbval_sanitize.cfg",
                "pyproject.toml", "README.md", "requirements.lock")
LESSON = "notebooks/01_permutation_equivariance.ipynb"
# pip's note about this machine's partial local package folders (see the Makefile's PIP_NOTES).
LOCAL_FOLDER_NOTE = re.compile(r"^WARNING: Location 'file://.*' is ignored: it is neither a file nor a directory\.$")


def _python_3_11() -> str | None:
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    return shutil.which("python3.11")


def _run(args, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{args}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def binder_build(tmp_path_factory) -> dict:
    """repo2docker's steps for binder/: a new Python 3.11 environment, `pip install -r
    binder/requirements.txt`, then binder/postBuild in the repository (a copy of its files here).

    PyTorch's CPU index cannot be reached from this course's machines. There, the requirements'
    `--extra-index-url` line names a local stand-in for it instead (tools/lock.py torch_mirror),
    which serves the very wheel of the pinned torch that lies on disk (pip's find-links); every
    other line is used as it is. Where the index answers, the file is used unchanged."""
    python = _python_3_11()
    if python is None:
        pytest.skip("Binder's Python is 3.11 (binder/runtime.txt) and there is none here: not simulated")
    folder = tmp_path_factory.mktemp("binder")
    work = folder / "course"
    for name in COURSE_FILES:
        source, target = ROOT / name, work / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        else:
            shutil.copy(source, target)
    index = locking.torch_index()
    if not locking.reachable(index + "/torch/"):
        wheels = locking.local_torch_wheels(locking.torch_pin(locking.LOCK.read_text()))
        if not wheels:
            pytest.skip(f"{index} cannot be reached and no wheel of the pinned torch lies in pip's "
                        f"find-links folders: Binder's build not simulated")
        stand_in = locking.torch_mirror(folder / "torch-index", wheels)
        requirements = work / "binder" / "requirements.txt"
        requirements.write_text(requirements.read_text().replace(
            f"--extra-index-url {index}\n", f"--extra-index-url {stand_in}\n"))
    venv = folder / "env"
    _run([python, "-m", "venv", str(venv)], timeout=120)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("VIRTUAL_ENV", "PYTHONPATH", "JUPYTER"))}
    env.update(PATH=f"{venv / 'bin'}:{env['PATH']}", PIP_DISABLE_PIP_VERSION_CHECK="1",
               JUPYTER_CONFIG_DIR=str(folder / "jupyter-config"), JUPYTER_DATA_DIR=str(folder / "jupyter-data"),
               JUPYTER_RUNTIME_DIR=str(folder / "jupyter-runtime"), OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    started = time.monotonic()
    installed = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-r",
                      "binder/requirements.txt"], cwd=work, env=env, timeout=900)
    warnings = [line for line in installed.stderr.splitlines() if line and not LOCAL_FOLDER_NOTE.match(line)]
    post_build = _run(["bash", "binder/postBuild"], cwd=work, env=env, timeout=300)
    return dict(venv=venv, work=work, env=env, pip_warnings=warnings, post_build=post_build,
                seconds=time.monotonic() - started)


def test_binder_build_installs_exactly_the_requirements(binder_build):
    venv = binder_build["venv"]
    assert not binder_build["pip_warnings"], binder_build["pip_warnings"]
    frozen = _run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"]).stdout
    installed = {locking.normal(dist["name"]): dist["version"] for dist in json.loads(frozen)}
    assert installed.pop("course-utils") == course_utils.__version__  # postBuild's editable install
    installed.pop("pip")  # the new environment's own pip, as repo2docker's
    assert installed == _pins(REQUIREMENTS.read_text()), (
        "Binder's environment is not binder/requirements.txt: a missing or extra package")
    _run([str(venv / "bin" / "python"), "-m", "pip", "check"])


def test_a_lesson_passes_strict_nbval_in_binders_environment(binder_build):
    """The Makefile's strict nbval, its kernel the Binder environment's Python (a kernel spec
    for it, as `ipykernel install` writes one); nbval itself runs from the test environment, so
    Binder's environment gets no test tools."""
    venv, work, env = binder_build["venv"], binder_build["work"], dict(binder_build["env"])
    kernels = work.parent / "kernels"
    _run([str(venv / "bin" / "python"), "-m", "ipykernel", "install", "--prefix", str(kernels),
          "--name", "binder"], env=env)
    env.update(JUPYTER_PATH=str(kernels / "share" / "jupyter"),
               PATH=os.environ["PATH"])  # pytest and nbval from the test environment
    result = subprocess.run(
        [sys.executable, "-m", "pytest", LESSON, "--nbval", "--nbval-kernel-name", "binder",
         "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", "--nbval-cell-timeout=180",
         "-p", "no:cacheprovider", "-q"], cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert re.search(r"\b\d+ passed\b", result.stdout) and " failed" not in result.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_server_starts_in_binders_environment_as_binder_starts_it(binder_build):
    """Binder starts the server in this same environment, with repo2docker's command `jupyter
    notebook` (Notebook 7 on jupyter_server); the launch links open JupyterLab (urlpath=lab). With
    the pinned versions the server answers its status API and serves the lab page."""
    venv, work, env = binder_build["venv"], binder_build["work"], binder_build["env"]
    port, token = _free_port(), "binder-simulation"
    log = work.parent / "jupyter-server.log"
    with open(log, "w") as out:
        server = subprocess.Popen(
            [str(venv / "bin" / "jupyter"), "notebook", "--no-browser", "--allow-root", f"--port={port}",
             "--ip=127.0.0.1", f"--ServerApp.token={token}", f"--ServerApp.root_dir={work}"],
            cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        status, deadline = None, time.monotonic() + 90
        while status is None and time.monotonic() < deadline and server.poll() is None:
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}/api/status",
                                                 headers={"Authorization": f"token {token}"})
                with urllib.request.urlopen(request, timeout=5) as response:
                    status = json.load(response)
            except OSError:
                time.sleep(0.5)
        assert status is not None, f"the server did not answer:\n{log.read_text()[-3000:]}"
        assert "started" in status
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token={token}", timeout=30) as response:
            page = response.read().decode()
        assert response.status == 200 and "JupyterLab" in page
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    text = log.read_text()
    assert "Traceback" not in text and "failed to load" not in text.lower(), text[-3000:]
