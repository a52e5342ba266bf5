"""Every learner question Q1–Q14 is mapped in lesson 00, and each lesson it points to answers it."""

import re

import nbformat
import pytest

from conftest import LESSONS, NOTEBOOKS

ROW = re.compile(r"^\| (Q\d+) \| .+ \| (.+) \|$", flags=re.M)


def _question_table() -> dict[str, list[str]]:
    start = nbformat.read(NOTEBOOKS / "00_start_here.ipynb", as_version=4)
    text = "\n".join(c.source for c in start.cells if c.cell_type == "markdown")
    return {q: re.findall(r"\b(\d\d) · ", refs) for q, refs in ROW.findall(text)}


def test_lesson_00_maps_every_question():
    table = _question_table()
    assert list(table) == [f"Q{i}" for i in range(1, 15)]
    assert all(table[q] for q in table), "every question points at a lesson"


@pytest.mark.parametrize("question", [f"Q{i}" for i in range(1, 15)])
def test_the_lessons_a_question_points_to_answer_it(question):
    existing = {p.name[:2]: p for p in LESSONS}
    for number in _question_table()[question]:
        if number not in existing:
            continue  # a lesson still to be written
        nb = nbformat.read(existing[number], as_version=4)
        markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
        assert re.search(rf"\b{question}\b", markdown[0]), f"{existing[number].name} does not say it answers {question}"
        showed = [m for m in markdown if re.search(r"^## What we showed", m, flags=re.M)]
        assert showed, f"{existing[number].name} has no 'What we showed' section"
        summary = showed[-1].split("## What we showed", 1)[1].split("\n## ", 1)[0]
        assert re.search(rf"\b{question}\b", summary), f"{existing[number].name}'s 'What we showed' skips {question}"
