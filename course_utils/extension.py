"""Longer than trained: stretching RoPE past its training length (lesson 12).

A RoPE model trained on L tokens has seen pair i turn through the angles t·ω_i, t < L. Past L
the slow pairs reach angles never seen in training. Each method below changes the frequencies
ω_i = base^(−2i/d) so that a longer text maps back into (or near) the trained range:

- "linear", position interpolation (Chen et al. 2023): ω_i / s, i.e. position t is read as t/s.
- "ntk", NTK-aware scaling: base' = base·s^(d/(d−2)). The fastest pair (i = 0) is unchanged,
  the slowest is exactly interpolated, ω_{d/2−1}/s; the pairs between are scaled geometrically.
- "dynamic": "ntk" with s following the current length n: s = max(1, factor·n/L − (factor − 1))
  (Hugging Face's "dynamic"; with factor = 1, s = n/L).
- "yarn" (Peng et al. 2023): pair i keeps ω_i if it turns more than β_fast times within L,
  takes ω_i/s if it turns fewer than β_slow times, and blends linearly between; plus an
  attention temperature, ``yarn_attention_scale``.

These match Hugging Face transformers' ROPE_INIT_FUNCTIONS ("linear", "dynamic", "yarn"), which
tests/test_extension.py checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from . import _validate
from .encodings import frequencies

SCALINGS = ("linear", "ntk", "dynamic", "yarn")
MAX_FACTOR = 10**6


def _factor(factor, name: str = "factor") -> float:
    factor = _validate.real(factor, name)
    if factor < 1 or factor > MAX_FACTOR:
        raise ValueError(f"{name} must be at least 1 (s = new length / trained length) and at most "
                         f"{MAX_FACTOR:,}, got {factor}")
    return factor


def _scaling(scaling, name: str = "scaling") -> str | None:
    if scaling is None:
        return None
    return _validate.choice(scaling, name, SCALINGS)


def _original_max_len(value, scaling: str, name: str = "original_max_len") -> int:
    if value is None:
        raise ValueError(f'scaling="{scaling}" needs {name}, the length L the model was trained on')
    return _validate.integer(value, name, minimum=1, maximum=10**9)


def _betas(beta_fast, beta_slow) -> tuple[float, float]:
    beta_fast = _validate.real(beta_fast, "beta_fast", positive=True)
    beta_slow = _validate.real(beta_slow, "beta_slow", positive=True)
    if beta_slow >= beta_fast:
        raise ValueError(f"beta_slow must be below beta_fast (turns within L), got {beta_slow} >= {beta_fast}")
    return beta_fast, beta_slow


@dataclass(frozen=True)
class RopeScaling:
    """One RoPE scaling rule with its settings, checked when it is made.

    The shape of the ``rope_scaling`` entry (``rope_parameters`` in newer versions) of a Hugging
    Face model's config.json, whose rope_type, factor, original_max_position_embeddings,
    beta_fast, beta_slow and attention_factor are here:

    - kind: "linear" (position interpolation), "ntk", "dynamic" or "yarn";
    - factor: s ≥ 1, typically new length / trained length;
    - original_max_len: the training length L ("dynamic" and "yarn" need it);
    - beta_fast, beta_slow: YaRN's thresholds in turns within L ("yarn" only; see yarn_ramp);
    - attention_factor: what "yarn" multiplies queries and keys by (Hugging Face's
      ``attention_factor``); None: YaRN's fit, yarn_attention_scale(factor); 1.0: no temperature.

    ``frequencies(d, base=..., length=...)`` gives the stretched ω_i [d/2] (float64);
    ``attention_scale`` the factor on queries and keys (YaRN's temperature, 1 for the others).
    A model holds one as ``ModelConfig(rope_scaling=...)``; ``with_rope_scaling`` applies one to a
    trained model.
    """

    kind: str
    factor: float = 1.0
    original_max_len: int | None = None
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    attention_factor: float | None = None

    def __post_init__(self):
        # The record keeps the checked values (a 0-d tensor becomes a float), never the raw ones.
        def keep(name: str, value) -> None:
            object.__setattr__(self, name, value)

        keep("kind", _validate.choice(self.kind, "kind", SCALINGS))
        keep("factor", _factor(self.factor))
        if self.original_max_len is not None:
            keep("original_max_len", _validate.integer(self.original_max_len, "original_max_len", minimum=1,
                                                       maximum=10**9))
        elif self.kind in ("dynamic", "yarn"):
            raise ValueError(f'the "{self.kind}" scaling needs original_max_len, the length L the model was '
                             "trained on")
        beta_fast, beta_slow = _betas(self.beta_fast, self.beta_slow)
        if self.kind != "yarn" and (beta_fast, beta_slow) != (32.0, 1.0):
            raise ValueError(f'beta_fast and beta_slow are YaRN\'s thresholds: the "{self.kind}" scaling has none')
        keep("beta_fast", beta_fast)
        keep("beta_slow", beta_slow)
        if self.attention_factor is not None:
            if self.kind != "yarn":
                raise ValueError(f'attention_factor is YaRN\'s temperature: the "{self.kind}" scaling has none '
                                 "(leave it None)")
            factor = _validate.real(self.attention_factor, "attention_factor", positive=True)
            if factor > 100:
                raise ValueError(f"attention_factor must be at most 100 (logits grow by its square), got {factor}")
            keep("attention_factor", factor)

    @property
    def attention_scale(self) -> float:
        """What queries and keys are multiplied by: YaRN's temperature for "yarn" (attention_factor,
        or yarn_attention_scale(factor) when it is None), else 1."""
        if self.kind != "yarn":
            return 1.0
        return yarn_attention_scale(self.factor) if self.attention_factor is None else self.attention_factor

    def frequencies(self, d: int, *, base: float = 10_000.0, length: int | None = None) -> torch.Tensor:
        """The stretched ω_i for d features [d/2] (float64); "dynamic" needs ``length``, the
        current sequence length (see rope_frequencies for each rule's formula)."""
        d = _validate.d_model(d, "d")
        base = _validate.real(base, "base", positive=True)
        if length is not None:
            length = _validate.integer(length, "length", minimum=1, maximum=10**9)
        omega = frequencies(d, base=base)
        if self.kind == "linear":
            return omega / self.factor
        if self.kind == "yarn":
            gamma = yarn_ramp(d, original_max_len=self.original_max_len, base=base, beta_fast=self.beta_fast,
                              beta_slow=self.beta_slow)
            return gamma * omega + (1 - gamma) * omega / self.factor
        factor = self.factor
        if self.kind == "dynamic":
            if length is None:
                raise ValueError('the "dynamic" scaling needs length, the current sequence length')
            factor = max(1.0, factor * length / self.original_max_len - (factor - 1))
        if d == 2:
            raise ValueError(f'the "{self.kind}" scaling changes the base, which d = 2 (one pair, ω_0 = 1) does '
                             "not use: d must be at least 4")
        return frequencies(d, base=base * factor ** (d / (d - 2)))


def loose_settings_given(factor, original_max_len, beta_fast, beta_slow) -> bool:
    """True when any of a rule's loose settings differs from its default (each checked by name)."""
    factor = _validate.real(factor, "factor")
    if original_max_len is not None:
        _validate.integer(original_max_len, "original_max_len")
    beta_fast = _validate.real(beta_fast, "beta_fast")
    beta_slow = _validate.real(beta_slow, "beta_slow")
    return (factor, original_max_len, beta_fast, beta_slow) != (1.0, None, 32.0, 1.0)


def yarn_ramp(d: int, *, original_max_len: int, base: float = 10_000.0, beta_fast: float = 32.0,
              beta_slow: float = 1.0) -> torch.Tensor:
    """YaRN's per-pair weight γ_i of the original frequency. Returns float64 [d/2] in [0, 1].

    Pair i turns r_i = L·ω_i/(2π) times within L = original_max_len. γ_i = 1 (keep ω_i) for the
    pairs that turn at least β_fast times, 0 (interpolate, ω_i/s) for those that turn at most
    β_slow times, and a straight line in i between. As in the YaRN code (and Hugging Face's
    default, truncate=True), the two ends of the ramp are rounded outward to whole pair indices.
    """
    d = _validate.d_model(d, "d")
    base = _validate.real(base, "base", positive=True)
    if base <= 1:
        raise ValueError(f"base must be greater than 1, got {base}")
    original_max_len = _original_max_len(original_max_len, "yarn")
    beta_fast, beta_slow = _betas(beta_fast, beta_slow)

    def pair_index(turns: float) -> float:  # the (real) i at which r_i = turns
        return d * math.log(original_max_len / (turns * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(pair_index(beta_fast)), 0)
    high = min(math.ceil(pair_index(beta_slow)), d - 1)
    if low == high:
        high += 0.001
    i = torch.arange(d // 2, dtype=torch.float64)
    return 1 - ((i - low) / (high - low)).clamp(0, 1)


def rope_frequencies(d: int, *, base: float = 10_000.0, scaling: str | RopeScaling | None = None,
                     factor: float = 1.0, original_max_len: int | None = None, length: int | None = None,
                     beta_fast: float = 32.0, beta_slow: float = 1.0) -> torch.Tensor:
    """RoPE's frequencies ω_i for d features, stretched by ``scaling``. Returns float64 [d/2].

    scaling: None (ω_i = base^(−2i/d)), "linear" (ω_i/factor), "ntk" (base·factor^(d/(d−2))),
    "dynamic" ("ntk" with s = max(1, factor·length/original_max_len − (factor − 1)); needs
    ``length``, the current sequence length) or "yarn" (γ_i·ω_i + (1 − γ_i)·ω_i/factor, γ from
    ``yarn_ramp``); or a RopeScaling record holding the rule and its settings (then leave
    factor, original_max_len, beta_fast and beta_slow at their defaults). factor = s ≥ 1,
    typically new length / trained length L = original_max_len; beta_fast and beta_slow are
    YaRN's and ignored by the other rules.
    """
    d = _validate.d_model(d, "d")
    base = _validate.real(base, "base", positive=True)
    if isinstance(scaling, RopeScaling):
        if loose_settings_given(factor, original_max_len, beta_fast, beta_slow):
            raise ValueError("scaling is a RopeScaling record, which holds factor, original_max_len, beta_fast "
                             "and beta_slow: leave those arguments at their defaults")
        rule = scaling
    else:
        scaling = _scaling(scaling)
        factor = _factor(factor)
        beta_fast, beta_slow = _betas(beta_fast, beta_slow)
        if original_max_len is not None:
            original_max_len = _validate.integer(original_max_len, "original_max_len", minimum=1, maximum=10**9)
        if scaling is None:
            if length is not None:
                _validate.integer(length, "length", minimum=1, maximum=10**9)
            return frequencies(d, base=base)
        if scaling != "yarn":
            beta_fast, beta_slow = 32.0, 1.0  # YaRN's thresholds; the other rules have none
        rule = RopeScaling(scaling, factor, original_max_len, beta_fast, beta_slow)
    return rule.frequencies(d, base=base, length=length)


def angle_coverage(frequencies: torch.Tensor, length: int) -> torch.Tensor:
    """Share of the circle each pair has turned through at positions 0 .. length − 1. Returns [d/2].

    frequencies [d/2] (e.g. rope_frequencies(d)): pair i reaches angles 0 .. (length − 1)·ω_i,
    so it covers min(1, (length − 1)·ω_i / 2π) of the circle. 1 means every angle was seen; a
    pair below 1 meets new angles as soon as a text is longer.
    """
    frequencies = _validate.float_tensor(frequencies, "frequencies")
    if frequencies.ndim != 1 or not (frequencies > 0).all():
        raise ValueError(f"frequencies must be a 1-D tensor of positive ω_i, got shape {tuple(frequencies.shape)}")
    length = _validate.integer(length, "length", minimum=1, maximum=10**9)
    return ((length - 1) * frequencies.to(torch.float64) / (2 * math.pi)).clamp(max=1.0)


def yarn_attention_scale(factor: float) -> float:
    """YaRN's attention temperature: √(1/t) = 0.1·ln(s) + 1 for s > 1, else 1 (Peng et al. 2023).

    Queries and keys are both multiplied by it, so every logit grows by its square: a sharper
    softmax, against the flatter attention that longer contexts bring.
    """
    factor = _factor(factor)
    return 1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0
