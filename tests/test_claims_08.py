"""The claims lesson 08 makes from its training runs, repeated on three other seeds.

The lesson trains a 3-block TinyTransformer (d_model 32, sinusoidal code added at the input,
marker token 0 first) on "previous_token", 120 steps at a constant lr 1e-2 on 16-token sequences,
and a second model that re-adds the code before every block, with the same budget. It trains
seeds 0-5 side by side, shows seeds 0, 1, 2 in its tables and prints seeds 3, 4, 5 in a short
table at the end. Every measure leaves position 0 (the marker) out, and the target share also
position 1 (where the previous token is always the marker). Here seeds 0-5 are trained exactly
as the lesson trains them, and every claim is asserted on seeds 3, 4 and 5 with a margin; and
again on seed 6, which the lesson never prints (trained as a side-by-side group of its own, so
the group of seeds 0-5 and its numbers stay the lesson's). The lesson's prose ranges are
written to hold on seeds 0-5 (and were checked on seeds 6-11). The budget lines (2x rule,
counting) are checked on the seeds the lesson states them for. One range the lesson gives for seeds
0-5 does not hold on seed 6: least squares after block 1 (0.810 there, a fall of 0.042 from 0.852; 0.67-0.79
on seeds 0-5); on seed 6 the claim is the one the lesson makes for every seed, that it falls.
"""

from __future__ import annotations

import pytest
import torch
from conftest import assert_recorded

from course_utils import (ModelConfig, TinyTransformer, evaluate, layer_profile, layer_stack_model,
                          layer_stack_models, make_batch, n_classes, residual_features, sinusoidal_encoding,
                          steps_to_accuracy, train, variance_explained)
from course_utils.evidence import evidence

SHOWN, PRINTED, FURTHER = (0, 1, 2), (3, 4, 5), (6,)
ALL = SHOWN + PRINTED  # trained side by side, as in the lesson
SEEDS = PRINTED + FURTHER  # the claims' seeds; 6 is never printed, and trained as its own group
VOCAB, MAX_LEN, STEPS = 16, 16, 120
TASK = "previous_token"
LAYERS = range(4)


def _model(seed: int, *, reapply: bool = False, task: str = TASK) -> TinyTransformer:
    config = ModelConfig(vocab_size=VOCAB, d_model=32, n_layers=3, max_len=MAX_LEN,
                         reapply_position=reapply,
                         n_outputs=n_classes(task, vocab_size=VOCAB, max_len=MAX_LEN))
    return TinyTransformer(config, seed=seed)


def _batch():
    return make_batch(TASK, batch_size=64, length=16, vocab_size=VOCAB, bos=True,
                      generator=torch.Generator().manual_seed(1))


def _measure(model, history) -> dict:
    features = residual_features(model, _batch())
    return {
        "model": model,
        "history": history,
        "features": features,
        "profile": layer_profile(features, first_position=1, target_first_position=2),
        "least_squares": layer_profile(features, probe="least_squares", first_position=1,
                                       target_first_position=2),
        "kept": [variance_explained(layer, features.positions) for layer in features.layers],
        "accuracy": evaluate(model, TASK, length=16, bos=True),
    }


def _left_out_share(features) -> list:
    rows = features.positions >= 1
    return [variance_explained(layer[rows], features.positions[rows]) for layer in features.layers]


@pytest.fixture(scope="module")
def runs():
    torch.set_num_threads(1)
    result = {}
    for group in (ALL, FURTHER):
        once, once_histories = layer_stack_models(group)
        every, every_histories = layer_stack_models(group, reapply_position=True)
        for i, seed in enumerate(group):
            if seed not in SEEDS:
                continue
            untrained = residual_features(layer_stack_model(seed), _batch())
            result[seed] = {"once": _measure(once[i], once_histories[i]),
                            "every": _measure(every[i], every_histories[i]),
                            "untrained_share": _left_out_share(untrained)}
    return result


@pytest.mark.parametrize("seed", SEEDS)
def test_both_models_learn_their_task(runs, seed):
    """Section 1: both models solve the previous-token task (the lesson: 0.98 or more)."""
    assert runs[seed]["once"]["accuracy"] >= 0.96
    assert runs[seed]["every"]["accuracy"] >= 0.96


