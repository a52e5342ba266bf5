"""Tests for course_utils.relative.offset_matrix: PE(t + k) = M_k @ PE(t)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import commuting_map, frequencies, offset_matrix, pair_columns, sinusoidal_encoding

FAST = settings(max_examples=examples(50), deadline=None, database=None)

F64 = torch.float64
LAYOUTS = st.sampled_from(["interleaved", "halves"])
even_d = st.integers(min_value=1, max_value=32).map(lambda h: 2 * h)
bases = st.floats(min_value=10.0, max_value=1e5, allow_nan=False)
offsets = st.floats(min_value=-200.0, max_value=200.0, allow_nan=False)


def pe_at(t: float, d: int, base: float, layout: str) -> torch.Tensor:
    return sinusoidal_encoding(torch.tensor([t], dtype=F64), d, base=base, layout=layout, dtype=F64)[0]


@FAST
@given(t=offsets, k=offsets, d=even_d, base=bases, layout=LAYOUTS)
def test_offset_matrix_moves_the_code_by_k(t, k, d, base, layout):
    m = offset_matrix(k, d, base=base, layout=layout, dtype=F64)
    assert m.shape == (d, d) and m.dtype == F64
    torch.testing.assert_close(m @ pe_at(t, d, base, layout), pe_at(t + k, d, base, layout), rtol=0, atol=1e-9)


@FAST
@given(k=offsets, d=even_d, base=bases, layout=LAYOUTS)
def test_offset_matrix_moves_a_whole_sequence(k, d, base, layout):
    t = torch.linspace(-50, 50, 7, dtype=F64)
    pe = sinusoidal_encoding(t, d, base=base, layout=layout, dtype=F64)
    shifted = sinusoidal_encoding(t + k, d, base=base, layout=layout, dtype=F64)
    m = offset_matrix(k, d, base=base, layout=layout, dtype=F64)
    torch.testing.assert_close(pe @ m.T, shifted, rtol=0, atol=1e-9)


@FAST
@given(j=offsets, k=offsets, d=even_d, base=bases, layout=LAYOUTS)
def test_group_law(j, k, d, base, layout):
    mj = offset_matrix(j, d, base=base, layout=layout, dtype=F64)
    mk = offset_matrix(k, d, base=base, layout=layout, dtype=F64)
    mjk = offset_matrix(j + k, d, base=base, layout=layout, dtype=F64)
    torch.testing.assert_close(mj @ mk, mjk, rtol=0, atol=1e-9)
    torch.testing.assert_close(mk @ mj, mjk, rtol=0, atol=1e-9)  # the offsets commute


@FAST
@given(k=offsets, d=even_d, base=bases, layout=LAYOUTS)
def test_orthogonal_and_inverse_is_transpose(k, d, base, layout):
    m = offset_matrix(k, d, base=base, layout=layout, dtype=F64)
    eye = torch.eye(d, dtype=F64)
    torch.testing.assert_close(m @ m.T, eye, rtol=0, atol=1e-12)
    torch.testing.assert_close(m.T @ m, eye, rtol=0, atol=1e-12)
    torch.testing.assert_close(offset_matrix(-k, d, base=base, layout=layout, dtype=F64), m.T, rtol=0, atol=1e-15)
    assert torch.linalg.det(m).item() == pytest.approx(1.0, abs=1e-9)  # rotations, no reflections


@pytest.mark.parametrize("layout", ["interleaved", "halves"])
@pytest.mark.parametrize("d", [2, 8, 30])
def test_zero_offset_is_identity(d, layout):
    assert torch.equal(offset_matrix(0, d, layout=layout, dtype=F64), torch.eye(d, dtype=F64))
    assert torch.equal(offset_matrix(0.0, d, layout=layout), torch.eye(d))


@FAST
@given(k=offsets, d=even_d, base=bases)
def test_interleaved_blocks_are_rotations(k, d, base):
    m = offset_matrix(k, d, base=base, dtype=F64)
    omega = np.power(base, -2.0 * np.arange(d // 2) / d)
    expected = np.zeros((d, d))
    for i, w in enumerate(omega):
        c, s = math.cos(w * k), math.sin(w * k)
        expected[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[c, s], [-s, c]]
    np.testing.assert_allclose(m.numpy(), expected, rtol=0, atol=1e-9)  # zeros off the blocks too


@FAST
@given(k=offsets, d=even_d, base=bases)
def test_halves_blocks_sit_on_columns_i_and_half_plus_i(k, d, base):
    inter = offset_matrix(k, d, base=base, dtype=F64)
    halves = offset_matrix(k, d, base=base, layout="halves", dtype=F64)
    s_i, c_i = pair_columns(d)
    s_h, c_h = pair_columns(d, "halves")
    perm = torch.empty(d, dtype=torch.long)
    perm[s_h], perm[c_h] = s_i, c_i  # halves column j <-> interleaved column perm[j]
    torch.testing.assert_close(halves, inter[perm][:, perm], rtol=0, atol=0)
    angle = frequencies(d, base=base) * k
    torch.testing.assert_close(halves[s_h, c_h], torch.sin(angle), rtol=0, atol=1e-12)
    torch.testing.assert_close(halves[c_h, s_h], -torch.sin(angle), rtol=0, atol=1e-12)


def test_dtype_default_and_keyword():
    assert offset_matrix(1, 4).dtype == torch.float32
    assert offset_matrix(1, 4, dtype=F64).dtype == F64


def test_k_may_be_a_scalar_tensor_or_numpy_number():
    expected = offset_matrix(2.5, 6, dtype=F64)
    torch.testing.assert_close(offset_matrix(torch.tensor(2.5, dtype=F64), 6, dtype=F64), expected, rtol=0, atol=0)
    torch.testing.assert_close(offset_matrix(np.float64(2.5), 6, dtype=F64), expected, rtol=0, atol=0)


@pytest.mark.parametrize("k", [float("nan"), float("inf"), float("-inf"), np.nan, torch.tensor(float("nan"))])
def test_non_finite_k(k):
    with pytest.raises(ValueError, match=r"\bk\b"):
        offset_matrix(k, 4)


@pytest.mark.parametrize("k", ["3", None, True, [1.0], torch.tensor([1.0]), 1 + 2j])
def test_k_of_wrong_type(k):
    with pytest.raises(TypeError, match=r"\bk\b"):
        offset_matrix(k, 4)


@pytest.mark.parametrize("d_model", [3, 0, -4])
def test_bad_d_model_value(d_model):
    with pytest.raises(ValueError, match="d_model"):
        offset_matrix(1.0, d_model)


@pytest.mark.parametrize("d_model", [4.0, True])
def test_bad_d_model_type(d_model):
    with pytest.raises(TypeError, match="d_model"):
        offset_matrix(1.0, d_model)


def test_other_bad_arguments():
    with pytest.raises(ValueError, match="layout"):
        offset_matrix(1.0, 4, layout="pairs")
    with pytest.raises(ValueError, match="base"):
        offset_matrix(1.0, 4, base=-1.0)
    with pytest.raises(ValueError, match="dtype"):
        offset_matrix(1.0, 4, dtype=torch.int64)
    with pytest.raises(ValueError):
        offset_matrix(1.0, 10**6)  # a 10^12-entry matrix is refused


# --- commuting_map: the matrices W with W M_k = M_k W --------------------------------------------

pairs = st.integers(min_value=1, max_value=16)
amplitude = st.floats(min_value=-3.0, max_value=3.0, allow_nan=False)
phase = st.floats(min_value=-7.0, max_value=7.0, allow_nan=False)


@FAST
@given(data=st.data(), n=pairs, k=offsets, base=bases, layout=LAYOUTS)
def test_commuting_map_commutes_with_every_offset_matrix(data, n, k, base, layout):
    r = data.draw(st.lists(amplitude, min_size=n, max_size=n))
    phi = data.draw(st.lists(phase, min_size=n, max_size=n))
    w = commuting_map(r, phi, layout=layout, dtype=F64)
    m = offset_matrix(k, 2 * n, base=base, layout=layout, dtype=F64)
    assert w.shape == (2 * n, 2 * n) and w.dtype == F64
    torch.testing.assert_close(w @ m, m @ w, rtol=0, atol=1e-9)


@FAST
@given(data=st.data(), n=pairs, t=offsets, k=offsets, base=bases, layout=LAYOUTS)
def test_commuting_map_score_is_a_sum_of_shifted_cosines_of_the_offset(data, n, t, k, base, layout):
    """PE(t)ᵀ W PE(t + k) = Σ_i r_i cos(ω_i k + φ_i), whatever t is."""
    r = torch.tensor(data.draw(st.lists(amplitude, min_size=n, max_size=n)), dtype=F64)
    phi = torch.tensor(data.draw(st.lists(phase, min_size=n, max_size=n)), dtype=F64)
    w = commuting_map(r, phi, layout=layout, dtype=F64)
    score = pe_at(t, 2 * n, base, layout) @ w @ pe_at(t + k, 2 * n, base, layout)
    expected = (r * torch.cos(frequencies(2 * n, base=base) * k + phi)).sum()
    torch.testing.assert_close(score, expected, rtol=0, atol=1e-8)


@pytest.mark.parametrize("layout", ["interleaved", "halves"])
@pytest.mark.parametrize("j", [0, 1, 5, -3, 2.5])
def test_unit_amplitudes_and_phases_omega_j_give_the_offset_matrix(j, layout):
    w = commuting_map(torch.ones(8), frequencies(16) * j, layout=layout, dtype=F64)
    torch.testing.assert_close(w, offset_matrix(j, 16, layout=layout, dtype=F64), rtol=0, atol=1e-12)


def test_symmetric_w_cannot_tell_before_from_after_and_a_rotation_can():
    """Phases 0 or π: W symmetric and the score even in k. Other phases: the score is not even;
    W = M_5 gives its largest score, d/2, to the key 5 positions *before* the query."""
    d, t = 16, torch.tensor([100.0], dtype=F64)
    ks = torch.arange(1, 40, dtype=F64)
    query = sinusoidal_encoding(t, d, dtype=F64)[0]
    after, before = (sinusoidal_encoding(t + sign * ks, d, dtype=F64) for sign in (1, -1))
    symmetric = commuting_map(torch.linspace(0.2, 2.0, 8), [0.0, math.pi] * 4, dtype=F64)
    torch.testing.assert_close(symmetric, symmetric.T)
    torch.testing.assert_close(after @ symmetric @ query, before @ symmetric @ query, rtol=0, atol=1e-9)
    m5 = commuting_map(torch.ones(8), frequencies(d) * 5, dtype=F64)
    scores_before = query @ m5 @ before.T
    assert float((query @ m5 @ after.T - scores_before).abs().max()) > 1.0
    assert int(scores_before.argmax()) == 4 and float(scores_before.max()) == pytest.approx(d / 2)


def test_commuting_map_accepts_lists_arrays_and_tensors_and_dtype():
    w = commuting_map([1, 2], np.array([0.0, 0.5]))
    assert w.dtype == torch.float32 and w.shape == (4, 4)
    assert commuting_map(torch.ones(1), torch.zeros(1), dtype=torch.float16).dtype == torch.float16
    torch.testing.assert_close(commuting_map([2.0], [0.0], dtype=F64), 2 * torch.eye(2, dtype=F64))


@pytest.mark.parametrize("kwargs, error, name", [
    (dict(amplitudes=1.0, phases=[0.0]), TypeError, "amplitudes"),
    (dict(amplitudes=[1.0], phases=np.float64(0.0)), TypeError, "phases"),
    (dict(amplitudes=[], phases=[]), ValueError, "amplitudes"),
    (dict(amplitudes=[1.0, 2.0], phases=[0.0]), ValueError, "phases"),
    (dict(amplitudes=[[1.0]], phases=[0.0]), ValueError, "amplitudes"),
    (dict(amplitudes=[float("nan")], phases=[0.0]), ValueError, "amplitudes"),
    (dict(amplitudes=[1.0], phases=["a"]), TypeError, "phases"),
    (dict(amplitudes=torch.tensor([True]), phases=[0.0]), TypeError, "amplitudes"),
    (dict(amplitudes=[1.0], phases=[0.0], layout="rows"), ValueError, "layout"),
    (dict(amplitudes=[1.0], phases=[0.0], dtype=torch.int64), ValueError, "dtype"),
])
def test_commuting_map_bad_arguments_name_the_argument(kwargs, error, name):
    with pytest.raises(error, match=rf"\b{name}\b"):
        commuting_map(**kwargs)
