"""The lesson 15 checks: references pass, real mistakes are named."""

import math

import pytest
import torch

from conftest import verdict
from course_utils import position_ids, rope_frequencies_from_config
from course_utils.checks import check_absorbed_scores, check_llama3_frequencies, check_position_ids

# Some answers here are built from the course's own functions: the guard stays off.
pytestmark = pytest.mark.usefixtures("course_left_on")


def llama3(omega, factor, original, low, high):
    wavelength = 2 * math.pi / omega
    gamma = (original / wavelength - low) / (high - low)
    out = torch.where(wavelength < original / high, omega, (1 - gamma) * omega / factor + gamma * omega)
    return torch.where(wavelength > original / low, omega / factor, out)


def absorbed(q, latent, w_uk):
    return torch.einsum("shd,hdr,tr->hst", q, w_uk, latent)


def test_references_pass(capsys):
    assert verdict(capsys, check_llama3_frequencies, llama3)[0] is True
    assert verdict(capsys, check_position_ids, position_ids)[0] is True
    assert verdict(capsys, check_position_ids, lambda d: position_ids(d).float())[0] is True
    assert verdict(capsys, check_absorbed_scores, absorbed)[0] is True


def test_the_reference_is_what_transformers_computes():
    config = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 2, "rope_theta": 500_000.0,
              "max_position_embeddings": 131072,
              "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}
    omega = 500_000.0 ** (-torch.arange(0, 128, 2, dtype=torch.float64) / 128)
    torch.testing.assert_close(llama3(omega, 8.0, 8192, 1.0, 4.0), rope_frequencies_from_config(config)[0])


def swapped_bands(omega, factor, original, low, high):
    wavelength = 2 * math.pi / omega
    gamma = (original / wavelength - low) / (high - low)
    out = torch.where(wavelength < original / high, omega / factor, (1 - gamma) * omega + gamma * omega / factor)
    return torch.where(wavelength > original / low, omega, out)


def reversed_blend(omega, factor, original, low, high):
    wavelength = 2 * math.pi / omega
    gamma = (original / wavelength - low) / (high - low)
    out = torch.where(wavelength < original / high, omega, gamma * omega / factor + (1 - gamma) * omega)
    return torch.where(wavelength > original / low, omega / factor, out)


def no_middle(omega, factor, original, low, high):
    return torch.where(2 * math.pi / omega > original / low, omega / factor, omega)


@pytest.mark.parametrize("answer, hint", [
    (swapped_bands, "bands are swapped"),
    (reversed_blend, "blend runs the wrong way"),
    (lambda w, s, L, lo, hi: w / s, "position interpolation"),
    (no_middle, "middle band is missing"),
    (lambda w, s, L, lo, hi: None, "return"),
    (lambda w, s, L, lo, hi: w[:-1], "shape"),
])
def test_llama3_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_llama3_frequencies, answer)
    assert result is False and hint in line, line


def columns(d):
    return torch.arange(d.shape[1]).expand_as(d)


@pytest.mark.parametrize("answer, hint", [
    (columns, "column numbers"),
    (lambda d: position_ids(d) + 1, "Off by one"),
    (lambda d: ((d > 0).long().cumsum(1) - 1).clamp(min=0), "restart at 0"),
    (lambda d: position_ids(d) + 0.5, "whole numbers"),
    (lambda d: position_ids(d)[0], "shape"),
])
def test_position_id_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_position_ids, answer)
    assert result is False and hint in line, line


@pytest.mark.parametrize("answer, hint", [
    (lambda q, c, w: absorbed(q, c, w).transpose(1, 2), "swapped"),
    (lambda q, c, w: absorbed(q, c, w).sum(0, keepdim=True).expand(q.shape[1], -1, -1), "adds the heads"),
    (lambda q, c, w: absorbed(q, c, w) / math.sqrt(q.shape[2]), "raw scores"),
    (lambda q, c, w: 1 / 0, "ZeroDivisionError"),
])
def test_absorbed_mistakes_are_named(capsys, answer, hint):
    result, line = verdict(capsys, check_absorbed_scores, answer)
    assert result is False and hint in line, line
