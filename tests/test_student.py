"""Student copies: committed, identical to a fresh build, no solution left, and they run."""

import nbformat
import pytest
from nbclient import NotebookClient

import course_utils
from conftest import LESSONS, NOTEBOOKS, ROOT
from tools import student

STUDENT = NOTEBOOKS / "student"


def test_every_lesson_has_a_committed_student_copy():
    assert [p.name for p in student.lesson_paths(STUDENT)] == [p.name for p in LESSONS]


def test_committed_copies_equal_a_fresh_build():
    for path, text in student.build(NOTEBOOKS, STUDENT).items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is stale: run `make student`"


def test_check_mode_reports_stale_copies(tmp_path, capsys):
    lessons, out = tmp_path / "lessons", tmp_path / "out"
    lessons.mkdir()
    (lessons / LESSONS[-1].name).write_bytes(LESSONS[-1].read_bytes())
    assert student.main(["--lessons", str(lessons), "--out", str(out), "--check"]) == 1
    assert "out of date" in capsys.readouterr().out
    assert student.main(["--lessons", str(lessons), "--out", str(out)]) == 0
    assert student.main(["--lessons", str(lessons), "--out", str(out), "--check"]) == 0
    (out / "99_gone.ipynb").write_text("{}")
    assert student.main(["--lessons", str(lessons), "--out", str(out), "--check"]) == 1
    student.main(["--lessons", str(lessons), "--out", str(out)])
    assert not (out / "99_gone.ipynb").exists(), "a copy whose lesson is gone is removed"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_no_solution_line_survives(path):
    lesson = nbformat.read(path, as_version=4)
    copy = nbformat.read(STUDENT / path.name, as_version=4)
    assert len(copy.cells) == len(lesson.cells)
    assert copy.metadata.kernelspec == lesson.metadata.kernelspec
    for original, stripped in zip(lesson.cells, copy.cells):
        if stripped.cell_type != "code":
            if original.metadata.get("nbgrader", {}).get("solution"):  # a written answer
                assert stripped.source == "YOUR ANSWER HERE"
            else:
                assert stripped.source == original.source
            continue
        assert "SOLUTION" not in stripped.source
        assert stripped.outputs == [] and stripped.execution_count is None
        if "### BEGIN SOLUTION" in original.source:
            solution = original.source.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
            for line in solution.strip().splitlines():
                assert line.strip() not in stripped.source.splitlines(), f"solution line survives: {line!r}"
            assert "raise NotImplementedError()" in stripped.source
            assert "raises-exception" in stripped.metadata.tags
        elif original.metadata.get("nbgrader", {}).get("grade"):
            assert stripped.source == student.strip_hidden_tests(original.source)
            assert "HIDDEN" not in stripped.source and "fresh_check" not in stripped.source
            assert stripped.source.rstrip().split("\n")[-1].startswith("assert check_")
            assert "raises-exception" in stripped.metadata.tags, "Run All goes on past a failing check"
        else:
            assert stripped.source == original.source


def test_a_release_for_students_alone_holds_no_teacher_only_text(tmp_path):
    """`python -m tools.student --release DIR`: every student copy and a README pinned to this
    version's tag (the copies' Colab cells too), nothing else; it refuses a folder with files in it, and a lesson that would
    leak a marking guide into the release stops it."""
    written = student.release(NOTEBOOKS, tmp_path / "release", student.version(ROOT))
    assert [p.name for p in written] == sorted(["README.md"] + [p.name for p in LESSONS])
    assert sorted(p.name for p in (tmp_path / "release").iterdir()) == sorted(p.name for p in written)
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert not any(marker in text for marker in student.TEACHER_ONLY), path
    readme = (tmp_path / "release" / "README.md").read_text(encoding="utf-8")
    assert f"@v{course_utils.__version__}\"" in readme
    for path in [p for p in written if p.suffix == ".ipynb"]:  # each lesson's Colab cell installs this version, not main
        first_code = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        assert f"{student.REPOSITORY}@v{course_utils.__version__}\"" in first_code.source, path.name
        assert "@main" not in path.read_text(encoding="utf-8"), path.name
    with pytest.raises(ValueError, match="empty or new folder"):
        student.release(NOTEBOOKS, tmp_path / "release", "0")
    leaky = tmp_path / "leaky"
    leaky.mkdir()
    nb = nbformat.read(LESSONS[1], as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("**Marking guide** (1 point): ..."))
    nbformat.write(nb, leaky / LESSONS[1].name)
    with pytest.raises(ValueError, match="teacher-only text"):
        student.release(leaky, tmp_path / "second", "0")


