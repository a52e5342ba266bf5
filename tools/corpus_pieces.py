"""Choose the pieces of lesson 14's corpus: write course_utils/data/corpus_pieces.json.

For authors, not learners (it downloads). A piece (a pydoc topic or a standard-library docstring,
see course_utils/corpus.py) is listed only if its text is the same in every reference standard
library below, each read by a Python of its own minor version (its ast, its grammar):

    python tools/corpus_pieces.py            # writes course_utils/data/corpus_pieces.json
    python tools/corpus_pieces.py --check    # exits 1 if the committed file differs

Reference trees: the pyenv Pythons 3.11.7, 3.12.1 and 3.13.0 of the authoring machine; Debian
12's 3.11.2 (the .deb files of libpython3.11-minimal and libpython3.11-stdlib, from
`apt-get download`); and the standard libraries that pyodide ships on npm (python_stdlib.zip of
pyodide 0.23.4 = CPython 3.11.2, 0.26.4 = 3.12.1, 0.27.7 = 3.12.7, 0.28.3 = 3.13.2), from
`npm pack`. pyodide's zip holds no pydoc_data and leaves out some packages (tkinter, idlelib,
curses, ...): their docstrings drop out. Downloads are kept under
~/.cache/positional-encodings-course-authoring/ (never in the repository).

After the intersection, in order: docstrings shorter than MIN_DOCSTRING go; a docstring whose
text an earlier piece already has goes (exact duplicates); a docstring sharing more than
MAX_SHARED of its SHINGLE-character passages with the listed topics goes (it repeats them).
Topics are compared paragraph by paragraph: a paragraph is listed if every reference Python with
pydoc_data has it in that topic, word for word.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import runpy
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "course_utils" / "corpus.py"
OUTPUT = ROOT / "course_utils" / "data" / "corpus_pieces.json"
CACHE = Path.home() / ".cache" / "positional-encodings-course-authoring"
PYENV = Path("/root/.pyenv/versions")
SHINGLE, MAX_SHARED = 64, 0.05  # as course_utils.text's leakage rule
PYODIDE = {"0.23.4": "3.11.2", "0.26.4": "3.12.1", "0.27.7": "3.12.7", "0.28.3": "3.13.2"}
DEBIAN = ("libpython3.11-minimal", "libpython3.11-stdlib")


def _corpus_module():
    """course_utils/corpus.py on its own (it imports only the standard library), so a Python
    without torch can run it."""
    spec = importlib.util.spec_from_file_location("corpus_standalone", CORPUS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def dump(root: Path, out: Path) -> None:
    """Every docstring and topic of the standard library at ``root``, as this Python reads them."""
    corpus = _corpus_module()
    files, failed = {}, []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        module = corpus.module_name(relative)
        if module is None:
            continue
        try:
            files[relative] = corpus.docstrings(path.read_bytes(), module)
        except (SyntaxError, ValueError):
            failed.append(relative)
    topics_file = root / "pydoc_data" / "topics.py"
    topics = corpus.topic_pieces(runpy.run_path(str(topics_file))["topics"]) if topics_file.exists() else None
    version = ".".join(map(str, sys.version_info[:3]))
    out.write_text(json.dumps({"reader": version, "files": files, "topics": topics, "failed": failed}))


def _run(command: list[str], **kwargs) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs).stdout


def _pyodide_tree(version: str) -> Path:
    folder = CACHE / "pyodide-npm"
    folder.mkdir(parents=True, exist_ok=True)
    tarball = folder / f"pyodide-{version}.tgz"
    if not tarball.exists():
        _run(["npm", "pack", f"pyodide@{version}"], cwd=folder)
    tree = folder / f"{version}-stdlib"
    if not tree.exists():
        unpacked = folder / version
        unpacked.mkdir(exist_ok=True)
        _run(["tar", "-xzf", str(tarball), "-C", str(unpacked)])
        with zipfile.ZipFile(unpacked / "package" / "python_stdlib.zip") as archive:
            archive.extractall(tree)
    return tree


def _debian_tree() -> Path:
    folder = CACHE / "debian"
    folder.mkdir(parents=True, exist_ok=True)
    for package in DEBIAN:
        if not list(folder.glob(f"{package}_*.deb")):
            _run(["apt-get", "download", package], cwd=folder)
    tree = folder / "root"
    if not (tree / "usr/lib/python3.11/os.py").exists():
        for deb in sorted(folder.glob("*.deb")):
            _run(["dpkg-deb", "-x", str(deb), str(tree)])
    return tree / "usr" / "lib" / "python3.11"


def references() -> list[tuple[str, Path, Path]]:
    """(label, standard-library root, the Python that reads it) for every reference tree."""
    trees = []
    for version in ("3.11.7", "3.12.1", "3.13.0"):
        minor = version.rsplit(".", 1)[0]
        trees.append((f"CPython {version} (pyenv)", PYENV / version / "lib" / f"python{minor}",
                      PYENV / version / "bin" / "python"))
    trees.append(("CPython 3.11.2 (Debian 12, " + ", ".join(DEBIAN) + ")", _debian_tree(),
                  PYENV / "3.11.7" / "bin" / "python"))
    for pyodide, version in PYODIDE.items():
        reader = {"3.11": "3.11.7", "3.12": "3.12.1", "3.13": "3.13.0"}[version.rsplit(".", 1)[0]]
        trees.append((f"CPython {version} (pyodide {pyodide}, npm)", _pyodide_tree(pyodide),
                      PYENV / reader / "bin" / "python"))
    return trees


def _shared(body: str, seen: set[str]) -> float:
    passages = [body[i:i + SHINGLE] for i in range(len(body) - SHINGLE + 1)]
    return sum(p in seen for p in passages) / len(passages) if passages else 0.0


def choose(dumps: list[dict], corpus) -> tuple[dict, dict]:
    """The listing (topics and files) and a count of what was dropped and why."""
    why = {"topic paragraph differs": 0, "docstring differs or missing": 0, "short": 0, "duplicate": 0,
           "repeats topics": 0}
    with_topics = [d for d in dumps if d["topics"] is not None]
    first = with_topics[0]["topics"]
    topics, seen_text = [], set()
    for name, text in first.items():
        listed = []
        for paragraph in corpus.paragraphs(text):
            if not all(paragraph in corpus.paragraphs(d["topics"].get(name, "")) for d in with_topics):
                why["topic paragraph differs"] += 1
            elif paragraph in seen_text:
                why["duplicate"] += 1  # the topic "if" is "else" word for word; "See also:" recurs
            else:
                listed.append(paragraph)
                seen_text.add(paragraph)
        if listed:
            topics.append((name, listed))
    joined = "".join(p + "\n\n" for _, listed in topics for p in listed)
    shingles = {joined[i:i + SHINGLE] for i in range(len(joined) - SHINGLE + 1)}
    files = []
    for relative in sorted(dumps[0]["files"], key=lambda r: (corpus.module_name(r), r)):
        module = corpus.module_name(relative)
        pieces = []
        for name, text in dumps[0]["files"][relative].items():
            if not all(d["files"].get(relative, {}).get(name) == text for d in dumps[1:]):
                why["docstring differs or missing"] += 1
            elif len(text) < corpus.MIN_DOCSTRING:
                why["short"] += 1
            elif text in seen_text:
                why["duplicate"] += 1
            elif _shared(text, shingles) > MAX_SHARED:
                why["repeats topics"] += 1
            else:
                seen_text.add(text)
                qualname = name[len(f"doc:{module}"):].lstrip(".")
                pieces.append([qualname, corpus.digest(text)])
        if pieces:
            files.append([relative, pieces])
    listing = {"topics": [[n[len("topic:"):], [corpus.digest(p) for p in listed]] for n, listed in topics],
               "files": files}
    return listing, why


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file")
    parser.add_argument("--dump", nargs=2, metavar=("ROOT", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dump:
        dump(Path(args.dump[0]), Path(args.dump[1]))
        return 0
    corpus = _corpus_module()
    dumps = []
    with tempfile.TemporaryDirectory() as scratch:
        for i, (label, root, reader) in enumerate(references()):
            out = Path(scratch) / f"{i}.json"
            _run([str(reader), str(Path(__file__).resolve()), "--dump", str(root), str(out)])
            dumps.append(json.loads(out.read_text()) | {"label": label})
            print(f"{label}: {len(dumps[-1]['files'])} files, {sum(map(len, dumps[-1]['files'].values()))} "
                  f"docstrings, unparsable {dumps[-1]['failed']}", file=sys.stderr)
    listing, why = choose(dumps, corpus)
    topic_hashes = [h for _, listed in listing["topics"] for h in listed]
    hashes = topic_hashes + [h for _, p in listing["files"] for _, h in p]
    if len(set(hashes)) != len(hashes):
        raise SystemExit(f"two pieces share a {corpus.HASH_CHARS}-character hash: keep more characters")
    body = {"about": "the pieces of course_utils.load_text_corpus: written by tools/corpus_pieces.py",
            "references": [f"{d['label']}, read by CPython {d['reader']}" for d in dumps],
            "min_docstring": corpus.MIN_DOCSTRING, "hash": f"sha256, first {corpus.HASH_CHARS} hex characters",
            **listing}
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":")).replace('],["', '],\n["') + "\n"
    print(f"listed {len(topic_hashes)} paragraphs of {len(listing['topics'])} topics, "
          f"{len(hashes) - len(topic_hashes)} docstrings "
          f"from {len(listing['files'])} files; dropped {why}; {len(text.encode()):,} bytes", file=sys.stderr)
    if args.check:
        same = OUTPUT.exists() and OUTPUT.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{OUTPUT} differs: run tools/corpus_pieces.py", file=sys.stderr)
        return 0 if same else 1
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)} (sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]})",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
