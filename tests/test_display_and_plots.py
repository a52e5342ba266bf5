"""rounded() for printing, attention_heatmap() for figures, execute_lesson() argument checks."""

import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_utils import (attention_heatmap, causal_mask, claims_table, per_seed_table, range_means, rounded,  # noqa: E402
                          seed_table)
from tools.execute import execute_lesson  # noqa: E402


def test_rounded_handles_tensors_arrays_numbers_and_negative_zero():
    assert rounded(torch.tensor([0.123456, -0.00001])) == [0.1235, 0.0]
    assert str(rounded(torch.tensor([-0.00001]))) == "[0.0]"
    assert rounded(np.array([[1.23456, 2.0]]), 2) == [[1.23, 2.0]]
    assert rounded(torch.tensor(3.14159)) == 3.1416
    assert rounded(2.71828, 1) == 2.7
    assert rounded([1 / 3, 2 / 3], 3) == [0.333, 0.667]


@pytest.mark.parametrize(
    "values, decimals, error, word",
    [
        ("abc", 4, TypeError, "values"),
        (True, 4, TypeError, "values"),
        (torch.tensor([True]), 4, TypeError, "values"),
        ([1.0, "x"], 4, TypeError, "values"),
        ([1.0], -1, ValueError, "decimals"),
        ([1.0], 9, ValueError, "decimals"),
        ([1.0], 1.5, TypeError, "decimals"),
    ],
)
def test_rounded_rejects_bad_input(values, decimals, error, word):
    with pytest.raises(error, match=word):
        rounded(values, decimals)


def test_attention_heatmap_labels_both_axes():
    weights = torch.softmax(torch.randn(3, 3), dim=-1)
    ax = attention_heatmap(weights, ["a", "b", "c"], title="takeaway")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title() == "takeaway"
    np.testing.assert_allclose(ax.images[0].get_array(), weights.numpy())
    plt.close(ax.figure)


@pytest.mark.parametrize(
    "weights, labels, title, error, word",
    [
        (torch.ones(2, 2) / 2, ["a", "b", "c"], "t", ValueError, "labels"),
        (torch.ones(2, 3) / 3, ["a", "b", "c"], "t", ValueError, "square"),
        (torch.ones(2), ["a", "b"], "t", ValueError, "weights"),
        (causal_mask(2), ["a", "b"], "t", TypeError, "weights"),
        ([[1.0]], ["a"], "t", TypeError, "weights"),
        (torch.ones(1, 1), "a", "t", TypeError, "labels"),
        (torch.ones(1, 1), ["a"], 3, TypeError, "title"),
    ],
)
def test_attention_heatmap_rejects_bad_input(weights, labels, title, error, word):
    with pytest.raises(error, match=word):
        attention_heatmap(weights, labels, title=title)
    plt.close("all")


def test_execute_lesson_rejects_a_missing_or_wrong_file(tmp_path):
    with pytest.raises(ValueError, match="ipynb"):
        execute_lesson(tmp_path / "missing.ipynb")
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(ValueError, match="ipynb"):
        execute_lesson(tmp_path / "notes.txt")


def test_execute_lesson_stores_outputs_in_order(tmp_path):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    path = tmp_path / "99_demo.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("x = 2"), new_code_cell("print(x * 21)")]), path)
    execute_lesson(path)
    nb = nbformat.read(path, as_version=4)
    assert [c.execution_count for c in nb.cells] == [1, 2]
    assert nb.cells[1].outputs[0].text == "42\n"
    assert "execution" not in nb.cells[1].metadata, "no timing metadata: re-execution must not churn the file"
    assert nb.metadata.kernelspec.name == "python3"


def test_execute_lesson_joins_a_cells_stream_chunks(tmp_path):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    path = tmp_path / "99_demo.ipynb"
    source = "import sys, time\nfor i in range(3):\n    print(i, flush=True); time.sleep(0.05)\nprint('err', file=sys.stderr)"
    nbformat.write(new_notebook(cells=[new_code_cell(source)]), path)
    execute_lesson(path)
    outputs = nbformat.read(path, as_version=4).cells[0].outputs
    assert [(o.name, o.text) for o in outputs] == [("stdout", "0\n1\n2\n"), ("stderr", "err\n")]


