"""The interactive explorers work in a real browser, the way a learner meets them.

nbval proves a lesson's stored outputs are what its code produces, but it never renders a widget:
a lesson can pass nbval while its explorer shows "Error displaying widget" in JupyterLab, or while
its slider moves and its figure stays put. This test closes that gap. For each lesson in
BROWSER_LESSONS it

1. starts JupyterLab from this virtualenv on a free local port, serving a temporary copy of the
   lesson (so autosave never touches the repository's notebooks);
2. opens the lesson in Debian's chromium, headless, driven by Playwright's Python API (Playwright's
   own browser download is never used);
3. runs every cell and waits until the kernel is idle again;
4. asserts that no cell shows an error except cells tagged "raises-exception", that the page never
   says "Error displaying widget", and that every cell tagged "explorer" rendered exactly one
   `.course-explorer` box holding a figure (`<img>`) of non-zero size;
5. moves each explorer's first slider (or, in an explorer without one, picks another dropdown
   option) and asserts that the figure's image bytes and the line of numbers under it change. At
   least one explorer per lesson must have a slider.

Every explorer (course_utils.widgets.EXPLORERS, the six of lessons 01, 03, 04, 05, 06 and 12) is
then checked on its own, in a generated notebook (EXPLORER_NOTEBOOK, written into the same
server's temporary directory) with one cell per explorer built with its default arguments: each
renders, and each of its controls, in order, is driven once (a slider to its other end, another
dropdown option, a checkbox toggled), and after every move the figure's bytes and the line of
numbers change. The server, the browser and one kernel are shared by all six, which costs far less
than opening each lesson.

On failure a screenshot is saved to tests/artifacts/browser-<notebook>.png and the message names
the JupyterLab server log.

(COURSE_REQUIRE_BROWSER=1, set by .ci/run, turns these skips into failures.)
It is skipped, with the reason, when chromium (COURSE_CHROMIUM, else /usr/bin/chromium, else
`chromium` on PATH) or the playwright package is missing. Run it alone with
    OMP_NUM_THREADS=1 .venv/bin/python -m pytest tests/test_browser.py -v -rs
COURSE_BROWSER_LESSONS (paths separated by os.pathsep) replaces BROWSER_LESSONS, e.g. to try a
scratch notebook.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
ARTIFACTS = ROOT / "tests" / "artifacts"

# Lessons checked in the browser, relative to notebooks/. Add a lesson here once it has explorers.
BROWSER_LESSONS = ["01_permutation_equivariance.ipynb", "03_sinusoidal_encoding.ipynb"]

DEFAULT_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

SERVER_START_TIMEOUT_S = 60
NOTEBOOK_READY_TIMEOUT_S = 60
RUN_ALL_TIMEOUT_S = 180
WIDGETS_RENDER_TIMEOUT_S = 30
FIGURE_CHANGE_TIMEOUT_S = 15

# The generated notebook showing every explorer (see test_every_explorer_works_in_chromium).
EXPLORER_NOTEBOOK = "every_explorer.ipynb"
# The DOM classes of the controls an explorer may have (ipywidgets 8), by kind.
CONTROL_CLASSES = {"slider": "widget-slider", "dropdown": "widget-dropdown", "checkbox": "widget-checkbox"}


# --------------------------------------------------------------------------------------------
# What to test


def lesson_paths() -> list[Path]:
    """The notebooks to check: COURSE_BROWSER_LESSONS if set, else BROWSER_LESSONS."""
    override = os.environ.get("COURSE_BROWSER_LESSONS")
    names = override.split(os.pathsep) if override else BROWSER_LESSONS
    return [(NOTEBOOKS / name).resolve() for name in names if name]


@dataclass(frozen=True)
class Expectations:
    """What the .ipynb file says the browser should show."""

    n_explorers: int  # cells tagged "explorer"; each renders one .course-explorer
    may_raise: frozenset[int]  # indices (among all cells) of cells tagged "raises-exception"


def read_expectations(path: Path) -> Expectations:
    """Count explorer cells and find the cells allowed to raise, from the notebook's cell tags."""
    nb = nbformat.read(path, as_version=4)
    tags = [set(cell.get("metadata", {}).get("tags", [])) for cell in nb.cells]
    return Expectations(
        n_explorers=sum("explorer" in t for t in tags),
        may_raise=frozenset(i for i, t in enumerate(tags) if "raises-exception" in t),
    )


