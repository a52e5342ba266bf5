"""float64 products with the same bytes on every CPU, whatever BLAS computes them.

MKL's double-precision kernels sum a product's terms in an order that differs between
Intel and AMD CPUs at every shape tried, so their last bits differ, and an optimiser
hundreds of steps long (the probes' L-BFGS) carries such bits into its answer. Here a
product is cut into pieces whose sums are exact in any order, and only the pieces are
added, in one fixed order, by torch's own elementwise code.

A sum of k products a_i·b_i is exact, in any order, with or without fused
multiply-adds, when every a_i is an integer below 2^p times one power of two, every b_i
an integer below 2^q times another, and k·2^(p+q) <= 2^53: no partial sum then needs
rounding. So the operands are cut into slices of few bits each and the slices are
multiplied in sums of at most 2^_CHUNK_BITS terms, each exact; the partial products are
then added in one fixed order (the error-free splitting of Ozaki, Ogita, Oishi & Rump,
"Error-free transformations of matrix multiplication by using fast routines of matrix
multiplication and its applications", Numer. Algorithms 59, 2012).
"""

from __future__ import annotations

import torch

from . import _validate

_MANTISSA = 53
_CHUNK_BITS = 6  # exact sums of 64 terms; the chunks' sums are added by torch.sum
_SLICE_BITS = (_MANTISSA - _CHUNK_BITS - 1) // 2  # per operand when both are cut (23)
_SLICES = 3  # 3 × 23 bits of each operand: past float64's 53


def _power_of_two(exponent: torch.Tensor) -> torch.Tensor:
    """2.0 ** exponent in float64, exactly (its bits written directly), for integer
    exponents of normal numbers (clamped to -1022 .. 1023)."""
    biased = exponent.to(torch.int64).clamp(-1022, 1023) + 1023
    return (biased << 52).view(torch.float64)


def grid_split(m: torch.Tensor, bits: int, parts: int, dim: int,
               stack: int = 0, top: int | None = None,
               out: torch.Tensor | None = None) -> torch.Tensor:
    """float64 ``m`` as ``parts`` slices that add up to it (up to the last slice's
    rounding, below 2^-(bits·parts) of each line's largest entry), stacked on a new axis
    at ``stack`` (0: [parts, *m.shape]; written into ``out`` if given). In a slice, the
    entries along ``dim`` are integers of size at most 2^bits times a power of two they
    share: 2^(e - bits), where 2^e exceeds the line's largest entry, or 2^(top - bits)
    for all lines when every entry is known to be below 2^top."""
    if top is None:
        top = torch.frexp(m.abs().amax(dim=dim, keepdim=True))[1]  # largest < 2^top
        # x + 1.5·2^52·unit - 1.5·2^52·unit: x rounded to the nearest multiple of unit
        shift = _power_of_two(top - bits + 52) * 1.5
    else:
        shift = 1.5 * 2.0 ** (top - bits + 52)
    if out is None:
        shape = list(m.shape)
        out = torch.empty(shape[:stack] + [parts] + shape[stack:], dtype=m.dtype)
    rest = m
    for i in range(parts):
        part = out.select(stack, i)
        torch.sub(rest + shift, shift, out=part)
        if i + 1 < parts:
            rest = rest - part
            shift = shift * 2.0 ** -bits
    return out


def on_grid(x: torch.Tensor, bits: int) -> torch.Tensor:
    """float64 ``x`` rounded to the multiples of 2^(e - bits), where 2^e exceeds its
    largest entry: one power of two shared by all entries, so ``exact_matmul`` can use
    it whole (``a_bits=bits``)."""
    unit = _power_of_two(torch.frexp(x.abs().max())[1] - bits)
    return torch.round(x / unit) * unit


def _chunks(a: torch.Tensor) -> torch.Tensor:
    """a [m, k] cut along k into chunks of 2^_CHUNK_BITS terms, zero-padded:
    [chunks, m, 2^_CHUNK_BITS] (a itself when k fits in one chunk)."""
    m, k = a.shape
    chunk = 1 << _CHUNK_BITS
    if k <= chunk:
        return a
    pad = -k % chunk
    if pad:
        a = torch.nn.functional.pad(a, (0, pad))
    chunks = a.shape[1] // chunk
    if a.stride(0) == 1:  # a transposed matrix: chunks of its rows, read as transposed
        return a.T.reshape(chunks, chunk, m).transpose(1, 2)
    return a.reshape(m, chunks, chunk).transpose(0, 1)


