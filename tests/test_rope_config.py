"""rope_frequencies_from_config against Hugging Face transformers (the test-only reference).

The configs below are written out from the models' published config.json files (only the keys
that matter here, plus the sizes the config classes need); nothing is downloaded. transformers
builds its own config class from the same dict, and its answer is the model class's rotary
embedding module (for "default", which differs between classes) or ``ROPE_INIT_FUNCTIONS[type]``
at the same length. transformers computes in float32, so "equal" is within 1e-6 relative.
"""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3RotaryEmbedding  # noqa: E402
from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding  # noqa: E402
from transformers.models.gemma4.modeling_gemma4 import Gemma4TextRotaryEmbedding  # noqa: E402
from transformers.models.glm4_moe.modeling_glm4_moe import Glm4MoeRotaryEmbedding  # noqa: E402
from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXRotaryEmbedding  # noqa: E402
from transformers.models.gpt_oss.modeling_gpt_oss import GptOssRotaryEmbedding  # noqa: E402
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding  # noqa: E402
from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding  # noqa: E402
from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding  # noqa: E402
from transformers.models.qwen3.modeling_qwen3 import Qwen3RotaryEmbedding  # noqa: E402
from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextRotaryEmbedding  # noqa: E402

from course_utils import llama3_bands, rope_frequencies, rope_frequencies_from_config  # noqa: E402
from course_utils.rope_config import PARTIAL_DEFAULT_MODEL_TYPES, ROPE_TYPES  # noqa: E402

RTOL = 1e-6

# --- real configs (published config.json values) ----------------------------------------------

