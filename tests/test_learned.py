"""Tests for course_utils.learned: add_learned_code, cosine_similarity_matrix, neighbour_similarity,
far_similarity, band_summary, initialise_table, relative_movement, weight_back."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import (ModelConfig, TinyTransformer, add_learned_code, band_summary, cosine_similarity_matrix,
                          far_similarity, initialise_table, neighbour_similarity, relative_movement, weight_back)

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


@settings(max_examples=examples(40), deadline=None)
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


def test_initialise_table_can_redraw_the_token_table():
    a = _learned(0)
    position = a.position.table.weight.detach().clone()
    initialise_table(a, std=0.02, seed=5, table="token")
    tokens = a.token_embedding.weight
    assert tokens.std().item() == pytest.approx(0.02, rel=0.3)
    assert torch.equal(a.position.table.weight, position)  # the position table is left alone
    b = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, n_heads=2, max_len=40), seed=3)  # sinusoidal
    initialise_table(b, std=0.02, seed=5, table="token")
    assert torch.equal(b.token_embedding.weight, tokens)


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
    (lambda: initialise_table(_learned(), std=1.0, seed=0, table="tokens"), "table", ValueError),
    (lambda: initialise_table(_learned(), std=1.0, seed=0, table=None), "table", ValueError),
])
def test_initialise_table_errors_name_the_argument(call, name, error):
    with pytest.raises(error, match=name):
        call()


# --- band_summary ------------------------------------------------------------------------------

def test_band_summary_is_made_of_the_three_similarities():
    table = torch.randn(12, 6, generator=torch.Generator().manual_seed(0), dtype=F64)
    sim = cosine_similarity_matrix(table)
    summary = band_summary(table, min_offset=4)
    assert list(summary) == ["offset 1", "offset 2", "offset >= 4"]
    assert summary["offset 1"] == pytest.approx(neighbour_similarity(sim, 1))
    assert summary["offset 2"] == pytest.approx(neighbour_similarity(sim, 2))
    assert summary["offset >= 4"] == pytest.approx(far_similarity(sim, 4))
    assert list(band_summary(table)) == ["offset 1", "offset 2", "offset >= 5"]


def test_band_summary_tells_a_banded_table_from_a_random_one():
    from course_utils import sinusoidal_encoding

    banded = band_summary(sinusoidal_encoding(16, 32, dtype=F64))
    assert banded["offset 1"] > banded["offset 2"] > banded["offset >= 5"] + 0.1
    noise = band_summary(torch.randn(16, 512, generator=torch.Generator().manual_seed(1), dtype=F64))
    assert all(abs(value) < 0.1 for value in noise.values())


@pytest.mark.parametrize("call, name, error", [
    (lambda: band_summary([[1.0]]), "table", TypeError),
    (lambda: band_summary(torch.ones(2, 3)), "rows", ValueError),
    (lambda: band_summary(torch.randn(5, 3), min_offset=5), "min_offset", ValueError),
    (lambda: band_summary(torch.randn(8, 3), min_offset=0), "min_offset", ValueError),
    (lambda: band_summary(torch.randn(8, 3), min_offset=2.0), "min_offset", TypeError),
])
def test_band_summary_errors_name_the_argument(call, name, error):
    with pytest.raises(error, match=name):
        call()


# --- relative_movement -------------------------------------------------------------------------

def test_relative_movement_is_distance_over_starting_length():
    before = torch.tensor([[3.0, 4.0], [0.0, 2.0], [1.0, 0.0]], dtype=F64)
    after = torch.tensor([[3.0, 4.0], [0.0, 3.0], [-1.0, 0.0]], dtype=F64)
    torch.testing.assert_close(relative_movement(before, after), torch.tensor([0.0, 0.5, 2.0], dtype=F64))


def test_relative_movement_of_a_table_in_a_model_does_not_keep_the_graph():
    model = _learned()
    start = model.position.table.weight.detach().clone()
    out = relative_movement(start, model.position.table.weight * 3)
    assert not out.requires_grad
    torch.testing.assert_close(out, torch.full((40,), 2.0))


@pytest.mark.parametrize("call, name, error", [
    (lambda: relative_movement([[1.0]], torch.ones(1, 1)), "before", TypeError),
    (lambda: relative_movement(torch.ones(1, 1), "x"), "after", TypeError),
    (lambda: relative_movement(torch.ones(2, 2), torch.ones(3, 2)), "after", ValueError),
    (lambda: relative_movement(torch.zeros(2, 2), torch.ones(2, 2)), "before", ValueError),
    (lambda: relative_movement(torch.ones(3), torch.ones(3)), "before", ValueError),
])
def test_relative_movement_errors_name_the_argument(call, name, error):
    with pytest.raises(error, match=name):
        call()


# --- weight_back -------------------------------------------------------------------------------

def test_weight_back_reads_the_model_attention_weights():
    model = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, n_heads=2, n_layers=2, max_len=12,
                                        position="learned"), seed=0)
    tokens = torch.randint(0, 10, (3, 9), generator=torch.Generator().manual_seed(0))
    weights = model(tokens, details=True).attention_weights
    out = weight_back(model, tokens, 2)
    assert out.shape == (2, 2)
    for layer in range(2):
        for head in range(2):
            w = weights[layer][:, head]
            expected = torch.stack([w[:, t, t - 2] for t in range(2, 9)]).mean()
            assert out[layer, head].item() == pytest.approx(expected.item(), rel=1e-5)
    # back = 0 is each query's own token; the weights over all keys sum to 1
    total = sum(weight_back(model, tokens, k) * (9 - k) for k in range(9))
    assert torch.all(total <= 9 + 1e-4)
    assert weight_back(model, tokens).equal(weight_back(model, tokens, 1))
    # first_query: only the queries t >= max(back, first_query) count
    late = weight_back(model, tokens, 2, first_query=5)
    for layer in range(2):
        expected = torch.stack([weights[layer][:, :, t, t - 2] for t in range(5, 9)]).mean(dim=(0, 1))
        assert torch.allclose(late[layer], expected, rtol=1e-5)
    assert weight_back(model, tokens, 2, first_query=1).equal(out)


def test_weight_back_leaves_the_model_mode_alone():
    model = _learned()
    model.train()
    weight_back(model, torch.zeros(1, 4, dtype=torch.long))
    assert model.training


@pytest.mark.parametrize("call, name, error", [
    (lambda: weight_back(torch.nn.Linear(2, 2), torch.zeros(1, 3, dtype=torch.long)), "model", TypeError),
    (lambda: weight_back(_learned(), torch.zeros(1, 3)), "tokens", TypeError),
    (lambda: weight_back(_learned(), torch.zeros(3, dtype=torch.long)), "tokens", ValueError),
    (lambda: weight_back(_learned(), torch.zeros(1, 3, dtype=torch.long), 3), "back", ValueError),
    (lambda: weight_back(_learned(), torch.zeros(1, 3, dtype=torch.long), -1), "back", ValueError),
    (lambda: weight_back(_learned(), torch.zeros(1, 3, dtype=torch.long), 1.0), "back", TypeError),
    (lambda: weight_back(_learned(), torch.zeros(1, 3, dtype=torch.long), first_query=3), "first_query", ValueError),
    (lambda: weight_back(_learned(), torch.zeros(1, 3, dtype=torch.long), first_query=-1), "first_query",
     ValueError),
    (lambda: weight_back(TinyTransformer(ModelConfig(vocab_size=4, d_model=8, n_layers=0)),
                         torch.zeros(1, 3, dtype=torch.long)), "n_layers", ValueError),
])
def test_weight_back_errors_name_the_argument(call, name, error):
    with pytest.raises(error, match=name):
        call()
