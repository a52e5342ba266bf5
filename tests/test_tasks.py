"""The toy tasks: targets follow the definition, batches are reproducible, bad input is named."""

import pytest
import torch

from course_utils.tasks import NEEDS_POSITION, TASKS, make_batch, n_classes, scored_accuracy


def batch(task, length=7, seed=0, **kw):
    return make_batch(task, batch_size=5, length=length, vocab_size=6, generator=torch.Generator().manual_seed(seed), **kw)


@pytest.mark.parametrize("task", TASKS)
def test_shapes_dtypes_and_reproducibility(task):
    a, b = batch(task), batch(task)
    assert a.tokens.shape == a.targets.shape == a.scored.shape == (5, 7)
    assert a.tokens.dtype == a.targets.dtype == torch.long and a.scored.dtype == torch.bool
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.targets, b.targets)
    assert not torch.equal(a.tokens, batch(task, seed=1).tokens)
    assert int(a.targets.max()) < n_classes(task, vocab_size=6, max_len=7)


def test_targets_follow_their_definitions():
    b = batch("reverse")
    assert torch.equal(b.targets[:, 0], b.tokens[:, -1]) and torch.equal(b.targets[:, 3], b.tokens[:, 3])
    b = batch("previous_token")
    assert torch.equal(b.targets[:, 1:], b.tokens[:, :-1]) and not b.scored[:, 0].any() and b.scored[:, 1:].all()
    b = batch("copy_offset", offset=3)
    assert torch.equal(b.targets[:, 3:], b.tokens[:, :-3]) and not b.scored[:, :3].any()
    b = batch("own_index")
    assert torch.equal(b.targets[2], torch.arange(7))
    b = batch("pointer", length=7)  # tokens 0 .. 5 name positions 0 .. 5: every pointer lands
    assert b.scored.all()
    assert all(int(b.targets[r, i]) == int(b.tokens[r, int(b.tokens[r, i])]) for r in range(5) for i in range(7))
    b = batch("count")
    row = b.tokens[0]
    assert all(int(b.targets[0, i]) == int((row == row[i]).sum()) for i in range(7))
    b = batch("last_copy", length=12)  # the largest j < i holding token i; none: not scored
    for r in range(5):
        for i in range(12):
            earlier = [j for j in range(i) if b.tokens[r, j] == b.tokens[r, i]]
            assert bool(b.scored[r, i]) == bool(earlier)
            if earlier:
                assert int(b.targets[r, i]) == earlier[-1]


def test_count_is_the_one_task_that_does_not_need_position():
    assert [t for t in TASKS if not NEEDS_POSITION[t]] == ["count"]
    b = batch("count")
    perm = torch.tensor([3, 1, 6, 0, 2, 5, 4])
    # permuting the tokens permutes the targets: the task is permutation-equivariant
    again = (b.tokens[:, perm, None] == b.tokens[:, None, perm]).sum(-1)
    assert torch.equal(again, b.targets[:, perm])


@pytest.mark.parametrize(
    "kwargs, error, word",
    [
        ({"task": "sort"}, ValueError, "task"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"length": 0}, ValueError, "length"),
        ({"length": 2.5}, TypeError, "length"),
        ({"vocab_size": 1}, ValueError, "vocab_size"),
        ({"generator": 3}, TypeError, "generator"),
        ({"task": "copy_offset", "offset": 9}, ValueError, "offset"),
        ({"batch_size": 10**6, "length": 10**3}, ValueError, "batch"),
    ],
)
def test_bad_input_is_named(kwargs, error, word):
    args = {"task": "reverse", "batch_size": 2, "length": 5, "vocab_size": 4, "generator": torch.Generator()}
    args.update(kwargs)
    task = args.pop("task")
    with pytest.raises(error, match=word):
        make_batch(task, **args)


def test_bos_marks_the_first_token_only():
    b = batch("own_index", bos=True)
    assert (b.tokens[:, 0] == 0).all() and (b.tokens[:, 1:] > 0).all()
    with pytest.raises(TypeError, match="bos"):
        batch("own_index", bos="yes")


def test_pointer_past_the_end_is_not_scored():
    b = batch("pointer", length=3)  # tokens 0 .. 5, positions 0 .. 2
    assert torch.equal(b.scored, b.tokens < 3) and (~b.scored).any() and b.scored.any()
    rows, cols = torch.nonzero(b.scored, as_tuple=True)
    assert torch.equal(b.targets[rows, cols], b.tokens[rows, b.tokens[rows, cols]])


def test_scored_accuracy_counts_only_the_scored_positions():
    batch = make_batch("previous_token", batch_size=3, length=5, vocab_size=4,
                       generator=torch.Generator().manual_seed(0))
    perfect = torch.nn.functional.one_hot(batch.targets, 4).double()
    assert scored_accuracy(perfect, batch) == 1.0  # position 0's target is not a real answer, yet counts nowhere
    wrong_at_0 = perfect.clone()
    wrong_at_0[:, 0] = torch.nn.functional.one_hot((batch.targets[:, 0] + 1) % 4, 4).double()
    assert scored_accuracy(wrong_at_0, batch) == 1.0
    wrong_at_1 = perfect.clone()
    wrong_at_1[:, 1] = torch.nn.functional.one_hot((batch.targets[:, 1] + 1) % 4, 4).double()
    assert scored_accuracy(wrong_at_1, batch) == pytest.approx(3 / 4)  # 1 of the 4 scored positions wrong


def test_scored_accuracy_names_its_bad_arguments():
    batch = make_batch("reverse", batch_size=2, length=3, vocab_size=4, generator=torch.Generator().manual_seed(0))
    with pytest.raises(TypeError, match="batch"):
        scored_accuracy(torch.zeros(2, 3, 4), (batch.tokens, batch.targets))
    with pytest.raises(ValueError, match="logits"):
        scored_accuracy(torch.zeros(2, 4, 4), batch)
