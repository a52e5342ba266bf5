"""The causal-counting helpers of lesson 09: uniform causal weights, the BOS share, and model probes."""

import math

import pytest
import torch
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import ModelConfig, TinyTransformer, attention, causal_mask
from course_utils.training import accuracy_by_position
from course_utils.causal import (attention_to_first, bos_weight, fit_bos_bias,
                                 permutation_gap, uniform_causal_weights, with_mask)


def tiny(causal: bool, *, n_layers: int = 1, seed: int = 0) -> TinyTransformer:
    config = ModelConfig(vocab_size=8, d_model=16, n_heads=2, n_layers=n_layers, max_len=12, position="none",
                         causal=causal, n_outputs=12)
    return TinyTransformer(config, seed=seed)


def tokens(batch=4, n=12, seed=0):
    return torch.randint(0, 8, (batch, n), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("n", [1, 2, 5, 16])
def test_uniform_causal_weights_are_the_attention_weights_of_equal_logits(n):
    weights = uniform_causal_weights(n, dtype=torch.float64)
    assert weights.shape == (n, n) and weights.dtype == torch.float64
    q = torch.zeros(n, 3, dtype=torch.float64)  # every logit 0
    k = torch.randn(n, 3, dtype=torch.float64)
    _, reference = attention(q, k, torch.eye(n, dtype=torch.float64), causal_mask(n))
    assert torch.allclose(weights, reference, atol=1e-12)
    assert torch.allclose(weights.sum(dim=1), torch.ones(n, dtype=torch.float64))
    assert torch.equal(weights[:, 0], 1 / torch.arange(1, n + 1, dtype=torch.float64))


def test_uniform_causal_weights_default_dtype_and_errors():
    assert uniform_causal_weights(3).dtype == torch.float32
    with pytest.raises(ValueError, match="n"):
        uniform_causal_weights(0)
    with pytest.raises(TypeError, match="n"):
        uniform_causal_weights(2.5)
    with pytest.raises(TypeError, match="dtype"):
        uniform_causal_weights(3, dtype="float")


@settings(max_examples=examples(40), deadline=None)
@given(t=st.integers(0, 200), bias=st.floats(-5, 5))
def test_bos_weight_is_the_softmax_share_of_the_first_key(t, bias):
    logits = torch.zeros(t + 1, dtype=torch.float64)
    logits[0] = bias
    assert bos_weight(t, bias).item() == pytest.approx(torch.softmax(logits, dim=0)[0].item(), rel=1e-12)


def test_bos_weight_shapes_and_uniform_case():
    t = torch.arange(16)
    assert torch.allclose(bos_weight(t), 1 / (t + 1.0).double())
    assert bos_weight([0, 3]).tolist() == [1.0, 0.25]
    assert bos_weight(4).shape == ()
    assert bos_weight(torch.tensor([[1, 2]])).shape == (1, 2)


@pytest.mark.parametrize(
    "args, error, word",
    [((-1,), ValueError, "t"), ((torch.tensor([0.5]),), TypeError, "t"), (("3",), TypeError, "t"),
     (([1, 2.5],), TypeError, "t"), ((2, float("nan")), ValueError, "bias"), ((2, "b"), TypeError, "bias")],
)
def test_bos_weight_errors_name_the_argument(args, error, word):
    with pytest.raises(error, match=word):
        bos_weight(*args)


@settings(max_examples=examples(30), deadline=None)
@given(bias=st.floats(-3, 3), n=st.integers(2, 40))
def test_fit_bos_bias_recovers_the_bias(bias, n):
    weights = bos_weight(torch.arange(n), bias)
    assert fit_bos_bias(weights) == pytest.approx(bias, abs=1e-9)
    assert fit_bos_bias(weights.float()) == pytest.approx(bias, abs=1e-4)


@pytest.mark.parametrize(
    "weights, error",
    [(torch.tensor([1.0]), ValueError), (torch.ones(2, 3), ValueError), (torch.tensor([1.0, 1.0]), ValueError),
     (torch.tensor([1.0, 0.0]), ValueError), ([1.0, 0.5], TypeError), (torch.tensor([1, 0]), TypeError)],
)
def test_fit_bos_bias_errors_name_the_argument(weights, error):
    with pytest.raises(error, match="first_weights"):
        fit_bos_bias(weights)


def test_attention_to_first_matches_the_model_weights():
    model = tiny(causal=True, n_layers=2)
    x = tokens()
    for layer in (0, 1):
        first = attention_to_first(model, x, layer=layer)
        with torch.no_grad():
            weights = model(x, details=True).attention_weights[layer]
        assert first.shape == (2, 12)
        assert torch.allclose(first, weights[:, :, :, 0].mean(dim=0))
        assert torch.allclose(first[:, 0], torch.ones(2))  # position 0 sees only itself
    unmasked = attention_to_first(tiny(causal=False), x)
    assert (unmasked[:, 0] < 1).all()


def test_attention_to_first_errors():
    with pytest.raises(TypeError, match="model"):
        attention_to_first("model", tokens())
    with pytest.raises(ValueError, match="layer"):
        attention_to_first(tiny(causal=True), tokens(), layer=1)
    with pytest.raises(TypeError, match="layer"):
        attention_to_first(tiny(causal=True), tokens(), layer=0.0)


def test_with_mask_copies_weights_and_switches_the_mask():
    model = tiny(causal=True, seed=3)
    copy = with_mask(model, causal=False)
    assert copy.config.causal is False and model.config.causal is True
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), copy.state_dict().values()))
    back = with_mask(copy, causal=True)
    x = tokens()
    with torch.no_grad():
        assert torch.equal(back(x), model(x))
        assert not torch.allclose(copy(x), model(x))
    with torch.no_grad():  # a copy, not a view: changing it leaves the original alone
        copy.head.bias.add_(1.0)
    assert not torch.equal(copy.head.bias, model.head.bias)
    with pytest.raises(TypeError, match="causal"):
        with_mask(model, causal=1)
    with pytest.raises(TypeError, match="model"):
        with_mask(None, causal=True)


