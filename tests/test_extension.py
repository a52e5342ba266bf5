"""Lesson 12's context extension (course_utils.extension), cross-checked against Hugging Face.

transformers' ROPE_INIT_FUNCTIONS ("linear", "dynamic", "yarn") is the implementation learners
meet in real configs; it is a test-only reference here (a config object, no weights).
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

from course_utils import (RopeScaling, ModelConfig, TinyTransformer, angle_coverage, attention_entropy, frequencies,
                          rope_frequencies, rope_rotate,
                          with_rope_scaling, yarn_attention_scale, yarn_ramp)

HEADS = 2
SETTINGS = st.tuples(
    st.integers(2, 64).map(lambda half: 2 * half),  # d: 4 .. 128
    st.floats(100.0, 1e6),  # base
    st.floats(1.0, 64.0),  # factor
    st.integers(16, 8192),  # the training length L
)


def _hugging_face(kind: str, d: int, base: float, factor: float, original: int, *, max_len: int | None = None,
                  seq_len: int | None = None) -> tuple[torch.Tensor, float]:
    parameters = {"rope_type": kind, "rope_theta": base, "factor": factor}
    if kind == "yarn":
        parameters["original_max_position_embeddings"] = original
    config = LlamaConfig(hidden_size=d * HEADS, num_attention_heads=HEADS,
                         max_position_embeddings=max_len or original, rope_parameters=parameters)
    if kind == "dynamic":
        return ROPE_INIT_FUNCTIONS[kind](config, "cpu", seq_len=seq_len)
    return ROPE_INIT_FUNCTIONS[kind](config, "cpu")


def _close(ours: torch.Tensor, theirs: torch.Tensor) -> None:
    # Hugging Face computes in float32; ours is float64.
    assert ours.dtype == torch.float64 and ours.shape == theirs.shape
    torch.testing.assert_close(ours.float(), theirs, rtol=2e-5, atol=0)


@settings(max_examples=examples(40), deadline=None)
@given(SETTINGS)
def test_linear_scaling_is_hugging_faces_linear(setting):
    d, base, factor, original = setting
    theirs, attention_factor = _hugging_face("linear", d, base, factor, original)
    _close(rope_frequencies(d, base=base, scaling="linear", factor=factor), theirs)
    assert attention_factor == 1.0


@settings(max_examples=examples(40), deadline=None)
@given(SETTINGS, st.floats(0.1, 16.0))
def test_dynamic_scaling_is_hugging_faces_dynamic_at_every_length(setting, stretch):
    d, base, factor, original = setting
    length = max(1, round(original * stretch))
    theirs, _ = _hugging_face("dynamic", d, base, factor, original, seq_len=length)
    ours = rope_frequencies(d, base=base, scaling="dynamic", factor=factor, original_max_len=original,
                            length=length)
    _close(ours, theirs)
    if length <= original:  # within the trained length nothing changes
        torch.testing.assert_close(ours, frequencies(d, base=base))


@settings(max_examples=examples(40), deadline=None)
@given(SETTINGS, st.sampled_from([(32.0, 1.0), (16.0, 2.0), (64.0, 0.5)]))
def test_yarn_is_hugging_faces_yarn_with_its_truncated_ramp(setting, betas):
    d, base, factor, original = setting
    beta_fast, beta_slow = betas
    parameters = {"rope_type": "yarn", "rope_theta": base, "factor": factor,
                  "original_max_position_embeddings": original, "beta_fast": beta_fast, "beta_slow": beta_slow}
    config = LlamaConfig(hidden_size=d * HEADS, num_attention_heads=HEADS,
                         max_position_embeddings=round(original * factor), rope_parameters=parameters)
    theirs, attention_factor = ROPE_INIT_FUNCTIONS["yarn"](config, "cpu")
    ours = rope_frequencies(d, base=base, scaling="yarn", factor=factor, original_max_len=original,
                            beta_fast=beta_fast, beta_slow=beta_slow)
    _close(ours, theirs)
    assert yarn_attention_scale(factor) == pytest.approx(attention_factor, rel=1e-12)


@settings(max_examples=examples(40), deadline=None)
@given(SETTINGS)
def test_ntk_keeps_the_fastest_pair_and_interpolates_the_slowest(setting):
    d, base, factor, _ = setting
    plain = frequencies(d, base=base)
    ntk = rope_frequencies(d, base=base, scaling="ntk", factor=factor)
    torch.testing.assert_close(ntk[0], plain[0])
    torch.testing.assert_close(ntk[-1], plain[-1] / factor, rtol=1e-9, atol=0)
    ratio = plain / ntk  # each pair is slowed by s^(2i/(d-2)): from 1 up to s, geometrically
    torch.testing.assert_close(ratio, factor ** (2 * torch.arange(d // 2, dtype=torch.float64) / (d - 2)),
                               rtol=1e-9, atol=0)


def test_dynamic_is_ntk_with_the_factor_that_the_length_asks_for():
    ours = rope_frequencies(16, scaling="dynamic", factor=1.0, original_max_len=64, length=256)
    torch.testing.assert_close(ours, rope_frequencies(16, scaling="ntk", factor=4.0))
    ours = rope_frequencies(16, scaling="dynamic", factor=2.0, original_max_len=64, length=256)
    torch.testing.assert_close(ours, rope_frequencies(16, scaling="ntk", factor=2 * 4.0 - 1))


def test_the_yarn_ramp_keeps_fast_pairs_and_interpolates_slow_ones():
    d, original = 64, 64
    gamma = yarn_ramp(d, original_max_len=original)
    turns = original * frequencies(d) / (2 * math.pi)  # how often each pair turns within L
    assert gamma.shape == (32,) and gamma.dtype == torch.float64
    assert (gamma[turns >= 32] == 1).all() and (gamma[turns <= 1] == 0).all()
    assert (gamma.diff() <= 0).all(), "the weight of the original frequency falls from fast to slow pairs"
    omega = rope_frequencies(d, scaling="yarn", factor=8.0, original_max_len=original)
    torch.testing.assert_close(omega[turns >= 32], frequencies(d)[turns >= 32])
    torch.testing.assert_close(omega[turns <= 1], frequencies(d)[turns <= 1] / 8)


def test_no_scaling_and_factor_one_change_nothing():
    plain = frequencies(32, base=500.0)
    torch.testing.assert_close(rope_frequencies(32, base=500.0), plain, rtol=0, atol=0)
    for scaling in ("linear", "ntk", "yarn"):
        torch.testing.assert_close(rope_frequencies(32, base=500.0, scaling=scaling, factor=1.0,
                                                    original_max_len=64), plain)
    assert yarn_attention_scale(1.0) == 1.0


def test_rope_rotate_takes_frequencies_and_checks_them():
    x = torch.randn(3, 6, 8, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(rope_rotate(x, frequencies=frequencies(8, base=100.0)), rope_rotate(x, base=100.0))
    positions = torch.arange(6, dtype=torch.float64)
    torch.testing.assert_close(rope_rotate(x, positions=positions, frequencies=frequencies(8) / 4),
                               rope_rotate(x, positions=positions / 4))
    with pytest.raises(ValueError, match="frequencies"):
        rope_rotate(x, frequencies=torch.ones(3))
    with pytest.raises(ValueError, match="frequencies"):
        rope_rotate(x, frequencies=-torch.ones(4))
    with pytest.raises(TypeError, match="frequencies"):
        rope_rotate(x, frequencies=[1.0, 1.0, 1.0, 1.0])


def _rope_model(**extra) -> TinyTransformer:
    return TinyTransformer(ModelConfig(vocab_size=12, d_model=32, n_heads=2, position="rope", causal=True, **extra),
                           seed=3)


def test_a_scaled_model_is_the_same_weights_read_with_other_frequencies():
    model = _rope_model()
    tokens = torch.randint(0, 12, (2, 40), generator=torch.Generator().manual_seed(1))
    assert with_rope_scaling(model, None) is not model
    torch.testing.assert_close(with_rope_scaling(model, None)(tokens), model(tokens), rtol=0, atol=0)
    linear = with_rope_scaling(model, "linear", factor=4.0)
    assert linear.config.rope_scaling == RopeScaling("linear", factor=4.0) and model.config.rope_scaling is None
    for name, value in model.state_dict().items():
        torch.testing.assert_close(linear.state_dict()[name], value, rtol=0, atol=0)
    assert (linear(tokens) - model(tokens)).abs().max() > 1e-3
    q = torch.randn(2, 2, 40, 16, dtype=torch.float64)
    positions = torch.arange(40, dtype=torch.float64)
    torch.testing.assert_close(linear.rotary(40)(q), rope_rotate(q, positions=positions / 4))
    yarn = with_rope_scaling(model, "yarn", factor=4.0, original_max_len=10)
    omega = rope_frequencies(16, scaling="yarn", factor=4.0, original_max_len=10)
    torch.testing.assert_close(yarn.rotary(40)(q),
                               yarn_attention_scale(4.0) * rope_rotate(q, positions=positions, frequencies=omega))
    dynamic = with_rope_scaling(model, "dynamic", original_max_len=40)
    torch.testing.assert_close(dynamic(tokens), model(tokens), rtol=0, atol=0)  # not longer than L
    assert (dynamic(torch.cat([tokens, tokens], 1))[:, :40] - model(torch.cat([tokens, tokens], 1))[:, :40]
            ).abs().max() > 1e-4, "at 80 tokens the dynamic model stretches every position, early ones too"


def test_a_scaled_model_can_be_fine_tuned_without_touching_the_original():
    model = _rope_model()
    scaled = with_rope_scaling(model, "linear", factor=2.0)
    before = model.blocks[0].attention.qkv.weight.clone()
    loss = scaled(torch.zeros(1, 8, dtype=torch.long)).sum()
    loss.backward()
    with torch.no_grad():
        for p in scaled.parameters():
            p -= 0.1 * p.grad
    torch.testing.assert_close(model.blocks[0].attention.qkv.weight, before, rtol=0, atol=0)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(d=16, scaling="linear", factor=0.5), ValueError, "factor"),
    (dict(d=16, scaling="linear", factor=float("nan")), ValueError, "factor"),
    (dict(d=15, scaling="linear", factor=2.0), ValueError, "d must"),
    (dict(d=16, scaling="yarn", factor=2.0), ValueError, "original_max_len"),
    (dict(d=16, scaling="dynamic", factor=2.0), ValueError, "original_max_len"),
    (dict(d=16, scaling="dynamic", factor=2.0, original_max_len=8), ValueError, "length"),
    (dict(d=16, scaling="xpos", factor=2.0), ValueError, "scaling"),
    (dict(d=2, scaling="ntk", factor=2.0), ValueError, "d must be at least 4"),
    (dict(d=16, scaling="yarn", factor=2.0, original_max_len=8, beta_fast=1.0, beta_slow=2.0), ValueError,
     "beta_slow"),
    (dict(d=16, scaling="linear", factor="2"), TypeError, "factor"),
])
def test_rope_frequencies_refuses_bad_arguments_by_name(kwargs, error, match):
    d = kwargs.pop("d")
    with pytest.raises(error, match=match):
        rope_frequencies(d, **kwargs)


def test_scaling_is_checked_in_the_model_config_and_in_with_rope_scaling():
    with pytest.raises(ValueError, match="rope_scaling"):
        ModelConfig(vocab_size=4, position="alibi", rope_scaling=RopeScaling("linear", factor=2.0))
    with pytest.raises(TypeError, match="rope_scaling must be a RopeScaling"):
        ModelConfig(vocab_size=4, position="rope", rope_scaling="linear")
    with pytest.raises(ValueError, match="rope_scaling.*at least 4"):
        ModelConfig(vocab_size=4, d_model=4, n_heads=2, position="rope", rope_scaling=RopeScaling("ntk", factor=2.0))
    with pytest.raises(TypeError, match="model"):
        with_rope_scaling("model", "linear", factor=2.0)
    with pytest.raises(ValueError, match="position"):
        with_rope_scaling(TinyTransformer(ModelConfig(vocab_size=4, position="alibi")), "linear", factor=2.0)
    with pytest.raises(ValueError, match="original_max_len"):
        with_rope_scaling(_rope_model(), "yarn", factor=2.0)
    with pytest.raises(ValueError, match="beta_fast"):
        with_rope_scaling(_rope_model(), "linear", factor=2.0, beta_fast=2.0)
    with pytest.raises(ValueError, match="beta_slow"):
        with_rope_scaling(_rope_model(), "yarn", factor=2.0, original_max_len=8, beta_fast=1.0, beta_slow=1.0)


def test_yarn_thresholds_reach_the_model():
    yarn = with_rope_scaling(_rope_model(), "yarn", factor=4.0, original_max_len=16, beta_fast=1.0, beta_slow=0.05)
    assert yarn.config.rope_scaling == RopeScaling("yarn", factor=4.0, original_max_len=16, beta_fast=1.0,
                                                   beta_slow=0.05)
    q = torch.randn(1, 2, 20, 16, dtype=torch.float64)
    omega = rope_frequencies(16, scaling="yarn", factor=4.0, original_max_len=16, beta_fast=1.0, beta_slow=0.05)
    torch.testing.assert_close(yarn.rotary(20)(q), yarn_attention_scale(4.0) * rope_rotate(q, frequencies=omega))


def test_angle_coverage_is_the_share_of_the_circle_each_pair_reached():
    omega = frequencies(16)
    coverage = angle_coverage(omega, 16)
    torch.testing.assert_close(coverage, (15 * omega / (2 * math.pi)).clamp(max=1))
    assert coverage[0] == 1 and (coverage[1:] < 1).all(), "at L = 16 only the fastest pair turns a full circle"
    pi = rope_frequencies(16, scaling="linear", factor=4.0)
    assert (angle_coverage(pi, 64) <= angle_coverage(omega, 16) + omega / (2 * math.pi)).all()
    with pytest.raises(ValueError, match="frequencies"):
        angle_coverage(-omega, 16)
    with pytest.raises(ValueError, match="length"):
        angle_coverage(omega, 0)


def test_attention_entropy_is_zero_for_one_key_and_log_m_for_m_keys():
    one_hot = torch.eye(5, dtype=torch.float64)
    torch.testing.assert_close(attention_entropy(one_hot), torch.zeros(5, dtype=torch.float64))
    causal_uniform = torch.tril(torch.ones(5, 5, dtype=torch.float64))
    causal_uniform /= causal_uniform.sum(-1, keepdim=True)
    torch.testing.assert_close(attention_entropy(causal_uniform), torch.log(torch.arange(1.0, 6.0, dtype=torch.float64)))
    with pytest.raises(ValueError, match="weights"):
        attention_entropy(torch.ones(2, 3))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(kind="longrope"), ValueError, "kind"),
    (dict(kind="linear", factor=0.5), ValueError, "factor"),
    (dict(kind="yarn", factor=2.0), ValueError, "original_max_len"),
    (dict(kind="dynamic", factor=2.0), ValueError, "original_max_len"),
    (dict(kind="linear", factor=2.0, beta_fast=4.0), ValueError, "beta_fast"),
    (dict(kind="yarn", factor=2.0, original_max_len=8, beta_fast=1.0, beta_slow=2.0), ValueError, "beta_slow"),
    (dict(kind="yarn", factor=2.0, original_max_len=0), ValueError, "original_max_len"),
    (dict(kind=3), ValueError, "kind"),
    (dict(kind="linear", factor=2.0, attention_factor=1.0), ValueError, "attention_factor"),
    (dict(kind="yarn", factor=2.0, original_max_len=8, attention_factor=0.0), ValueError, "attention_factor"),
    (dict(kind="yarn", factor=2.0, original_max_len=8, attention_factor="1"), TypeError, "attention_factor"),
])
def test_a_rope_scaling_record_is_checked_when_it_is_made(kwargs, error, match):
    with pytest.raises(error, match=match):
        RopeScaling(**kwargs)


@pytest.mark.parametrize("rule", [RopeScaling("linear", factor=4.0), RopeScaling("ntk", factor=4.0),
                                  RopeScaling("yarn", factor=4.0, original_max_len=16, beta_fast=8.0, beta_slow=0.5),
                                  RopeScaling("dynamic", factor=2.0, original_max_len=16)])
def test_one_record_means_the_same_everywhere(rule):
    """The record, its loose arguments, the model that holds it and with_rope_scaling agree."""
    loose = dict(scaling=rule.kind, factor=rule.factor, original_max_len=rule.original_max_len)
    if rule.kind == "yarn":
        loose.update(beta_fast=rule.beta_fast, beta_slow=rule.beta_slow)
    assert torch.equal(rope_frequencies(16, scaling=rule, length=40), rope_frequencies(16, **loose, length=40))
    assert torch.equal(rule.frequencies(16, length=40), rope_frequencies(16, **loose, length=40))
    model = _rope_model()
    by_name = with_rope_scaling(model, **loose)
    by_record = with_rope_scaling(model, rule)
    assert by_name.config == by_record.config and by_record.config.rope_scaling == rule
    tokens = torch.randint(0, 8, (2, 40), generator=torch.Generator().manual_seed(0))
    assert torch.equal(by_name(tokens), by_record(tokens))
    with pytest.raises(ValueError, match="RopeScaling"):
        rope_frequencies(16, scaling=rule, factor=2.0)
    with pytest.raises(ValueError, match="factor"):
        with_rope_scaling(model, rule, factor=2.0)


def test_yarn_attention_factor_sets_the_temperature_and_nothing_else():
    """attention_factor (Hugging Face's name) replaces YaRN's fitted 0.1·ln s + 1 on queries and keys;
    1.0 gives YaRN's frequencies without a temperature: every logit divided by the fit's square."""
    fitted = RopeScaling("yarn", factor=4.0, original_max_len=16)
    cold = RopeScaling("yarn", factor=4.0, original_max_len=16, attention_factor=1.0)
    assert fitted.attention_scale == yarn_attention_scale(4.0) and cold.attention_scale == 1.0
    assert torch.equal(fitted.frequencies(16), cold.frequencies(16))
    model = _rope_model()
    tokens = torch.randint(0, 8, (2, 40), generator=torch.Generator().manual_seed(0))
    hot = with_rope_scaling(model, fitted)(tokens, details=True)
    plain = with_rope_scaling(model, cold)(tokens, details=True)
    torch.testing.assert_close(hot.attention_logits[0], plain.attention_logits[0] * yarn_attention_scale(4.0) ** 2,
                               rtol=1e-5, atol=1e-5)
