"""Lesson 07's claims from training runs hold on other seeds than the lesson's (0, 1, 2).

The same experiment as the lesson: previous-token on sequences of 6-12 tokens, tables for 24
positions, four models per seed — the default learned table (std 0.02, tokens N(0, 1)) for 450
steps, the sinusoidal code for 150, a table drawn from N(0, 1) for 150, and both tables at BERT's
std 0.02 for 80 — here with seeds 3, 4 and 5. Margins are wider than the lesson's ranges.
"""

from __future__ import annotations

import pytest
import torch
from conftest import assert_recorded

from course_utils import (ModelConfig, TinyTransformer, accuracy_by_position, band_summary, evaluate,
                          initialise_table, make_batch, relative_movement, setup, sinusoidal_encoding,
                          steps_to_accuracy, train, weight_back)
from course_utils.evidence import evidence

SEEDS = (3, 4, 5)
TASK, LENGTHS, TRAINED = "previous_token", (6, 12), 12
CONFIG = dict(vocab_size=16, d_model=32, n_heads=2, n_layers=2, max_len=2 * TRAINED)
CODES = {"learned": "learned", "sinusoidal": "sinusoidal", "table N(0,1)": "learned", "all at 0.02": "learned"}
STEPS = {"learned": 450, "sinusoidal": 150, "table N(0,1)": 150, "all at 0.02": 80}
TABLES = ("learned", "table N(0,1)", "all at 0.02")
UNBANDED = ("table N(0,1)", "all at 0.02")
CHANCE = 1 / 16


def _gap(band: dict) -> float:
    """Neighbours minus far pairs: how much more alike rows one apart are than rows >= 5 apart."""
    return band["offset 1"] - band["offset >= 5"]


def _experiment(seed: int) -> dict:
    models = {name: TinyTransformer(ModelConfig(**CONFIG, position=code), seed=seed) for name, code in CODES.items()}
    initialise_table(models["table N(0,1)"], std=1.0, seed=seed)
    initialise_table(models["all at 0.02"], std=0.02, seed=seed, table="token")
    starts = {name: models[name].position.table.weight.detach().clone() for name in TABLES}
    histories = {name: train(model, TASK, steps=STEPS[name], lengths=LENGTHS, seed=seed, progress=False)
                 for name, model in models.items()}
    probe = make_batch(TASK, batch_size=64, length=TRAINED, vocab_size=16,
                       generator=torch.Generator().manual_seed(1))
    return {
        "starts": starts,
        "ends": {name: models[name].position.table.weight.detach().clone() for name in TABLES},
        "steps_to_90": {name: steps_to_accuracy(h.accuracy, 0.9) for name, h in histories.items()},
        "test": {name: evaluate(model, TASK, length=TRAINED) for name, model in models.items()},
        "back": {name: weight_back(model, probe.tokens, 1) for name, model in models.items()},
        "per_position": {name: accuracy_by_position(models[name], TASK, length=2 * TRAINED)
                         for name in ("learned", "sinusoidal")},
    }


@pytest.fixture(scope="module")
def runs() -> dict:
    setup(0)
    return {seed: _experiment(seed) for seed in SEEDS}


@pytest.mark.parametrize("seed", SEEDS)
def test_every_model_solves_the_task_at_the_trained_length(runs, seed):
    for name, accuracy in runs[seed]["test"].items():
        assert accuracy > 0.85, (name, accuracy)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_default_table_is_slow_to_start_and_bert_style_is_fastest(runs, seed):
    steps = runs[seed]["steps_to_90"]
    assert all(value is not None for value in steps.values()), steps  # every model passes 90 %
    assert steps["learned"] > 2.5 * max(steps["sinusoidal"], steps["table N(0,1)"]), steps
    assert steps["all at 0.02"] < min(steps["sinusoidal"], steps["table N(0,1)"]), steps


@pytest.mark.parametrize("seed", SEEDS)
def test_only_the_table_that_starts_small_under_big_tokens_is_banded(runs, seed):
    run = runs[seed]
    sinusoid = band_summary(sinusoidal_encoding(TRAINED, 32))
    start = band_summary(run["starts"]["learned"][:TRAINED])
    banded = band_summary(run["ends"]["learned"][:TRAINED])
    assert all(abs(value) < 0.15 for value in start.values()), start  # a random draw has no band
    assert banded["offset 1"] > 0.3 and banded["offset >= 5"] < -0.05, banded
    assert _gap(banded) > 0.5 and _gap(banded) > _gap(sinusoid) + 0.25, (banded, sinusoid)
    for name in UNBANDED:
        band = band_summary(run["ends"][name][:TRAINED])
        assert abs(_gap(band)) < 0.35 and band["offset 1"] < 0.35, (name, band)


