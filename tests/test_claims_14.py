"""Lesson 14's trained claims, re-checked on seeds 3, 4 and 5 (the lesson shows 0, 1, 2).

Same experiment as the lesson: character-level causal models (2 layers, 4 heads, d = 32, MLP 64)
that differ only in their position code, trained at L = 32 on the training topics of
pydoc_data.topics (150 steps, 16 windows per step, lr 0.02, the same batches for every code),
scored on the held-out topics (those that do not repeat the training text). Every assertion is a statement of the lesson, with a margin.
"""

import pytest
import torch

from course_utils import (ModelConfig, TinyTransformer, band_summary, load_text_corpus, loss_by_position,
                          text_batch, text_windows, train, uniform_causal_weights, weight_back, with_rope_scaling)

SEEDS = (3, 4, 5)
L = 32
CODES = ("none", "sinusoidal", "learned", "rope", "alibi")


def _config(corpus, code: str) -> ModelConfig:
    return ModelConfig(vocab_size=corpus.vocab_size, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_len=8 * L,
                       position=code, causal=True)


@pytest.fixture(scope="module")
def corpus():
    return load_text_corpus(docstrings=False)


@pytest.fixture(scope="module")
def models(corpus):
    trained = {}
    for seed in SEEDS:
        for code in CODES:
            model = TinyTransformer(_config(corpus, code), seed=seed)
            history = train(model, corpus.train, steps=150, batch_size=16, lengths=(L, L), lr=0.02, seed=seed,
                            progress=False)
            trained[code, seed] = (model, history)
        rope = trained["rope", seed][0]
        trained["pi", seed] = (with_rope_scaling(rope, "linear", factor=8), None)
        trained["yarn", seed] = (with_rope_scaling(rope, "yarn", factor=8, original_max_len=L), None)
    return trained


@pytest.fixture(scope="module")
def by_range(corpus, models):
    """{(row, seed): {range: mean loss in bits}} on 64 held-out windows of 8L, plus the bigram counts."""
    ranges = {"in": (8, L), "near": (L, 2 * L), "mid": (2 * L, 4 * L), "far": (4 * L, 8 * L)}
    out = {}
    for (row, seed), (model, _) in models.items():
        curve = loss_by_position(model, corpus.held_out, length=8 * L, n_windows=64)
        out[row, seed] = {name: curve[a:b].mean().item() for name, (a, b) in ranges.items()}
    counts = torch.full((corpus.vocab_size, corpus.vocab_size), 0.1, dtype=torch.float64)
    counts.index_put_((corpus.train[:-1], corpus.train[1:]), torch.ones(len(corpus.train) - 1, dtype=torch.float64),
                      accumulate=True)
    windows = text_windows(corpus.held_out, length=8 * L, n_windows=64)
    bigram = -(counts / counts.sum(1, keepdim=True))[windows.tokens, windows.targets].log2().mean(0)
    out["bigram"] = {name: bigram[a:b].mean().item() for name, (a, b) in ranges.items()}
    return out


@pytest.fixture(scope="module")
def cut(corpus, models):
    """{(code, seed): (whole prefix, last 32 only)} at t = 32-95 of 16 held-out windows of 3L."""
    out = {}
    for code in CODES:
        for seed in SEEDS:
            model = models[code, seed][0]
            whole = loss_by_position(model, corpus.held_out, length=3 * L, n_windows=16)
            last = loss_by_position(model, corpus.held_out, length=3 * L, n_windows=16, context=L)
            out[code, seed] = (whole[L:].mean().item(), last[L:].mean().item())
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_inside_the_trained_length_rope_then_alibi_then_the_other_three_close_together(by_range, seed):
    loss = {row: by_range[row, seed]["in"] for row in CODES}
    others = [loss[code] for code in ("sinusoidal", "learned", "none")]
    assert loss["rope"] + 0.05 < loss["alibi"] < min(others)
    assert max(others) - min(others) < 0.2, "the sinusoid, the learned table and NoPE close together"
    for value in others:  # all three within 0.15 bits of the bigram counts inside L (margin 0.05)
        assert abs(value - by_range["bigram"]["in"]) < 0.2


