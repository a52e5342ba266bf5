"""RoPE as real models configure it: frequencies from a model's config.json (lesson 15).

A released model does not say "ω_i = 10000^(−2i/d)"; its ``config.json`` says it in keys
that changed over the years, and the rule they name decides every frequency:

- ``rope_theta`` (the base; 10⁴ in the 2021 paper, 5·10⁵ in Llama 3, 10⁶ in Qwen3 and Gemma 3's
  global layers) and the rotated size: ``head_dim`` (else ``qk_rope_head_dim``, the features
  MLA models rotate; else hidden_size // num_attention_heads) times ``partial_rotary_factor``
  (GPT-NeoX/Pythia call it ``rotary_pct``, and the base ``rotary_emb_base``).
- the rule: transformers v4 wrote ``rope_scaling`` = {"rope_type" (or the older "type"), ...},
  v5 writes ``rope_parameters`` holding the base as well. The rules, one table below:

  ==============  =======================================================================
  default         ω_i = base^(−2i/d), i < d/2 (RoFormer, Su et al. 2021).
  linear          position interpolation, PI (Chen, Wong, Chen and Tian 2023): ω_i / factor.
  dynamic         NTK-aware scaling (bloc97, r/LocalLLaMA, 2023: raise the base so the
                  slowest pair is interpolated and the fastest kept) made length-dependent
                  ("dynamic NTK", emozilla, r/LocalLLaMA, 2023):
                  base' = base·(factor·n/L − (factor − 1))^(d/(d−2)) at n = max(length, L)
                  positions, L = max_position_embeddings.
  yarn            YaRN (Peng, Quesnelle, Fan and Shippole 2023; ICLR 2024): pair i keeps
                  ω_i if it turns more than β_fast times within the original length, takes
                  ω_i/factor if fewer than β_slow times, blends linearly between; attention
                  scaling 0.1·ln(factor) + 1 (DeepSeek-V2/V3: the ratio of that with mscale
                  to that with mscale_all_dim).
  longrope        LongRoPE (Ding et al. 2024, ICML): one searched factor per pair, ω_i / λ_i, a
                  "short" list within the original length and a "long" one past it;
                  attention scaling √(1 + ln(factor) / ln(original length)).
  llama3          Llama 3.1 (Meta's release of July 2024; the rule is in its reference code,
                  meta-llama/llama-models): pairs whose wavelength 2π/ω is below
                  L/high_freq_factor stay, above L/low_freq_factor are divided by factor,
                  and between blend linearly in L/wavelength.
  proportional    transformers' rule for Gemma 4's global layers: the rotated pairs keep the
                  exponents of the full head (2i/head_dim), the rest get frequency 0; all
                  divided by factor.
  ==============  =======================================================================

The reference is Hugging Face transformers (5.23, tests/test_rope_config.py): its
``ROPE_INIT_FUNCTIONS`` for the scaled rules and each model class's
``compute_default_rope_parameters`` for "default" — which rotates the whole head for most
classes and honours ``partial_rotary_factor`` only for some (GPT-NeoX, Phi, GLM, StableLM, ...:
``PARTIAL_DEFAULT_MODEL_TYPES``). Precedence where two keys disagree, as transformers reads them:
a non-empty ``rope_scaling`` replaces ``rope_parameters``; a value inside that dict beats the
top-level ``rope_theta`` / ``partial_rotary_factor``; a top-level
``original_max_position_embeddings`` beats the one inside the dict (Phi-3's config class always
has one, 4096 by default); an explicit ``head_dim`` beats ``qk_rope_head_dim``. GPT-NeoX reads
only ``rotary_emb_base`` (default 10⁴; a top-level ``rope_theta`` is ignored) and ``rotary_pct``
(default 0.25; a top-level ``partial_rotary_factor`` is not read, but one given as 0 or outside
(0, 1] is refused by name, as a ``rotary_pct`` of 0 is: 0 is never read as "missing"). A YaRN ``"truncate": null`` means no truncation. Phi-3's older type names "su"
and "yarn" mean longrope (transformers 5.23 then also wants original_max_position_embeddings
inside the dict; this function takes the top-level one).
"""

