"""The tiny transformer: shapes, position codes as buffers or parameters, add vs concat, details."""

import dataclasses

import pytest
import torch

from course_utils import sinusoidal_encoding
from course_utils.models import ModelConfig, TinyTransformer, count_parameters


def tokens(batch=3, n=6, vocab=10, seed=0):
    return torch.randint(0, vocab, (batch, n), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("position", ["none", "sinusoidal", "learned"])
@pytest.mark.parametrize("causal", [False, True])
def test_logits_and_details_have_the_documented_shapes(position, causal):
    config = ModelConfig(vocab_size=10, d_model=16, n_heads=2, n_layers=3, max_len=8, position=position, causal=causal)
    model = TinyTransformer(config)
    assert model(tokens()).shape == (3, 6, 10)
    out = model(tokens(), details=True)
    assert out.logits.shape == (3, 6, 10)
    assert len(out.residuals) == 4 and all(r.shape == (3, 6, 16) for r in out.residuals)
    assert len(out.attention_logits) == 3 and all(a.shape == (3, 2, 6, 6) for a in out.attention_logits)
    weights = out.attention_weights[0]
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 6))
    if causal:
        assert (weights.triu(1) == 0).all()


def test_fixed_code_is_a_buffer_and_learned_code_a_parameter():
    fixed = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, position="sinusoidal"))
    learned = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, position="learned", max_len=64))
    none = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, position="none"))
    assert "position.table" not in dict(fixed.named_parameters())
    assert "position.table" not in fixed.state_dict(), "non-persistent buffer"
    assert count_parameters(fixed) == count_parameters(none)
    assert count_parameters(learned) == count_parameters(none) + 64 * 16


def test_the_input_is_token_plus_scaled_code():
    config = ModelConfig(vocab_size=10, d_model=16, position="sinusoidal", position_scale=0.5)
    model = TinyTransformer(config)
    t = tokens()
    expected = model.token_embedding(t) + 0.5 * sinusoidal_encoding(6, 16)
    torch.testing.assert_close(model.embed(t), expected)


def test_concat_keeps_the_residual_width_and_puts_the_code_last():
    config = ModelConfig(vocab_size=10, d_model=16, position="sinusoidal", combine="concat", d_position=4)
    model = TinyTransformer(config)
    x = model.embed(tokens())
    assert x.shape == (3, 6, 16)
    torch.testing.assert_close(x[0, :, 12:], sinusoidal_encoding(6, 4))
    assert model.token_embedding.embedding_dim == 12


def test_without_a_position_code_and_mask_the_model_is_permutation_equivariant():
    model = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, position="none"))
    t = tokens()
    perm = torch.tensor([5, 2, 0, 4, 1, 3])
    torch.testing.assert_close(model(t[:, perm]), model(t)[:, perm], atol=1e-5, rtol=1e-5)
    with_code = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, position="sinusoidal"))
    assert (with_code(t[:, perm]) - with_code(t)[:, perm]).abs().max() > 1e-3


def test_seed_makes_initial_weights_reproducible_without_touching_global_rng():
    config = ModelConfig(vocab_size=10, d_model=16)
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = TinyTransformer(config, seed=4)
    after = torch.rand(1)
    b = TinyTransformer(config, seed=4)
    c = TinyTransformer(config, seed=5)
    assert torch.equal(before, after)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not all(torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters()))


def test_reapplying_the_code_changes_later_layers_only():
    base = dict(vocab_size=10, d_model=16, n_layers=2, position="sinusoidal")
    once = TinyTransformer(ModelConfig(**base), seed=1)
    every = TinyTransformer(ModelConfig(**base, reapply_position=True), seed=1)
    a, b = once(tokens(), details=True), every(tokens(), details=True)
    torch.testing.assert_close(a.residuals[1], b.residuals[1])
    assert (a.residuals[2] - b.residuals[2]).abs().max() > 1e-3


def test_sinusoidal_code_extends_past_max_len_but_learned_refuses():
    fixed = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, position="sinusoidal", max_len=8))
    assert fixed(tokens(n=12)).shape == (3, 12, 10)
    learned = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, position="learned", max_len=8))
    with pytest.raises(ValueError, match="max_len"):
        learned(tokens(n=12))


