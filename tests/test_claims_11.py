"""Lesson 11's trained claims, re-checked on seeds 3, 4 and 5 (the lesson shows 0, 1, 2).

Same experiment as the lesson, section 2: one-layer causal RoPE models with 4 heads of width 8,
trained on previous-token at lengths 8–16 (70 steps, lr 0.015, 16 sequences per step), once with
the interleaved pairing and once with the halves pairing; the interleaved model converted to the
halves pairing with and without permuting the rows of W_q and W_k. Every assertion is a statement
of the lesson, with a margin.
"""

import pytest
import torch

from course_utils import ModelConfig, TinyTransformer, convert_rope_layout, evaluate, offset_head, train

SEEDS = (3, 4, 5)
PROBE = torch.randint(0, 8, (64, 16), generator=torch.Generator().manual_seed(7))


def _train(layout: str, seed: int) -> TinyTransformer:
    config = ModelConfig(vocab_size=8, d_model=32, n_heads=4, n_layers=1, max_len=64, position="rope",
                         causal=True, rope_layout=layout)
    model = TinyTransformer(config, seed=seed)
    train(model, "previous_token", steps=70, batch_size=16, lengths=(8, 16), lr=1.5e-2, seed=seed, progress=False)
    return model


def _accuracy(model) -> float:
    return evaluate(model, "previous_token", length=16, n_batches=1)


def _weight_on_previous(model) -> float:
    return offset_head(model, PROBE, 1).score


@pytest.fixture(scope="module")
def models():
    return {(layout, seed): _train(layout, seed) for layout in ("interleaved", "halves") for seed in SEEDS}


@pytest.mark.parametrize("seed", SEEDS)
def test_both_pairings_learn_the_task(models, seed):
    assert _accuracy(models["interleaved", seed]) >= 0.95
    assert _accuracy(models["halves", seed]) >= 0.95
    assert _weight_on_previous(models["interleaved", seed]) >= 0.85


@pytest.mark.parametrize("seed", SEEDS)
def test_the_permuted_conversion_keeps_the_logits(models, seed):
    model = models["interleaved", seed]
    converted = convert_rope_layout(model, "halves")
    assert (converted(PROBE) - model(PROBE)).abs().max().item() < 5e-5
    assert _accuracy(converted) == _accuracy(model)


@pytest.mark.parametrize("seed", SEEDS)
def test_forgetting_the_permutation_collapses_the_model(models, seed):
    model = models["interleaved", seed]
    broken = convert_rope_layout(model, "halves", permute=False)
    assert _accuracy(broken) <= 0.45, "close to guessing (1/8), far below the trained 1.00"
    assert _weight_on_previous(broken) <= 0.45 < _weight_on_previous(model)
