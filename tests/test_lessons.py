"""Hygiene of the stored lesson notebooks: executed in order, clean outputs, small, exercises present.

nbval (run by `make test`) proves the stored outputs are what the code produces; these tests
prove there is something for it to compare: a cell without an execution count is skipped by nbval.
"""

import json
import re

import nbformat
import pytest

from conftest import LESSONS

MACHINE_PATH = re.compile(r"(/root/|/home/|/tmp/|/Users/|/work/|site-packages|C:\\\\Users)")
MEMORY_ADDRESS = re.compile(r"at 0x[0-9a-fA-F]{6,}")
EXPECTED_LESSONS = [
    "00_start_here.ipynb",
    "01_permutation_equivariance.ipynb",
    "02_naive_position_codes.ipynb",
    "03_sinusoidal_encoding.ipynb",
    "04_relative_offset_linear_map.ipynb",
    "05_add_or_concatenate.ipynb",
    "06_four_term_decomposition.ipynb",
    "07_learned_position_embeddings.ipynb",
    "08_position_through_the_layers.ipynb",
    "09_causal_masks_and_implicit_position.ipynb",
    "10_beyond_absolute.ipynb",
    "11_rope_in_practice.ipynb",
    "12_longer_than_trained.ipynb",
    "13_positions_on_a_grid.ipynb",
    "14_capstone_real_text.ipynb",
]


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]


def test_the_lessons_are_there():
    names = [p.name for p in LESSONS]
    assert names[: len(EXPECTED_LESSONS)] == EXPECTED_LESSONS
    assert [n[:2] for n in names] == [f"{i:02d}" for i in range(len(names))], "lessons are numbered 00, 01, ... with no gap"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_is_valid_small_and_python3(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    assert path.stat().st_size <= 1_500_000, f"{path.name} is {path.stat().st_size} bytes; keep lessons under 1.5 MB"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_code_cell_was_executed_in_order(path):
    nb = nbformat.read(path, as_version=4)
    counts = [c.execution_count for c in _code_cells(nb)]
    assert counts, f"{path.name} has no code"
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name}: execution counts {counts}; run `make execute` to re-run it top to bottom"
    )


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_outputs_are_clean(path):
    nb = nbformat.read(path, as_version=4)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        for out in cell.outputs:
            where = f"{path.name} cell {index}"
            if out.output_type == "error":
                assert "raises-exception" in tags, f"{where} stores an error ({out.ename}) but is not tagged raises-exception"
            if out.output_type == "stream":
                assert out.name == "stdout", f"{where} writes to stderr: {out.text[:200]!r}"
            text = out.get("text", "") + json.dumps(out.get("data", {}).get("text/plain", ""))
            assert not MACHINE_PATH.search(text), f"{where} shows a machine path: {text[:200]!r}"
            assert not MEMORY_ADDRESS.search(text), f"{where} shows a memory address: {text[:200]!r}"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_starts_with_setup(path):
    nb = nbformat.read(path, as_version=4)
    first = _code_cells(nb)[0].source
    assert "setup(0)" in first, f"{path.name}: the first code cell must call setup(0) so numbers reproduce"


