"""Tests for course_utils.encodings: sinusoidal_encoding, frequencies, pair_columns."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
import torch
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import frequencies, pair_columns, sinusoidal_encoding

FAST = settings(max_examples=examples(50), deadline=None, database=None)

even_d = st.integers(min_value=1, max_value=64).map(lambda h: 2 * h)
bases = st.floats(min_value=2.0, max_value=1e6, allow_nan=False, allow_infinity=False)
reals = st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, allow_infinity=False)


def reference_pe(t, d_model: int, base: float = 10_000.0) -> np.ndarray:
    """Independent float64 numpy version of the interleaved code."""
    t = np.asarray(t, dtype=np.float64)
    i = np.arange(d_model // 2, dtype=np.float64)
    omega = np.power(float(base), -2.0 * i / d_model)
    angles = np.outer(t, omega)
    pe = np.zeros((t.size, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


# --- shape, positions, dtype ------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 3, 17])
@pytest.mark.parametrize("d", [2, 8, 64])
def test_int_n_gives_shape_and_positions_0_to_n_minus_1(n, d):
    pe = sinusoidal_encoding(n, d)
    assert pe.shape == (n, d)
    np.testing.assert_allclose(pe.double().numpy(), reference_pe(np.arange(n), d), atol=1e-6)
    torch.testing.assert_close(
        sinusoidal_encoding(n, d, dtype=torch.float64),
        sinusoidal_encoding(list(range(n)), d, dtype=torch.float64),
        rtol=0, atol=0,
    )


def test_numpy_integer_n_is_an_int():
    torch.testing.assert_close(sinusoidal_encoding(np.int64(5), 8), sinusoidal_encoding(5, 8), rtol=0, atol=0)


@pytest.mark.parametrize("d", [2, 6])
def test_zero_positions_gives_empty(d):
    assert sinusoidal_encoding(0, d).shape == (0, d)
    assert sinusoidal_encoding([], d).shape == (0, d)


def test_dtype_default_float32_and_float64():
    assert sinusoidal_encoding(4, 8).dtype == torch.float32
    assert sinusoidal_encoding(4, 8, dtype=torch.float64).dtype == torch.float64
    assert sinusoidal_encoding(4, 8, layout="halves", dtype=torch.float64).dtype == torch.float64


POSITIONS = [-3.5, -1, 0, 0.25, 2, 7.75]


@pytest.mark.parametrize(
    "positions",
    [
        POSITIONS,
        tuple(POSITIONS),
        np.array(POSITIONS),
        np.array(POSITIONS, dtype=np.float32),
        torch.tensor(POSITIONS, dtype=torch.float64),
        torch.tensor(POSITIONS, dtype=torch.float32),
        torch.tensor([-4, -1, 0, 3, 9]),  # integer tensor, negative included
        np.array([-4, 0, 9]),
    ],
    ids=["list", "tuple", "ndarray64", "ndarray32", "tensor64", "tensor32", "int-tensor", "int-ndarray"],
)
def test_accepts_sequences_arrays_and_tensors_of_positions(positions):
    pe = sinusoidal_encoding(positions, 10, dtype=torch.float64)
    as_floats = np.asarray(positions.tolist() if isinstance(positions, torch.Tensor) else positions, dtype=np.float64)
    assert pe.shape == (len(as_floats), 10)
    np.testing.assert_allclose(pe.numpy(), reference_pe(as_floats, 10), rtol=0, atol=1e-12)


def test_tensor_positions_with_grad_are_accepted():
    t = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    pe = sinusoidal_encoding(t, 4, dtype=torch.float64)
    np.testing.assert_allclose(pe.numpy(), reference_pe([0.5, 1.5], 4), atol=1e-12)


# --- the formula -----------------------------------------------------------------------------

@FAST
@given(positions=st.lists(reals, min_size=1, max_size=12), d=even_d, base=bases)
def test_interleaved_matches_independent_numpy_formula(positions, d, base):
    pe = sinusoidal_encoding(torch.tensor(positions, dtype=torch.float64), d, base=base, dtype=torch.float64)
    np.testing.assert_allclose(pe.numpy(), reference_pe(positions, d, base), rtol=0, atol=1e-9)


@FAST
@given(positions=st.lists(reals, min_size=1, max_size=12), d=even_d, base=bases)
def test_halves_is_the_same_code_with_sines_first_then_cosines(positions, d, base):
    t = torch.tensor(positions, dtype=torch.float64)
    inter = sinusoidal_encoding(t, d, base=base, dtype=torch.float64)
    halves = sinusoidal_encoding(t, d, base=base, layout="halves", dtype=torch.float64)
    half = d // 2
    torch.testing.assert_close(halves[:, :half], inter[:, 0::2], rtol=0, atol=0)
    torch.testing.assert_close(halves[:, half:], inter[:, 1::2], rtol=0, atol=0)
    # equivalently: one column permutation maps halves onto interleaved
    perm = torch.stack([torch.arange(half), torch.arange(half, d)], dim=1).reshape(-1)
    assert sorted(perm.tolist()) == list(range(d))
    torch.testing.assert_close(halves[:, perm], inter, rtol=0, atol=0)
    # and pair_columns says where each half lives
    s, c = pair_columns(d, "halves")
    omega = frequencies(d, base=base)
    torch.testing.assert_close(halves[:, s], torch.sin(t[:, None] * omega), rtol=0, atol=1e-12)
    torch.testing.assert_close(halves[:, c], torch.cos(t[:, None] * omega), rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_published_dot_products(dtype):
    pe = sinusoidal_encoding([5, 6, 10, 105, 106], 16, dtype=dtype)
    dot = lambda a, b: round(float(pe[a] @ pe[b]), 4)  # noqa: E731
    assert dot(3, 4) == 7.4852  # PE(105)·PE(106)
    assert dot(0, 1) == 7.4852  # PE(5)·PE(6)
    assert dot(0, 2) == 6.1370  # PE(5)·PE(10)


@FAST
@given(
    t=st.floats(min_value=-1000, max_value=1000, allow_nan=False),
    k=st.floats(min_value=-1000, max_value=1000, allow_nan=False),
    d=even_d,
)
def test_dot_product_depends_only_on_offset(t, k, d):
    pe = sinusoidal_encoding(torch.tensor([t, t + k, 0.0, k], dtype=torch.float64), d, dtype=torch.float64)
    omega = frequencies(d)
    expected = float(torch.cos(omega * k).sum())
    assert float(pe[0] @ pe[1]) == pytest.approx(expected, abs=1e-8)
    assert float(pe[2] @ pe[3]) == pytest.approx(expected, abs=1e-8)


@FAST
@given(positions=st.lists(reals, min_size=1, max_size=12), d=even_d, base=bases,
       layout=st.sampled_from(["interleaved", "halves"]))
def test_every_row_has_norm_sqrt_half_d(positions, d, base, layout):
    pe = sinusoidal_encoding(positions, d, base=base, layout=layout, dtype=torch.float64)
    np.testing.assert_allclose(pe.norm(dim=1).numpy(), math.sqrt(d / 2), rtol=1e-12)


# --- frequencies and pair_columns ------------------------------------------------------------

@FAST
@given(d=even_d, base=bases)
def test_frequencies_formula(d, base):
    omega = frequencies(d, base=base)
    assert omega.shape == (d // 2,)
    assert omega.dtype == torch.float64
    assert float(omega[0]) == 1.0
    expected = np.power(base, -2.0 * np.arange(d // 2) / d)
    np.testing.assert_allclose(omega.numpy(), expected, rtol=1e-12)
    assert bool((omega[1:] < omega[:-1]).all())  # strictly decreasing for base > 1


@pytest.mark.parametrize("d", [4, 16, 64, 512])
def test_longest_wavelength_is_one_rung_short_of_base_2pi(d):
    """The paper's ladder stops at 2π·base^((d-2)/d), a factor base^(2/d) short of base·2π (3.16
    at d = 16, lesson 03); the tensor2tensor spacing reaches base·2π exactly."""
    base = 10_000.0
    longest = 2 * math.pi / frequencies(d, base=base)[-1].item()
    assert base * 2 * math.pi / longest == pytest.approx(base ** (2 / d), rel=1e-12)
    t2t = 2 * math.pi / frequencies(d, base=base, spacing="tensor2tensor")[-1].item()
    assert t2t == pytest.approx(base * 2 * math.pi, rel=1e-12)
    if d == 16:
        assert base * 2 * math.pi / longest == pytest.approx(math.sqrt(10), rel=1e-12)


def test_frequencies_dtype_keyword():
    assert frequencies(8, dtype=torch.float32).dtype == torch.float32


def test_pair_columns_values():
    s, c = pair_columns(8)
    assert s.tolist() == [0, 2, 4, 6] and c.tolist() == [1, 3, 5, 7]
    s, c = pair_columns(8, "halves")
    assert s.tolist() == [0, 1, 2, 3] and c.tolist() == [4, 5, 6, 7]


@FAST
@given(d=even_d, layout=st.sampled_from(["interleaved", "halves"]))
def test_pair_columns_partition_the_columns(d, layout):
    s, c = pair_columns(d, layout)
    assert len(s) == len(c) == d // 2
    assert sorted(s.tolist() + c.tolist()) == list(range(d))


# --- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "d_model, error",
    [(3, ValueError), (7, ValueError), (0, ValueError), (-2, ValueError), (-3, ValueError),
     (4.0, TypeError), (True, TypeError), ("8", TypeError), (None, TypeError)],
)
@pytest.mark.parametrize("fn", [
    lambda d: sinusoidal_encoding(3, d),
    lambda d: frequencies(d),
    lambda d: pair_columns(d),
], ids=["sinusoidal_encoding", "frequencies", "pair_columns"])
def test_bad_d_model(fn, d_model, error):
    with pytest.raises(error, match="d_model"):
        fn(d_model)


@pytest.mark.parametrize("positions", [[[0.0, 1.0], [2.0, 3.0]], [[0.0, 1.0], [2.0]], torch.zeros(2, 3),
                                       np.zeros((1, 1)), torch.tensor(3.0)])
def test_positions_must_be_1d(positions):
    with pytest.raises(ValueError, match="positions"):
        sinusoidal_encoding(positions, 4)


def test_negative_n():
    with pytest.raises(ValueError, match="positions"):
        sinusoidal_encoding(-1, 4)


@pytest.mark.parametrize("positions", [[0.0, float("nan")], torch.tensor([float("nan")]),
                                       np.array([1.0, np.inf]), [float("-inf")]])
def test_non_finite_positions(positions):
    with pytest.raises(ValueError, match="positions"):
        sinusoidal_encoding(positions, 4)


@pytest.mark.parametrize(
    "positions",
    [
        "abc",
        b"ab",
        ["a", "b"],
        ["1.5", "2"],  # numeric strings are still strings
        [True, False],
        np.array([True, False]),
        np.array([1 + 2j, 3]),
        [1.0, None],
        True,
        5.0,
        None,
        {1, 2},
        torch.tensor([True, False]),
        torch.tensor([1 + 1j]),
    ],
)
def test_non_real_positions_raise_type_error(positions):
    with pytest.raises(TypeError, match="positions"):
        sinusoidal_encoding(positions, 4)


@pytest.mark.parametrize("layout", ["interleave", "Halves", "", None, 0])
def test_bad_layout(layout):
    with pytest.raises(ValueError, match="layout"):
        sinusoidal_encoding(3, 4, layout=layout)
    with pytest.raises(ValueError, match="layout"):
        pair_columns(4, layout)


@pytest.mark.parametrize("base", [0, -1.0, -10_000, float("nan"), float("inf")])
def test_bad_base(base):
    with pytest.raises(ValueError, match="base"):
        sinusoidal_encoding(3, 4, base=base)
    with pytest.raises(ValueError, match="base"):
        frequencies(4, base=base)


@pytest.mark.parametrize("base", ["10000", True, None])
def test_base_of_wrong_type(base):
    with pytest.raises(TypeError, match="base"):
        sinusoidal_encoding(3, 4, base=base)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool, torch.complex64])
def test_non_float_dtype(dtype):
    with pytest.raises(ValueError, match="dtype"):
        sinusoidal_encoding(3, 4, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", np.float32, None])
def test_dtype_not_a_torch_dtype(dtype):
    with pytest.raises(TypeError, match="dtype"):
        sinusoidal_encoding(3, 4, dtype=dtype)


def test_huge_n_refused():
    with pytest.raises(ValueError, match="positions"):
        sinusoidal_encoding(10**9, 16)
    with pytest.raises(ValueError):
        sinusoidal_encoding(10**7, 64)  # n fits, n * d_model does not


# --- "refused before allocating", checked under a real memory cap ----------------------------
# The address space is capped at ~1 GiB above what the process already uses while the call runs
# (and restored afterwards), so a multi-GiB allocation fails with RuntimeError instead of eating
# the machine's memory, and a size check that comes first shows up as a ValueError.

@contextlib.contextmanager
def _address_space_cap(extra_bytes: int = 2**30):
    resource = pytest.importorskip("resource")
    try:
        with open("/proc/self/status") as status:
            vm_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize"))
    except (OSError, StopIteration):
        pytest.skip("needs /proc/self/status")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = vm_kib * 1024 + extra_bytes
    if hard != resource.RLIM_INFINITY and hard < cap:
        pytest.skip("hard address-space limit too low")
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _outcome(call) -> tuple[str, str]:
    with _address_space_cap():
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - we report what happened
            return type(exc).__name__, str(exc)
    return "returned", ""


def test_huge_n_refused_before_allocating():
    kind, message = _outcome(lambda: sinusoidal_encoding(10**9, 16))  # 8 GB of positions if allocated
    assert kind == "ValueError", message
    assert "positions" in message


@pytest.mark.parametrize("call", [
    lambda: sinusoidal_encoding(0, 10**9),
    lambda: sinusoidal_encoding([], 10**9),
    lambda: frequencies(10**9),
    lambda: pair_columns(10**9),
    lambda: sinusoidal_encoding(1, 10**9),
], ids=["n=0", "empty-list", "frequencies", "pair_columns", "n=1"])
def test_huge_d_model_refused_before_allocating(call):
    # With no positions the code has n * d_model = 0 numbers, but frequencies and pair_columns
    # would still allocate d_model / 2 numbers each (GBs for d_model = 10**9).
    kind, message = _outcome(call)
    assert kind == "ValueError", f"{kind}: {message[:200]}"
    assert "d_model" in message
