"""Lesson 05's trained claims, re-checked on seeds the lesson does not show (5, 6, 7).

The lesson trains the one-layer, two-head model on previous-token for 120 steps at lr 1e-2
(seeds 0-2 for the amplitudes, 0-4 for add vs concat) and claims, on every seed:
- A = 0.1 is never used (no-position score), A = 1 learns the task, A = 8 learns it later;
- where the code is used the token embeddings' share in the code's directions falls, where it
  is not used the share stays;
- concatenating an 8-wide code at the same width is not better than adding: it reaches 90 %
  about as fast as addition, but has a lower test accuracy at 120 steps on every seed (lesson:
  by 0.028-0.131 on seeds 0-4; seeds 5-7 here: by 0.05-0.09); with twice the steps addition
  passes the 2x rule and concatenation catches up (a speed difference);
- a ten-line PyTorch loop gives exactly train's loss curve.

Section 5's read-outs of token + code (no training; the lesson draws its 64 tokens with seed 1,
here seeds 2-5): the logistic token probe reads every token at every scale; the position probe
reads nearly every position for small tokens, fewer than half at tensor2tensor's scale (lesson
0.379) and about one in ten with N(0, 1) x sqrt(d) tokens (lesson 0.092): above chance (1/64),
far below the code alone (1.000). The least-squares probe's 0.002 that the lesson once reported
there (128 tokens) was an artefact: below chance, where the logistic probe is above it.
"""

import functools
import math

import pytest
import torch

from course_utils import (ModelConfig, TinyTransformer, evaluate, logistic_probe, make_batch,
                          principal_directions, share_in_subspace, sinusoidal_encoding,
                          steps_to_accuracy, token_recovery, train)

TASK, STEPS, LR = "previous_token", 120, 1e-2
SEEDS = [5, 6, 7]
DIRECTIONS = principal_directions(sinusoidal_encoding(16, 32, dtype=torch.float64), 0.99)


def tiny(seed: int, **options) -> TinyTransformer:
    config = ModelConfig(vocab_size=16, d_model=32, n_layers=1, position="sinusoidal", **options)
    return TinyTransformer(config, seed=seed)


def share(embeddings: torch.Tensor) -> float:
    return share_in_subspace(embeddings - embeddings.mean(dim=0), DIRECTIONS)


@functools.lru_cache(maxsize=None)
def run(seed: int, amplitude: float = 1.0, concat: bool = False) -> dict:
    options = dict(combine="concat", d_position=8) if concat else dict(position_scale=amplitude)
    model = tiny(seed, **options)
    start = model.token_embedding.weight.detach().clone()
    history = train(model, TASK, steps=STEPS, lr=LR, seed=seed, progress=False)
    reached = steps_to_accuracy(history.accuracy, 0.9)
    return dict(test=evaluate(model, TASK, length=16, seed=20_000 + seed),
                reached=math.inf if reached is None else reached,
                share_change=None if concat else share(model.token_embedding.weight) - share(start))


@pytest.mark.parametrize("seed", SEEDS)
def test_too_small_a_code_is_unused_too_large_a_code_is_late(seed):
    small, unit, large = run(seed, 0.1), run(seed, 1.0), run(seed, 8.0)
    assert small["test"] < 0.3 and small["reached"] == math.inf, "A = 0.1: the blind score (0.19)"
    assert unit["test"] > 0.95 and unit["reached"] <= 90, "A = 1 learns previous-token"
    assert large["test"] > 0.8, "A = 8 learns it too (far above the blind 0.19)"
    assert large["reached"] > unit["reached"] + 5, "... but reaches 90 % later than A = 1"


@pytest.mark.parametrize("seed", SEEDS)
def test_tokens_move_out_of_the_code_directions_only_when_the_code_is_used(seed):
    assert abs(run(seed, 0.1)["share_change"]) < 0.01
    assert run(seed, 1.0)["share_change"] < -0.01
    assert run(seed, 8.0)["share_change"] < -0.01


@pytest.mark.parametrize("seed", SEEDS)
def test_concatenation_is_as_fast_to_90_percent_but_ends_lower(seed):
    added, concatenated = run(seed, 1.0), run(seed, concat=True)
    assert concatenated["test"] > 0.75, "concatenation learns the task too"
    assert abs(concatenated["reached"] - added["reached"]) <= 15, "about as fast to 90 %"
    assert concatenated["test"] < added["test"] - 0.01, "lower test accuracy at 120 steps"


