"""The course as a website: `make site` builds it from the executed lessons, and it works.

The module runs the very command of `make site` once (Jupyter Book 1.x, warnings are errors),
with the output sent to a temporary folder, and then checks the HTML it wrote:

* every lesson has a page, shown with its stored outputs (figures included) and never re-run;
* every internal link and anchor leads somewhere, on every page;
* the question index lists Q1–Q14, each linking the lessons that lesson 00's table names;
* every lesson page has a Binder button that opens that very lesson in JupyterLab;
* an explorer shows its "live on Binder" line, no progress bar shows a frozen "0%", and no page
  loads a script from another host;
* in headless chromium, the landing page and a lesson render their equations (MathJax) and the
  lesson its figures, with no JavaScript error.

Skipped, with the reason, when jupyter-book is not installed (`pip install -e '.[site]'`;
`make test` installs it). The chromium check uses tests/test_browser.py's `chromium_path`: it is
skipped when chromium is missing and fails instead under COURSE_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import functools
import html
import http.server
import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
import yaml

from conftest import LESSONS, ROOT
from test_browser import CHROMIUM_ARGS, chromium_path  # noqa: F401  (chromium_path is a fixture)
from test_questions import ROW, _question_table

pytestmark = pytest.mark.site

ARTIFACTS = ROOT / "tests" / "artifacts"
# Reading 11 executed notebooks takes seconds; a build this slow is re-running them, or worse.
BUILD_BUDGET_S = 120
LOCAL_SCHEMES = ("", "file")


# --------------------------------------------------------------------------------------------
# Building the site: the command in the Makefile's `site` recipe, into a temporary folder


def make_site_command() -> list[str]:
    """The `jupyter-book build …` line of `make site`, split into arguments."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nsite:", 1)[1].split("\n\n", 1)[0]
    line = next(line.strip() for line in recipe.splitlines() if "jupyter-book build" in line)
    return shlex.split(line)


@dataclass(frozen=True)
class Site:
    html: Path  # the folder holding index.html
    seconds: float
    log: str


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Site:
    """The website, built once for the module with `make site`'s command (warnings are errors)."""
    if importlib.util.find_spec("jupyter_book") is None:
        pytest.skip("site test skipped: jupyter-book is not installed (pip install -e '.[site]')")
    command = make_site_command()
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    command[0] = str(jupyter_book) if jupyter_book.exists() else shutil.which("jupyter-book")
    out = tmp_path_factory.mktemp("site")
    command[command.index("--path-output") + 1] = str(out)
    started = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - started
    log = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)  # Sphinx colours its messages
    print(f"\nsite build: {seconds:.1f} s")
    if result.returncode != 0:
        problems = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
        pytest.fail(f"`make site`'s build failed (exit {result.returncode}) after {seconds:.1f} s:\n"
                    + "\n".join(problems or log.splitlines()[-30:]), pytrace=False)
    return Site(out / "_build" / "html", seconds, log)


# --------------------------------------------------------------------------------------------
# Reading the HTML


@dataclass
class Page:
    """What a page links to and which anchors it offers."""

    path: Path
    ids: set[str] = field(default_factory=set)
    links: list[tuple[str, str]] = field(default_factory=list)  # (tag.attribute, url)
    anchors: list[tuple[str, str, str]] = field(default_factory=list)  # (href, text, enclosing section id)


