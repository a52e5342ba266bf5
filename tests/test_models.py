"""The tiny transformer: shapes, position codes as buffers or parameters, add vs concat, details."""

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
