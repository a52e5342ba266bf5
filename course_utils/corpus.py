"""The pieces of lesson 14's text corpus: English prose that ships with Python, the same on every
supported Python.

Two kinds of piece, both read from the running Python's standard library (nothing is
downloaded, no standard-library module is imported: reading a module's source with ``ast`` runs
none of its code):

* a paragraph of a documentation topic of ``pydoc_data.topics`` (the text behind
  ``help("assert")``): ``topics[name].strip()`` split at blank lines, named ``topic:<name>#<i>``,
  the i-th listed paragraph of the topic (whole topics would not do: 44 of the 79 topics change
  somewhere between 3.11.2 and 3.13.2, most of them in a paragraph or two);
* a docstring of a standard-library module, class, function or method, named
  ``doc:<module>`` or ``doc:<module>.<qualname>`` (``doc:email.message.Message.get_payload``),
  its text the docstring with its indentation removed by ``clean_docstring``.

Both kinds change between Python releases, patch releases included, so the pieces are chosen
once, by ``tools/corpus_pieces.py``, from several Pythons' standard libraries: only the pieces
whose text is the same on all of them are listed, with a hash of the text, in
``data/corpus_pieces.json``. At run time ``load_pieces`` finds the listed pieces in the running
Python, keeps those whose hash matches, in the listed order, and names the ones it could not find
(a Python newer than the reference ones may have changed a few).

A piece's unit is what the corpus splits by: a topic (all its paragraphs) is a unit; every docstring of a
top-level module or package is one unit (``doc:email`` holds all of ``email.*``).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pydoc_data.topics

PIECES_FILE = Path(__file__).with_name("data") / "corpus_pieces.json"
HASH_CHARS = 16  # the hex characters of sha256 kept per piece (tools/corpus_pieces.py checks no collision)
# A docstring shorter than this is a one-line label ("Return self+value."), not prose: the 80
# characters of one full line. tools/corpus_pieces.py skips them; so does nothing at run time.
MIN_DOCSTRING = 80
# Packages whose docstrings are not read: the test suites (test code, not documentation).
SKIPPED_PACKAGES = ("test", "idlelib.idle_test", "lib2to3.tests", "tkinter.test", "unittest.test",
                    "ctypes.test", "sqlite3.test", "distutils.tests", "__phello__")
SKIPPED_DIRECTORIES = ("site-packages", "dist-packages", "__pycache__")
CACHE_ENV = "XDG_CACHE_HOME"  # the on-disk cache lives in $XDG_CACHE_HOME or ~/.cache
CACHE_DIRECTORY = "positional-encodings-course"


@dataclass(frozen=True)
class Piece:
    """One piece of the corpus: ``name`` (``topic:assert``, ``doc:email.message``), ``unit`` (the
    split's unit: ``topic:assert``, ``doc:email``) and ``text``."""

    name: str
    unit: str
    text: str


def digest(text: str) -> str:
    """The identity of a piece's text: the first HASH_CHARS hex characters of sha256(UTF-8 text)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def clean_docstring(raw: str) -> str:
    """A docstring without its source indentation, the same on every Python.

    ``ast.get_docstring(clean=True)`` calls ``inspect.cleandoc``, whose rule changed in Python 3.13
    (it strips spaces only, where 3.11 stripped all whitespace), so the rule is fixed here: tabs
    become spaces (tab stops of 8), trailing whitespace of every line goes, the first line loses
    its leading spaces, the others the indentation they all share, and blank lines at either
    end go.
    """
    lines = [line.rstrip() for line in raw.expandtabs(8).split("\n")]
    indents = [len(line) - len(line.lstrip(" ")) for line in lines[1:] if line]
    shared = min(indents, default=0)
    lines = [lines[0].lstrip(" "), *(line[shared:] for line in lines[1:])]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


def module_name(relative: str) -> str | None:
    """The module a source file of the standard library holds, from its path below the library's
    root (``email/mime/text.py`` → ``email.mime.text``, ``json/__init__.py`` → ``json``), or None
    for a file whose docstrings are not read: tests, ``__main__``, installed packages, files that
    are not importable modules."""
    parts = relative.replace("\\", "/").split("/")
    if not parts[-1].endswith(".py") or any(p in SKIPPED_DIRECTORIES for p in parts[:-1]):
        return None
    parts[-1] = parts[-1][:-3]
    if parts[-1] == "__init__":
        parts.pop()
    if not parts or parts[-1] == "__main__" or not all(p.isidentifier() for p in parts):
        return None
    name = ".".join(parts)
    if any(name == s or name.startswith(s + ".") for s in SKIPPED_PACKAGES):
        return None
    return name


def docstrings(source: bytes, module: str) -> dict[str, str]:
    """{piece name: cleaned text} for every docstring in a module's source: the module's own
    (``doc:<module>``), then each class's, function's and method's in source order, named by
    qualified name (``doc:<module>.<Class>.<method>``; a function inside a function is
    ``<outer>.<locals>.<inner>`` as in ``__qualname__``). A name defined twice (a function in
    both arms of an ``if``) gets ``#2``, ``#3`` after the first. Raises SyntaxError for a source
    this Python cannot parse."""
    tree = ast.parse(source)
    found: dict[str, str] = {}

    def add(name: str, node) -> None:
        raw = ast.get_docstring(node, clean=False)
        if raw is None:
            return
        unique, n = name, 1
        while unique in found:
            n += 1
            unique = f"{name}#{n}"
        found[unique] = clean_docstring(raw)

    def visit(node, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qualname = f"{prefix}.{child.name}"
                add(qualname, child)
                inner = f"{qualname}.<locals>" if not isinstance(child, ast.ClassDef) else qualname
                visit(child, inner)
            elif not isinstance(child, (ast.Lambda, ast.expr)):
                visit(child, prefix)  # defs inside if/try/with blocks keep their scope's prefix

    add(f"doc:{module}", tree)
    visit(tree, f"doc:{module}")
    return found


def topic_pieces(topics: dict[str, str] | None = None) -> dict[str, str]:
    """{``topic:<name>``: ``topics[name].strip()``} for the running Python's pydoc topics (or
    ``topics``), sorted by name."""
    topics = pydoc_data.topics.topics if topics is None else topics
    return {f"topic:{name}": topics[name].strip() for name in sorted(topics)}


def paragraphs(text: str) -> list[str]:
    """A topic's paragraphs: its text split at blank lines, empty ones left out."""
    return [p for p in text.split("\n\n") if p.strip()]


