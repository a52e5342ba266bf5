"""The lessons' recipes (course_utils/recipes.py): what each reading is, and what each refuses."""

import pytest

from course_utils import ModelConfig, TinyTransformer, read_past, with_rope_scaling
from course_utils.recipes import COPY_L, READINGS

ROPE = TinyTransformer(ModelConfig(vocab_size=16, d_model=32, n_heads=2, n_layers=1, max_len=64, position="rope",
                                   causal=True), seed=0)


@pytest.mark.parametrize("reading", list(READINGS))
def test_each_reading_is_with_rope_scaling_at_the_trained_length(reading):
    scaling, fast, slow = READINGS[reading]
    got = read_past(ROPE, reading, 4.0).config.rope_scaling
    expected = (with_rope_scaling(ROPE, None) if scaling is None else with_rope_scaling(
        ROPE, scaling, factor=4.0, original_max_len=COPY_L, beta_fast=fast, beta_slow=slow)).config.rope_scaling
    assert got == expected


def test_betas_replace_yarns_own_and_go_with_yarn_only():
    assert read_past(ROPE, "YaRN", 2.0, (2.0, 0.25)).config.rope_scaling.beta_slow == 0.25
    with pytest.raises(ValueError, match="betas"):
        read_past(ROPE, "PI", 2.0, (2.0, 0.25))
    with pytest.raises(ValueError, match="betas"):
        read_past(ROPE, "YaRN", 2.0, (0.25, 2.0))
    with pytest.raises(ValueError, match="factor"):
        read_past(ROPE, "none", 0.5)
