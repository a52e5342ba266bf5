"""Tests for least_squares_map and fit_offset_map (course_utils.relative), and matrix_heatmap."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from conftest import examples
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from course_utils import (  # noqa: E402
    fit_offset_map,
    least_squares_map,
    matrix_heatmap,
    offset_matrix,
    pair_columns,
    sinusoidal_encoding,
)

F64 = torch.float64
FAST = settings(max_examples=examples(30), deadline=None, database=None)


# --- least_squares_map ------------------------------------------------------------------------

@FAST
@given(n=st.integers(8, 40), d_in=st.integers(1, 6), d_out=st.integers(1, 6), seed=st.integers(0, 10**6))
def test_least_squares_recovers_an_exact_linear_map(n, d_in, d_out, seed):
    g = torch.Generator().manual_seed(seed)
    source = torch.randn(n, d_in, generator=g, dtype=F64)
    a_true = torch.randn(d_out, d_in, generator=g, dtype=F64)
    a, residual = least_squares_map(source, source @ a_true.T)
    assert a.shape == (d_out, d_in) and a.dtype == F64
    torch.testing.assert_close(a, a_true, rtol=0, atol=1e-8)
    assert isinstance(residual, float) and residual < 1e-10


def test_least_squares_residual_against_numpy():
    rng = np.random.default_rng(3)
    source, target = rng.normal(size=(30, 4)), rng.normal(size=(30, 3))
    solution, *_ = np.linalg.lstsq(source, target, rcond=None)
    expected = np.linalg.norm(source @ solution - target) / np.linalg.norm(target)
    a, residual = least_squares_map(torch.tensor(source, dtype=torch.float32), torch.tensor(target))
    np.testing.assert_allclose(a.numpy(), solution.T, atol=1e-5)
    assert residual == pytest.approx(expected, abs=1e-6)
    assert 0 < residual < 1


@pytest.mark.parametrize("k", [1, 3, 10])
def test_sine_only_code_has_no_linear_offset_map_but_the_full_code_does(k):
    d, n = 16, 1024
    now = sinusoidal_encoding(n, d, dtype=F64)
    later = sinusoidal_encoding(torch.arange(n, dtype=F64) + k, d, dtype=F64)
    sines, _ = pair_columns(d)
    _, res_sin = least_squares_map(now[:, sines], later[:, sines])
    a, res_both = least_squares_map(now, later)
    assert res_sin > 0.3
    assert res_both < 1e-9
    torch.testing.assert_close(a, offset_matrix(k, d, dtype=F64), rtol=0, atol=1e-6)


def test_single_pair_sine_residual_is_abs_sin_omega_k():
    """Over whole periods the best map keeps cos(ωk) sin(ωt) and loses sin(ωk) cos(ωt)."""
    t = torch.arange(0, 2 * math.pi, 2 * math.pi / 400, dtype=F64)
    for k in (0.3, 1.0, 2.0):
        _, residual = least_squares_map(torch.sin(t)[:, None], torch.sin(t + k)[:, None])
        assert residual == pytest.approx(abs(math.sin(k)), abs=1e-9)


def test_least_squares_bad_arguments():
    good = torch.randn(5, 3)
    with pytest.raises(TypeError, match="source"):
        least_squares_map([[1.0]], good)
    with pytest.raises(TypeError, match="target"):
        least_squares_map(good, "text")
    with pytest.raises(ValueError, match="source"):
        least_squares_map(torch.randn(5), good)
    with pytest.raises(ValueError, match="target"):
        least_squares_map(good, torch.tensor([[float("nan")]] * 5))
    with pytest.raises(ValueError, match="source and target"):
        least_squares_map(good, torch.randn(4, 3))
    with pytest.raises(ValueError, match="target"):
        least_squares_map(good, torch.zeros(5, 2))
    with pytest.raises(TypeError, match="source"):
        least_squares_map(torch.ones(5, 3, dtype=torch.int64), good)


# --- fit_offset_map -----------------------------------------------------------------------------

def test_fit_recovers_m_k_and_the_loss_falls():
    learned, losses = fit_offset_map(5, 16)
    assert learned.shape == (16, 16) and learned.dtype == F64
    assert len(losses) == 200 and all(isinstance(x, float) for x in losses)
    assert losses[-1] < 1e-8 < losses[0]
    assert all(b <= a for a, b in zip(losses, losses[1:]))
    torch.testing.assert_close(learned, offset_matrix(5, 16, dtype=F64), rtol=0, atol=1e-4)


@pytest.mark.parametrize("k,d,layout", [(1, 4, "interleaved"), (-3, 8, "halves"), (2.5, 6, "interleaved")])
def test_fit_other_offsets_widths_and_layouts(k, d, layout):
    learned, _ = fit_offset_map(k, d, steps=300, lr=0.2, layout=layout, seed=3)
    torch.testing.assert_close(learned, offset_matrix(k, d, layout=layout, dtype=F64), rtol=0, atol=1e-4)


def test_fit_is_deterministic_and_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    a, la = fit_offset_map(3, 8, steps=20, seed=7)
    assert torch.equal(torch.get_rng_state(), before)
    b, lb = fit_offset_map(3, 8, steps=20, seed=7)
    c, _ = fit_offset_map(3, 8, steps=20, seed=8)
    assert torch.equal(a, b) and la == lb
    assert not torch.equal(a, c)


def test_short_positions_leave_the_slow_blocks_wrong():
    short, losses = fit_offset_map(5, 16, max_position=64)
    err = (short - offset_matrix(5, 16, dtype=F64)).abs().reshape(8, 2, 8, 2).amax(dim=(1, 3)).diagonal()
    assert losses[-1] < 0.01
    assert err[:2].max() < 0.01 and err[-3:].min() > 0.3


def test_fit_diverging_learning_rate_says_lr():
    with pytest.raises(ValueError, match="lr"):
        fit_offset_map(1, 4, lr=1e6, steps=50)


@pytest.mark.parametrize(
    "kwargs,error,name",
    [
        ({"k": float("nan")}, ValueError, "k"),
        ({"k": "1"}, TypeError, "k"),
        ({"d_model": 5}, ValueError, "d_model"),
        ({"d_model": 4.0}, TypeError, "d_model"),
        ({"steps": 0}, ValueError, "steps"),
        ({"steps": 2.5}, TypeError, "steps"),
        ({"lr": 0.0}, ValueError, "lr"),
        ({"lr": "fast"}, TypeError, "lr"),
        ({"n_positions": 0}, ValueError, "n_positions"),
        ({"max_position": -1.0}, ValueError, "max_position"),
        ({"max_position": True}, TypeError, "max_position"),
        ({"seed": -1}, ValueError, "seed"),
        ({"base": 0.0}, ValueError, "base"),
        ({"layout": "pairs"}, ValueError, "layout"),
    ],
)
def test_fit_bad_arguments_name_the_argument(kwargs, error, name):
    arguments = {"k": 1.0, "d_model": 4, "steps": 2}
    arguments.update(kwargs)
    k, d = arguments.pop("k"), arguments.pop("d_model")
    with pytest.raises(error, match=rf"\b{name}\b"):
        fit_offset_map(k, d, **arguments)


# --- matrix_heatmap --------------------------------------------------------------------------------

def test_matrix_heatmap_is_signed_and_labelled():
    ax = matrix_heatmap(offset_matrix(2, 8), title="M_2")
    image = ax.images[0]
    assert image.get_cmap().name == "RdBu"
    low, high = image.get_clim()
    assert low == pytest.approx(-high) and high > 0
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title() == "M_2"
    plt.close("all")


def test_matrix_heatmap_bad_arguments():
    with pytest.raises(ValueError, match="matrix"):
        matrix_heatmap(torch.zeros(3), title="x")
    with pytest.raises(TypeError, match="matrix"):
        matrix_heatmap([[1.0]], title="x")
    with pytest.raises(TypeError, match="title"):
        matrix_heatmap(torch.eye(2), title=None)
    with pytest.raises(TypeError, match="xlabel"):
        matrix_heatmap(torch.eye(2), title="x", xlabel=3)
    plt.close("all")
