"""RoPE (course_utils/rope.py): lesson 04's rotation, both pairings, partial rotary, the KV cache,
and cross-checks against two independent implementations:

- Hugging Face transformers' Llama ``apply_rotary_pos_emb``/``rotate_half`` (halves layout,
  Su et al.'s direction): HF at positions p == rope_rotate(x, positions=-p, layout="halves");
- a complex-number implementation (Meta's form: pairs (2i, 2i+1) as complex numbers times a
  unit phase): ours is multiplication by e^{-i t ω_i}.

Both for random shapes, positions, bases and rotary_dim, in float32 and float64.
"""

import math

import pytest
import torch
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import (ModelConfig, TinyTransformer, attention, causal_mask, convert_rope_layout,
                          offset_dependence, offset_matrix, rope_decay_bound, rope_decode_step,
                          rope_permutation, rope_rotate)
from course_utils.rope import rotate_pairs

# A test dependency (pyproject's test extra): `make test` must never skip the cross-checks.
from transformers.models.llama import modeling_llama as llama

TOLERANCE = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: dict(rtol=1e-10, atol=1e-10)}


@st.composite
def rope_inputs(draw):
    """x [batch, heads, n, d], positions [n] (reals), base, rotary_dim, dtype."""
    n, d = draw(st.integers(1, 9)), 2 * draw(st.integers(1, 8))
    rotary_dim = 2 * draw(st.integers(1, d // 2))
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    seed = draw(st.integers(0, 2**16))
    x = torch.randn(2, 3, n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    positions = torch.tensor(draw(st.lists(st.floats(-200, 200), min_size=n, max_size=n)), dtype=torch.float64)
    base = draw(st.sampled_from((10.0, 100.0, 10_000.0, 500_000.0)) | st.floats(2.0, 1e6))
    return x.to(dtype), positions, base, rotary_dim, dtype


def hugging_face(x, positions, base, rotary_dim):
    """Llama's apply_rotary_pos_emb on the first rotary_dim features, as GPT-NeoX-style partial rotary."""
    inv_freq = 1.0 / (base ** (torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim))
    freqs = positions[:, None] * inv_freq[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos().to(x.dtype)[None], emb.sin().to(x.dtype)[None]  # [1, n, r]
    rotated, _ = llama.apply_rotary_pos_emb(x[..., :rotary_dim], x[..., :rotary_dim], cos, sin)
    return torch.cat([rotated, x[..., rotary_dim:]], dim=-1)


def complex_rope(x, positions, base, rotary_dim):
    """Pairs (2i, 2i+1) as complex numbers a + ib, multiplied by e^{-i t ω_i}, ω_i = base^(-2i/r)."""
    r = rotary_dim
    omega = base ** (-torch.arange(0, r, 2, dtype=torch.float64) / r)
    phase = torch.polar(torch.ones(len(positions), r // 2, dtype=torch.float64), -positions[:, None] * omega)
    pairs = torch.view_as_complex(x[..., :r].to(torch.float64).reshape(*x.shape[:-1], r // 2, 2).contiguous())
    rotated = torch.view_as_real(pairs * phase).reshape(*x.shape[:-1], r).to(x.dtype)
    return torch.cat([rotated, x[..., r:]], dim=-1)


@settings(max_examples=examples(60), deadline=None)
@given(rope_inputs())
def test_halves_layout_equals_hugging_faces_llama_rope_at_negated_positions(inputs):
    x, positions, base, rotary_dim, dtype = inputs
    ours = rope_rotate(x, positions=-positions, base=base, layout="halves", rotary_dim=rotary_dim)
    torch.testing.assert_close(ours, hugging_face(x, positions, base, rotary_dim), **TOLERANCE[dtype])
    assert ours.dtype == dtype


def test_hugging_faces_rotate_half_is_the_halves_pairing():
    """rotate_half(x) = (-x2, x1): minus our rotation by a quarter turn, pairing i with i + d/2."""
    x = torch.randn(3, 10, dtype=torch.float64)
    quarter = rope_rotate(x, positions=torch.full((3,), math.pi / 2, dtype=torch.float64), base=1.0, layout="halves")
    torch.testing.assert_close(llama.rotate_half(x), -quarter, rtol=0, atol=1e-12)


@settings(max_examples=examples(60), deadline=None)
@given(rope_inputs())
def test_interleaved_layout_equals_a_complex_number_rope(inputs):
    x, positions, base, rotary_dim, dtype = inputs
    ours = rope_rotate(x, positions=positions, base=base, rotary_dim=rotary_dim)
    torch.testing.assert_close(ours, complex_rope(x, positions, base, rotary_dim), **TOLERANCE[dtype])


@settings(max_examples=examples(30), deadline=None)
@given(rope_inputs())
def test_the_two_layouts_differ_by_a_fixed_permutation(inputs):
    x, positions, base, rotary_dim, dtype = inputs
    perm = rope_permutation(x.shape[-1], rotary_dim=rotary_dim)
    interleaved = rope_rotate(x, positions=positions, base=base, rotary_dim=rotary_dim)
    halves = rope_rotate(x[..., perm], positions=positions, base=base, layout="halves", rotary_dim=rotary_dim)
    torch.testing.assert_close(interleaved[..., perm], halves, rtol=0, atol=0)
    torch.testing.assert_close(halves[..., torch.argsort(perm)], interleaved, rtol=0, atol=0)


@settings(max_examples=examples(30), deadline=None)
@given(n=st.integers(1, 12), half=st.integers(1, 8), seed=st.integers(0, 1000))
def test_rope_rotates_row_t_by_lesson_04s_m_t(n, half, seed):
    d = 2 * half
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    rotated = rope_rotate(x)
    for t in range(n):
        torch.testing.assert_close(rotated[t], offset_matrix(t, d, dtype=torch.float64) @ x[t])
    halves = rope_rotate(x, layout="halves")
    for t in range(n):
        torch.testing.assert_close(halves[t], offset_matrix(t, d, layout="halves", dtype=torch.float64) @ x[t])


@settings(max_examples=examples(30), deadline=None)
@given(n=st.integers(2, 12), half=st.integers(1, 8), seed=st.integers(0, 1000),
       layout=st.sampled_from(("interleaved", "halves")))
def test_rope_scores_depend_only_on_the_offset_in_both_directions(n, half, seed, layout):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(1, 2 * half, generator=g, dtype=torch.float64) for _ in range(2))
    for sign in (1.0, -1.0):  # the course's M_t, and Su et al.'s R(tθ) = M_{-t}
        positions = sign * torch.arange(n, dtype=torch.float64)
        scores = (rope_rotate(q.expand(n, -1), positions=positions, layout=layout)
                  @ rope_rotate(k.expand(n, -1), positions=positions, layout=layout).T)
        assert offset_dependence(scores) < 1e-9


def test_partial_rotary_leaves_the_last_features_alone():
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    rotated = rope_rotate(x, rotary_dim=4, layout="halves")
    assert torch.equal(rotated[..., 4:], x[..., 4:])
    torch.testing.assert_close(rotated[..., :4], rope_rotate(x[..., :4], layout="halves"))
    assert torch.equal(rope_rotate(x, rotary_dim=12), rope_rotate(x))


def test_rope_keeps_batch_dimensions_and_norms_and_refuses_bad_arguments():
    x = torch.randn(2, 3, 5, 8)
    rotated = rope_rotate(x)
    assert rotated.shape == x.shape
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))
    with pytest.raises(ValueError, match="last dimension"):
        rope_rotate(torch.randn(4, 5))
    with pytest.raises(ValueError, match="positions"):
        rope_rotate(torch.randn(4, 6), positions=torch.arange(3))
    with pytest.raises(TypeError, match="x"):
        rope_rotate([[1.0, 2.0]])
    for bad in (3, 10, 0, -2):
        with pytest.raises(ValueError, match="rotary_dim"):
            rope_rotate(torch.randn(4, 8), rotary_dim=bad)
    with pytest.raises(ValueError, match="layout"):
        rope_rotate(torch.randn(4, 8), layout="neox")
    with pytest.raises(TypeError):
        rope_rotate(torch.randn(4, 8), torch.arange(4))  # positions is keyword-only


def test_a_model_converts_between_layouts_only_with_the_permutation():
    config = ModelConfig(vocab_size=8, d_model=32, n_heads=4, n_layers=2, position="rope", causal=True)
    model = TinyTransformer(config, seed=3)
    tokens = torch.randint(0, 8, (4, 12), generator=torch.Generator().manual_seed(0))
    halves = convert_rope_layout(model, "halves")
    assert halves.config.rope_layout == "halves" and model.config.rope_layout == "interleaved"
    torch.testing.assert_close(halves(tokens), model(tokens), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(convert_rope_layout(halves, "interleaved")(tokens), model(tokens), rtol=0, atol=0)
    broken = convert_rope_layout(model, "halves", permute=False)
    assert (broken(tokens) - model(tokens)).abs().max() > 1e-2
    with pytest.raises(ValueError, match="rope"):
        convert_rope_layout(TinyTransformer(ModelConfig(vocab_size=4, position="alibi")), "halves")
    with pytest.raises(ValueError, match="rope_layout"):
        ModelConfig(vocab_size=4, position="alibi", rope_layout="halves")


@pytest.mark.parametrize("layout", ["interleaved", "halves"])
def test_decoding_with_a_cache_equals_the_full_recomputation(layout):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 7, 6, generator=g, dtype=torch.float64) for _ in range(3))
    full, _ = attention(rope_rotate(q, layout=layout), rope_rotate(k, layout=layout), v, causal_mask(7))
    cache_k = cache_v = None
    for t in range(7):
        out, cache_k, cache_v = rope_decode_step(q[:, t:t + 1], k[:, t:t + 1], v[:, t:t + 1], cache_k, cache_v,
                                                 layout=layout)
        torch.testing.assert_close(out, full[:, t:t + 1], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(cache_k, rope_rotate(k, layout=layout))  # each key rotated once
    assert torch.equal(cache_v, v)
    forgot, _, _ = rope_decode_step(q[:, 6:], k[:, 6:], v[:, 6:], cache_k[:, :6], cache_v[:, :6], position=0.0,
                                    layout=layout)
    assert (forgot - full[:, 6:]).abs().max() > 1e-3
    with pytest.raises(ValueError, match="cache_v"):
        rope_decode_step(q[:, :1], k[:, :1], v[:, :1], cache_k)


def test_su_et_als_decay_bound_falls_with_the_offset():
    bound = rope_decay_bound(torch.tensor([0.0, 1.0, 10.0, 100.0, 1000.0]), 128)
    assert bound[0].item() == pytest.approx(32.5)  # mean of 1 .. 64
    assert bound[1] > bound[2] > bound[3] > bound[4]
    slower = rope_decay_bound(torch.tensor([100.0, 1000.0]), 128, base=500_000.0)
    assert (slower > bound[3:]).all(), "a larger base decays later"


def pairwise(x, cos, sin, layout, r):
    """Each pair (a, b) turned as (a cos + b sin, −sin a + cos b), one pair at a time."""
    a, b = (x[..., 0:r:2], x[..., 1:r:2]) if layout == "interleaved" else (x[..., : r // 2], x[..., r // 2 : r])
    first, second = cos * a + sin * b, -sin * a + cos * b
    turned = (torch.stack([first, second], dim=-1).flatten(-2) if layout == "interleaved"
              else torch.cat([first, second], dim=-1))
    return torch.cat([turned, x[..., r:]], dim=-1)


@settings(max_examples=examples(60), deadline=None)
@given(rope_inputs(), st.sampled_from(("interleaved", "halves")))
def test_whole_row_rotation_has_the_bytes_of_the_pairwise_formula(inputs, layout):
    # rotate_pairs computes x·C + swapped·S: the same two products and one sum per element as
    # the pairwise formula, so trained models and stored outputs keep their bytes
    x, positions, base, rotary_dim, dtype = inputs
    omega = base ** (-torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim)
    angles = positions[:, None] * omega[None, :]
    cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
    ours_x, theirs_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    ours = rotate_pairs(ours_x, cos, sin, layout=layout, rotary_dim=rotary_dim)
    theirs = pairwise(theirs_x, cos, sin, layout, rotary_dim)
    assert torch.equal(ours, theirs)
    upstream = torch.randn(x.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(dtype)
    ours.backward(upstream)
    theirs.backward(upstream)
    assert torch.equal(ours_x.grad, theirs_x.grad)