LLAMA_3_1_8B = {  # meta-llama/Llama-3.1-8B
    "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "vocab_size": 128256,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
}
LLAMA_3_2_1B = {  # meta-llama/Llama-3.2-1B
    "model_type": "llama", "hidden_size": 2048, "head_dim": 64, "intermediate_size": 8192,
    "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
    "tie_word_embeddings": True, "vocab_size": 128256,
    "rope_scaling": {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
}
QWEN3_8B = {  # Qwen/Qwen3-8B (rope_scaling null: plain RoPE, base 10⁶)
    "model_type": "qwen3", "hidden_size": 4096, "head_dim": 128, "intermediate_size": 12288,
    "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8,
    "max_position_embeddings": 40960, "rms_norm_eps": 1e-06, "rope_theta": 1000000, "rope_scaling": None,
    "vocab_size": 151936,
}
# The YaRN setting Qwen's model card tells users to add for 131,072 tokens.
QWEN3_8B_YARN = dict(QWEN3_8B, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                             "original_max_position_embeddings": 32768})
# microsoft/Phi-3-mini-128k-instruct. Its sizes, base and lengths are the published ones, but the
# two 48-value factor lists below are SYNTHETIC (plausible shapes: short ≈ 1 rising slowly, long
# rising from 1 to ≈ 64) — the exact published lists are not reproduced here.
PHI_3_MINI_128K = {
    "model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "max_position_embeddings": 131072,
    "original_max_position_embeddings": 4096, "rope_theta": 10000.0, "sliding_window": 262144,
    "vocab_size": 32064,
    "rope_scaling": {"type": "longrope",
                     "short_factor": [round(1.0 + 0.25 * (i / 47) ** 3, 4) for i in range(48)],
                     "long_factor": [round(1.0 + 63.0 / (1 + math.exp(-(i - 20) / 3)), 4) for i in range(48)]},
}
GEMMA_3_1B = {  # google/gemma-3-1b-pt: text only, no scaling
    "model_type": "gemma3_text", "hidden_size": 1152, "head_dim": 256, "intermediate_size": 6912,
    "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
    "max_position_embeddings": 32768, "rope_local_base_freq": 10000, "rope_scaling": None,
    "rope_theta": 1000000, "sliding_window": 512, "query_pre_attn_scalar": 256, "vocab_size": 262144,
}
GEMMA_3_4B = {  # google/gemma-3-4b-it: the language model's config nests in text_config
    "model_type": "gemma3", "mm_tokens_per_image": 256,
    "text_config": {
        "model_type": "gemma3_text", "hidden_size": 2560, "head_dim": 256, "intermediate_size": 10240,
        "num_attention_heads": 8, "num_hidden_layers": 34, "num_key_value_heads": 4,
        "max_position_embeddings": 131072, "rope_local_base_freq": 10000.0, "rope_theta": 1000000.0,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024,
        "query_pre_attn_scalar": 256,
    },
}
DEEPSEEK_V3 = {  # deepseek-ai/DeepSeek-V3: MLA, 64 rotated features per head, YaRN ×40
    "model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
    "moe_intermediate_size": 2048, "num_attention_heads": 128, "num_key_value_heads": 128,
    "num_hidden_layers": 61, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "max_position_embeddings": 163840,
    "rope_theta": 10000, "vocab_size": 129280,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                     "original_max_position_embeddings": 4096, "type": "yarn"},
}
PYTHIA_160M = {  # EleutherAI/pythia-160m: GPT-NeoX, a quarter of each head rotated
    "model_type": "gpt_neox", "hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12,
    "num_hidden_layers": 12, "max_position_embeddings": 2048, "rotary_pct": 0.25,
    "rotary_emb_base": 10000, "use_parallel_residual": True, "vocab_size": 50304,
}
# 2025-26 flagships (lesson 15's frontier table)
GPT_OSS_120B = {  # openai/gpt-oss-120b: YaRN x32 from 4,096, ramp ends not rounded
    "model_type": "gpt_oss", "hidden_size": 2880, "head_dim": 64, "num_attention_heads": 64,
    "num_key_value_heads": 8, "num_hidden_layers": 36, "max_position_embeddings": 131072,
    "rope_theta": 150000.0, "sliding_window": 128,
    "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                     "truncate": False, "original_max_position_embeddings": 4096},
}
GLM_4_5 = {  # zai-org/GLM-4.5: half of each 128-wide head rotated
    "model_type": "glm4_moe", "hidden_size": 5120, "head_dim": 128, "num_attention_heads": 96,
    "num_key_value_heads": 8, "partial_rotary_factor": 0.5, "max_position_embeddings": 131072,
    "rope_theta": 1000000.0, "rope_scaling": None,
}
QWEN3_NEXT_80B = {  # Qwen/Qwen3-Next-80B-A3B-Instruct: a quarter of each 256-wide head rotated
    "model_type": "qwen3_next", "hidden_size": 2048, "head_dim": 256, "num_attention_heads": 16,
    "num_key_value_heads": 2, "partial_rotary_factor": 0.25, "max_position_embeddings": 262144,
    "rope_theta": 10000000.0, "rope_scaling": None, "full_attention_interval": 4,
}
GEMMA_4_26B = {  # google/gemma-4-26B-A4B: "proportional" global layers with 512-wide heads
    "model_type": "gemma4_text", "hidden_size": 2816, "head_dim": 256, "global_head_dim": 512,
    "num_attention_heads": 16, "num_key_value_heads": 8, "max_position_embeddings": 262144,
    "sliding_window": 1024,
    "rope_parameters": {"full_attention": {"rope_type": "proportional", "rope_theta": 1e6,
                                           "partial_rotary_factor": 0.25},
                        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
}
QWEN2_VL_LIKE = {  # Qwen2-VL-2B's text sizes; "mrope" splits the default frequencies over 3 axes
    "model_type": "qwen2_vl", "hidden_size": 1536, "num_attention_heads": 12, "num_hidden_layers": 2,
    "max_position_embeddings": 32768, "rope_theta": 1000000.0,
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
}

CLASSES = {  # model_type: (config class, rotary-embedding module)
    "llama": (transformers.LlamaConfig, LlamaRotaryEmbedding),
    "qwen3": (transformers.Qwen3Config, Qwen3RotaryEmbedding),
    "phi3": (transformers.Phi3Config, Phi3RotaryEmbedding),
    "gemma3_text": (transformers.Gemma3TextConfig, Gemma3RotaryEmbedding),
    "deepseek_v3": (transformers.DeepseekV3Config, DeepseekV3RotaryEmbedding),
    "gpt_neox": (transformers.GPTNeoXConfig, GPTNeoXRotaryEmbedding),
    "gpt_oss": (transformers.GptOssConfig, GptOssRotaryEmbedding),
    "glm4_moe": (transformers.Glm4MoeConfig, Glm4MoeRotaryEmbedding),
    "qwen3_next": (transformers.Qwen3NextConfig, Qwen3NextRotaryEmbedding),
    "gemma4_text": (transformers.Gemma4TextConfig, Gemma4TextRotaryEmbedding),
    "qwen2_vl": (transformers.Qwen2VLTextConfig, Qwen2VLRotaryEmbedding),
}


def reference(config: dict, length: int | None = None, layer_type: str | None = None):
    """transformers' (inv_freq float64, attention scaling, rope_type) for a config dict."""
    config = config.get("text_config", config)
    config_class, rotary = CLASSES[config["model_type"]]
    built = config_class(**copy.deepcopy(config))
    rope = built.rope_parameters[layer_type] if layer_type else built.rope_parameters
    if rope["rope_type"] == "default":  # the model class's own computation, in its module
        module = rotary(built)
        prefix = f"{layer_type}_" if layer_type else ""
        inv_freq = getattr(module, f"{prefix}inv_freq")
        scaling = getattr(module, f"{prefix}attention_scaling")
    else:
        extra = {"layer_type": layer_type} if layer_type else {}
        inv_freq, scaling = ROPE_INIT_FUNCTIONS[rope["rope_type"]](built, "cpu", seq_len=length, **extra)
    return inv_freq.double(), float(scaling), rope["rope_type"]


def assert_matches(config: dict, length: int | None = None, layer_type: str | None = None) -> str:
    ours, our_scaling = rope_frequencies_from_config(config, length=length, layer_type=layer_type)
    theirs, their_scaling, kind = reference(config, length, layer_type)
    assert ours.dtype == torch.float64
    assert ours.shape == theirs.shape
    torch.testing.assert_close(ours, theirs, rtol=RTOL, atol=0)
    assert our_scaling == pytest.approx(their_scaling, rel=RTOL)
    return kind


REAL = [  # (name, config, lengths, layer types)
    ("Llama 3.1 8B", LLAMA_3_1_8B, [None], [None]),
    ("Llama 3.2 1B", LLAMA_3_2_1B, [None], [None]),
    ("Qwen3 8B", QWEN3_8B, [None], [None]),
    ("Qwen3 8B + YaRN", QWEN3_8B_YARN, [None], [None]),
    ("Phi-3 mini 128k", PHI_3_MINI_128K, [None, 4096, 4097, 131072], [None]),
    ("Gemma 3 1B", GEMMA_3_1B, [None], ["full_attention", "sliding_attention"]),
    ("Gemma 3 4B", GEMMA_3_4B, [None], ["full_attention", "sliding_attention"]),
    ("DeepSeek-V3", DEEPSEEK_V3, [None], [None]),
    ("Pythia 160M", PYTHIA_160M, [None], [None]),
    ("gpt-oss 120B", GPT_OSS_120B, [None], [None]),
    ("GLM-4.5", GLM_4_5, [None], [None]),
    ("Qwen3-Next 80B", QWEN3_NEXT_80B, [None], [None]),
    ("Gemma 4 26B", GEMMA_4_26B, [None], ["full_attention", "sliding_attention"]),
    ("Qwen2-VL-like", QWEN2_VL_LIKE, [None], [None]),
]


@pytest.mark.parametrize("name, config, lengths, layer_types", REAL, ids=[r[0] for r in REAL])
def test_real_configs_match_transformers(name, config, lengths, layer_types):
    for length in lengths:
        for layer_type in layer_types:
            assert_matches(config, length, layer_type)


def test_real_config_shapes_and_values():
    assert rope_frequencies_from_config(LLAMA_3_1_8B)[0].shape == (64,)
    assert rope_frequencies_from_config(DEEPSEEK_V3)[0].shape == (32,)  # qk_rope_head_dim 64
    assert rope_frequencies_from_config(PYTHIA_160M)[0].shape == (8,)  # 0.25 · 64 rotated
    full, scaling = rope_frequencies_from_config(GEMMA_4_26B, layer_type="full_attention")
    assert full.shape == (256,) and (full[:64] > 0).all() and (full[64:] == 0).all()
    # DeepSeek-V3: mscale == mscale_all_dim, so the cos/sin factor is 1 (the temperature is elsewhere)
    assert rope_frequencies_from_config(DEEPSEEK_V3)[1] == 1.0
    assert rope_frequencies_from_config(QWEN3_8B_YARN)[1] == pytest.approx(0.1 * math.log(4) + 1)


def _llama(**overrides) -> dict:
    config = {"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 2,
              "max_position_embeddings": 32768, "rope_theta": 500000.0}
    config.update(overrides)
    return config


YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}
SHORT = [1.0 + 0.01 * i for i in range(64)]
LONG = [1.0 + 1.3 * i for i in range(64)]
_NEOX = {"model_type": "gpt_neox", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 2,
         "max_position_embeddings": 2048}
