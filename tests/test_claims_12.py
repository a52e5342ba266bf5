"""Lesson 12's trained claims, re-checked on seeds 3, 4, 5 and 6 (the lesson shows 0, 1, 2).

Same experiment as the lesson: one-layer causal RoPE models (d_model 32) trained on copy_offset with
offset K = 8 at exactly L = 16 tokens (150 steps, 32 sequences a step, constant lr 3e-3), scored on the
positions t >= L of longer sequences, read with each scaling, then fine-tuned for 15 steps at 4L. Two
designs with the same weights: two heads of width 16 (sections 1-5) and one head of width 32 (section 6).
Seeds 3-5 are trained side by side, as the lesson's table of further seeds trains them (it prints them);
seed 6, which the lesson prints only in its Deeper section, is trained as a side-by-side group of its own,
and every claim is checked on it too. Every assertion is a statement of the lesson, with a margin. The budget lines (2x rule)
are checked on seeds 0-2, as the lesson states them. Two ranges the lesson gives for seeds 0-5 do not hold
on seed 6, and the lesson's Deeper section prints them: pair 1's lead (0.381 logits there, 0.6-1.5 on seeds
0-5) and exactness within L without pairs 2-7 (0.963 there): on seed 6 the claims are the weaker ones the
lesson makes for every seed (pair 1 carries a part of the lead; the model stays nearly exact).
"""

import pytest
import torch

from conftest import assert_recorded

from course_utils import (RopeScaling, attention_at_offset, attention_entropy, copy_accuracy, copy_offset_models,
                          evaluate, offset_head, pair_logits, rival_margin, train, with_rope_scaling, without_pairs)
from course_utils.evidence import evidence

PRINTED, FURTHER = (3, 4, 5), (6,)  # the footers print 3-5; 6, trained as its own group, in Deeper
SEEDS = PRINTED + FURTHER
L, K, STEPS = 16, 8, 150
CHANCE = 1 / 16
NARROW, WIDE = 2, 1  # heads of the lesson's model (course_utils.recipes.copy_offset_models)
PROBE = torch.randint(0, 16, (64, 4 * L), generator=torch.Generator().manual_seed(7))
OUR_BETAS = dict(beta_fast=1.0, beta_slow=0.05)


def _accuracy(model, length: int, from_position: int | None = None) -> float:
    if from_position is None:
        from_position = L if length > L else 0
    return evaluate(model, "copy_offset", offset=K, length=length, from_position=from_position)


def _fine_tuned(model, steps: int, seed: int):
    train(model, "copy_offset", steps=steps, lengths=(4 * L, 4 * L), offset=K, lr=3e-3, seed=seed, progress=False)
    return _accuracy(model, 4 * L)


def _side_by_side(n_heads: int, seeds, steps=STEPS) -> list:
    return copy_offset_models(n_heads, seeds, steps, together=True)


def _copy_head(model) -> int:
    return offset_head(model, PROBE, K, queries=range(K, L)).head


def _lead(model, head: int, n: int, queries: range):
    return rival_margin(pair_logits(model, PROBE[:, :n], head=head), K, queries=queries)


def _groups(n_heads: int) -> dict:
    return {seed: model for group in (PRINTED, FURTHER)
            for seed, model in zip(group, _side_by_side(n_heads, group))}


@pytest.fixture(scope="module")
def models():
    return _groups(NARROW)


@pytest.fixture(scope="module")
def wide():
    return _groups(WIDE)


# --- sections 2 and 5: heads of width 16 -----------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_plain_rope_is_exact_within_L_and_degrades_past_it(models, seed):
    model = models[seed]
    at = {n: _accuracy(model, n) for n in (L, 2 * L, 4 * L)}
    assert at[L] >= 0.98
    assert 0.6 < at[2 * L] < 0.95 and at[4 * L] < at[2 * L] - 0.1 and at[4 * L] > 3 * CHANCE
    head = offset_head(model, PROBE, K, queries=range(K, L))
    assert head.score > 0.8 and head.on_offset[L:].mean() < 0.75 * head.score
    spread = attention_entropy(head.weights)
    assert spread[L:].mean() > 1.5 * spread[K:L].mean(), "attention spreads past L"