def test_strip_solutions_keeps_indentation_and_rejects_broken_markers():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\ncheck(f)"
    assert student.strip_solutions(source) == (
        "def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\ncheck(f)"
    )
    with pytest.raises(ValueError, match="END SOLUTION"):
        student.strip_solutions("### BEGIN SOLUTION\nx = 1\n")
    with pytest.raises(ValueError, match="without"):
        student.strip_solutions("x = 1\n### END SOLUTION\n")
    with pytest.raises(TypeError, match="source"):
        student.strip_solutions(None)


def test_strip_hidden_tests_removes_the_region_and_its_markers():
    source = "x = f(2)\n### BEGIN HIDDEN TESTS\nassert f(3) == 9\n### END HIDDEN TESTS\ncheck(f)"
    assert student.strip_hidden_tests(source) == "x = f(2)\ncheck(f)"
    with pytest.raises(ValueError, match="END HIDDEN TESTS"):
        student.strip_hidden_tests("### BEGIN HIDDEN TESTS\nassert 1\n")
    with pytest.raises(ValueError, match="without"):
        student.strip_hidden_tests("### END HIDDEN TESTS\n")
    with pytest.raises(TypeError, match="source"):
        student.strip_hidden_tests(3)


def test_lesson_hidden_tests_run_in_the_lesson_and_vanish_from_the_copy():
    """Lesson 01 carries an example hidden test: it is executed in the lesson (its cell has a
    stored output), and no line of it reaches the student copy."""
    lesson = nbformat.read(LESSONS[1], as_version=4)
    copy = student.student_notebook(lesson)
    hidden = [(cell, twin) for cell, twin in zip(lesson.cells, copy.cells) if student.BEGIN_HIDDEN in cell.source]
    assert hidden, "lesson 01 should show teachers an example hidden test"
    for cell, twin in hidden:
        assert cell.execution_count is not None and cell.outputs
        region = cell.source.split(student.BEGIN_HIDDEN)[1].split(student.END_HIDDEN)[0]
        for line in region.strip().splitlines():
            assert not line.strip() or line.strip() not in twin.source
        assert "HIDDEN" not in twin.source


@pytest.mark.parametrize("path", [STUDENT / p.name for p in LESSONS], ids=lambda p: p.name)
def test_student_copy_runs_and_every_check_says_not_yet(path):
    """Run All on a student copy: each test cell runs its stub through the check, prints the ❌
    line (naming the stub's NotImplementedError) and fails its assert; no other cell errs."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    tests = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        test = cell.metadata.get("nbgrader", {}).get("grade", False)
        errors = [out.ename for out in cell.outputs if out.output_type == "error"]
        text = "".join(out.text for out in cell.outputs if out.output_type == "stream")
        if test:
            tests += 1
            assert errors == ["AssertionError"], f"{errors} in:\n{cell.source}"
            assert text.startswith("❌ Not yet:") and "NotImplementedError" in text, text
        else:
            assert not errors, f"{errors} in:\n{cell.source}"
    assert tests >= 1


def test_the_learners_package_holds_no_authoring_tool():
    """`import course_utils` shows what the lessons use: the tools that execute lessons, build
    student copies and time them live in tools/, outside the installed package."""
    import pkgutil

    import course_utils

    modules = {m.name for m in pkgutil.iter_modules(course_utils.__path__)}
    assert not modules & {"execute", "student", "bench"}
    for path in (ROOT / "course_utils").rglob("*.py"):
        text = path.read_text()
        assert "nbclient" not in text and 'if __name__ == "__main__"' not in text, f"{path} is an authoring tool"


def test_every_public_name_is_what_a_lesson_uses():
    """Each name in course_utils.__all__ appears in a lesson, or is used by the explorers and
    checks the lessons call, or is a result type a lesson gets back."""
    import re

    import course_utils

    text = "\n".join(cell.source for path in LESSONS for cell in nbformat.read(path, 4).cells)
    text += "".join(p.read_text() for p in (ROOT / "course_utils" / "widgets").glob("*.py"))
    text += "".join(p.read_text() for p in (ROOT / "course_utils" / "checks").glob("*.py"))
    for name in course_utils.__all__:
        if isinstance(getattr(course_utils, name), type):
            continue
        if name in AWAITING_A_LESSON:  # listed only while no lesson uses it
            assert not re.search(rf"\b{name}\b", text), f"{name} is used now: take it off AWAITING_A_LESSON"
            continue
        assert re.search(rf"\b{name}\b", text), f"{name} is public but no lesson uses it"


# Public names no lesson uses yet (each listed only until a lesson uses it).
AWAITING_A_LESSON: set[str] = set()
