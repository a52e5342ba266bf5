"""Tests for course_utils.combine (lesson 05): block_parameters, cosine_spread, effective_rank,
principal_directions, principal_angles, share_in_subspace, nearest_token_accuracy, token_recovery
(its logistic and least-squares probes)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import (
    ModelConfig,
    TinyTransformer,
    block_parameters,
    cosine_spread,
    count_parameters,
    effective_rank,
    linear_probe,
    logistic_probe,
    nearest_token_accuracy,
    principal_angles,
    principal_directions,
    share_in_subspace,
    sinusoidal_encoding,
    token_recovery,
)

F64 = torch.float64


# --- block_parameters ---------------------------------------------------------------------

@pytest.mark.parametrize("d_model, n_heads, d_ff", [(32, 2, None), (40, 2, None), (8, 1, 16), (16, 4, 24)])
def test_block_parameters_matches_the_model(d_model, n_heads, d_ff):
    model = TinyTransformer(ModelConfig(vocab_size=5, d_model=d_model, n_heads=n_heads, d_ff=d_ff), seed=0)
    assert block_parameters(d_model, d_ff) == count_parameters(model.blocks[0])


def test_block_parameters_closed_form_and_bert():
    for d in (2, 10, 64):
        assert block_parameters(d) == 12 * d * d + 13 * d
    assert block_parameters(768, 3072) == 7_087_872  # one BERT-base layer


@pytest.mark.parametrize("args, error, name", [
    ((0,), ValueError, "d_model"), ((2.5,), TypeError, "d_model"), ((True,), TypeError, "d_model"),
    ((8, 0), ValueError, "d_ff"), ((8, "4"), TypeError, "d_ff"),
])
def test_block_parameters_rejects_bad_arguments(args, error, name):
    with pytest.raises(error, match=name):
        block_parameters(*args)


# --- cosine_spread ------------------------------------------------------------------------

@pytest.mark.parametrize("d", [4, 16, 100])
def test_cosine_spread_is_about_one_over_root_d(d):
    assert cosine_spread(d, 4000, seed=1) == pytest.approx(1 / math.sqrt(d), rel=0.08)


def test_cosine_spread_is_reproducible_and_leaves_the_global_seed_alone():
    torch.manual_seed(3)
    expected_next = torch.rand(1)
    torch.manual_seed(3)
    assert cosine_spread(8, 100, seed=2) == cosine_spread(8, 100, seed=2)
    assert torch.equal(torch.rand(1), expected_next)


def test_cosine_spread_d_one_is_plus_or_minus_one():
    assert cosine_spread(1, 1000) == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("kwargs, error, name", [
    ({"d": 0}, ValueError, "d"), ({"d": 3.0}, TypeError, "d"), ({"d": 4, "n_pairs": 1}, ValueError, "n_pairs"),
    ({"d": 4, "seed": -1}, ValueError, "seed"), ({"d": 10**6, "n_pairs": 10**3}, ValueError, "random vectors"),
])
def test_cosine_spread_rejects_bad_arguments(kwargs, error, name):
    with pytest.raises(error, match=name):
        cosine_spread(**kwargs)


# --- effective_rank and principal_directions ----------------------------------------------

def test_effective_rank_of_known_spectra():
    diagonal = torch.diag(torch.tensor([3.0, 2.0, 1.0, 0.0], dtype=F64))  # energies 9, 4, 1, 0 of 14
    assert effective_rank(diagonal, 9 / 14) == 1
    assert effective_rank(diagonal, 0.9) == 2
    assert effective_rank(diagonal, 0.99) == 3
    assert effective_rank(diagonal, 1.0) == 3
    assert effective_rank(torch.ones(5, 7), 0.99) == 1


def test_effective_rank_of_the_sinusoidal_code_saturates():
    ranks = [effective_rank(sinusoidal_encoding(64, d, dtype=F64)) for d in (16, 64, 256, 1024)]
    assert ranks == sorted(ranks) and ranks[0] < 16 and ranks[-1] <= 64 and ranks[-1] == ranks[-2]


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(1, 8), st.integers(1, 8), st.integers(0, 2**16))
def test_principal_directions_are_orthonormal_and_hold_the_energy(n, d, seed):
    matrix = torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=F64)
    directions = principal_directions(matrix, 0.9)
    r = directions.shape[0]
    assert r == effective_rank(matrix, 0.9) and directions.shape[1] == d
    assert torch.allclose(directions @ directions.T, torch.eye(r, dtype=F64), atol=1e-10)
    kept = ((matrix @ directions.T) ** 2).sum() / (matrix**2).sum()
    assert kept >= 0.9 - 1e-12


@pytest.mark.parametrize("fn", [effective_rank, principal_directions])
@pytest.mark.parametrize("args, error, name", [
    ((torch.ones(3),), ValueError, "matrix"), (([[1.0]],), TypeError, "matrix"),
    ((torch.ones(2, 2, dtype=torch.long),), TypeError, "matrix"), ((torch.zeros(3, 3),), ValueError, "matrix"),
    ((torch.ones(2, 2), 0.0), ValueError, "energy"), ((torch.ones(2, 2), 1.5), ValueError, "energy"),
    ((torch.ones(2, 2), "all"), TypeError, "energy"),
])
def test_rank_functions_reject_bad_arguments(fn, args, error, name):
    with pytest.raises(error, match=name):
        fn(*args)


# --- principal_angles and share_in_subspace -----------------------------------------------

def test_principal_angles_of_known_subspaces():
    e = torch.eye(4, dtype=F64)
    assert torch.allclose(principal_angles(e[:2], e[2:]), torch.tensor([90.0, 90.0], dtype=F64))
    assert torch.allclose(principal_angles(e[:2], e[:2] * 5), torch.zeros(2, dtype=F64), atol=1e-6)
    tilted = torch.tensor([[1.0, 1.0, 0.0, 0.0]], dtype=F64)  # 45° from e0, in span(e0, e1)
    assert torch.allclose(principal_angles(tilted, e[:1]), torch.tensor([45.0], dtype=F64))
    assert torch.allclose(principal_angles(e[:2], torch.cat([e[1:2], e[3:]])), torch.tensor([0.0, 90.0], dtype=F64),
                          atol=1e-6)


def test_principal_angles_ignore_repeated_rows_and_agree_with_scipy_style_formula():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 6)), rng.normal(size=(2, 6))
    qa, _ = np.linalg.qr(a.T)
    qb, _ = np.linalg.qr(b.T)
    expected = np.sort(np.degrees(np.arccos(np.clip(np.linalg.svd(qa.T @ qb, compute_uv=False), -1, 1))))
    got = principal_angles(torch.tensor(np.vstack([a, a[:1]])), torch.tensor(b))
    assert got.shape == (2,)
    assert np.allclose(got.numpy(), expected, atol=1e-8)


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(6, 12), st.integers(0, 2**16))
def test_share_matches_the_angles(k_a, k_b, d, seed):
    generator = torch.Generator().manual_seed(seed)
    vectors = torch.randn(k_a, d, generator=generator, dtype=F64)
    directions = torch.randn(k_b, d, generator=generator, dtype=F64)
    share = share_in_subspace(vectors, directions)
    assert 0.0 <= share <= 1.0 + 1e-12
    assert share_in_subspace(directions, directions) == pytest.approx(1.0)
    angles = principal_angles(vectors, directions)
    assert angles.shape == (min(k_a, k_b),)
    assert bool((angles >= 0).all() and (angles <= 90 + 1e-9).all())


def test_share_of_random_vectors_is_about_r_over_d():
    generator = torch.Generator().manual_seed(0)
    vectors = torch.randn(400, 100, generator=generator, dtype=F64)
    assert share_in_subspace(vectors, torch.eye(100, dtype=F64)[:10]) == pytest.approx(0.1, rel=0.1)


@pytest.mark.parametrize("fn, names", [(principal_angles, ("a", "b")), (share_in_subspace, ("vectors", "directions"))])
def test_subspace_functions_reject_bad_arguments(fn, names):
    first, second = names
    with pytest.raises(ValueError, match="same width"):
        fn(torch.ones(2, 3), torch.ones(2, 4))
    with pytest.raises(TypeError, match=first):
        fn([[1.0]], torch.ones(1, 1))
    with pytest.raises(ValueError, match=second):
        fn(torch.ones(2, 3), torch.ones(3))
    with pytest.raises(ValueError, match="non-zero"):
        fn(torch.ones(2, 3), torch.zeros(2, 3))
    with pytest.raises(ValueError, match=first):
        fn(torch.full((2, 3), float("nan")), torch.ones(2, 3))


# --- token_recovery -----------------------------------------------------------------------

def test_token_recovery_big_tokens_and_tiny_tokens():
    code = sinusoidal_encoding(16, 32, dtype=F64)
    tokens = torch.randn(24, 32, generator=torch.Generator().manual_seed(0), dtype=F64)
    big = token_recovery(10 * tokens, code)
    assert big.nearest_token == 1.0 and big.token_probe == 1.0
    tiny = token_recovery(1e-3 * tokens, code)
    assert tiny.nearest_token < 0.3
    assert tiny.position_probe > big.position_probe


@pytest.mark.parametrize("probe, fit", [("logistic", logistic_probe), ("least_squares", linear_probe)])
def test_token_recovery_probes_are_the_named_probe_on_the_sums(probe, fit):
    generator = torch.Generator().manual_seed(3)
    tokens = torch.randn(6, 8, generator=generator, dtype=F64)
    code = torch.randn(5, 8, generator=generator, dtype=F64)
    sums = (tokens[:, None, :] + code[None, :, :]).reshape(30, 8)  # token-major: row v·5 + t
    token_ids, positions = torch.arange(6).repeat_interleave(5), torch.arange(5).repeat(6)
    result = token_recovery(tokens, code, seed=4, probe=probe)
    assert result.token_probe == fit(sums, token_ids, seed=4).test_accuracy
    assert result.position_probe == fit(sums, positions, seed=4).test_accuracy


def test_token_recovery_uses_the_logistic_probe_by_default():
    code = sinusoidal_encoding(8, 16, dtype=F64)
    tokens = 3 * torch.randn(12, 16, generator=torch.Generator().manual_seed(0), dtype=F64)
    assert token_recovery(tokens, code) == token_recovery(tokens, code, probe="logistic")


def test_token_recovery_nearest_token_by_hand():
    tokens = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=F64)
    code = torch.tensor([[0.0, 0.0], [2.0, 0.0]], dtype=F64)  # position 1 pushes everything onto token 0
    # sums: t0+p0 -> 0 ✓, t0+p1 -> 0 ✓, t1+p0 -> 1 ✓, t1+p1 = (2, 1) -> 0 ✗
    assert token_recovery(tokens, code).nearest_token == 0.75


@pytest.mark.parametrize("args, kwargs, error, name", [
    ((torch.ones(1, 4), torch.ones(3, 4)), {}, ValueError, "at least 2 rows"),
    ((torch.ones(3, 4), torch.ones(3, 5)), {}, ValueError, "same width"),
    ((torch.ones(3, 4), "code"), {}, TypeError, "code"),
    ((torch.ones(3, 4), torch.ones(3, 4)), {"seed": -2}, ValueError, "seed"),
    ((torch.ones(4), torch.ones(3, 4)), {}, ValueError, "tokens"),
    ((torch.ones(3, 4), torch.ones(3, 4)), {"probe": "ridge"}, ValueError, "probe"),
    ((torch.ones(3, 4), torch.ones(3, 4)), {"probe": None}, ValueError, "probe"),
])
def test_token_recovery_rejects_bad_arguments(args, kwargs, error, name):
    with pytest.raises(error, match=name):
        token_recovery(*args, **kwargs)


def test_nearest_token_accuracy_by_hand_and_per_position():
    tokens = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=F64)
    code = torch.tensor([[0.0, 0.0], [2.0, 0.0]], dtype=F64)  # as above: position 1 loses token 1
    assert nearest_token_accuracy(tokens, code).tolist() == [1.0, 0.5]


@given(st.integers(2, 12), st.integers(1, 10), st.integers(1, 8), st.integers(0, 10**6))
@settings(max_examples=examples(40), deadline=None)
def test_nearest_token_accuracy_agrees_with_the_explicit_sums(vocab, n, d, seed):
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randn(vocab, d, generator=generator, dtype=F64)
    code = 3 * torch.randn(n, d, generator=generator, dtype=F64)
    sums = tokens[:, None, :] + code[None, :, :]  # [V, n, d], the way the lesson states it
    expected = ((sums @ tokens.T).argmax(dim=-1) == torch.arange(vocab)[:, None]).double().mean(dim=0)
    assert torch.equal(nearest_token_accuracy(tokens, code), expected)
    if n >= 2:  # token_recovery's probes need two positions
        assert token_recovery(tokens, code).nearest_token == pytest.approx(expected.mean().item())


@pytest.mark.parametrize("args, error, name", [
    ((torch.ones(1, 4), torch.ones(3, 4)), ValueError, "at least 2 rows"),
    ((torch.ones(3, 4), torch.ones(3, 5)), ValueError, "same width"),
    ((torch.ones(3, 4), [[1.0]]), TypeError, "code"),
    ((torch.full((3, 4), float("nan")), torch.ones(3, 4)), ValueError, "tokens"),
])
def test_nearest_token_accuracy_rejects_bad_arguments(args, error, name):
    with pytest.raises(error, match=name):
        nearest_token_accuracy(*args)
