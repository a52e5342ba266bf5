"""Texts longer than trained, read as a stream: attention sinks, a window plus sink tokens, and a
long-context logit temperature (lesson 16).

**Streaming with a kept cache** (StreamingLLM, Xiao et al. 2023). A model generating text keeps
each token's keys and values from the moment the token arrived (its KV cache) and, to bound
memory, keeps only the first ``sinks`` tokens and the last ``window`` ones; a query attends to
those. Positions are the ones *within the cache*, as StreamingLLM assigns them: once the cache
is full the query sits at cache position p = sinks + window − 1, the key that arrived s tokens
before it at p − s (its true offset, s < window) and sink j at position j, so at offset p − j
instead of its true t − j. Read this way the whole text goes through the model in one pass, with
a banded causal mask (plus the sink columns) and the sinks' offsets moved: ``cache="kept"``.
It needs a code that acts inside attention ("rope", "alibi", "relative") or none: an input code
writes each token's position into its keys when it arrives.

``cache="recomputed"`` reads each token's context, the first ``sinks`` and the last ``window``
tokens, afresh as one sequence numbered 0 .. sinks + window − 1 (StreamingLLM's "sliding window
with re-computation"): every code works, at about ``sinks + window`` times the cost, and the
oldest token kept is always at position 0.

**Logit temperature.** ``long_context_scale`` gives a multiplier for each query position that
sharpens attention past the training length L: YaRN's (0.1·ln s + 1)² (Peng et al. 2023, applied
to queries and keys as 0.1·ln s + 1 each), the log-length factor log_L(t + 1) for t + 1 > L of
Qwen's released code (``use_logn_attn``), and Llama 4's 1 + β·ln(1 + ⌊(t + 1)/F⌋) (transformers'
``Llama4TextAttention``, on its NoPE layers only, β = attn_scale 0.1, F = floor_scale 8192).
``attention_entropy_by_position`` measures what it does (lesson 12's attention_entropy).

**Dynamic scaling with a cache.** "dynamic" RoPE scaling (lesson 12) picks its frequencies from
the current length n. A kept cache holds each key turned at the frequencies of the length when
it arrived, while the newest query uses today's: with ``cache="kept"`` and no window the
stream does exactly that; ``cache="recomputed"`` reads every prefix afresh at its own length;
``dynamic_cache_gap`` measures how far the first layer's logits drift between the two.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from . import _validate
from .attention_positions import attention_entropy
from .extension import yarn_attention_scale
from .interleaving import layer_plan, llama4_temperature
from .models import INPUT_CODES, TinyTransformer
from .rope import rotate_pairs
from .text import text_windows

CACHES = ("kept", "recomputed")
SCALE_RULES = ("yarn", "log_length", "llama4")


def long_context_scale(rule: str, length: int, *, original_max_len: int, floor_scale: int | None = None,
                       attn_scale: float = 0.1) -> torch.Tensor:
    """What each query is multiplied by at positions t = 0 .. length − 1. Returns float64 [length].

    A query multiplied by c multiplies its logits by c: a logit temperature 1/c. L = original_max_len.
    - "yarn": (0.1·ln s + 1)² at every t, s = max(1, length / L): YaRN multiplies queries *and*
      keys by yarn_attention_scale(s), here folded into the queries.
    - "log_length": log_L(t + 1) for t + 1 > L, else 1 (Qwen's ``use_logn_attn``).
    - "llama4": 1 + attn_scale·ln(1 + ⌊(t + 1) / floor_scale⌋) (Llama 4's temperature tuning,
      attn_scale 0.1, floor_scale 8192 there; here floor_scale defaults to L).
    """
    rule = _validate.choice(rule, "rule", SCALE_RULES)
    length = _validate.integer(length, "length", minimum=1, maximum=10**9)
    _validate.size_budget(length, "the scales [length]")
    original_max_len = _validate.integer(original_max_len, "original_max_len", minimum=1, maximum=10**9)
    attn_scale = _validate.real(attn_scale, "attn_scale")
    if floor_scale is not None:
        floor_scale = _validate.integer(floor_scale, "floor_scale", minimum=1, maximum=10**9)
    if rule != "llama4" and (floor_scale is not None or attn_scale != 0.1):
        raise ValueError(f'floor_scale and attn_scale are Llama 4\'s settings: rule="{rule}" has none')
    count = torch.arange(1, length + 1, dtype=torch.float64)  # t + 1
    if rule == "yarn":
        return torch.full((length,), yarn_attention_scale(max(1.0, length / original_max_len)) ** 2,
                          dtype=torch.float64)
    if rule == "log_length":
        if original_max_len == 1:
            raise ValueError("original_max_len must be at least 2 for log_length (a logarithm to base L)")
        return torch.where(count > original_max_len, count.log() / math.log(original_max_len), 1.0)
    floor_scale = original_max_len if floor_scale is None else floor_scale
    return llama4_temperature(torch.arange(length), floor_scale=floor_scale, attn_scale=attn_scale)


def _language_model(model) -> TinyTransformer:
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if not model.config.causal:
        raise ValueError("model must be causal (ModelConfig(causal=True)): a stream is read left to right")
    outputs = model.config.n_outputs or model.config.vocab_size
    if outputs != model.config.vocab_size:
        raise ValueError(f"model must predict the next token (n_outputs = vocab_size = {model.config.vocab_size}), "
                         f"it has n_outputs = {outputs}")
    return model


def _stream_args(model, ids, length, n_windows, window, sinks, cache, query_scale):
    """Checked arguments → (windows, window, sinks, cache, query_scale)."""
    config = model.config
    windows = text_windows(ids, length=length, n_windows=n_windows)  # checks ids, length, n_windows
    if int(windows.tokens.max()) >= config.vocab_size or int(windows.targets.max()) >= config.vocab_size:
        raise ValueError(f"ids must be token ids below the model's vocab_size {config.vocab_size}")
    length = windows.tokens.shape[1]
    if window is not None:
        window = _validate.integer(window, "window", minimum=1, maximum=10**9)
    sinks = _validate.integer(sinks, "sinks", minimum=0, maximum=10**9)
    if window is None and sinks:
        raise ValueError(f"sinks are kept next to a window: give window (the last tokens kept), got sinks={sinks}")
    cache = _validate.choice(cache, "cache", CACHES)
    if cache == "kept" and window is not None and config.position in INPUT_CODES:
        raise ValueError(f'cache="kept" with a window needs a code inside attention (rope, alibi, relative) or '
                         f'none: position="{config.position}" wrote each token\'s position into its cached keys '
                         f'when it arrived; use cache="recomputed"')
    rule = config.rope_scaling
    if cache == "kept" and window is not None and rule is not None and rule.kind == "dynamic":
        raise ValueError('cache="kept" with a window is not defined here for "dynamic" RoPE scaling (its '
                         'frequencies follow the length); use cache="recomputed"')
    if query_scale is not None:
        if cache == "recomputed":
            raise ValueError('query_scale goes with cache="kept": recomputed contexts number their tokens afresh')
        query_scale = _validate.float_tensor(query_scale, "query_scale").detach()
        if query_scale.shape != (length,) or not (query_scale > 0).all():
            raise ValueError(f"query_scale must hold one positive multiplier per position [length = {length}], "
                             f"got shape {tuple(query_scale.shape)}")
    read = length if window is None else min(length, sinks + window)
    if config.position == "learned" and read > config.max_len:
        raise ValueError(f"the learned code has max_len = {config.max_len} rows: length (or sinks + window) "
                         f"{read} reads past them")
    _validate.size_budget(n_windows * config.n_heads * length * length,
                          "the attention weights [n_windows, n_heads, length, length]")
    return windows, window, sinks, cache, query_scale


def _dynamic(model) -> bool:
    rule = model.config.rope_scaling
    return rule is not None and rule.kind == "dynamic"


def _arrival_rotation(model, n: int):
    """For "dynamic" RoPE scaling in a kept cache: row j turned by j·ω_i(length j + 1), the
    frequencies when token j arrived (its cached key keeps them; the newest query has its own)."""
    config, rule = model.config, model.config.rope_scaling
    d_head = config.d_model // config.n_heads
    omega = torch.stack([rule.frequencies(d_head, base=config.rope_base, length=j + 1)
                         for j in range(n)])  # [n, d_head/2]
    angles = torch.arange(n, dtype=torch.float64)[:, None] * omega
    cos, sin, layout = angles.cos(), angles.sin(), config.rope_layout
    return lambda x: rotate_pairs(x, cos, sin, layout=layout)


def _kept_pass(model, tokens, window, sinks, query_scale):
    """The kept-cache reading of tokens [batch, n] in one pass → (logits [batch, n, V], weights:
    one [batch, n_heads, n, n] per layer, key s in column s, 0 on keys the cache dropped)."""
    config = model.config
    batch, n = tokens.shape
    heads, d_head = config.n_heads, config.d_model // config.n_heads
    last = n - 1 if window is None else sinks + window - 1  # the query's cache position, cache full
    t = torch.arange(n)
    offset = t[:, None] - t[None, :]
    allowed = offset >= 0
    if window is not None:
        allowed = allowed & ((offset < window) | (t[None, :] < sinks))
    moved = ((t[:, None] > last) & (t[None, :] < sinks))[:, :sinks]  # [n, sinks]: sink at offset last − j
    rotate, bias = (_arrival_rotation(model, n) if _dynamic(model) else model.rotary(n)), model.attention_bias(n)
    sink_bias = None if bias is None or not sinks else model.attention_bias(last + 1)[:, last, :sinks]
    x, weights_by_layer = model.embed(tokens), []
    for index, (block, layer) in enumerate(zip(model.blocks, layer_plan(config, n))):
        if index and config.reapply_position and model.position is not None:
            x = x + config.position_scale * model.position(n)
        q, k, v = block.attention.qkv(block.ln_attention(x)).view(batch, n, 3, heads, d_head).permute(2, 0, 3, 1, 4)
        if query_scale is not None:
            q = q * query_scale.to(q.dtype)[:, None]
        if layer.query_scale is not None:  # the model's own (Llama 4's temperature on a NoPE layer)
            q = q * layer.query_scale.to(q.dtype)
        turn = rotate if layer.rotates else None
        q_turned, k_turned = (q, k) if turn is None else (turn(q), turn(k))
        logits = q_turned @ k_turned.transpose(-2, -1) / math.sqrt(d_head)
        if bias is not None:
            logits = logits + bias
        if moved.any():  # the sink columns, seen from a full cache at position `last`
            q_last = q if turn is None else model.rotary(1, start=last)(q[..., None, :])[..., 0, :]
            on_sinks = q_last @ k_turned[..., :sinks, :].transpose(-2, -1) / math.sqrt(d_head)
            if sink_bias is not None:
                on_sinks = on_sinks + sink_bias[:, None, :]
            logits = torch.cat([torch.where(moved, on_sinks, logits[..., :sinks]), logits[..., sinks:]], dim=-1)
        reads = allowed if layer.window is None else allowed & (offset < layer.window)
        weights = torch.softmax(logits.masked_fill(~reads, float("-inf")), dim=-1)
        x = x + block.attention.out((weights @ v).transpose(1, 2).reshape(batch, n, config.d_model))
        x = x + block.mlp(block.ln_mlp(x))
        weights_by_layer.append(weights)
    return model.head(model.ln_final(x)), weights_by_layer


def _recomputed_logits(model, tokens, window, sinks):
    """Each position's context [first sinks, last window] read afresh → logits [batch, n, V]."""
    batch, n = tokens.shape
    cap = n if window is None else sinks + window
    config = model.config
    outputs = config.vocab_size
    # chunks of contexts whose largest activation [chunk, cap, ·] stays under the course's cap
    widest = max(config.n_heads * cap, config.d_ff or 4 * config.d_model, outputs)
    per_chunk = max(1, _validate.MAX_ELEMENTS // (cap * widest))
    ready = min(cap, n)  # positions t < cap read their whole prefix: one pass
    if _dynamic(model):  # past L each prefix has its own frequencies: one pass per position
        ready = min(ready, config.rope_scaling.original_max_len)
    prefixes = [model(tokens[:, :t + 1])[:, -1:] for t in range(ready, min(cap, n))]
    first = torch.cat([model(tokens[:, :ready]), *prefixes], dim=1)
    if n <= cap:
        return first
    t = torch.arange(cap, n)
    keep = torch.cat([torch.arange(sinks).expand(len(t), sinks), t[:, None] - window + 1 + torch.arange(window)], 1)
    _validate.size_budget(batch * len(t) * cap, "the recomputed contexts [n_windows, length - sinks - window, "
                          "sinks + window]")
    contexts = tokens[:, keep].reshape(-1, cap)
    later = torch.cat([model(part)[:, -1] for part in contexts.split(per_chunk)])
    return torch.cat([first, later.view(batch, len(t), -1)], dim=1)


def _evaluating(model):
    was_training = model.training
    model.eval()
    return was_training


@torch.no_grad()
def streaming_loss(model, ids: torch.Tensor, *, length: int, n_windows: int = 16, window: int | None = None,
                   sinks: int = 0, cache: str = "kept", query_scale: torch.Tensor | None = None) -> torch.Tensor:
    """The loss in bits per token at each position t = 0 .. length − 1 of a stream: −log₂ p(token
    t + 1 | what the cache holds at t), averaged over the windows ``text_windows(ids,
    length=length, n_windows=n_windows)`` (lesson 14's loss_by_position, read as a stream).
    Returns [length].

    window=None: every earlier token is kept (the plain model; but see "dynamic" below).
    window=w: the cache holds the first ``sinks`` tokens and the last w (this one included);
    cache="kept" keeps keys and values as they were made, at positions within the cache
    (StreamingLLM; codes inside attention or none), cache="recomputed" reads each context
    afresh at positions 0 .. sinks + w − 1 (every code). query_scale [length]: each query
    multiplied by it (long_context_scale), "kept" only; a bias (ALiBi's, the relative one) is
    added after and not scaled. A model with "dynamic" RoPE scaling
    keeps each key turned at the frequencies of its arrival under "kept" (window=None only),
    and reads each prefix at its own length under "recomputed".
    """
    model = _language_model(model)
    windows, window, sinks, cache, query_scale = _stream_args(model, ids, length, n_windows, window, sinks, cache,
                                                              query_scale)
    was_training = _evaluating(model)
    try:
        if cache == "kept":
            logits = _kept_pass(model, windows.tokens, window, sinks, query_scale)[0]
        else:
            logits = _recomputed_logits(model, windows.tokens, window, sinks)
    finally:
        model.train(was_training)
    nats = nn.functional.cross_entropy(logits.transpose(1, 2).float(), windows.targets, reduction="none")
    return (nats / math.log(2)).mean(dim=0)


def _kept_weights(model, ids, length, n_windows, window, sinks, query_scale) -> list[torch.Tensor]:
    """Each layer's attention weights [n_windows, n_heads, length, length] in a kept-cache stream."""
    model = _language_model(model)
    if model.config.n_layers == 0:
        raise ValueError("model has no blocks (n_layers = 0), so there are no attention weights to read")
    windows, window, sinks, _, query_scale = _stream_args(model, ids, length, n_windows, window, sinks, "kept",
                                                          query_scale)
    was_training = _evaluating(model)
    try:
        weights = _kept_pass(model, windows.tokens, window, sinks, query_scale)[1]
    finally:
        model.train(was_training)
    return weights


@torch.no_grad()
def streaming_attention(model, ids: torch.Tensor, *, length: int, n_windows: int = 16, window: int | None = None,
                        sinks: int = 0, query_scale: torch.Tensor | None = None) -> torch.Tensor:
    """Every head's attention weights in a kept-cache stream (see streaming_loss), averaged over
    the windows. Returns [n_layers, n_heads, length, length]: entry (l, h, t, s) is the weight of
    query t on the token at s (0 where the cache dropped it). [..., 0] is the share of the first
    token, [..., :sinks].sum(-1) the sinks' share.
    """
    weights = _kept_weights(model, ids, length, n_windows, window, sinks, query_scale)
    return torch.stack([w.mean(dim=0) for w in weights])


@torch.no_grad()
def attention_entropy_by_position(model, ids: torch.Tensor, *, length: int, n_windows: int = 16,
                                  window: int | None = None, sinks: int = 0,
                                  query_scale: torch.Tensor | None = None) -> torch.Tensor:
    """How spread each head's attention is at every query position, in nats: attention_entropy
    (lesson 12) of each window's weights in a kept-cache stream (see streaming_loss), then
    averaged over the windows. Returns [n_layers, n_heads, length]. Uniform attention over the
    t + 1 keys of a causal query gives ln(t + 1); a query_scale > 1 sharpens it.
    """
    weights = _kept_weights(model, ids, length, n_windows, window, sinks, query_scale)
    return torch.stack([attention_entropy(w).mean(dim=0) for w in weights])


@torch.no_grad()
def dynamic_cache_gap(model, ids: torch.Tensor, *, length: int, n_windows: int = 16) -> torch.Tensor:
    """What a kept cache does to "dynamic" RoPE scaling, in the first layer: for each query t, the
    mean over its keys s <= t of |logit with key s as cached (turned at the frequencies of length
    s + 1, when it arrived) − logit with key s turned again at the frequencies of length t + 1|,
    averaged over the windows ``text_windows(ids, length=length, n_windows=n_windows)``. The first
    layer's queries and keys depend on the tokens alone, so the gap is the rotation's alone.
    Returns [n_heads, length]; 0 while t + 1 <= L (original_max_len), where nothing is scaled.
    """
    model = _language_model(model)
    if not _dynamic(model):
        raise ValueError('model must use "dynamic" RoPE scaling, e.g. with_rope_scaling(model, "dynamic", '
                         'factor=2.0, original_max_len=L)')
    if model.config.n_layers == 0:
        raise ValueError("model has no blocks (n_layers = 0), so there are no attention logits to read")
    if 0 in model.config.nope_layers:
        raise ValueError("model's first block is a NoPE layer (nope_layers): it has no rotation to compare")
    windows = _stream_args(model, ids, length, n_windows, None, 0, "kept", None)[0]
    config, tokens = model.config, windows.tokens
    batch, n = tokens.shape
    heads, d_head = config.n_heads, config.d_model // config.n_heads
    block = model.blocks[0]
    was_training = _evaluating(model)
    try:
        q, k = block.attention.qkv(block.ln_attention(model.embed(tokens))).view(
            batch, n, 3, heads, d_head).permute(2, 0, 3, 1, 4)[:2]
    finally:
        model.train(was_training)
    kept = _arrival_rotation(model, n)
    q_now, k_kept = kept(q), kept(k)  # the newest query is turned at its own length either way
    gap = torch.zeros(batch, heads, n, dtype=q.dtype)
    for t in range(min(config.rope_scaling.original_max_len, n), n):
        k_fresh = model.rotary(t + 1)(k[..., :t + 1, :])  # every key turned at length t + 1
        drift = (q_now[..., t:t + 1, :] @ (k_kept[..., :t + 1, :] - k_fresh).transpose(-2, -1))[..., 0, :]
        gap[..., t] = drift.abs().mean(-1) / math.sqrt(d_head)
    return gap.mean(dim=0)
