"""Checks for lesson 15's exercises: llama3's frequencies, position ids of padded and packed
rows, and MLA's absorbed score. References are float64 NumPy, independent of course_utils."""

from __future__ import annotations

import math

import numpy as np
import torch

from ._core import NotYet, as_array, call, close, diagnose, fmt, verdict


def _llama3(omega, factor, original, low, high):
    wavelength = 2 * np.pi / omega
    smooth = (original / wavelength - low) / (high - low)
    blended = (1 - smooth) * omega / factor + smooth * omega
    out = np.where(wavelength < original / high, omega, blended)
    return np.where(wavelength > original / low, omega / factor, out)


@verdict
def check_llama3_frequencies(llama3_fn) -> str:
    """Check ``llama3_fn(omega, factor, original_max_len, low_freq_factor, high_freq_factor)`` →
    llama3's scaled frequencies [d/2]."""
    cases = ((128, 500_000.0, 8.0, 8192, 1.0, 4.0), (64, 500_000.0, 32.0, 8192, 1.0, 4.0),
             (32, 10_000.0, 4.0, 256, 1.0, 4.0), (16, 10_000.0, 2.0, 64, 2.0, 8.0))
    for d, base, factor, original, low, high in cases:
        omega = base ** (-np.arange(0, d, 2) / d)
        shown = f"d = {d}, base = {base:g}, factor = {factor:g}, original_max_len = {original}, low = {low:g}, " \
                f"high = {high:g}"
        raw = call(llama3_fn, (torch.tensor(omega), factor, original, low, high), shown)
        got = as_array(raw, omega.shape, shown, what="a tensor shaped like omega")
        expected = _llama3(omega, factor, original, low, high)
        if close(got, expected):
            continue
        wavelength = 2 * np.pi / omega
        smooth = (original / wavelength - low) / (high - low)
        mistakes = {
            "The bands are swapped: the fast pairs (short wavelengths) keep ω, the slow ones are divided.":
                np.where(wavelength < original / high, omega / factor,
                         np.where(wavelength > original / low, omega, (1 - smooth) * omega + smooth * omega / factor)),
            "The blend runs the wrong way: smooth = 1 at the short-wavelength end keeps ω, 0 divides it.":
                np.where(wavelength < original / high, omega, np.where(
                    wavelength > original / low, omega / factor, smooth * omega / factor + (1 - smooth) * omega)),
            "Every pair is divided: that is position interpolation. Only the slow band is.": omega / factor,
            "The middle band is missing: there ω blends linearly from ω/factor to ω as L/wavelength goes "
            "from low_freq_factor to high_freq_factor.":
                np.where(wavelength > original / low, omega / factor, omega),
        }
        raise NotYet(f"for {shown} expected {fmt(expected)}, got {fmt(got)}." + diagnose(got, mistakes))
    return "fast pairs kept, slow ones divided by the factor, a blend in L/λ between."


def _positions(documents: np.ndarray) -> np.ndarray:
    out = np.zeros_like(documents)
    for r, row in enumerate(documents):
        count = 0
        for c, doc in enumerate(row):
            count = 0 if c == 0 or row[c - 1] != doc else count + 1
            out[r, c] = count if doc > 0 else 0
    return out


@verdict
def check_position_ids(position_ids_fn) -> str:
    """Check ``position_ids_fn(document_ids)`` [batch, n] → each token's position within its document
    (pads, document id 0, are not judged)."""
    cases = (
        [[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]],  # left padding
        [[1, 1, 2, 2, 2, 3], [1, 2, 2, 2, 3, 3]],  # packed documents
        [[0, 0, 0, 1, 1, 2, 2, 2]],  # padding, then two documents
        [[1, 1, 1, 0, 0]],  # right padding
        [[1]],
    )
    for rows in cases:
        documents = np.array(rows)
        shown = f"document_ids = {rows}"
        raw = call(position_ids_fn, (torch.tensor(documents),), shown)
        if isinstance(raw, torch.Tensor) and raw.is_floating_point() and not torch.equal(raw, raw.round()):
            raise NotYet(f"for {shown} your positions are not whole numbers: {fmt(raw)}.")
        got = as_array(raw, documents.shape, shown, what="a tensor shaped like document_ids")
        expected = _positions(documents)
        real = documents > 0
        if np.array_equal(got[real], expected[real]):
            continue
        column = np.broadcast_to(np.arange(documents.shape[1]), documents.shape)
        mistakes = {  # the cumsum rule first: on a row without pads it equals the column numbers
            "You count real tokens along the whole row (the attention mask's cumsum − 1): right for padding, "
            "but a packed document must restart at 0.": np.maximum(np.cumsum(real, axis=1) - 1, 0),
            "Those are the column numbers: a padded or packed text must count from 0 where it starts.": column,
            "Off by one: the first token of a document is at position 0.": expected + 1,
        }
        hint = ""
        for text, wrong in mistakes.items():
            if np.array_equal(got[real], np.asarray(wrong)[real]):
                hint = " " + text
                break
        shown_got = got.astype(np.int64).tolist() if (np.abs(got) < 1e9).all() and \
            np.array_equal(got, np.round(got)) else fmt(got)
        raise NotYet(f"for {shown} expected {expected.tolist()} (pads not judged), got {shown_got}." + hint)
    return "each document counts from 0; pads and earlier documents do not count."


@verdict
def check_absorbed_scores(absorbed_fn) -> str:
    """Check ``absorbed_fn(q_nope, latent, w_uk)`` → scores [heads, n, n] = q_s·(w_uk[h] @ c_t)."""
    rng = np.random.default_rng(15)
    for n, heads, d_nope, r in ((4, 2, 3, 5), (1, 1, 2, 2), (3, 3, 4, 2), (5, 1, 6, 3)):
        q = rng.normal(size=(n, heads, d_nope))
        latent = rng.normal(size=(n, r))
        w_uk = rng.normal(size=(heads, d_nope, r))
        shown = f"q_nope [{n}, {heads}, {d_nope}], latent [{n}, {r}], w_uk [{heads}, {d_nope}, {r}]"
        raw = call(absorbed_fn, (torch.tensor(q), torch.tensor(latent), torch.tensor(w_uk)), shown)
        got = as_array(raw, (heads, n, n), shown, what="a [heads, n, n] tensor")
        expected = np.einsum("shd,hdr,tr->hst", q, w_uk, latent)
        if close(got, expected):
            continue
        mistakes = {
            "Rows and columns are swapped: entry [h, s, t] is query s on key t.": expected.transpose(0, 2, 1),
            "That adds the heads up: each head has its own w_uk[h] and its own scores.":
                np.broadcast_to(expected.sum(0, keepdims=True), expected.shape),
            "Scale and softmax come later: return the raw scores.":
                expected / math.sqrt(d_nope),
        }
        raise NotYet(f"for {shown} expected {fmt(expected)}, got {fmt(got)}." + diagnose(got, mistakes))
    return "(w_ukᵀ q)·c: the keys' up-projection moved to the query side."
