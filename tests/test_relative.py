"""Tests for course_utils.relative.offset_matrix: PE(t + k) = M_k @ PE(t)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import frequencies, offset_matrix, pair_columns, sinusoidal_encoding

FAST = settings(max_examples=50, deadline=None, database=None)

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
