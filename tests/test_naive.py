"""Tests for course_utils.naive: integer, normalised, one-hot and binary position codes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import binary_encoding, integer_encoding, normalised_encoding, one_hot_encoding

FAST = settings(max_examples=examples(50), deadline=None, database=None)


# --- integer_encoding -------------------------------------------------------------------------

@pytest.mark.parametrize("n, d", [(1, 1), (5, 3), (17, 64)])
def test_integer_every_column_is_t(n, d):
    code = integer_encoding(n, d)
    assert code.shape == (n, d) and code.dtype == torch.float32
    np.testing.assert_array_equal(code.numpy(), np.repeat(np.arange(n, dtype=np.float32)[:, None], d, axis=1))


@given(st.lists(st.floats(-1e4, 1e4, allow_nan=False), max_size=20), st.integers(1, 32))
@FAST
def test_integer_norm_is_abs_t_times_sqrt_d(positions, d):
    code = integer_encoding(positions, d, dtype=torch.float64)
    assert code.shape == (len(positions), d)
    np.testing.assert_allclose(code.norm(dim=1).numpy(), np.abs(positions) * np.sqrt(d), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("t", [1, 10, 1000])
def test_layer_norm_deletes_the_integer_code_along_ones(t):
    """LN(x + t·(1, ..., 1)) = LN(x): the code along (1, ..., 1) is only a mean (lesson 02), so
    the course's model feeds t in along a learned direction instead."""
    x = torch.randn(64, generator=torch.Generator().manual_seed(t), dtype=torch.float64)
    shifted = x + integer_encoding([t], 64, dtype=torch.float64)[0]
    torch.testing.assert_close(torch.nn.functional.layer_norm(shifted, (64,)),
                               torch.nn.functional.layer_norm(x, (64,)), rtol=0, atol=1e-9)
    direction = torch.randn(64, generator=torch.Generator().manual_seed(t + 1), dtype=torch.float64)
    moved = torch.nn.functional.layer_norm(x + t * direction, (64,)) - torch.nn.functional.layer_norm(x, (64,))
    assert float(moved.abs().max()) > 0.1  # a random direction survives


def test_integer_accepts_the_same_positions_as_sinusoidal():
    for positions in ([0, 3, 7], (0, 3, 7), np.array([0, 3, 7]), torch.tensor([0, 3, 7]), torch.tensor([0.0, 3.0, 7.0])):
        torch.testing.assert_close(integer_encoding(positions, 2), torch.tensor([[0.0, 0.0], [3.0, 3.0], [7.0, 7.0]]))
    assert integer_encoding(0, 4).shape == (0, 4)
    assert integer_encoding(np.int64(3), 2).shape == (3, 2)


def test_integer_result_is_a_fresh_contiguous_tensor():
    code = integer_encoding(3, 4, dtype=torch.float64)
    assert code.is_contiguous()
    code[0, 0] = 99.0
    assert code[0, 1] == 0.0, "columns must not share memory"


# --- normalised_encoding ----------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 5, 19, 512])
def test_normalised_goes_from_0_to_1_in_steps_of_one_over_n_minus_1(n):
    code = normalised_encoding(n, 3, length=n, dtype=torch.float64)
    assert code.shape == (n, 3)
    np.testing.assert_allclose(code[:, 0].numpy(), np.linspace(0.0, 1.0, n), atol=1e-12)
    assert torch.equal(code[:, 0], code[:, 2])
    np.testing.assert_allclose(code[:, 0].diff().numpy(), np.full(n - 1, 1.0 / (n - 1)), atol=1e-12)


@given(st.integers(2, 1000), st.data())
@FAST
def test_normalised_is_t_over_length_minus_1(length, data):
    positions = data.draw(st.lists(st.integers(0, length - 1), max_size=10))
    code = normalised_encoding(positions, 1, length=length, dtype=torch.float64)
    np.testing.assert_allclose(code[:, 0].numpy(), np.array(positions, dtype=np.float64) / (length - 1), rtol=1e-12)
    assert ((code >= 0) & (code <= 1)).all()


def test_normalised_of_a_subset_of_positions_and_float32():
    code = normalised_encoding([1, 2], 2, length=3)
    assert code.dtype == torch.float32
    torch.testing.assert_close(code, torch.tensor([[0.5, 0.5], [1.0, 1.0]]))


# --- one_hot_encoding -------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 4, 16])
def test_one_hot_of_all_positions_is_the_identity(n):
    code = one_hot_encoding(n, n)
    assert code.shape == (n, n) and code.dtype == torch.float32
    assert torch.equal(code, torch.eye(n))


@given(st.integers(1, 64), st.data())
@FAST
def test_one_hot_rows_and_gram(max_len, data):
    positions = data.draw(st.lists(st.integers(0, max_len - 1), max_size=12))
    code = one_hot_encoding(positions, max_len, dtype=torch.float64)
    assert code.shape == (len(positions), max_len)
    assert torch.equal(code.sum(dim=1), torch.ones(len(positions), dtype=torch.float64))
    if positions:
        assert code.argmax(dim=1).tolist() == positions
    same = torch.tensor(positions)[:, None] == torch.tensor(positions)[None, :]
    assert torch.equal(code @ code.T, same.double())


