"""The evidence record behind the lessons' "How we know" footers, and how_we_know
itself.

The record (course_utils/zoo/evidence.json) is written by `make evidence`
(tools/evidence.py); the claims tests re-run its entries and require the same numbers.
Here: its shape, that every lesson footer names a section it holds and says the lesson's
runs are the record's, and that how_we_know prints what the record says and names a
wrong argument."""

import importlib
import json
import re

import nbformat
import pytest

from conftest import LESSONS
from course_utils import how_we_know
from course_utils.evidence import evidence, evidence_record
from tools import evidence as evidence_tool

# the module (the package's name `evidence` is its function)
evidence_module = importlib.import_module("course_utils.evidence")


def test_the_record_holds_every_section_the_tool_makes_in_its_shape():
    sections = evidence_record()["sections"]
    assert list(sections) == list(evidence_tool.SECTIONS)
    for key, section in sections.items():
        if section["steps"] is not None:  # None: each row names its own budget
            short, long = section["steps"]
            assert long == 2 * short, key
        assert section["tolerance"] == 0.01, key
        for row, columns in section["rows"].items():
            for column, values in columns.items():
                assert (
                    len(values["budget"])
                    == len(values["double"])
                    == len(section["seeds"])
                )
                assert all(0 <= v <= 1 for v in values["budget"] + values["double"]), (
                    key,
                    row,
                )
        if "further" in section:
            assert section["further"]["seeds"] == [3, 4, 5], key
    assert set(evidence_record()["numerics"]) == {"cpu", "fingerprint"}


def _footers():
    """(lesson, footer cell) for every code cell that calls how_we_know."""
    for path in LESSONS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and "how_we_know(" in cell.source:
                yield path.name, cell


def test_every_footer_names_a_recorded_section_and_finds_the_lessons_runs_in_it():
    footers = list(_footers())
    assert len(footers) >= 7
    for name, cell in footers:
        key = re.search(r'how_we_know\("([\w-]+)"', cell.source).group(1)
        assert key in evidence_record()["sections"], (name, key)
        text = "".join(o.get("text", "") for o in cell.outputs)
        assert text.startswith("How we know"), (name, key)
        if evidence(key).get("in_lesson", True):  # the lesson trains these models
            assert "measured=" in cell.source, (name, key)
            agree = r"are the record's \(\d+ values, to 3 decimals\): yes"
            assert re.search(agree, text), name


def test_how_we_know_prints_the_verdict_the_numbers_give():
    text = how_we_know("10-length")
    section = evidence("10-length")
    for row, columns in section["rows"].items():
        for column, values in columns.items():
            before = sum(values["budget"]) / 3
            after = sum(values["double"]) / 3
            verdict = "yes" if abs(after - before) <= 0.01 else "no"
            line = next(
                l for l in text.splitlines() if l.startswith(row + " ") and column in l
            )
            assert f"{after - before:+.3f}  {verdict}" in line, line
    assert "seeds 3–5, at the budget" in text


def test_measured_values_are_compared_with_the_record():
    rows = evidence("05-amplitude")["rows"]
    same = {
        row: {"test accuracy": columns["test accuracy"]["budget"]}
        for row, columns in rows.items()
    }
    assert how_we_know("05-amplitude", measured=same).endswith(
        "(9 values, to 3 decimals): yes"
    )
    moved = {
        row: {"test accuracy": [v + 0.01 for v in values["test accuracy"]]}
        for row, values in same.items()
    }
    assert how_we_know("05-amplitude", measured=moved).endswith(": NO")


def test_how_we_know_names_a_wrong_argument():
    with pytest.raises(ValueError, match="key must be one of"):
        how_we_know("05-nothing")
    with pytest.raises(TypeError, match="measured must be a dict"):
        how_we_know("05-amplitude", measured=[0.9])
    with pytest.raises(ValueError, match="no row 'A = 2'"):
        how_we_know("05-amplitude", measured={"A = 2": {"test accuracy": [1, 1, 1]}})
    with pytest.raises(ValueError, match="2 values, the record has 3"):
        how_we_know(
            "05-amplitude", measured={"A = 1 (code 4)": {"test accuracy": [1, 1]}}
        )
    with pytest.raises(TypeError, match="baselines must be a dict"):
        how_we_know("05-amplitude", baselines=[0.1])


def test_a_missing_or_malformed_record_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(evidence_module, "RECORD", tmp_path / "evidence.json")
    with pytest.raises(FileNotFoundError, match="make evidence"):
        evidence_record()
    (tmp_path / "evidence.json").write_text(json.dumps({"sections": []}))
    with pytest.raises(ValueError, match="not an evidence record"):
        evidence_record()