@pytest.mark.parametrize("position", ["rope", "alibi", "relative", "none"])
def test_attention_codes_see_only_offsets_so_shifting_every_position_keeps_the_logits(position):
    config = ModelConfig(vocab_size=10, d_model=16, n_heads=2, n_layers=2, position=position, causal=True)
    model = TinyTransformer(config, seed=3)
    if model.relative_bias is not None:
        with torch.no_grad():
            model.relative_bias.values.normal_(generator=torch.Generator().manual_seed(0))
    t = tokens(n=10)
    logits = model(t)
    for start in (1, 7, 1000):
        torch.testing.assert_close(model(t, start=start), logits, atol=2e-5, rtol=1e-5)


def test_rope_start_rotates_queries_and_keys_by_their_shifted_positions():
    """start=k is the same as rope_rotate with positions k .. k+n-1: the shift is not a no-op inside."""
    from course_utils.rope import rope_rotate

    model = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, n_heads=2, position="rope"))
    attention = model.blocks[0].attention
    x = torch.randn(1, 5, 16, generator=torch.Generator().manual_seed(0))
    _, _, logits = attention(x, None, None, model.rotary(5, 0))
    _, _, shifted = attention(x, None, None, model.rotary(5, 9))
    torch.testing.assert_close(shifted, logits, atol=1e-5, rtol=1e-5)
    q = attention.qkv(x).view(1, 5, 3, 2, 8).permute(2, 0, 3, 1, 4)[0]
    moved = rope_rotate(q, positions=torch.arange(9, 14, dtype=torch.float64))
    torch.testing.assert_close(model.rotary(5, 9)(q), moved)
    assert (moved - rope_rotate(q)).abs().max() > 0.1, "the queries themselves do move"
    assert TinyTransformer(ModelConfig(vocab_size=10, position="alibi")).rotary(5) is None


def test_absolute_codes_change_with_start_and_refuse_what_they_cannot_number():
    t = tokens(n=6)
    for position in ("sinusoidal", "integer", "learned"):
        model = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, position=position, max_len=16, causal=True))
        assert (model(t, start=3) - model(t)).abs().max() > 1e-3, position
    sinusoidal = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, position="sinusoidal", max_len=8))
    x = sinusoidal.embed(t, start=5)  # positions 5 .. 10, past max_len: computed on demand
    torch.testing.assert_close(x - sinusoidal.token_embedding(t), sinusoidal_encoding(11, 16)[5:].expand(3, 6, 16))
    learned = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, position="learned", max_len=8))
    torch.testing.assert_close(learned.embed(t, start=2) - learned.token_embedding(t),
                               learned.position.table.weight[2:8].expand(3, 6, 16))
    with pytest.raises(ValueError, match="start"):
        learned(t, start=3)
    normalised = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, position="normalised"))
    with pytest.raises(ValueError, match="start"):
        normalised(t, start=1)
    assert normalised(t, start=0).shape == (3, 6, 10)
    for bad, error in ((-1, ValueError), (1.5, TypeError), (True, TypeError), (10**7, ValueError)):
        with pytest.raises(error, match="start"):
            sinusoidal(t, start=bad)


@pytest.mark.parametrize(
    "kwargs, error, word",
    [
        ({"d_model": 15}, ValueError, "d_model"),
        ({"n_heads": 3}, ValueError, "n_heads"),
        ({"position": "wavelet"}, ValueError, "position"),
        ({"position": "rope", "combine": "concat", "d_position": 4}, ValueError, "inside attention"),
        ({"combine": "multiply"}, ValueError, "combine"),
        ({"combine": "concat"}, ValueError, "d_position"),
        ({"combine": "concat", "d_position": 16}, ValueError, "d_position"),
        ({"d_position": 4}, ValueError, "d_position"),
        ({"position_scale": float("nan")}, ValueError, "position_scale"),
        ({"causal": "yes"}, TypeError, "causal"),
        ({"vocab_size": 0}, ValueError, "vocab_size"),
    ],
)
def test_config_errors_name_the_argument(kwargs, error, word):
    args = {"vocab_size": 10, "d_model": 16}
    args.update(kwargs)
    with pytest.raises(error, match=word):
        ModelConfig(**args)


@pytest.mark.parametrize(
    "bad, error",
    [
        (torch.zeros(2, 3), TypeError),
        ([[1, 2]], TypeError),
        (torch.zeros(5, dtype=torch.long), ValueError),
        (torch.full((1, 3), 10), ValueError),
        (torch.full((1, 3), -1), ValueError),
    ],
)
def test_bad_tokens_are_refused_with_a_clear_message(bad, error):
    model = TinyTransformer(ModelConfig(vocab_size=10, d_model=16))
    with pytest.raises(error, match="tokens"):
        model(bad)
    with pytest.raises(TypeError, match="config"):
        TinyTransformer({"vocab_size": 10})
    with pytest.raises(TypeError, match="model"):
        count_parameters("model")