_PHI = {"model_type": "phi3", "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 2,
        "max_position_embeddings": 131072}
_GEMMA3 = {"model_type": "gemma3_text", "hidden_size": 1152, "head_dim": 256, "num_attention_heads": 4,
           "num_key_value_heads": 1, "num_hidden_layers": 6, "max_position_embeddings": 32768}

# Every rule, option and precedence case, each with the lengths it is evaluated at.
CASES = {
    "linear": (_llama(rope_scaling={"rope_type": "linear", "factor": 4.0}), [None]),
    "dynamic": (_llama(max_position_embeddings=2048, rope_scaling={"rope_type": "dynamic", "factor": 4.0}),
                [None, 1000, 2048, 2049, 5000, 100000]),
    "dynamic, partial": (_llama(max_position_embeddings=2048, partial_rotary_factor=0.5,
                                rope_scaling={"type": "dynamic", "factor": 2.0}), [None, 9000]),
    "yarn": (_llama(rope_scaling=dict(YARN)), [None]),
    "yarn, factor None (length ratio)": (_llama(rope_scaling=dict(YARN, factor=None)), [None]),
    "yarn, attention_factor": (_llama(rope_scaling=dict(YARN, attention_factor=0.8)), [None]),
    "yarn, truncate False": (_llama(rope_scaling=dict(YARN, truncate=False)), [None]),
    "yarn, truncate null (no truncation)": (_llama(rope_scaling=dict(YARN, truncate=None)), [None]),
    "yarn, betas": (_llama(rope_scaling=dict(YARN, beta_fast=16, beta_slow=2)), [None]),
    "yarn, beta 0 means default": (_llama(rope_scaling=dict(YARN, beta_fast=0, beta_slow=0)), [None]),
    "yarn, mscale alone ignored": (_llama(rope_scaling=dict(YARN, mscale=0.707)), [None]),
    "yarn, mscale_all_dim alone ignored": (_llama(rope_scaling=dict(YARN, mscale_all_dim=0.707)), [None]),
    "yarn, mscale ratio": (_llama(rope_scaling=dict(YARN, mscale=0.707, mscale_all_dim=1.0)), [None]),
    "yarn, head_dim": (_llama(head_dim=96, rope_scaling=dict(YARN)), [None]),
    "yarn, partial": (_llama(partial_rotary_factor=0.5, rope_scaling=dict(YARN)), [None]),
    "yarn, top-level original wins": (_llama(original_max_position_embeddings=4096,
                                             rope_scaling=dict(YARN)), [None]),
    "longrope": (_llama(rope_scaling={"rope_type": "longrope", "short_factor": SHORT, "long_factor": LONG,
                                      "original_max_position_embeddings": 4096}),
                 [None, 4096, 4097, 20000]),
    "longrope, factor": (_llama(rope_scaling={"rope_type": "longrope", "short_factor": SHORT,
                                              "long_factor": LONG, "factor": 8.0, "attention_factor": None,
                                              "original_max_position_embeddings": 4096}), [None, 5000]),
    "longrope, attention_factor": (_llama(rope_scaling={"rope_type": "longrope", "short_factor": SHORT,
                                                        "long_factor": LONG, "attention_factor": 1.3,
                                                        "original_max_position_embeddings": 4096}), [None]),
    "longrope, Phi-3 original in the dict loses": (
        dict(_PHI, rope_scaling={"type": "longrope", "short_factor": SHORT, "long_factor": LONG,
                                 "original_max_position_embeddings": 8192}), [None, 5000, 9000]),
    "llama3": (_llama(rope_scaling=dict(LLAMA3)), [None]),
    "llama3, partial": (_llama(partial_rotary_factor=0.5, rope_scaling=dict(LLAMA3)), [None]),
    "llama3, top-level original wins": (_llama(original_max_position_embeddings=2048,
                                               rope_scaling=dict(LLAMA3)), [None]),
    "llama3, other bands": (_llama(rope_scaling=dict(LLAMA3, low_freq_factor=2.0, high_freq_factor=16.0)),
                            [None]),
    "proportional, one dict": (_llama(rope_parameters={"rope_type": "proportional", "rope_theta": 1e6,
                                                       "partial_rotary_factor": 0.5, "factor": 2.0}),
                               [None]),
    "default, no base given (10⁴)": ({k: v for k, v in _llama().items() if k != "rope_theta"}, [None]),
    "default, dict base wins": (_llama(rope_parameters={"rope_type": "default", "rope_theta": 1e4}), [None]),
    "default, Llama ignores partial": (_llama(partial_rotary_factor=0.5), [None]),
    "rope_scaling wins over rope_parameters": (
        _llama(rope_scaling={"rope_type": "linear", "factor": 2.0},
               rope_parameters={"rope_type": "linear", "factor": 4.0, "rope_theta": 1e4}), [None]),
    "partial in the dict wins": (_llama(partial_rotary_factor=0.5, rope_scaling={
        "rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.25}), [None]),
    "v5 rope_parameters": ({k: v for k, v in _llama().items() if k != "rope_theta"} | {
        "rope_parameters": dict(YARN, rope_theta=1e6)}, [None]),
    "GPT-NeoX defaults (rotary_pct 0.25)": (dict(_NEOX), [None]),
    "GPT-NeoX ignores top-level rope_theta": (dict(_NEOX, rope_theta=5e5, rotary_pct=0.5), [None]),
    "GPT-NeoX, linear": (dict(_NEOX, rotary_pct=0.5, rope_scaling={"type": "linear", "factor": 2.0}), [None]),
    "GPT-NeoX, v5": (dict(_NEOX, rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                                                  "partial_rotary_factor": 1.0}), [None]),
    "Phi-3 default honours partial": (dict(_PHI, partial_rotary_factor=0.5), [None]),
    "MLA: an explicit head_dim wins over qk_rope_head_dim": (dict(DEEPSEEK_V3, head_dim=192), [None]),
}
NESTED = {  # per-layer-type configs, each checked for both layer types
    "Gemma 3, no RoPE keys (class bases)": dict(_GEMMA3),
    "Gemma 3, v5 per-layer dicts": dict(_GEMMA3, rope_parameters={
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}),
    "Gemma 3, v5 dicts + top-level bases": dict(_GEMMA3, rope_theta=5e5, rope_local_base_freq=2e4,
                                               rope_parameters={"full_attention": dict(YARN),
                                                                "sliding_attention": {"rope_type": "default"}}),
}


@pytest.mark.parametrize("name", CASES)
def test_rules_and_precedence_match_transformers(name):
    config, lengths = CASES[name]
    for length in lengths:
        assert_matches(config, length)


@pytest.mark.parametrize("name", NESTED)
def test_per_layer_type_configs_match_transformers(name):
    for layer_type in ("full_attention", "sliding_attention"):
        assert_matches(NESTED[name], layer_type=layer_type)


def test_every_rope_type_of_transformers_is_covered_and_compared():
    kinds = {reference(config, lengths[-1])[2] for config, lengths in CASES.values()}
    kinds |= {reference(GEMMA_4_26B, layer_type="full_attention")[2]}
    assert set(ROPE_INIT_FUNCTIONS) | {"default"} == set(ROPE_TYPES)
    assert kinds == set(ROPE_TYPES)


def test_module_forward_evaluates_at_length():
    """``length`` means what the rotary module's forward sees: the largest position id + 1."""
    dynamic = _llama(max_position_embeddings=2048, rope_scaling={"rope_type": "dynamic", "factor": 4.0})
    longrope = _llama(rope_scaling={"rope_type": "longrope", "short_factor": SHORT, "long_factor": LONG,
                                    "original_max_position_embeddings": 4096})
    for config, length in ((dynamic, 5000), (longrope, 4097), (longrope, 4096)):
        module = LlamaRotaryEmbedding(transformers.LlamaConfig(**copy.deepcopy(config)))
        module(torch.zeros(1), torch.arange(length)[None])
        ours, _ = rope_frequencies_from_config(config, length=length)
        torch.testing.assert_close(ours, module.inv_freq.double(), rtol=RTOL, atol=0)


def _default_rule_honours_partial() -> dict[str, bool]:
    """{model_type: whether its compute_default_rope_parameters reads partial_rotary_factor}."""
    models = Path(transformers.__file__).parent / "models"
    found = {}
    for modeling in sorted(models.glob("*/modeling_*.py")):
        source = modeling.read_text()
        for match in re.finditer(r"def compute_default_rope_parameters\(\s*config: (\w+)(.*?)return inv_freq",
                                 source, re.S):
            config_class, body = match.groups()
            configuration = modeling.with_name(modeling.name.replace("modeling_", "configuration_"))
            if not configuration.exists():
                continue
            text = configuration.read_text()
            cls = re.search(rf"^class {config_class}\b.*?(?=^class |\Z)", text, re.S | re.M)
            model_type = cls and re.search(r'^\s+model_type = "(\w+)"', cls.group(0), re.M)
            if model_type:
                found[model_type.group(1)] = "partial_rotary_factor" in body
    return found


def test_partial_default_model_types_are_read_from_transformers():
    found = _default_rule_honours_partial()
    assert len(found) > 100
    assert {t for t, honours in found.items() if honours} == set(PARTIAL_DEFAULT_MODEL_TYPES)


# --- properties ---------------------------------------------------------------------------------

def _plain(config: dict) -> torch.Tensor:
    unscaled = {k: v for k, v in config.items() if k != "rope_scaling"}
    return rope_frequencies_from_config(unscaled)[0]


def test_llama3_bands():
    for config in (LLAMA_3_1_8B, LLAMA_3_2_1B):
        rope = config["rope_scaling"]
        scaled, scaling = rope_frequencies_from_config(config)
        plain = _plain(config)
        wavelength = 2 * math.pi / plain
        original = rope["original_max_position_embeddings"]
        short = wavelength < original / rope["high_freq_factor"]
        long = wavelength > original / rope["low_freq_factor"]
        assert short.sum() > 0 and long.sum() > 0 and (~short & ~long).sum() > 0
        torch.testing.assert_close(scaled[short], plain[short], rtol=1e-12, atol=0)
        torch.testing.assert_close(scaled[long], plain[long] / rope["factor"], rtol=1e-12, atol=0)
        middle = ~short & ~long
        assert (scaled[middle] < plain[middle]).all()
        assert (scaled[middle] > plain[middle] / rope["factor"]).all()
        assert scaling == 1.0
    # the lesson's count: 128-dim head, base 500,000, factor 8. Pair i has wavelength
    # 2π·500000^(i/64): below 2048 for i < 64·ln(2048/2π)/ln(500000) = 28.2, at most 8192 for
    # i < 64·ln(8192/2π)/ln(500000) = 34.98, so 29 pairs kept, 6 blended, 29 divided by 8
    wavelength = 2 * math.pi / _plain(LLAMA_3_1_8B)
    assert [(wavelength < 2048).sum().item(), ((wavelength >= 2048) & (wavelength <= 8192)).sum().item(),
            (wavelength > 8192).sum().item()] == [29, 6, 29]


def test_linear_divides_every_frequency():
    config = _llama(rope_scaling={"rope_type": "linear", "factor": 4.0})
    torch.testing.assert_close(rope_frequencies_from_config(config)[0], _plain(config) / 4, rtol=1e-12, atol=0)


def test_dynamic_equals_default_within_the_trained_length():
    config = _llama(max_position_embeddings=2048, rope_scaling={"rope_type": "dynamic", "factor": 4.0})
    plain = _plain(config)
    for length in (None, 1, 2000, 2048):
        torch.testing.assert_close(rope_frequencies_from_config(config, length=length)[0], plain,
                                   rtol=1e-12, atol=0)
    longer = rope_frequencies_from_config(config, length=8192)[0]
    assert longer[0] == plain[0] and (longer[1:] < plain[1:]).all()
    # at n = L·s the slowest pair is divided by exactly factor·n/L − (factor − 1) = s' (NTK-aware)
    s = 4.0 * 8192 / 2048 - 3.0
    assert longer[-1].item() == pytest.approx(plain[-1].item() / s, rel=1e-12)


def test_yarn_attention_scaling_and_bands():
    config = _llama(rope_scaling=dict(YARN))
    inv_freq, scaling = rope_frequencies_from_config(config)
    assert scaling == pytest.approx(0.1 * math.log(4.0) + 1, rel=1e-12)
    plain = _plain(config)
    turns = 8192 * plain / (2 * math.pi)  # turns of each pair within the original length
    torch.testing.assert_close(inv_freq[turns > 33], plain[turns > 33], rtol=1e-12, atol=0)
    torch.testing.assert_close(inv_freq[turns < 0.9], plain[turns < 0.9] / 4, rtol=1e-12, atol=0)
    mscaled = _llama(rope_scaling=dict(YARN, mscale=0.707, mscale_all_dim=1.0))
    expected = (0.1 * 0.707 * math.log(4) + 1) / (0.1 * math.log(4) + 1)
    assert rope_frequencies_from_config(mscaled)[1] == pytest.approx(expected, rel=1e-12)
    given = _llama(rope_scaling=dict(YARN, attention_factor=0.5))
    assert rope_frequencies_from_config(given)[1] == 0.5
    # factor None: the ratio of max_position_embeddings to the original length, 32768 / 8192
    ratio = _llama(rope_scaling=dict(YARN, factor=None))
    torch.testing.assert_close(rope_frequencies_from_config(ratio)[0], inv_freq, rtol=1e-12, atol=0)


def test_longrope_short_and_long_factors():
    inv_short, scaling = rope_frequencies_from_config(PHI_3_MINI_128K)
    plain = _plain(PHI_3_MINI_128K)
    rope = PHI_3_MINI_128K["rope_scaling"]
    short = torch.tensor(rope["short_factor"], dtype=torch.float64)
    long = torch.tensor(rope["long_factor"], dtype=torch.float64)
    for length in (None, 1, 4096):
        torch.testing.assert_close(rope_frequencies_from_config(PHI_3_MINI_128K, length=length)[0],
                                   plain / short, rtol=1e-12, atol=0)
    for length in (4097, 131072):
        torch.testing.assert_close(rope_frequencies_from_config(PHI_3_MINI_128K, length=length)[0],
                                   plain / long, rtol=1e-12, atol=0)
    assert scaling == pytest.approx(math.sqrt(1 + math.log(131072 / 4096) / math.log(4096)), rel=1e-12)


def test_gemma3_local_and_global_layers():
    full, _ = rope_frequencies_from_config(GEMMA_3_4B, layer_type="full_attention")
    local, _ = rope_frequencies_from_config(GEMMA_3_4B, layer_type="sliding_attention")
    exponents = torch.arange(0, 256, 2, dtype=torch.float64) / 256
    torch.testing.assert_close(full, 1e6 ** -exponents / 8, rtol=1e-12, atol=0)
    torch.testing.assert_close(local, 1e4 ** -exponents, rtol=1e-12, atol=0)
    nested = rope_frequencies_from_config(GEMMA_3_4B["text_config"], layer_type="full_attention")[0]
    assert torch.equal(nested, full)


def test_v4_and_v5_forms_agree():
    v5 = {k: v for k, v in LLAMA_3_1_8B.items() if k not in ("rope_scaling", "rope_theta")}
    v5["rope_parameters"] = dict(LLAMA_3_1_8B["rope_scaling"], rope_theta=500000.0)
    assert torch.equal(rope_frequencies_from_config(v5)[0], rope_frequencies_from_config(LLAMA_3_1_8B)[0])
    legacy = dict(LLAMA_3_1_8B, rope_scaling={k if k != "rope_type" else "type": v
                                              for k, v in LLAMA_3_1_8B["rope_scaling"].items()})
    assert torch.equal(rope_frequencies_from_config(legacy)[0], rope_frequencies_from_config(LLAMA_3_1_8B)[0])


def test_does_not_modify_the_config():
    config = copy.deepcopy(GEMMA_3_4B)
    rope_frequencies_from_config(config, layer_type="full_attention")
    rope_frequencies_from_config(PYTHIA_160M)
    assert config == GEMMA_3_4B and "rope_theta" not in PYTHIA_160M


# --- errors -------------------------------------------------------------------------------------

def _without(config: dict, key: str) -> dict:
    return {k: v for k, v in config.items() if k != key}


ERRORS = [
    ([1, 2], {}, TypeError, "config"),
    (_llama(rope_scaling={"rope_type": "ntk-by-parts", "factor": 2.0}), {}, ValueError, "rope_type"),
    (_llama(rope_scaling={"rope_type": "linear"}), {}, ValueError, "'factor'"),
    (_llama(rope_scaling={"rope_type": "linear", "factor": 0.5}), {}, ValueError, "'factor'"),
    (_llama(rope_scaling={"rope_type": "dynamic", "factor": 0.9}), {}, ValueError, "'factor'"),
    (_llama(rope_scaling=dict(YARN, factor=0.5)), {}, ValueError, "'factor'"),
    (_llama(rope_scaling=dict(LLAMA3, factor=0.5)), {}, ValueError, "'factor'"),
    (_llama(rope_scaling=_without(LLAMA3, "low_freq_factor")), {}, ValueError, "'low_freq_factor'"),
    (_llama(rope_scaling=dict(LLAMA3, high_freq_factor=1.0)), {}, ValueError, "'high_freq_factor'"),
    (_llama(rope_scaling={"rope_type": "longrope", "short_factor": SHORT}), {}, ValueError, "'long_factor'"),
    (_llama(rope_scaling={"rope_type": "longrope", "short_factor": SHORT[:10], "long_factor": LONG}), {},
     ValueError, "'short_factor'"),
    (_llama(rope_scaling={"rope_type": "longrope", "short_factor": "1.0", "long_factor": LONG}), {},
     TypeError, "'short_factor'"),
    (_llama(partial_rotary_factor=0.0), {}, ValueError, "'partial_rotary_factor'"),
    (_llama(partial_rotary_factor=1.5), {}, ValueError, "'partial_rotary_factor'"),
    (_llama(rope_scaling={"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": -0.5}), {},
     ValueError, "'partial_rotary_factor'"),
    # GPT-NeoX reads rotary_pct, not partial_rotary_factor (as transformers does), but a field
    # given as 0 is an error, never a missing value replaced by a default
    (dict(_NEOX, partial_rotary_factor=0), {}, ValueError, "'partial_rotary_factor'"),
    (dict(_NEOX, rotary_pct=0), {}, ValueError, "'rotary_pct'"),
    (dict(_NEOX, rotary_pct=1.5), {}, ValueError, "'rotary_pct'"),
    (_llama(rope_theta=-1.0), {}, ValueError, "'rope_theta'"),
    (_llama(rope_theta="10000"), {}, TypeError, "'rope_theta'"),
    (_without(_without(_llama(), "hidden_size"), "head_dim"), {}, ValueError, "'head_dim'"),
    (_without(_llama(rope_scaling={"rope_type": "dynamic", "factor": 2.0}), "max_position_embeddings"), {},
     ValueError, "'max_position_embeddings'"),
    (_llama(rope_scaling=[1, 2]), {}, TypeError, "'rope_scaling'"),
    (GEMMA_3_1B, {}, ValueError, "layer_type"),
    (GEMMA_3_1B, {"layer_type": "global"}, ValueError, "layer_type"),
    (LLAMA_3_1_8B, {"layer_type": "full_attention"}, ValueError, "layer_type"),
    (LLAMA_3_1_8B, {"layer_type": 3}, TypeError, "layer_type"),
    (LLAMA_3_1_8B, {"length": 0}, ValueError, "length"),
    (LLAMA_3_1_8B, {"length": 2.5}, TypeError, "length"),
]


@pytest.mark.parametrize("config, kwargs, error, named", ERRORS)
def test_bad_configs_are_refused_by_name(config, kwargs, error, named):
    with pytest.raises(error, match=re.escape(named)):
        rope_frequencies_from_config(config, **kwargs)


@pytest.mark.parametrize("config", [LLAMA_3_1_8B, LLAMA_3_2_1B], ids=["3.1 8B", "3.2 1B"])
def test_llama3_bands_match_what_transformers_does_to_each_pair(config):
    rope = config["rope_scaling"]
    plain = _plain(config)
    theirs = reference(config)[0] / plain  # transformers' scale of each pair: 1, between, 1/factor
    bands = llama3_bands(plain, original_max_len=rope["original_max_position_embeddings"],
                         low_freq_factor=rope["low_freq_factor"], high_freq_factor=rope["high_freq_factor"])
    torch.testing.assert_close(theirs[bands == 0], torch.ones_like(theirs[bands == 0]), rtol=RTOL, atol=0)
    torch.testing.assert_close(theirs[bands == 2], torch.full_like(theirs[bands == 2], 1 / rope["factor"]),
                               rtol=RTOL, atol=0)
    middle = theirs[bands == 1]
    assert ((middle < 1) & (middle > 1 / rope["factor"])).all() and middle.numel() > 0


def test_llama3_bands_refuses_by_name():
    with pytest.raises(ValueError, match="high_freq_factor"):
        llama3_bands(rope_frequencies(8), original_max_len=64, low_freq_factor=4.0, high_freq_factor=2.0)
    with pytest.raises(ValueError, match="frequencies"):
        llama3_bands(torch.zeros(4, dtype=torch.float64), original_max_len=64)
    with pytest.raises(ValueError, match="original_max_len"):
        llama3_bands(rope_frequencies(8), original_max_len=0)
