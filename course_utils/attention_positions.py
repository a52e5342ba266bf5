"""Where attention goes: measurements of a head's weights by offset (lessons 10–12).

The codes that act inside attention live below the models: RoPE in course_utils/rope.py
(Su et al. 2021), ALiBi and the learned relative bias in course_utils/biases.py.

``attention_at_offset``, ``attention_beyond`` and ``attention_entropy`` measure where a head
looks at lengths it never trained on: its weight on the key a given number of steps back, its
share of weight on keys more than a given distance back, and how spread its weights are.
``offset_head`` finds, in a trained model, the head that attends to a given offset (lesson 11's
previous-token head, lesson 12's copy head); the lessons and their claims tests call it.

Which rotary pairs a RoPE head reads (lesson 12): ``pair_logits`` splits its logits into one term
per pair, ``rival_margin`` splits the lead of one offset's key over its strongest rival by pair,
and ``without_pairs`` removes pairs from one head (an ablation) to check causally.

Whether a trained RoPE head still finds a token it likes far away (lesson 15):
``favourite_key_gap`` is Men et al.'s similar-token gap (course_utils/rope_base.py) measured with
a trained head's own queries and keys instead of random vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _validate, biases, rope
from ._deprecation import moved
from .models import TinyTransformer

MAX_OFFSET = 10**6  # favourite_key_gap: the farthest distance it turns a query by

# Lesson 10's biases moved to biases.py (below the models) in 0.2; rope_rotate lives in rope.py.
__getattr__ = moved(__name__, {"alibi_bias": biases.alibi_bias, "alibi_slopes": biases.alibi_slopes,
                               "checked_slopes": biases.checked_slopes, "RelativeBias": biases.RelativeBias,
                               "rope_rotate": rope.rope_rotate}, since="0.2")


def attention_entropy(weights: torch.Tensor) -> torch.Tensor:
    """How spread each query's attention is: −Σ_s w_ts·ln w_ts, in nats (0·ln 0 = 0).

    weights [..., n, n] (rows sum to 1). Returns [..., n]. 0 when a query puts all its weight on
    one key, ln(m) when it spreads evenly over m keys: a causal query at t spreading evenly over
    its t + 1 keys has ln(t + 1).
    """
    weights = _square_weights(weights)
    logs = torch.where(weights > 0, weights.log(), torch.zeros_like(weights))
    return -(weights * logs).sum(dim=-1)


def _square_weights(weights) -> torch.Tensor:
    weights = _validate.float_tensor(weights, "weights", min_dims=2)
    if weights.shape[-2] != weights.shape[-1]:
        raise ValueError(f"weights must be square in its last two dimensions [..., n, n], got {tuple(weights.shape)}")
    return weights


def attention_at_offset(weights: torch.Tensor, offset: int) -> torch.Tensor:
    """Each query's attention weight on the key ``offset`` positions back (s = t − offset).

    weights [..., n, n]: row t (the query) holds the weights on keys s = 0 .. n-1. Returns
    [..., n]: entry t is weights[..., t, t − offset], 0 where t − offset < 0 (no such key).
    offset = 1 is the previous token, offset = 0 the query's own token.
    """
    weights = _square_weights(weights)
    offset = _validate.integer(offset, "offset", minimum=0)
    n = weights.shape[-1]
    out = torch.zeros(weights.shape[:-1], dtype=weights.dtype, device=weights.device)
    if offset < n:
        t = torch.arange(offset, n)
        out[..., offset:] = weights[..., t, t - offset]
    return out


def attention_beyond(weights: torch.Tensor, distance: int) -> torch.Tensor:
    """Share of each query's attention weight on keys more than ``distance`` positions back.

    weights [..., n, n]: row t (the query) holds the weights on keys s = 0 .. n-1 (each row
    sums to 1, e.g. a model's ``attention_weights``). Returns [..., n]: entry t is the sum of
    row t over the keys s < t − distance. Zero for every t <= distance.
    """
    weights = _square_weights(weights)
    n = weights.shape[-1]
    distance = min(_validate.integer(distance, "distance", minimum=0), n)  # n or more: no key that far
    far = (torch.arange(n)[:, None] - torch.arange(n)[None, :]) > distance  # [n, n]: t − s > distance
    return (weights * far.to(weights.dtype)).sum(dim=-1)


@dataclass(frozen=True)
class OffsetHead:
    """The head of one layer that puts the most weight on the key ``offset`` steps back.

    head: its index h; weights [n, n]: its attention on the tokens (averaged over the batch);
    on_offset [n]: its weight on key t − offset at each query t (0 where there is none);
    score: the mean of on_offset over the queries it was chosen on; layer_weights
    [n_heads, n, n]: every head of the layer, averaged over the batch, to compare with."""

    head: int
    weights: torch.Tensor
    on_offset: torch.Tensor
    score: float
    layer_weights: torch.Tensor


def offset_head(model: TinyTransformer, tokens: torch.Tensor, offset: int, *, layer: int = 0,
                queries: range | None = None) -> OffsetHead:
    """Find a model's "offset head": run ``model`` on ``tokens`` [batch, n], average layer
    ``layer``'s attention over the batch, and pick the head with the largest mean weight on key
    t − ``offset`` over the query positions ``queries`` (default offset .. n − 1, every query
    that has such a key). Lesson 10's previous-token head is ``offset_head(model, tokens, 1,
    queries=range(15, 16))``; lesson 11's "weight on t − 1" is ``offset_head(model, tokens,
    1).score``; lesson 12's copy head is ``offset_head(model, tokens, K, queries=range(K, L))``,
    and ``attention_entropy(head.weights)`` how spread it is at each query.
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if model.config.n_layers == 0:
        raise ValueError("model has no attention layer (n_layers = 0)")
    if isinstance(tokens, torch.Tensor) and tokens.ndim == 2 and tokens.shape[0] == 0:
        raise ValueError("tokens must hold at least one sequence [batch >= 1, n] to average over")
    layer = _validate.integer(layer, "layer", minimum=0, maximum=model.config.n_layers - 1)
    with torch.no_grad():  # the model checks tokens: ids [batch, n] of its vocabulary
        weights = model(tokens, details=True).attention_weights[layer].mean(0)  # [heads, n, n]
    n = weights.shape[-1]
    offset = _validate.integer(offset, "offset", minimum=0, maximum=n - 1)
    if queries is None:
        queries = range(offset, n)
    if not isinstance(queries, range) or len(queries) == 0 or queries.start < offset or queries.stop > n \
            or queries.step < 1:
        raise ValueError(f"queries must be a non-empty range of query positions within {offset} .. {n - 1} "
                         f"(each needs a key {offset} steps back), got {queries!r}")
    on_offset = attention_at_offset(weights, offset)
    means = on_offset[:, queries.start:queries.stop:queries.step].mean(1)
    head = int(means.argmax())
    return OffsetHead(head, weights[head], on_offset[head], means[head].item(), weights)