def control_kind(control) -> str:
    """"slider", "dropdown" or "checkbox": how the browser test drives an explorer's control."""
    import ipywidgets as widgets

    for kind, cls in (("slider", (widgets.IntSlider, widgets.FloatSlider, widgets.FloatLogSlider)),
                      ("dropdown", widgets.Dropdown), ("checkbox", widgets.Checkbox)):
        if isinstance(control, cls):
            return kind
    raise AssertionError(f"the browser test cannot drive a {type(control).__name__}; teach it how")


def explorer_controls() -> dict[str, list[tuple[str, str]]]:
    """Each explorer's controls, in the order the explorer shows them, as (name, kind)."""
    from course_utils.widgets import EXPLORERS

    return {name: [(control, control_kind(widget)) for control, widget in make().controls.items()]
            for name, make in EXPLORERS.items()}


def write_explorer_notebook(path: Path) -> list[str]:
    """A notebook showing every explorer, one cell (tagged "explorer") each, after one import
    cell; returns the explorers' names in the order of their cells."""
    from course_utils.widgets import EXPLORERS

    functions = [make.__name__ for make in EXPLORERS.values()]
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(f"from course_utils.widgets import {', '.join(functions)}")]
    nb.cells += [nbformat.v4.new_code_cell(f"{function}()", metadata={"tags": ["explorer"]})
                 for function in functions]
    nbformat.write(nb, path)
    return list(EXPLORERS)


# --------------------------------------------------------------------------------------------
# Prerequisites: chromium and playwright, or a clear skip


def find_chromium() -> tuple[str | None, str]:
    """Return (path to chromium or None, where we looked)."""
    override = os.environ.get("COURSE_CHROMIUM")
    if override:
        found = override if os.path.isfile(override) and os.access(override, os.X_OK) else None
        return found, f"COURSE_CHROMIUM={override}"
    if os.path.isfile(DEFAULT_CHROMIUM) and os.access(DEFAULT_CHROMIUM, os.X_OK):
        return DEFAULT_CHROMIUM, DEFAULT_CHROMIUM
    return shutil.which("chromium"), f"{DEFAULT_CHROMIUM} or `chromium` on PATH"


