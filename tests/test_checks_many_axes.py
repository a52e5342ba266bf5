"""The lesson 16 checks: references pass (the package's own functions among them), real mistakes
are named."""

import math

import pytest
import torch

from conftest import verdict
from course_utils import long_context_scale, mrope_positions
from course_utils.checks import check_llama4_scale, check_mrope_positions, check_stream_mask

# Some answers here are built from the course's own functions: the guard stays off.
pytestmark = pytest.mark.usefixtures("course_left_on")


def positions_by_rule(segments, step):
    """M-RoPE positions where the segment after an image starts at s + step(t, h, w)."""
    columns, start = [], 0
    for segment in segments:
        if segment[0] == "text":
            columns += [torch.full((3,), p) for p in range(start, start + segment[1])]
            start += segment[1]
            continue
        _, t, h, w = segment
        columns += [torch.tensor([start + i, start + j, start + k])
                    for i in range(t) for j in range(h) for k in range(w)]
        start += step(t, h, w)
    return torch.stack(columns, dim=1)


def stream_mask(n, window, sinks):
    t = torch.arange(n)
    offset = t[:, None] - t[None, :]
    return (offset >= 0) & ((offset < window) | (t[None, :] < sinks))


def llama4(t, floor_scale, attn_scale):
    return 1.0 + attn_scale * torch.log1p(torch.floor((t + 1) / floor_scale))


def test_references_pass(capsys):
    assert verdict(capsys, check_mrope_positions, mrope_positions)[0] is True
    assert verdict(capsys, check_mrope_positions, lambda s: mrope_positions(s).double())[0] is True
    assert verdict(capsys, check_mrope_positions, lambda s: positions_by_rule(s, lambda t, h, w: max(t, h, w)))[0]
    assert verdict(capsys, check_stream_mask, stream_mask)[0] is True
    assert verdict(capsys, check_stream_mask, lambda n, w, s: stream_mask(n, w, s).float())[0] is True
    assert verdict(capsys, check_llama4_scale, llama4)[0] is True


def test_the_llama4_reference_is_the_packages_rule():
    t = torch.arange(4000, dtype=torch.float64)
    expected = long_context_scale("llama4", 4000, original_max_len=512, floor_scale=512, attn_scale=0.1)
    torch.testing.assert_close(llama4(t, 512, 0.1), expected)


@pytest.mark.parametrize("answer, hint", [
    (lambda s: positions_by_rule(s, lambda t, h, w: max(h, w)), "transformers 5.23"),
    (lambda s: positions_by_rule(s, lambda t, h, w: t * h * w), "t·h·w tokens"),
    (lambda s: positions_by_rule(s, lambda t, h, w: max(t, h, w) + 1), "One too far"),
    (lambda s: mrope_positions(s)[[0, 2, 1]], "swapped"),
    (lambda s: mrope_positions(s) + 0.5, "whole numbers"),
    (lambda s: mrope_positions(s)[:2], "shape"),
    (lambda s: None, "return"),
])
def test_mrope_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_mrope_positions, answer)
    assert result is False and hint in line, line


def non_causal_sinks(n, window, sinks):
    t = torch.arange(n)
    offset = t[:, None] - t[None, :]
    return ((offset >= 0) & (offset < window)) | (t[None, :] < sinks)


@pytest.mark.parametrize("answer, hint", [
    (lambda n, w, s: stream_mask(n, w + 1, s), "one too wide"),
    (lambda n, w, s: stream_mask(n, w, 0), "sink tokens are missing"),
    (non_causal_sinks, "before it arrives"),
    (lambda n, w, s: stream_mask(n, w, s).T, "swapped"),
    (lambda n, w, s: stream_mask(n, w, s).float() * 2, "True/False"),
    (lambda n, w, s: stream_mask(n, w, s)[:-1], "shape"),
])
def test_stream_mask_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_stream_mask, answer)
    assert result is False and hint in line, line


@pytest.mark.parametrize("answer, hint", [
    (lambda t, f, b: 1.0 + b * torch.log1p(torch.floor(t / f)), "Off by one"),
    (lambda t, f, b: 1.0 + b * torch.log1p((t + 1) / f), "floor is missing"),
    (lambda t, f, b: 1.0 + b * torch.log10(1 + torch.floor((t + 1) / f)), "log10"),
    (lambda t, f, b: llama4(t, f, b) - 1.0, "1 + is missing"),
    (lambda t, f, b: 1.0 + torch.log1p(b * torch.floor((t + 1) / f)), "inside"),
    (lambda t, f, b: llama4(t, f, b)[:-1], "shape"),
    (lambda t, f, b: math.inf, "shape"),
])
def test_llama4_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_llama4_scale, answer)
    assert result is False and hint in line, line