def test_config_keeps_the_checked_values_not_the_raw_ones():
    """A 0-d integer tensor is accepted where an int is expected, and stored as that int."""
    config = ModelConfig(vocab_size=torch.tensor(8), d_model=torch.tensor(16), n_heads=torch.tensor(2),
                         n_layers=torch.tensor(1), max_len=torch.tensor(12), d_ff=torch.tensor(8))
    for name in ("vocab_size", "d_model", "n_heads", "n_layers", "max_len", "d_ff"):
        assert type(getattr(config, name)) is int, name
    assert TinyTransformer(config)(torch.zeros(1, 12, dtype=torch.long)).shape == (1, 12, 8)


def test_embedding_std_rescales_the_token_vectors_and_nothing_else():
    base = ModelConfig(vocab_size=10, d_model=8, n_heads=2, max_len=8, position="learned")
    plain = TinyTransformer(base, seed=3)
    small = TinyTransformer(dataclasses.replace(base, embedding_std=0.02), seed=3)
    for name, p in plain.named_parameters():
        q = dict(small.named_parameters())[name]
        expected = 0.02 * p if name == "token_embedding.weight" else p
        assert torch.equal(q, expected.detach()), name
    with pytest.raises(ValueError, match="embedding_std"):
        ModelConfig(vocab_size=10, embedding_std=0.0)


@pytest.mark.parametrize("position", ["none", "sinusoidal", "learned", "rope", "alibi", "relative"])
@pytest.mark.parametrize("causal", [False, True])
def test_the_fused_kernel_computes_the_same_function(position, causal):
    """attention_kernel="fused" (torch's scaled_dot_product_attention) gives the explicit path's
    logits and gradients up to float rounding; details=True takes the explicit path and so
    returns the weights either way."""
    config = ModelConfig(vocab_size=10, d_model=16, n_heads=2, n_layers=2, max_len=12, position=position,
                         causal=causal)
    explicit = TinyTransformer(config, seed=1).double()
    fused = TinyTransformer(dataclasses.replace(config, attention_kernel="fused"), seed=1).double()
    x = tokens(batch=3, n=12)
    a, b = explicit(x), fused(x)
    assert torch.allclose(a, b, atol=1e-10)
    a.square().sum().backward()
    b.square().sum().backward()
    for (name, p), q in zip(explicit.named_parameters(), fused.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-9), name
    details = fused(x, details=True)
    assert len(details.attention_weights) == 2 and torch.allclose(details.logits, a, atol=1e-10)
    with pytest.raises(ValueError, match="attention_kernel"):
        ModelConfig(vocab_size=10, attention_kernel="flash")


@pytest.mark.parametrize("base", [10.0, 100.0, 1e6])
def test_rope_base_sets_the_frequencies_the_model_turns_by(base):
    """rope_base (rope_theta) is rope_rotate's base; the default 10⁴ leaves every model as it was."""
    from course_utils import RopeScaling
    from course_utils.rope import rope_rotate

    model = TinyTransformer(ModelConfig(vocab_size=10, d_model=16, n_heads=2, position="rope", rope_base=base))
    q = torch.randn(1, 2, 7, 8, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(model.rotary(7, 3)(q), rope_rotate(q, positions=torch.arange(3.0, 10.0), base=base))
    stretched = dataclasses.replace(model.config, rope_scaling=RopeScaling("ntk", factor=4.0))
    omega = RopeScaling("ntk", factor=4.0).frequencies(8, base=base, length=7)
    torch.testing.assert_close(TinyTransformer(stretched).rotary(7)(q), rope_rotate(q, frequencies=omega))
    assert ModelConfig(vocab_size=10, position="rope").rope_base == 10_000.0


def test_rope_base_is_checked_and_only_for_rope():
    with pytest.raises(ValueError, match="rope_base"):
        ModelConfig(vocab_size=10, position="rope", rope_base=0.0)
    with pytest.raises(TypeError, match="rope_base"):
        ModelConfig(vocab_size=10, position="rope", rope_base="1e4")
    with pytest.raises(ValueError, match="rope_base"):
        ModelConfig(vocab_size=10, position="learned", rope_base=100.0)
