"""Tests for course_utils.interleaving and the per-layer settings of ModelConfig (lesson 16):
NoPE layers in a RoPE model, a sliding window on the rotating layers, Llama 4's temperature."""

import math

import pytest
import torch

from course_utils import (loss_by_position, long_context_scale, ModelConfig, pair_logits, streaming_loss,
                          TinyTransformer, with_attn_temperature)
from course_utils.attention import causal_mask
from course_utils.interleaving import checked_nope_layers, layer_plan, llama4_temperature, window_mask

BASE = dict(vocab_size=11, d_model=16, n_heads=2, n_layers=2, max_len=32, position="rope", causal=True)


def model(**options) -> TinyTransformer:
    return TinyTransformer(ModelConfig(**{**BASE, **options}), seed=3).eval()


def tokens(n=24, batch=3) -> torch.Tensor:
    return torch.randint(0, 11, (batch, n), generator=torch.Generator().manual_seed(0))


def test_without_settings_every_layer_rotates_and_reads_everything():
    plan = layer_plan(ModelConfig(**BASE), 5)
    assert [(p.rotates, p.window, p.query_scale) for p in plan] == [(True, None, None)] * 2
    assert not any(p.rotates for p in layer_plan(ModelConfig(**{**BASE, "position": "alibi"}), 5))


def test_an_empty_nope_list_is_the_plain_model_bit_for_bit():
    x = tokens()
    assert torch.equal(model()(x), model(nope_layers=())(x))


def test_a_nope_layer_is_a_layer_without_the_rotation():
    """Block 2 of the interleaved model computes exactly what block 2 of an unrotated model does."""
    x = tokens()
    interleaved = model(nope_layers=(1,))
    out = interleaved(x, details=True)
    plain = model(position="none")
    plain.load_state_dict(interleaved.state_dict())
    block = interleaved.blocks[1]
    expected = block(out.residuals[1], causal_mask(x.shape[1]))[0]
    assert torch.allclose(out.residuals[2], expected, atol=1e-6)
    assert not torch.allclose(model()(x), interleaved(x), atol=1e-3)  # the rotation mattered


def test_an_all_nope_rope_model_is_offset_free_and_equals_position_none():
    both = model(nope_layers=(0, 1))
    none = model(position="none")
    none.load_state_dict(both.state_dict())
    x = tokens()
    assert torch.allclose(both(x), none(x), atol=1e-6)


def test_the_window_limits_only_the_rotating_layers():
    m = model(nope_layers=(1,), rope_window=4)
    weights = m(tokens(), details=True).attention_weights
    t = torch.arange(24)
    far = (t[:, None] - t[None, :]) >= 4
    assert weights[0][..., far].abs().max() == 0  # block 1 rotates: the last 4 keys only
    assert weights[1][..., far & causal_mask(24)].min() > 0  # block 2 (NoPE) reads the whole prefix


def test_a_window_as_long_as_the_text_changes_nothing():
    x = tokens(n=8)
    assert torch.allclose(model(rope_window=8)(x), model()(x), atol=1e-6)


def test_fused_and_explicit_kernels_agree_with_every_setting():
    options = dict(nope_layers=(1,), rope_window=5, attn_temperature=(4, 0.1))
    fused, explicit = model(attention_kernel="fused", **options), model(**options)
    x = tokens()
    assert torch.allclose(fused(x), explicit(x), atol=1e-5)
    assert torch.allclose(fused(x), explicit(x, details=True).logits, atol=1e-5)


def test_the_streaming_reader_follows_the_plan():
    m = model(nope_layers=(1,), rope_window=6, attn_temperature=(8, 0.2))
    ids = torch.randint(0, 11, (400,), generator=torch.Generator().manual_seed(1))
    assert torch.allclose(streaming_loss(m, ids, length=30, n_windows=4),
                          loss_by_position(m, ids, length=30, n_windows=4), atol=1e-5)


def test_llama4_temperature_is_one_until_the_floor_then_grows_with_the_log():
    scale = llama4_temperature(torch.arange(40), floor_scale=8, attn_scale=0.1)
    assert scale.dtype == torch.float64 and scale.shape == (40,)
    assert torch.equal(scale[:7], torch.ones(7))  # t + 1 < 8
    assert scale[7].item() == pytest.approx(1 + 0.1 * math.log(2))
    assert scale[39].item() == pytest.approx(1 + 0.1 * math.log(6))
    assert torch.equal(scale, long_context_scale("llama4", 40, original_max_len=8))


def test_the_temperature_scales_only_the_nope_layers_queries():
    plan = layer_plan(ModelConfig(**BASE, nope_layers=(1,), attn_temperature=(4, 0.1)), 10, start=2)
    assert plan[0].query_scale is None
    expected = llama4_temperature(torch.arange(2, 12), floor_scale=4, attn_scale=0.1)[:, None]
    assert torch.equal(plan[1].query_scale, expected)
    x = tokens(n=3)  # positions 0-2: t + 1 < 4, scale 1
    assert torch.equal(model(nope_layers=(1,), attn_temperature=(4, 0.1))(x), model(nope_layers=(1,))(x))


def test_window_mask():
    assert torch.equal(window_mask(4, 2), torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0],
                                                       [0, 0, 1, 1]], dtype=torch.bool))
    with pytest.raises(ValueError, match="window"):
        window_mask(4, 0)


@pytest.mark.parametrize("options, message", [
    (dict(nope_layers=(2,)), "nope_layers"),
    (dict(nope_layers=(0, 0)), "repeat"),
    (dict(nope_layers="1"), "nope_layers"),
    (dict(nope_layers=(1,), position="none"), 'position="rope"'),
    (dict(rope_window=4, position="alibi"), 'position="rope"'),
    (dict(rope_window=0), "rope_window"),
    (dict(rope_window=4, causal=False), "causal"),
    (dict(attn_temperature=(8, 0.1)), "nope_layers"),
    (dict(nope_layers=(1,), attn_temperature=(8,)), "floor_scale, attn_scale"),
    (dict(nope_layers=(1,), attn_temperature=(0, 0.1)), "floor_scale"),
])
def test_bad_settings_are_refused_naming_the_field(options, message):
    with pytest.raises((ValueError, TypeError), match=message):
        ModelConfig(**{**BASE, **options})


def test_checked_nope_layers_sorts_and_keeps_a_tuple():
    assert checked_nope_layers([3, 1], 4) == (1, 3)
    assert ModelConfig(**BASE, nope_layers=[1]).nope_layers == (1,)


def test_lesson_10_and_12_tools_refuse_a_nope_layer():
    with pytest.raises(ValueError, match="NoPE layer"):
        pair_logits(model(nope_layers=(1,)), tokens(), head=0, layer=1)
    pair_logits(model(nope_layers=(1,)), tokens(), head=0, layer=0)


def test_with_attn_temperature_copies_and_changes_only_late_positions():
    base = model(nope_layers=(1,))
    tuned = with_attn_temperature(base, floor_scale=8)
    assert base.config.attn_temperature is None and tuned.config.attn_temperature == (8, 0.1)
    x = tokens(n=20)
    before, after = base(x), tuned(x)
    assert torch.equal(before[:, :7], after[:, :7])  # t + 1 < 8: scale 1
    assert not torch.allclose(before[:, 7:], after[:, 7:], atol=1e-4)
    with pytest.raises(ValueError, match="NoPE layers"):
        with_attn_temperature(model(), floor_scale=8)
    with pytest.raises(ValueError, match="floor_scale"):
        with_attn_temperature(base, floor_scale=0)
