"""course_utils/position_free.py: the best previous-token guess without position (lesson 10)."""

import pytest
import torch

from course_utils import most_frequent_earlier, position_free_accuracy


def test_small_cases_by_hand():
    # t = 1: the one earlier token is certain; t = 2 (vocab 8): two earlier tokens, the same with p = 1/8
    assert position_free_accuracy(2, 8) == pytest.approx(1.0)
    assert position_free_accuracy(3, 8) == pytest.approx((1 + (1 + 1 / 8) / 2) / 2)
    assert position_free_accuracy(3, 2) == pytest.approx((1 + 0.75) / 2)
    assert position_free_accuracy(3, 8, from_position=2) == pytest.approx((1 + 1 / 8) / 2)
    assert position_free_accuracy(5, 1) == pytest.approx(1.0)  # one token: always right


def test_matches_the_most_frequent_earlier_guess_on_random_sequences():
    tokens = torch.randint(0, 8, (20_000, 16), generator=torch.Generator().manual_seed(0))
    most = most_frequent_earlier(tokens, 8)
    previous = torch.cat([tokens[:, :1], tokens[:, :-1]], dim=1)
    # a tie is broken at random: the guess is right with probability 1 / (number of tied tokens)
    right = most.gather(-1, previous[..., None]).squeeze(-1).float() / most.sum(-1).clamp(min=1)
    assert right[:, 1:].mean().item() == pytest.approx(position_free_accuracy(16, 8), abs=0.005)
    assert position_free_accuracy(16, 8) == pytest.approx(0.3905, abs=1e-4)


def test_falls_towards_chance_with_length():
    values = [position_free_accuracy(n, 8) for n in (4, 16, 64)]
    assert values[0] > values[1] > values[2] > 1 / 8
    assert position_free_accuracy(64, 8, from_position=16) < position_free_accuracy(64, 8)


def test_most_frequent_earlier_counts_only_earlier_tokens_and_keeps_ties():
    tokens = torch.tensor([[2, 2, 1, 1, 1, 0]])
    most = most_frequent_earlier(tokens, 3)
    assert most.shape == (1, 6, 3)
    assert not most[0, 0].any()  # nothing before t = 0
    assert most[0, 1].tolist() == [False, False, True]
    assert most[0, 4].tolist() == [False, True, True]  # 2 twice, 1 twice: a tie
    assert most[0, 5].tolist() == [False, True, False]


def test_refuses_bad_arguments_by_name():
    with pytest.raises(ValueError, match="length"):
        position_free_accuracy(1, 8)
    with pytest.raises(ValueError, match="from_position"):
        position_free_accuracy(8, 8, from_position=8)
    with pytest.raises(TypeError, match="vocab_size"):
        position_free_accuracy(8, 2.5)
    with pytest.raises(ValueError, match="tokens"):
        most_frequent_earlier(torch.tensor([[0, 5]]), 3)
    with pytest.raises(ValueError, match="tokens"):
        most_frequent_earlier(torch.zeros(2, 3), 3)
    with pytest.raises(TypeError, match="tokens"):
        most_frequent_earlier([[0, 1]], 3)