class _PageParser(HTMLParser):
    def __init__(self, page: Page):
        super().__init__(convert_charrefs=True)
        self.page, self.sections, self.open_anchor = page, [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if attrs.get(key):
                self.page.ids.add(attrs[key])
        if tag == "section":
            self.sections.append(attrs.get("id", ""))
        for attribute in ("href", "src"):
            if attrs.get(attribute) and tag in ("a", "link", "img", "script", "iframe", "source"):
                self.page.links.append((f"{tag}.{attribute}", attrs[attribute]))
        if tag == "meta" and (attrs.get("http-equiv") or "").lower() == "refresh":
            self.page.links.append(("meta.refresh", attrs.get("content", "").split("url=", 1)[-1]))
        if tag == "a" and attrs.get("href"):
            self.open_anchor = [attrs["href"], "", self.sections[-1] if self.sections else ""]

    def handle_data(self, data):
        if self.open_anchor:
            self.open_anchor[1] += data

    def handle_endtag(self, tag):
        if tag == "section" and self.sections:
            self.sections.pop()
        if tag == "a" and self.open_anchor:
            self.page.anchors.append(tuple(self.open_anchor))
            self.open_anchor = None


@functools.cache
def read_page(path: Path) -> Page:
    page = Page(path)
    _PageParser(page).feed(path.read_text(encoding="utf-8"))
    return page


@functools.cache
def page_text(path: Path) -> str:
    """The page's text: tags dropped, entities decoded, runs of white space made one space."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))))


def pages(site: Site) -> list[Path]:
    """Every HTML page (the theme's template snippets under _static/ are not pages)."""
    return sorted(p for p in site.html.rglob("*.html") if "_static" not in p.relative_to(site.html).parts)


def resolve(site: Site, page: Path, url: str) -> tuple[Path, str] | None:
    """(file, fragment) a local URL on `page` points to; None for another site's URL."""
    parts = urlsplit(url)
    if parts.scheme not in LOCAL_SCHEMES or parts.netloc:
        return None
    target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    if target.is_dir():
        target = target / "index.html"
    return target, parts.fragment


def lesson_page(site: Site, lesson: Path) -> Path:
    return site.html / "notebooks" / f"{lesson.stem}.html"


def repository() -> str:
    """owner/name of the repository in pyproject's [project.urls]."""
    url = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    return url.removeprefix("https://github.com/")


def colab_url(notebook: str) -> str:
    return f"https://colab.research.google.com/github/{repository()}/blob/main/{notebook}"


def binder_url(notebook: str) -> str:
    return f"https://mybinder.org/v2/gh/{repository()}/HEAD?urlpath=lab/tree/{notebook}"


# --------------------------------------------------------------------------------------------
# The build and its configuration


def test_make_site_builds_with_warnings_as_errors_and_never_executes():
    command = make_site_command()
    assert command[:2] == ["$(BIN)/jupyter-book", "build"]
    assert "-W" in command and "--keep-going" in command, "a warning must fail `make site`"
    assert command[command.index("--config") + 1] == "site/_config.yml"
    config = yaml.safe_load((ROOT / "site" / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "off", "the site shows the stored, nbval-checked outputs"
    assert config["repository"]["url"] == f"https://github.com/{repository()}", "one repository: pyproject's"
    assert config["launch_buttons"]["binderhub_url"] == "https://mybinder.org"
    assert config["launch_buttons"]["notebook_interface"] == "jupyterlab"


def test_the_site_builds_quickly_and_cleanly(site):
    assert site.seconds < BUILD_BUDGET_S, f"the build took {site.seconds:.0f} s (budget {BUILD_BUDGET_S} s)"
    assert "WARNING" not in site.log
    assert not re.search(r"Execut(ing|ed) notebook", site.log), "the build ran a notebook"
    assert (site.html / "index.html").is_file()


# --------------------------------------------------------------------------------------------
# The pages


def test_every_lesson_has_a_page_showing_its_stored_outputs(site):
    for lesson in LESSONS:
        path = lesson_page(site, lesson)
        assert path.is_file(), f"no page for {lesson.name}"
        nb = nbformat.read(lesson, as_version=4)
        text = page_text(path)
        title = nb.cells[0].source.splitlines()[0].lstrip("# ").split("$")[0].strip()
        assert title in text, f"{path.name}: the lesson's title {title!r} is not on the page"
        figures = sum("image/png" in out.get("data", {}) for cell in nb.cells for out in cell.get("outputs", []))
        shown = len(re.findall(r'<img alt="[^"]*" src="\.\./_images/[0-9a-f]+\.png"', path.read_text(encoding="utf-8")))
        assert shown == figures, f"{path.name}: {shown} figures on the page, {figures} stored in the notebook"
        printed = [out.text.strip().splitlines()[0] for cell in nb.cells for out in cell.get("outputs", [])
                   if out.output_type == "stream" and out.text.strip()]
        for line in printed[:5]:
            assert re.sub(r"\s+", " ", line) in text, f"{path.name}: the stored output {line!r} is not on the page"
    assert not (site.html / "notebooks" / "student").exists(), "the student copies are not part of the site"


def test_solutions_are_folded_behind_a_toggle_and_the_checks_still_show(site):
    """A learner reading a lesson meets each exercise before its answer: every solution cell's code
    sits inside a closed "Show the solution" toggle, and its ✅ line stays in view."""
    for lesson in LESSONS:
        nb = nbformat.read(lesson, as_version=4)
        solutions = [cell for cell in nb.cells if cell.cell_type == "code" and "### BEGIN SOLUTION" in cell.source]
        page = lesson_page(site, lesson).read_text(encoding="utf-8")
        folds = re.findall(r'<details class="[^"]*\bhide\b[^"]*">(.*?)</details>', page, flags=re.S)
        assert len(folds) == len(solutions), f"{lesson.name}: {len(folds)} folded cells, {len(solutions)} solutions"
        for cell, fold in zip(solutions, folds):
            assert "Show the solution" in fold, f"{lesson.name}: a fold without its label"
            name = re.search(r"def (\w+)", cell.source)
            assert name and name[1] in html.unescape(re.sub(r"<[^>]+>", "", fold)), \
                f"{lesson.name}: the solution of {name and name[1]} is not inside its fold"
        visible = re.sub(r"<details.*?</details>", "", page, flags=re.S)
        assert "BEGIN SOLUTION" not in visible, f"{lesson.name}: a solution shows outside a fold"
        if solutions:
            assert "✅ Correct" in html.unescape(re.sub(r"<[^>]+>", "", visible)), f"{lesson.name}: no ✅ line in view"


def test_lessons_come_in_order_in_the_navigation(site):
    landing = read_page(site.html / "site" / "index.html")
    order = [href for kind, href in landing.links if kind == "a.href" and re.search(r"notebooks/\d\d_\w+\.html$", href)]
    first_seen = list(dict.fromkeys(Path(href).stem for href in order))
    assert first_seen == [lesson.stem for lesson in LESSONS]


def test_every_internal_link_and_anchor_resolves(site):
    broken = []
    for path in pages(site):
        page = read_page(path)
        for kind, url in page.links:
            target = resolve(site, path, url)
            if target is None:
                continue
            file, fragment = target
            where = f"{path.relative_to(site.html)}: {kind}={url}"
            if not file.is_file():
                broken.append(f"{where} (no file {file.relative_to(site.html) if file.is_relative_to(site.html) else file})")
            elif not file.is_relative_to(site.html):
                broken.append(f"{where} (leaves the site)")
            elif fragment and file.suffix == ".html" and fragment not in read_page(file).ids:
                broken.append(f"{where} (no anchor #{fragment})")
    assert not broken, f"{len(broken)} broken internal links:\n" + "\n".join(broken[:30])


def test_question_index_links_each_question_to_the_lessons_that_answer_it(site):
    path = site.html / "site" / "questions.html"
    page = read_page(path)
    table = _question_table()  # lesson 00's questions table, as tests/test_questions.py reads it
    start = nbformat.read(ROOT / "notebooks" / "00_start_here.ipynb", as_version=4)
    cells = dict(ROW.findall("\n".join(c.source for c in start.cells if c.cell_type == "markdown")))
    assert list(table) == [f"Q{i}" for i in range(1, 15)]
    for question, lessons in table.items():
        label = question.lower()
        assert label in page.ids, f"the question index has no anchor #{label}"
        section = next(sid for sid in page.ids if sid.startswith(f"{label}-"))
        links = [href for href, _, sid in page.anchors if sid == section]
        linked = {m[1] for href in links if (m := re.match(r"\.\./notebooks/(\d\d)_\w+\.html", href))}
        assert linked == set(lessons), f"{question} links lessons {sorted(linked)}, lesson 00 says {lessons}"
        for href in links:
            file, fragment = resolve(site, path, href) or (None, "")
            if file is not None:
                assert file.is_file() and (not fragment or fragment in read_page(file).ids), f"{question}: {href}"
        sections = [href for href in links if href.startswith("../notebooks/") and "#" in href]
        assert len(sections) >= cells[question].count("§"), f"{question}: lesson 00 names sections, the page links {sections}"


def test_every_lesson_page_has_a_binder_button_for_that_lesson(site):
    for lesson in LESSONS:
        page = read_page(lesson_page(site, lesson))
        binder = {url for _, url in page.links if url.startswith("https://mybinder.org/")}
        assert binder == {binder_url(f"notebooks/{lesson.name}")}, f"{lesson.name}: Binder links {binder}"


def test_landing_page_has_the_readme_badge_the_map_and_the_commands(site):
    readme = (ROOT / "README.md").read_text()
    badge = re.search(r"\[!\[Launch the course on Binder\]\(https://mybinder\.org/badge_logo\.svg\)\]\(([^)]+)\)", readme)
    landing = read_page(site.html / "site" / "index.html")
    urls = {url for _, url in landing.links}
    assert badge and badge[1] in urls, "the landing page's Binder badge is not README's"
    for lesson in LESSONS:
        assert f"../notebooks/{lesson.stem}.html" in urls, f"the lesson map misses {lesson.name}"
        assert binder_url(f"notebooks/{lesson.name}") in urls, f"the lesson map has no Binder link for {lesson.name}"
        assert colab_url(f"notebooks/{lesson.name}") in urls, f"the lesson map has no Colab link for {lesson.name}"
    text = page_text(site.html / "site" / "index.html")
    assert "make lab" in text and "make test" in text
    assert "teachers.html" in urls and "questions.html" in urls


def test_explorers_say_they_are_live_on_binder_and_no_widget_code_loads(site):
    for lesson in LESSONS:
        nb = nbformat.read(lesson, as_version=4)
        explorers = sum("explorer" in cell.get("metadata", {}).get("tags", []) for cell in nb.cells)
        source = lesson_page(site, lesson).read_text(encoding="utf-8")
        notes = len(re.findall(r"&lt;live explorer \([^)]*\): run the lesson in JupyterLab or on Binder&gt;", source))
        assert notes == explorers, f"{lesson.name}: {notes} explorer notes for {explorers} explorer cells"
        # myst-nb would render a widget view as this script, for the widget JavaScript to draw
        assert '<script type="application/vnd.jupyter.widget-view+json">' not in source, f"{lesson.name}: a widget view"
        assert "embed-amd" not in source and "require.min.js" not in source, f"{lesson.name} loads widget code"
        # a training cell's tqdm bar is stored as its first frame, "0%|"; the site leaves it out
        assert not re.search(r"\d+%\|", page_text(lesson_page(site, lesson))), f"{lesson.name} shows a progress bar"
    for path in pages(site):
        remote = [url for kind, url in read_page(path).links if kind == "script.src" and resolve(site, path, url) is None]
        assert not remote, f"{path.relative_to(site.html)} loads scripts from other hosts: {remote}"


# --------------------------------------------------------------------------------------------
# In a real browser


@pytest.fixture(scope="module")
def served(site):
    """The built site on http://127.0.0.1:<free port>/, for the module's duration."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site.html)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("path, needs_figure", [("site/index.html", False),
                                                ("notebooks/03_sinusoidal_encoding.html", True)],
                         ids=["landing", "lesson-03"])
def test_pages_render_equations_and_figures_in_chromium(served, chromium_path, path, needs_figure):  # noqa: F811
    from playwright.sync_api import sync_playwright

    base = f"{served}/"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors, failed = [], []
        # Only this site's own files: another host (the README badge's image) is refused at once,
        # so the check means the same with and without a network.
        page.route(re.compile(r"^(?!" + re.escape(base) + ")"), lambda route: route.abort())
        page.on("pageerror", lambda err: errors.append(f"uncaught: {err}"))
        page.on("console", lambda msg: msg.type == "error" and not msg.text.startswith("Failed to load resource")
                and errors.append(f"console: {msg.text}"))
        page.on("requestfailed", lambda req: req.url.startswith(base) and failed.append(req.url))
        page.on("response", lambda resp: resp.url.startswith(base) and resp.status >= 400
                and failed.append(f"{resp.status} {resp.url}"))
        try:
            page.goto(base + path, wait_until="load")
            page.wait_for_selector("mjx-container", state="attached", timeout=30_000)
            assert page.locator("mjx-container").count() > 0
            if needs_figure:
                figure = page.locator(".cell_output img").first
                figure.scroll_into_view_if_needed()
                figure.evaluate("(img) => img.decode()")
                width = figure.evaluate("(img) => img.naturalWidth")
                assert width > 0, "the lesson's first figure did not load"
            page.wait_for_load_state("networkidle")
            assert not failed, f"files of the site failed to load: {failed}"
            assert not errors, f"JavaScript errors: {errors}"
        except Exception as exc:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shot = ARTIFACTS / f"site-{Path(path).stem}.png"
            page.screenshot(path=str(shot), full_page=False)
            raise AssertionError(f"{path}: {exc}\n  screenshot: {shot}") from exc
        finally:
            browser.close()


OVERFLOWING_PRE = """() => Array.from(document.querySelectorAll('div.cell div.highlight pre, div.cell .cell_output pre'))
    .filter((pre) => pre.scrollWidth > pre.clientWidth + 1)
    .map((pre) => pre.textContent.split('\\n').sort((a, b) => b.length - a.length)[0].slice(0, 100))"""


@pytest.mark.parametrize("width", [1280, 1440])
def test_lesson_code_and_tables_need_no_horizontal_scroll_bar(served, chromium_path, width):  # noqa: F811
    """Lessons keep code and printed text within 88 columns (tests/test_lessons.py); on a laptop-width
    window (both sidebars shown) the site's styles must then show every such block whole."""
    from playwright.sync_api import sync_playwright

    base = f"{served}/"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.route(re.compile(r"^(?!" + re.escape(base) + ")"), lambda route: route.abort())
        try:
            for lesson in LESSONS:
                page.goto(f"{base}notebooks/{lesson.stem}.html", wait_until="load")
                scrolling = page.evaluate(OVERFLOWING_PRE)
                assert not scrolling, f"{lesson.name} at {width} px: blocks scroll sideways, e.g. {scrolling[:3]}"
        finally:
            browser.close()
