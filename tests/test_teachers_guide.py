"""TEACHERS_GUIDE.md stays true: it is written from the lessons and bench/, and a fresh
build must equal the committed file (issue 41)."""

from __future__ import annotations

import json
import re

import nbformat
from conftest import LESSONS, ROOT

from tools import teachers_guide


def test_the_committed_guide_is_what_the_lessons_and_bench_say():
    bench = json.loads((ROOT / "bench" / "results.json").read_text(encoding="utf-8"))
    fresh = teachers_guide.guide_text(LESSONS, bench)
    assert (ROOT / "TEACHERS_GUIDE.md").read_text(encoding="utf-8") == fresh, (
        "TEACHERS_GUIDE.md is out of date: run python -m tools.teachers_guide"
    )


def test_every_lesson_says_what_it_teaches_and_what_it_needs_in_its_opening():
    for path in LESSONS:
        opening = nbformat.read(path, as_version=4).cells[0].source
        facts = teachers_guide.lesson_facts(path, {})
        assert facts["objective"], (
            f"{path.name}: no 'After this lesson you can ...' paragraph"
        )
        assert facts["needs"], f"{path.name}: no '**You need:**' line"
        needed = [int(n) for n in re.findall(r"\b(\d\d)\b", facts["needs"])]
        assert all(n < int(path.name[:2]) for n in needed), (
            f"{path.name} needs a later lesson"
        )
        assert "**You need:**" in opening


def test_the_guide_counts_exercises_points_and_hidden_tests(tmp_path):
    facts = teachers_guide.lesson_facts(
        LESSONS[1], {"lessons": {LESSONS[1].stem: {"seconds": 3.0, "peak_mb": 300.0}}}
    )
    assert [e["id"] for e in facts["exercises"]] == [
        "l01_attention",
        "l01_permutation_matrix",
        "l01_causal_mask",
    ]
    # the fresh check, then at least one assert on fresh inputs
    assert all(e["points"] == 1 and e["hidden"] >= 2 for e in facts["exercises"])
    assert facts["seconds"] == 3.0 and facts["peak_mb"] == 300.0
    low, high = facts["student_minutes"]
    assert high - low == 15 and low >= 3 * teachers_guide.MINUTES_PER_EXERCISE


def _section(title: str) -> str:
    """The markdown cell of lesson 00 that starts with the heading ``title``."""
    cells = nbformat.read(LESSONS[0], as_version=4).cells
    return next(c.source for c in cells if c.source.startswith(title))


def test_lesson_00s_map_shows_what_each_lesson_needs():
    table = _section("## The lessons")
    rows = dict(re.findall(r"^\| (\d\d) \|.*\| ([^|]*) \|$", table, re.M))
    assert sorted(rows) == [path.name[:2] for path in LESSONS]
    for path in LESSONS:
        needs = teachers_guide.lesson_facts(path, {})["needs"]
        assert rows[path.name[:2]].strip() == (
            ", ".join(re.findall(r"\b(\d\d)\b", needs)) or "—"
        ), path.name


def test_lesson_00s_fast_path_gives_the_guides_student_times():
    """The fast path to RoPE and long contexts: eight lessons in order, each with the time the
    guide estimates (so the two cannot drift apart)."""
    rows = re.findall(r"^\| (\d\d) \| [^|]+ \| (\d+)–(\d+) min \|$", _section("## A fast path"), re.M)
    assert [n for n, _, _ in rows] == ["00", "01", "03", "04", "10", "11", "12", "14"]
    for number, low, high in rows:
        path = next(p for p in LESSONS if p.name.startswith(number))
        assert (int(low), int(high)) == teachers_guide.lesson_facts(path, {})["student_minutes"], path.name