def unit_of(name: str) -> str:
    """A piece's unit: a topic paragraph its topic (``topic:assert#2`` → ``topic:assert``); a
    docstring its top-level module (``doc:email.message.Message`` → ``doc:email``)."""
    if name.startswith("topic:"):
        return name.split("#", 1)[0]
    return "doc:" + name[len("doc:"):].split(".", 1)[0].split("#", 1)[0]


def stdlib_root() -> Path:
    """The running Python's standard library: the directory of ``ast.py``."""
    return Path(ast.__file__).resolve().parent


def read_listing(path: Path = PIECES_FILE) -> dict:
    """The listing written by tools/corpus_pieces.py: {"references": [...], "topics": [[name,
    [paragraph hash, ...]], ...], "files": [[relative path, [[qualname, hash], ...]], ...]},
    qualnames relative to the file's module ("" for the module's own docstring)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _listed(listing: dict) -> list[tuple[str, str | None, str]]:
    """(piece name, source file or None for a topic, hash) in the listing's order."""
    rows: list[tuple[str, str | None, str]] = [(f"topic:{n}#{i}", None, h) for n, hashes in listing["topics"]
                                               for i, h in enumerate(hashes, start=1)]
    for relative, pieces in listing["files"]:
        module = module_name(relative)
        rows.extend((f"doc:{module}{'.' + q if q else ''}", relative, h) for q, h in pieces)
    return rows


def find_pieces(listing: dict, root: Path | None = None,
                topics: dict[str, str] | None = None) -> tuple[list[Piece], list[str]]:
    """The listed pieces found in a standard library (the running one by default), in the listing's
    order, and the names of the listed pieces that are missing there or whose text differs."""
    root = stdlib_root() if root is None else Path(root)
    by_topic = {name: {digest(p): p for p in paragraphs(text)} for name, text in topic_pieces(topics).items()}
    texts: dict[str, dict[str, str]] = {}
    kept, missing = [], []
    for name, relative, expected in _listed(listing):
        if relative is None:
            text = by_topic.get(unit_of(name), {}).get(expected)
        else:
            if relative not in texts:
                try:
                    texts[relative] = docstrings((root / relative).read_bytes(), module_name(relative))
                except (OSError, SyntaxError, ValueError):
                    texts[relative] = {}
            text = texts[relative].get(name)
        if text is not None and digest(text) == expected:
            kept.append(Piece(name=name, unit=unit_of(name), text=text))
        else:
            missing.append(name)
    return kept, missing


def _cache_file(key: str) -> Path:
    base = os.environ.get(CACHE_ENV) or str(Path.home() / ".cache")
    version = ".".join(map(str, sys.version_info[:3])) + f"-{sys.implementation.name}"
    return Path(base) / CACHE_DIRECTORY / f"corpus-{version}-{key[:16]}.json"


def _read_cache(path: Path, listing_hash: str) -> tuple[list[Piece], list[str]] | None:
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored.get("listing") != listing_hash:
            return None
        kept = [Piece(name=n, unit=unit_of(n), text=t) for n, t in stored["pieces"]]
        if any(digest(p.text) != h for p, (_, h) in zip(kept, stored["hashes"])):
            return None  # a cache edited or damaged on disk is not trusted
        return kept, list(stored["missing"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(path: Path, listing_hash: str, kept: list[Piece], missing: list[str]) -> None:
    """Write atomically (a temporary file renamed into place); an unwritable place is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"listing": listing_hash, "pieces": [[p.name, p.text] for p in kept],
                           "hashes": [[p.name, digest(p.text)] for p in kept], "missing": missing})
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".corpus-", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(body)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        pass


@functools.lru_cache(maxsize=4)
def _load(path: str, listing_hash: str, topics_hash: str) -> tuple[tuple[Piece, ...], tuple[str, ...]]:
    listing = read_listing(Path(path))
    cache = _cache_file(hashlib.sha256((listing_hash + topics_hash).encode()).hexdigest())
    stored = _read_cache(cache, listing_hash)
    if stored is None:
        stored = find_pieces(listing)
        _write_cache(cache, listing_hash, *stored)
    return tuple(stored[0]), tuple(stored[1])


def load_pieces(path: Path = PIECES_FILE) -> tuple[tuple[Piece, ...], tuple[str, ...]]:
    """The corpus pieces of the listing at ``path`` found in the running Python, in the listing's
    order, and the names of those missing or changed here (empty on a reference Python).

    The first call reads 352 source files (2.0 s on the authoring machine); the result is kept in
    memory and on disk under $XDG_CACHE_HOME (or ~/.cache)/positional-encodings-course/, keyed by
    the Python version and the listing's hash, so later processes read one file."""
    listing_hash = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    topics_hash = digest(json.dumps(pydoc_data.topics.topics, sort_keys=True))
    return _load(str(path), listing_hash, topics_hash)
