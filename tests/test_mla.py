"""Lesson 15's MLA: the absorption identity, decoupled RoPE, and cache sizes."""

import pytest
import torch

from course_utils import mla_cache_elements, mla_scores, rope_rotate


def _inputs(seed=0, n=5, heads=3, d_nope=8, rank=6, d_rope=4):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, heads, d_nope, generator=g, dtype=torch.float64),
            torch.randn(n, rank, generator=g, dtype=torch.float64),
            torch.randn(heads, d_nope, rank, generator=g, dtype=torch.float64),
            torch.randn(n, heads, d_rope, generator=g, dtype=torch.float64),
            torch.randn(n, d_rope, generator=g, dtype=torch.float64))


def test_scores_are_query_key_dot_products():
    q, latent, w_uk, q_rope, k_rope = _inputs()
    scores = mla_scores(q, latent, w_uk, q_rope=q_rope, k_rope=k_rope)
    h, s, t = 1, 3, 2
    key = w_uk[h] @ latent[t]
    turned_q = rope_rotate(q_rope[:, h])[s]
    turned_k = rope_rotate(k_rope)[t]
    assert scores[h, s, t].item() == pytest.approx((q[s, h] @ key + turned_q @ turned_k).item())


@pytest.mark.parametrize("seed", range(3))
def test_absorption_holds_with_decoupled_rope_and_fails_with_rope_on_the_latent(seed):
    q, latent, w_uk, q_rope, k_rope = _inputs(seed)
    torch.testing.assert_close(mla_scores(q, latent, w_uk, absorbed=True), mla_scores(q, latent, w_uk))
    torch.testing.assert_close(mla_scores(q, latent, w_uk, q_rope=q_rope, k_rope=k_rope, absorbed=True),
                               mla_scores(q, latent, w_uk, q_rope=q_rope, k_rope=k_rope))
    exact = mla_scores(q, latent, w_uk, rotate_nope=True)
    assert not torch.allclose(mla_scores(q, latent, w_uk, rotate_nope=True, absorbed=True), exact)
    # the exact rotated score depends only on the offset: shifting every position keeps it
    keys = torch.einsum("hdr,tr->htd", w_uk, latent)
    shifted = torch.einsum("hsd,htd->hst", rope_rotate(q.transpose(0, 1), positions=torch.arange(5.0) + 9),
                           rope_rotate(keys, positions=torch.arange(5.0) + 9))
    torch.testing.assert_close(shifted, exact)


def test_deepseek_v3_cache():
    cache = mla_cache_elements(n_heads=128, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128,
                               v_head_dim=128)
    assert cache == {"mla": 576, "full": 128 * 320}


@pytest.mark.parametrize("kwargs, error, named", [
    (dict(q_rope=torch.zeros(5, 3, 4)), ValueError, "q_rope and k_rope"),
    (dict(absorbed=1), TypeError, "absorbed"),
])
def test_bad_arguments_are_refused_by_name(kwargs, error, named):
    q, latent, w_uk, _, _ = _inputs()
    with pytest.raises(error, match=named):
        mla_scores(q, latent, w_uk, **kwargs)
    with pytest.raises(ValueError, match="w_uk"):
        mla_scores(q, latent, w_uk[:, :, :2])
    with pytest.raises(ValueError, match="n_heads"):
        mla_cache_elements(n_heads=0, kv_lora_rank=1, qk_rope_head_dim=1, qk_nope_head_dim=1, v_head_dim=1)