@pytest.mark.parametrize("seed", SEEDS)
def test_the_copy_head_leans_on_pair_0_and_not_on_the_slow_pairs(models, seed):
    model = models[seed]
    lead = _lead(model, _copy_head(model), L, range(K, L)).by_pair
    assert lead[0] > 2.0, lead
    assert abs(lead[2]) < 0.3 and lead[3:].sum() < 0.3, lead


@pytest.mark.parametrize("seed", SEEDS)
def test_pair_1_carries_part_of_the_lead(models, seed):
    """The lesson: 0.6-1.5 logits on seeds 0-5 (asserted > 0.4), a part of the lead on every seed (seed 6: 0.381)."""
    model = models[seed]
    lead = _lead(model, _copy_head(model), L, range(K, L)).by_pair
    assert lead[1] > (0.4 if seed in PRINTED else 0.0), lead
    assert lead[1] < lead[0], lead


@pytest.mark.parametrize("seed", SEEDS)
def test_without_pair_0_or_pair_1_the_model_is_not_exact_within_L(models, seed):
    model = models[seed]
    head = _copy_head(model)
    assert _accuracy(without_pairs(model, [0], head=head), L) < 0.9
    assert _accuracy(without_pairs(model, [1], head=head), L) < 0.98


@pytest.mark.parametrize("seed", SEEDS)
def test_without_pairs_2_to_7_the_model_stays_exact_within_L(models, seed):
    """The lesson: exact within L on seeds 0-5, nearly exact on every seed (seed 6: 0.963)."""
    model = models[seed]
    kept = _accuracy(without_pairs(model, range(2, 8), head=_copy_head(model)), L)
    assert kept >= (0.98 if seed in PRINTED else 0.95)


@pytest.mark.parametrize("seed", SEEDS)
def test_without_pairs_2_to_7_the_model_is_not_worse_past_L(models, seed):
    model = models[seed]
    no_slow = without_pairs(model, range(2, 8), head=_copy_head(model))
    for n in (2 * L, 4 * L):
        assert _accuracy(no_slow, n) >= _accuracy(model, n) - 0.02, "removing pairs 2-7 does not hurt past L"


@pytest.mark.parametrize("seed", SEEDS)
def test_past_27_the_rival_is_the_alias_27_back_where_pairs_0_and_1_stop_leading(models, seed):
    model = models[seed]
    late = _lead(model, _copy_head(model), 4 * L, range(27, 4 * L))
    assert (late.rival_offset == 27).double().mean() > 0.6
    assert late.by_pair[0] < 1.0 and late.by_pair[1] < 0.8, late.by_pair


@pytest.mark.parametrize("seed", SEEDS)
def test_pi_loses_the_exact_offset_and_needs_a_longer_fine_tune(models, seed):
    assert _accuracy(with_rope_scaling(models[seed], "linear", factor=2.0), 2 * L) < 2 * CHANCE
    tuned = with_rope_scaling(models[seed], "linear", factor=4.0)
    after_15 = _fine_tuned(tuned, 15, 100 + seed)
    after_45 = _fine_tuned(tuned, 30, 200 + seed)
    assert after_15 < 0.5 and after_45 > after_15 + 0.2


@pytest.mark.parametrize("seed", SEEDS)
def test_pi_sends_the_head_to_the_look_alike_key_s_times_K_back(models, seed):
    """Why PI scores lower at 2L than at 4L: the key s·K back has offset K's angles; at 2L it exists for
    every scored t, at 4L only for t >= 32, and wherever it exists accuracy is at chance."""
    model, head = models[seed], _copy_head(models[seed])
    for factor in (2, 4):
        n, lookalike = factor * L, factor * K
        pi = with_rope_scaling(model, "linear", factor=float(factor))
        weights = offset_head(pi, PROBE[:, :n], K, queries=range(K, L)).layer_weights[head]
        first = max(L, lookalike)
        assert attention_at_offset(weights, lookalike)[first:].mean() > (0.4 if factor == 2 else 0.2)
        assert _accuracy(pi, n, from_position=first) < 1.5 * CHANCE
    pi_2 = _lead(with_rope_scaling(model, "linear", factor=2.0), head, 2 * L, range(L, 2 * L))
    assert pi_2.by_pair[0] < -5 and (pi_2.rival_offset == 2 * K).double().mean() > 0.5
    at_4l = _accuracy(with_rope_scaling(model, "linear", factor=4.0), 4 * L)
    assert at_4l > _accuracy(with_rope_scaling(model, "linear", factor=2.0), 2 * L) + 0.04