def _sum_of_chunks(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for a from ``_chunks`` and b [k, n] zero-padded to a's chunks: exact sums
    of 2^_CHUNK_BITS terms (one batched product), added chunk after chunk (torch.sum
    over the chunk axis)."""
    if a.ndim == 2:
        return a @ b
    return torch.bmm(a, b.reshape(a.shape[0], a.shape[2], -1)).sum(dim=0)


def _add_blocks(blocks: list) -> torch.Tensor:
    """The blocks' sum, the smallest slices (the last) first."""
    if len(blocks) == 1:
        return blocks[0]
    total = blocks[-1] + blocks[-2]
    for block in reversed(blocks[:-2]):
        total += block
    return total


class ExactProduct:
    """b ↦ a @ b with ``exact_matmul``'s bytes, for a [m, k] on a grid of ``a_bits``
    bits (``on_grid``), cut into chunks once: for an optimiser's many products with one
    matrix. ``product(b, bits=53, b_top=None)``: b [k, n] → [m, n], as exact_matmul."""

    def __init__(self, a: torch.Tensor, a_bits: int) -> None:
        if a.dtype != torch.float64 or a.ndim != 2:
            raise TypeError(f"a must be a float64 matrix, got {a.dtype} with shape "
                            f"{tuple(a.shape)}")
        a_bits = _validate.integer(a_bits, "a_bits", minimum=1)
        self.b_bits = _MANTISSA - a_bits - _CHUNK_BITS - 1
        if self.b_bits < 8:
            raise ValueError(f"a_bits must leave b 8 bits a slice, got {a_bits}")
        self.k, self.chunks = a.shape[1], _chunks(a)
        self.padded = self.k if self.chunks.ndim == 2 else self.chunks.shape[0] << (
            _CHUNK_BITS)
        self._slices = torch.empty(0)  # b's slices, padded with zero rows, kept

    def __call__(self, b: torch.Tensor, *, bits: int = _MANTISSA,
                 b_top: int | None = None) -> torch.Tensor:
        if b.dtype != torch.float64 or b.ndim != 2 or b.shape[0] != self.k:
            raise ValueError(f"b must be a float64 matrix with {self.k} rows, got "
                             f"{b.dtype} with shape {tuple(b.shape)}")
        bits = _validate.integer(bits, "bits", minimum=1, maximum=_MANTISSA)
        if b_top is not None:
            b_top = _validate.integer(b_top, "b_top", minimum=-1000, maximum=1000)
        n, parts = b.shape[1], -(-bits // self.b_bits)
        if self._slices.shape != (self.padded, parts, n):
            self._slices = torch.zeros(self.padded, parts, n, dtype=torch.float64)
        grid_split(b, self.b_bits, parts, dim=0, stack=1, top=b_top,
                   out=self._slices[:self.k])
        full = _sum_of_chunks(self.chunks, self._slices.view(self.padded, -1))
        return _add_blocks([full[:, j * n:(j + 1) * n] for j in range(parts)])


def exact_matmul(a: torch.Tensor, b: torch.Tensor, *, a_bits: int | None = None,
                 bits: int = _MANTISSA, b_top: int | None = None) -> torch.Tensor:
    """a [m, k] @ b [k, n] in float64 with the same bytes whatever BLAS computes it.

    Each slice product is exact; only the fixed-order additions of slices and chunks
    round, so the result is within a few units in the last place of the true product,
    for lines of similar size. ``a_bits``: a is already on a grid of ``a_bits`` bits
    shared by all its entries (``on_grid``), so only b is cut, into slices of
    53 - a_bits - 7 bits, enough of them for ``bits`` bits of each column of b. Else
    both are cut, into 3 slices of 23 bits. ``b_top``: every entry of b is below
    2^b_top in size (softmax probabilities: 1), so b's slices share one grid and its
    largest entries need not be looked up.
    """
    if a.dtype != torch.float64 or b.dtype != torch.float64:
        raise TypeError(f"a and b must be float64, got {a.dtype} and {b.dtype}")
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"a and b must be matrices [m, k] and [k, n], got "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    if a_bits is not None:
        return ExactProduct(a, a_bits)(b, bits=bits, b_top=b_top)
    m, k = a.shape
    n = b.shape[1]
    rows = _chunks(grid_split(a, _SLICE_BITS, _SLICES, dim=1).reshape(-1, k))
    cols = grid_split(b, _SLICE_BITS, _SLICES, dim=0, stack=1).reshape(k, -1)
    if rows.ndim == 3:  # zero rows up to the chunks' length
        padded = rows.shape[0] << _CHUNK_BITS
        cols = torch.nn.functional.pad(cols, (0, 0, 0, padded - k))
    full = _sum_of_chunks(rows, cols)  # [3·m, 3·n]: slice i of a times slice j of b
    return _add_blocks([full[i * m:(i + 1) * m, j * n:(j + 1) * n]
                        for i in range(_SLICES) for j in range(_SLICES)
                        if i + j < _SLICES])
