"""Student copies of the lessons: solutions replaced by a stub, outputs cleared.

    python -m tools.student           # (re)writes notebooks/student/NN_*.ipynb
    python -m tools.student --check   # exit 1 if a committed copy differs from a fresh build
    python -m tools.student --release DIR   # a folder for students alone (no solution anywhere)

A solution is every line between nbgrader's markers ``### BEGIN SOLUTION`` and
``### END SOLUTION``; it becomes ``# YOUR CODE HERE`` / ``raise NotImplementedError()`` at the
same indentation, as nbgrader's generate_assignment does. An exercise is two cells: the solution
cell, then a locked test cell ``assert check_…(…)`` (nbgrader metadata: autograded answer, then
autograder tests with points). Both are tagged ``raises-exception`` in the copy: Run All goes on
past a stub and its failing check. A teacher's hidden
tests, the lines from ``### BEGIN HIDDEN TESTS`` to ``### END HIDDEN TESTS`` (markers included),
are removed from the copy, as nbgrader does. A written question's answer cell (markdown,
nbgrader metadata: manually graded answer) holds the sample answer and the marking guide in the
lesson; in the copy it reads ``YOUR ANSWER HERE``, as in nbgrader's release.

``--release DIR`` writes the student copies and a short README into an empty folder, for a
classroom repository or nbgitpuller (this repository holds the teacher's versions), then reads
back every file it wrote and fails if one holds a solution, a hidden test, a sample answer or a
marking guide. The README and every lesson's Colab install cell pin the course's package to
this version's tag (``v`` and the version in pyproject.toml: tag the commit you release).
"""

from __future__ import annotations

import argparse
import copy
import sys
import tomllib
from pathlib import Path

import nbformat

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
TEXT_STUB = "YOUR ANSWER HERE"  # nbgrader's text stub for a written answer cell
LESSON_PATTERN = "[0-9][0-9]_*.ipynb"


def _replace_regions(source: str, begin: str, end: str, what: str, stub: tuple[str, ...]) -> str:
    """``source`` with every region from a ``begin`` line to an ``end`` line (markers included)
    replaced by the ``stub`` lines, indented like the ``begin`` marker. ``what`` names the region
    in error messages."""
    if not isinstance(source, str):
        raise TypeError(f"source must be a string, got {type(source).__name__}")
    out, inside = [], False
    for number, line in enumerate(source.split("\n"), start=1):
        marker = line.strip()
        if marker == begin:
            if inside:
                raise ValueError(f"line {number}: {begin} inside another {what} region")
            indent = line[: len(line) - len(line.lstrip())]
            out += [indent + stub_line for stub_line in stub]
            inside = True
        elif marker == end:
            if not inside:
                raise ValueError(f"line {number}: {end} without a {begin} before it")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"a {what} region has no {end}")
    return "\n".join(out)


def strip_solutions(source: str) -> str:
    """A cell's source with each solution region replaced by the stub lines."""
    return _replace_regions(source, BEGIN, END, "solution", STUB)


def strip_hidden_tests(source: str) -> str:
    """A cell's source without its hidden-test regions (markers included)."""
    return _replace_regions(source, BEGIN_HIDDEN, END_HIDDEN, "hidden-test", ())


