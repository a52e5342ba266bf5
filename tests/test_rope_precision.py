"""Lesson 15's precision measurements: angles t·ω_i made in float32 / bf16 / fp16, cross-checked
against Hugging Face's LlamaRotaryEmbedding (which makes them in float32)."""

import math

import pytest
import torch
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

from course_utils import angle_error, rope_frequencies, score_error

POSITIONS = torch.tensor([0, 1, 255, 256, 257, 1000, 32768, 32769, 100000])


def test_float64_is_exact_and_bf16_rounds_positions():
    w = rope_frequencies(16, base=10_000.0)
    assert angle_error(POSITIONS, w, dtype=torch.float64).max() < 1e-12
    # bf16: 257 is not representable (8-bit significand), 256 is; ω_0 = 1 is exact
    bf16 = angle_error(POSITIONS, w, dtype=torch.bfloat16)
    assert bf16[3, 0] == 0 and bf16[4, 0] == pytest.approx(1.0)
    assert (angle_error(POSITIONS, w, dtype=torch.bfloat16) <= math.pi + 1e-12).all()


def test_transformers_float32_angles_are_as_accurate_as_ours():
    config = LlamaConfig(hidden_size=128 * 2, num_attention_heads=2, rope_theta=500_000.0,
                         max_position_embeddings=131072)
    module = LlamaRotaryEmbedding(config)
    positions = torch.tensor([[1, 1000, 32768, 100000, 131071]])
    cos, _ = module(torch.zeros(1, dtype=torch.float32), positions)
    w = rope_frequencies(128, base=500_000.0)
    exact = torch.cos(positions[0, :, None].double() * w)
    theirs = (cos[0, :, :64].double() - exact).abs().max(dim=1).values
    ours = angle_error(positions[0], w, dtype=torch.float32).max(dim=1).values
    assert (theirs < 0.01).all() and (ours < 0.01).all()
    assert theirs[-1] > 1e-4 and ours[-1] > 1e-4  # both visibly rounded at 131k


def test_score_error_is_zero_in_float64_and_grows_in_bf16():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 8, 32, generator=g, dtype=torch.float64)
    w = rope_frequencies(32)
    positions = torch.tensor([5, 500, 50000])
    assert score_error(q, k, positions, frequencies=w, dtype=torch.float64).max() < 1e-12
    bad = score_error(q, k, positions, frequencies=w, dtype=torch.bfloat16)
    assert bad[2] > bad[0]


@pytest.mark.parametrize("call, error, named", [
    (lambda: angle_error([1, 2], rope_frequencies(8), dtype=torch.float32), TypeError, "positions"),
    (lambda: angle_error(torch.tensor([-1]), rope_frequencies(8), dtype=torch.float32), ValueError, "positions"),
    (lambda: angle_error(torch.tensor([1]), rope_frequencies(8), dtype=torch.int32), ValueError, "dtype"),
    (lambda: angle_error(torch.tensor([1]), rope_frequencies(8), dtype="float32"), TypeError, "dtype"),
    (lambda: score_error(torch.zeros(2, 8), torch.zeros(2, 6), torch.tensor([3]),
                         frequencies=rope_frequencies(8), dtype=torch.float32), ValueError, "q and k"),
    (lambda: score_error(torch.zeros(2, 8), torch.zeros(2, 8), torch.tensor([0]),
                         frequencies=rope_frequencies(8), dtype=torch.float32), ValueError, "offset"),
])
def test_bad_arguments_are_refused_by_name(call, error, named):
    with pytest.raises(error, match=named):
        call()
