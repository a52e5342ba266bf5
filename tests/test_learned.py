"""Tests for course_utils.learned: add_learned_code, cosine_similarity_matrix, neighbour_similarity,
far_similarity, initialise_table."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import (ModelConfig, TinyTransformer, add_learned_code, cosine_similarity_matrix, far_similarity,
                          initialise_table, neighbour_similarity)

F64 = torch.float64


# --- add_learned_code ------------------------------------------------------------------------

def test_add_learned_code_adds_row_t_to_token_t():
    x = torch.randn(3, 5, 4, dtype=F64)
    table = torch.randn(8, 4, dtype=F64)
    out = add_learned_code(x, table)
    assert out.shape == x.shape
    for b in range(3):
        for t in range(5):
            assert torch.equal(out[b, t], x[b, t] + table[t])


def test_add_learned_code_accepts_one_sequence_and_full_length():
    x = torch.randn(6, 2)
    table = torch.randn(6, 2)
    assert torch.equal(add_learned_code(x, table), x + table)


def test_add_learned_code_is_what_the_model_does():
    model = TinyTransformer(ModelConfig(vocab_size=10, d_model=8, n_heads=2, max_len=12, position="learned"), seed=0)
    tokens = torch.randint(0, 10, (2, 7), generator=torch.Generator().manual_seed(0))
    expected = add_learned_code(model.token_embedding(tokens), model.position.table.weight)
    assert torch.equal(model.embed(tokens), expected)


@pytest.mark.parametrize("x, table, name, error", [
    ([[1.0]], torch.zeros(2, 1), "x", TypeError),
    (torch.zeros(2, 1), [[1.0]], "table", TypeError),
    (torch.zeros(3), torch.zeros(4, 3), "x", ValueError),
    (torch.zeros(1, 2, 3, 4), torch.zeros(5, 4), "x", ValueError),
    (torch.zeros(2, 3), torch.zeros(4, 5), "table", ValueError),
    (torch.zeros(5, 3), torch.zeros(4, 3), "max_len", ValueError),
    (torch.zeros(2, 3, dtype=torch.long), torch.zeros(4, 3), "x", TypeError),
    (torch.full((2, 3), float("nan")), torch.zeros(4, 3), "x", ValueError),
])
def test_add_learned_code_errors_name_the_argument(x, table, name, error):
    with pytest.raises(error, match=name):
        add_learned_code(x, table)


# --- cosine_similarity_matrix ------------------------------------------------------------------

def test_cosine_similarity_matrix_matches_torch():
    table = torch.randn(7, 5, dtype=F64) * torch.tensor([[0.1], [1.0], [5.0], [2.0], [0.3], [1.0], [9.0]], dtype=F64)
    expected = torch.nn.functional.cosine_similarity(table[:, None, :], table[None, :, :], dim=-1)
    assert torch.allclose(cosine_similarity_matrix(table), expected, atol=1e-12)


def test_cosine_similarity_matrix_known_values():
    table = torch.tensor([[1.0, 0.0], [0.0, 3.0], [-2.0, 0.0], [1.0, 1.0]], dtype=F64)
    sim = cosine_similarity_matrix(table)
    r = 1 / math.sqrt(2)
    expected = torch.tensor([[1, 0, -1, r], [0, 1, 0, r], [-1, 0, 1, -r], [r, r, -r, 1]], dtype=F64)
    assert torch.allclose(sim, expected, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 8), d=st.integers(1, 6), seed=st.integers(0, 10_000),
       scale=st.floats(1e-2, 1e2))
def test_cosine_similarity_matrix_properties(n, d, seed, scale):
    table = torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=F64) * scale
    sim = cosine_similarity_matrix(table)
    assert sim.shape == (n, n)
    assert torch.allclose(sim, sim.T, atol=1e-12)
    assert torch.allclose(torch.diagonal(sim), torch.ones(n, dtype=F64), atol=1e-12)
    assert bool((sim.abs() <= 1 + 1e-12).all())
    # scaling rows does not change cosines
    assert torch.allclose(cosine_similarity_matrix(table * torch.arange(1, n + 1, dtype=F64)[:, None]), sim, atol=1e-10)


@pytest.mark.parametrize("table, error", [
    ([[1.0, 2.0]], TypeError),
    (torch.zeros(3), ValueError),
    (torch.tensor([[1.0, 0.0], [0.0, 0.0]]), ValueError),
])
def test_cosine_similarity_matrix_errors_name_the_argument(table, error):
    with pytest.raises(error, match="table"):
        cosine_similarity_matrix(table)


# --- neighbour_similarity and far_similarity ---------------------------------------------------

def test_neighbour_similarity_is_the_mean_of_one_diagonal():
    sim = torch.arange(16.0).reshape(4, 4)
    assert neighbour_similarity(sim, 1) == pytest.approx((1 + 6 + 11) / 3)
    assert neighbour_similarity(sim, -1) == pytest.approx((4 + 9 + 14) / 3)
    assert neighbour_similarity(sim, 0) == pytest.approx((0 + 5 + 10 + 15) / 4)
    assert neighbour_similarity(sim, 3) == pytest.approx(3.0)
    assert neighbour_similarity(sim) == neighbour_similarity(sim, 1)
    assert isinstance(neighbour_similarity(sim, 1), float)


def test_far_similarity_is_the_mean_over_far_pairs():
    sim = torch.arange(16.0).reshape(4, 4)
    # pairs with |s - t| >= 2: (0,2) 2, (0,3) 3, (1,3) 7, (2,0) 8, (3,0) 12, (3,1) 13
    assert far_similarity(sim, 2) == pytest.approx((2 + 3 + 7 + 8 + 12 + 13) / 6)
    assert far_similarity(sim, 3) == pytest.approx((3 + 12) / 2)
    assert far_similarity(sim, 1) == pytest.approx((sim.sum() - torch.diagonal(sim).sum()).item() / 12)


def test_sinusoidal_code_is_banded_by_these_measures():
    from course_utils import sinusoidal_encoding

    sim = cosine_similarity_matrix(sinusoidal_encoding(16, 32, dtype=F64))
    assert neighbour_similarity(sim, 1) > far_similarity(sim, 5) + 0.1


@pytest.mark.parametrize("call, name, error", [
    (lambda: neighbour_similarity([[1.0]], 0), "similarity", TypeError),
    (lambda: neighbour_similarity(torch.zeros(2, 3), 1), "similarity", ValueError),
    (lambda: neighbour_similarity(torch.zeros(3, 3), 3), "offset", ValueError),
    (lambda: neighbour_similarity(torch.zeros(3, 3), -3), "offset", ValueError),
    (lambda: neighbour_similarity(torch.zeros(3, 3), 1.5), "offset", TypeError),
    (lambda: far_similarity(torch.zeros(3, 4), 1), "similarity", ValueError),
    (lambda: far_similarity(torch.zeros(3, 3), 0), "min_offset", ValueError),
    (lambda: far_similarity(torch.zeros(3, 3), 3), "min_offset", ValueError),
    (lambda: far_similarity(torch.zeros(3, 3), "2"), "min_offset", TypeError),
])
def test_similarity_errors_name_the_argument(call, name, error):
    with pytest.raises(error, match=name):
        call()


# --- initialise_table --------------------------------------------------------------------------

def _learned(seed=0):
    return TinyTransformer(ModelConfig(vocab_size=10, d_model=16, n_heads=2, max_len=40, position="learned"),
                           seed=seed)


def test_initialise_table_sets_the_scale_reproducibly():
    a, b = _learned(0), _learned(1)
    initialise_table(a, std=1.0, seed=3)
    initialise_table(b, std=1.0, seed=3)
    assert torch.equal(a.position.table.weight, b.position.table.weight)
    assert a.position.table.weight.std().item() == pytest.approx(1.0, abs=0.1)
    assert a.position.table.weight.requires_grad
    initialise_table(a, std=0.5, seed=3)
    assert torch.allclose(a.position.table.weight, 0.5 * b.position.table.weight)


def test_initialise_table_leaves_the_global_random_state_alone():
    model = _learned()
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    initialise_table(model, std=1.0, seed=0)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("call, name, error", [
    (lambda: initialise_table(torch.nn.Linear(2, 2), std=1.0, seed=0), "model", TypeError),
    (lambda: initialise_table(TinyTransformer(ModelConfig(vocab_size=4, d_model=8)), std=1.0, seed=0),
     "model", ValueError),
    (lambda: initialise_table(_learned(), std=0.0, seed=0), "std", ValueError),
    (lambda: initialise_table(_learned(), std=1.0, seed=-1), "seed", ValueError),
])
def test_initialise_table_errors_name_the_argument(call, name, error):
    with pytest.raises(error, match=name):
        call()