@pytest.fixture(scope="module")
def chromium_path() -> str:
    """Debian's chromium and the playwright package, or skip the whole module with the reason."""
    # CI (.ci/run) sets COURSE_REQUIRE_BROWSER=1: there a missing browser is a failure, not a skip.
    give_up = pytest.fail if os.environ.get("COURSE_REQUIRE_BROWSER") == "1" else pytest.skip
    path, looked = find_chromium()
    if path is None:
        give_up(f"browser test skipped: Debian chromium not found at {looked} (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        give_up("browser test skipped: the playwright package is not installed (pip install -e '.[browser]')")
    return path


# --------------------------------------------------------------------------------------------
# The JupyterLab server


@dataclass(frozen=True)
class LabServer:
    base_url: str
    token: str
    root_dir: Path
    log_path: Path

    def notebook_url(self, name: str) -> str:
        """URL opening `name` in its own workspace, so no earlier lesson's tabs are restored."""
        workspace = Path(name).stem.replace(".", "-")
        return f"{self.base_url}/lab/workspaces/{workspace}/tree/{name}?token={self.token}"


def free_port() -> int:
    """A TCP port that was free a moment ago (the OS picks it when binding to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_lab_settings(settings_dir: Path) -> None:
    """User settings for the throwaway JupyterLab: never fetch news or check for updates."""
    notification = settings_dir / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True, exist_ok=True)
    notification.write_text('{"fetchNews": "false", "checkForUpdates": false}\n')


def lab_command(root_dir: Path, state_dir: Path, port: int, token: str) -> list[str]:
    """The command line starting JupyterLab from this virtualenv, quiet and self-contained."""
    cmd = [
        sys.executable, "-m", "jupyter", "lab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        "--ServerApp.terminals_enabled=False",
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
        f"--LabApp.user_settings_dir={state_dir / 'settings'}",
        f"--LabApp.workspaces_dir={state_dir / 'workspaces'}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd


def wait_for_server(proc: subprocess.Popen, base_url: str, token: str, log_path: Path) -> None:
    """Poll /api/status until it answers 200; fail early if the server process exits."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    request = urllib.request.Request(f"{base_url}/api/status", headers={"Authorization": f"token {token}"})
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"JupyterLab exited with code {proc.returncode} while starting; log: {log_path}\n"
                        + log_path.read_text(errors="replace")[-3000:])
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.3)
    pytest.fail(f"JupyterLab did not answer {base_url}/api/status within {SERVER_START_TIMEOUT_S} s; log: {log_path}")


def descendant_pids(pid: int) -> list[int]:
    """PIDs of every process descended from `pid` (kernels run in their own session, so killing
    the server's process group would miss them). Linux /proc; empty elsewhere."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2:].split()  # after "pid (comm) "
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def stop_server(proc: subprocess.Popen) -> None:
    """Stop the server and its kernels: SIGTERM the server's process group (the server then shuts
    its kernels down), SIGKILL whatever is left, by PID."""
    if proc.poll() is not None:
        return
    spawned = descendant_pids(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
    for pid in spawned:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def lab_server(chromium_path, tmp_path_factory) -> LabServer:
    """JupyterLab serving temporary copies of the lessons under test; stopped at module end."""
    base = tmp_path_factory.mktemp("browser")
    root_dir, state_dir = base / "notebooks", base / "jupyter"
    root_dir.mkdir()
    for lesson in lesson_paths():
        if lesson.is_file():
            shutil.copy2(lesson, root_dir / lesson.name)
    write_lab_settings(state_dir / "settings")
    env = dict(
        os.environ,
        # Nothing from the user's own Jupyter/IPython setup (configs, kernelspecs, startup files).
        JUPYTER_CONFIG_DIR=str(state_dir / "config"),
        JUPYTER_DATA_DIR=str(state_dir / "data"),
        JUPYTER_RUNTIME_DIR=str(state_dir / "runtime"),
        IPYTHONDIR=str(state_dir / "ipython"),
        OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"),
    )
    port, token = free_port(), secrets.token_hex(16)
    log_path = base / "jupyterlab.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(lab_command(root_dir, state_dir, port, token), cwd=root_dir, env=env,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            base_url = f"http://127.0.0.1:{port}"
            wait_for_server(proc, base_url, token, log_path)
            yield LabServer(base_url, token, root_dir, log_path)
        finally:
            stop_server(proc)


# --------------------------------------------------------------------------------------------
# The browser


@pytest.fixture(scope="module")
def browser(chromium_path):
    """Headless Debian chromium (fresh profile) driven by Playwright; closed at module end."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


# JavaScript run in the page. `window.jupyterapp` exists because of --LabApp.expose_app_in_browser.
JS_FIND_NOTEBOOK = """
window.__courseNotebook = (path) => {
    for (const widget of window.jupyterapp.shell.widgets('main')) {
        if (widget.context && widget.context.path === path && widget.content && widget.sessionContext) {
            return widget;
        }
    }
    return null;
};
"""

