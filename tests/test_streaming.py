"""Lesson 16's streaming tools, checked against slow references computed token by token.

The kept cache is re-implemented here the way a generating model runs it: one token at a time,
each layer's keys and values stored when the token arrives (keys before the rotation), the
cache trimmed to the first ``sinks`` and last ``window`` tokens, the query and the keys rotated
(or biased) by their positions within the cache. The recomputed cache calls the model on each
context separately.
"""

import importlib.util
import math
from pathlib import Path

import pytest
import torch

from course_utils import (ModelConfig, RopeScaling, TinyTransformer, alibi_slopes, attention_to_first,
                          loss_by_position, rope_rotate, with_rope_scaling)
from course_utils.extension import rope_frequencies
from course_utils.streaming import (attention_entropy_by_position, dynamic_cache_gap, long_context_scale,
                                    streaming_attention, streaming_loss)
from course_utils.text import text_windows

VOCAB = 11


def tiny(position: str, *, seed: int = 1, n_layers: int = 2, **overrides) -> TinyTransformer:
    settings = dict(vocab_size=VOCAB, d_model=16, n_heads=2, n_layers=n_layers, max_len=64, position=position,
                    causal=True)
    settings.update(overrides)
    return TinyTransformer(ModelConfig(**settings), seed=seed).eval()


def text(n: int = 300, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, VOCAB, (n,), generator=torch.Generator().manual_seed(seed))


def _cache_bias(model, n_cached: int) -> torch.Tensor:
    """[heads, n_cached]: the bias of the newest query (cache position n_cached − 1) on each cached key."""
    config = model.config
    distance = (n_cached - 1 - torch.arange(n_cached)).double()
    if config.position == "alibi":
        return -alibi_slopes(config.n_heads).double()[:, None] * distance[None, :]
    if config.position == "relative":
        return model.relative_bias(n_cached)[:, -1].double()
    return torch.zeros(config.n_heads, n_cached, dtype=torch.float64)