def _rope_head(model, head, layer) -> tuple[int, int]:
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if model.config.position != "rope":
        raise ValueError(f'model must use position="rope" (rotary pairs), got position="{model.config.position}"')
    if model.config.n_layers == 0:
        raise ValueError("model has no attention layer (n_layers = 0)")
    layer = _validate.integer(layer, "layer", minimum=0, maximum=model.config.n_layers - 1)
    head = _validate.integer(head, "head", minimum=0, maximum=model.config.n_heads - 1)
    if layer in model.config.nope_layers:
        raise ValueError(f"layer {layer} is a NoPE layer (nope_layers={model.config.nope_layers}): it has no rotary pairs")
    return head, layer


def pair_logits(model: TinyTransformer, tokens: torch.Tensor, *, head: int, layer: int = 0) -> torch.Tensor:
    """One RoPE head's attention logits split by rotary pair. Returns [batch, d_head/2, n, n].

    Entry [b, i, t, s] is pair i's share of the logit of query t on key s: (q_t,i · M_{s−t} k_s,i)
    / √d_head, with q and k the head's query and key features of pair i (2 each, paired as
    config.rope_layout says) after the rotation and any scaling's temperature. Summed over i it
    is the model's logit (``attention_logits``, before the causal mask). tokens: ids [batch, n].
    """
    head, layer = _rope_head(model, head, layer)
    with torch.no_grad():  # the model checks tokens
        x = model(tokens, details=True).residuals[layer]  # what enters block `layer` [batch, n, d_model]
        block, config = model.blocks[layer], model.config
        batch, n, d_model = x.shape
        d_head = d_model // config.n_heads
        qkv = block.attention.qkv(block.ln_attention(x)).view(batch, n, 3, config.n_heads, d_head)
        rotate = model.rotary(n)
        q, k = rotate(qkv[:, :, 0].transpose(1, 2))[:, head], rotate(qkv[:, :, 1].transpose(1, 2))[:, head]
    pairs = d_head // 2
    if config.rope_layout == "interleaved":
        q, k = q.reshape(batch, n, pairs, 2), k.reshape(batch, n, pairs, 2)
    else:  # "halves": pair i is features (i, i + d_head/2)
        q, k = q.reshape(batch, n, 2, pairs).transpose(-1, -2), k.reshape(batch, n, 2, pairs).transpose(-1, -2)
    return torch.einsum("btif,bsif->bits", q, k) / d_head ** 0.5


