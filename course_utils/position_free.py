"""What a model without position can know on previous-token (lesson 10).

A one-layer causal model without a position code sees, at query t, its own token and an average
over the tokens 0 .. t: it knows *which* tokens came before and how often, never in which order.
For tokens drawn independently and uniformly, the token at t − 1 is then equally likely to be
any one of the t earlier tokens, so the best position-free guess is the most frequent earlier
token, right with probability (its count) / t.

- ``most_frequent_earlier`` marks, for every position, the tokens that occur most often before it.
- ``position_free_accuracy`` is the exact expected accuracy of that guess on random sequences:
  the ceiling of any predictor that sees only the multiset of earlier tokens.
"""

from __future__ import annotations

from math import factorial

import torch

from . import _validate


def most_frequent_earlier(tokens: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """For each position t, which tokens occur most often among tokens[..., :t].

    tokens [batch, n] (integers in 0 .. vocab_size-1). Returns bool [batch, n, vocab_size]:
    entry (b, t, v) is True when token v is among the most frequent in tokens[b, :t] (ties all
    True); at t = 0 there is no earlier token and every entry is False.
    """
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"tokens must be a torch.Tensor [batch, n] of token ids, got {type(tokens).__name__}")
    if tokens.ndim != 2 or tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
        raise ValueError(f"tokens must be an integer tensor [batch, n], got {tokens.dtype} of shape "
                         f"{tuple(tokens.shape)}")
    vocab_size = _validate.integer(vocab_size, "vocab_size", minimum=1)
    _validate.size_budget(tokens.numel() * vocab_size, "the counts [batch, n, vocab_size]")
    if tokens.numel() and (tokens.min() < 0 or tokens.max() >= vocab_size):
        raise ValueError(f"tokens must lie in 0 .. vocab_size-1 = {vocab_size - 1}, got values "
                         f"{tokens.min().item()} .. {tokens.max().item()}")
    one_hot = torch.nn.functional.one_hot(tokens.long(), vocab_size)  # [batch, n, vocab]
    counts = one_hot.cumsum(dim=1) - one_hot  # counts before t, not at t
    most = counts.max(dim=-1, keepdim=True).values
    return (counts == most) & (most > 0)


def _at_most(length: int, vocab_size: int) -> torch.Tensor:
    """[length, length] float64: entry (m, t) = P(no token occurs more than m times among t
    uniform draws from vocab_size tokens) = t!/V^t · [x^t] (Σ_{j ≤ m} x^j/j!)^V."""
    j = torch.arange(length)
    inverse_factorial = torch.tensor([1 / factorial(i) for i in range(length)], dtype=torch.float64)
    factor = torch.where(j[None, :] <= j[:, None], inverse_factorial[None, :], 0.0)  # [m, j]
    power = factor.clone()
    for _ in range(vocab_size - 1):  # power ← power · factor, polynomials truncated at degree length-1
        product = torch.zeros_like(power)
        for i in range(length):
            product[:, i:] += power[:, i : i + 1] * factor[:, : length - i]
        power = product
    scale = torch.tensor([factorial(t) / vocab_size**t for t in range(length)], dtype=torch.float64)
    return power * scale[None, :]


def position_free_accuracy(length: int, vocab_size: int, *, from_position: int = 0) -> float:
    """The best accuracy on previous-token of a predictor that sees only which tokens came before.

    Tokens drawn uniformly from vocab_size, sequences of ``length``. At position t ≥ 1 the best
    guess is the most frequent token in positions 0 .. t−1, right with probability E[max count]/t
    (exact, from the multinomial counts, in float64). Returns the mean over the scored positions
    t = max(1, from_position) .. length−1, as ``evaluate(..., from_position=...)`` averages.
    length ≤ 170 (t! must fit a float64), vocab_size ≤ 1000.
    """
    length = _validate.integer(length, "length", minimum=2, maximum=170)  # t! fits a float64
    vocab_size = _validate.integer(vocab_size, "vocab_size", minimum=1, maximum=1000)
    from_position = _validate.integer(from_position, "from_position", minimum=0)
    if from_position >= length:
        raise ValueError(f"from_position must be smaller than length, got {from_position} >= {length}")
    _validate.size_budget(length**3 * vocab_size, "the exact count sums [length³ · vocab_size]")
    at_most = _at_most(length, vocab_size)  # [m, t]
    # E[max count at t] = Σ_{m=1..t} P(max ≥ m) = Σ_{m=0..t-1} (1 − P(max ≤ m))
    above = torch.triu(1 - at_most, diagonal=1)  # keep m < t
    t = torch.arange(max(1, from_position), length)
    return (above[:, t].sum(dim=0) / t).mean().item()
