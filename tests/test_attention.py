"""Tests for course_utils.attention: attention and causal_mask."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import attention, causal_mask

FAST = settings(max_examples=examples(50), deadline=None, database=None)
F64 = torch.float64


def randn(*shape, seed=0, dtype=F64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def qkv(batch, n_q, n_k, d_k, d_v, seed=0, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*batch, n_q, d_k, generator=g, dtype=dtype),
            torch.randn(*batch, n_k, d_k, generator=g, dtype=dtype),
            torch.randn(*batch, n_k, d_v, generator=g, dtype=dtype))


# --- shapes and the formula --------------------------------------------------------------------

@pytest.mark.parametrize("batch", [(), (2,), (3, 2)])
@pytest.mark.parametrize("n_q, n_k, d_k, d_v", [(4, 4, 3, 2), (1, 5, 2, 7), (6, 2, 1, 1)])
def test_shapes_and_rows_sum_to_one(batch, n_q, n_k, d_k, d_v):
    q, k, v = qkv(batch, n_q, n_k, d_k, d_v)
    out, w = attention(q, k, v)
    assert out.shape == (*batch, n_q, d_v)
    assert w.shape == (*batch, n_q, n_k)
    assert out.dtype == w.dtype == F64
    torch.testing.assert_close(w.sum(-1), torch.ones(*batch, n_q, dtype=F64), rtol=0, atol=1e-12)
    assert bool((w >= 0).all())
    torch.testing.assert_close(out, w @ v, rtol=0, atol=0)


def test_matches_explicit_formula():
    q, k, v = qkv((), 5, 6, 4, 3, seed=3)
    expected_w = torch.softmax(q @ k.T / math.sqrt(4), dim=-1)
    out, w = attention(q, k, v)
    torch.testing.assert_close(w, expected_w, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out, expected_w @ v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("batch", [(), (2,), (2, 3)])
@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_agrees_with_torch_sdpa(batch, dtype):
    q, k, v = qkv(batch, 5, 7, 4, 3, seed=1, dtype=dtype)
    out, _ = attention(q, k, v)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), **tol)


@pytest.mark.parametrize("batch", [(), (2,), (2, 3)])
@pytest.mark.parametrize("full_mask", [False, True])
def test_agrees_with_torch_sdpa_with_a_boolean_mask(batch, full_mask):
    q, k, v = qkv(batch, 6, 6, 4, 3, seed=2)
    random_mask = randn(6, 6, seed=9) > 0
    random_mask |= torch.eye(6, dtype=torch.bool)  # every query keeps at least one key
    for mask in (causal_mask(6), random_mask):
        if full_mask:
            mask = mask.expand(*batch, 6, 6).clone()
        out, w = attention(q, k, v, mask=mask)
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), rtol=1e-10, atol=1e-10)
        assert bool((w.masked_select(~mask.expand_as(w)) == 0).all())  # no weight on a blocked key
        torch.testing.assert_close(w.sum(-1), torch.ones(*batch, 6, dtype=F64), rtol=0, atol=1e-12)


def test_rectangular_mask_with_more_keys_than_queries():
    q, k, v = qkv((), 2, 5, 3, 2, seed=4)
    mask = torch.tensor([[True, False, True, False, False], [False, False, False, False, True]])
    out, w = attention(q, k, v, mask=mask)
    assert bool((w[~mask] == 0).all())
    torch.testing.assert_close(out[1], v[4], rtol=0, atol=1e-12)  # the only key it may see
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), rtol=1e-10, atol=1e-10)


# --- permutation equivariance ------------------------------------------------------------------

@FAST
@given(n=st.integers(1, 8), d=st.integers(1, 6), d_v=st.integers(1, 4), seed=st.integers(0, 2**31 - 1),
       data=st.data())
def test_permutation_equivariance(n, d, d_v, seed, data):
    q, k, v = qkv((), n, n, d, d_v, seed=seed)
    perm = data.draw(st.permutations(range(n)))
    p = torch.eye(n, dtype=F64)[list(perm)]
    out, w = attention(q, k, v)
    out_p, w_p = attention(p @ q, p @ k, p @ v)
    torch.testing.assert_close(out_p, p @ out, rtol=0, atol=1e-10)
    torch.testing.assert_close(w_p, p @ w @ p.T, rtol=0, atol=1e-10)


@pytest.mark.parametrize("seed", range(12))
def test_permutation_equivariance_breaks_under_the_causal_mask(seed):
    n = 3 + seed % 6
    q, k, v = qkv((), n, n, 2 + seed % 4, 3, seed=seed)
    p = torch.eye(n, dtype=F64).flip(0)  # reverse the order
    mask = causal_mask(n)
    out, w = attention(q, k, v, mask=mask)
    out_p, w_p = attention(p @ q, p @ k, p @ v, mask=mask)
    assert (out_p - p @ out).abs().max().item() > 1e-3
    assert (w_p - p @ w @ p.T).abs().max().item() > 1e-3


# --- causal_mask -----------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_causal_mask_is_lower_triangular_bool(n):
    m = causal_mask(n)
    assert m.dtype == torch.bool
    assert m.shape == (n, n)
    for i in range(n):
        for j in range(n):
            assert bool(m[i, j]) == (j <= i)


def test_causal_mask_first_query_sees_only_key_zero():
    q, k, v = qkv((2,), 5, 5, 3, 4, seed=5)
    out, w = attention(q, k, v, mask=causal_mask(5))
    assert torch.equal(w[:, 0], torch.tensor([1.0, 0, 0, 0, 0], dtype=F64).expand(2, 5))
    torch.testing.assert_close(out[:, 0], v[:, 0], rtol=0, atol=0)
    assert bool((w.triu(1) == 0).all())  # nobody attends to a later key


def test_causal_mask_accepts_integer_like_n():
    assert torch.equal(causal_mask(torch.tensor(3)), causal_mask(3))


@pytest.mark.parametrize("n", [-1, -10])
def test_causal_mask_negative(n):
    with pytest.raises(ValueError, match=r"\bn\b"):
        causal_mask(n)


@pytest.mark.parametrize("n", [2.0, 2.5, "3", None, True])
def test_causal_mask_non_integer(n):
    with pytest.raises(TypeError, match=r"\bn\b"):
        causal_mask(n)


def test_causal_mask_huge_refused():
    with pytest.raises(ValueError):
        causal_mask(10**6)


# --- errors ----------------------------------------------------------------------------------

def _bad_inputs():
    q, k, v = qkv((), 3, 4, 2, 5)
    return [
        pytest.param((q, randn(4, 3), v), ValueError, r"\bq\b.*\bk\b", id="q-k-last-dim"),
        pytest.param((q, k, randn(3, 5)), ValueError, r"\bk\b.*\bv\b", id="k-v-n_k"),
        pytest.param((randn(2, 3, 2), randn(3, 4, 2), randn(3, 4, 5)), ValueError, r"\bq\b.*\bk\b.*\bv\b",
                     id="batch-mismatch"),
        pytest.param((randn(1, 3, 2), randn(2, 4, 2), randn(2, 4, 5)), ValueError, "batch", id="no-broadcasting"),
        pytest.param((randn(3), k, v), ValueError, r"\bq\b", id="q-1d"),
        pytest.param((q, randn(2), v), ValueError, r"\bk\b", id="k-1d"),
        pytest.param((q, k, randn(5)), ValueError, r"\bv\b", id="v-1d"),
        pytest.param((q.long(), k, v), TypeError, r"\bq\b", id="q-int"),
        pytest.param((q, k.int(), v), TypeError, r"\bk\b", id="k-int"),
        pytest.param((q, k, v.bool()), TypeError, r"\bv\b", id="v-bool"),
        pytest.param((q.float(), k, v), TypeError, "dtype", id="mixed-dtypes"),
        pytest.param((q.tolist(), k, v), TypeError, r"\bq\b", id="q-list"),
        pytest.param((q, k.numpy(), v), TypeError, r"\bk\b", id="k-ndarray"),
        pytest.param((q, k, None), TypeError, r"\bv\b", id="v-none"),
        pytest.param((q, k.masked_fill(k > 0, float("nan")), v), ValueError, r"\bk\b", id="k-nan"),
        pytest.param((randn(3, 0), randn(4, 0), v), ValueError, "d_k", id="empty-d_k"),
    ]


@pytest.mark.parametrize("args, error, pattern", _bad_inputs())
def test_bad_inputs_name_the_argument(args, error, pattern):
    with pytest.raises(error, match=pattern):
        attention(*args)


@pytest.mark.parametrize(
    "mask, error",
    [
        (torch.ones(3, 4), TypeError),
        (torch.ones(3, 4, dtype=torch.int64), TypeError),
        (torch.ones(3, 4, dtype=torch.uint8), TypeError),
        ([[True] * 4] * 3, TypeError),
        (torch.ones(4, 3, dtype=torch.bool), ValueError),
        (torch.ones(3, 3, dtype=torch.bool), ValueError),
        (torch.ones(4, dtype=torch.bool), ValueError),
        (torch.ones(1, 3, 4, dtype=torch.bool), ValueError),  # no broadcasting of the mask either
    ],
    ids=["float", "int64", "uint8", "list", "transposed", "square", "1d", "extra-dim"],
)
def test_bad_mask(mask, error):
    q, k, v = qkv((), 3, 4, 2, 5)
    with pytest.raises(error, match="mask"):
        attention(q, k, v, mask=mask)


def test_float_mask_message_suggests_bool():
    q, k, v = qkv((), 3, 4, 2, 5)
    with pytest.raises(TypeError, match=r"\.bool\(\)"):
        attention(q, k, v, mask=torch.ones(3, 4))


@pytest.mark.parametrize("row", [0, 2])
def test_mask_row_all_false(row):
    q, k, v = qkv((2,), 3, 4, 2, 5)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[row] = False
    with pytest.raises(ValueError, match="mask"):
        attention(q, k, v, mask=mask)
    batched = torch.ones(2, 3, 4, dtype=torch.bool)
    batched[1, row] = False
    with pytest.raises(ValueError, match="mask"):
        attention(q, k, v, mask=batched)


def test_zero_keys_are_refused():
    with pytest.raises(ValueError, match="at least one key"):
        attention(torch.randn(2, 3), torch.randn(0, 3), torch.randn(0, 4))