def _turn(model, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    config = model.config
    if config.position != "rope":
        return x
    d_head = config.d_model // config.n_heads
    rule = config.rope_scaling
    omega = rope_frequencies(d_head) if rule is None else rule.frequencies(d_head)
    scale = 1.0 if rule is None else rule.attention_scale
    return scale * rope_rotate(x, positions=positions.double(), layout=config.rope_layout, frequencies=omega)


@torch.no_grad()
def kept_cache_reference(model, tokens: torch.Tensor, window: int, sinks: int) -> torch.Tensor:
    """Logits [n, V] of one sequence generated token by token with a trimmed key-value cache."""
    config = model.config
    heads, d_head = config.n_heads, config.d_model // config.n_heads
    caches = [[] for _ in model.blocks]  # per layer: (arrival index, raw key [heads, d_head], value)
    out = []
    for t in range(tokens.shape[0]):
        x = model.token_embedding(tokens[t:t + 1])  # [1, d_model]
        for block, cache in zip(model.blocks, caches):
            q, k, v = block.attention.qkv(block.ln_attention(x)).view(3, heads, d_head)
            cache.append((t, k, v))
            cache[:] = [entry for entry in cache if entry[0] < sinks or entry[0] > t - window]
            n_cached = len(cache)
            positions = torch.arange(n_cached)
            keys = torch.stack([entry[1] for entry in cache], dim=1)  # [heads, n_cached, d_head]
            values = torch.stack([entry[2] for entry in cache], dim=1)
            q_turned = _turn(model, q[:, None, :], positions[-1:])  # the query at the last cache position
            k_turned = _turn(model, keys, positions)
            logits = (q_turned @ k_turned.transpose(-2, -1))[:, 0] / math.sqrt(d_head)
            logits = logits + _cache_bias(model, n_cached).to(logits.dtype)
            weights = torch.softmax(logits, dim=-1)  # [heads, n_cached]
            heads_out = (weights[:, None, :] @ values)[:, 0]  # [heads, d_head]
            x = x + block.attention.out(heads_out.reshape(1, config.d_model))
            x = x + block.mlp(block.ln_mlp(x))
        out.append(model.head(model.ln_final(x))[0])
    return torch.stack(out)


@torch.no_grad()
def recomputed_reference(model, tokens: torch.Tensor, window: int, sinks: int) -> torch.Tensor:
    """Logits [n, V]: position t reads tokens 0 .. sinks − 1 and t − window + 1 .. t afresh."""
    out = []
    for t in range(tokens.shape[0]):
        keep = [s for s in range(t + 1) if s < sinks or s > t - window]
        out.append(model(tokens[keep][None])[0, -1])
    return torch.stack(out)


def _bits(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(logits.float(), targets, reduction="none") / math.log(2)


def _reference_loss(model, ids, length, n_windows, reference, window, sinks) -> torch.Tensor:
    windows = text_windows(ids, length=length, n_windows=n_windows)
    return torch.stack([_bits(reference(model, tokens, window, sinks), targets)
                        for tokens, targets in zip(windows.tokens, windows.targets)]).mean(0)


KEPT_MODELS = {
    "none": lambda: tiny("none"),
    "rope": lambda: tiny("rope"),
    "rope-halves": lambda: tiny("rope", rope_layout="halves"),
    "rope-yarn": lambda: tiny("rope", rope_scaling=RopeScaling("yarn", factor=2.0, original_max_len=16)),
    "alibi": lambda: tiny("alibi"),
    "relative": lambda: tiny("relative", relative_max_distance=3),
}


@pytest.mark.parametrize("name, window, sinks", [(name, window, sinks) for name in sorted(KEPT_MODELS)
                                                 for window, sinks in ((4, 0), (3, 2))] + [("rope", 1, 3)])
def test_the_kept_cache_equals_a_token_by_token_cache(name, window, sinks):
    model, ids = KEPT_MODELS[name](), text()
    fast = streaming_loss(model, ids, length=14, n_windows=2, window=window, sinks=sinks)
    slow = _reference_loss(model, ids, 14, 2, kept_cache_reference, window, sinks)
    assert torch.allclose(fast, slow, atol=1e-5), (fast - slow).abs().max()


@pytest.mark.parametrize("position, window, sinks", [("sinusoidal", 4, 0), ("learned", 5, 2), ("rope", 5, 2),
                                                     ("alibi", 4, 0), ("none", 5, 2), ("integer", 3, 1)])
def test_the_recomputed_cache_equals_the_model_on_each_context(position, window, sinks):
    model, ids = tiny(position), text()
    fast = streaming_loss(model, ids, length=14, n_windows=2, window=window, sinks=sinks, cache="recomputed")
    slow = _reference_loss(model, ids, 14, 2, recomputed_reference, window, sinks)
    assert torch.allclose(fast, slow, atol=1e-5), (fast - slow).abs().max()


@pytest.mark.parametrize("position", ["none", "sinusoidal", "learned", "rope", "alibi", "relative"])
def test_without_a_window_the_stream_is_the_model(position):
    model, ids = tiny(position, attention_kernel="explicit"), text()
    plain = loss_by_position(model, ids, length=24, n_windows=4)
    assert torch.allclose(streaming_loss(model, ids, length=24, n_windows=4), plain, atol=1e-6)
    # a window that never drops anything changes nothing either, in both caches
    for cache in ("recomputed",) if position in ("sinusoidal", "learned") else ("kept", "recomputed"):
        roomy = streaming_loss(model, ids, length=24, n_windows=4, window=24, sinks=0, cache=cache)
        assert torch.allclose(roomy, plain, atol=1e-6)


def test_sinks_change_only_the_positions_after_the_cache_fills():
    model, ids = tiny("rope"), text()
    alone = streaming_loss(model, ids, length=30, n_windows=4, window=6)
    with_sinks = streaming_loss(model, ids, length=30, n_windows=4, window=6, sinks=2)
    assert torch.equal(alone[:6], with_sinks[:6])  # caches hold everything up to t = 5
    assert (alone[8:] - with_sinks[8:]).abs().min() > 0  # from t = 8 on the caches differ


def test_streaming_attention_reads_the_cache():
    model, ids = tiny("alibi"), text()
    weights = streaming_attention(model, ids, length=20, n_windows=3, window=5, sinks=2)
    assert weights.shape == (2, 2, 20, 20)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 2, 20), atol=1e-6)
    t, s = torch.arange(20)[:, None], torch.arange(20)[None, :]
    dropped = (s > t) | ((s >= 2) & (t - s >= 5))
    assert weights[..., dropped].abs().max() == 0 and (weights[..., ~dropped] > 0).all()
    # without a window: lesson 09's attention_to_first on the same windows
    full = streaming_attention(model, ids, length=20, n_windows=3)
    tokens = text_windows(ids, length=20, n_windows=3).tokens
    for layer in range(2):
        assert torch.allclose(full[layer, :, :, 0], attention_to_first(model, tokens, layer=layer), atol=1e-6)


def test_entropy_of_uniform_attention_is_the_log_of_what_the_cache_holds():
    model = tiny("none")
    with torch.no_grad():
        for block in model.blocks:  # zero queries: every logit 0, so uniform weights on the cache
            block.attention.qkv.weight[:16] = 0
            block.attention.qkv.bias[:16] = 0
    ids = text()
    full = attention_entropy_by_position(model, ids, length=20, n_windows=2)
    expected = torch.arange(1, 21, dtype=torch.float32).log()
    assert torch.allclose(full, expected.expand(2, 2, 20), atol=1e-5)
    cached = attention_entropy_by_position(model, ids, length=20, n_windows=2, window=4, sinks=3)
    expected = torch.arange(1, 21).clamp(max=7).float().log()
    assert torch.allclose(cached, expected.expand(2, 2, 20), atol=1e-5)


