"""Lesson 09's claims from training runs hold on other seeds (the lesson uses 0, 1, 2; here 3, 4, 5).

Same configuration as the lesson: no position code, 1 layer, 2 heads, width 32, own_index on
16-token sequences, 150 steps at lr 1e-2 then 30 at 1e-3 (training batches seeded by the seed).
"""

import pytest
import torch

from course_utils import (ModelConfig, TinyTransformer, accuracy_by_position, attention_to_first,
                          bos_weight, evaluate, fit_bos_bias, linear_probe, logistic_probe,
                          make_batch, permutation_gap, setup, train, with_mask)

SEEDS = (3, 4, 5)
CEILING = 2 / 16  # the bidirectional model's best: BOS plus one lucky guess per sequence


def trained(causal: bool, bos: bool, seed: int) -> TinyTransformer:
    config = ModelConfig(vocab_size=8, d_model=32, n_heads=2, n_layers=1, max_len=16,
                         position="none", causal=causal, n_outputs=16)
    model = TinyTransformer(config, seed=seed)
    train(model, "own_index", steps=150, lr=1e-2, lengths=(16, 16), bos=bos, seed=seed,
          progress=False)
    train(model, "own_index", steps=30, lr=1e-3, lengths=(16, 16), bos=bos, seed=seed + 100,
          progress=False)
    return model


@pytest.fixture(scope="module")
def runs():
    setup(0)
    return {seed: {"causal": trained(True, True, seed), "bidirectional": trained(False, True, seed),
                   "no_bos": trained(True, False, seed)} for seed in SEEDS}


def probe_batch(bos=True):
    return make_batch("own_index", batch_size=256, length=16, vocab_size=8,
                      generator=torch.Generator().manual_seed(1), bos=bos)


@pytest.mark.parametrize("seed", SEEDS)
def test_causal_counts_and_bidirectional_stays_at_its_ceiling(runs, seed):
    causal = evaluate(runs[seed]["causal"], "own_index", length=16, bos=True)
    bidirectional = evaluate(runs[seed]["bidirectional"], "own_index", length=16, bos=True)
    # The lesson: "on every seed the causal model counts (0.972 or better)" on its seeds 0-2. On
    # unseen seeds the claim is that it counts: 0.969 on seed 5 on an Intel Xeon (lax mode there).
    assert causal >= 0.96
    assert 0.09 <= bidirectional <= CEILING + 0.02
    by_position = accuracy_by_position(runs[seed]["bidirectional"], "own_index", length=16, bos=True)
    assert by_position[0] >= 0.95                      # BOS is recognisable
    assert 0.7 <= by_position[1:].sum().item() <= 1.3  # about one lucky guess per sequence


@pytest.mark.parametrize("seed", SEEDS)
def test_heads_follow_the_bos_share_curve(runs, seed):
    """Section 3: every head's weight on BOS correlates with 1/(t+1) (>= 0.95), has a positive
    bonus b, and lies within 0.02 of e^b/(e^b + t)."""
    to_bos = attention_to_first(runs[seed]["causal"], probe_batch().tokens)
    uniform = bos_weight(torch.arange(16))
    for weights in to_bos:
        correlation = torch.corrcoef(torch.stack([weights.double(), uniform]))[0, 1].item()
        bias = fit_bos_bias(weights)
        fitted = bos_weight(torch.arange(16), bias)
        assert correlation >= 0.95
        assert bias > 0.2  # a bonus for BOS, not a penalty
        assert (weights - fitted).abs().max().item() < 0.02


@pytest.mark.parametrize("seed", SEEDS)
def test_position_is_linearly_readable_after_the_causal_block_only(runs, seed):
    """Section 3: before the block both models' vectors give 2/16; after it a logistic probe
    reads the causal model's position (nearly) perfectly and least squares reads less."""
    batch = probe_batch()
    labels = batch.targets.reshape(-1)
    scores = {}
    for name in ("causal", "bidirectional"):
        with torch.no_grad():
            residuals = runs[seed][name](batch.tokens, details=True).residuals
        before, after = (r.reshape(-1, r.shape[-1]) for r in residuals)
        scores[name] = (logistic_probe(before, labels).test_accuracy,
                        logistic_probe(after, labels).test_accuracy,
                        linear_probe(after, labels).test_accuracy)
    for name in ("causal", "bidirectional"):
        assert scores[name][0] <= CEILING + 0.02
    assert scores["causal"][1] >= 0.98
    assert scores["causal"][2] <= scores["causal"][1] - 0.08
    assert scores["bidirectional"][1] <= CEILING + 0.02


@pytest.mark.parametrize("seed", SEEDS)
def test_without_bos_the_count_is_mostly_lost(runs, seed):
    """Section 4: t = 0 always right, t = 1 roughly half the time, t >= 2 mostly wrong on average;
    the last position (the edge class t = 15) is right far more often than t = 2 .. 14."""
    model = runs[seed]["no_bos"]
    assert evaluate(model, "own_index", length=16) <= 0.3
    by_position = accuracy_by_position(model, "own_index", length=16)
    assert by_position[0] >= 0.95
    assert 0.25 <= by_position[1] <= 0.75
    assert by_position[2:].mean().item() <= 0.2
    assert by_position[2:15].mean().item() <= 0.15
    assert by_position[15].item() >= by_position[2:15].mean().item() + 0.15


@pytest.mark.parametrize("seed", SEEDS)
def test_the_position_information_is_in_the_mask(runs, seed):
    model = runs[seed]["causal"]
    unmasked = with_mask(model, causal=False)
    tokens = probe_batch().tokens[:8]
    order = torch.randperm(16, generator=torch.Generator().manual_seed(2))
    assert permutation_gap(unmasked, tokens, order) < 1e-9
    assert permutation_gap(model, tokens, order) > 1.0
    assert evaluate(unmasked, "own_index", length=16, bos=True) <= CEILING + 0.01