def student_notebook(lesson: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student copy of one lesson notebook (the lesson itself is left unchanged)."""
    if not isinstance(lesson, nbformat.NotebookNode):
        raise TypeError(f"lesson must be a notebook read with nbformat, got {type(lesson).__name__}")
    nb = copy.deepcopy(lesson)
    nb.metadata.pop("widgets", None)
    for cell, original in zip(nb.cells, lesson.cells):
        cell.metadata.pop("execution", None)
        if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = TEXT_STUB  # a written answer: the sample answer and marking guide go
        if cell.cell_type != "code":
            continue
        cell.outputs = []
        cell.execution_count = None
        if BEGIN_HIDDEN in cell.source or END_HIDDEN in cell.source:
            cell.source = strip_hidden_tests(cell.source)
        if BEGIN in cell.source:
            cell.source = strip_solutions(cell.source)
        if BEGIN in original.source or cell.metadata.get("nbgrader", {}).get("grade"):
            # The stub raises, and so does the test cell's `assert check_…(…)` after it: tagged,
            # Run All goes on past both to the rest of the lesson.
            tags = cell.metadata.setdefault("tags", [])
            if "raises-exception" not in tags:
                tags.append("raises-exception")
    return nb


def render(nb: nbformat.NotebookNode) -> str:
    """The notebook as the exact text written to disk (nbformat's layout, final newline)."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def lesson_paths(lessons: Path) -> list[Path]:
    """The lesson notebooks NN_*.ipynb in a folder, in order."""
    return sorted(Path(lessons).glob(LESSON_PATTERN))


def build(lessons: Path, out: Path) -> dict[Path, str]:
    """The student copies of every lesson in ``lessons``: {path under out: text}."""
    return {
        Path(out) / path.name: render(student_notebook(nbformat.read(path, as_version=4)))
        for path in lesson_paths(lessons)
    }


# Text that only the teacher's version holds: none of it may reach a student release.
TEACHER_ONLY = (BEGIN, END, BEGIN_HIDDEN, END_HIDDEN, "**Sample answer**", "**Marking guide**")
REPOSITORY = "https://github.com/positional-encodings-derived/course"
RELEASE_README = """# Positional Encodings, Derived: the lessons (course_utils {version})

The lessons for students: every exercise is yours to write, and each has a check cell that
says what to fix. Open `00_start_here.ipynb` first.

They need the course's package at the version they were made with:

    pip install "git+{repository}@v{version}"

On your course's JupyterHub it is installed already. On Colab each lesson's first cell
installs exactly this version for you.
"""


def version(root: Path = Path(".")) -> str:
    """The course's version, from pyproject.toml."""
    with open(Path(root) / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]["version"]


def release(lessons: Path, out: Path, course_version: str) -> list[Path]:
    """Write the student copies of ``lessons`` and a README into the empty or new folder
    ``out``; return the files written. Raises ValueError if ``out`` holds anything, or if a
    written file holds text only the teacher's version should (TEACHER_ONLY)."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"out must be an empty or new folder, got {out} with files in it")
    out.mkdir(parents=True, exist_ok=True)
    files = {out / "README.md": RELEASE_README.format(version=course_version,
                                                      repository=REPOSITORY)}
    pinned = f"{REPOSITORY}@v{course_version}"  # the Colab cell installs this version
    for path, text in build(lessons, out).items():
        if f"{REPOSITORY}@main" not in text:
            raise ValueError(f"{path.name}: no Colab install line from {REPOSITORY}@main to pin")
        files[out / path.name] = text.replace(f"{REPOSITORY}@main", pinned)
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    for path in sorted(out.rglob("*")):
        text = path.read_text(encoding="utf-8")
        found = [marker for marker in TEACHER_ONLY if marker in text]
        if found:
            raise ValueError(f"{path} holds teacher-only text {found}: not a student release")
    return sorted(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.student", description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=Path, default=Path("notebooks"))
    parser.add_argument("--out", type=Path, default=Path("notebooks/student"))
    parser.add_argument("--check", action="store_true", help="only compare with the committed copies")
    parser.add_argument("--release", type=Path, metavar="DIR",
                        help="write a release for students alone into the empty folder DIR")
    args = parser.parse_args(argv)
    if args.release is not None:
        written = release(args.lessons, args.release, version())
        print(f"wrote {len(written)} files to {args.release}/: the student copies and a README; "
              f"no solution, hidden test, sample answer or marking guide in any of them")
        return 0
    copies = build(args.lessons, args.out)
    stale = [p for p in lesson_paths(args.out) if p not in copies]
    differ = [p for p, text in copies.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    if args.check:
        for p in differ:
            print(f"out of date: {p} (run `make student`)")
        for p in stale:
            print(f"no lesson for: {p} (run `make student`)")
        return 1 if differ or stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for p in stale:
        p.unlink()
    for p, text in copies.items():
        p.write_text(text, encoding="utf-8")
    print(f"wrote {len(copies)} student copies to {args.out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
