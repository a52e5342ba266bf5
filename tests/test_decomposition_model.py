"""model_four_terms and the offset helpers behind lesson 06 (its trained claims: test_claims_06)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_utils import (FourTerms, ModelConfig, TinyTransformer, four_term_decomposition,  # noqa: E402
                          four_term_heatmaps, key_argmax_share, key_pull, model_four_terms, offset_argmax_share,
                          offset_dependence, offset_only_r2, offset_profile, offset_pull, principal_angles,
                          sinusoidal_encoding, term_subspaces, weight_on_key, without_terms)


def test_model_four_terms_add_up_to_the_model_logits():
    model = TinyTransformer(ModelConfig(vocab_size=8, d_model=16, n_heads=2, n_layers=1, max_len=8), seed=3)
    tokens = torch.tensor([1, 5, 2, 2, 7, 0])
    with torch.no_grad():
        logits = model(tokens[None], details=True).attention_logits[0][0]
    for head in (0, 1):
        terms = model_four_terms(model, tokens, head=head)
        torch.testing.assert_close(terms.total(), logits[head].double(), rtol=1e-5, atol=1e-5)


def test_model_four_terms_share_sigma_between_token_and_position():
    """x̃ and ẽ are both divided by σ(x + e): the position-position term moves with the tokens."""
    model = TinyTransformer(ModelConfig(vocab_size=8, d_model=16, n_heads=1, n_layers=1, max_len=8), seed=0)
    a = model_four_terms(model, torch.tensor([0, 1, 2, 3])).position_position
    b = model_four_terms(model, torch.tensor([4, 5, 6, 7])).position_position
    assert (a - b).abs().max() > 1e-3


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


def test_offset_only_r2_is_the_r2_of_a_least_squares_fit_on_the_offset():
    g = torch.Generator().manual_seed(0)
    for shape in ((5, 5), (3, 4, 4), (1, 1)):
        scores = torch.randn(*shape, generator=g, dtype=torch.float64)
        n = shape[-1]
        offsets = (torch.arange(n)[None, :] - torch.arange(n)[:, None]).expand(shape).reshape(-1)
        design = torch.nn.functional.one_hot(offsets + n - 1, 2 * n - 1).double()
        values = scores.reshape(-1, 1)
        fit = design @ torch.linalg.lstsq(design, values).solution
        total = ((values - values.mean()) ** 2).sum()
        expected = 1.0 if total == 0 else 1 - (((values - fit) ** 2).sum() / total).item()
        assert offset_only_r2(scores) == pytest.approx(expected, abs=1e-9)


def test_offset_only_r2_on_known_matrices():
    pe = sinusoidal_encoding(10, 16, dtype=torch.float64)
    assert offset_only_r2(pe @ pe.T) == pytest.approx(1.0)
    assert offset_only_r2(torch.full((4, 4), 3.0)) == 1.0
    assert offset_only_r2(torch.zeros(3, 3)) == 1.0
    # a matrix that depends on t only: the offset explains part of it, not all
    rows = torch.arange(5.0, dtype=torch.float64)[:, None].expand(5, 5)
    assert 0.0 < offset_only_r2(rows) < 1.0
    # every diagonal averages to 0, the overall mean: the offset explains nothing
    no_offset = torch.tensor([[1.0, 1.0, 0.0], [1.0, -1.0, -1.0], [0.0, -1.0, 0.0]])
    assert offset_only_r2(no_offset) == pytest.approx(0.0)
    # scale-free and safe for huge values
    assert offset_only_r2(1e300 * rows) == pytest.approx(offset_only_r2(rows))
    with pytest.raises(ValueError, match="square"):
        offset_only_r2(torch.randn(3, 4))
    with pytest.raises(ValueError, match="scores"):
        offset_only_r2(torch.randn(3))
    with pytest.raises(ValueError, match="empty"):
        offset_only_r2(torch.zeros(0, 0))


def test_offset_argmax_share_counts_the_rows_that_pick_offset_k():
    scores = torch.zeros(2, 4, 4, dtype=torch.float64)
    scores[:, 1, 0] = scores[:, 2, 1] = scores[:, 3, 2] = 4.0  # each row t >= 1 favours s = t - 1
    assert offset_argmax_share(scores, -1) == 1.0
    assert offset_argmax_share(scores, 0) == 0.25  # only row 0 (all zeros, ties go left)
    assert offset_argmax_share(scores[0], 1) == 0.0
    with pytest.raises(ValueError, match="k"):
        offset_argmax_share(scores, -4)
    with pytest.raises(ValueError, match="square"):
        offset_argmax_share(torch.zeros(3, 4), 0)


def test_without_terms_drops_nothing_and_gives_the_model_itself():
    for config in (ModelConfig(vocab_size=8, d_model=16, n_heads=2, n_layers=2, max_len=8, causal=True,
                               reapply_position=True),
                   ModelConfig(vocab_size=8, d_model=16, n_heads=1, n_layers=1, max_len=8, position="learned")):
        model = TinyTransformer(config, seed=2)
        tokens = torch.randint(0, 8, (3, 6), generator=torch.Generator().manual_seed(0))
        run = without_terms(model, tokens, ())
        with torch.no_grad():
            out = model(tokens, details=True)
        torch.testing.assert_close(run.logits, out.logits, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(run.weights, out.attention_weights[0][:, 0].double(), rtol=1e-5, atol=1e-6)


def test_without_terms_recomputes_the_weights_from_the_kept_terms():
    model = TinyTransformer(ModelConfig(vocab_size=8, d_model=16, n_heads=1, n_layers=1, max_len=8), seed=4)
    tokens = torch.tensor([[1, 5, 2, 2, 7, 0]])
    terms = model_four_terms(model, tokens[0])
    for drop in ("token_position", ("token_token", "position_position")):
        dropped = (drop,) if isinstance(drop, str) else drop
        kept = sum(getattr(terms, name) for name in terms._fields if name not in dropped)
        expected = torch.softmax(kept, dim=-1)
        torch.testing.assert_close(without_terms(model, tokens, drop).weights[0], expected)
    everything = without_terms(model, tokens, FourTerms._fields).weights[0]
    torch.testing.assert_close(everything, torch.full((6, 6), 1 / 6, dtype=torch.float64))  # all logits 0
    with pytest.raises(ValueError, match="drop"):
        without_terms(model, tokens, "token_tokens")
    with pytest.raises(TypeError, match="drop"):
        without_terms(model, tokens, 3)
    with pytest.raises(ValueError, match="tokens"):
        without_terms(model, tokens[0], ())


def test_term_subspaces_span_what_the_terms_multiply():
    """The token-position term of any sequence is built from rows in the spans term_subspaces gives."""
    model = TinyTransformer(ModelConfig(vocab_size=6, d_model=16, n_heads=1, n_layers=1, max_len=8), seed=1)
    spaces = term_subspaces(model, 8)
    assert spaces.token.shape == (7, 16) and spaces.position.shape == (8, 16)
    assert spaces.query_token.shape == (7, 16) and spaces.key_position.shape == (8, 16)
    tokens = torch.tensor([3, 0, 5, 5, 1, 2, 4, 0])
    terms = model_four_terms(model, tokens)
    with torch.no_grad():
        h = model.embed(tokens[None])[0].double()
    sigma = torch.sqrt(h.var(dim=-1, correction=0) + model.blocks[0].ln_attention.eps)[:, None]
    # x̃_t w_q (with the bias) = query_token[token]/σ_t + the shared row; ẽ_s w_k = key_position[s]/σ_s
    query = spaces.query_token[tokens] / sigma + spaces.query_token[-1]
    key = spaces.key_position / sigma
    torch.testing.assert_close(query @ key.T / 16**0.5, terms.token_position)
    key_token = spaces.key_token[tokens] / sigma + spaces.key_token[-1]
    torch.testing.assert_close(spaces.query_position / sigma @ key_token.T / 16**0.5, terms.position_token)
    # orthogonal spans would make the cross term vanish: the angles are what decides
    angles = principal_angles(spaces.query_token, spaces.key_position)
    assert angles.shape == (7,) and (angles >= 0).all() and (angles <= 90).all()
    with pytest.raises(ValueError, match="n"):
        term_subspaces(model, 0)


def test_key_helpers_read_the_named_key():
    scores = torch.tensor([[[0.0, 3.0, 1.0], [2.0, 0.0, 1.0], [1.0, 1.0, 4.0]]])
    keys = torch.tensor([[1, 0, -1]])  # the last row does not count
    assert key_pull(scores, keys) == pytest.approx(((3 - 4 / 3) + (2 - 1)) / 2)
    assert key_argmax_share(scores, keys) == 1.0
    assert key_argmax_share(scores, torch.tensor([[2, 0, 2]])) == pytest.approx(2 / 3)
    weights = scores.softmax(dim=-1)
    assert weight_on_key(weights, keys) == pytest.approx(((weights[0, 0, 1] + weights[0, 1, 0]) / 2).item())
    # offset_pull is the special case keys[t] = t + k
    square = torch.randn(2, 5, 5, generator=torch.Generator().manual_seed(0))
    previous = torch.arange(5).expand(2, 5) - 1
    assert key_pull(square, previous) == pytest.approx(offset_pull(square, -1))
    assert key_argmax_share(square, previous) == pytest.approx(offset_argmax_share(square, -1))
    with pytest.raises(ValueError, match="keys"):
        key_pull(scores, torch.tensor([[5, -1, 3]]))
    with pytest.raises(ValueError, match="keys"):
        key_pull(scores, torch.tensor([1, 0, 2]))
    with pytest.raises(TypeError, match="keys"):
        key_pull(scores, keys.double())
    with pytest.raises(ValueError, match="weights"):
        weight_on_key(torch.rand(2, 3), torch.tensor([0, 1]))