def test_twice_the_steps_changes_the_mean_accuracy_by_less_than_a_point():
    """The lesson's budget line: twice the steps (240) moves the mean test accuracy of seeds 0-2
    by less than 0.01 for both models (the course's 2x rule), and of seeds 3-5 by less than 0.02."""
    torch.set_num_threads(1)
    for reapply in (False, True):
        accuracy = {}
        for steps in (STEPS, 2 * STEPS):
            models, _ = layer_stack_models(ALL, reapply_position=reapply, steps=steps)
            accuracy[steps] = [evaluate(m, TASK, length=16, bos=True) for m in models]
        change = [after - before for before, after in zip(accuracy[STEPS], accuracy[2 * STEPS])]
        recorded = evidence("08-layers")["rows"]["before every block" if reapply else "added once"]
        assert_recorded(accuracy[STEPS][:3], recorded["accuracy"]["budget"])
        assert_recorded(accuracy[2 * STEPS][:3], recorded["accuracy"]["double"])
        assert abs(sum(change[:3]) / 3) < 0.01, (reapply, change)
        assert abs(sum(change[3:]) / 3) < 0.02, (reapply, change)


def test_counting_is_still_being_learned_at_this_budget():
    """Section 1: why the lesson has no counting model. Trained like the lesson's model (120
    steps at lr 7e-3, seeds 0-2), twice the steps still lifts its mean accuracy by more than 0.05:
    an early snapshot, from which the lesson draws nothing."""
    torch.set_num_threads(1)

    def accuracies(steps: int) -> list[float]:
        values = []
        for seed in SHOWN:
            model = _model(seed, task="count")
            train(model, "count", steps=steps, lr=7e-3, lengths=(16, 16), seed=seed, bos=True,
                  progress=False)
            values.append(evaluate(model, "count", length=16, bos=True))
        return values

    budget, double = accuracies(120), accuracies(240)
    recorded = evidence("08-count")["rows"]["count"]["accuracy"]  # printed by the lesson
    assert_recorded(budget, recorded["budget"])
    assert_recorded(double, recorded["double"])
    assert (sum(double) - sum(budget)) / 3 > 0.05


@pytest.mark.parametrize("seed", SEEDS)
def test_logistic_probe_reads_more_than_least_squares_in_every_layer(runs, seed):
    """Section 2: the logistic probe beats least squares on the same held-out rows, every layer
    (the lesson: by 0.08-0.35); least squares reports a fall (the lesson: 0.13-0.35)."""
    logistic = runs[seed]["once"]["profile"].position_probe
    least_squares = runs[seed]["once"]["least_squares"].position_probe
    for layer in LAYERS:
        assert logistic[layer] >= least_squares[layer] + 0.07
    assert least_squares[-1] <= least_squares[0] - 0.1


@pytest.mark.parametrize("seed", SEEDS)
def test_least_squares_already_reports_a_fall_after_block_1(runs, seed):
    """Section 2: after block 1, where the logistic probe reads position at least as well as at
    the input, least squares reports a fall on every seed (the lesson: to 0.67-0.79 from 0.84-0.86
    on seeds 0-5; margin 0.05 there; seed 6: 0.852 -> 0.810)."""
    least_squares = runs[seed]["once"]["least_squares"].position_probe
    assert least_squares[1] <= least_squares[0] - (0.05 if seed in PRINTED else 0.01)


@pytest.mark.parametrize("seed", SEEDS)
def test_position_is_kept_through_block_2_and_read_less_well_after_the_last(runs, seed):
    """Section 2 (Q9): position is read at 0.94-0.97 at the input; after block 1 at least as well
    (0.98-1.00); after block 2 at 0.95 or more; after the last block less well than after block
    1 (by 0.07-0.27) but far above chance (0.73-0.94; chance 1/15). The logistic probe's fall from
    the input to the last block is smaller than the least-squares one."""
    probe = runs[seed]["once"]["profile"].position_probe
    assert 0.92 <= probe[0] <= 0.99
    assert probe[1] >= probe[0] - 0.005 and probe[1] >= 0.96
    assert probe[2] >= 0.93
    assert 0.65 <= probe[3] <= probe[1] - 0.04
    least_squares = runs[seed]["once"]["least_squares"].position_probe
    assert probe[0] - probe[3] <= least_squares[0] - least_squares[3]


@pytest.mark.parametrize("seed", SEEDS)
def test_the_token_stays_readable_in_every_layer(runs, seed):
    """Section 2: the token probe reads 0.97 or more in every layer."""
    assert min(runs[seed]["once"]["profile"].token_probe) >= 0.95


