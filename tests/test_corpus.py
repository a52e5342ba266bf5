"""Tests for course_utils.corpus and the default corpus of load_text_corpus: the listed pieces are
all found on this Python, the split is by unit and deterministic, nothing leaks into the held-out
text, a missing piece is named in a warning, and the topics-only corpus of version 0.2 is
unchanged."""

from __future__ import annotations

import hashlib
import json
import sys
import warnings

import pytest
import torch

from course_utils import corpus, load_text_corpus, text
from course_utils.corpus import clean_docstring, digest, docstrings, module_name, unit_of

# sha256 of train ids, "|", held-out ids, "|", vocabulary of load_text_corpus(docstrings=False)
# on CPython 3.11.7, computed with version 0.2's code (commit c2d3f3d) before docstrings came.
TOPICS_ONLY_3_11_7 = "2bc29e82304201d838ac682b457945f30066cddd2cf3199145a25f673d15319d"


@pytest.fixture(scope="module")
def full():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # on a reference Python nothing is missing
        return load_text_corpus()


def _ids_hash(c) -> str:
    return hashlib.sha256(c.train.numpy().tobytes() + b"|" + c.held_out.numpy().tobytes() + b"|"
                          + c.vocabulary.encode()).hexdigest()


def test_every_listed_piece_is_found_on_this_python():
    listing = corpus.read_listing()
    kept, missing = corpus.find_pieces(listing)
    assert missing == []
    assert len(kept) == len({p.name for p in kept}) > 3000
    assert all(digest(p.text) in json.dumps(listing) for p in kept[:50])
    assert corpus.PIECES_FILE.stat().st_size < 300_000


def test_the_topics_only_corpus_is_the_one_of_version_0_2():
    c = load_text_corpus(docstrings=False)
    if sys.version_info[:3] == (3, 11, 7):
        assert _ids_hash(c) == TOPICS_ONLY_3_11_7
    assert not any(name.startswith(("topic:", "doc:")) for name in c.train_topics)


def test_the_default_corpus_is_deterministic_and_split_by_unit(full):
    again = load_text_corpus()
    assert torch.equal(again.train, full.train) and torch.equal(again.held_out, full.held_out)
    assert again.vocabulary == full.vocabulary and again.sha256 == full.sha256 and len(full.sha256) == 64
    train, held, dropped = map(set, (full.train_topics, full.held_out_topics, full.dropped_topics))
    assert not train & held and not train & dropped and not held & dropped
    for side in (train, held):  # both kinds on both sides
        assert any(u.startswith("topic:") for u in side) and any(u.startswith("doc:") for u in side)
    assert "doc:email" in train | held | dropped and not any("." in u for u in train if u.startswith("doc:"))
    assert len(full.train) + len(full.held_out) > 1_000_000
    assert load_text_corpus(held_out_every=5).sha256 != full.sha256


def test_the_held_out_units_do_not_repeat_the_training_text(full):
    train_text = full.decode(full.train)
    held_text = full.decode(full.held_out)
    probes = [held_text[i:i + 256] for i in range(0, len(held_text) - 256, 997)]
    assert sum(p in train_text for p in probes) <= 0.02 * len(probes)
    pieces, _ = corpus.load_pieces()
    by_unit = {}
    for piece in pieces:
        by_unit.setdefault(piece.unit, []).append(piece.text)
    seen = {train_text[i:i + text.SHINGLE] for i in range(len(train_text) - text.SHINGLE + 1)}
    for unit in full.held_out_topics[::5]:
        body = full.decode(full.encode("\n\n".join(by_unit[unit])))
        passages = [body[i:i + text.SHINGLE] for i in range(len(body) - text.SHINGLE + 1)]
        assert sum(p in seen for p in passages) <= text.MAX_SHARED * len(passages)


def test_a_missing_or_changed_piece_is_named_in_a_warning(monkeypatch, full):
    pieces, missing = corpus.load_pieces()
    gone = (pieces[-1].name, pieces[0].name)
    monkeypatch.setattr(corpus, "load_pieces", lambda: (pieces[1:-1], gone))
    with pytest.warns(UserWarning, match=r"2 of the .* pieces .* missing or changed .*"
                                         + gone[0].replace(".", r"\.")):
        c = load_text_corpus()
    assert c.sha256 != full.sha256 and len(c.train) + len(c.held_out) > 1_000_000