@pytest.mark.parametrize("seed", SEEDS)
def test_how_far_training_moved_each_table(runs, seed):
    run = runs[seed]
    start, end = run["starts"], run["ends"]
    relative = {name: relative_movement(start[name][:TRAINED], end[name][:TRAINED]).mean().item()
                for name in TABLES}
    distance = {name: (end[name][:TRAINED] - start[name][:TRAINED]).norm(dim=1).mean().item()
                for name in TABLES}
    assert relative["learned"] > 8, relative          # training wrote a new table
    assert relative["table N(0,1)"] < 0.3, relative   # the random draw barely turned
    assert 1 < relative["all at 0.02"] < 4, relative  # written by training too, yet not banded
    assert all(0.1 < value < 2.5 for value in distance.values()), distance  # the same order


@pytest.mark.parametrize("seed", SEEDS)
def test_banded_models_look_back_in_layer_2_and_unbanded_ones_already_in_layer_1(runs, seed):
    back = runs[seed]["back"]  # [layer, head]
    for name in ("learned", "sinusoidal"):
        assert bool((back[name][0] < 0.25).all()), (name, back[name])  # layer 1: nearly uniform
        assert bool((back[name][1] > 0.5).all()), (name, back[name])   # layer 2: one step back
    for name in UNBANDED:
        assert back[name][0].max() > 0.3, (name, back[name])


@pytest.mark.parametrize("seed", SEEDS)
def test_untrained_rows_are_exactly_their_short_initial_draw(runs, seed):
    start, end = runs[seed]["starts"]["learned"], runs[seed]["ends"]["learned"]
    assert torch.equal(end[TRAINED:], start[TRAINED:])
    assert bool(((end[:TRAINED] - start[:TRAINED]).norm(dim=1) > 0).all())
    assert end[TRAINED:].norm(dim=1).mean() < 0.2 < 1.0 < end[:TRAINED].norm(dim=1).mean()


@pytest.mark.parametrize("seed", SEEDS)
def test_past_the_trained_positions_learned_is_at_chance_and_sinusoidal_in_patches(runs, seed):
    per_position = runs[seed]["per_position"]
    learned, fixed = per_position["learned"], per_position["sinusoidal"]
    # inside the trained range both stay mostly right, in a sequence twice as long
    assert learned[1:TRAINED].mean() > 0.8 and fixed[1:TRAINED].mean() > 0.75
    # past it: the learned model at chance at every position ...
    assert learned[TRAINED:].mean() < CHANCE + 0.06
    assert learned[TRAINED:].max() < 0.2
    # ... the sinusoidal one above chance, far below its trained accuracy, and uneven
    assert CHANCE + 0.04 < fixed[TRAINED:].mean() < 0.6
    assert fixed[TRAINED:].max() - fixed[TRAINED:].min() > 0.25


def _test_accuracy(name: str, seed: int, steps: int) -> float:
    setup(0)  # the lesson's numerics (one thread), also when this test runs alone
    model = TinyTransformer(ModelConfig(**CONFIG, position=CODES[name]), seed=seed)
    if name == "table N(0,1)":
        initialise_table(model, std=1.0, seed=seed)
    if name == "all at 0.02":
        initialise_table(model, std=0.02, seed=seed, table="token")
    train(model, TASK, steps=steps, lengths=LENGTHS, seed=seed, progress=False)
    return evaluate(model, TASK, length=TRAINED)


def test_the_footer_only_the_default_table_is_converged():
    """Lesson 07's footer (seeds 0-2): twice the steps moves the default table's mean test accuracy by
    less than 0.01 (the 2x rule holds), lifts the sinusoidal and `all at 0.02` models' by 1-2 points
    (0.014 and 0.018 when measured) and the `table N(0,1)` models' by several points; the evidence
    record the lesson prints holds exactly these runs."""
    record = evidence("07-learned")["rows"]

    def change(name: str) -> float:
        budget = [_test_accuracy(name, seed, STEPS[name]) for seed in (0, 1, 2)]
        double = [_test_accuracy(name, seed, 2 * STEPS[name]) for seed in (0, 1, 2)]
        recorded = record[f"{name}, {STEPS[name]} steps"]["test accuracy (n = 12)"]
        assert_recorded(budget, recorded["budget"])
        assert_recorded(double, recorded["double"])
        return (sum(double) - sum(budget)) / 3

    assert abs(change("learned")) < 0.01
    assert change("table N(0,1)") > 0.03
    for name in ("sinusoidal", "all at 0.02"):
        assert 0.01 < change(name) < 0.03, name
