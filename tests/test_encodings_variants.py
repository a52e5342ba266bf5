"""Tests for what lesson 03 added to course_utils.encodings: spacing="tensor2tensor" and
offset_similarity. The default behaviour is covered by test_encodings.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import frequencies, offset_similarity, sinusoidal_encoding

FAST = settings(max_examples=examples(50), deadline=None, database=None)

even_d = st.integers(min_value=1, max_value=64).map(lambda h: 2 * h)
bases = st.floats(min_value=2.0, max_value=1e6, allow_nan=False, allow_infinity=False)
reals = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


def t2t_reference(t, d_model: int, base: float = 10_000.0) -> np.ndarray:
    """tensor2tensor's get_timing_signal_1d, rewritten in NumPy: sines then cosines,
    log-timescale increment log(base) / max(d/2 - 1, 1)."""
    t = np.asarray(t, dtype=np.float64)
    half = d_model // 2
    increment = math.log(base) / max(half - 1, 1)
    inv_timescales = np.exp(-increment * np.arange(half, dtype=np.float64))
    angles = np.outer(t, inv_timescales)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


# --- spacing="tensor2tensor" -------------------------------------------------------------------

@FAST
@given(d=even_d, base=bases)
def test_t2t_frequencies_span_one_to_one_over_base(d, base):
    omega = frequencies(d, base=base, spacing="tensor2tensor")
    assert omega.shape == (d // 2,) and omega.dtype == torch.float64
    assert float(omega[0]) == 1.0
    half = d // 2
    expected = np.power(base, -np.arange(half) / max(half - 1, 1))
    np.testing.assert_allclose(omega.numpy(), expected, rtol=1e-12)
    if half > 1:
        assert float(omega[-1]) == pytest.approx(1 / base, rel=1e-12)  # longest wavelength exactly base·2π
        ratios = omega[1:] / omega[:-1]
        np.testing.assert_allclose(ratios.numpy(), ratios[0].item(), rtol=1e-10)  # geometric


def test_t2t_with_d_model_2_has_the_single_frequency_1():
    assert frequencies(2, spacing="tensor2tensor").tolist() == [1.0]


@FAST
@given(positions=st.lists(reals, min_size=1, max_size=10), d=even_d, base=bases)
def test_t2t_halves_matches_the_tensor2tensor_formula(positions, d, base):
    pe = sinusoidal_encoding(torch.tensor(positions, dtype=torch.float64), d, base=base,
                             layout="halves", spacing="tensor2tensor", dtype=torch.float64)
    np.testing.assert_allclose(pe.numpy(), t2t_reference(positions, d, base), rtol=0, atol=1e-9)


def test_vaswani_is_the_default_spacing():
    torch.testing.assert_close(frequencies(16, spacing="vaswani"), frequencies(16), rtol=0, atol=0)
    torch.testing.assert_close(sinusoidal_encoding(9, 16, spacing="vaswani"), sinusoidal_encoding(9, 16), rtol=0, atol=0)


def test_the_two_spacings_differ_only_in_frequencies():
    assert not torch.allclose(frequencies(16), frequencies(16, spacing="tensor2tensor"))
    assert torch.equal(frequencies(2), frequencies(2, spacing="tensor2tensor"))  # d = 2: both are (1,)
    # the same ladder, stretched: the exponents are 2i/d and i/(d/2 - 1)
    np.testing.assert_allclose(frequencies(16, spacing="tensor2tensor").log().numpy(),
                               frequencies(16).log().numpy() * 8 / 7, rtol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_t2t_dot_products_for_d16(dtype):
    pe = sinusoidal_encoding([5, 6, 10, 105, 106], 16, layout="halves", spacing="tensor2tensor", dtype=dtype)
    dot = lambda a, b: round(float(pe[a] @ pe[b]), 4)  # noqa: E731
    assert dot(0, 1) == 7.5017  # PE(5)·PE(6)
    assert dot(3, 4) == 7.5017  # PE(105)·PE(106)
    assert dot(0, 2) == 6.4420  # PE(5)·PE(10)


@pytest.mark.parametrize("spacing", ["paper", "t2t", "", None, 1, "Vaswani"])
def test_bad_spacing(spacing):
    with pytest.raises(ValueError, match="spacing"):
        frequencies(8, spacing=spacing)
    with pytest.raises(ValueError, match="spacing"):
        sinusoidal_encoding(3, 8, spacing=spacing)
    with pytest.raises(ValueError, match="spacing"):
        offset_similarity(1, 8, spacing=spacing)


# --- offset_similarity ----------------------------------------------------------------------

def test_offset_similarity_published_numbers():
    assert round(float(offset_similarity(1, 16)), 4) == 7.4852
    assert round(float(offset_similarity(5, 16)), 4) == 6.1370
    assert round(float(offset_similarity(1, 16, spacing="tensor2tensor")), 4) == 7.5017
    assert round(float(offset_similarity(5, 16, spacing="tensor2tensor")), 4) == 6.4420


def test_offset_similarity_shapes_and_dtype():
    scalar = offset_similarity(3, 8)
    assert scalar.shape == () and scalar.dtype == torch.float64
    assert offset_similarity(torch.tensor(3), 8).shape == ()
    assert offset_similarity(np.int64(3), 8).shape == ()
    assert offset_similarity(2.5, 8).shape == ()
    assert offset_similarity([0, 1, 2], 8).shape == (3,)
    assert offset_similarity(torch.arange(5), 8).shape == (5,)
    assert offset_similarity(np.array([1.5, -2.0]), 8).shape == (2,)
    assert offset_similarity([], 8).shape == (0,)
    assert float(offset_similarity(0, 8)) == 4.0  # d/2 at k = 0


@FAST
@given(t=reals, k=reals, d=even_d, base=bases, spacing=st.sampled_from(["vaswani", "tensor2tensor"]),
       layout=st.sampled_from(["interleaved", "halves"]))
def test_offset_similarity_is_the_dot_product_at_every_t(t, k, d, base, spacing, layout):
    pe = sinusoidal_encoding([t, t + k], d, base=base, spacing=spacing, layout=layout, dtype=torch.float64)
    assert float(offset_similarity(k, d, base=base, spacing=spacing)) == pytest.approx(float(pe[0] @ pe[1]), abs=1e-8)


@FAST
@given(ks=st.lists(reals, min_size=1, max_size=10), d=even_d)
def test_offset_similarity_matches_a_numpy_sum_of_cosines(ks, d):
    omega = np.power(10_000.0, -2.0 * np.arange(d // 2) / d)
    expected = np.cos(np.outer(ks, omega)).sum(axis=1)
    np.testing.assert_allclose(offset_similarity(ks, d).numpy(), expected, rtol=0, atol=1e-9)
    # even in k, bounded by d/2
    np.testing.assert_allclose(offset_similarity([-k for k in ks], d).numpy(), expected, rtol=0, atol=1e-9)
    assert bool((offset_similarity(ks, d).abs() <= d / 2 + 1e-12).all())


@pytest.mark.parametrize("offsets, error", [
    ("3", TypeError), (None, TypeError), (True, TypeError), ({1, 2}, TypeError), (["a"], TypeError),
    (torch.tensor([True]), TypeError), (1 + 2j, TypeError),
    (float("nan"), ValueError), (float("inf"), ValueError), ([0.0, float("nan")], ValueError),
    ([[1.0, 2.0]], ValueError), (torch.zeros(2, 2), ValueError),
])
def test_offset_similarity_bad_offsets(offsets, error):
    with pytest.raises(error, match="offsets"):
        offset_similarity(offsets, 8)


@pytest.mark.parametrize("d_model, error", [(3, ValueError), (0, ValueError), (4.0, TypeError), (None, TypeError)])
def test_offset_similarity_bad_d_model(d_model, error):
    with pytest.raises(error, match="d_model"):
        offset_similarity(1, d_model)


@pytest.mark.parametrize("base, error", [(0, ValueError), (-2.0, ValueError), (float("nan"), ValueError), ("10", TypeError)])
def test_offset_similarity_bad_base(base, error):
    with pytest.raises(error, match="base"):
        offset_similarity(1, 8, base=base)


def test_offset_similarity_refuses_huge_inputs_before_allocating():
    with pytest.raises(ValueError, match="offset similarities"):
        offset_similarity(torch.zeros(10**6), 2_000)
