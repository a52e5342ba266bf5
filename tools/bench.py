"""The course benchmark: is every lesson fast and small enough for a laptop or a Binder session?

    python -m tools.bench          # (make bench) every lesson, the floor, every explorer

Runs each lesson top to bottom in a fresh kernel (as "Run All" does; the stored notebooks are
not modified), and measures
- its wall time, from starting the kernel to the last cell, and the kernel's peak memory
  (the high-water mark of its resident set, VmHWM, read from /proc just before shutdown);
- the same for the *kernel floor*: a notebook that only imports the course and calls setup(),
  so each lesson's time can be read as a multiple of what any lesson must pay;
- each explorer's redraw time, median and max over ``REDRAWS`` random slider moves;
- the machine it ran on.
It checks the budgets below, prints a table, and writes bench/results.json and bench/README.md.
Timings are noisy, so they are checked here and not in ``make test``. The exit status is 1 when
a budget is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from .student import lesson_paths
from .throughput import measure as measure_throughput

LESSON_SECONDS = 30.0
CAPSTONE = "14_capstone_real_text"  # the one lesson allowed up to a minute
CAPSTONE_SECONDS = 60.0
LESSON_MB = 1024.0
COURSE_SECONDS = 240.0
REDRAW_MEDIAN_MS = 100.0
BINDER_MB = 2048.0  # mybinder.org gives a session 1-2 GB; the upper end is the hard limit
REDRAWS = 25
ZOO_PERCENT_OF_PEAK = 25.0  # training throughput per process against one core's matmul peak
ZOO_MINUTES = 90.0  # the whole zoo, its convergence runs included, on a 2-core machine
FLOOR_SOURCE = "from course_utils import setup\n\nsetup(0)"


def _peak_rss_mb(pid: int) -> float | None:
    """The peak resident memory of process ``pid`` in MB (Linux /proc), or None elsewhere."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run_notebook(nb, workdir: Path, *, timeout: int = 300) -> dict:
    """Run every cell of ``nb`` in a fresh python3 kernel started in ``workdir``.

    Returns {"seconds": wall time including the kernel start, "peak_mb": the kernel's peak RSS}.
    Raises RuntimeError naming the cell when a cell not tagged raises-exception fails.
    """
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            allow_errors=False, resources={"metadata": {"path": str(workdir)}})
    start = time.perf_counter()
    with client.setup_kernel():
        pid = client.km.provisioner.process.pid
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        peak = _peak_rss_mb(pid)
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_mb": peak}


