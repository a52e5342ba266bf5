"""Adding or concatenating a position code: what each costs, and why the sum still keeps both parts.

- ``block_parameters``: the parameters of one TinyTransformer block at a given residual width,
  so "concatenate and widen the stream" can be priced.
- ``cosine_spread``: how far from orthogonal two random directions typically are (about 1/√d).
- ``effective_rank`` and ``principal_directions``: how few directions a position code really uses.
- ``principal_angles`` and ``share_in_subspace``: how much two sets of vectors overlap.
- ``nearest_token_accuracy``: per position, how often token + code is nearest its own token.
- ``token_recovery``: can the token (and the position) still be read from token + code? (By a
  logistic probe, the course's probe; least squares on request.)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _validate
from .probes import linear_probe, logistic_probe


def block_parameters(d_model: int, d_ff: int | None = None) -> int:
    """Trainable numbers in one pre-LN block of width ``d_model`` (the TinyTransformer's Block).

    Two LayerNorms (weight + bias: 2·d each), the joint Q/K/V projection (3d² + 3d), the output
    projection (d² + d) and the MLP d → d_ff → d (2·d·d_ff + d_ff + d). d_ff defaults to 4·d_model.
    Total 4d² + 2·d·d_ff + 9d + d_ff, which is 12d² + 13d when d_ff = 4d.
    """
    d = _validate.integer(d_model, "d_model", minimum=1)
    d_ff = 4 * d if d_ff is None else _validate.integer(d_ff, "d_ff", minimum=1)
    return 4 * d * d + 2 * d * d_ff + 9 * d + d_ff


def cosine_spread(d: int, n_pairs: int = 2000, *, seed: int = 0) -> float:
    """Standard deviation of the cosine between two independent random vectors in R^d.

    Draws ``n_pairs`` pairs of N(0, I_d) vectors (float64, a private generator seeded with
    ``seed``). The exact value is 1/√d; for large d the cosine is close to 0: nearly orthogonal.
    """
    d = _validate.integer(d, "d", minimum=1)
    n_pairs = _validate.integer(n_pairs, "n_pairs", minimum=2)
    seed = _validate.seed(seed)
    _validate.size_budget(2 * n_pairs * d, "the random vectors [2·n_pairs, d]")
    generator = torch.Generator().manual_seed(seed)
    a = torch.randn(n_pairs, d, generator=generator, dtype=torch.float64)
    b = torch.randn(n_pairs, d, generator=generator, dtype=torch.float64)
    cosines = (a * b).sum(dim=1) / (a.norm(dim=1) * b.norm(dim=1))
    return cosines.std().item()


def _energy(energy) -> float:
    energy = _validate.real(energy, "energy", positive=True)
    if energy > 1:
        raise ValueError(f"energy must be a fraction in (0, 1], got {energy}")
    return energy


def _rank_for_energy(singular_values: torch.Tensor, energy: float) -> int:
    squares = singular_values.double() ** 2
    total = squares.sum()
    if total == 0:
        raise ValueError("matrix is all zeros: it has no directions")
    cumulative = squares.cumsum(0) / total
    # a tiny tolerance so energy = 1 is reached despite rounding in the cumulative sum
    return int((cumulative < energy - 1e-12).sum().item()) + 1


def effective_rank(matrix, energy: float = 0.99) -> int:
    """How many directions hold ``energy`` of a matrix's squared entries.

    matrix: [n, d], e.g. a position code with one row per position. With singular values
    s_1 ≥ s_2 ≥ ..., returns the smallest r with s_1² + ... + s_r² ≥ energy · Σ s_i²
    (Σ s_i² is the sum of all squared entries). Rows are not centred.
    """
    matrix = _validate.matrix(matrix, "matrix")
    energy = _energy(energy)
    return _rank_for_energy(torch.linalg.svdvals(matrix.detach().double()), energy)


def principal_directions(matrix, energy: float = 0.99) -> torch.Tensor:
    """The orthonormal directions (rows) that hold ``energy`` of a matrix's squared entries.

    matrix: [n, d]. Returns the top r right singular vectors as rows, [r, d] float64, where
    r = effective_rank(matrix, energy).
    """
    matrix = _validate.matrix(matrix, "matrix")
    energy = _energy(energy)
    _, s, vh = torch.linalg.svd(matrix.detach().double(), full_matrices=False)
    return vh[: _rank_for_energy(s, energy)]


def _row_basis(rows: torch.Tensor) -> torch.Tensor:
    """Orthonormal rows spanning the same space as ``rows`` (numerically zero directions dropped)."""
    _, s, vh = torch.linalg.svd(rows, full_matrices=False)
    return vh[s > s[0] * max(rows.shape) * torch.finfo(torch.float64).eps]


def _two_row_sets(a, b, name_a: str, name_b: str) -> tuple[torch.Tensor, torch.Tensor]:
    a = _validate.matrix(a, name_a).detach().double()
    b = _validate.matrix(b, name_b).detach().double()
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"{name_a} and {name_b} must have the same width d, got {a.shape[1]} and {b.shape[1]}")
    if not a.abs().sum() or not b.abs().sum():
        raise ValueError(f"{name_a} and {name_b} must each contain a non-zero row")
    return a, b


def principal_angles(a, b) -> torch.Tensor:
    """The principal angles, in degrees, between the span of the rows of ``a`` and of ``b``.

    a: [k_a, d], b: [k_b, d]. With orthonormal bases Q_a, Q_b of the two spans, the cosines
    of the angles are the singular values of Q_a Q_bᵀ. Returns float64 [min(rank a, rank b)],
    smallest angle first: 0° means a shared direction, 90° means orthogonal.
    """
    a, b = _two_row_sets(a, b, "a", "b")
    cosines = torch.linalg.svdvals(_row_basis(a) @ _row_basis(b).T).clamp(-1.0, 1.0)
    return torch.rad2deg(torch.arccos(cosines)).sort().values


def share_in_subspace(vectors, directions) -> float:
    """Fraction of the squared length of ``vectors`` that lies in the span of ``directions``.

    vectors: [N, d]; directions: [k, d] (need not be orthonormal). Returns
    Σ ||projection of each vector||² / Σ ||vector||², between 0 and 1. For random vectors and a
    k-dimensional span in R^d it is about k / d.
    """
    vectors, directions = _two_row_sets(vectors, directions, "vectors", "directions")
    basis = _row_basis(directions)
    return ((vectors @ basis.T) ** 2).sum().item() / (vectors**2).sum().item()


@dataclass(frozen=True)
class Recovery:
    """How well the parts of token + code can be read back.

    nearest_token: fraction of (token, position) sums whose largest dot product with the token
    table is their own token (no training: what an output layer tied to the embeddings does).
    token_probe, position_probe: held-out accuracy of a linear read-out for the token id and for
    the position, fitted by ``logistic_probe`` (the default) or by ``linear_probe`` (least
    squares; see ``token_recovery``'s ``probe``).
    """

    nearest_token: float
    token_probe: float
    position_probe: float


def _nearest_hits(tokens: torch.Tensor, code: torch.Tensor) -> torch.Tensor:
    """[V, n] booleans: is tokens[v] + code[t] nearest (largest dot product) to tokens[v]?"""
    # (tokens[v] + code[t]) · tokens[u] = G[v, u] + C[t, u]: no [V, n, d] tensor is needed.
    scores = (tokens @ tokens.T)[:, None, :] + (code @ tokens.T)[None, :, :]  # [V, n, V]
    nearest = scores.argmax(dim=-1)  # [V, n]
    return nearest == torch.arange(tokens.shape[0])[:, None]


def nearest_token_accuracy(tokens, code) -> torch.Tensor:
    """For each position t, the fraction of tokens v whose sum tokens[v] + code[t] has its largest
    dot product with the token table at v itself (the read-out of an output layer tied to the
    embeddings, no training).

    tokens: [V, d] token embeddings (V ≥ 2); code: [n, d] position code. Returns float64 [n].
    """
    tokens, code = _two_row_sets(tokens, code, "tokens", "code")
    if tokens.shape[0] < 2:
        raise ValueError(f"tokens needs at least 2 rows, got {tokens.shape[0]}")
    _validate.size_budget(tokens.shape[0] ** 2 * code.shape[0], "the token + code scores [len(tokens), len(code), len(tokens)]")
    return _nearest_hits(tokens, code).double().mean(dim=0)


_PROBES = {"logistic": logistic_probe, "least_squares": linear_probe}


def token_recovery(tokens, code, *, seed: int = 0, probe: str = "logistic") -> Recovery:
    """Add every token embedding to every position's code and try to read both back.

    tokens: [V, d] token embeddings; code: [n, d] position code. Builds the V·n sums
    tokens[v] + code[t] (float64) and measures three read-outs (see ``Recovery``). The probes
    are fitted on a random half of the sums (``seed``) and scored on the other half. ``probe``
    picks how they are fitted: "logistic" (default, ``logistic_probe``: the course's probe,
    which fits the argmax itself) or "least_squares" (``linear_probe``: closed form and fast,
    but it can mask classes, so it can score below chance where the logistic probe does not).
    """
    tokens, code = _two_row_sets(tokens, code, "tokens", "code")
    seed = _validate.seed(seed)
    fit = _PROBES[_validate.choice(probe, "probe", tuple(_PROBES))]
    vocab, n = tokens.shape[0], code.shape[0]
    if vocab < 2 or n < 2:
        raise ValueError(f"tokens and code need at least 2 rows each, got {vocab} and {n}")
    _validate.size_budget(vocab * n * tokens.shape[1], "the token + code sums [len(tokens) · len(code), d]")
    token_ids = torch.arange(vocab).repeat_interleave(n)
    positions = torch.arange(n).repeat(vocab)
    sums = tokens[token_ids] + code[positions]
    try:
        token_probe = fit(sums, token_ids, seed=seed).test_accuracy
        position_probe = fit(sums, positions, seed=seed).test_accuracy
    except ValueError as error:  # the probe names its own argument (features): say whose it is
        raise ValueError(f"tokens + code (the probe's features): {error}") from error
    return Recovery(
        nearest_token=_nearest_hits(tokens, code).double().mean().item(),
        token_probe=token_probe,
        position_probe=position_probe,
    )