def plain_loop(model: TinyTransformer, steps: int, seed: int) -> list[float]:
    """The lesson's my_train: what train does, written out."""
    generator = torch.Generator().manual_seed(seed)
    optimiser = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)
    losses = []
    for _ in range(steps):
        length = int(torch.randint(8, 16 + 1, (1,), generator=generator))
        batch = make_batch(TASK, batch_size=32, length=length, vocab_size=16, generator=generator)
        loss = torch.nn.functional.cross_entropy(model(batch.tokens)[batch.scored],
                                                 batch.targets[batch.scored])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("seed", SEEDS)
def test_a_plain_pytorch_loop_gives_the_loss_curve_of_train(seed):
    mine = plain_loop(tiny(seed), 15, seed)
    theirs = train(tiny(seed), TASK, steps=15, lr=LR, seed=seed, batch_size=32, lengths=(8, 16),
                   progress=False).loss
    assert len(mine) == len(theirs) == 15
    assert max(abs(a - b) for a, b in zip(mine, theirs)) < 1e-6


@functools.lru_cache(maxsize=None)
def accuracy_after(seed: int, steps: int, concat: bool) -> float:
    """The lesson's section-8 model trained for ``steps``, its test accuracy as the lesson measures it."""
    model = tiny(seed, **(dict(combine="concat", d_position=8) if concat else {}))
    train(model, TASK, steps=steps, lr=LR, seed=seed, progress=False)
    return evaluate(model, TASK, length=16)


def test_twice_the_steps_addition_is_converged_and_concatenation_catches_up():
    """The lesson's budget line (seeds 0-2): the 2x rule holds for addition (mean test accuracy moves
    by less than 0.01) and fails for concatenation, which reaches addition to within 0.01."""
    def mean(concat: bool, steps: int) -> float:
        return sum(accuracy_after(seed, steps, concat) for seed in (0, 1, 2)) / 3

    assert abs(mean(False, 2 * STEPS) - mean(False, STEPS)) < 0.01, "addition passes the 2x rule"
    assert mean(True, 2 * STEPS) - mean(True, STEPS) > 0.01, "concatenation does not: still learning"
    for seed in (0, 1, 2, *SEEDS):
        assert accuracy_after(seed, 2 * STEPS, False) - accuracy_after(seed, 2 * STEPS, True) < 0.02


# --- section 5: reading token and position back from token + code ----------------------------

POSITIONS, D = 64, 64
CODE = sinusoidal_encoding(POSITIONS, D, dtype=torch.float64)
CHANCE = 1 / POSITIONS


def unit_tokens(seed: int, vocab: int = 64) -> torch.Tensor:
    return torch.randn(vocab, D, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("seed", [2, 3, 4, 5])
def test_the_token_is_always_read_and_big_tokens_swamp_most_of_the_position(seed):
    small, t2t_init, t2t, bug = (token_recovery(scale * unit_tokens(seed), CODE)
                                 for scale in (0.02, D**-0.5, 1.0, 8.0))
    assert all(r.token_probe == 1.0 for r in (small, t2t_init, t2t, bug)), "every token, every scale"
    assert small.nearest_token < 0.05 and t2t_init.nearest_token < 0.25, "naively, small tokens are lost"
    assert t2t.nearest_token == bug.nearest_token == 1.0
    assert small.position_probe > 0.95 and t2t_init.position_probe > 0.95, "small tokens: position read"
    assert t2t.position_probe < 0.5, "tensor2tensor's scale: the position from fewer than half"
    assert 2 * CHANCE < bug.position_probe < 0.15, "N(0, 1) x sqrt(d): above chance, ~1 in 10"


def test_the_code_alone_is_read_perfectly():
    vocab = 64
    alone = logistic_probe(CODE.repeat(vocab, 1), torch.arange(POSITIONS).repeat(vocab), seed=0)
    assert alone.test_accuracy == 1.0


def test_the_least_squares_below_chance_score_was_a_probe_artefact():
    """The lesson's old setup (128 tokens, seed 1, N(0, 1) x sqrt(d)): least squares read 0.002."""
    tokens = 8.0 * unit_tokens(1, vocab=128)
    least_squares = token_recovery(tokens, CODE, probe="least_squares").position_probe
    logistic = token_recovery(tokens, CODE).position_probe
    assert least_squares < CHANCE < logistic < 0.15