def favourite_key_gap(model: TinyTransformer, offsets, *, head: int, token_weights=None) -> torch.Tensor:
    """Does a trained RoPE head of block 1 still prefer its favourite key at distance m? Returns
    [len(offsets)], one gap per distance m (in the head's logit units, /√d_head as the model).

    Block 1 reads the tokens alone (RoPE adds nothing to the input), so its logit for a query token
    a at position t and a key token b at t − m is a function c(a, b, m). For each a, its favourite
    key b*(a) is the b with the largest c(a, b, 0): the content the head looks for. The gap at m is
    Σ_a p_a [c(a, b*(a), m) − Σ_b p_b c(a, b, m)]: how far the favourite stands above an average
    key when both are m back (Men et al.'s E[q·M_m k*] − E[q·M_m k], with k* the key the head
    itself favours instead of q + ε). p = ``token_weights`` [vocab_size] normalised (non-negative,
    e.g. the training text's character counts; None: every token alike) weighs queries and keys.
    offsets: the distances m ≥ 0, an integer tensor [k].
    """
    head, _ = _rope_head(model, head, 0)
    if not isinstance(offsets, torch.Tensor) or offsets.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"offsets must be an integer tensor of distances, got {offsets!r:.60}")
    if offsets.ndim != 1 or offsets.numel() == 0 or (offsets < 0).any() or offsets.max() >= MAX_OFFSET:
        raise ValueError(f"offsets must be a non-empty 1-D tensor of distances 0 <= m < {MAX_OFFSET:,}, got "
                         f"shape {tuple(offsets.shape)}")
    vocab = model.config.vocab_size
    if token_weights is None:
        token_weights = torch.ones(vocab, dtype=torch.float64)
    token_weights = _validate.float_tensor(token_weights, "token_weights").to(torch.float64)
    if token_weights.shape != (vocab,) or (token_weights < 0).any() or token_weights.sum() <= 0:
        raise ValueError(f"token_weights must be [vocab_size = {vocab}] non-negative weights with a positive sum, "
                         f"got shape {tuple(token_weights.shape)}")
    p = token_weights / token_weights.sum()
    with torch.no_grad():
        x = model(torch.arange(vocab)[:, None], details=True).residuals[0][:, 0]  # each token alone [vocab, d]
        block, config = model.blocks[0], model.config
        d_head = config.d_model // config.n_heads
        qkv = block.attention.qkv(block.ln_attention(x)).view(vocab, 3, config.n_heads, d_head)
        q, k = qkv[:, 0, head], qkv[:, 1, head]  # [vocab, d_head]
        n = int(offsets.max()) + 1
        q_at = model.rotary(n)(q[:, None, :].expand(vocab, n, d_head))[:, offsets]  # query at m [vocab, k, d]
        k_at_0 = model.rotary(1)(k[:, None, :])[:, 0]  # key at 0 [vocab, d_head]
        c = torch.einsum("amd,bd->amb", q_at, k_at_0).double() / d_head ** 0.5  # [a, m, b]
        favourite = (q @ k.T).argmax(1)  # rotation-free: c(a, b, 0)
    best = c[torch.arange(vocab), :, favourite]  # [vocab, k]
    return p @ (best - c @ p)