def test_seed_table_shows_mean_and_range_over_seeds():
    from course_utils import seed_table

    text = seed_table({"rope": {"length 16": [1.0, 0.98, 0.99], "length 64": [0.7, 0.8, 0.9]},
                       "none": {"length 16": [0.3, 0.35, 0.4], "length 64": [0.2, 0.25, 0.3]}}, row_label="code")
    lines = text.splitlines()
    assert lines[0].split() == ["code", "length", "16", "length", "64"]
    assert lines[1].split() == ["rope", "0.990", "(0.980–1.000)", "0.800", "(0.700–0.900)"]
    assert lines[2].split() == ["none", "0.350", "(0.300–0.400)", "0.250", "(0.200–0.300)"]
    assert seed_table({"a": {"x": [0.5]}}, decimals=1).splitlines()[1].split() == ["a", "0.5"]
    # a baseline without seeds: one value per cell, shown alone beside the rows with seeds
    text = seed_table({"rope": {"x": [1.0, 0.98, 0.99]}, "bigram counts": {"x": [3.5]}}, decimals=2)
    assert text.splitlines()[2].split() == ["bigram", "counts", "3.50"]


@pytest.mark.parametrize("results, error, word", [
    ({}, TypeError, "results"),
    ({"a": [1.0]}, TypeError, "results['a']"),
    ({"a": {"x": [1.0]}, "b": {"y": [1.0]}}, ValueError, "columns"),
    ({"a": {"x": [1.0, 2.0]}, "b": {"x": [1.0, 2.0, 3.0]}}, ValueError, "seeds"),
    ({"a": {"x": [1.0, 2.0], "y": [1.0]}}, ValueError, "seeds"),
    ({"a": {"x": [float("nan")]}}, ValueError, "finite"),
    ({"a": {f"column {i}": [1.0, 2.0] for i in range(6)}}, ValueError, "88 columns"),
])
def test_seed_table_refuses_what_it_cannot_show(results, error, word):
    from course_utils import seed_table

    with pytest.raises(error, match=re.escape(word)):
        seed_table(results)


def test_per_seed_table_shows_each_seed_with_its_sub_columns_signs_and_strings():
    text = per_seed_table({"full": {0: [2.1034, 3.8], 1: [2.136, 5.19]},
                           "sinks - none": {0: [None, -0.0001], 1: [None, 0.0123]},
                           "range": {0: ["0.60-0.63", None], 1: ["0.61-0.61", None]}},
                          [0, 1], title="bits", columns=["t<L", "t>=L"], decimals=[3, 2],
                          signed=["sinks - none"])
    lines = text.splitlines()
    assert lines[0].split() == ["bits", "seed", "0", "seed", "1"]
    assert lines[1].split() == ["t<L", "t>=L", "t<L", "t>=L"]
    assert lines[2].split() == ["full", "2.103", "3.80", "2.136", "5.19"]
    assert lines[3].split() == ["sinks", "-", "none", "+0.00", "+0.01"]  # -0.0001 rounds to +0.00
    assert lines[4].split() == ["range", "0.60-0.63", "0.61-0.61"]
    # the seed names sit above their own groups: right-aligned with each group's last column
    assert lines[0].index("seed 0") + len("seed 0") == lines[1].index("t>=L") + len("t>=L")
    assert lines[0].rstrip().endswith("seed 1") and len(lines[0]) == len(lines[2])
    # one value per seed, no sub-columns; only the seeds asked for, in their order
    assert per_seed_table({"a": {3: 0.5, 4: 0.25, 5: 1.0}}, [5, 3], decimals=1).splitlines() == [
        "   seed 5  seed 3", "a     1.0     0.5"]


