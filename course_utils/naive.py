"""The naive position codes that lesson 02 tries and rejects.

- ``integer_encoding``: the position t itself, in every column — unbounded.
- ``normalised_encoding``: t / (length - 1) in every column — in [0, 1], but one step means
  something different at every sentence length.
- ``one_hot_encoding``: a column per position — width grows with length, nothing shared.
- ``binary_encoding``: the bits of t — bounded and shared, but it jumps.

Same conventions as :func:`course_utils.encodings.sinusoidal_encoding`: ``positions`` is an
int n (positions 0 .. n-1) or a 1-D sequence/tensor of positions; each code is [n, width],
computed in float64 and returned as ``dtype`` (float32 by default).
"""

from __future__ import annotations

import torch

from . import _validate
from .encodings import _positions

# float64 holds every integer below 2**53 exactly; keep the bits of t exact.
MAX_BITS = 52


def integer_encoding(positions, d_model: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The position itself: row t is (t, t, ..., t), d_model times.

    The same number in every column, so the code can be added to a d_model-wide token
    embedding; its norm is |t|·√d_model and grows without bound. Any real positions are
    allowed. Returns [n, d_model].
    """
    d_model = _validate.integer(d_model, "d_model", minimum=1)
    dtype = _validate.float_dtype(dtype)
    t = _positions(positions)
    _validate.size_budget(max(t.numel(), 1) * d_model, "the position code [len(positions), d_model]")
    return t[:, None].repeat(1, d_model).to(dtype)


def normalised_encoding(positions, d_model: int, *, length: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The position scaled to [0, 1] by the sentence length: t / (length - 1) in every column.

    The first token (t = 0) gets 0 and the last (t = length - 1) gets 1, so one step costs
    1 / (length - 1): a different amount in every sentence. length is the number of tokens
    (at least 2); positions must lie in [0, length - 1]. Returns [n, d_model].
    """
    d_model = _validate.integer(d_model, "d_model", minimum=1)
    length = _validate.integer(length, "length", minimum=2)
    dtype = _validate.float_dtype(dtype)
    t = _positions(positions)
    if t.numel() and (t.min() < 0 or t.max() > length - 1):
        bad = t[(t < 0) | (t > length - 1)][0].item()
        raise ValueError(
            f"positions must lie in 0 .. length - 1 = {length - 1} (a sentence of {length} tokens), got {bad:g}"
        )
    _validate.size_budget(max(t.numel(), 1) * d_model, "the position code [len(positions), d_model]")
    return (t / (length - 1))[:, None].repeat(1, d_model).to(dtype)


def _whole_positions(positions, limit: int, why: str) -> torch.Tensor:
    """Positions as int64 [n]: whole numbers in 0 .. limit - 1, else a ValueError saying ``why``."""
    t = _positions(positions)
    if t.numel() and not torch.equal(t, t.round()):
        bad = t[t != t.round()][0].item()
        raise ValueError(f"positions must be whole numbers, got {bad:g}")
    if t.numel() and (t.min() < 0 or t.max() >= limit):
        bad = int(t[(t < 0) | (t >= limit)][0].item())
        raise ValueError(f"positions must lie in 0 .. {limit - 1}: {why.format(bad=bad)}")
    return t.long()


def one_hot_encoding(positions, max_len: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """One column per possible position: row t is 1 in column t and 0 elsewhere.

    max_len is the number of positions the code can name (its width); positions must be
    whole numbers in 0 .. max_len - 1 — a longer sentence has no column for its extra
    tokens. Returns [n, max_len].
    """
    max_len = _validate.integer(max_len, "max_len", minimum=1)
    _validate.size_budget(max_len, "max_len")  # one column per position, even for a single row
    dtype = _validate.float_dtype(dtype)
    t = _whole_positions(positions, max_len, f"position {{bad}} has no column in a one-hot code with max_len={max_len}")
    _validate.size_budget(max(t.numel(), 1) * max_len, "the position code [len(positions), max_len]")
    code = torch.zeros(t.numel(), max_len, dtype=dtype)
    code[torch.arange(t.numel()), t] = 1.0
    return code


def binary_encoding(positions, n_bits: int, *, signed: bool = False, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The binary counter: column b holds bit b of t, (t // 2**b) % 2, least significant first.

    Bit b flips every 2**b steps. signed=True maps the bits 0/1 to -1/+1 (2·bit - 1), centred
    on 0 like the sinusoidal code. positions must be whole numbers in 0 .. 2**n_bits - 1, and
    n_bits is at most 52. Returns [n, n_bits].
    """
    n_bits = _validate.integer(n_bits, "n_bits", minimum=1)
    if n_bits > MAX_BITS:
        raise ValueError(f"n_bits must be at most {MAX_BITS} (float64 holds whole numbers exactly below 2**53), got {n_bits}")
    if not isinstance(signed, bool):
        raise TypeError(f"signed must be True or False, got {type(signed).__name__} {signed!r}")
    dtype = _validate.float_dtype(dtype)
    t = _whole_positions(positions, 2**n_bits, f"position {{bad}} does not fit in n_bits={n_bits} bits")
    _validate.size_budget(t.numel() * n_bits, "the position code [len(positions), n_bits]")
    bits = (t[:, None] >> torch.arange(n_bits)[None, :]) & 1
    code = bits.to(torch.float64)
    if signed:
        code = 2.0 * code - 1.0
    return code.to(dtype)