SOLUTION_CELL = {"grade": False, "locked": False, "schema_version": 3, "solution": True, "task": False}
TEST_CELL = {"grade": True, "locked": True, "schema_version": 3, "solution": False, "task": False}


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_exercises_follow_the_contract(path):
    """Each exercise is two cells, as nbgrader needs them: the solution cell (the answer between
    nbgrader's markers; metadata: autograded answer), then the locked test cell (metadata:
    autograder tests, with points) that imports its check again, asserts `check_…(…)` and ends
    in hidden tests: the check again with `fresh_check` (checks/_fresh.py), then asserts on
    fresh inputs against the formula written out. The reference solution passes its check,
    which prints one ✅ line and nothing else."""
    nb = nbformat.read(path, as_version=4)
    solutions = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "### BEGIN SOLUTION" in c.source]
    minimum = 1 if path.name.startswith("00_") else 2
    assert len(solutions) >= minimum, f"{path.name} has {len(solutions)} exercises; needs at least {minimum}"
    graded = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
              if "nbgrader" in c.metadata and c.cell_type == "code"]
    assert len(graded) == 2 * len(solutions) and len(set(graded)) == len(graded), f"{path.name}: grade ids {graded}"
    for index in solutions:
        cell, test = nb.cells[index], nb.cells[index + 1]
        source = cell.source
        assert source.count("### BEGIN SOLUTION") == source.count("### END SOLUTION")
        assert source.rstrip().endswith("### END SOLUTION"), f"{path.name} cell {index}: code after the solution"
        meta = cell.metadata.get("nbgrader", {})
        assert {k: meta.get(k) for k in SOLUTION_CELL} == SOLUTION_CELL, f"{path.name} cell {index}: {meta}"
        assert re.fullmatch(rf"l{path.name[:2]}_\w+", meta["grade_id"]), meta["grade_id"]
        test_meta = test.metadata.get("nbgrader", {})
        assert {k: test_meta.get(k) for k in TEST_CELL} == TEST_CELL, f"{path.name} cell {index + 1}: {test_meta}"
        assert test_meta["grade_id"] == meta["grade_id"] + "_test" and test_meta["points"] >= 1
        visible, _, hidden = test.source.partition("### BEGIN HIDDEN TESTS")
        shape = re.fullmatch(r"# graded with its own import of the check; if it fails, the ❌ line says what to fix\n"
                             r"from course_utils\.checks import (check_\w+)\n\nassert \1\((\w+)\)\n\n",
                             visible)
        assert shape, f"{path.name} cell {index + 1}: {visible!r}"
        check, answer = shape.groups()
        # every exercise has a hidden test: its check again, from a copy no cell can have patched
        assert hidden.rstrip().endswith("### END HIDDEN TESTS"), f"{path.name} cell {index + 1}"
        lines = hidden.splitlines()
        assert f'_check = reload(_fresh).fresh_check("{check}")' in lines, lines
        assert f"assert _check({answer})" in lines, lines
        # ... and asserts on fresh inputs against the formula itself, not through a check
        fresh = hidden.split("# fresh inputs", 1)
        assert len(fresh) == 2 and "assert " in fresh[1], f"{path.name} cell {index + 1}"
        assert not re.search(r"check_|course_utils", fresh[1]), fresh[1]
        assert "SOLUTION" not in test.source
        lines = [line for out in test.outputs if out.output_type == "stream" for line in out.text.splitlines()]
        assert len(lines) == 1 and lines[0].startswith("✅ Correct"), f"{path.name} cell {index + 1}: {lines}"
        assert all(out.output_type == "stream" for out in test.outputs), "a passing check shows only its line"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_ends_with_what_we_showed_then_at_most_a_deeper_section(path):
    """The main path ends with "What we showed"; after it may come only one final
    "## Deeper (optional)" section, for the detours."""
    if path.name.startswith("00_"):
        return
    nb = nbformat.read(path, as_version=4)
    headings = [line for c in nb.cells if c.cell_type == "markdown"
                for line in c.source.splitlines() if line.startswith("## ")]
    tail = headings[headings.index("## What we showed"):] if "## What we showed" in headings else []
    assert tail in (["## What we showed"], ["## What we showed", "## Deeper (optional)"]), headings[-3:]


# The lesson that shows each explorer (issue 5): at least four, one per idea.
EXPLORER_LESSONS = {
    "01_permutation_equivariance.ipynb": "permutation_explorer",
    "03_sinusoidal_encoding.ipynb": "sinusoid_explorer",
    "04_relative_offset_linear_map.ipynb": "offset_map_explorer",
    "05_add_or_concatenate.ipynb": "amplitude_explorer",
    "06_four_term_decomposition.ipynb": "four_terms_explorer",
    "12_longer_than_trained.ipynb": "extension_explorer",
}