@pytest.mark.parametrize("seed", SEEDS)
def test_past_L_nope_and_the_learned_table_stay_closer_to_the_bigram_counts_than_the_sinusoid(by_range, seed):
    gap = {code: {part: by_range[code, seed][part] - by_range["bigram"][part] for part in ("near", "mid", "far")}
           for code in ("none", "learned", "sinusoidal")}
    for part in ("near", "mid", "far"):
        assert 0.0 < gap["none"][part] < 0.35, "NoPE stays a little above the bigram counts"
    for part in ("mid", "far"):
        assert max(gap["none"][part], gap["learned"][part]) < gap["sinusoidal"][part]


@pytest.mark.parametrize("seed", SEEDS)
def test_far_past_the_trained_length_alibi_is_lowest_and_rope_worst(by_range, seed):
    far = {row: by_range[row, seed]["far"] for row in (*CODES, "pi", "yarn")}
    assert far["alibi"] + 0.1 < min(v for row, v in far.items() if row != "alibi")
    assert far["alibi"] < by_range["bigram"]["far"] - 0.05
    assert max(far["none"], far["learned"]) < far["sinusoidal"] < far["rope"] - 0.1
    assert far["rope"] == max(far[row] for row in CODES)


@pytest.mark.parametrize("seed", SEEDS)
def test_stretching_rope_trades_inside_for_beyond(by_range, seed):
    rope, pi, yarn = by_range["rope", seed], by_range["pi", seed], by_range["yarn", seed]
    assert pi["in"] > rope["in"] + 0.4, "interpolation without fine-tuning costs a lot inside L"
    assert rope["in"] < yarn["in"] < pi["in"]
    for part in ("mid", "far"):
        assert pi[part] < rope[part], "interpolation beats plain RoPE from t = 64 on"
        assert yarn[part] < pi[part]


@pytest.mark.parametrize("seed", SEEDS)
def test_no_code_has_not_found_the_previous_character(corpus, models, seed):
    probe = text_batch(corpus.held_out, batch_size=64, length=L, generator=torch.Generator().manual_seed(1)).tokens
    uniform = torch.diagonal(uniform_causal_weights(L), -1).mean().item()
    best = {code: weight_back(models[code, seed][0], probe, 1).max(dim=1).values for code in CODES}
    assert best["none"].max().item() < uniform + 0.06
    assert best["learned"].max().item() < uniform + 0.07
    assert best["rope"][1].item() > 0.4
    assert best["sinusoidal"][0].item() > uniform + 0.02


@pytest.mark.parametrize("seed", SEEDS)
def test_nearby_rows_of_the_learned_table_are_alike_and_rows_past_L_untrained(corpus, models, seed):
    table = models["learned", seed][0].position.table.weight.detach()
    start = TinyTransformer(_config(corpus, "learned"), seed=seed).position.table.weight.detach()
    band = band_summary(table[:L])
    assert band["offset 1"] > band["offset >= 5"] + 0.1
    assert band["offset 2"] > band["offset >= 5"] + 0.1
    assert torch.equal(table[L:], start[L:])
    assert table[L:].norm(dim=1).mean() < 0.15 < 0.5 < table[:L].norm(dim=1).mean()


@pytest.mark.parametrize("seed", SEEDS)
def test_alibi_does_not_use_the_far_characters_and_a_window_rescues_rope(cut, seed):
    difference = {code: cut[code, seed][0] - cut[code, seed][1] for code in CODES}
    assert abs(difference["alibi"]) < 0.03
    assert difference["rope"] > 0.6
    assert difference["sinusoidal"] > 0.05
    assert -0.02 < difference["none"] < 0.1 and -0.02 < difference["learned"] < 0.15
    assert cut["rope", seed][1] < cut["alibi", seed][0], "RoPE with a window beats ALiBi on the whole prefix"


@pytest.mark.parametrize("seed", SEEDS)
def test_training_loss_rope_lowest_then_alibi(models, seed):
    final = {code: sum(models[code, seed][1].loss[-20:]) / 20 for code in CODES}
    ordered = sorted(final, key=final.get)
    assert ordered[:2] == ["rope", "alibi"]