JS_NOTEBOOK_READY = """
(path) => {
    if (!window.jupyterapp || !window.__courseNotebook) return false;
    const panel = window.__courseNotebook(path);
    const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
    return Boolean(panel && panel.context.isReady && kernel && kernel.status === 'idle'
                   && kernel.connectionStatus === 'connected');
}
"""

# Clear every output first: the stored outputs carry execution counts, and a cleared cell gets its
# count back only when it has run again. (JupyterLab settles "Run All" and blanks the queued prompts
# as soon as a cell tagged raises-exception fails, although the kernel goes on to run the rest; so
# neither the command's promise nor the [*] prompts say when the run is over.)
JS_START_RUN_ALL = """
async (path) => {
    const app = window.jupyterapp;
    const panel = window.__courseNotebook(path);
    app.shell.activateById(panel.id);
    await app.commands.execute('notebook:clear-all-cell-outputs');
    const kernel = panel.sessionContext.session.kernel;
    window.__courseKernelChanged = Date.now();
    kernel.statusChanged.connect(() => { window.__courseKernelChanged = Date.now(); });
    window.__courseRunAll = 'running';
    app.commands.execute('notebook:run-all-cells').then(
        () => { window.__courseRunAll = 'settled'; },
        (err) => { window.__courseRunAll = 'failed: ' + err; });
}
"""

# Finished: the kernel is idle and every non-empty code cell has an execution count again, or, when
# some cell never ran (an error stopped the run), Run All has settled and the kernel has been idle
# for 3 s.
JS_RUN_ALL_FINISHED = """
(path) => {
    const panel = window.__courseNotebook(path);
    const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
    if (!kernel || kernel.status !== 'idle') return false;
    const waiting = panel.content.widgets.some(cell => cell.model.type === 'code'
        && cell.model.sharedModel.getSource().trim() && cell.model.executionCount === null);
    if (!waiting) return true;
    return window.__courseRunAll !== 'running' && Date.now() - window.__courseKernelChanged > 3000;
}
"""

JS_CELL_REPORT = """
(path) => {
    const panel = window.__courseNotebook(path);
    return panel.content.widgets.map((cell, index) => {
        const model = cell.model;
        if (model.type !== 'code') return {index, type: model.type};
        const errors = [];
        for (let k = 0; k < model.outputs.length; k++) {
            const out = model.outputs.get(k).toJSON();
            if (out.output_type === 'error') errors.push(`${out.ename}: ${out.evalue}`);
        }
        return {index, type: 'code', count: model.executionCount, empty: !model.sharedModel.getSource().trim(), errors};
    });
}
"""

JS_SHUTDOWN_KERNEL = """
async (path) => {
    const panel = window.__courseNotebook && window.__courseNotebook(path);
    if (panel) await panel.sessionContext.shutdown();
}
"""

# Snapshot of one explorer's figure: its src and a SHA-256 of the image bytes it shows.
JS_FIGURE_STATE = """
async (img) => {
    const bytes = await (await fetch(img.src)).arrayBuffer();
    const digest = await crypto.subtle.digest('SHA-256', bytes);
    const hex = [...new Uint8Array(digest)].map(b => b.toString(16).padStart(2, '0')).join('');
    return {src: img.src, digest: hex, complete: img.complete, naturalWidth: img.naturalWidth};
}
"""


# The explorer's line of numbers: the last child of its box (header, controls, figure, readout).
JS_READOUT = "(box) => box.lastElementChild.textContent"


# --------------------------------------------------------------------------------------------
# Steps of the test


def open_notebook(page, server: LabServer, name: str) -> None:
    """Load JupyterLab on the notebook and wait until it is open with an idle, connected kernel."""
    page.goto(server.notebook_url(name), wait_until="domcontentloaded")
    page.wait_for_function("() => Boolean(window.jupyterapp)", timeout=NOTEBOOK_READY_TIMEOUT_S * 1000)
    page.evaluate(JS_FIND_NOTEBOOK)
    page.wait_for_function(JS_NOTEBOOK_READY, arg=name, timeout=NOTEBOOK_READY_TIMEOUT_S * 1000)