from __future__ import annotations

import math

import torch

from . import _validate

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")

# Model types whose "default" rule rotates only int(head_dim * partial_rotary_factor) features
# (read from each transformers 5.23 class's compute_default_rope_parameters; the test re-reads it).
PARTIAL_DEFAULT_MODEL_TYPES = frozenset({
    "bamba", "deepseek_v4", "diffusion_gemma_text", "dots3_note_audio_encoder", "dots3_note_text",
    "efficientloftr", "glm", "glm4", "glm4_moe", "glm4_moe_lite", "glm4v", "glm4v_moe",
    "glm_image", "glm_ocr", "glmasr", "gpt_neox", "gpt_neox_japanese", "laguna", "mellum",
    "mimo_v2_flash", "minimax_m2", "minimax_m3_vl", "moonshine", "moonshine_streaming",
    "musicflamingo", "nemo_speechlm", "nemotron", "nemotron3_diarization", "neomme", "persimmon",
    "phi", "phi3", "phi4_multimodal", "qwen3_5_moe_text", "qwen3_5_text", "qwen3_next",
    "qwen4_exp_text", "recurrent_gemma", "solar_open", "stablelm", "step3p7", "zaya",
})
# Gemma 3 (text) keeps one RoPE dict per attention-layer type; bases if the config gives none.
_GEMMA3_BASES = {"full_attention": 1_000_000.0, "sliding_attention": 10_000.0}
LAYER_TYPES = ("full_attention", "sliding_attention")
_DEFAULT_BASE = 10_000.0
_MAX_FACTOR = 1e6
# Keys that say "this dict is the language model's config" (a multimodal config nests it).
_ROPE_KEYS = ("rope_theta", "rope_scaling", "rope_parameters", "rotary_emb_base", "head_dim",
              "hidden_size")



def _fraction(value, field: str) -> float:
    """A config field that is a share of the head: a real number in (0, 1]; 0 is an error, never
    a missing value."""
    value = _validate.real(value, f"config field '{field}'")
    if not 0 < value <= 1:
        raise ValueError(f"config field '{field}' must be in (0, 1], got {value}")
    return value

def _field(rope: dict, key: str, what: str):
    if key not in rope:
        raise ValueError(f"config field {key!r} is missing: rope_type {what!r} needs it")
    return rope[key]


def _factor(value, name: str) -> float:
    value = _validate.real(value, f"config field {name!r}")
    if not 1 <= value <= _MAX_FACTOR:
        raise ValueError(f"config field {name!r} must be at least 1 (new length / trained "
                         f"length) and at most {_MAX_FACTOR:g}, got {value}")
    return value


def _exponents(n_pairs: int, dim: int) -> torch.Tensor:
    """2i/dim for i < n_pairs, float64 [n_pairs]."""
    return torch.arange(0, 2 * n_pairs, 2, dtype=torch.float64) / dim


