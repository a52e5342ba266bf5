"""Lesson 06's claims about a trained model, on three seeds, and the helpers behind them."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_utils import (ModelConfig, TinyTransformer, evaluate, four_term_decomposition,  # noqa: E402
                          four_term_heatmaps, make_batch, model_four_terms, offset_dependence, offset_profile,
                          offset_pull,
                          sinusoidal_encoding, train)


def trained(seed: int) -> TinyTransformer:
    config = ModelConfig(vocab_size=8, d_model=32, n_heads=1, n_layers=1, max_len=16, position="sinusoidal")
    model = TinyTransformer(config, seed=seed)
    train(model, "previous_token", steps=300, lengths=(8, 16), seed=seed, progress=False)
    return model


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lesson_06_claims_hold_on_three_seeds(seed):
    model = trained(seed)
    assert evaluate(model, "previous_token", length=16) > 0.95
    tokens = make_batch("previous_token", batch_size=16, length=16, vocab_size=8,
                        generator=torch.Generator().manual_seed(seed + 1)).tokens
    split = [model_four_terms(model, sequence) for sequence in tokens]
    with torch.no_grad():
        logits = torch.stack([model(s[None], details=True).attention_logits[0][0, 0] for s in tokens])
    terms = {name: torch.stack([getattr(s, name) for s in split]) for name in split[0]._fields}
    assert (sum(terms.values()) - logits.double()).abs().max() < 1e-4, "the split is exact"
    pulls = {name: offset_pull(term, -1) for name, term in terms.items()}
    # position–position carries (nearly) all of the pull to t - 1; the cross terms pull (almost) nowhere
    assert pulls["position_position"] > 0.8 * sum(pulls.values())
    assert abs(pulls["token_position"]) < 0.25 * pulls["position_position"]
    assert abs(pulls["position_token"]) < 0.25 * pulls["position_position"]
    # token–token pushes attention away from the query's own position
    assert offset_pull(terms["token_token"], 0) < -0.1
    # the averaged position–position term is far from offset-only
    mean = terms["position_position"].mean(0)
    assert offset_dependence(mean) > mean.std().item()


def test_model_four_terms_checks_its_input():
    model = TinyTransformer(ModelConfig(vocab_size=8, d_model=16, n_heads=2, n_layers=1, max_len=8))
    tokens = torch.arange(6)
    assert model_four_terms(model, tokens, head=1).token_token.shape == (6, 6)
    with pytest.raises(ValueError, match="head"):
        model_four_terms(model, tokens, head=2)
    with pytest.raises(ValueError, match="tokens"):
        model_four_terms(model, tokens[None])
    with pytest.raises(TypeError, match="model"):
        model_four_terms("model", tokens)
    none = TinyTransformer(ModelConfig(vocab_size=8, d_model=16, position="none"))
    with pytest.raises(ValueError, match="position"):
        model_four_terms(none, tokens)


def test_offset_helpers():
    pe = sinusoidal_encoding(10, 16, dtype=torch.float64)
    assert offset_dependence(pe @ pe.T) < 1e-9
    broken = pe @ pe.T
    broken[3, 5] += 1.0
    assert offset_dependence(broken) == pytest.approx(1.0)
    profile = offset_profile((pe @ pe.T)[None].repeat(2, 1, 1), range(-2, 3))
    torch.testing.assert_close(profile, torch.tensor([(pe[0] @ pe[k]).item() for k in (2, 1, 0, 1, 2)], dtype=torch.float64))
    with pytest.raises(ValueError, match="square"):
        offset_dependence(torch.randn(3, 4))
    with pytest.raises(ValueError, match="offsets"):
        offset_profile(torch.randn(3, 3), range(-5, 5))
    with pytest.raises(TypeError, match="offsets"):
        offset_profile(torch.randn(3, 3), [0, 1])


def test_four_term_heatmaps_draws_five_panels():
    x, e = torch.randn(5, 4), torch.randn(5, 4)
    terms = four_term_decomposition(x, e, x, e, torch.randn(4, 3), torch.randn(4, 3))
    fig = four_term_heatmaps(terms, title="t")
    assert [ax.get_title() for ax in fig.axes[:5]][-1] == "sum = logits" and len(fig.axes) == 6
    plt.close(fig)
    with pytest.raises(TypeError, match="terms"):
        four_term_heatmaps((1, 2, 3, 4), title="t")


def test_offset_pull_measures_the_favoured_diagonal():
    scores = torch.zeros(2, 4, 4, dtype=torch.float64)
    scores[:, 1, 0] = scores[:, 2, 1] = scores[:, 3, 2] = 4.0  # each row t >= 1 favours s = t - 1
    assert offset_pull(scores, -1) == pytest.approx(3.0)  # 4 minus the row mean of 1
    assert offset_pull(scores, 0) < 0
    with pytest.raises(ValueError, match="k"):
        offset_pull(scores, 4)
    with pytest.raises(ValueError, match="square"):
        offset_pull(torch.zeros(3, 4), 0)
