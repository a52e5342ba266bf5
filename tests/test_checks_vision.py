"""The lesson 13 checks: references pass, real mistakes are named, an equivalent convention is
called equivalent (not a generic failure), and junk never makes a check raise."""

import pytest
import torch

from conftest import COMMON_JUNK, verdict
from course_utils import patchify, rope_rotate, rope_rotate_2d, sinusoidal_encoding_2d
from course_utils.checks import check_patchify, check_rope_2d, check_sinusoidal_2d

# Some answers here are built from the course's own functions: the guard stays off.
pytestmark = pytest.mark.usefixtures("course_left_on")


def code_1d(t, d, interleaved=False):
    omega = 10_000.0 ** (-2.0 * torch.arange(d // 2, dtype=torch.float64) / d)
    angles = t.double()[:, None] * omega
    if interleaved:
        return torch.stack([angles.sin(), angles.cos()], -1).flatten(-2)
    return torch.cat([angles.sin(), angles.cos()], 1)


def code_2d(height, width, d, swap=False, interleaved=False, column_major=False):
    index = torch.arange(height * width)
    y, x = (index % height, index // height) if column_major else (index // width, index % width)
    first, second = (y, x) if swap else (x, y)
    return torch.cat([code_1d(first, d // 2, interleaved), code_1d(second, d // 2, interleaved)], 1)


def rope_2d(x, rows, cols, swap=False):
    half = x.shape[-1] // 2
    first, second = (rows, cols) if swap else (cols, rows)
    return torch.cat([rope_rotate(x[:, :half], positions=first), rope_rotate(x[:, half:], positions=second)], 1)


def test_references_pass(capsys):
    assert verdict(capsys, check_patchify, patchify)[0] is True
    assert verdict(capsys, check_patchify,
                   lambda im, p: im.unfold(1, p, p).unfold(2, p, p).reshape(im.shape[0], -1, p * p))[0] is True
    assert verdict(capsys, check_sinusoidal_2d, lambda h, w, d: sinusoidal_encoding_2d(h, w, d))[0] is True
    assert verdict(capsys, check_sinusoidal_2d, code_2d)[0] is True
    assert verdict(capsys, check_rope_2d, rope_rotate_2d)[0] is True
    assert verdict(capsys, check_rope_2d, rope_2d)[0] is True


@pytest.mark.parametrize("answer, hint", [
    (lambda im, p: im.reshape(im.shape[0], -1, p * p), "strips of p·p pixels of one row"),
    (lambda im, p: patchify(im, p).reshape(im.shape[0], im.shape[1] // p, im.shape[2] // p, p * p)
     .transpose(1, 2).reshape(im.shape[0], -1, p * p), "Your patches come column by column"),
    (lambda im, p: im.unfold(1, p, p).unfold(2, p, p).transpose(-1, -2).reshape(im.shape[0], -1, p * p),
     "each patch's pixels are read column by column"),
])
def test_patchify_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_patchify, answer)
    assert result is False and hint in line, line
    assert not line.endswith("...")


@pytest.mark.parametrize("answer, hint", [
    (lambda h, w, d: code_2d(h, w, d, swap=True), "equivalent convention"),
    (lambda h, w, d: code_2d(h, w, d, interleaved=True), "equivalent convention"),
    (lambda h, w, d: code_2d(h, w, d, column_major=True), "column-major"),
    (lambda h, w, d: torch.cat([code_1d(torch.arange(h * w) % w, d // 2) * 0 + code_2d(h, w, d)[:, : d // 2]
                                .pow(1), code_2d(h, w, d)[:, d // 2:]], 1) * 2, "expected"),
])
def test_sinusoidal_2d_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_sinusoidal_2d, answer)
    assert result is False and hint in line, line
    if hint == "equivalent convention":
        assert "MAE" in line and "wrong" not in line
    assert not line.endswith("..."), "the hint must not be cut off by the 400-character limit"


def test_sinusoidal_2d_names_the_swap_and_the_exponent(capsys):
    _, line = verdict(capsys, check_sinusoidal_2d, lambda h, w, d: code_2d(h, w, d, swap=True))
    assert "first half encodes the row" in line
    _, line = verdict(capsys, check_sinusoidal_2d, lambda h, w, d: code_2d(h, w, d, interleaved=True))
    assert "interleaved" in line

    def wide_exponent(h, w, d):
        index = torch.arange(h * w)
        omega = 10_000.0 ** (-2.0 * torch.arange(d // 4, dtype=torch.float64) / d)

        def one(t):
            angles = t.double()[:, None] * omega
            return torch.cat([angles.sin(), angles.cos()], 1)
        return torch.cat([one(index % w), one(index // w)], 1)

    _, line = verdict(capsys, check_sinusoidal_2d, wide_exponent)
    assert "d_model/2" in line, line


@pytest.mark.parametrize("answer, hint", [
    (lambda x, r, c: rope_2d(x, r, c, swap=True), "equivalent convention"),
    (lambda x, r, c: rope_rotate(x, positions=r * (c.max() + 1) + c), "1-D RoPE on the flattened grid"),
    (lambda x, r, c: torch.cat([rope_2d(x, r, c)[:, : x.shape[1] // 2], x[:, x.shape[1] // 2:]], 1),
     "Only the column half"),
])
def test_rope_2d_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_rope_2d, answer)
    assert result is False and hint in line, line
    assert not line.endswith("...")


@pytest.mark.parametrize("check", [check_patchify, check_sinusoidal_2d, check_rope_2d])
@pytest.mark.parametrize("junk", sorted(COMMON_JUNK))
def test_junk_never_raises(capsys, check, junk):
    result, line = verdict(capsys, check, COMMON_JUNK[junk])
    assert result is False
    assert verdict(capsys, check, "not a function")[0] is False
