"""Tests for course_utils.decomposition.four_term_decomposition (scores and logits)."""

from __future__ import annotations

import pytest
import torch
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import FourTerms, four_term_decomposition, sinusoidal_encoding

FAST = settings(max_examples=examples(50), deadline=None, database=None)
F64 = torch.float64


def operands(n_x, n_y, d, d_k, seed=0, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype)  # noqa: E731
    return dict(x=r(n_x, d), e=r(n_x, d), y=r(n_y, d), f=r(n_y, d), w_q=r(d, d_k), w_k=r(d, d_k))


@FAST
@given(n_x=st.integers(1, 7), n_y=st.integers(1, 7), d=st.integers(1, 8), d_k=st.integers(1, 8),
       seed=st.integers(0, 2**31 - 1))
def test_terms_sum_to_the_logits(n_x, n_y, d, d_k, seed):
    a = operands(n_x, n_y, d, d_k, seed)
    terms = four_term_decomposition(**a)
    assert isinstance(terms, FourTerms)
    logits = (a["x"] + a["e"]) @ a["w_q"] @ ((a["y"] + a["f"]) @ a["w_k"]).T
    for term in terms:
        assert term.shape == (n_x, n_y)
        assert term.dtype == F64
    torch.testing.assert_close(terms.total(), logits, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(sum(terms), logits, rtol=1e-10, atol=1e-10)


def test_each_term_is_the_right_product():
    a = operands(3, 5, 4, 2, seed=7)
    t = four_term_decomposition(**a)
    q = lambda m: m @ a["w_q"]  # noqa: E731
    k = lambda m: m @ a["w_k"]  # noqa: E731
    assert t.token_token.shape == t.position_position.shape == (3, 5)
    torch.testing.assert_close(t.token_token, q(a["x"]) @ k(a["y"]).T, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(t.token_position, q(a["x"]) @ k(a["f"]).T, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(t.position_token, q(a["e"]) @ k(a["y"]).T, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(t.position_position, q(a["e"]) @ k(a["f"]).T, rtol=1e-12, atol=1e-12)
    assert t._fields == ("token_token", "token_position", "position_token", "position_position")


def test_scaled_terms_are_the_logits():
    a = operands(4, 6, 5, 3, seed=3)
    scores = four_term_decomposition(**a)
    logits = four_term_decomposition(**a, scaled=True)
    for score, logit in zip(scores, logits):
        torch.testing.assert_close(logit, score / 3**0.5, rtol=1e-12, atol=1e-12)
    q, k = (a["x"] + a["e"]) @ a["w_q"], (a["y"] + a["f"]) @ a["w_k"]
    torch.testing.assert_close(logits.total(), q @ k.T / 3**0.5, rtol=1e-10, atol=1e-10)
    with pytest.raises(TypeError, match="scaled"):
        four_term_decomposition(**a, scaled=1)


def test_zero_positions_leave_only_token_token():
    a = operands(4, 2, 3, 3, seed=1)
    a["e"], a["f"] = torch.zeros_like(a["e"]), torch.zeros_like(a["f"])
    t = four_term_decomposition(**a)
    torch.testing.assert_close(t.total(), t.token_token, rtol=0, atol=0)
    for term in (t.token_position, t.position_token, t.position_position):
        assert torch.count_nonzero(term) == 0


@pytest.mark.parametrize("d", [4, 16])
@pytest.mark.parametrize("n_x, n_y", [(6, 6), (4, 9)])
def test_position_position_is_toeplitz_with_identity_projections(n_x, n_y, d):
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(n_x, d, generator=g, dtype=F64), torch.randn(n_y, d, generator=g, dtype=F64)
    e = sinusoidal_encoding(n_x, d, dtype=F64)
    f = sinusoidal_encoding(n_y, d, dtype=F64)
    eye = torch.eye(d, dtype=F64)
    pp = four_term_decomposition(x, e, y, f, eye, eye).position_position
    for i in range(n_x):
        for j in range(n_y):
            for i2 in range(n_x):
                j2 = j - i + i2
                if 0 <= j2 < n_y:
                    assert pp[i, j].item() == pytest.approx(pp[i2, j2].item(), abs=1e-12)
    # and it is the sum of cos(ω (j - i)) over the frequencies
    omega = torch.exp(-torch.log(torch.tensor(10_000.0, dtype=F64)) * torch.arange(0, d, 2, dtype=F64) / d)
    offsets = torch.arange(n_y, dtype=F64)[None, :] - torch.arange(n_x, dtype=F64)[:, None]
    torch.testing.assert_close(pp, torch.cos(offsets[..., None] * omega).sum(-1), rtol=0, atol=1e-12)


# --- errors ----------------------------------------------------------------------------------

def _case(id, error, pattern, **replace):
    """Valid operands (n_x=3, n_y=4, d=5, d_k=2) with some replaced; a callable gets the operands."""
    a = operands(3, 4, 5, 2)
    for name, value in replace.items():
        a[name] = value(a) if callable(value) else value
    return pytest.param(a, error, pattern, id=id)


Z = lambda *shape: torch.zeros(*shape, dtype=F64)  # noqa: E731

BAD = [
    _case("e-wider-than-x", ValueError, r"\be\b", e=Z(3, 6)),
    _case("e-fewer-rows-than-x", ValueError, r"\be\b", e=Z(2, 5)),
    _case("f-narrower-than-y", ValueError, r"\bf\b", f=Z(4, 3)),
    _case("y-width-not-x-width", ValueError, r"\bx\b.*\by\b", y=Z(4, 6), f=Z(4, 6)),
    _case("w_q-wrong-rows", ValueError, "w_q", w_q=Z(4, 2)),
    _case("w_k-wrong-rows", ValueError, "w_k", w_k=Z(6, 2)),
    _case("w_q-w_k-different-d_k", ValueError, r"w_q.*w_k.*d_k", w_k=Z(5, 3)),
    _case("x-float32", TypeError, "dtype", x=lambda a: a["x"].float()),
    _case("w_q-float32", TypeError, "dtype", w_q=lambda a: a["w_q"].float()),
    _case("x-1d", ValueError, r"\bx\b", x=Z(5)),
    _case("f-3d", ValueError, r"\bf\b", f=Z(4, 5, 1)),
    _case("w_k-1d", ValueError, "w_k", w_k=Z(5)),
    _case("y-int", TypeError, r"\by\b", y=lambda a: a["y"].long()),
    _case("e-list", TypeError, r"\be\b", e=lambda a: a["e"].tolist()),
    _case("w_q-none", TypeError, "w_q", w_q=None),
    _case("x-inf", ValueError, r"\bx\b", x=lambda a: a["x"].masked_fill(a["x"] > 0, float("inf"))),
]


@pytest.mark.parametrize("args, error, pattern", BAD)
def test_bad_arguments_are_named(args, error, pattern):
    with pytest.raises(error, match=pattern):
        four_term_decomposition(**args)