def test_a_changed_source_file_loses_only_its_changed_docstring(tmp_path):
    listing = corpus.read_listing()
    relative, listed = next((r, p) for r, p in listing["files"] if r == "textwrap.py")
    source = (corpus.stdlib_root() / relative).read_text(encoding="utf-8")
    tree = tmp_path / "lib"
    (tree / relative).parent.mkdir(parents=True)
    doc = docstrings(source.encode(), "textwrap")
    first = next(t for n, t in doc.items() if n == f"doc:textwrap.{listed[0][0]}".rstrip("."))
    (tree / relative).write_text(source.replace(first.splitlines()[0], first.splitlines()[0] + " (changed)", 1))
    small = {"topics": listing["topics"][:1], "files": [[relative, listed]]}
    kept, missing = corpus.find_pieces(small, root=tree)
    assert missing == [f"doc:textwrap.{listed[0][0]}".rstrip(".")]
    assert len(kept) == len(listed) - 1 + len(listing["topics"][0][1])
    kept, missing = corpus.find_pieces(small, root=tmp_path / "nowhere", topics={})
    assert kept == [] and len(missing) == len(listed) + len(listing["topics"][0][1])


def test_the_on_disk_cache_is_used_and_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    corpus._load.cache_clear()
    try:
        first = corpus.load_pieces()
        files = list((tmp_path / corpus.CACHE_DIRECTORY).glob("corpus-*.json"))
        assert len(files) == 1
        corpus._load.cache_clear()
        assert corpus.load_pieces() == first
        files[0].write_text("not json")  # a damaged cache is recomputed, never trusted
        corpus._load.cache_clear()
        assert corpus.load_pieces() == first
    finally:
        corpus._load.cache_clear()


def test_names_units_and_the_cleaning_rule():
    assert module_name("email/mime/text.py") == "email.mime.text"
    assert module_name("json/__init__.py") == "json"
    for skipped in ("test/test_os.py", "idlelib/idle_test/htest.py", "json/__main__.py",
                    "site-packages/foo.py", "lib2to3/tests/data/bom.py", "README.txt"):
        assert module_name(skipped) is None
    assert unit_of("doc:email.message.Message.get") == "doc:email" and unit_of("topic:assert#3") == "topic:assert"
    assert clean_docstring("First.\n\n\tIndented\n      more\n    back\n  \n") == "First.\n\n    Indented\n  more\nback"
    source = b'"""Module doc."""\nclass A:\n    """A doc."""\n    def f(self):\n        """f doc."""\n' \
             b'        def g():\n            """g doc."""\nif x:\n    def h():\n        """one"""\nelse:\n' \
             b'    def h():\n        """two"""\n'
    assert docstrings(source, "m") == {"doc:m": "Module doc.", "doc:m.A": "A doc.", "doc:m.A.f": "f doc.",
                                       "doc:m.A.f.<locals>.g": "g doc.", "doc:m.h": "one", "doc:m.h#2": "two"}


def test_the_fixed_topics_corpus_is_the_same_paragraphs_on_every_python(full):
    """docstrings=False, fixed=True: the topics' paragraphs of the listing only (the zoo's language
    models learn it), split every 4th topic; the same text wherever the listing is found whole."""
    c = load_text_corpus(docstrings=False, fixed=True)
    units = c.train_topics + c.held_out_topics + c.dropped_topics
    assert all(u.startswith("topic:") for u in units) and len(units) == len(set(units)) > 70
    topics = sorted(u for u in {p.unit for p in corpus.load_pieces()[0]} if u.startswith("topic:"))
    assert sorted(units) == topics
    assert set(c.held_out_topics) | set(c.dropped_topics) == set(topics[::4])
    assert 150_000 < c.train.shape[0] < 300_000 and c.held_out.shape[0] > 40_000
    again = load_text_corpus(docstrings=False, fixed=True)
    assert again.sha256 == c.sha256 and torch.equal(again.train, c.train)
    assert c.sha256 not in (full.sha256, load_text_corpus(docstrings=False).sha256)


def test_fixed_is_checked():
    with pytest.raises(ValueError, match="fixed"):
        load_text_corpus(fixed=False)
    with pytest.raises(TypeError, match="fixed"):
        load_text_corpus(docstrings=False, fixed="yes")
    with pytest.raises(ValueError, match="held_out_every"):
        load_text_corpus(docstrings=False, fixed=True, held_out_every=500)
