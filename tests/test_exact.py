"""exact.py: float64 products that no summation order can change, within a few units in
the last place of the true product."""

from fractions import Fraction

import pytest
import torch

from course_utils import exact


def _true_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b computed in exact rational arithmetic, then rounded once to float64."""
    rows = [[Fraction(v) for v in row] for row in a.tolist()]
    cols = [[Fraction(v) for v in col] for col in b.T.tolist()]
    return torch.tensor([[float(sum(x * y for x, y in zip(r, c))) for c in cols]
                         for r in rows], dtype=torch.float64)


@pytest.mark.parametrize("m, k, n", [(3, 5, 2), (4, 64, 3), (2, 200, 5), (5, 1000, 2)])
def test_exact_matmul_is_the_true_product_to_a_few_units_in_the_last_place(m, k, n):
    """Slices multiplied exactly and added in a fixed order: at most a few
    roundings away from the true product (entries spanning 2^±20, so a plain sum
    cancels badly)."""
    g = torch.Generator().manual_seed(k)
    a = torch.randn(m, k, generator=g, dtype=torch.float64)
    a *= torch.exp2(torch.randint(-20, 20, (m, k), generator=g).double())
    b = torch.randn(k, n, generator=g, dtype=torch.float64)
    true = _true_product(a, b)
    scale = (a.abs() @ b.abs()) * 2.0 ** -52  # the size of one rounding of the terms
    assert ((exact.exact_matmul(a, b) - true).abs() <= 4 * scale).all()
    grid = exact.on_grid(a, 26)
    true = _true_product(grid, b)
    error = (exact.exact_matmul(grid, b, a_bits=26) - true).abs()
    assert (error <= 4 * (grid.abs() @ b.abs()) * 2.0 ** -52).all()


def test_exact_matmul_does_not_depend_on_the_order_of_a_chunks_terms():
    """Within a chunk of 64 terms every partial sum is exact, so any order gives the
    same bits (a plain float64 product does not)."""
    g = torch.Generator().manual_seed(5)
    a = torch.randn(30, 64, generator=g, dtype=torch.float64)
    b = torch.randn(64, 20, generator=g, dtype=torch.float64)
    order = torch.randperm(64, generator=g)
    assert torch.equal(exact.exact_matmul(a, b),
                       exact.exact_matmul(a[:, order], b[order]))
    assert not torch.equal(a @ b, a[:, order] @ b[order])


def test_grid_split_slices_add_up_and_share_their_grid():
    g = torch.Generator().manual_seed(6)
    m = torch.randn(50, 7, generator=g, dtype=torch.float64) * 1e3
    slices = exact.grid_split(m, 20, 3, dim=0)
    assert slices.shape == (3, 50, 7)
    assert ((slices.sum(0) - m).abs() <= m.abs().amax(0) * 2.0 ** -60).all()
    top = torch.frexp(m.abs().amax(0))[1]
    for i, part in enumerate(slices):
        units = part / torch.exp2((top - 20 * (i + 1)).double())
        assert torch.equal(units, units.round()) and units.abs().max() <= 2**20


def test_exact_matmul_checks_its_arguments():
    a = torch.ones(3, 4, dtype=torch.float64)
    with pytest.raises(TypeError, match="float64"):
        exact.exact_matmul(a.float(), a.T.float())
    with pytest.raises(ValueError, match=r"\[m, k\] and \[k, n\]"):
        exact.exact_matmul(a, a)
    with pytest.raises(ValueError, match="a_bits"):
        exact.exact_matmul(a, a.T, a_bits=50)


def test_a_prepared_product_gives_exact_matmuls_bytes_call_after_call():
    """ExactProduct cuts a once and keeps b's padded slices between calls: every call is
    exact_matmul's product, whatever came before (k = 200: padded to 4 chunks)."""
    g = torch.Generator().manual_seed(7)
    a = exact.on_grid(torch.randn(200, 30, generator=g, dtype=torch.float64), 26)
    rows, columns = exact.ExactProduct(a, 26), exact.ExactProduct(a.T, 26)
    for n in (5, 5, 3):
        b = torch.randn(30, n, generator=g, dtype=torch.float64)
        p = torch.softmax(torch.randn(200, n, generator=g, dtype=torch.float64), dim=1)
        assert torch.equal(rows(b, bits=40),
                           exact.exact_matmul(a, b, a_bits=26, bits=40))
        assert torch.equal(columns(p, b_top=1),
                           exact.exact_matmul(a.T, p, a_bits=26, b_top=1))
    with pytest.raises(ValueError, match="b must be a float64 matrix with 30 rows"):
        rows(torch.ones(29, 2, dtype=torch.float64))
    with pytest.raises(TypeError, match="a must be a float64 matrix"):
        exact.ExactProduct(a.float(), 26)


def test_a_prepared_product_names_a_bad_setting():
    a = exact.on_grid(torch.ones(3, 4, dtype=torch.float64), 26)
    with pytest.raises(TypeError, match="a_bits"):
        exact.ExactProduct(a, "26")
    with pytest.raises(ValueError, match="a_bits"):
        exact.ExactProduct(a, 0)
    product = exact.ExactProduct(a, 26)
    b = torch.ones(4, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="bits"):
        product(b, bits=0)
    with pytest.raises(TypeError, match="b_top"):
        product(b, b_top=0.5)
