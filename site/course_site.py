"""Sphinx extension of the course website: the parts of its pages that are derived, not written.

Lesson 00 is the one place that maps each learner question to the lesson sections answering it
(its "questions" table, also read by tests/test_questions.py). The website shows that mapping
twice, and both are generated from lesson 00 at build time, so they cannot drift from it:

* ``<!-- answered-in: Q5 -->`` in site/questions.md becomes the links to each lesson, and to
  each numbered section (``§4``) of it, that lesson 00's table names for Q5;
* ``<!-- lesson-map -->`` in site/index.md becomes the table of lessons: title, the questions
  each answers, and a link that opens it on Binder.

The links are MyST links to notebook headings (``../notebooks/04_x.ipynb#4--why-both``), so a
section that does not exist fails the build under ``-W``, as does a question without a marker
or a marker without a question.

Three presentation fixes, none touching a file:

* an exercise's solution cell (the one with ``### BEGIN SOLUTION``) is folded away: its code is
  hidden behind a "Show the solution" toggle (the cell gets the tag ``hide-input`` as the page is
  read), so a learner reading the site meets the exercise and its ✅ line first, not the answer;

* training cells show a tqdm progress bar, a widget whose stored text is its first frame
  ("0%| | 0/200"); a static page would show a run that never started, so the site leaves those
  outputs out (the cells are nbval-ignore-output, and the next cell prints the results). The
  explorers keep their line saying they are live on Binder (site/_config.yml shows widgets as
  text);
* sphinx-thebe's configuration script is registered twice, and the second copy redeclares a
  ``const`` and throws in the browser: every page keeps the first of identical scripts.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from myst_parser.mdit_to_docutils.base import default_slugify
from sphinx.util import logging

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
LESSON_GLOB = "[0-9][0-9]_*.ipynb"

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
QUESTION_ROW = re.compile(r"^\| (Q\d+) \| .+ \| (.+) \|$", flags=re.M)
ANSWERED_IN = re.compile(r"<!-- answered-in: (Q\d+) -->")
LESSON_MAP = "<!-- lesson-map -->"
SECTION_REF = re.compile(r"§(\d+)(?:\s*[–-]\s*(\d+))?")
LESSON_PREFIX = re.compile(r"^(\d\d) · (.*)$", flags=re.S)

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# Reading the lessons


@dataclass(frozen=True)
class Heading:
    level: int
    text: str  # as MyST sees it for the slug: plain text and inline code, no math
    slug: str
    source: str  # the Markdown, math included


@dataclass(frozen=True)
class Lesson:
    number: str  # "03"
    path: Path
    headings: tuple[Heading, ...]

    @property
    def link(self) -> str:
        """The lesson's path relative to site/, where the generated pages live."""
        return f"../notebooks/{self.path.name}"

    @property
    def title_link(self) -> str:
        """A Markdown link to the lesson with its title as the text, math included (an empty link
        text would show the title's TeX unrendered inside a table)."""
        return f"[{self.headings[0].source}]({self.link})"

    def section(self, number: int) -> Heading | None:
        """The level-2 heading "N · …" of section N."""
        return next((h for h in self.headings if h.level == 2 and h.text.startswith(f"{number} · ")), None)

    def heading_named(self, text: str) -> Heading | None:
        """A heading whose text is `text` (case and surrounding punctuation ignored)."""
        wanted = text.strip(" .:").casefold()
        return next((h for h in self.headings if h.text.strip(" .:?").casefold() == wanted), None)


def _headings(markdown: str) -> tuple[Heading, ...]:
    """Every heading with the anchor slug MyST gives it (myst_heading_anchors): the heading's text
    and inline-code children joined, math left out, then default_slugify, made unique."""
    parser = MarkdownIt("commonmark").use(dollarmath_plugin)
    tokens = parser.parse(markdown)
    found, slugs = [], set()
    for opening, inline in zip(tokens, tokens[1:]):
        if opening.type != "heading_open":
            continue
        text = "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))
        slug, base, i = default_slugify(text), default_slugify(text), 1
        while slug in slugs:
            slug, i = f"{base}-{i}", i + 1
        slugs.add(slug)
        found.append(Heading(int(opening.tag[1]), text, slug, inline.content))
    return tuple(found)