def run_all_cells(page, name: str) -> list[dict]:
    """Run every cell through JupyterLab's own "Run All Cells" command, wait for the kernel to
    finish, and return a per-cell report (execution count, error outputs)."""
    page.evaluate(JS_START_RUN_ALL, name)
    page.wait_for_function(JS_RUN_ALL_FINISHED, arg=name, timeout=RUN_ALL_TIMEOUT_S * 1000, polling=500)
    return page.evaluate(JS_CELL_REPORT, name)


def assert_cells_ran_cleanly(report: list[dict], expected: Expectations) -> None:
    """Every code cell ran, and only cells tagged "raises-exception" show an error."""
    unexpected = {c["index"]: c["errors"] for c in report
                  if c["type"] == "code" and c["errors"] and c["index"] not in expected.may_raise}
    assert not unexpected, f"cells show errors in the browser (cell index: errors): {unexpected}"
    not_run = [c["index"] for c in report if c["type"] == "code" and not c["empty"] and c["count"] is None]
    assert not not_run, f"cells {not_run} never ran (did an earlier cell stop Run All?)"


def assert_no_widget_errors(page) -> None:
    """The page text (textContent, so cells the browser skipped painting count too) never says
    "Error displaying widget"."""
    text = page.evaluate("() => document.body.textContent")
    assert "Error displaying widget" not in text, "the page says 'Error displaying widget'"


def explorer_figure(explorer):
    """The explorer's figure: its `img.explorer-figure`, else its first `img`."""
    tagged = explorer.locator("img.explorer-figure")
    return tagged.first if tagged.count() else explorer.locator("img").first


def assert_explorers_render(page, expected: Expectations) -> None:
    """One .course-explorer per explorer cell, each showing a decoded figure of non-zero size."""
    explorers = page.locator(".course-explorer")
    deadline = time.monotonic() + WIDGETS_RENDER_TIMEOUT_S
    while explorers.count() < expected.n_explorers and time.monotonic() < deadline:
        time.sleep(0.25)
    assert explorers.count() == expected.n_explorers, (
        f"{explorers.count()} .course-explorer boxes rendered, expected {expected.n_explorers} (cells tagged 'explorer')")
    for i in range(expected.n_explorers):
        explorer = explorers.nth(i)
        explorer.scroll_into_view_if_needed()
        assert explorer.locator("img").count(), f"explorer {i} has no figure (<img>)"
        figure = explorer_figure(explorer)
        figure.wait_for(state="visible", timeout=WIDGETS_RENDER_TIMEOUT_S * 1000)
        figure.evaluate("(img) => img.decode()")  # resolves once the image is decoded; rejects if it can't be
        box = figure.bounding_box()
        size = figure.evaluate("(img) => [img.naturalWidth, img.naturalHeight]")
        assert box and box["width"] > 0 and box["height"] > 0 and min(size) > 0, (
            f"explorer {i}: figure has zero size (box {box}, natural size {size})")


def slider_value(handle) -> str:
    """The slider's current value as noUiSlider reports it to screen readers."""
    return handle.get_attribute("aria-valuenow") or handle.get_attribute("aria-valuetext") or ""