def test_a_query_scale_sharpens_attention_and_equals_a_yarn_temperature():
    model, ids = tiny("rope"), text()
    plain = attention_entropy_by_position(model, ids, length=20, n_windows=3)
    ones = torch.ones(20)
    assert torch.allclose(attention_entropy_by_position(model, ids, length=20, n_windows=3, query_scale=ones), plain)
    sharp = attention_entropy_by_position(model, ids, length=20, n_windows=3, query_scale=torch.full((20,), 50.0))
    assert sharp[..., 1:].mean() < 0.5 * plain[..., 1:].mean()
    # YaRN at factor 1 keeps the frequencies and multiplies queries and keys by a: logits by a²
    a = 1.3
    hot = with_rope_scaling(model, RopeScaling("yarn", factor=1.0, original_max_len=16, attention_factor=a))
    scaled = streaming_loss(model, ids, length=20, n_windows=3, window=6, sinks=1,
                            query_scale=torch.full((20,), a * a))
    assert torch.allclose(scaled, streaming_loss(hot, ids, length=20, n_windows=3, window=6, sinks=1), atol=1e-5)


def test_long_context_scale_rules():
    L = 16
    yarn = long_context_scale("yarn", 4 * L, original_max_len=L)
    assert torch.allclose(yarn, torch.full((4 * L,), (0.1 * math.log(4) + 1) ** 2, dtype=torch.float64))
    assert torch.equal(long_context_scale("yarn", L, original_max_len=L), torch.ones(L, dtype=torch.float64))
    log_length = long_context_scale("log_length", L * L, original_max_len=L)
    assert torch.equal(log_length[:L], torch.ones(L, dtype=torch.float64))  # t + 1 <= L: untouched
    assert log_length[L] == pytest.approx(math.log(L + 1) / math.log(L)) and log_length[-1] == pytest.approx(2.0)
    llama4 = long_context_scale("llama4", 3 * L, original_max_len=L)
    assert torch.equal(llama4[:L - 1], torch.ones(L - 1, dtype=torch.float64))
    assert llama4[L - 1] == pytest.approx(1 + 0.1 * math.log(2)) and llama4[-1] == pytest.approx(1 + 0.1 * math.log(4))
    # Llama 4's own numbers: floor_scale 8192, attn_scale 0.1, at position 100,000
    at = long_context_scale("llama4", 100_001, original_max_len=8192, floor_scale=8192)[-1]
    assert at == pytest.approx(1 + 0.1 * math.log(1 + 100_001 // 8192))


def test_llama4_rule_is_transformers_formula():
    """The pinned transformers' Llama4TextAttention (read as text: importing it takes seconds)."""
    spec = importlib.util.find_spec("transformers")
    if spec is None:
        pytest.skip("transformers is not installed")
    path = Path(spec.origin).parent / "models" / "llama4" / "modeling_llama4.py"
    source = " ".join(path.read_text(encoding="utf-8").split())
    formula = "torch.log1p(torch.floor((positions.float() + 1.0) / self.floor_scale)) * self.attn_scale + 1.0"
    assert formula in source
    assert "if self.attn_temperature_tuning and not self.use_rope:" in source  # on its NoPE layers only
    assert "query_states = (query_states * attn_scales)" in source  # queries only, not keys


def test_refusals_name_the_argument():
    ids = text()
    with pytest.raises(ValueError, match="cache"):
        streaming_loss(tiny("sinusoidal"), ids, length=10, window=4)
    with pytest.raises(ValueError, match="sinks"):
        streaming_loss(tiny("rope"), ids, length=10, sinks=2)
    with pytest.raises(ValueError, match="query_scale"):
        streaming_loss(tiny("rope"), ids, length=10, window=4, cache="recomputed", query_scale=torch.ones(10))
    with pytest.raises(ValueError, match="query_scale"):
        streaming_loss(tiny("rope"), ids, length=10, query_scale=torch.ones(9))
    with pytest.raises(ValueError, match="query_scale"):
        streaming_loss(tiny("rope"), ids, length=10, query_scale=-torch.ones(10))
    with pytest.raises(ValueError, match="causal"):
        streaming_loss(tiny("rope", causal=False), ids, length=10)
    with pytest.raises(ValueError, match="max_len"):
        streaming_loss(tiny("learned", max_len=8), ids, length=10, window=8, sinks=1, cache="recomputed")
    with pytest.raises(ValueError, match="cache"):
        streaming_loss(tiny("rope", rope_scaling=RopeScaling("dynamic", factor=2.0, original_max_len=8)), ids,
                       length=10, window=4)
    with pytest.raises(ValueError, match="rule"):
        long_context_scale("ntk", 10, original_max_len=4)
    with pytest.raises(ValueError, match="floor_scale"):
        long_context_scale("yarn", 10, original_max_len=4, floor_scale=2)
    with pytest.raises(ValueError, match="n_layers"):
        streaming_attention(tiny("rope", n_layers=0), ids, length=10)


def _dynamic_model(**overrides):
    return tiny("rope", rope_scaling=RopeScaling("dynamic", factor=2.0, original_max_len=4), **overrides)


@torch.no_grad()
def dynamic_cache_reference(model, tokens: torch.Tensor, window=None, sinks=0) -> torch.Tensor:
    """Logits [n, V] generated token by token with every key stored already rotated, at the
    frequencies of the length when it arrived (as a cache of rotated keys does); nothing dropped."""
    config, rule = model.config, model.config.rope_scaling
    heads, d_head = config.n_heads, config.d_model // config.n_heads
    caches = [([], []) for _ in model.blocks]
    out = []
    for t in range(tokens.shape[0]):
        omega = rule.frequencies(d_head, length=t + 1)
        turn = lambda x: rope_rotate(x, positions=torch.tensor([float(t)]), layout=config.rope_layout,  # noqa: E731
                                     frequencies=omega)
        x = model.token_embedding(tokens[t:t + 1])
        for block, (keys, values) in zip(model.blocks, caches):
            q, k, v = block.attention.qkv(block.ln_attention(x)).view(3, heads, d_head)
            keys.append(turn(k[:, None, :])[:, 0])
            values.append(v)
            logits = (turn(q[:, None, :]) @ torch.stack(keys, dim=1).transpose(-2, -1))[:, 0] / math.sqrt(d_head)
            heads_out = (torch.softmax(logits, dim=-1)[:, None, :] @ torch.stack(values, dim=1))[:, 0]
            x = x + block.attention.out(heads_out.reshape(1, config.d_model))
            x = x + block.mlp(block.ln_mlp(x))
        out.append(model.head(model.ln_final(x))[0])
    return torch.stack(out)


def test_dynamic_scaling_kept_and_recomputed():
    model, ids = _dynamic_model(), text()
    kept = streaming_loss(model, ids, length=10, n_windows=1)
    assert torch.allclose(kept, _reference_loss(model, ids, 10, 1, dynamic_cache_reference, None, 0), atol=1e-5)
    recomputed = streaming_loss(model, ids, length=10, n_windows=1, cache="recomputed")
    assert torch.allclose(recomputed, _reference_loss(model, ids, 10, 1, recomputed_reference, 99, 0), atol=1e-5)
    one_pass = loss_by_position(model, ids, length=10, n_windows=1)  # every position at length 10
    assert torch.allclose(kept[:4], recomputed[:4], atol=1e-6)  # up to L = 4 nothing is scaled
    assert (kept[5:] - recomputed[5:]).abs().min() > 0 and (one_pass[:4] - recomputed[:4]).abs().max() > 0
    windowed = streaming_loss(model, ids, length=10, n_windows=1, window=3, sinks=3, cache="recomputed")
    assert torch.allclose(windowed, _reference_loss(model, ids, 10, 1, recomputed_reference, 3, 3), atol=1e-5)


def test_dynamic_cache_gap_is_the_first_layers_logit_drift():
    model, ids = _dynamic_model(), text()
    gap = dynamic_cache_gap(model, ids, length=12, n_windows=2)
    assert gap.shape == (2, 12) and gap[:, :4].abs().max() == 0 and (gap[:, 4:] > 0).all()
    tokens = text_windows(ids, length=12, n_windows=2).tokens
    config, rule = model.config, model.config.rope_scaling
    block, t = model.blocks[0], 9
    with torch.no_grad():
        q, k, _ = block.attention.qkv(block.ln_attention(model.token_embedding(tokens))).view(2, 12, 3, 2, 8).unbind(2)
    now = rule.frequencies(8, length=t + 1)
    q_t = rope_rotate(q[:, t:t + 1].transpose(1, 2), positions=torch.tensor([float(t)]), frequencies=now)
    fresh = rope_rotate(k[:, :t + 1].transpose(1, 2), frequencies=now)
    cached = torch.cat([rope_rotate(k[:, s:s + 1].transpose(1, 2), positions=torch.tensor([float(s)]),
                                    frequencies=rule.frequencies(8, length=s + 1)) for s in range(t + 1)], dim=2)
    expected = ((q_t @ (cached - fresh).transpose(-2, -1)).abs()[:, :, 0] / math.sqrt(8)).mean(-1).mean(0)
    assert torch.allclose(gap[:, t], expected, atol=1e-6)
    with pytest.raises(ValueError, match="model"):
        dynamic_cache_gap(tiny("rope"), ids, length=12)