def test_one_hot_accepts_whole_floats():
    assert torch.equal(one_hot_encoding([2.0, 0.0], 3), torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]))


# --- binary_encoding --------------------------------------------------------------------------

def test_binary_small_table_least_significant_first():
    expected = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1]]
    assert torch.equal(binary_encoding(8, 3), torch.tensor(expected, dtype=torch.float32))
    assert torch.equal(binary_encoding(8, 3, signed=True), 2 * torch.tensor(expected, dtype=torch.float32) - 1)


@given(st.integers(1, 52), st.data())
@FAST
def test_binary_matches_python_bin(n_bits, data):
    positions = data.draw(st.lists(st.integers(0, 2**n_bits - 1), max_size=8))
    code = binary_encoding(positions, n_bits, dtype=torch.float64)
    assert code.shape == (len(positions), n_bits)
    for row, t in zip(code.tolist(), positions):
        assert row == [float(c) for c in reversed(format(t, f"0{n_bits}b"))]
        assert sum(bit * 2**b for b, bit in enumerate(row)) == t  # exact, even at 52 bits


def test_binary_bit_b_flips_every_2_to_the_b_steps():
    bits = binary_encoding(256, 8)
    flips = (bits.roll(-1, dims=0) != bits).sum(dim=0)
    assert flips.tolist() == [256 // 2**b for b in range(8)]


# --- dtype and argument checks ----------------------------------------------------------------

CODES = {
    "integer": lambda positions, **kw: integer_encoding(positions, 4, **kw),
    "normalised": lambda positions, **kw: normalised_encoding(positions, 4, length=10, **kw),
    "one_hot": lambda positions, **kw: one_hot_encoding(positions, 10, **kw),
    "binary": lambda positions, **kw: binary_encoding(positions, 4, **kw),
}


@pytest.mark.parametrize("name", CODES)
def test_dtype_default_float32_and_float64(name):
    assert CODES[name](3).dtype == torch.float32
    assert CODES[name](3, dtype=torch.float64).dtype == torch.float64
    assert CODES[name]([], dtype=torch.float64).shape[0] == 0


@pytest.mark.parametrize("name", CODES)
@pytest.mark.parametrize(
    "positions, error",
    [
        ("abc", TypeError),
        (True, TypeError),
        ([[1, 2]], ValueError),
        ([0, float("nan")], ValueError),
        (torch.tensor([True]), TypeError),
        (-1, ValueError),
    ],
)
def test_bad_positions_name_the_argument(name, positions, error):
    with pytest.raises(error, match="positions"):
        CODES[name](positions)


@pytest.mark.parametrize("name", CODES)
def test_bad_dtype_names_the_argument(name):
    with pytest.raises(TypeError, match="dtype"):
        CODES[name](3, dtype="float32")
    with pytest.raises(ValueError, match="dtype"):
        CODES[name](3, dtype=torch.int64)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: integer_encoding(3, 0), ValueError, ["d_model"]),
        (lambda: integer_encoding(3, 2.0), TypeError, ["d_model"]),
        (lambda: integer_encoding(10**5, 10**4), ValueError, ["position code"]),
        (lambda: normalised_encoding(3, 0, length=3), ValueError, ["d_model"]),
        (lambda: normalised_encoding(3, 2, length=1), ValueError, ["length", "at least 2"]),
        (lambda: normalised_encoding(3, 2, length=2.5), TypeError, ["length"]),
        (lambda: normalised_encoding([0, 7], 2, length=5), ValueError, ["positions", "length - 1 = 4", "7"]),
        (lambda: normalised_encoding([-0.5], 2, length=5), ValueError, ["positions", "-0.5"]),
        (lambda: normalised_encoding(3, 2), TypeError, ["length"]),
        (lambda: one_hot_encoding(3, 0), ValueError, ["max_len"]),
        (lambda: one_hot_encoding(3, "8"), TypeError, ["max_len"]),
        (lambda: one_hot_encoding([8], 8), ValueError, ["positions", "no column", "max_len=8"]),
        (lambda: one_hot_encoding([1.5], 8), ValueError, ["positions", "whole numbers", "1.5"]),
        (lambda: one_hot_encoding([-2], 8), ValueError, ["positions", "-2"]),
        (lambda: binary_encoding(3, 0), ValueError, ["n_bits"]),
        (lambda: binary_encoding(3, 53), ValueError, ["n_bits", "52"]),
        (lambda: binary_encoding(3, None), TypeError, ["n_bits"]),
        (lambda: binary_encoding([8], 3), ValueError, ["positions", "n_bits=3"]),
        (lambda: binary_encoding([0.5], 3), ValueError, ["positions", "whole numbers"]),
        (lambda: binary_encoding(3, 2, signed=1), TypeError, ["signed"]),
        (lambda: binary_encoding(3, 2, signed="yes"), TypeError, ["signed"]),
    ],
)
def test_bad_arguments_say_what_is_wrong(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value)