def _base_frequencies(base: float, dim: int) -> torch.Tensor:
    """ω_i = base^(−2i/dim) for the ceil(dim/2) pairs, float64 [ceil(dim/2)]."""
    return base ** -_exponents((dim + 1) // 2, dim)


def _default(p: dict, rope: dict, length: int | None) -> tuple[torch.Tensor, float]:
    dim = p["rotary_dim"] if p["model_type"] in PARTIAL_DEFAULT_MODEL_TYPES else p["head_dim"]
    return _base_frequencies(p["base"], dim), 1.0


def _linear(p: dict, rope: dict, length: int | None) -> tuple[torch.Tensor, float]:
    factor = _factor(_field(rope, "factor", "linear"), "factor")
    return _base_frequencies(p["base"], p["rotary_dim"]) / factor, 1.0


def _dynamic(p: dict, rope: dict, length: int | None) -> tuple[torch.Tensor, float]:
    factor = _factor(_field(rope, "factor", "dynamic"), "factor")
    trained = p["max_position_embeddings"]()
    dim = p["rotary_dim"]
    if dim <= 2:
        raise ValueError(f"rope_type 'dynamic' needs a rotary size above 2 (d/(d-2)), got {dim}")
    n = max(length or trained, trained)
    base = p["base"] * (factor * n / trained - (factor - 1)) ** (dim / (dim - 2))
    return _base_frequencies(base, dim), 1.0


def _yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """YaRN's attention temperature √(1/t) = 0.1·mscale·ln(factor) + 1 (1 when factor ≤ 1)."""
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def _yarn(p: dict, rope: dict, length: int | None) -> tuple[torch.Tensor, float]:
    factor = _field(rope, "factor", "yarn")
    original = p["original_max_position_embeddings"]()
    if factor is None:  # DeepSeek-style configs: the ratio of the two lengths
        factor = p["max_position_embeddings"]() / original
    factor = _factor(factor, "factor")
    scaling = rope.get("attention_factor")
    if scaling is not None:
        scaling = _validate.real(scaling, "config field 'attention_factor'", positive=True)
    else:
        mscale, mscale_all_dim = rope.get("mscale"), rope.get("mscale_all_dim")
        if mscale and mscale_all_dim:
            mscale = _validate.real(mscale, "config field 'mscale'")
            mscale_all_dim = _validate.real(mscale_all_dim, "config field 'mscale_all_dim'")
            scaling = _yarn_mscale(factor, mscale) / _yarn_mscale(factor, mscale_all_dim)
        else:
            scaling = _yarn_mscale(factor)
    # A missing or zero beta falls back to the paper's values, as transformers does.
    beta_fast = _validate.real(rope.get("beta_fast") or 32.0, "config field 'beta_fast'", positive=True)
    beta_slow = _validate.real(rope.get("beta_slow") or 1.0, "config field 'beta_slow'", positive=True)
    truncate = rope.get("truncate", True)  # an explicit null means no truncation, as in transformers
    truncate = truncate is not None and _validate.flag(truncate, "config field 'truncate'")
    base, dim = p["base"], p["rotary_dim"]

    def pair_turning(turns: float) -> float:
        # the (fractional) pair index whose wavelength fits `turns` times into the original length
        return dim * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_turning(beta_fast), pair_turning(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    omega = _base_frequencies(base, dim)
    # ramp: 0 for fast pairs (keep ω), 1 for slow pairs (ω / factor)
    ramp = ((torch.arange(omega.numel(), dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    return omega * (1 - ramp) + omega / factor * ramp, float(scaling)


def _factor_list(rope: dict, key: str, n_pairs: int) -> torch.Tensor:
    values = _field(rope, key, "longrope")
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"config field {key!r} must be a list of numbers, got {type(values).__name__}")
    if len(values) != n_pairs:
        raise ValueError(f"config field {key!r} must hold one factor per rotated pair "
                         f"({n_pairs}), got {len(values)}")
    values = [_validate.real(v, f"config field {key!r}", positive=True) for v in values]
    return torch.tensor(values, dtype=torch.float64)


def _longrope(p: dict, rope: dict, length: int | None) -> tuple[torch.Tensor, float]:
    original = p["original_max_position_embeddings"]()
    omega = _base_frequencies(p["base"], p["rotary_dim"])
    short = _factor_list(rope, "short_factor", omega.numel())
    long = _factor_list(rope, "long_factor", omega.numel())
    factor = rope.get("factor")
    factor = p["max_position_embeddings"]() / original if factor is None else \
        _factor(factor, "factor")
    scaling = rope.get("attention_factor")
    if scaling is not None:
        scaling = _validate.real(scaling, "config field 'attention_factor'", positive=True)
    elif factor <= 1:
        scaling = 1.0
    else:
        scaling = math.sqrt(1 + math.log(factor) / math.log(original))
    chosen = long if length is not None and length > original else short
    return omega / chosen, float(scaling)


def _llama3(p: dict, rope: dict, length: int | None) -> tuple[torch.Tensor, float]:
    factor = _factor(_field(rope, "factor", "llama3"), "factor")
    low = _validate.real(_field(rope, "low_freq_factor", "llama3"), "config field 'low_freq_factor'",
                         positive=True)
    high = _validate.real(_field(rope, "high_freq_factor", "llama3"),
                          "config field 'high_freq_factor'", positive=True)
    if high <= low:
        raise ValueError(f"config field 'high_freq_factor' must exceed low_freq_factor ({low}), "
                         f"got {high}")
    original = p["original_max_position_embeddings"]()
    omega = _base_frequencies(p["base"], p["rotary_dim"])
    wavelength = 2 * math.pi / omega
    blend = ((original / wavelength - low) / (high - low))  # 0 at L/low, 1 at L/high
    out = torch.where(wavelength > original / low, omega / factor, omega)
    middle = (wavelength >= original / high) & (wavelength <= original / low)
    return torch.where(middle, (1 - blend) * omega / factor + blend * omega, out), 1.0


def _proportional(p: dict, rope: dict, length: int | None) -> tuple[torch.Tensor, float]:
    factor = _factor(rope.get("factor", 1.0), "factor")
    head_dim = p["head_dim"]
    rotated = int(p["partial"] * head_dim // 2)
    omega = torch.zeros(head_dim // 2, dtype=torch.float64)
    omega[:rotated] = p["base"] ** -_exponents(rotated, head_dim)
    return omega / factor, 1.0


LLAMA3_BANDS = ("kept", "blended", "divided")


def llama3_bands(frequencies: torch.Tensor, *, original_max_len: int, low_freq_factor: float = 1.0,
                 high_freq_factor: float = 4.0) -> torch.Tensor:
    """Which of llama3's three bands each pair falls in, from its unscaled ω_i [d/2] (e.g.
    ``rope_frequencies(128, base=500_000)``). Returns long [d/2]: 0 "kept" (wavelength 2π/ω_i
    below original_max_len / high_freq_factor: ω_i stays), 1 "blended" (between the two
    thresholds, both included: a linear blend of ω_i and ω_i/factor in L/wavelength), 2
    "divided" (wavelength above original_max_len / low_freq_factor: ω_i / factor). The same
    thresholds as the "llama3" rule of rope_frequencies_from_config (LLAMA3_BANDS names them).
    """
    frequencies = _validate.float_tensor(frequencies, "frequencies")
    if frequencies.ndim != 1 or frequencies.numel() == 0 or not (frequencies > 0).all():
        raise ValueError(f"frequencies must be a 1-D tensor of positive ω_i, got shape "
                         f"{tuple(frequencies.shape)}")
    original = _validate.integer(original_max_len, "original_max_len", minimum=1, maximum=10**9)
    low = _validate.real(low_freq_factor, "low_freq_factor", positive=True)
    high = _validate.real(high_freq_factor, "high_freq_factor", positive=True)
    if high <= low:
        raise ValueError(f"high_freq_factor must exceed low_freq_factor ({low}), got {high}")
    wavelength = 2 * math.pi / frequencies.to(torch.float64)
    bands = torch.ones_like(wavelength, dtype=torch.long)
    bands[wavelength < original / high] = 0
    bands[wavelength > original / low] = 2
    return bands


_RULES = {"default": _default, "linear": _linear, "dynamic": _dynamic, "yarn": _yarn,
          "longrope": _longrope, "llama3": _llama3, "proportional": _proportional}


def _language_config(config: dict) -> dict:
    """The language model's part: a multimodal config (Gemma 3 4B+) nests it in text_config."""
    text = config.get("text_config")
    if isinstance(text, dict) and not any(k in config for k in _ROPE_KEYS):
        return text
    return config


def _rope_dict(config: dict, model_type: str, layer_type: str | None) -> tuple[dict, bool]:
    """(the RoPE dict the rule reads, whether it came from a per-layer-type config)."""
    scaling, params = config.get("rope_scaling"), config.get("rope_parameters")
    for key, value in (("rope_scaling", scaling), ("rope_parameters", params)):
        if value is not None and not isinstance(value, dict):
            raise TypeError(f"config field {key!r} must be a dict, got {type(value).__name__}")
    names = config.get("layer_types") or LAYER_TYPES
    nested = isinstance(params, dict) and any(k in names for k in params)
    gemma3 = model_type == "gemma3_text" or "rope_local_base_freq" in config
    if nested or gemma3:
        if layer_type is None:
            raise ValueError("layer_type must be given for this config: it has one RoPE per "
                             f"attention-layer type ({', '.join(LAYER_TYPES)})")
        layers = {k: dict(v) for k, v in (params or {}).items() if isinstance(v, dict)} \
            if nested else {}
        if gemma3:
            for name in LAYER_TYPES:
                layers.setdefault(name, {"rope_type": "default"})
            if scaling:  # v4 Gemma 3: rope_scaling belongs to the global (full-attention) layers
                layers["full_attention"].update(scaling)
            layers["full_attention"].setdefault(
                "rope_theta", config.get("rope_theta", _GEMMA3_BASES["full_attention"]))
            layers["sliding_attention"].setdefault(
                "rope_theta", config.get("rope_local_base_freq", _GEMMA3_BASES["sliding_attention"]))
        if layer_type not in layers:
            raise ValueError(f"layer_type must be one of {sorted(layers)} for this config, "
                             f"got {layer_type!r}")
        return layers[layer_type], True
    if layer_type is not None:
        raise ValueError(f"layer_type is only for configs with one RoPE per layer type (Gemma 3); "
                         f"this config has one RoPE for all layers, got layer_type={layer_type!r}")
    return dict(scaling or params or {}), False


def _rope_type(rope: dict, model_type: str) -> str:
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind == "mrope":  # Qwen2-VL: the frequencies are the default ones, split over 3 axes
        kind = "default"
    if model_type == "phi3" and kind in ("su", "yarn"):  # Phi-3's older names for longrope
        kind = "longrope"
    if kind not in _RULES:
        raise ValueError(f"config field 'rope_type' must be one of {', '.join(ROPE_TYPES)}, "
                         f"got {kind!r}")
    return kind


def _head_dim(config: dict, model_type: str, layer_type: str | None) -> int:
    if layer_type == "full_attention" and (model_type == "gemma4_text" or "global_head_dim" in config):
        value = config.get("global_head_dim", 512)  # Gemma 4: wider heads in the global layers
        return _validate.integer(value, "config field 'global_head_dim'", minimum=1)
    for key in ("head_dim", "qk_rope_head_dim"):
        if config.get(key) is not None:
            return _validate.integer(config[key], f"config field {key!r}", minimum=1)
    if config.get("hidden_size") is None or config.get("num_attention_heads") is None:
        raise ValueError("config field 'head_dim' is missing, and so is 'hidden_size' or "
                         "'num_attention_heads' to derive it from")
    hidden = _validate.integer(config["hidden_size"], "config field 'hidden_size'", minimum=1)
    heads = _validate.integer(config["num_attention_heads"], "config field 'num_attention_heads'",
                              minimum=1)
    if hidden < heads:
        raise ValueError(f"config field 'hidden_size' ({hidden}) must be at least "
                         f"num_attention_heads ({heads})")
    return hidden // heads


def rope_frequencies_from_config(config: dict, *, length: int | None = None,
                                 layer_type: str | None = None) -> tuple[torch.Tensor, float]:
    """RoPE's frequencies and attention scaling as a model's ``config.json`` defines them.

    ``config`` is the parsed config.json (v4 ``rope_theta`` + ``rope_scaling``, or v5
    ``rope_parameters``; see the module docstring for every key read and which wins). ``length``
    is the number of positions in use (largest position id + 1): "dynamic" is evaluated there,
    and "longrope" takes its long factors only when ``length`` > original_max_position_embeddings
    (None: at or below the trained length, i.e. short factors and dynamic = default).

    Gemma 3 keeps two RoPEs: ``layer_type="full_attention"`` gives the global layers (base
    rope_theta, 10⁶, with the config's scaling) and ``"sliding_attention"`` the local ones (base
    rope_local_base_freq, 10⁴, never scaled); such configs (also v5 per-layer-type
    ``rope_parameters``, e.g. Gemma 4, whose global layers rotate heads of ``global_head_dim``)
    raise a ValueError naming layer_type when it is missing; a multimodal config's
    ``text_config`` is read when the top level holds no RoPE keys.

    Returns ``(inv_freq, attention_scaling)``: inv_freq float64 [rotary_dim/2] with
    rotary_dim = int(head_dim · partial_rotary_factor) (the whole head_dim for the "default"
    rule of classes outside PARTIAL_DEFAULT_MODEL_TYPES; head_dim/2 entries, the un-rotated
    pairs at 0, for "proportional"), and the factor transformers multiplies cos and sin by
    (1.0 except yarn and longrope). DeepSeek-V3's softmax temperature (mscale_all_dim applied to
    the attention scale) lives in its attention module, not here.
    """
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict (a parsed config.json), got {type(config).__name__}")
    if length is not None:
        length = _validate.integer(length, "length", minimum=1)
    if layer_type is not None and not isinstance(layer_type, str):
        raise TypeError(f"layer_type must be a string or None, got {type(layer_type).__name__}")
    config = _language_config(config)
    model_type = config.get("model_type", "")
    if not isinstance(model_type, str):
        raise TypeError(f"config field 'model_type' must be a string, got {type(model_type).__name__}")
    rope, nested = _rope_dict(config, model_type, layer_type)
    kind = _rope_type(rope, model_type)
    if model_type == "gpt_neox":  # GPT-NeoX's own names, read before the generic ones
        rope.setdefault("rope_theta", config.get("rotary_emb_base", _DEFAULT_BASE))
        if config.get("partial_rotary_factor") is not None:  # unread, as in transformers, but
            _fraction(config["partial_rotary_factor"], "partial_rotary_factor")  # 0 is no default
        pct = config.get("rotary_pct")
        rope.setdefault("partial_rotary_factor", 0.25 if pct is None else _fraction(pct, "rotary_pct"))
    rope.setdefault("rope_theta", config.get("rope_theta", _DEFAULT_BASE))
    if config.get("partial_rotary_factor") is not None:
        rope.setdefault("partial_rotary_factor", config["partial_rotary_factor"])
    base = _validate.real(rope["rope_theta"], "config field 'rope_theta'", positive=True)
    if base <= 1:
        raise ValueError(f"config field 'rope_theta' must exceed 1, got {base}")
    partial = rope.get("partial_rotary_factor")
    partial = 1.0 if partial is None else _fraction(partial, "partial_rotary_factor")
    head_dim = _head_dim(config, model_type, layer_type)
    rotary_dim = int(head_dim * partial)
    if rotary_dim < 2:
        raise ValueError(f"config field 'partial_rotary_factor' ({partial}) leaves fewer than 2 of "
                         f"head_dim={head_dim} features to rotate")
    _validate.size_budget(head_dim, "config field 'head_dim'")

    def max_position_embeddings() -> int:
        value = _field(config, "max_position_embeddings", kind)
        return _validate.integer(value, "config field 'max_position_embeddings'", minimum=1)

    def original_max_position_embeddings() -> int:
        # top level first (Phi-3's class always has one: 4096), then the dict, then the max
        if not nested and (config.get("original_max_position_embeddings") is not None
                           or model_type == "phi3"):
            value, name = config.get("original_max_position_embeddings", 4096), "top-level"
        elif rope.get("original_max_position_embeddings") is not None:
            value, name = rope["original_max_position_embeddings"], "rope"
        else:
            return max_position_embeddings()
        return _validate.integer(value, f"config field 'original_max_position_embeddings' "
                                        f"({name})", minimum=1)

    p = {"model_type": model_type, "base": base, "partial": partial, "head_dim": head_dim,
         "rotary_dim": rotary_dim, "max_position_embeddings": max_position_embeddings,
         "original_max_position_embeddings": original_max_position_embeddings}
    return _RULES[kind](p, rope, length)