def move_slider(page, handle) -> str:
    """Move a noUiSlider handle to its other end with the keyboard (End, or Home when already at
    the maximum); if the value does not budge, drag it with the mouse. Returns a description."""
    before = slider_value(handle)
    at_max = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
    key = "Home" if at_max else "End"
    handle.focus()
    handle.press(key)
    deadline = time.monotonic() + 3
    while slider_value(handle) == before and time.monotonic() < deadline:
        time.sleep(0.1)
    if slider_value(handle) != before:
        return f"slider moved from {before} to {slider_value(handle)} with the {key} key"
    track = handle.locator("xpath=ancestor::*[contains(@class, 'noUi-target')][1]").bounding_box()
    grip = handle.bounding_box()
    page.mouse.move(grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2)
    page.mouse.down()
    target_x = track["x"] + (2 if at_max else track["width"] - 2)
    page.mouse.move(target_x, grip["y"] + grip["height"] / 2, steps=10)
    page.mouse.up()
    return f"slider moved from {before} to {slider_value(handle)} by dragging (the {key} key did nothing)"


def pick_another_option(select) -> str:
    """Select another option of a <select> (the second, or the first when the second is chosen)."""
    current = select.evaluate("(s) => s.selectedIndex")
    assert select.locator("option").count() > 1, "the dropdown has a single option"
    choice = 1 if current == 0 else 0
    select.select_option(index=choice)
    return f"dropdown changed from option {current} to option {choice}"


def change_control(page, explorer, index: int) -> tuple[str, bool]:
    """Move the explorer's first slider, or pick another option of its first dropdown.
    Returns (what was done, whether it was a slider)."""
    handles = explorer.locator(".noUi-handle")
    if handles.count():
        return move_slider(page, handles.first), True
    selects = explorer.locator("select")
    assert selects.count(), f"explorer {index} has neither a slider nor a dropdown to move"
    return pick_another_option(selects.first), False


def drive(explorer, label: str, change) -> str:
    """Run ``change()`` (which acts on a control of ``explorer`` and returns what it did) and wait
    until the explorer redraws: within FIGURE_CHANGE_TIMEOUT_S its figure shows different image
    bytes and its line of numbers reads differently. Prints what was done (see it with -s)."""
    explorer.scroll_into_view_if_needed()
    figure = explorer_figure(explorer)
    before, readout = figure.evaluate(JS_FIGURE_STATE), explorer.evaluate(JS_READOUT)
    assert readout.strip(), f"{label}: the explorer shows no line of numbers"
    action = change()
    deadline = time.monotonic() + FIGURE_CHANGE_TIMEOUT_S
    figure_changed = False
    while True:
        if not figure_changed and figure.evaluate("(img) => img.src") != before["src"]:
            figure.evaluate("(img) => img.decode()")
            figure_changed = figure.evaluate(JS_FIGURE_STATE)["digest"] != before["digest"]
        readout_changed = explorer.evaluate(JS_READOUT) != readout
        if figure_changed and readout_changed:
            print(f"{label}: {action}; the figure and the numbers changed")
            return action
        if time.monotonic() > deadline:
            stale = " and ".join(what for what, changed in (("figure", figure_changed),
                                                             ("line of numbers", readout_changed)) if not changed)
            raise AssertionError(
                f"{label}: {action}, but its {stale} did not change within {FIGURE_CHANGE_TIMEOUT_S} s "
                "(its observe callback may have failed; see JupyterLab's Log Console)")
        time.sleep(0.2)


def assert_figure_follows_control(page, explorer, index: int) -> bool:
    """Moving the explorer's first slider (or dropdown) redraws its figure and its numbers;
    returns whether the control was a slider."""
    kinds = []

    def change() -> str:
        action, was_slider = change_control(page, explorer, index)
        kinds.append(was_slider)
        return action

    drive(explorer, f"explorer {index}", change)
    return kinds[0]


def assert_every_control_drives_the_figure(page, explorer, name: str, controls: list[tuple[str, str]]) -> None:
    """The explorer shows exactly ``controls`` (name, kind), in order, and each of them, driven
    once, redraws the figure and the numbers: a slider goes to its other end, a dropdown to
    another option, a checkbox is toggled."""
    found = explorer.locator(", ".join(f".{cls}" for cls in CONTROL_CLASSES.values()))
    kinds = [next(kind for kind, cls in CONTROL_CLASSES.items() if cls in (found.nth(i).get_attribute("class") or ""))
             for i in range(found.count())]
    assert kinds == [kind for _, kind in controls], (
        f"{name} explorer: the page shows controls {kinds}, the explorer has {controls}")
    for i, (control_name, kind) in enumerate(controls):
        control = found.nth(i)
        drive(explorer, f"{name} explorer, {kind} {control_name}", partial(change_once, page, control, kind))


