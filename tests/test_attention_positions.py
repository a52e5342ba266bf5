"""ALiBi and the relative bias (RoPE: tests/test_rope.py), plugged into the model."""

import pytest
import torch

from course_utils import ModelConfig, TinyTransformer, count_parameters, offset_dependence
from course_utils.attention_positions import (attention_at_offset, attention_beyond, favourite_key_gap, pair_logits,
                                            rival_margin, without_pairs)
from course_utils.biases import RelativeBias, alibi_bias, alibi_slopes
from course_utils.models import ATTENTION_CODES, POSITIONS


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


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8, 16, 32])
def test_alibi_slopes_for_a_power_of_two_are_2_to_the_minus_8h_over_h(n_heads):
    h = torch.arange(1, n_heads + 1, dtype=torch.float64)
    torch.testing.assert_close(alibi_slopes(n_heads), 2.0 ** (-8.0 * h / n_heads), rtol=0, atol=0)


@pytest.mark.parametrize(
    "n_heads, expected",
    [
        # Press et al.'s reference code: the closest lower power of two P, then every other slope of 2P
        (3, [2**-4, 2**-8, 2**-2]),
        (6, [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8]),
        (12, [2.0**-k for k in range(1, 9)] + [2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5]),
    ],
)
def test_alibi_slopes_for_other_head_counts_follow_the_reference_code(n_heads, expected):
    torch.testing.assert_close(alibi_slopes(n_heads), torch.tensor(expected, dtype=torch.float64))
    with pytest.raises(ValueError, match="n_heads"):
        alibi_slopes(0)


def test_two_alibi_heads_are_nearly_flat_over_sixteen_tokens():
    """Why lesson 10 uses 8 heads: with 2, the steeper slope is 1/16, a logit gap of 0.0625 per step."""
    bias = alibi_bias(16, 2, dtype=torch.float64)
    assert bias[0, 15, 14].item() - bias[0, 15, 13].item() == pytest.approx(0.0625)
    assert alibi_bias(16, 8)[0, 15, 14].item() - alibi_bias(16, 8)[0, 15, 13].item() == pytest.approx(0.5)


def test_alibi_bias_and_a_model_take_slopes_of_ones_choosing():
    """Lesson 10's 2-head ALiBi with the steep slopes (1/2, 1/4): the bias of those slopes."""
    bias = alibi_bias(6, 2, slopes=(0.5, 0.25), dtype=torch.float64)
    torch.testing.assert_close(bias, alibi_bias(6, 8, dtype=torch.float64)[:2])
    torch.testing.assert_close(alibi_bias(6, 2, slopes=torch.tensor([2**-4, 2**-8])), alibi_bias(6, 2))
    config = ModelConfig(vocab_size=4, d_model=8, n_heads=2, n_layers=1, position="alibi",
                         alibi_slopes=[0.5, 0.25])
    assert config.alibi_slopes == (0.5, 0.25)
    torch.testing.assert_close(TinyTransformer(config).attention_bias(6), bias.float())
    for slopes, error, match in [((0.5,), ValueError, "one slope per head"), ((0.5, 0.0), ValueError, "positive"),
                                 ("ab", TypeError, "slopes"), ((0.5, float("nan")), ValueError, "finite")]:
        with pytest.raises(error, match=match):
            alibi_bias(4, 2, slopes=slopes)
    with pytest.raises(ValueError, match="alibi_slopes"):
        ModelConfig(vocab_size=4, d_model=8, n_heads=2, position="rope", alibi_slopes=(0.5, 0.25))
    with pytest.raises(ValueError, match="alibi_slopes"):
        ModelConfig(vocab_size=4, d_model=8, n_heads=2, position="alibi", alibi_slopes=(0.5,))


def test_attention_beyond_sums_the_weight_on_keys_more_than_distance_back():
    uniform = torch.tril(torch.ones(6, 6))
    uniform = uniform / uniform.sum(-1, keepdim=True)  # query t spreads 1/(t+1) over keys 0 .. t
    far = attention_beyond(uniform, 2)
    expected = torch.tensor([0, 0, 0, 1 / 4, 2 / 5, 3 / 6])  # keys s < t - 2: t - 2 of them
    torch.testing.assert_close(far, expected)
    torch.testing.assert_close(attention_beyond(uniform, 0), 1 - 1 / torch.arange(1.0, 7.0))
    previous = torch.diag(torch.ones(5), -1)  # every query on the key one step back
    assert attention_beyond(previous, 1).abs().max() == 0
    batched = attention_beyond(uniform.expand(2, 3, 6, 6), 2)
    assert batched.shape == (2, 3, 6)
    with pytest.raises(ValueError, match="weights"):
        attention_beyond(torch.ones(3, 4), 1)
    with pytest.raises(TypeError, match="weights"):
        attention_beyond(torch.ones(3, 3, dtype=torch.long), 1)
    with pytest.raises(ValueError, match="distance"):
        attention_beyond(uniform, -1)