def read_lessons() -> dict[str, Lesson]:
    """The lessons, by their two-digit number."""
    lessons = {}
    for path in sorted(NOTEBOOKS.glob(LESSON_GLOB)):
        nb = nbformat.read(path, as_version=4)
        markdown = "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        lessons[path.name[:2]] = Lesson(path.name[:2], path, _headings(markdown))
    return lessons


def question_table() -> dict[str, str]:
    """Lesson 00's questions table: {"Q1": its "answered in" cell, …}, in the table's order."""
    start = nbformat.read(NOTEBOOKS / "00_start_here.ipynb", as_version=4)
    text = "\n".join(c.source for c in start.cells if c.cell_type == "markdown")
    return dict(QUESTION_ROW.findall(text))


def binder_url(notebook: str) -> str:
    """The Binder link that opens `notebook` (a path in the repository) in JupyterLab; the same
    form as README's links, from pyproject's Repository."""
    repository = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    org_repo = repository.removeprefix("https://github.com/")
    return f"https://mybinder.org/v2/gh/{org_repo}/HEAD?urlpath=lab/tree/{notebook}"


def colab_url(notebook: str) -> str:
    """The Colab link that opens `notebook` from the repository's main branch (README's form)."""
    repository = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    org_repo = repository.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{org_repo}/blob/main/{notebook}"


# --------------------------------------------------------------------------------------------
# "Answered in": lesson 00's cell, e.g. "04 · §1–3 the offset map; §4 why both sine and cosine"


def _section_links(lesson: Lesson, text: str, problems: list[str]) -> list[str]:
    """Markdown for one part of a cell: a link per § reference, or, without one, a link to the
    heading the text names, or else the text itself."""
    pieces = SECTION_REF.split(text)  # [before, first, last, after, first, last, after, …]
    before, links = pieces[0].strip(" ,;:"), []
    for first, last, after in zip(pieces[1::3], pieces[2::3], pieces[3::3]):
        numbers = range(int(first), int(last or first) + 1)
        for n in numbers:
            if lesson.section(n) is None:
                problems.append(f"lesson {lesson.number} has no section § {n}")
        heading = lesson.section(int(first))
        if heading is None:
            continue
        label = f"§{first}–{last}" if last else f"§{first}"
        description = re.sub(r"^(and|or)$", "", after.strip(" ,;")).strip()
        description = description or heading.source.split(" · ", 1)[1]
        links.append(f"[{label} {description}]({lesson.link}#{heading.slug})")
    if before:
        heading = lesson.heading_named(before)
        links.insert(0, f"[{before}]({lesson.link}#{heading.slug})" if heading else before)
    return links


def answered_in(question: str, cell: str, lessons: dict[str, Lesson], problems: list[str]) -> str:
    """A Markdown list: one item per lesson the cell names, linking the lesson and its sections."""
    items: dict[str, list[str]] = {}
    current = None
    for part in (p.strip() for p in cell.split(";")):
        match = LESSON_PREFIX.match(part)
        if match:
            current, part = match.groups()
        if current is None or current not in lessons:
            problems.append(f"{question}: '{part}' names no existing lesson ({current})")
            continue
        items.setdefault(current, []).extend(_section_links(lessons[current], part, problems))
    return "**Answered in**\n\n" + "\n".join(f"- {lessons[n].title_link}: " + "; ".join(links)
                                              for n, links in items.items())


def questions_by_lesson(table: dict[str, str]) -> dict[str, list[str]]:
    """{"05": ["Q1", "Q2", …], …}: which questions each lesson helps answer."""
    found: dict[str, list[str]] = {}
    for question, cell in table.items():
        for number in dict.fromkeys(re.findall(r"\b(\d\d) · ", cell)):
            found.setdefault(number, []).append(question)
    return found