def test_every_explorer_is_used_in_a_lesson():
    from course_utils.widgets import EXPLORERS

    assert sorted(f"{name}_explorer" for name in EXPLORERS) == sorted(EXPLORER_LESSONS.values())


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_explorers_follow_a_static_picture_and_are_not_compared(path):
    """An explorer cell is tagged so nbval skips its (widget) output, and the cell before it
    stores the same figure as a PNG, so the lesson reads on GitHub, on the site and in nbval."""
    nb = nbformat.read(path, as_version=4)
    explorer_cells = [i for i, c in enumerate(nb.cells) if "explorer" in c.metadata.get("tags", [])]
    expected = EXPLORER_LESSONS.get(path.name)
    assert len(explorer_cells) == (1 if expected else 0), f"{path.name}: explorer cells at {explorer_cells}"
    for index in explorer_cells:
        cell, before = nb.cells[index], nb.cells[index - 1]
        assert "nbval-ignore-output" in cell.metadata["tags"]
        assert before.cell_type == "code" and "nbval-ignore-output" not in before.metadata.get("tags", [])
        assert f"{expected}(" in before.source and ".picture()" in before.source
        assert any("image/png" in out.get("data", {}) for out in before.outputs), "no static picture stored"
        views = [out for out in cell.outputs if "application/vnd.jupyter.widget-view+json" in out.get("data", {})]
        assert views, f"{path.name} cell {index}: the explorer was not displayed as a widget"
        assert views[0]["data"]["text/plain"].startswith("<live explorer (")


WIDTH = 88


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_code_and_printed_text_fit_88_columns(path):
    """The website and a laptop-width JupyterLab show 88 columns without a horizontal scroll bar."""
    nb = nbformat.read(path, as_version=4)
    wide = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        texts = [cell.source] + [out.get("text", "") for out in cell.outputs if out.output_type == "stream"]
        texts += [out.get("data", {}).get("text/plain", "") for out in cell.outputs
                  if "image/png" not in out.get("data", {}) and "application/vnd.jupyter.widget-view+json"
                  not in out.get("data", {})]
        for text in texts:
            wide += [f"cell {index}: {line}" for line in text.splitlines() if len(line) > WIDTH]
    assert not wide, f"{path.name}: {len(wide)} lines wider than {WIDTH} columns:\n" + "\n".join(wide[:10])


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_nbgrader_markers_appear_only_in_exercise_cells(path):
    """nbgrader looks for its markers on every line of every cell, markdown included: a sentence
    that names them makes `generate_assignment` fail, so prose must not spell them out."""
    nb = nbformat.read(path, as_version=4)
    for index, cell in enumerate(nb.cells):
        if "nbgrader" in cell.metadata:
            continue
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
            assert marker not in cell.source, f"{path.name} cell {index} names {marker!r}"


WRITTEN_ANSWER = {"grade": True, "solution": True, "locked": False, "task": False}


@pytest.mark.parametrize("path", LESSONS[1:], ids=lambda p: p.name)
def test_every_lesson_has_a_written_question_with_a_marking_guide(path):
    """Lessons 01-16 each ask one written question (predict, then explain an output the lesson
    shows), graded by hand in nbgrader: the question just before the cells that print the
    output it asks about (so the prediction comes first), the answer cell right after them,
    before any prose reads the output; the answer is a markdown cell (metadata: manually graded
    answer, with points) that holds a sample answer and a marking guide whose lines add up to
    its points; `make student` and nbgrader's release replace that cell."""
    nb = nbformat.read(path, as_version=4)
    answers = [i for i, c in enumerate(nb.cells)
               if c.cell_type == "markdown" and "nbgrader" in c.metadata]
    assert len(answers) >= 1, f"{path.name} has no written question"
    for index in answers:
        cell = nb.cells[index]
        meta = cell.metadata["nbgrader"]
        assert {k: meta.get(k) for k in WRITTEN_ANSWER} == WRITTEN_ANSWER, meta
        assert re.fullmatch(rf"l{path.name[:2]}_question\d*", meta["grade_id"]), meta
        assert nb.cells[index - 1].cell_type == "code", f"{path.name}: the answer follows the output"
        asked = [i for i in range(max(0, index - 5), index)
                 if nb.cells[i].source.startswith("**Written question.**")]
        assert asked, f"{path.name}: the question sits at most 4 cells (its output) before the answer"
        between = nb.cells[asked[-1] + 1:index]
        assert any(c.cell_type == "code" for c in between)
        assert not any(c.cell_type == "markdown" and c.source.startswith("#") for c in between)
        assert cell.source.startswith("**Sample answer**") and "**Marking guide**" in cell.source
        guide = cell.source.split("**Marking guide**")[1]
        awarded = [int(n) for n in re.findall(r"^- (\d+) points?:", guide, re.M)]
        assert sum(awarded) == meta["points"] >= 1, (path.name, awarded, meta["points"])
