"""Lesson 05's training claims on three seeds: A = 0.1 is too small to be used in 150 steps, A = 1
learns previous-token, and concatenating an 8-wide code at the same width does about as well."""

import pytest

from course_utils import ModelConfig, TinyTransformer, evaluate, train


def accuracy(seed: int, **options) -> float:
    config = ModelConfig(vocab_size=16, d_model=32, position="sinusoidal", **options)
    model = TinyTransformer(config, seed=seed)
    train(model, "previous_token", steps=150, seed=seed, progress=False)
    return evaluate(model, "previous_token", length=16, seed=10_000 + seed)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_amplitude_and_concatenation_claims(seed):
    tiny_code = accuracy(seed, position_scale=0.1)
    unit_code = accuracy(seed, position_scale=1.0)
    concatenated = accuracy(seed, combine="concat", d_position=8)
    assert tiny_code < 0.35, "A = 0.1 stays near the position-blind baseline (about 0.19)"
    assert unit_code > 0.9
    assert concatenated > unit_code - 0.1, "concatenation at the same width is about as good"