def lesson_map(lessons: dict[str, Lesson], table: dict[str, str]) -> str:
    """The landing page's table of lessons."""
    answers = questions_by_lesson(table)
    rows = ["| lesson | answers | run it live |", "|---|---|---|"]
    for number, lesson in lessons.items():
        # (q5)= in site/questions.md labels question Q5; a missing label fails the build.
        questions = ", ".join(f"[{q}](#{q.lower()})" for q in answers.get(number, [])) or "—"
        notebook = f"notebooks/{lesson.path.name}"
        rows.append(f"| {lesson.title_link} | {questions} | [on Binder]({binder_url(notebook)}) · "
                    f"[on Colab]({colab_url(notebook)}) |")
    return "\n".join(rows)


SOLUTION_MARKER = "### BEGIN SOLUTION"
HIDE_INPUT = "hide-input"


def fold_solutions(nb) -> int:
    """Tag every solution cell ``hide-input`` (in place); return how many were folded."""
    folded = 0
    for cell in nb.cells:
        if cell.cell_type == "code" and SOLUTION_MARKER in cell.source:
            tags = cell.metadata.setdefault("tags", [])
            if HIDE_INPUT not in tags:
                tags.append(HIDE_INPUT)
            folded += 1
    return folded


def for_the_page(text: str) -> str:
    """The lesson (notebook JSON text) as its page shows it: solutions folded, no progress bars."""
    nb = nbformat.reads(text, as_version=4)
    folded = fold_solutions(nb)
    dropped = drop_progress_bars(nb)
    return nbformat.writes(nb) if folded or dropped else text


def drop_progress_bars(nb) -> int:
    """Remove (in place) the outputs that are progress-bar widgets: an HBox holding a
    FloatProgress or IntProgress, going by the widget state saved in the notebook. Returns how
    many were removed."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})

    def is_progress_bar(output) -> bool:
        view = output.get("data", {}).get(WIDGET_VIEW)
        model = state.get(view["model_id"], {}) if view else {}
        children = model.get("state", {}).get("children", []) if model.get("model_name") == "HBoxModel" else []
        return any(state.get(child.removeprefix("IPY_MODEL_"), {}).get("model_name")
                   in ("FloatProgressModel", "IntProgressModel") for child in children)

    dropped = 0
    for cell in nb.cells:
        if cell.cell_type == "code":
            kept = [output for output in cell.outputs if not is_progress_bar(output)]
            dropped += len(cell.outputs) - len(kept)
            cell.outputs = kept
    return dropped


# --------------------------------------------------------------------------------------------
# Sphinx


def _fill_in(app, docname: str, source: list[str]) -> None:
    """source-read: replace the markers in site/index.md and site/questions.md; fold the
    lessons' solutions and leave their progress bars out."""
    if docname.startswith("notebooks/"):
        source[0] = for_the_page(source[0])
    if docname not in ("site/index", "site/questions"):
        return
    lessons, table, problems = read_lessons(), question_table(), []
    text = source[0]
    if docname == "site/index":
        if LESSON_MAP not in text:
            problems.append(f"no {LESSON_MAP} marker")
        text = text.replace(LESSON_MAP, lesson_map(lessons, table))
    else:
        marked = ANSWERED_IN.findall(text)
        if marked != list(table):
            problems.append(f"the page's questions {marked} are not lesson 00's {list(table)}, in order")
        text = ANSWERED_IN.sub(lambda m: answered_in(m[1], table.get(m[1], ""), lessons, problems), text)
    for problem in problems:
        logger.warning(f"{docname}: {problem} (generated from notebooks/00_start_here.ipynb)",
                       location=docname, type="course_site")
    source[0] = text


def _drop_repeated_scripts(app, pagename, templatename, context, doctree) -> None:
    """html-page-context: keep the first of identical <script> entries (an inline script is
    registered once with filename None and once with "", so compare what the page would get)."""
    scripts, seen, unique = context.get("script_files") or [], set(), []
    for script in scripts:
        key = (script.filename or "", script.priority, tuple(sorted(script.attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    # MathJax on every page, not only on pages with an equation: the navigation bar shows lesson
    # 04's title, which has one, on every page.
    app.set_html_assets_policy("always")
    app.connect("source-read", _fill_in)
    app.connect("html-page-context", _drop_repeated_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