@pytest.mark.parametrize("kwargs, error, word", [
    (dict(rows={}, seeds=[0]), TypeError, "rows"),
    (dict(rows={"a": {0: 1.0}}, seeds=[]), TypeError, "seeds"),
    (dict(rows={"a": {0: 1.0}}, seeds=[True]), TypeError, "seeds"),
    (dict(rows={"a": {0: 1.0}}, seeds=[0, 1]), ValueError, "rows['a'] has no value for seeds [1]"),
    (dict(rows={"a": {0: [1.0]}}, seeds=[0], columns=["x", "y"]), ValueError, "rows['a'][0]"),
    (dict(rows={"a": {0: [1.0, 2.0]}}, seeds=[0], columns=["x", "y"], decimals=[1]), ValueError, "decimals"),
    (dict(rows={"a": {0: 1.0}}, seeds=[0], decimals=7), ValueError, "decimals"),
    (dict(rows={"a": {0: 1.0}}, seeds=[0], signed=["b"]), ValueError, "signed"),
    (dict(rows={"a": {0: float("inf")}}, seeds=[0]), ValueError, "finite"),
    (dict(rows={"a": {0: True}}, seeds=[0]), TypeError, "rows['a']"),
    (dict(rows={"a": {0: torch.ones(2)}}, seeds=[0]), TypeError, "rows['a'] holds a tensor of shape (2,)"),
    (dict(rows={"a": {0: 1.0}}, seeds=[0], columns="x"), TypeError, "columns"),
    (dict(rows={"a": {0: 1.0}}, seeds=[0], title=3), TypeError, "title"),
    (dict(rows={"a": {s: 1.0 for s in range(12)}}, seeds=list(range(12))), ValueError, "88 columns"),
])
def test_per_seed_table_refuses_what_it_cannot_show(kwargs, error, word):
    with pytest.raises(error, match=re.escape(word)):
        per_seed_table(**kwargs)


def test_range_means_averages_each_seeds_curve_over_each_range():
    curves = {"rope": [torch.arange(8.0), torch.arange(8.0) + 1]}
    table = range_means(curves, {"t 0-3": (0, 4), "t 4-7": (4, 8)}, baselines={"bigram": torch.full((8,), 5.0)})
    assert table == {"rope": {"t 0-3": [1.5, 2.5], "t 4-7": [5.5, 6.5]}, "bigram": {"t 0-3": [5.0], "t 4-7": [5.0]}}
    assert "bigram" in seed_table(table, row_label="code")


def test_range_means_checks_its_arguments():
    curve = [torch.zeros(4)]
    with pytest.raises(ValueError, match="ranges"):
        range_means({"a": curve}, {"far": (2, 9)})
    with pytest.raises(ValueError, match="ranges"):
        range_means({"a": curve}, {"empty": (2, 2)})
    with pytest.raises(TypeError, match="ranges"):
        range_means({"a": curve}, {"bad": [0, 2]})
    with pytest.raises(TypeError, match="curves"):
        range_means({"a": torch.zeros(4)}, {"all": (0, 4)})
    with pytest.raises(TypeError, match="baselines"):
        range_means({"a": curve}, {"all": (0, 4)}, baselines=[torch.zeros(4)])


def test_magnitude_prints_round_off_as_a_bound_and_real_differences_as_digits():
    from course_utils import magnitude

    assert magnitude(3.3e-16) == "< 1e-12" and magnitude(0.0) == "< 1e-12"
    assert magnitude(2.41) == "2.4e+00" and magnitude(-68.77) == "-6.9e+01"
    assert magnitude(3e-6, rounding=1e-5) == "< 1e-05" and magnitude(2e-5, rounding=1e-5) == "2.0e-05"
    assert magnitude(torch.tensor(4.4e-16, dtype=torch.float64)) == "< 1e-12"
    with pytest.raises(ValueError, match="value must be finite"):
        magnitude(float("nan"))
    with pytest.raises(ValueError, match="value must be one number"):
        magnitude(torch.zeros(2))
    with pytest.raises(TypeError, match="value must be a real number"):
        magnitude("1e-3")
    with pytest.raises(ValueError, match="rounding"):
        magnitude(1.0, rounding=0)


def test_claims_table_says_yes_or_no_for_each_claim_and_seed():
    text = claims_table({3: {"ahead": True, "below 0.1": False}, 4: {"ahead": True, "below 0.1": True}},
                        title="seeds 3, 4")
    assert text.splitlines() == ["seeds 3, 4         3    4",
                                 "ahead            yes  yes",
                                 "below 0.1         NO  yes"]
    with pytest.raises(ValueError, match="same claims"):
        claims_table({3: {"a": True}, 4: {"b": True}}, title="")
    with pytest.raises(TypeError, match="True or False"):
        claims_table({3: {"a": 1}}, title="")
    with pytest.raises(TypeError, match="seeds"):
        claims_table({"3": {"a": True}}, title="")
    with pytest.raises(ValueError, match="88"):
        claims_table({3: {"x" * 90: True}}, title="")
