"""Re-execute lessons top to bottom in the current environment and store their outputs.

    python -m tools.execute                       # every notebooks/NN_*.ipynb
    python -m tools.execute notebooks/01_*.ipynb  # just these

This (through `make execute`) is the only way lesson outputs are produced: nbval then
proves that re-running the code gives exactly the stored outputs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from . import fingerprint
from .student import lesson_paths


def coalesce_streams(nb) -> None:
    """Join neighbouring stdout (or stderr) outputs of each cell into one, so how the kernel
    happened to chunk a cell's printing never shows up as a change in the stored notebook."""
    for cell in nb.cells:
        merged = []
        for out in cell.get("outputs", []):
            if merged and out.output_type == "stream" and merged[-1].output_type == "stream" \
                    and merged[-1].name == out.name:
                merged[-1].text += out.text
            else:
                merged.append(out)
        if "outputs" in cell:
            cell.outputs = merged


def numerics() -> dict:
    """The record of the CPU that executes the lessons, stored in each notebook's metadata: its name
    and numerics fingerprint (tools/fingerprint.py). `make test` checks a lesson under strict nbval
    only on a CPU whose fingerprint equals it."""
    return {"cpu": fingerprint.cpu(), "fingerprint": fingerprint.fingerprint()}


def execute_lesson(path: Path, *, timeout: int = 300, record: dict | None = None) -> float:
    """Run one notebook in a fresh python3 kernel, write it back in place with ``record`` (default:
    this CPU's ``numerics()``) as its ``numerics`` metadata; return seconds taken."""
    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"path must be an existing .ipynb file, got {path}")
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    client.execute()
    coalesce_streams(nb)
    elapsed = time.perf_counter() - start
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["numerics"] = numerics() if record is None else record
    text = nbformat.writes(nb)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.execute", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks to run (default: every lesson)")
    args = parser.parse_args(argv)
    paths = args.paths or lesson_paths(Path("notebooks"))
    total = 0.0
    record = numerics()
    for path in paths:
        seconds = execute_lesson(path, record=record)
        total += seconds
        print(f"{path}: {seconds:.1f} s")
    print(f"executed {len(paths)} notebook(s) in {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
