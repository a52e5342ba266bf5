"""tools/fingerprint.py: the numerics fingerprint the test suite prints in its header."""

import pytest

from tools import fingerprint


@pytest.fixture(scope="module")
def hashes():
    return fingerprint.fingerprint()


def test_every_operation_is_hashed_and_repeats_exactly(hashes):
    assert list(hashes) == list(fingerprint.REFERENCE)
    assert all(len(value) == 12 for value in hashes.values())
    assert fingerprint.fingerprint() == hashes


def test_the_report_names_the_cpu_the_kernels_and_a_verdict(hashes, monkeypatch):
    monkeypatch.setattr(fingerprint, "fingerprint", lambda: hashes)
    lines = fingerprint.report()
    assert lines[0].startswith("CPU: ") and "AVX2" in lines[0]
    assert "MKL_CBWR=" in lines[1] and "OpenBLAS" in lines[1]
    assert lines[-1].startswith("verdict: ")


def test_a_hash_that_moved_is_named_in_the_verdict(hashes, monkeypatch):
    monkeypatch.setattr(fingerprint, "fingerprint", lambda: hashes)
    monkeypatch.setitem(fingerprint.REFERENCE, "attention", "000000000000")
    import course_utils.session as session

    monkeypatch.setattr(session, "reproduces_stored_outputs", lambda: True)
    lines = fingerprint.report()
    assert "attention" in lines[-1] and "DIFFERS" in lines[-1]
    assert "attention" in lines[2] and "(≠)" in lines[2]


def test_on_a_cpu_without_avx2_the_verdict_says_outputs_are_not_promised(hashes, monkeypatch):
    import course_utils.session as session

    monkeypatch.setattr(fingerprint, "fingerprint", lambda: hashes)
    monkeypatch.setattr(session, "reproduces_stored_outputs", lambda: False)
    assert "lax mode" in fingerprint.report()[-1]


def _lesson(tmp_path, name, record=None):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    if record is not None:
        nb.metadata["numerics"] = {"cpu": "some CPU", "fingerprint": record}
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def test_a_lesson_without_a_record_was_made_with_the_reference(tmp_path):
    assert fingerprint.made_with(_lesson(tmp_path, "a.ipynb")) == fingerprint.REFERENCE
    other = dict(fingerprint.REFERENCE, attention="000000000000")
    assert fingerprint.made_with(_lesson(tmp_path, "b.ipynb", other)) == other


def test_make_test_checks_strictly_only_lessons_made_with_this_cpus_fingerprint(tmp_path, monkeypatch):
    import course_utils.session as session

    monkeypatch.setattr(session, "reproduces_stored_outputs", lambda: True)
    old = _lesson(tmp_path, "00_old.ipynb")  # no record: made on the reference CPUs
    moved = dict(fingerprint.REFERENCE, **{fingerprint.FLOAT64_LINE: "000000000000"})
    new = _lesson(tmp_path, "01_new.ipynb", moved)
    strict, lax, note = fingerprint.split_lessons([old, new], dict(fingerprint.REFERENCE))
    assert strict == [str(old)] and lax == [str(new)]
    assert len(note.splitlines()) == 1 and fingerprint.FLOAT64_LINE in note
    assert "1 of the 2 lessons" in note
    assert "lax mode" in note and "the other 1 strictly" in note
    strict, lax, note = fingerprint.split_lessons([old, new], moved)
    assert strict == [str(new)] and lax == [str(old)]
    assert fingerprint.split_lessons([old], dict(fingerprint.REFERENCE)) == ([str(old)], [], None)
    strict, lax, note = fingerprint.split_lessons([old], moved)
    assert strict == [] and "every lesson" in note
    monkeypatch.setattr(session, "reproduces_stored_outputs", lambda: False)
    strict, lax, note = fingerprint.split_lessons([old, new], dict(fingerprint.REFERENCE))
    assert strict == [] and lax == [str(old), str(new)]
    assert len(note.splitlines()) == 1 and "lax mode" in note and "claims tests" in note


def test_the_strict_list_is_printed_for_make(tmp_path):
    import subprocess
    import sys

    from conftest import ROOT

    lesson = _lesson(tmp_path, "00_x.ipynb", fingerprint.fingerprint())
    done = subprocess.run([sys.executable, "-m", "tools.fingerprint", "--strict", str(lesson)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0
    import course_utils.session as session

    assert done.stdout.split() == ([str(lesson)] if session.reproduces_stored_outputs() else [])


def test_executing_a_lesson_records_the_cpu_and_its_fingerprint(tmp_path):
    import nbformat

    from tools import execute

    path = _lesson(tmp_path, "00_x.ipynb")
    record = {"cpu": "a CPU", "fingerprint": dict(fingerprint.REFERENCE)}
    execute.execute_lesson(path, record=record)
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata["numerics"] == record  # every line, the float64 one included
    assert len(nb.cells) == 1 and nb.cells[0].outputs[0]["data"]["text/plain"] == "2"
    assert execute.numerics()["fingerprint"] == fingerprint.fingerprint()


def test_a_lesson_recorded_without_the_float64_line_is_checked_on_the_others(tmp_path, monkeypatch):
    """Before 0.11.0 a lesson that fitted no probe recorded only the float32 lines (the probes'
    float64 products were MKL's, which differ by vendor): it stays strict where only the float64
    line differs; a lesson that recorded the line is checked on it too."""
    import course_utils.session as session

    monkeypatch.setattr(session, "reproduces_stored_outputs", lambda: True)
    float32_only = {name: value for name, value in fingerprint.REFERENCE.items()
                    if name != fingerprint.FLOAT64_LINE}
    plain, probed = _lesson(tmp_path, "00_plain.ipynb", float32_only), _lesson(
        tmp_path, "01_probe.ipynb", dict(fingerprint.REFERENCE))
    other_vendor = dict(fingerprint.REFERENCE, **{fingerprint.FLOAT64_LINE: "000000000000"})
    strict, lax, note = fingerprint.split_lessons([plain, probed], other_vendor)
    assert strict == [str(plain)] and lax == [str(probed)] and fingerprint.FLOAT64_LINE in note
    older = _lesson(tmp_path, "02_older.ipynb", {"attention": fingerprint.REFERENCE["attention"]})
    assert fingerprint.split_lessons([older], dict(fingerprint.REFERENCE))[0] == []


def test_every_lesson_was_executed_with_the_reference_arithmetic():
    """Each lesson's recorded lines are REFERENCE's, so on a CPU that matches REFERENCE (an
    Intel Xeon, an AMD EPYC) make test checks every lesson strictly; a change to the course's
    arithmetic that moves a line must re-execute the lessons (make execute)."""
    from conftest import LESSONS

    stale = [path.name for path in LESSONS
             if not fingerprint.reproduces(fingerprint.made_with(path), fingerprint.REFERENCE)]
    assert not stale, f"executed with another fingerprint: {stale}"