def change_once(page, control, kind: str) -> str:
    """Move a slider to its other end, pick another dropdown option or toggle a checkbox."""
    if kind == "slider":
        return move_slider(page, control.locator(".noUi-handle"))
    if kind == "dropdown":
        return pick_another_option(control.locator("select"))
    box = control.locator("input[type=checkbox]")
    box.click()
    return f"checkbox {'ticked' if box.is_checked() else 'cleared'}"


def save_screenshot(page, name: str) -> str:
    """Screenshot the page into tests/artifacts/; returns the path or why there is none."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"browser-{Path(name).stem}.png"
    try:
        page.screenshot(path=str(path))
    except Exception as exc:  # the page may be gone; the original failure matters more
        return f"(no screenshot: {exc})"
    return str(path)


@contextmanager
def notebook_page(browser, server: LabServer, name: str, expected: Expectations):
    """A page with notebook ``name`` open, every cell run cleanly and every explorer rendered;
    yields the page's `.course-explorer` boxes. Any failure inside is reported with a screenshot,
    the server log and the page's uncaught errors; the kernel is shut down at the end."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page_errors: list[str] = []
    page.on("pageerror", lambda err: page_errors.append(str(err)))
    started = time.monotonic()
    try:
        open_notebook(page, server, name)
        report = run_all_cells(page, name)
        assert_cells_ran_cleanly(report, expected)
        assert_no_widget_errors(page)
        assert_explorers_render(page, expected)
        yield page, page.locator(".course-explorer")
        assert_no_widget_errors(page)
    except Exception as exc:
        shot = save_screenshot(page, name)
        details = f"\n  screenshot: {shot}\n  JupyterLab log: {server.log_path}"
        if page_errors:
            details += "\n  uncaught errors in the page: " + " | ".join(page_errors[-5:])
        details += f"\n  after {time.monotonic() - started:.1f} s in the browser"
        raise AssertionError(f"{name}: {exc}{details}") from exc
    finally:
        try:
            page.evaluate(JS_SHUTDOWN_KERNEL, name)  # free the CPU for the next lesson
        except Exception:
            pass
        page.close()


# --------------------------------------------------------------------------------------------
# The tests


@pytest.mark.parametrize("lesson", lesson_paths(), ids=lambda p: p.stem)
def test_lesson_explorers_work_in_chromium(lesson: Path, lab_server: LabServer, browser):
    assert lesson.is_file(), f"{lesson} does not exist"
    expected = read_expectations(lesson)
    assert expected.n_explorers > 0, f"{lesson.name} has no cell tagged 'explorer'; nothing to check in the browser"
    with notebook_page(browser, lab_server, lesson.name, expected) as (page, explorers):
        sliders = [assert_figure_follows_control(page, explorers.nth(i), i) for i in range(expected.n_explorers)]
        assert any(sliders), "no explorer in this lesson has a slider; at least one must"


def test_every_explorer_works_in_chromium(lab_server: LabServer, browser):
    """All the explorers of course_utils.widgets, each with every control driven once."""
    names = write_explorer_notebook(lab_server.root_dir / EXPLORER_NOTEBOOK)
    controls = explorer_controls()
    expected = Expectations(n_explorers=len(names), may_raise=frozenset())
    with notebook_page(browser, lab_server, EXPLORER_NOTEBOOK, expected) as (page, explorers):
        for i, name in enumerate(names):
            assert_every_control_drives_the_figure(page, explorers.nth(i), name, controls[name])
