"""nbval, as `make test` runs it, really compares outputs: a tampered number fails the run."""

import re
import subprocess
import sys

import nbformat

from conftest import LESSONS, ROOT


def test_a_tampered_stored_output_fails_strict_nbval(tmp_path):
    lesson = LESSONS[0]
    nb = nbformat.read(lesson, as_version=4)
    tampered = False
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if not tampered and out.output_type == "stream" and re.search(r"\d", out.text):
                out.text = re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), out.text, count=1)
                tampered = True
    assert tampered, "found no printed number to tamper with"
    copy = tmp_path / lesson.name
    nbformat.write(nb, copy)
    makefile = (ROOT / "Makefile").read_text()
    flags = re.search(r"^NBVAL := (.*)$", makefile, flags=re.M).group(1).split()
    flags = [str(ROOT / f) if f.endswith(".cfg") else f for f in flags]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(copy), *flags],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 1, result.stdout[-2000:]
    assert "1 failed" in result.stdout
