"""Training is reproducible and really learns: a position task with a code, not without one."""

import pytest
import torch

from course_utils.models import ModelConfig, TinyTransformer
from course_utils.tasks import n_classes
from course_utils.training import History, accuracy_by_position, evaluate, train


def model_for(task, position="sinusoidal", causal=False, vocab=8, max_len=16, seed=0):
    config = ModelConfig(vocab_size=vocab, d_model=32, n_heads=2, n_layers=2, max_len=max_len, position=position,
                         causal=causal, n_outputs=n_classes(task, vocab_size=vocab, max_len=max_len))
    return TinyTransformer(config, seed=seed)


def test_same_seeds_give_identical_histories():
    a = train(model_for("previous_token"), "previous_token", steps=15, progress=False)
    b = train(model_for("previous_token"), "previous_token", steps=15, progress=False)
    assert a.loss == b.loss and a.accuracy == b.accuracy
    c = train(model_for("previous_token"), "previous_token", steps=15, seed=1, progress=False)
    assert a.loss != c.loss


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_previous_token_is_learned_with_a_code_and_not_without(seed):
    with_code = model_for("previous_token", seed=seed)
    train(with_code, "previous_token", steps=250, seed=seed, progress=False)
    without = model_for("previous_token", position="none", seed=seed)
    train(without, "previous_token", steps=250, seed=seed, progress=False)
    assert evaluate(with_code, "previous_token", length=16) > 0.95
    assert evaluate(without, "previous_token", length=16) < 0.5


def test_evaluate_from_position_scores_only_the_later_positions():
    model = model_for("previous_token", causal=True, max_len=32)
    train(model, "previous_token", steps=40, lengths=(4, 8), progress=False)
    by_position = accuracy_by_position(model, "previous_token", length=24, batch_size=64)
    all_positions = evaluate(model, "previous_token", length=24, n_batches=1, batch_size=64)
    later = evaluate(model, "previous_token", length=24, n_batches=1, batch_size=64, from_position=8)
    assert all_positions == pytest.approx(by_position[1:].mean().item())
    assert later == pytest.approx(by_position[8:].mean().item())
    assert evaluate(model, "previous_token", length=24, from_position=0) == evaluate(model, "previous_token", length=24)
    with pytest.raises(ValueError, match="from_position"):
        evaluate(model, "previous_token", length=24, from_position=24)
    with pytest.raises(ValueError, match="from_position"):
        evaluate(model, "previous_token", length=24, from_position=-1)
    with pytest.raises(TypeError, match="from_position"):
        evaluate(model, "previous_token", length=24, from_position=2.0)


def test_history_and_evaluate_check_their_input():
    assert History(accuracy=[0.0, 1.0, 1.0]).final_accuracy(last=2) == 1.0
    with pytest.raises(ValueError, match="empty"):
        History().final_accuracy()
    model = model_for("reverse")
    with pytest.raises(ValueError, match="task"):
        train(model, "sort", steps=1, progress=False)
    with pytest.raises(ValueError, match="n_outputs"):
        train(model, "own_index", steps=1, progress=False)
    with pytest.raises(TypeError, match="model"):
        train("model", "reverse", steps=1, progress=False)
    with pytest.raises(ValueError, match="steps"):
        train(model, "reverse", steps=0, progress=False)
    with pytest.raises(TypeError, match="lengths"):
        train(model, "reverse", lengths=8, progress=False)
    with pytest.raises(ValueError, match="lengths"):
        train(model, "reverse", lengths=(8, 4), progress=False)
    with pytest.raises(ValueError, match="lr"):
        train(model, "reverse", lr=-1.0, progress=False)
    with pytest.raises(ValueError, match="length"):
        evaluate(model, "reverse", length=0)
    accuracy = evaluate(model, "reverse", length=8)
    assert 0.0 <= accuracy <= 1.0 and model.training, "evaluate restores the mode it found"


@pytest.mark.parametrize("side_by_side", [False, True])
def test_weight_decay_shrinks_the_matrices_and_tables_only(side_by_side):
    """One AdamW step from the same start on the same batch: with decay w every matrix and table
    ends lr·w·(its start) lower than without, and biases and LayerNorm gains end the same."""
    config = ModelConfig(vocab_size=8, d_model=8, n_heads=2, n_layers=1, max_len=8, position="learned")
    lr, decay = 1e-2, 0.5
    ends = {}
    for w in (0.0, decay):
        models = [TinyTransformer(config, seed=s) for s in (0, 1)]
        if side_by_side:
            train(models, "previous_token", steps=1, lengths=(6, 6), lr=lr, weight_decay=w, seed=[0, 1],
                  progress=False)
        else:
            for s, m in enumerate(models):
                train(m, "previous_token", steps=1, lengths=(6, 6), lr=lr, weight_decay=w, seed=s, progress=False)
        ends[w] = [dict(m.named_parameters()) for m in models]
    start = dict(TinyTransformer(config, seed=0).named_parameters())
    for name, before in start.items():
        shrink = (ends[0.0][0][name] - ends[decay][0][name]).detach()
        expected = lr * decay * before.detach() if before.ndim >= 2 else torch.zeros_like(before)
        assert torch.allclose(shrink, expected, atol=1e-6), name


def test_weight_decay_is_checked():
    model = TinyTransformer(ModelConfig(vocab_size=8, d_model=8, n_heads=2, n_layers=1, max_len=8), seed=0)
    with pytest.raises(ValueError, match="weight_decay"):
        train(model, "previous_token", steps=1, weight_decay=-0.1, progress=False)
    with pytest.raises(TypeError, match="weight_decay"):
        train(model, "previous_token", steps=1, weight_decay="a lot", progress=False)
    with pytest.raises(ValueError, match="weight_decay"):
        train(model, "previous_token", steps=1, lr=0.5, weight_decay=2.0, progress=False)


def test_on_step_sees_every_step_may_set_the_learning_rate_and_may_stop():
    seen = []

    def watch(step, model, optimiser):
        seen.append((step, optimiser.param_groups[0]["lr"], model.training))
        optimiser.param_groups[0]["lr"] = 0.0 if step >= 3 else 3e-3  # frozen from step 4 on
        return step == 6

    model = model_for("previous_token")
    history = train(model, "previous_token", steps=20, progress=False, on_step=watch)
    assert [s for s, _, _ in seen] == list(range(7)) and len(history.loss) == 6
    assert all(training for _, _, training in seen[1:]) and not model.training
    frozen = {name: p.detach().clone() for name, p in model.named_parameters()}
    assert seen[-1][1] == 0.0

    # A run that does nothing in on_step is the run without it, bit for bit; lr 0 after step 3
    # leaves the weights where 3 steps put them (AdamW's decay is 0 here).
    plain, watched = model_for("previous_token"), model_for("previous_token")
    a = train(plain, "previous_token", steps=3, progress=False)
    b = train(watched, "previous_token", steps=3, progress=False, on_step=lambda *_: None)
    assert a.loss == b.loss
    for name, p in plain.named_parameters():
        assert torch.equal(p, dict(watched.named_parameters())[name])
        assert torch.equal(p, frozen[name]), name


def test_on_step_is_checked():
    model = model_for("previous_token")
    with pytest.raises(TypeError, match="on_step"):
        train(model, "previous_token", steps=1, progress=False, on_step="stop early")
    with pytest.raises(ValueError, match="on_step"):
        train([model_for("previous_token"), model_for("previous_token", seed=1)], "previous_token", steps=1,
              lengths=(6, 6), seed=[0, 1], progress=False, on_step=lambda *_: None)