def without_pairs(model: TinyTransformer, pairs, *, head: int, layer: int = 0) -> TinyTransformer:
    """A copy of a RoPE model in which one head no longer uses the rotary ``pairs`` (an ablation).

    The rows of W_q (and its bias) that make those pairs' query features in head ``head`` of layer
    ``layer`` are set to 0, so those pairs add exactly 0 to every logit of that head (pair_logits);
    every other weight is kept. pairs: an iterable of pair indices 0 .. d_head/2 − 1 (may be
    empty). ``model`` itself is not changed.
    """
    head, layer = _rope_head(model, head, layer)
    d_head = model.config.d_model // model.config.n_heads
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__") or \
            (isinstance(pairs, torch.Tensor) and pairs.ndim == 0):
        raise TypeError(f"pairs must be an iterable of pair indices, got {type(pairs).__name__}")
    pairs = sorted({_validate.integer(i, "pairs", minimum=0, maximum=d_head // 2 - 1) for i in pairs})
    features = [(2 * i, 2 * i + 1) if model.config.rope_layout == "interleaved" else (i, i + d_head // 2)
                for i in pairs]
    rows = [head * d_head + f for pair in features for f in pair]  # query rows come first in qkv
    ablated = TinyTransformer(model.config)
    ablated.load_state_dict(model.state_dict())
    ablated.train(model.training)
    with torch.no_grad():
        qkv = ablated.blocks[layer].attention.qkv
        qkv.weight[rows] = 0.0
        qkv.bias[rows] = 0.0
    return ablated


@dataclass(frozen=True)
class RivalMargin:
    """How one offset's key beats its strongest rival, pair by pair (see rival_margin).

    by_pair [pairs]: mean over batch and queries of c_i(t, t − offset) − c_i(t, r), r the rival;
    rival_offset [batch, queries]: t − r for each query; queries: the query positions used."""

    by_pair: torch.Tensor
    rival_offset: torch.Tensor
    queries: range


def rival_margin(logits: torch.Tensor, offset: int, *, queries: range) -> RivalMargin:
    """Split a causal head's lead of the key ``offset`` back over its strongest rival by pair.

    logits [batch, pairs, n, n] (pair_logits). For each sequence b and query t in ``queries``, the
    rival r is the key s <= t, s != t − offset, with the largest total logit Σ_i c_i(t, s); the
    margin of pair i is c_i(t, t − offset) − c_i(t, r) (positive: the pair favours the right key).
    Summed over pairs, a query's margin is > 0 exactly when the right key has the top logit.
    """
    logits = _validate.float_tensor(logits, "logits")
    if logits.ndim != 4 or logits.shape[-1] != logits.shape[-2]:
        raise ValueError(f"logits must have shape [batch, pairs, n, n] (pair_logits), got {tuple(logits.shape)}")
    n = logits.shape[-1]
    offset = _validate.integer(offset, "offset", minimum=0, maximum=n - 1)
    if not isinstance(queries, range) or len(queries) == 0 or queries.step < 1 or queries.start < max(offset, 1) \
            or queries.stop > n:
        raise ValueError(f"queries must be a non-empty range of query positions within {max(offset, 1)} .. {n - 1} "
                         f"(each needs the key {offset} back and one rival), got {queries!r}")
    t = torch.tensor(list(queries))
    total = logits.sum(1)[:, t]  # [batch, queries, n]
    allowed = (torch.arange(n)[None, :] <= t[:, None]) & (torch.arange(n)[None, :] != (t - offset)[:, None])
    rival = total.masked_fill(~allowed, float("-inf")).argmax(-1)  # [batch, queries]
    batch = torch.arange(logits.shape[0])[:, None]
    right = logits[:, :, t, t - offset]  # [batch, pairs, queries]
    wrong = logits.permute(0, 2, 3, 1)[batch, t[None, :], rival].permute(0, 2, 1)  # [batch, pairs, queries]
    return RivalMargin((right - wrong).mean((0, 2)), t[None, :] - rival, queries)
