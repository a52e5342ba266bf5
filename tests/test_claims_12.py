"""Lesson 12's trained claims, re-checked on seeds 3, 4 and 5 (the lesson shows 0, 1, 2).

Same experiment as the lesson: one-layer causal RoPE models (d_model 32, 2 heads of width 16)
trained on copy_offset with offset K = 8 at exactly L = 16 tokens (150 steps, lr 3e-3), scored
on the positions t >= L of longer sequences, read with each scaling, then fine-tuned for 15
steps at 4L. Every assertion is a statement of the lesson, with a margin.
"""

import pytest
import torch

from course_utils import (ModelConfig, TinyTransformer, attention_entropy, evaluate, offset_head, train,
                          with_rope_scaling)

SEEDS = (3, 4, 5)
L, K, STEPS = 16, 8, 150
CHANCE = 1 / 16


def _accuracy(model, length: int) -> float:
    return evaluate(model, "copy_offset", offset=K, length=length, from_position=L if length > L else 0)


def _fine_tuned(model, steps: int, seed: int):
    train(model, "copy_offset", steps=steps, lengths=(4 * L, 4 * L), offset=K, lr=3e-3, seed=seed, progress=False)
    return _accuracy(model, 4 * L)


@pytest.fixture(scope="module")
def models():
    config = ModelConfig(vocab_size=16, d_model=32, n_heads=2, n_layers=1, max_len=64, position="rope", causal=True)
    trained = {}
    for seed in SEEDS:
        trained[seed] = TinyTransformer(config, seed=seed)
        train(trained[seed], "copy_offset", steps=STEPS, lengths=(L, L), offset=K, lr=3e-3, seed=seed,
              progress=False)
    return trained


@pytest.mark.parametrize("seed", SEEDS)
def test_plain_rope_is_exact_within_L_and_degrades_past_it(models, seed):
    model = models[seed]
    at = {n: _accuracy(model, n) for n in (L, 2 * L, 4 * L)}
    assert at[L] >= 0.98
    assert 0.6 < at[2 * L] < 0.95 and at[4 * L] < at[2 * L] - 0.1 and at[4 * L] > 3 * CHANCE
    probe = torch.randint(0, 16, (64, 4 * L), generator=torch.Generator().manual_seed(7))
    head = offset_head(model, probe, K, queries=range(K, L))
    assert head.score > 0.8 and head.on_offset[L:].mean() < 0.75 * head.score
    spread = attention_entropy(head.weights)
    assert spread[L:].mean() > 1.5 * spread[K:L].mean(), "attention spreads past L"


@pytest.mark.parametrize("seed", SEEDS)
def test_pi_loses_the_exact_offset_and_needs_a_longer_fine_tune(models, seed):
    assert _accuracy(with_rope_scaling(models[seed], "linear", factor=2.0), 2 * L) < 2 * CHANCE
    tuned = with_rope_scaling(models[seed], "linear", factor=4.0)
    after_15 = _fine_tuned(tuned, 15, 100 + seed)
    after_45 = _fine_tuned(tuned, 30, 200 + seed)
    assert after_15 < 0.5 and after_45 > after_15 + 0.2


@pytest.mark.parametrize("seed", SEEDS)
def test_ntk_and_yarn_with_thresholds_for_our_length_keep_the_task_at_2L(models, seed):
    model = models[seed]
    none = _accuracy(model, 2 * L)
    assert _accuracy(with_rope_scaling(model, "ntk", factor=2.0), 2 * L) > none + 0.03
    ours = with_rope_scaling(model, "yarn", factor=2.0, original_max_len=L, beta_fast=1.0, beta_slow=0.05)
    assert _accuracy(ours, 2 * L) > 0.9
    published = with_rope_scaling(model, "yarn", factor=2.0, original_max_len=L)
    assert _accuracy(published, 2 * L) < 2 * CHANCE, "YaRN's published thresholds act like PI at L = 16"


@pytest.mark.parametrize("seed", SEEDS)
def test_a_short_fine_tune_repairs_plain_rope_and_ntk_but_not_pi(models, seed):
    model = models[seed]
    assert _fine_tuned(with_rope_scaling(model, None), 15, 100 + seed) >= 0.95
    assert _fine_tuned(with_rope_scaling(model, "ntk", factor=4.0), 15, 100 + seed) >= 0.9
    assert _fine_tuned(with_rope_scaling(model, "linear", factor=4.0), 15, 100 + seed) < 0.5
    ours = with_rope_scaling(model, "yarn", factor=4.0, original_max_len=L, beta_fast=1.0, beta_slow=0.05)
    assert _fine_tuned(ours, 15, 100 + seed) >= 0.9
    published = with_rope_scaling(model, "yarn", factor=4.0, original_max_len=L)
    assert _fine_tuned(published, 15, 100 + seed) < 0.5


@pytest.mark.parametrize("seed", SEEDS)
def test_at_4L_ntk_does_not_rescue_the_task(models, seed):
    none = _accuracy(models[seed], 4 * L)
    ntk = _accuracy(with_rope_scaling(models[seed], "ntk", factor=4.0), 4 * L)
    assert ntk < none + 0.1 and ntk < 0.7


def test_the_budget_line_twice_the_steps_changes_no_length_by_a_point():
    """Lesson 12's budget line (seeds 0-2): with twice the steps (300) the accuracy at L, 2L and 4L moves by
    less than 0.01 on every seed: the length results are not those of a short run."""
    config = ModelConfig(vocab_size=16, d_model=32, n_heads=2, n_layers=1, max_len=64, position="rope", causal=True)
    for seed in (0, 1, 2):
        scores = []
        for steps in (STEPS, 2 * STEPS):
            model = TinyTransformer(config, seed=seed)
            train(model, "copy_offset", steps=steps, lengths=(L, L), offset=K, lr=3e-3, seed=seed, progress=False)
            scores.append([_accuracy(model, n) for n in (L, 2 * L, 4 * L)])
        assert all(abs(a - b) < 0.01 for a, b in zip(*scores)), (seed, scores)