def floor_notebook():
    """The smallest lesson: import the course, call setup()."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FLOOR_SOURCE)])
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    return nb


def explorer_timings(redraws: int = REDRAWS) -> dict[str, dict]:
    """Median and max redraw time (ms) of every explorer over ``redraws`` random moves."""
    import torch

    from course_utils.widgets import EXPLORERS, random_moves, redraw_times

    torch.set_num_threads(1)  # as in a lesson after setup()
    timings = {}
    for name, make in EXPLORERS.items():
        explorer = make()
        explorer.set(**random_moves(explorer, 1, seed=99)[0])  # warm up caches and fonts
        timings[name] = redraw_times(explorer, random_moves(explorer, redraws, seed=0))
    return timings


def machine() -> dict:
    import torch

    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "cpu": model, "python": platform.python_version(),
            "torch": torch.__version__, "platform": platform.platform(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "(unset)")}


def zoo_minutes(processes: int = 2) -> float | None:
    """How long `make pretrain` takes with ``processes`` processes: the seconds each group of the
    shipped zoo took (the manifest records them, convergence runs included), shared out among the
    processes; None without a manifest."""
    manifest = Path("course_utils/zoo/manifest.json")
    if not manifest.is_file():
        return None
    entries = json.loads(manifest.read_text())["checkpoints"]
    seconds = sum(e["seconds"] for e in entries) + sum(e["convergence"]["seconds"] for e in entries
                                                       if "convergence" in e)
    return seconds / processes / 60


def evaluate_budgets(results: dict) -> list[dict]:
    """Each budget as {"budget", "measured", "limit", "passed"}."""
    checks = []
    for name, lesson in results["lessons"].items():
        limit = CAPSTONE_SECONDS if name.startswith(CAPSTONE) else LESSON_SECONDS
        checks.append({"budget": f"{name}: time", "measured": lesson["seconds"], "limit": limit,
                       "passed": lesson["seconds"] <= limit})
        if lesson["peak_mb"] is not None:
            checks.append({"budget": f"{name}: memory (MB)", "measured": lesson["peak_mb"], "limit": LESSON_MB,
                           "passed": lesson["peak_mb"] <= LESSON_MB})
    total = results["course_seconds"]
    checks.append({"budget": "whole course: time", "measured": total, "limit": COURSE_SECONDS,
                   "passed": total <= COURSE_SECONDS})
    for name, timing in results["explorers"].items():
        checks.append({"budget": f"explorer {name}: median redraw (ms)", "measured": timing["median_ms"],
                       "limit": REDRAW_MEDIAN_MS, "passed": timing["median_ms"] <= REDRAW_MEDIAN_MS})
    for name, run in results.get("throughput", {}).get("training", {}).items():
        checks.append({"budget": f"zoo training {name}: % of the matmul peak (at least)",
                       "measured": run["percent_of_peak"], "limit": ZOO_PERCENT_OF_PEAK,
                       "passed": run["percent_of_peak"] >= ZOO_PERCENT_OF_PEAK})
    if results.get("zoo_minutes") is not None:
        checks.append({"budget": "the zoo, made by make pretrain (minutes)", "measured": results["zoo_minutes"],
                       "limit": ZOO_MINUTES, "passed": results["zoo_minutes"] <= ZOO_MINUTES})
    return checks


def markdown(results: dict) -> str:
    """bench/README.md: the tables of the last run."""
    floor = results["floor"]
    lines = [
        "# Benchmark",
        "",
        "Written by `make bench` (`python -m tools.bench`); do not edit by hand. Each lesson runs",
        "top to bottom in a fresh kernel; *× floor* divides its time by the kernel floor (a notebook that",
        "only imports the course and calls `setup()`), measured in the same run. Memory is the kernel's",
        "peak resident set.",
        "",
        "## Machine",
        "",
        *(f"- {key}: {value}" for key, value in results["machine"].items()),
        f"- run at: {results['when']}",
        "",
        "## Lessons",
        "",
        "| lesson | seconds | × floor | peak MB |",
        "|---|---:|---:|---:|",
        f"| (kernel floor) | {floor['seconds']:.1f} | 1.0 | {_mb(floor['peak_mb'])} |",
    ]
    for name, lesson in results["lessons"].items():
        lines.append(f"| {name} | {lesson['seconds']:.1f} | {lesson['seconds'] / floor['seconds']:.1f} | "
                     f"{_mb(lesson['peak_mb'])} |")
    lines += [f"| **whole course** | **{results['course_seconds']:.1f}** | | |", "",
              f"Closest to Binder's memory limit ({BINDER_MB:.0f} MB): {results['binder']}", "",
              "## Explorers", "", f"Redraw time over {REDRAWS} random slider moves.", "",
              "| explorer | median ms | max ms |", "|---|---:|---:|"]
    for name, timing in results["explorers"].items():
        lines.append(f"| {name} | {timing['median_ms']:.1f} | {timing['max_ms']:.1f} |")
    throughput = results.get("throughput")
    if throughput:
        lines += ["", "## Training throughput (the zoo's recipes)", "",
                  "One process, one thread, the course's pinned kernels, as `make pretrain` trains; counted as",
                  "6 × parameters × tokens. The peak is a 1024² float32 matmul on one thread (tools/throughput.py).",
                  "", *(f"- matmul peak, MKL_CBWR={name}: {value:.1f} GFLOP/s"
                        for name, value in throughput["peaks_gflops"].items()), "",
                  "| recipe | models side by side | parameters | tokens/s | GFLOP/s | % of peak |",
                  "|---|---:|---:|---:|---:|---:|"]
        for name, run in throughput["training"].items():
            lines.append(f"| {name} | {run['models_side_by_side']} | {run['parameters']:,} | "
                         f"{run['tokens_per_second']:,.0f} | {run['gflops']:.1f} | {run['percent_of_peak']:.0f} |")
        lines += ["", f"The zoo (`make pretrain`, 2 processes): {results['zoo_minutes']:.1f} minutes of training "
                  "(the groups' recorded seconds shared between the processes)."
                  if results.get("zoo_minutes") is not None else "The zoo has not been made."]
    lines += ["", "## Budgets", "", "| budget | measured | limit | |", "|---|---:|---:|---|"]
    for check in results["budgets"]:
        lines.append(f"| {check['budget']} | {check['measured']:.1f} | {check['limit']:.0f} | "
                     f"{'pass' if check['passed'] else '**FAIL**'} |")
    return "\n".join(lines) + "\n"


def _mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="lessons to run (default: every lesson)")
    parser.add_argument("--out", type=Path, default=Path("bench"), help="folder for results.json and README.md")
    args = parser.parse_args(argv)
    paths = args.paths or lesson_paths(Path("notebooks"))
    if not paths:
        parser.error("no lessons found: run from the course folder or name the notebooks")

    floor = run_notebook(floor_notebook(), Path("notebooks").resolve())  # the first kernel also warms the disk cache
    lessons = {}
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        lessons[path.stem] = run_notebook(nb, path.parent.resolve())
        print(f"{path.stem}: {lessons[path.stem]['seconds']:.1f} s, {_mb(lessons[path.stem]['peak_mb'])} MB")
    again = run_notebook(floor_notebook(), Path("notebooks").resolve())
    floor = min(floor, again, key=lambda run: run["seconds"])
    print(f"kernel floor (faster of two runs): {floor['seconds']:.1f} s, {_mb(floor['peak_mb'])} MB")
    explorers = explorer_timings()
    for name, timing in explorers.items():
        print(f"explorer {name}: median {timing['median_ms']:.1f} ms, max {timing['max_ms']:.1f} ms")

    throughput = measure_throughput()
    for name, run in throughput["training"].items():
        print(f"zoo training {name}: {run['tokens_per_second']:,.0f} tokens/s, {run['percent_of_peak']:.0f}% of "
              f"the matmul peak ({max(throughput['peaks_gflops'].values()):.1f} GFLOP/s)")
    peaks = {name: lesson["peak_mb"] for name, lesson in lessons.items() if lesson["peak_mb"] is not None}
    heaviest = max(peaks, key=peaks.get) if peaks else None
    binder = (f"{heaviest}, peak {peaks[heaviest]:.0f} MB ({peaks[heaviest] / BINDER_MB:.0%} of it)"
              if heaviest else "not measured (no /proc on this system)")
    results = {"when": time.strftime("%Y-%m-%d %H:%M %Z"), "machine": machine(), "floor": floor,
               "lessons": lessons, "course_seconds": sum(lesson["seconds"] for lesson in lessons.values()),
               "explorers": explorers, "binder": binder, "throughput": throughput,
               "zoo_minutes": zoo_minutes(),
               "median_lesson_seconds": statistics.median(lesson["seconds"] for lesson in lessons.values())}
    results["budgets"] = evaluate_budgets(results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "README.md").write_text(markdown(results))
    failed = [check for check in results["budgets"] if not check["passed"]]
    print(f"whole course: {results['course_seconds']:.1f} s; closest to Binder's memory limit: {binder}")
    for check in results["budgets"]:
        print(f"{'pass' if check['passed'] else 'FAIL'}  {check['budget']}: {check['measured']:.1f} (limit {check['limit']:.0f})")
    print(f"{len(failed)} budget(s) missed" if failed else "every budget met")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
