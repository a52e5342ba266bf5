"""The teacher's guide (TEACHERS_GUIDE.md), written from the lessons and bench/, never
by hand.

    python -m tools.teachers_guide          # (re)write TEACHERS_GUIDE.md python -m
    tools.teachers_guide --check  # exit 1 if the committed guide differs from a fresh
    one

Per lesson: what a student can do after it (the lesson's "After this lesson you can
..."), the lessons it needs (its "**You need:**" line), its exercises (grade id, points,
hidden tests), its written questions, its machine time and peak memory
(bench/results.json, `make bench`) and an estimate of student time.
tests/test_teachers_guide.py fails when the guide drifts from the lessons.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "TEACHERS_GUIDE.md"
# The student-time estimate: reading the lesson's prose at a careful pace for
# mathematical text, plus a fixed time per exercise and per written question. A rule of
# thumb, not a measurement with students: say so wherever it is shown.
WORDS_PER_MINUTE = 120
MINUTES_PER_EXERCISE = 15
MINUTES_PER_QUESTION = 10
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)


def _opening(nb) -> str:
    return (
        nb.cells[0].source if nb.cells and nb.cells[0].cell_type == "markdown" else ""
    )


def _paragraph(text: str, pattern: str) -> str:
    """The paragraph of ``text`` that starts with ``pattern`` (a regex), joined into one
    line."""
    for paragraph in re.split(r"\n\s*\n", text):
        if re.match(pattern, paragraph.strip()):
            return " ".join(paragraph.split())
    return ""


def lesson_facts(path: Path, bench: dict) -> dict:
    """Everything the guide says about one lesson, read from the notebook and bench."""
    nb = nbformat.read(path, as_version=4)
    opening = _opening(nb)
    title = re.search(r"^# (.*)$", opening, re.M)
    exercises, questions = [], []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and cell.cell_type == "code":
            hidden = HIDDEN.search(cell.source)
            asserts = (
                len(re.findall(r"^\s*assert ", hidden.group(1), re.M)) if hidden else 0
            )
            exercises.append(
                {
                    "id": meta["grade_id"].removesuffix("_test"),
                    "points": meta.get("points", 0),
                    "hidden": asserts,
                }
            )
        elif meta.get("grade") and cell.cell_type == "markdown":
            questions.append({"id": meta["grade_id"], "points": meta.get("points", 0)})
    words = sum(
        len(cell.source.split()) for cell in nb.cells if cell.cell_type == "markdown"
    )
    minutes = (
        words / WORDS_PER_MINUTE
        + MINUTES_PER_EXERCISE * len(exercises)
        + MINUTES_PER_QUESTION * len(questions)
    )
    low = 5 * round(minutes / 5)
    measured = bench.get("lessons", {}).get(path.stem, {})
    need = _paragraph(opening, r"\*\*You need:?\*\*")
    return {
        "name": path.stem,
        "title": title.group(1).strip() if title else path.stem,
        "objective": _paragraph(
            opening, r"(\*\*)?After (this lesson|this notebook|it)"
        ),
        "needs": re.sub(r"^\*\*You need:?\*\*:?\s*", "", need),
        "exercises": exercises,
        "questions": questions,
        "words": words,
        "student_minutes": (low, low + 15),
        "seconds": measured.get("seconds"),
        "peak_mb": measured.get("peak_mb"),
    }


def guide_text(lessons: list[Path], bench: dict) -> str:
    facts = [lesson_facts(path, bench) for path in lessons]
    when = bench.get("when", "never")
    intro = (
        "Written by `python -m tools.teachers_guide` from the lessons and "
        "`bench/results.json`; do not edit by hand (a test fails when it "
        "drifts). How to run a term with nbgrader is in the README (*For "
        "teachers: homework*)."
    )
    method = (
        "**Student time** is an estimate, not a measurement with students: the "
        f"lesson's prose read at {WORDS_PER_MINUTE} words a minute (careful "
        f"reading of mathematical text), plus {MINUTES_PER_EXERCISE} minutes per "
        f"exercise and {MINUTES_PER_QUESTION} per written question, rounded to 5 "
        "minutes, as a range of a quarter of an hour. **Machine time** and **peak "
        f"memory** are measured by `make bench` (last run: {when}): one run of the "
        "whole lesson in a fresh kernel on one CPU thread."
    )
    header = ("lesson", "needs", "exercises", "points", "hidden tests",
              "written questions", "student time", "machine time", "peak memory")
    lines = [
        "# Teacher's guide",
        "",
        textwrap.fill(intro, width=95, break_on_hyphens=False),
        "",
        textwrap.fill(method, width=95, break_on_hyphens=False),
        "",
        "| " + " | ".join(header) + " |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for f in facts:
        seconds = "—" if f["seconds"] is None else f"{f['seconds']:.0f} s"
        memory = "—" if f["peak_mb"] is None else f"{f['peak_mb']:.0f} MB"
        needs = ", ".join(re.findall(r"\b(\d\d)\b", f["needs"])) or "—"
        points = sum(e["points"] for e in f["exercises"] + f["questions"])
        hidden = sum(e["hidden"] for e in f["exercises"])
        low, high = f["student_minutes"]
        cells = (f["name"][:2], needs, len(f["exercises"]), f"{points:g}", hidden,
                 len(f["questions"]), f"{low}–{high} min", seconds, memory)
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    for f in facts:
        lines += [
            "",
            f"## {f['title']}",
            "",
            f"`notebooks/{f['name']}.ipynb`, {f['words']:,} words of prose.",
            "",
        ]
        lines.append(
            f"- **After it:** {f['objective'] or '(the lesson states no objective)'}"
        )
        lines.append(
            f"- **Needs:** {f['needs'] or '(the lesson states no prerequisites)'}"
        )
        if f["exercises"]:
            lines.append(
                "- **Exercises** (grade id: points, hidden tests): "
                + "; ".join(
                    f"`{e['id']}`: {e['points']:g}, {e['hidden']}"
                    for e in f["exercises"]
                )
                + "."
            )
        lines.append(
            "- **Written questions:** "
            + (
                "; ".join(f"`{q['id']}`: {q['points']:g}" for q in f["questions"]) + "."
                if f["questions"]
                else "none yet."
            )
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.teachers_guide", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if TEACHERS_GUIDE.md differs from a fresh build",
    )
    args = parser.parse_args(argv)
    lessons = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    bench = json.loads((ROOT / "bench" / "results.json").read_text(encoding="utf-8"))
    text = guide_text(lessons, bench)
    if args.check:
        if not GUIDE.is_file() or GUIDE.read_text(encoding="utf-8") != text:
            print(
                "TEACHERS_GUIDE.md is out of date: run python -m tools.teachers_guide",
                file=sys.stderr,
            )
            return 1
        return 0
    GUIDE.write_text(text, encoding="utf-8")
    print(f"wrote {GUIDE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
