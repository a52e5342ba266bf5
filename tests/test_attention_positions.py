"""RoPE, ALiBi and the relative bias: offset-only scores, lesson 04's rotations, plugged into the model."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import ModelConfig, TinyTransformer, count_parameters, offset_dependence, offset_matrix
from course_utils.attention_positions import RelativeBias, alibi_bias, alibi_slopes, rope_rotate
from course_utils.models import ATTENTION_CODES, POSITIONS


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 12), half=st.integers(1, 8), seed=st.integers(0, 1000))
def test_rope_rotates_row_t_by_lesson_04s_m_t(n, half, seed):
    d = 2 * half
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    rotated = rope_rotate(x)
    for t in range(n):
        torch.testing.assert_close(rotated[t], offset_matrix(t, d, dtype=torch.float64) @ x[t])


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 12), half=st.integers(1, 8), seed=st.integers(0, 1000))
def test_rope_scores_depend_only_on_the_offset(n, half, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(1, 2 * half, generator=g, dtype=torch.float64), torch.randn(1, 2 * half, generator=g, dtype=torch.float64)
    scores = rope_rotate(q.expand(n, -1)) @ rope_rotate(k.expand(n, -1)).T
    assert offset_dependence(scores) < 1e-9


def test_rope_keeps_batch_dimensions_and_norms():
    x = torch.randn(2, 3, 5, 8)
    rotated = rope_rotate(x)
    assert rotated.shape == x.shape
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))
    with pytest.raises(ValueError, match="last dimension"):
        rope_rotate(torch.randn(4, 5))
    with pytest.raises(ValueError, match="positions"):
        rope_rotate(torch.randn(4, 6), torch.arange(3))
    with pytest.raises(TypeError, match="x"):
        rope_rotate([[1.0, 2.0]])


def test_alibi_is_a_fixed_distance_penalty():
    slopes = alibi_slopes(8)
    torch.testing.assert_close(slopes, torch.tensor([2.0 ** -(i + 1) for i in range(8)], dtype=torch.float64))
    bias = alibi_bias(5, 2)
    assert bias.shape == (2, 5, 5)
    assert bias[0, 4, 1].item() == pytest.approx(-0.0625 * 3) and bias[1, 0, 3].item() == pytest.approx(-0.00390625 * 3)
    assert all(offset_dependence(b) == 0 for b in bias)
    with pytest.raises(ValueError, match="n_heads"):
        alibi_bias(4, 0)
    with pytest.raises(ValueError, match="n"):
        alibi_bias(0, 2)


def test_relative_bias_is_learned_per_offset_and_clipped():
    module = RelativeBias(n_heads=3, max_distance=2)
    assert count_parameters(module) == 3 * 5
    with torch.no_grad():
        module.values.copy_(torch.arange(15.0).view(3, 5))
    bias = module(6)
    assert bias.shape == (3, 6, 6)
    assert offset_dependence(bias[0]) == 0
    assert bias[0, 0, 5].item() == 4 and bias[0, 5, 0].item() == 0 and bias[0, 2, 2].item() == 2  # clipped at ±2


@pytest.mark.parametrize("position", POSITIONS)
def test_every_position_code_plugs_into_the_model(position):
    config = ModelConfig(vocab_size=6, d_model=16, n_heads=2, n_layers=1, max_len=12, position=position, causal=True)
    model = TinyTransformer(config)
    tokens = torch.randint(0, 6, (2, 10), generator=torch.Generator().manual_seed(0))
    out = model(tokens, details=True)
    assert out.logits.shape == (2, 10, 6)
    assert torch.isfinite(out.logits).all()
    if position in ATTENTION_CODES:
        assert model.position is None, "attention codes add nothing at the input"


def test_integer_code_is_visible_through_layernorm():
    """t·(1, ..., 1) would vanish in LayerNorm; the model's integer code uses a learned direction."""
    norm = torch.nn.LayerNorm(8)
    x = torch.randn(4, 8)
    torch.testing.assert_close(norm(x + 5.0), norm(x))
    model = TinyTransformer(ModelConfig(vocab_size=6, d_model=8, position="integer"))
    code = model.position(4)
    assert (norm(x + code) - norm(x)).abs().max() > 1e-3