def test_permutation_gap_is_zero_without_the_mask_only():
    order = torch.randperm(12, generator=torch.Generator().manual_seed(0))
    x = tokens()
    assert permutation_gap(tiny(causal=False), x, order) < 1e-9
    assert permutation_gap(tiny(causal=True), x, order) > 1e-3
    assert permutation_gap(tiny(causal=True), x, list(range(12))) < 1e-9  # the identity changes nothing
    model = tiny(causal=True)
    assert next(model.parameters()).dtype == torch.float32  # the float64 copy leaves the model alone


@pytest.mark.parametrize(
    "x, order, error, word",
    [("tokens", list(range(12)), TypeError, "tokens"), (torch.zeros(12, dtype=torch.long), list(range(12)), ValueError, "tokens"),
     (tokens(), [0, 1, 2], ValueError, "order"), (tokens(), [0] * 12, ValueError, "order"),
     (tokens(), torch.arange(12.0), ValueError, "order"), (tokens(), "abc", TypeError, "order")],
)
def test_permutation_gap_errors_name_the_argument(x, order, error, word):
    with pytest.raises(error, match=word):
        permutation_gap(tiny(causal=False), x, order)


def test_accuracy_by_position_shape_range_and_unscored_positions():
    model = tiny(causal=True)
    accuracy = accuracy_by_position(model, "own_index", length=10, bos=True, batch_size=32)
    assert accuracy.shape == (10,)
    assert ((accuracy >= 0) & (accuracy <= 1)).all()
    assert model.training is True  # the train/eval mode is restored
    vocab_model = TinyTransformer(ModelConfig(vocab_size=8, d_model=16, n_heads=2, n_layers=1, position="none",
                                              causal=True), seed=0)
    previous = accuracy_by_position(vocab_model, "previous_token", length=6, batch_size=8)
    assert math.isnan(previous[0].item()) and not torch.isnan(previous[1:]).any()


def test_accuracy_by_position_matches_a_manual_count():
    model = tiny(causal=True).eval()
    from course_utils import make_batch

    batch = make_batch("own_index", batch_size=16, length=8, vocab_size=8,
                       generator=torch.Generator().manual_seed(7), bos=True)
    with torch.no_grad():
        manual = (model(batch.tokens).argmax(-1) == batch.targets).double().mean(0)
    assert torch.equal(accuracy_by_position(model, "own_index", length=8, bos=True, batch_size=16, seed=7), manual)


@pytest.mark.parametrize(
    "kwargs, error, word",
    [(dict(length=0), ValueError, "length"), (dict(length=13), ValueError, "max_len"),
     (dict(length=8, bos=1), TypeError, "bos"), (dict(length=8, batch_size=0), ValueError, "batch_size"),
     (dict(length=8, seed=-1), ValueError, "seed")],
)
def test_accuracy_by_position_errors_name_the_argument(kwargs, error, word):
    with pytest.raises(error, match=word):
        accuracy_by_position(tiny(causal=True), "own_index", **kwargs)