def test_attention_at_offset_reads_one_diagonal():
    weights = torch.arange(16.0).view(4, 4)
    torch.testing.assert_close(attention_at_offset(weights, 0), torch.tensor([0.0, 5.0, 10.0, 15.0]))
    torch.testing.assert_close(attention_at_offset(weights, 1), torch.tensor([0.0, 4.0, 9.0, 14.0]))
    torch.testing.assert_close(attention_at_offset(weights, 3), torch.tensor([0.0, 0.0, 0.0, 12.0]))
    assert attention_at_offset(weights, 9).abs().max() == 0, "no key that far back"
    previous = torch.diag(torch.ones(4), -1)  # [5, 5]: every query on the key one step back
    assert attention_at_offset(previous.expand(2, 3, 5, 5), 1)[..., 1:].eq(1).all()
    with pytest.raises(ValueError, match="offset"):
        attention_at_offset(weights, -1)
    with pytest.raises(ValueError, match="weights"):
        attention_at_offset(torch.ones(2, 3), 1)


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


def test_offset_head_picks_the_head_with_the_most_weight_on_the_offset():
    from course_utils import offset_head

    model = TinyTransformer(ModelConfig(vocab_size=8, n_heads=4, d_model=16, position="rope", causal=True), seed=1)
    tokens = torch.randint(0, 8, (5, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        weights = model(tokens, details=True).attention_weights[0].mean(0)
    on_two = attention_at_offset(weights, 2)
    found = offset_head(model, tokens, 2)
    assert found.head == int(on_two[:, 2:].mean(1).argmax())
    assert torch.equal(found.weights, weights[found.head]) and torch.equal(found.on_offset, on_two[found.head])
    assert found.score == on_two[found.head, 2:].mean().item()
    narrow = offset_head(model, tokens, 2, queries=range(5, 9))
    assert narrow.score == on_two[narrow.head, 5:9].mean().item() == on_two[:, 5:9].mean(1).max().item()


@pytest.mark.parametrize("queries", [range(0, 4), range(3, 13), range(3, 3), [3, 4]])
def test_offset_head_refuses_queries_without_a_key_at_the_offset(queries):
    from course_utils import offset_head

    model = TinyTransformer(ModelConfig(vocab_size=8, n_heads=2, d_model=16, position="rope"), seed=0)
    tokens = torch.zeros(2, 12, dtype=torch.long)
    with pytest.raises(ValueError, match="queries"):
        offset_head(model, tokens, 2, queries=queries)


def _rope_model(layout: str = "interleaved") -> TinyTransformer:
    config = ModelConfig(vocab_size=8, d_model=16, n_heads=2, n_layers=2, position="rope", causal=True,
                         rope_layout=layout)
    return TinyTransformer(config, seed=1)


@pytest.mark.parametrize("layout", ["interleaved", "halves"])
@pytest.mark.parametrize("layer, head", [(0, 0), (1, 1)])
def test_pair_logits_sum_to_the_heads_logits(layout, layer, head):
    model = _rope_model(layout)
    tokens = torch.randint(0, 8, (3, 10), generator=torch.Generator().manual_seed(0))
    logits = pair_logits(model, tokens, head=head, layer=layer)
    assert logits.shape == (3, 4, 10, 10)
    reference = model(tokens, details=True).attention_logits[layer][:, head]
    torch.testing.assert_close(logits.sum(1), reference, rtol=1e-5, atol=1e-5)


def test_a_pair_logit_depends_on_the_offset_only_through_its_own_angle():
    """Pair i's logit is q_i · M_(s−t) k_i: for the same query and key features, moving both
    positions by the same amount changes nothing (the rotation sees the offset only)."""
    model = _rope_model()
    tokens = torch.randint(0, 8, (1, 6), generator=torch.Generator().manual_seed(2))
    doubled = torch.cat([tokens, tokens], dim=1)  # the same tokens again, 6 positions later
    logits = pair_logits(model, doubled, head=0)  # layer 0: features depend on the token only
    torch.testing.assert_close(logits[..., 6:, 6:], logits[..., :6, :6], rtol=1e-4, atol=1e-5)


def test_without_pairs_removes_exactly_those_pairs():
    model = _rope_model()
    tokens = torch.randint(0, 8, (2, 9), generator=torch.Generator().manual_seed(1))
    before = pair_logits(model, tokens, head=1)
    ablated = without_pairs(model, [0, 2], head=1)
    after = pair_logits(ablated, tokens, head=1)
    assert after[:, [0, 2]].abs().max() == 0
    torch.testing.assert_close(after[:, [1, 3]], before[:, [1, 3]])
    torch.testing.assert_close(pair_logits(ablated, tokens, head=0), pair_logits(model, tokens, head=0))
    assert torch.equal(without_pairs(model, [], head=0)(tokens), model(tokens))
    assert model.blocks[0].attention.qkv.weight.abs().sum() > 0  # the original is untouched
    with pytest.raises(ValueError, match="pairs"):
        without_pairs(model, [4], head=0)
    with pytest.raises(ValueError, match="head"):
        without_pairs(model, [0], head=2)
    with pytest.raises(TypeError, match="pairs"):
        without_pairs(model, 1, head=0)


def test_rival_margin_names_the_strongest_rival_and_splits_the_lead():
    logits = torch.zeros(1, 2, 4, 4)
    logits[0, 0, 3, 1] = 5.0  # pair 0: key 1 (offset 2) is the right key
    logits[0, 1, 3, 0] = 2.0  # pair 1 prefers key 0 (offset 3): the rival
    logits[0, 0, 2, 0] = 1.0  # at t = 2 the right key (0) leads; rival: the best other key (1 or 2, tied at 0)
    margin = rival_margin(logits, 2, queries=range(3, 4))
    assert margin.rival_offset.tolist() == [[3]]
    torch.testing.assert_close(margin.by_pair, torch.tensor([5.0, -2.0]))
    both = rival_margin(logits, 2, queries=range(2, 4))
    assert both.rival_offset[0, 1] == 3 and both.rival_offset[0, 0] in (0, 1)
    with pytest.raises(ValueError, match="queries"):
        rival_margin(logits, 2, queries=range(1, 4))
    with pytest.raises(ValueError, match="logits"):
        rival_margin(torch.zeros(2, 4, 4), 2, queries=range(3, 4))



@pytest.mark.parametrize("layout", ["interleaved", "halves"])
def test_favourite_key_gap_matches_the_models_own_logits(layout):
    """c(a, b, m) from the model's logits on texts [b, m − 1 fillers, a]; the favourites from the
    same weights without rotation (a NoPE copy: block 1 then scores q_a·k_b at every distance)."""
    model = _rope_model(layout)
    offsets = torch.tensor([1, 2, 5])
    weights = torch.arange(1.0, 9.0, dtype=torch.float64)
    p = weights / weights.sum()
    c = torch.zeros(8, len(offsets), 8, dtype=torch.float64)
    for j, m in enumerate(offsets.tolist()):
        texts = torch.tensor([[b] + [0] * (m - 1) + [a] for a in range(8) for b in range(8)])
        c[:, j, :] = pair_logits(model, texts, head=1).sum(1)[:, m, 0].double().view(8, 8)
    unrotated = TinyTransformer(ModelConfig(vocab_size=8, d_model=16, n_heads=2, n_layers=2, position="none",
                                            causal=True))
    unrotated.load_state_dict(model.state_dict())
    texts = torch.tensor([[b, a] for a in range(8) for b in range(8)])
    with torch.no_grad():
        c0 = unrotated(texts, details=True).attention_logits[0][:, 1, 1, 0].double().view(8, 8)
    favourite = c0.argmax(1)
    expected = torch.stack([(p * (c[torch.arange(8), j, favourite] - c[:, j, :] @ p)).sum() for j in range(3)])
    gap = favourite_key_gap(model, offsets, head=1, token_weights=weights)
    torch.testing.assert_close(gap, expected, rtol=1e-5, atol=1e-5)
    at_zero = favourite_key_gap(model, torch.tensor([0]), head=1, token_weights=weights)
    torch.testing.assert_close(at_zero, (p * (c0.max(1).values - c0 @ p)).sum()[None], rtol=1e-5, atol=1e-5)
    assert at_zero.item() >= 0  # the favourite is the best key at distance 0


def test_favourite_key_gap_checks_its_arguments():
    model = _rope_model()
    with pytest.raises(TypeError, match="offsets"):
        favourite_key_gap(model, torch.tensor([1.0]), head=0)
    with pytest.raises(ValueError, match="offsets"):
        favourite_key_gap(model, torch.tensor([-1, 2]), head=0)
    with pytest.raises(ValueError, match="token_weights"):
        favourite_key_gap(model, torch.tensor([1]), head=0, token_weights=torch.ones(7))
    with pytest.raises(ValueError, match="head"):
        favourite_key_gap(model, torch.tensor([1]), head=2)
    learned = TinyTransformer(ModelConfig(vocab_size=8, d_model=16, position="learned", causal=True))
    with pytest.raises(ValueError, match="rope"):
        favourite_key_gap(learned, torch.tensor([1]), head=0)
    nope_first = TinyTransformer(ModelConfig(vocab_size=8, d_model=16, position="rope", causal=True,
                                             nope_layers=(0,)))
    with pytest.raises(ValueError, match="NoPE"):
        favourite_key_gap(nope_first, torch.tensor([1]), head=0)
