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


def test_make_test_is_told_in_one_line_where_outputs_cannot_reproduce(monkeypatch):
    import course_utils.session as session

    monkeypatch.setattr(session, "reproduces_stored_outputs", lambda: True)
    monkeypatch.setattr(fingerprint, "fingerprint", lambda: dict(fingerprint.REFERENCE))
    assert fingerprint.inexact_note() is None
    moved = dict(fingerprint.REFERENCE, **{"float64 L-BFGS": "000000000000"})
    monkeypatch.setattr(fingerprint, "fingerprint", lambda: moved)
    note = fingerprint.inexact_note()
    assert len(note.splitlines()) == 1 and "float64 L-BFGS" in note and "lax mode" in note
    monkeypatch.setattr(session, "reproduces_stored_outputs", lambda: False)
    note = fingerprint.inexact_note()
    assert len(note.splitlines()) == 1 and "lax mode" in note and "claims tests" in note
