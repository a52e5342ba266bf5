"""Lesson 14's claims, re-checked on the zoo's seeds 3, 4 and 5 (the lesson states them for 0, 1, 2).

The models are the zoo's converged capstone language models (`pretrained("capstone", ...)`: two
layers, d_model 64, two heads of 32, trained at L = 128 on load_text_corpus(docstrings=False,
fixed=True) until the validation text stopped improving). The measurements are the lesson's:
the same windows, the same count baselines. The live 100-step run is repeated on seed 3, which
the lesson does not show. Every assertion is a statement of the lesson, with a margin.
"""

import pytest
import torch

from course_utils import (band_summary, counts_by_position, load_text_corpus, loss_by_position, pretrained,
                          sinusoidal_encoding, text_windows, train, uniform_causal_weights, unigram_bigram_bits,
                          validation_split, weight_back, with_rope_scaling)
from course_utils.zoo import build

SEEDS = (3, 4, 5)
CODES = ("none", "sinusoidal", "learned", "rope", "alibi")
THREE = ("sinusoidal", "learned", "rope")  # the codes the lesson finds level inside L
L = 128


@pytest.fixture(scope="module")
def corpus():
    return load_text_corpus(docstrings=False, fixed=True)


@pytest.fixture(scope="module")
def models():
    return {(code, seed): pretrained("capstone", position=code, seed=seed) for code in CODES for seed in SEEDS}


@pytest.fixture(scope="module")
def inside(corpus, models):
    """{(code, seed): (loss at t = 0, mean loss at t = 8..127)} on the lesson's 128 windows of L."""
    out = {}
    for key, model in models.items():
        curve = loss_by_position(model, corpus.held_out, length=L, n_windows=128)
        out[key] = (curve[0].item(), curve[8:].mean().item())
    for name, order in (("bigram", 2), ("unigram", 1)):
        curve = counts_by_position(corpus.train, corpus.held_out, vocab_size=corpus.vocab_size, length=L,
                                   n_windows=128, order=order)
        out[name] = (curve[0].item(), curve[8:].mean().item())
    return out


@pytest.fixture(scope="module")
def far(corpus, models):
    """{(row, seed): {range: mean loss}} on the lesson's 16 windows of 4L, plus the bigram counts."""
    ranges = {"in": (8, L), "near": (L, 2 * L), "far": (2 * L, 4 * L)}
    rows = {}
    for seed in SEEDS:
        for code in ("none", "sinusoidal", "rope", "alibi"):
            rows[code, seed] = models[code, seed]
        rope = models["rope", seed]
        rows["pi", seed] = with_rope_scaling(rope, "linear", factor=4)
        rows["yarn", seed] = with_rope_scaling(rope, "yarn", factor=4, original_max_len=L)
        rows["dynamic", seed] = with_rope_scaling(rope, "dynamic", factor=1, original_max_len=L)
    out = {}
    for key, model in rows.items():
        curve = loss_by_position(model, corpus.held_out, length=4 * L, n_windows=16)
        out[key] = {name: curve[a:b].mean().item() for name, (a, b) in ranges.items()}
    bigram = counts_by_position(corpus.train, corpus.held_out, vocab_size=corpus.vocab_size, length=4 * L,
                                n_windows=16)
    out["bigram"] = {name: bigram[a:b].mean().item() for name, (a, b) in ranges.items()}
    out["rows"] = rows
    return out


@pytest.fixture(scope="module")
def cut(corpus, models):
    """{(code, seed): (whole prefix or None, last L only)} at t = 128..255 of 4 windows of 2L."""
    out = {}
    for (code, seed), model in models.items():
        last = loss_by_position(model, corpus.held_out, length=2 * L, n_windows=4, context=L)[L:].mean().item()
        whole = None if code == "learned" else loss_by_position(model, corpus.held_out, length=2 * L,
                                                                 n_windows=4)[L:].mean().item()
        out[code, seed] = (whole, last)
    return out


def test_the_baselines_are_the_lessons(corpus, inside):
    unigram, bigram = unigram_bigram_bits(corpus.train, corpus.held_out, vocab_size=corpus.vocab_size)
    assert round(unigram, 2) == 4.86 and round(bigram, 2) == 3.57
    for name in ("bigram", "unigram"):  # the counts gain nothing from context
        assert abs(inside[name][0] - inside[name][1]) < 0.1


@pytest.mark.parametrize("seed", SEEDS)
def test_every_code_uses_context_and_three_codes_are_level(inside, seed):
    gain = {code: inside[code, seed][0] - inside[code, seed][1] for code in CODES}
    end = {code: inside[code, seed][1] for code in CODES}
    assert min(gain[code] for code in (*THREE, "alibi")) > 1.2
    assert 1.0 < gain["none"] < 1.6
    assert max(end[code] for code in THREE) - min(end[code] for code in THREE) < 0.1, "no difference"
    assert max(end[code] for code in THREE) < inside["bigram"][1] - 1.2
    assert 0.2 < end["alibi"] - max(end[code] for code in THREE) < 0.5, "ALiBi with two heads ends behind"
    assert end["alibi"] < inside["bigram"][1] - 0.8
    assert 0.25 < end["none"] - max(end[code] for code in THREE) < 0.5, "NoPE 0.37-0.42 bits behind"
    assert abs(end["none"] - end["alibi"]) < 0.1, "NoPE level with two-head ALiBi"


