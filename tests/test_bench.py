"""The benchmark's pieces: a notebook run with its peak memory, budgets, the Markdown report."""

import json
import os

import nbformat
import pytest

from tools import bench


def test_peak_rss_of_this_process_is_plausible():
    peak = bench._peak_rss_mb(os.getpid())
    if peak is None:
        pytest.skip("no /proc on this system")
    assert 20 < peak < 24_000


def test_run_notebook_times_a_fresh_kernel_and_reads_its_memory(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import numpy as np\nblock = np.ones(40_000_000, dtype=np.uint8)  # 40 MB"),
        nbformat.v4.new_code_cell("block.sum()"),
    ])
    result = bench.run_notebook(nb, tmp_path)
    assert 0 < result["seconds"] < 120
    if result["peak_mb"] is not None:
        assert result["peak_mb"] > 40, "the kernel's peak must include the 40 MB block"
    assert nb.cells[1].outputs[0]["data"]["text/plain"] == "np.uint64(40000000)"


def test_run_notebook_names_a_failing_cell(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
    with pytest.raises(Exception, match="ZeroDivisionError"):
        bench.run_notebook(nb, tmp_path)


def _results(lesson_seconds: float, redraw_ms: float, peak_mb: float = 400.0) -> dict:
    results = {
        "when": "today", "machine": {"cores": 2}, "floor": {"seconds": 5.0, "peak_mb": 300.0},
        "lessons": {"00_start_here": {"seconds": 6.0, "peak_mb": 350.0},
                    "01_demo": {"seconds": lesson_seconds, "peak_mb": peak_mb}},
        "explorers": {"sinusoid": {"median_ms": redraw_ms, "max_ms": 2 * redraw_ms, "n": 25}},
        "binder": "01_demo",
    }
    results["course_seconds"] = 6.0 + lesson_seconds
    results["budgets"] = bench.evaluate_budgets(results)
    return results


def test_budgets_pass_and_fail_where_they_should():
    assert all(check["passed"] for check in _results(12.0, 40.0)["budgets"])
    failed = {check["budget"] for check in _results(31.0, 140.0, peak_mb=2000.0)["budgets"] if not check["passed"]}
    assert failed == {"01_demo: time", "01_demo: memory (MB)", "explorer sinusoid: median redraw (ms)"}
    slow_course = _results(29.0, 40.0)
    slow_course["course_seconds"] = bench.COURSE_SECONDS + 1
    assert [c["budget"] for c in bench.evaluate_budgets(slow_course) if not c["passed"]] == ["whole course: time"]


def test_markdown_report_has_every_lesson_explorer_and_verdict():
    text = bench.markdown(_results(31.0, 40.0))
    assert "| 01_demo | 31.0 | 6.2 | 400 |" in text
    assert "| sinusoid | 40.0 | 80.0 |" in text
    assert "| 01_demo: time | 31.0 | 30 | **FAIL** |" in text
    assert "Closest to Binder's memory limit" in text and "**whole course** | **37.0**" in text


def test_the_capstone_alone_may_take_a_minute():
    results = _results(12.0, 40.0)
    results["lessons"][bench.CAPSTONE] = {"seconds": 55.0, "peak_mb": 500.0}
    assert all(check["passed"] for check in bench.evaluate_budgets(results))
    results["lessons"][bench.CAPSTONE]["seconds"] = 61.0
    results["lessons"]["01_demo"]["seconds"] = 31.0
    failed = {c["budget"] for c in bench.evaluate_budgets(results) if not c["passed"]}
    assert failed == {f"{bench.CAPSTONE}: time", "01_demo: time"}


def test_explorer_timings_cover_every_explorer():
    from course_utils.widgets import EXPLORERS

    timings = bench.explorer_timings(2)
    assert set(timings) == set(EXPLORERS) and all(t["n"] == 2 for t in timings.values())


def test_the_zoos_throughput_and_time_are_budgets_and_reported():
    results = _results(12.0, 40.0)
    results["throughput"] = {"peaks_gflops": {"AVX2 (fastest)": 100.0, "AVX2,STRICT (the course's pin)": 99.0},
                             "training": {"capstone rope": {"tokens_per_second": 20_000.0, "gflops": 30.0,
                                                            "parameters": 243_172, "models_side_by_side": 1,
                                                            "percent_of_peak": 30.0},
                                          "vit learned": {"tokens_per_second": 50_000.0, "gflops": 20.0,
                                                          "parameters": 102_090, "models_side_by_side": 3,
                                                          "percent_of_peak": 20.0}}}
    results["zoo_minutes"] = 95.0
    failed = {c["budget"] for c in bench.evaluate_budgets(results) if not c["passed"]}
    assert failed == {"zoo training vit learned: % of the matmul peak (at least)",
                      "the zoo, made by make pretrain (minutes)"}
    results["budgets"] = bench.evaluate_budgets(results)
    text = bench.markdown(results)
    assert "| capstone rope | 1 | 243,172 | 20,000 | 30.0 | 30 |" in text
    assert "matmul peak, MKL_CBWR=AVX2 (fastest): 100.0 GFLOP/s" in text and "95.0 minutes" in text


def test_zoo_minutes_adds_every_group_and_convergence_run(tmp_path, monkeypatch):
    manifest = {"checkpoints": [{"seconds": 60.0, "convergence": {"seconds": 120.0}}, {"seconds": 60.0}]}
    (tmp_path / "course_utils" / "zoo").mkdir(parents=True)
    (tmp_path / "course_utils" / "zoo" / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.chdir(tmp_path)
    assert bench.zoo_minutes(processes=2) == pytest.approx(240.0 / 2 / 60)
