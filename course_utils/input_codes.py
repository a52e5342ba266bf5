"""The input position codes as torch modules (lessons 02, 03, 07): what TinyTransformer adds to
(or concatenates with) the token vectors once, at the input.

Each is built as ``Code(width, max_len)`` and called as ``code(n, start=0)`` → the codes of
positions start .. start + n − 1, [n, width]. ``POSITION_CODES`` maps ModelConfig's position
names to them; the codes that act inside attention (RoPE, ALiBi, the relative bias) live in
course_utils/rope.py and course_utils/biases.py.
"""

from __future__ import annotations

import torch
from torch import nn

from .encodings import sinusoidal_encoding
from .naive import integer_encoding, normalised_encoding


class SinusoidalPosition(nn.Module):
    """The fixed sinusoidal code as a (non-persistent) buffer; other positions are computed on demand.

    forward(n, start=0) → the codes of positions start .. start + n - 1, [n, width].
    """

    def __init__(self, width: int, max_len: int):
        super().__init__()
        self.width = width
        self.register_buffer("table", sinusoidal_encoding(max_len, width), persistent=False)

    def forward(self, n: int, start: int = 0) -> torch.Tensor:
        if start + n <= self.table.shape[0]:
            return self.table[start:start + n]
        positions = torch.arange(start, start + n, dtype=torch.float64)
        return sinusoidal_encoding(positions, self.width, dtype=self.table.dtype).to(self.table.device)


class LearnedPosition(nn.Module):
    """A learned table, one row per position (BERT's nn.Embedding(512, 768)); rows past max_len do not exist."""

    def __init__(self, width: int, max_len: int):
        super().__init__()
        self.table = nn.Embedding(max_len, width)
        nn.init.normal_(self.table.weight, std=0.02)

    def forward(self, n: int, start: int = 0) -> torch.Tensor:
        if start + n > self.table.num_embeddings:
            raise ValueError(f"a learned code has {self.table.num_embeddings} rows (max_len); got a sequence of {n} "
                             f"tokens starting at position {start} (start)")
        return self.table.weight[start:start + n]


class ScalarPosition(nn.Module):
    """Lesson 02's one-number codes, fed in along a learned direction w: row t is c(t)·w.

    c(t) = t ("integer") or t/(n-1) ("normalised", n the sequence length). The direction matters:
    lesson 02's t·(1, ..., 1) would be invisible here, because every LayerNorm subtracts each
    vector's mean and so removes anything along (1, ..., 1).
    """

    def __init__(self, width: int, max_len: int, *, normalised: bool):
        super().__init__()
        self.normalised = normalised
        self.direction = nn.Parameter(torch.randn(width) / width**0.5)

    def forward(self, n: int, start: int = 0) -> torch.Tensor:
        if self.normalised:
            if start:
                raise ValueError("t/(n-1) is defined for positions 0 .. n-1 only: the normalised code "
                                 f"takes start = 0, got {start}")
            scalar = torch.zeros(1, 1) if n == 1 else normalised_encoding(n, 1, length=n)
        else:
            scalar = integer_encoding(torch.arange(start, start + n, dtype=torch.float64), 1)
        return scalar * self.direction


class IntegerPosition(ScalarPosition):
    """The integer position t times a learned direction: unbounded."""

    def __init__(self, width: int, max_len: int):
        super().__init__(width, max_len, normalised=False)


class NormalisedPosition(ScalarPosition):
    """t/(n-1) times a learned direction: in [0, 1], but one step is 1/(n-1) at every length n."""

    def __init__(self, width: int, max_len: int):
        super().__init__(width, max_len, normalised=True)


POSITION_CODES = {
    "sinusoidal": SinusoidalPosition,
    "learned": LearnedPosition,
    "integer": IntegerPosition,
    "normalised": NormalisedPosition,
}