@pytest.mark.parametrize("seed", SEEDS)
def test_ntk_and_yarn_with_thresholds_for_our_length_keep_the_task_at_2L(models, seed):
    model = models[seed]
    none = _accuracy(model, 2 * L)
    assert _accuracy(with_rope_scaling(model, "ntk", factor=2.0), 2 * L) > none + 0.03
    ours = with_rope_scaling(model, "yarn", factor=2.0, original_max_len=L, **OUR_BETAS)
    assert _accuracy(ours, 2 * L) > 0.9
    published = with_rope_scaling(model, "yarn", factor=2.0, original_max_len=L)
    assert _accuracy(published, 2 * L) < 2 * CHANCE, "YaRN's published thresholds act like PI at L = 16"


@pytest.mark.parametrize("seed", SEEDS)
def test_what_ntk_changes_at_2L_is_pair_1_not_the_slow_pairs(models, seed):
    model = models[seed]
    head = _copy_head(model)
    plain = _lead(model, head, 2 * L, range(L, 2 * L)).by_pair
    ntk = _lead(with_rope_scaling(model, "ntk", factor=2.0), head, 2 * L, range(L, 2 * L)).by_pair
    assert ntk[1] > plain[1] + 0.3, (plain, ntk)
    assert ntk[2:].sum() < 0.3 and plain[2:].sum() < 0.3, "the slow pairs do not favour the right key"
    published = with_rope_scaling(model, "yarn", factor=2.0, original_max_len=L)
    assert _lead(published, head, 2 * L, range(L, 2 * L)).by_pair[1] < 0, "the published ramp turns pair 1 away"


@pytest.mark.parametrize("seed", SEEDS)
def test_yarns_temperature_changes_nothing_here_its_thresholds_do(models, seed):
    model = models[seed]
    for betas in (dict(beta_fast=32.0, beta_slow=1.0), OUR_BETAS):
        for n in (2 * L, 4 * L):
            hot = with_rope_scaling(model, "yarn", factor=n / L, original_max_len=L, **betas)
            cold = with_rope_scaling(model, RopeScaling("yarn", n / L, L, **betas, attention_factor=1.0))
            assert abs(_accuracy(hot, n) - _accuracy(cold, n)) <= 0.015


@pytest.mark.parametrize("seed", SEEDS)
def test_a_short_fine_tune_repairs_plain_rope_and_ntk_but_not_pi(models, seed):
    model = models[seed]
    assert _fine_tuned(with_rope_scaling(model, None), 15, 100 + seed) >= 0.95
    assert _fine_tuned(with_rope_scaling(model, "ntk", factor=4.0), 15, 100 + seed) >= 0.9
    assert _fine_tuned(with_rope_scaling(model, "linear", factor=4.0), 15, 100 + seed) < 0.5
    ours = with_rope_scaling(model, "yarn", factor=4.0, original_max_len=L, **OUR_BETAS)
    assert _fine_tuned(ours, 15, 100 + seed) >= 0.9
    published = with_rope_scaling(model, "yarn", factor=4.0, original_max_len=L)
    assert _fine_tuned(published, 15, 100 + seed) < 0.5


@pytest.mark.parametrize("seed", SEEDS)
def test_at_4L_ntk_does_not_rescue_the_task(models, seed):
    none = _accuracy(models[seed], 4 * L)
    ntk = _accuracy(with_rope_scaling(models[seed], "ntk", factor=4.0), 4 * L)
    assert ntk < none + 0.1 and ntk < 0.7


# --- section 6: one head of width 32 ---------------------------------------------------------------------

def test_the_wider_head_loses_less_past_L_than_any_narrow_one(models, wide):
    narrow_4l = [_accuracy(models[s], 4 * L) for s in SEEDS]
    for seed in SEEDS:
        at = {n: _accuracy(wide[seed], n) for n in (L, 2 * L, 4 * L)}
        assert at[L] >= 0.98 and at[2 * L] >= 0.9 and at[4 * L] < at[2 * L]
        assert at[4 * L] > max(narrow_4l) + 0.03, (at, narrow_4l)


