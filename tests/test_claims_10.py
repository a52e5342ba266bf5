"""Lesson 10's length-generalisation claims, on three seeds (the lesson shows seed 0)."""

import pytest

from course_utils import ModelConfig, TinyTransformer, evaluate, train

CODES = ["none", "integer", "normalised", "sinusoidal", "learned", "relative", "alibi", "rope"]


def accuracies(code: str, seed: int) -> dict[int, float]:
    config = ModelConfig(vocab_size=8, d_model=32, n_heads=2, n_layers=1, max_len=64, position=code, causal=True)
    model = TinyTransformer(config, seed=seed)
    train(model, "previous_token", steps=150, lengths=(8, 16), lr=5e-3, seed=seed, progress=False)
    return {n: evaluate(model, "previous_token", length=n, n_batches=2, seed=10_000 + seed) for n in (16, 64)}


@pytest.fixture(scope="module", params=[0, 1, 2], ids=lambda s: f"seed{s}")
def table(request):
    return {code: accuracies(code, request.param) for code in CODES}


def test_every_real_code_but_alibi_learns_the_task_at_the_training_length(table):
    for code in ("integer", "normalised", "sinusoidal", "learned", "relative", "rope"):
        assert table[code][16] > 0.85, code
    assert table["none"][16] < 0.5
    assert table["alibi"][16] < 0.6, "a monotone distance penalty cannot single out one step back in one layer"


def test_relative_codes_generalise_best_past_the_training_length(table):
    for relative in ("relative", "rope"):
        assert table[relative][64] > 0.55
        for absolute in ("integer", "sinusoidal", "learned"):
            assert table[relative][64] > table[absolute][64] + 0.15, (relative, absolute)


def test_absolute_input_codes_lose_most_of_their_accuracy_at_length_64(table):
    for code in ("integer", "sinusoidal", "learned"):
        assert table[code][64] < table[code][16] - 0.4, code
