"""Lesson 13's trained claims, re-checked on seeds 3, 4 and 5 (the lesson shows 0, 1, 2).

Same experiment as the lesson: one-block TinyViTs (width 32, 2 heads, mean pooling) with no code,
a learned table, MAE's 2-D sin-cos code and 2-D RoPE, trained on scikit-learn's digits as 4×4
grids of 2×2 patches (100 steps of 64 images, lr 0.02, warm-up and linear decay), the three
seeds of a code side by side. Every assertion is a statement of the lesson, with a margin.
"""

import pytest
import torch

from course_utils import TinyViT, evaluate_vit, layer_profile, load_digits_patches, logistic_probe, train, \
    vit_features

SEEDS = (3, 4, 5)
CODES = ("none", "learned", "sinusoidal_2d", "rope_2d")
ORDER = torch.randperm(16, generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def data():
    return load_digits_patches(), load_digits_patches(upsample=2)


@pytest.fixture(scope="module")
def models(data):
    small, _ = data
    trained = {}
    for code in CODES:
        group = [TinyViT(position=code, seed=seed) for seed in SEEDS]
        train(group, (small.train_patches, small.train_labels), steps=100, batch_size=64, lr=2e-2,
              seed=list(SEEDS), schedule="warmup_linear", progress=False)
        trained.update({(code, seed): model for seed, model in zip(SEEDS, group)})
    return trained


def _accuracy(model, data, **where) -> float:
    return evaluate_vit(model, data.test_patches, data.test_labels, **where)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_bag_of_patches_ignores_order_and_every_code_beats_it(data, models, seed):
    small, _ = data
    bag = models["none", seed]
    shuffled = small.test_patches[:, ORDER]
    with torch.no_grad():
        assert (bag(small.test_patches) - bag(shuffled)).abs().max() < 1e-4
    assert evaluate_vit(bag, shuffled, small.test_labels) == _accuracy(bag, small)
    assert 0.3 < _accuracy(bag, small) < 0.75  # well above chance (0.1), well below the codes
    for code in CODES[1:]:
        model = models[code, seed]
        assert _accuracy(model, small) >= _accuracy(bag, small) + 0.03
        assert evaluate_vit(model, shuffled, small.test_labels) <= _accuracy(model, small) - 0.2
    # in this budget the learned table leads (the lesson reads it as this budget's ranking only)
    assert _accuracy(models["learned", seed], small) >= max(_accuracy(models[code, seed], small)
                                                            for code in ("sinusoidal_2d", "rope_2d"))


@pytest.mark.parametrize("seed", SEEDS)
def test_position_and_content_through_the_block(data, models, seed):
    small, _ = data
    few = (small.test_patches[:60], small.test_labels[:60])
    learned = vit_features(models["learned", seed], *few)
    profile = layer_profile(learned)
    assert profile.position_probe[0] >= 0.97 and profile.position_probe[2] <= profile.position_probe[0] - 0.03
    rows = learned.positions // 4
    assert logistic_probe(learned.layers[2], rows).test_accuracy <= 0.95
    assert profile.position_share[2] <= profile.position_share[0] / 2
    # most of the fall is at the attention, while the probes there still read position
    assert profile.position_share[1] <= profile.position_share[0] / 2
    assert profile.position_share[0] - profile.position_share[1] >= profile.position_share[1] - profile.position_share[2]
    assert profile.token_share[2] <= profile.token_share[0] / 2
    assert profile.target_share[0] < 0.02 and profile.target_share[2] >= profile.position_share[2] + 0.03
    assert profile.token_share[0] >= profile.position_share[0] + 0.05  # content, not position, leads at input
    control = layer_profile(vit_features(models["none", seed], *few))
    assert control.position_share[0] >= 0.4  # content alone already varies with the position
    assert control.position_probe[0] <= 0.4
    # Q1: both survive the sum; the content is a little less readable than with nothing added
    assert profile.token_probe[0] >= 0.85 and control.token_probe[0] >= profile.token_probe[0] + 0.02
    # Q1, the clean control: this model's own patch embedding, without and with its table added
    model = models["learned", seed]
    with torch.no_grad():
        embedded = model.patch_embedding(few[0]).reshape(-1, model.d_model).double()
    summed = embedded + model.table.detach().double().repeat(len(few[0]), 1)
    alone = logistic_probe(embedded, learned.tokens).test_accuracy
    with_table = logistic_probe(summed, learned.tokens).test_accuracy
    assert alone >= 0.95 and 0.85 <= with_table <= alone - 0.04  # lesson: 0.97 vs 0.89-0.90
    assert logistic_probe(summed, learned.positions).test_accuracy >= 0.97
    assert logistic_probe(embedded, learned.positions).test_accuracy <= 0.4
    assert min(logistic_probe(learned.layers[1], labels).test_accuracy
               for labels in (rows, learned.positions % 4, learned.positions)) >= 0.95  # after attention


@pytest.mark.parametrize("seed", SEEDS)
def test_a_new_resolution_without_retraining(data, models, seed):
    small, big = data
    at_16 = {}
    for code, spacing in (("none", 1.0), ("learned", 1.0), ("sinusoidal_2d", 1.0), ("sinusoidal_2d", 0.5),
                          ("rope_2d", 1.0), ("rope_2d", 0.5)):
        at_16[code, spacing] = _accuracy(models[code, seed], big, grid=big.grid, spacing=spacing)
        assert at_16[code, spacing] <= _accuracy(models[code, seed], small) - 0.2
    assert at_16["none", 1.0] <= 0.25
    assert at_16["learned", 1.0] >= at_16["none", 1.0] + 0.05
    # the lesson calls the resized table the best on average only (seed 1 puts MAE's code first)
    assert at_16["learned", 1.0] >= 0.2
    assert at_16["sinusoidal_2d", 0.5] >= at_16["sinusoidal_2d", 1.0] + 0.03
    assert at_16["rope_2d", 0.5] >= at_16["rope_2d", 1.0] + 0.03
    assert at_16["sinusoidal_2d", 1.0] <= 0.25 and at_16["rope_2d", 1.0] <= 0.25


def test_the_resized_learned_table_is_the_best_at_16x16_on_average(data, models):
    _, big = data
    variants = (("none", 1.0), ("sinusoidal_2d", 1.0), ("sinusoidal_2d", 0.5), ("rope_2d", 1.0), ("rope_2d", 0.5))

    def mean(code, spacing):
        return sum(_accuracy(models[code, s], big, grid=big.grid, spacing=spacing) for s in SEEDS) / len(SEEDS)

    learned = mean("learned", 1.0)
    assert all(learned >= mean(code, spacing) + 0.01 for code, spacing in variants)