@pytest.mark.parametrize("seed", SEEDS)
def test_past_L_the_sinusoid_and_rope_break_alibi_holds(far, seed):
    bigram, unigram_held_out = far["bigram"], 4.86
    for code in ("sinusoidal", "rope"):
        assert far[code, seed]["near"] > far[code, seed]["in"] + 0.8
        assert far[code, seed]["far"] > unigram_held_out, "worse than the character frequencies alone"
    for part in ("in", "near", "far"):
        assert far["alibi", seed][part] < bigram[part] - 0.8
    none = far["none", seed]
    assert none["in"] + 0.4 < none["near"] < none["far"], "NoPE gets worse past L"
    assert none["far"] > bigram["far"], "at 256-511 worse than the bigram counts"


@pytest.mark.parametrize("seed", SEEDS)
def test_stretching_rope_without_training(corpus, far, seed):
    pi, yarn, dynamic = far["pi", seed], far["yarn", seed], far["dynamic", seed]
    rope, alibi = far["rope", seed], far["alibi", seed]
    assert pi["in"] > 5.0 and min(pi.values()) > 4.5, "PI x4 is useless everywhere"
    assert 0.2 < yarn["in"] - rope["in"] < 0.6, "YaRN costs about 0.4 bits inside L"
    for part in ("near", "far"):
        assert abs(yarn[part] - alibi[part]) < 0.2, "then holds on, level with ALiBi"
    assert 0.03 < dynamic["in"] - rope["in"] < 0.25
    others = [far[row, seed]["near"] for row in ("none", "sinusoidal", "rope", "alibi", "pi", "yarn")]
    assert dynamic["near"] < min(others), "dynamic is the best row at t = 128-255"
    assert dynamic["far"] > 3.3, "and fails at 256-511"
    within = loss_by_position(far["rows"]["dynamic", seed], corpus.held_out, length=L, n_windows=16)
    assert torch.equal(within, loss_by_position(far["rows"]["rope", seed], corpus.held_out, length=L, n_windows=16))


@pytest.mark.parametrize("seed", SEEDS)
def test_nope_finds_the_previous_character_in_layer_2_only(corpus, models, seed):
    probe = text_windows(corpus.held_out, length=L, n_windows=64).tokens
    uniform = torch.diagonal(uniform_causal_weights(L), -1)[7:].mean().item()
    best = {code: weight_back(models[code, seed], probe, 1, first_query=8).max(dim=1).values for code in CODES}
    assert best["none"][0].item() < 2 * uniform, "layer 1: the even share"
    assert best["none"][1].item() > 8 * uniform, "layer 2 finds the previous character"
    sharper = (best["rope"][1], best["sinusoidal"][0], best["learned"][0])
    assert best["none"][1].item() < min(value.item() for value in sharper), "less sharply than those"
    assert best["rope"][1].item() > 0.4 and best["sinusoidal"][0].item() > 0.35 and best["learned"][0].item() > 0.3


@pytest.mark.parametrize("seed", SEEDS)
def test_the_learned_table_comes_out_banded(models, seed):
    model = models["learned", seed]
    table = model.position.table.weight.detach()
    start = build(model.zoo_entry["recipe"]).position.table.weight.detach()
    band, before = band_summary(table), band_summary(start)
    assert band["offset 1"] > 0.85 and band["offset 2"] > 0.7 and band["offset >= 5"] < 0.05
    assert all(abs(value) < 0.03 for value in before.values())
    assert band_summary(sinusoidal_encoding(L, 64))["offset >= 5"] > band["offset >= 5"] + 0.3, "narrower"
    assert 0.4 < table.norm(dim=1).mean() < model.token_embedding.weight.norm(dim=1).mean()


@pytest.mark.parametrize("seed", SEEDS)
def test_alibi_does_not_use_the_far_characters_and_a_window_rescues_the_others(corpus, cut, seed):
    difference = {code: cut[code, seed][0] - cut[code, seed][1] for code in CODES if code != "learned"}
    assert 0.0 < difference["alibi"] < 0.1, "the whole prefix is (a little) worse for ALiBi"
    assert difference["rope"] > 0.5 and difference["sinusoidal"] > 2.0 and difference["none"] > 0.2
    windows = [cut[code, seed][1] for code in THREE]
    assert max(windows) - min(windows) < 0.15, "within 0.15 bits of each other through the window"
    assert max(windows) < cut["alibi", seed][1] < cut["alibi", seed][0]
    bigram = counts_by_position(corpus.train, corpus.held_out, vocab_size=corpus.vocab_size, length=2 * L,
                                n_windows=4)[L:].mean().item()
    assert max(windows) < bigram - 1.0


def test_a_hundred_steps_measure_the_start_not_the_code(corpus, inside):
    """The lesson's live run (rope, seed 0) on seed 3: 100 steps of the zoo's recipe."""
    zoo = pretrained("capstone", position="rope", seed=3)
    recipe = zoo.zoo_entry["recipe"]
    budget = recipe["train"]
    train_ids, _ = validation_split(corpus.train, share=recipe["stopping"]["validation_share"])
    live = build(recipe)
    train(live, train_ids, steps=100, batch_size=budget["batch_size"], lengths=(L, L), lr=budget["lr"],
          weight_decay=budget["weight_decay"], seed=budget["seed"], progress=False)
    bits = loss_by_position(live, corpus.held_out, length=L, n_windows=128)[8:].mean().item()
    assert inside["bigram"][1] - 0.6 < bits < inside["bigram"][1] - 0.05, "near the bigram counts"
    assert bits > inside["rope", 3][1] + 0.8, "far above the converged model"
