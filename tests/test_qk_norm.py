"""Lesson 15's QK-norm: rms_norm against Qwen3's RMSNorm, and the order of norm and rotation."""

import pytest
import torch
from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm

from course_utils import rms_norm, rope_rotate


def test_matches_qwen3_rmsnorm():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 16, generator=g)
    module = Qwen3RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        module.weight.copy_(1 + 0.2 * torch.randn(16, generator=g))
        theirs = module(x)
    torch.testing.assert_close(rms_norm(x, module.weight.detach(), eps=1e-6), theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layout", ["interleaved", "halves"])
def test_norm_commutes_with_rotation_only_without_a_per_feature_gain(layout):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 9, 16, generator=g, dtype=torch.float64)
    gain = 1 + 0.3 * torch.randn(16, generator=g, dtype=torch.float64)
    paired = gain[:8].repeat_interleave(2) if layout == "interleaved" else gain[:8].repeat(2)
    for g_, equal in ((None, True), (paired, True), (gain, False)):
        before = rope_rotate(rms_norm(x, g_), layout=layout)
        after = rms_norm(rope_rotate(x, layout=layout), g_)
        assert torch.allclose(before, after, atol=1e-12) == equal


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="gain"):
        rms_norm(torch.ones(2, 4), torch.ones(3))
    with pytest.raises(ValueError, match="eps"):
        rms_norm(torch.ones(2, 4), eps=-1.0)
    with pytest.raises(ValueError, match="eps"):
        rms_norm(torch.zeros(2, 4), eps=0.0)
    with pytest.raises(TypeError, match="x"):
        rms_norm([1.0, 2.0])
