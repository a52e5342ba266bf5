"""Lesson 15's base bound: B_m = Σ cos(m ω_i) (Men et al. 2024), where it turns negative, the
smallest base on a grid, and the sampled gap it predicts."""

import math

import pytest
import torch

from course_utils import (first_negative, frequencies, kept_lead, rope_frequencies, sampled_similarity_gap,
                          similar_token_score, smallest_bases, sinusoidal_encoding, wrong_way_share)


def test_b_is_the_sinusoid_dot_product():
    # Q13's PE(t)·PE(t+k) = Σ cos(ω_i k): the same sum
    pe = sinusoidal_encoding(torch.arange(40, dtype=torch.float64), 16, dtype=torch.float64)
    offsets = torch.arange(0, 30, dtype=torch.float64)
    expected = torch.stack([pe[5] @ pe[5 + int(k)] for k in offsets])
    torch.testing.assert_close(similar_token_score(offsets, frequencies(16)), expected)
    assert similar_token_score(torch.tensor([0.0]), frequencies(128)).item() == 64


def test_first_negative_is_the_first_sign_change():
    w = rope_frequencies(128, base=10_000.0)
    m = first_negative(w, max_length=5000)
    scores = similar_token_score(torch.arange(m + 1, dtype=torch.float64), w)
    assert (scores[:-1] >= 0).all() and scores[-1] < 0
    assert first_negative(w, max_length=m - 1) is None
    assert first_negative(torch.tensor([1e-9], dtype=torch.float64), max_length=1000) is None


def test_smallest_bases_agree_with_first_negative():
    grid = torch.logspace(3, 7, 17, dtype=torch.float64)
    lengths = [512, 1024, 4096]
    for length, base in zip(lengths, smallest_bases(lengths, 64, bases=grid)):
        reach = first_negative(rope_frequencies(64, base=base), max_length=length)
        assert reach is None
        smaller = [b for b in grid.tolist() if b < base]
        for b in smaller:  # every smaller base of the grid fails
            assert first_negative(rope_frequencies(64, base=b), max_length=length) is not None
    assert math.isnan(smallest_bases([10**6], 8, bases=torch.tensor([2.0, 3.0], dtype=torch.float64))[0])


def test_smallest_bases_on_a_fine_grid_match_a_brute_force_search():
    # B_m is not monotone in the base, so the strided pre-check must never skip a passing base
    grid = torch.logspace(3.5, 5, 193, dtype=torch.float64)  # 128 per decade
    lengths = [8192, 2048, 4096, 2048]  # unsorted, repeated: answered in the order given
    reach = [first_negative(rope_frequencies(128, base=b), max_length=8192) for b in grid.tolist()]
    expected = [next(b for b, r in zip(grid.tolist(), reach) if r is None or r > n) for n in lengths]
    assert smallest_bases(lengths, 128, bases=grid) == expected
    # not monotone: a passing base followed by a failing one on the same grid
    passes = [r is None for r in reach]
    assert any(a and not b for a, b in zip(passes, passes[1:]))


def test_sampled_gap_has_expectation_two_b():
    offsets = torch.tensor([0.0, 3.0, 40.0, 900.0])
    w = rope_frequencies(32)
    gap = sampled_similarity_gap(offsets, w, n_samples=20_000, noise=0.3, seed=1)
    torch.testing.assert_close(gap, 2 * similar_token_score(offsets, w), atol=0.6, rtol=0)
    assert torch.equal(gap, sampled_similarity_gap(offsets, w, n_samples=20_000, noise=0.3, seed=1))


@pytest.mark.parametrize("call, error, named", [
    (lambda: similar_token_score([1.0], frequencies(8)), TypeError, "offsets"),
    (lambda: similar_token_score(torch.tensor([1.0]), torch.tensor([-1.0])), ValueError, "frequencies"),
    (lambda: first_negative(frequencies(8), max_length=-1), ValueError, "max_length"),
    (lambda: smallest_bases(1024, 8, bases=torch.tensor([10.0])), TypeError, "lengths"),
    (lambda: smallest_bases([1024], 7, bases=torch.tensor([10.0])), ValueError, "d"),
    (lambda: smallest_bases([1024], 8, bases=torch.tensor([0.5])), ValueError, "bases"),
    (lambda: sampled_similarity_gap(torch.tensor([1.0]), frequencies(8), noise=-1), ValueError, "noise"),
])
def test_bad_arguments_are_refused_by_name(call, error, named):
    with pytest.raises(error, match=named):
        call()


def test_kept_lead_and_wrong_way_share_summarise_a_gap_curve():
    gap = torch.tensor([[4.0, 2.0, -1.0, 1.0, 0.0], [2.0, 2.0, 2.0, 2.0, 2.0]])
    torch.testing.assert_close(kept_lead(gap, far_from=2), torch.tensor([0.0, 1.0], dtype=torch.float64))
    torch.testing.assert_close(wrong_way_share(gap), torch.tensor([0.25, 0.0], dtype=torch.float64))
    b_m = similar_token_score(torch.arange(128.0), rope_frequencies(32, base=10.0))  # B_0 = 16
    assert abs(kept_lead(b_m, far_from=32).item()) < 0.05 and wrong_way_share(b_m).item() > 0.5


def test_kept_lead_and_wrong_way_share_refuse_bad_curves():
    with pytest.raises(ValueError, match="gap"):
        kept_lead(torch.tensor([0.0, 1.0, 2.0]), far_from=1)  # no lead at m = 0
    with pytest.raises(ValueError, match="gap"):
        wrong_way_share(torch.tensor([1.0]))
    with pytest.raises(ValueError, match="far_from"):
        kept_lead(torch.tensor([1.0, 0.5]), far_from=2)
    with pytest.raises(TypeError, match="gap"):
        wrong_way_share([1.0, 0.5])