@pytest.mark.parametrize("seed", SEEDS)
def test_the_input_share_follows_the_sizes_once_the_bias_is_removed(runs, seed):
    """Section 3: measured R² - (G - 1)(1 - R²)/N is closer to the predicted share than the
    measured R² is, and within 0.008 of it."""
    run = runs[seed]["once"]
    code = sinusoidal_encoding(MAX_LEN, 32, dtype=torch.float64)[1:]
    embedding = run["model"].token_embedding.weight.detach().double()[1:]
    code_spread = code.var(dim=0, unbiased=False).sum().item()
    token_spread = embedding.var(dim=0, unbiased=False).sum().item()
    predicted = code_spread / (code_spread + token_spread)
    features = run["features"]
    rows = features.positions > 0
    positions = features.positions[rows]
    measured = variance_explained(features.layers[0][rows], positions)
    n, groups = len(positions), len(positions.unique())
    corrected = measured - (groups - 1) * (1 - measured) / n
    assert 0 < measured - predicted < 0.03
    assert abs(corrected - predicted) < measured - predicted
    assert abs(corrected - predicted) <= 0.008
    shuffled = positions[torch.randperm(n, generator=torch.Generator().manual_seed(0))]
    chance = variance_explained(features.layers[0][rows], shuffled)
    assert abs(chance - (groups - 1) / (n - 1)) < 0.008


@pytest.mark.parametrize("seed", SEEDS)
def test_input_token_then_position_then_answer(runs, seed):
    """Section 3 (Q14): token dominates the input (0.87-0.89), position after block 1 (0.78-0.90),
    the answer after the last block (0.77-0.88; position 0.17-0.24, token 0.04-0.06)."""
    profile = runs[seed]["once"]["profile"]
    assert profile.token_share[0] >= profile.position_share[0] + 0.5
    assert profile.token_share[0] >= 0.8
    assert profile.position_share[1] >= 0.7
    assert profile.position_share[1] >= profile.token_share[1] + 0.3
    assert profile.position_share[1] >= profile.target_share[1] + 0.3
    assert profile.target_share[1] <= 0.04  # on positions 2..15 the answer is not there yet
    assert profile.target_share[-1] >= 0.7
    assert profile.target_share[-1] >= max(profile.position_share[-1], profile.token_share[-1]) + 0.4
    assert profile.token_share[-1] <= 0.1


@pytest.mark.parametrize("seed", SEEDS)
def test_training_put_the_position_into_block_1(runs, seed):
    """Section 3: an untrained model (same initial weights) keeps position's input share through
    all three blocks (within 0.02); the trained one multiplies it after block 1."""
    untrained = runs[seed]["untrained_share"]
    for layer in (1, 2, 3):
        assert abs(untrained[layer] - untrained[0]) <= 0.02
    assert runs[seed]["once"]["profile"].position_share[1] >= untrained[1] + 0.5


@pytest.mark.parametrize("seed", SEEDS)
def test_the_answer_at_position_1_fakes_an_early_target_share(runs, seed):
    """Section 3: in previous_token the answer at position 1 is always the marker. With position 1
    kept, the target share after block 1 is larger (the lesson: 0.11-0.17 against 0.02 or less);
    and position's share after the last block is smaller from position 2 on."""
    features, profile = runs[seed]["once"]["features"], runs[seed]["once"]["profile"]

    def share(layer, labels, first):
        rows = features.scored & (features.positions >= first)
        return variance_explained(features.layers[layer][rows], labels[rows])

    assert share(1, features.targets, 1) >= profile.target_share[1] + 0.07
    assert share(1, features.targets, 2) == pytest.approx(profile.target_share[1])
    assert share(3, features.positions, 2) <= profile.position_share[3] - 0.02


@pytest.mark.parametrize("seed", SEEDS)
def test_keeping_the_marker_changes_the_shares_little(runs, seed):
    """Section 3: keeping position 0 adds 0.05-0.09 to the input's position share and at most
    0.14 (here 0.2) to any later layer's."""
    run = runs[seed]["once"]
    differences = [kept - left_out for kept, left_out in
                   zip(run["kept"], run["profile"].position_share)]
    assert 0.04 <= differences[0] <= 0.1
    for difference in differences[1:]:
        assert -0.02 <= difference <= 0.2


@pytest.mark.parametrize("seed", SEEDS)
def test_re_adding_changes_block_1_and_learns_faster(runs, seed):
    """Section 4 (Q9): block 1 of the add-once model writes more position into the stream (the
    lesson: 0.78-0.90 against 0.34-0.65); the re-adding model reads position after the last block
    at 0.85-0.97 (higher than adding once on four of the lesson's six seeds, about the same on
    two, which the lesson prints seed by seed). Steps to 90 %: both get there; with the same seed, re-adding first
    (on all six of the lesson's seeds)."""
    once, every = runs[seed]["once"], runs[seed]["every"]
    assert once["profile"].position_share[1] >= every["profile"].position_share[1] + 0.15
    assert every["profile"].position_share[1] <= 0.7
    assert every["profile"].position_probe[-1] >= 0.8
    once_steps = steps_to_accuracy(once["history"].accuracy, 0.9)
    every_steps = steps_to_accuracy(every["history"].accuracy, 0.9)
    assert once_steps is not None and every_steps is not None
    assert every_steps < once_steps