@pytest.mark.parametrize("seed", SEEDS)
def test_at_width_32_ntk_gains_nothing_at_2L_and_is_worse_than_nothing_at_4L(wide, seed):
    model = wide[seed]
    ntk = {n: _accuracy(with_rope_scaling(model, "ntk", factor=n / L), n) for n in (2 * L, 4 * L)}
    assert ntk[2 * L] <= _accuracy(model, 2 * L) + 0.02
    assert ntk[4 * L] < _accuracy(model, 4 * L) - 0.1


@pytest.mark.parametrize("seed", SEEDS)
def test_at_width_32_the_general_findings_hold(wide, seed):
    model = wide[seed]
    assert _accuracy(with_rope_scaling(model, "linear", factor=2.0), 2 * L) < 2 * CHANCE
    published = with_rope_scaling(model, "yarn", factor=4.0, original_max_len=L)
    assert _accuracy(published, 4 * L) < 2 * CHANCE
    ours = with_rope_scaling(model, "yarn", factor=2.0, original_max_len=L, **OUR_BETAS)
    assert _accuracy(ours, 2 * L) > 0.9
    assert _lead(model, 0, L, range(K, L)).by_pair[0] > 2.0, "the copy head leans on pair 0"


# --- the budget lines (seeds 0-2, as the lesson states them) ----------------------------------------------

def test_the_budget_line_twice_the_steps_changes_no_length_by_a_point():
    """Lesson 12's budget line (seeds 0-2): with twice the steps (300) the accuracy at L, 2L and 4L moves by
    less than 0.01 on every seed: the length results are not those of a short run; the record
    (the lesson's footer) holds these runs."""
    by_seed = []
    for seed in (0, 1, 2):
        scores = []
        for steps in (STEPS, 2 * STEPS):
            model, = copy_offset_models(NARROW, [seed], steps, together=False)
            scores.append([_accuracy(model, n) for n in (L, 2 * L, 4 * L)])
        assert all(abs(a - b) < 0.01 for a, b in zip(*scores)), (seed, scores)
        by_seed.append(scores)
    rows = evidence("12-narrow")["rows"]["two heads of 16"]  # the footer prints these runs
    for i, column in enumerate(("L", "2L", "4L")):
        assert_recorded([s[0][i] for s in by_seed], rows[column]["budget"])
        assert_recorded([s[1][i] for s in by_seed], rows[column]["double"])


def test_the_wider_heads_budget_line_twice_the_steps_moves_the_mean_by_at_most_a_point():
    """Section 6's budget line: seeds 0-2 side by side, 150 against 300 steps, mean accuracy of the three
    seeds at L, 2L and 4L moves by at most 0.01 (the 2x rule); the NTK reading at 4L by less than 0.03,
    against a gap of more than 0.25 to no scaling."""
    means, ntk = [], []
    for steps in (STEPS, 2 * STEPS):
        trained = _side_by_side(WIDE, (0, 1, 2), steps)
        means.append([sum(_accuracy(m, n) for m in trained) / 3 for n in (L, 2 * L, 4 * L)])
        ntk.append(sum(_accuracy(with_rope_scaling(m, "ntk", factor=4.0), 4 * L) for m in trained) / 3)
    assert all(abs(a - b) <= 0.01 for a, b in zip(*means)), means
    rows = evidence("12-wide")["rows"]["one head of 32"]  # the footer prints these runs
    for i, column in enumerate(("L", "2L", "4L")):
        for j, key in enumerate(("budget", "double")):
            assert_recorded([means[j][i]], [sum(rows[column][key]) / 3])
    assert abs(ntk[0] - ntk[1]) < 0.03 and means[0][2] - ntk[0] > 0.25, (ntk, means)


@pytest.mark.parametrize("design", ["narrow", "wide"])
def test_the_footers_seeds_3_to_5_are_these_models(models, wide, design):
    """The footers print seeds 3-5 read every way at 2L and 4L: the models these claims test."""
    group = models if design == "narrow" else wide
    rows = evidence(f"12-{design}")["further"]["rows"]
    for reading, columns in rows.items():
        for column, recorded in columns.items():
            n = {"2L": 2 * L, "4L": 4 * L}[column]
            values = [copy_accuracy(group[s], n, reading) for s in PRINTED]
            assert_recorded(values, recorded)
