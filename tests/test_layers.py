"""Tests for course_utils.layers (lesson 08) and plots.layer_curves."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from conftest import examples
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from course_utils import (  # noqa: E402
    LayerProfile,
    ModelConfig,
    ResidualFeatures,
    TinyTransformer,
    layer_curves,
    layer_profile,
    linear_probe,
    logistic_probe,
    make_batch,
    moving_average,
    position_labels,
    residual_features,
    steps_to_accuracy,
    variance_explained,
)


# --- position_labels ----------------------------------------------------------------------------

@settings(max_examples=examples(40), deadline=None)
@given(st.integers(1, 12), st.integers(1, 12))
def test_position_labels_are_the_row_index_modulo_n(batch_size, n):
    labels = position_labels(batch_size, n)
    assert labels.shape == (batch_size * n,)
    assert labels.dtype == torch.long
    assert labels.tolist() == [row % n for row in range(batch_size * n)]


def test_position_labels_match_a_flattened_batch():
    grid = torch.arange(3)[None, :].expand(4, 3)  # position of every token of a [4, 3] batch
    assert torch.equal(position_labels(4, 3), grid.reshape(-1))


@pytest.mark.parametrize("args, error, name", [
    ((0, 3), ValueError, "batch_size"), ((2, 0), ValueError, "n"), ((2.0, 3), TypeError, "batch_size"),
    ((2, "3"), TypeError, "n"), ((True, 3), TypeError, "batch_size"),
])
def test_position_labels_reject_bad_arguments(args, error, name):
    with pytest.raises(error, match=name):
        position_labels(*args)


# --- residual_features --------------------------------------------------------------------------

def _model(**options):
    config = ModelConfig(**{"vocab_size": 8, "d_model": 16, "n_layers": 2, "max_len": 8, **options})
    return TinyTransformer(config, seed=0)


def _batch(task="previous_token", batch_size=5, length=6, seed=0):
    return make_batch(task, batch_size=batch_size, length=length, vocab_size=8,
                      generator=torch.Generator().manual_seed(seed))


def test_residual_features_flatten_every_layer_row_by_row():
    model, batch = _model(), _batch()
    features = residual_features(model, batch)
    with torch.no_grad():
        residuals = model(batch.tokens, details=True).residuals
    assert isinstance(features, ResidualFeatures)
    assert len(features.layers) == 3
    for layer, residual in zip(features.layers, residuals):
        assert layer.shape == (30, 16) and layer.dtype == torch.float64
        for b, t in ((0, 0), (2, 3), (4, 5)):
            assert torch.allclose(layer[b * 6 + t], residual[b, t].double())
    assert torch.equal(features.positions, position_labels(5, 6))
    assert torch.equal(features.tokens, batch.tokens.reshape(-1))
    assert torch.equal(features.targets, batch.targets.reshape(-1))
    assert torch.equal(features.scored, batch.scored.reshape(-1))
    assert features.tokens[2 * 6 + 3] == batch.tokens[2, 3]


def test_residual_features_leave_the_model_mode_alone():
    model = _model()
    model.train()
    residual_features(model, _batch())
    assert model.training
    model.eval()
    residual_features(model, _batch())
    assert not model.training


def test_residual_features_reject_bad_arguments():
    with pytest.raises(TypeError, match="model"):
        residual_features(torch.nn.Linear(2, 2), _batch())
    with pytest.raises(TypeError, match="batch"):
        residual_features(_model(), _batch().tokens)


# --- layer_profile ------------------------------------------------------------------------------

def _synthetic(n_rows=240, n=8, vocab=6, seed=0):
    """Layer 0: pure position (one-hot); layer 1: pure token; layer 2: noise."""
    g = torch.Generator().manual_seed(seed)
    positions = torch.arange(n).repeat(n_rows // n)
    tokens = torch.randint(0, vocab, (n_rows,), generator=g)
    pure_position = torch.nn.functional.one_hot(positions, n).double()
    pure_token = torch.nn.functional.one_hot(tokens, vocab).double()
    noise = torch.randn(n_rows, 5, generator=g, dtype=torch.float64)
    scored = positions > 0
    return ResidualFeatures(layers=(pure_position, pure_token, noise), positions=positions, tokens=tokens,
                            targets=tokens.roll(1), scored=scored)


def test_layer_profile_reads_pure_position_and_pure_token_layers():
    profile = layer_profile(_synthetic())
    assert isinstance(profile, LayerProfile) and profile.n_layers == 2
    assert profile.position_probe[0] == 1.0 and profile.token_probe[1] == 1.0
    assert profile.position_share[0] == pytest.approx(1.0) and profile.token_share[1] == pytest.approx(1.0)
    assert profile.token_share[0] < 0.1 and profile.position_share[1] < 0.1
    assert profile.position_probe[2] < 0.4 and profile.token_probe[2] < 0.5
    assert max(profile.position_share[2], profile.token_share[2]) < 0.15


def test_layer_profile_agrees_with_the_probe_and_the_split_it_uses():
    features = _synthetic(seed=3)
    profile = layer_profile(features, seed=2)
    layer = features.layers[2]
    assert profile.position_probe[2] == logistic_probe(layer, features.positions, seed=2).test_accuracy
    assert profile.token_probe[1] == logistic_probe(features.layers[1], features.tokens, seed=2).test_accuracy
    assert profile.token_share[2] == variance_explained(layer, features.tokens)
    rows = features.scored
    assert profile.target_share[1] == variance_explained(features.layers[1][rows], features.targets[rows])
    least_squares = layer_profile(features, probe="least_squares", seed=2)
    assert least_squares.position_probe[2] == linear_probe(layer, features.positions, seed=2).test_accuracy
    assert least_squares.position_share == profile.position_share


def test_layer_profile_can_leave_out_the_first_positions():
    features = _synthetic(seed=4)
    profile = layer_profile(features, first_position=2, seed=1)
    rows = features.positions >= 2
    layer = features.layers[2][rows]
    assert profile.position_probe[2] == logistic_probe(layer, features.positions[rows], seed=1).test_accuracy
    assert profile.position_share[2] == variance_explained(layer, features.positions[rows])
    scored = features.scored[rows]
    assert profile.target_share[1] == variance_explained(features.layers[1][rows][scored],
                                                         features.targets[rows][scored])
    assert layer_profile(features, first_position=0, seed=1) == layer_profile(features, seed=1)



def test_layer_profile_can_leave_out_more_positions_from_the_target_share_only():
    features = _synthetic(seed=5)
    profile = layer_profile(features, first_position=1, target_first_position=3, seed=1)
    rows = features.positions >= 1
    assert profile.position_share == layer_profile(features, first_position=1, seed=1).position_share
    target_rows = features.scored & (features.positions >= 3)
    assert profile.target_share[1] == variance_explained(features.layers[1][target_rows],
                                                         features.targets[target_rows])
    assert profile.token_share[0] == variance_explained(features.layers[0][rows], features.tokens[rows])
    # below first_position it changes nothing: those rows are already left out
    assert layer_profile(features, first_position=2, target_first_position=1, seed=1) == \
        layer_profile(features, first_position=2, seed=1)


def test_an_answer_fixed_by_the_position_is_credited_to_the_target_unless_left_out():
    """Previous token after a marker: the answer at position 1 is always 0. A layer that only marks
    position 1 is 'explained by the target' with position 1 kept, and not once it is left out."""
    g = torch.Generator().manual_seed(0)
    n, batch = 8, 60
    positions = torch.arange(n).repeat(batch)
    tokens = torch.randint(1, 6, (n * batch,), generator=g)
    tokens[positions == 0] = 0
    targets = tokens.roll(1)
    layer = torch.randn(n * batch, 4, generator=g, dtype=torch.float64)
    layer[positions == 1] += 10.0
    features = ResidualFeatures(layers=(layer,), positions=positions, tokens=tokens, targets=targets,
                                scored=positions > 0)
    kept = layer_profile(features, first_position=1, probe="least_squares")
    left_out = layer_profile(features, first_position=1, target_first_position=2,
                             probe="least_squares")
    assert kept.target_share[0] > 0.8 and left_out.target_share[0] < 0.05

def test_leaving_out_a_marker_removes_its_fake_position_signal():
    """Token 0 always at position 0, every other row pure noise: with position 0 kept the marker
    makes position 'explain' variance and be readable; left out, both drop to chance level."""
    g = torch.Generator().manual_seed(0)
    n, batch = 8, 60
    positions = torch.arange(n).repeat(batch)
    tokens = torch.randint(1, 6, (n * batch,), generator=g)
    tokens[positions == 0] = 0
    noise = torch.randn(n * batch, 4, generator=g, dtype=torch.float64)
    noise[positions == 0] += 10.0  # the marker's rows sit far from the others
    features = ResidualFeatures(layers=(noise,), positions=positions, tokens=tokens, targets=tokens,
                                scored=torch.ones(n * batch, dtype=torch.bool))
    kept, left_out = layer_profile(features), layer_profile(features, first_position=1)
    assert kept.position_share[0] > 0.8 and left_out.position_share[0] < 0.05
    assert kept.position_probe[0] > 1 / n + 0.05 and left_out.position_probe[0] < 1 / (n - 1) + 0.05


def test_layer_profile_of_a_model_has_one_entry_per_layer():
    profile = layer_profile(residual_features(_model(n_layers=3), _batch(batch_size=16)))
    for values in (profile.position_probe, profile.token_probe, profile.position_share, profile.token_share,
                   profile.target_share):
        assert len(values) == 4 and all(0.0 <= v <= 1.0 for v in values)


def test_layer_profile_rejects_bad_arguments():
    with pytest.raises(TypeError, match="features"):
        layer_profile(torch.zeros(4, 4))
    with pytest.raises(ValueError, match="seed"):
        layer_profile(_synthetic(), seed=-1)
    with pytest.raises(ValueError, match="probe"):
        layer_profile(_synthetic(), probe="ridge")
    with pytest.raises(ValueError, match="first_position"):
        layer_profile(_synthetic(), first_position=-1)
    with pytest.raises(ValueError, match="first_position"):
        layer_profile(_synthetic(n=8), first_position=8)
    with pytest.raises(TypeError, match="first_position"):
        layer_profile(_synthetic(), first_position=1.0)
    with pytest.raises(ValueError, match="target_first_position"):
        layer_profile(_synthetic(), target_first_position=-1)
    with pytest.raises(ValueError, match="target_first_position"):
        layer_profile(_synthetic(n=8), target_first_position=8)
    with pytest.raises(TypeError, match="target_first_position"):
        layer_profile(_synthetic(), target_first_position=2.0)


# --- moving_average and steps_to_accuracy -------------------------------------------------------

def test_moving_average_matches_a_loop():
    values = [0.0, 1.0, 2.0, 3.0, 10.0]
    assert moving_average(values, 2).tolist() == [0.5, 1.5, 2.5, 6.5]
    assert moving_average(torch.tensor(values), 5).tolist() == [3.2]
    assert moving_average(values, 1).tolist() == values


def test_steps_to_accuracy_counts_steps_from_one():
    curve = [0.0] * 5 + [1.0] * 10
    assert steps_to_accuracy(curve, 1.0, window=1) == 6
    assert steps_to_accuracy(curve, 1.0, window=5) == 10
    assert steps_to_accuracy(curve, 0.5, window=4) == 7  # steps 4-7: 0, 0, 1, 1
    assert steps_to_accuracy([0.2] * 20, 0.9) is None


@pytest.mark.parametrize("call, error, name", [
    (lambda: moving_average([1.0, 2.0], 3), ValueError, "window"),
    (lambda: moving_average([1.0, 2.0], 0), ValueError, "window"),
    (lambda: moving_average("abc", 1), TypeError, "values"),
    (lambda: moving_average(torch.zeros(2, 2), 1), ValueError, "values"),
    (lambda: moving_average([1.0, "a"], 1), TypeError, "values"),
    (lambda: steps_to_accuracy([0.5], "high"), TypeError, "level"),
    (lambda: steps_to_accuracy(None, 0.5), TypeError, "accuracy"),
])
def test_curve_helpers_reject_bad_arguments(call, error, name):
    with pytest.raises(error, match=name):
        call()


# --- layer_curves -------------------------------------------------------------------------------

def test_layer_curves_draws_one_line_per_label_and_a_chance_line():
    ax = layer_curves({"position": [0.9, 0.7, 0.5], "token": [1, 1, 1]}, title="t", ylabel="accuracy", chance=0.1)
    assert len(ax.lines) == 3
    assert [tick.get_text() for tick in ax.get_xticklabels()] == ["input", "1", "2"]
    assert ax.get_ylabel() == "accuracy" and ax.get_title() == "t"
    plt.close("all")


@pytest.mark.parametrize("kwargs, error, name", [
    ({"curves": {}}, TypeError, "curves"),
    ({"curves": {"a": [1, 2], "b": [1]}}, ValueError, "curves"),
    ({"curves": {"a": ["x"]}}, TypeError, "curves"),
    ({"curves": {"a": [1]}, "title": 3}, TypeError, "title"),
    ({"curves": {"a": [1]}, "ylabel": None}, TypeError, "ylabel"),
    ({"curves": {"a": [1]}, "chance": "low"}, TypeError, "chance"),
])
def test_layer_curves_rejects_bad_arguments(kwargs, error, name):
    options = {"title": "t", "ylabel": "y", **kwargs}
    curves = options.pop("curves")
    with pytest.raises(error, match=name):
        layer_curves(curves, **options)
    plt.close("all")


def test_steps_to_accuracy_returns_an_int_for_a_0d_tensor_window():
    """Found by the fuzzer (issue 14): the validated window, not the caller's tensor, is used."""
    from course_utils import steps_to_accuracy

    result = steps_to_accuracy([0.0] * 5 + [1.0] * 10, 0.9, window=torch.tensor(5))
    assert type(result) is int and result == 10  # steps 6-10 are the first window of ones
