"""A tiny transformer whose position code is a switch.

    tokens → token embedding ⊕ A·position code → n_layers pre-LN blocks → LayerNorm → head

Input codes (added or concatenated once at the input): "sinusoidal", "learned", and lesson 02's
"integer" and "normalised". Attention codes (inside every attention layer instead): "rope",
"alibi" and "relative". "none" gives the model no position information at all.

⊕ is "add" (the code has width d_model) or "concat" (the token embedding gets d_model - d_position
columns and the code d_position, so the residual stream is still d_model wide). Fixed codes are
buffers, not parameters. ``forward(tokens, details=True)`` also returns every layer's residual
stream and every head's attention logits and weights, for the analysis lessons.
``forward(tokens, start=k)`` numbers the tokens k, k + 1, ... instead of 0, 1, ...: the
attention codes see only offsets, so their logits do not change (lesson 10 checks it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from . import _validate, input_codes
from ._deprecation import moved
from .attention import causal_mask, scaled_dot_product
from .reproducible import Linear
from .biases import RelativeBias, alibi_bias, checked_slopes
from .encodings import LAYOUTS
from .extension import RopeScaling, rope_frequencies
from .input_codes import POSITION_CODES
from .interleaving import checked_nope_layers, layer_plan, window_mask
from .rope import rotate_rows, rotation_rows

INPUT_CODES = ("sinusoidal", "learned", "integer", "normalised")
ATTENTION_CODES = ("rope", "alibi", "relative")
POSITIONS = ("none", *INPUT_CODES, *ATTENTION_CODES)
COMBINES = ("add", "concat")
ATTENTION_KERNELS = ("explicit", "fused")
MAX_START = 10**6  # forward(tokens, start=...): the first position; larger is refused

# The input codes' modules moved to input_codes.py in 0.9.
__getattr__ = moved(__name__, {name: getattr(input_codes, name) for name in (
    "SinusoidalPosition", "LearnedPosition", "IntegerPosition", "NormalisedPosition")}, since="0.9")


@dataclass(frozen=True)
class ModelConfig:
    """Everything that defines a TinyTransformer. n_outputs defaults to vocab_size."""

    vocab_size: int
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 2
    max_len: int = 64
    position: str = "sinusoidal"
    combine: str = "add"
    position_scale: float = 1.0
    d_position: int | None = None
    causal: bool = False
    reapply_position: bool = False
    n_outputs: int | None = None
    d_ff: int | None = None
    relative_max_distance: int = 8
    alibi_slopes: tuple[float, ...] | None = None  # position="alibi": m_1 .. m_H; None: Press et al.'s
    rope_layout: str = "interleaved"  # position="rope": pairs (2i, 2i+1), or "halves" (i, i + d_head/2)
    rope_scaling: RopeScaling | None = None  # position="rope": a scaling rule and its settings (lesson 12)
    rope_base: float = 10_000.0  # position="rope": ω_i = rope_base^(-2i/d_head) (rope_theta, lesson 15)
    embedding_std: float = 1.0  # the token vectors' initial spread: 1.0 as nn.Embedding; 0.02 as GPT-2, BERT
    attention_kernel: str = "explicit"  # "fused": torch's scaled_dot_product_attention when no details are asked
    nope_layers: tuple[int, ...] = ()  # position="rope": blocks that do not rotate (NoPE layers, lesson 16)
    rope_window: int | None = None  # position="rope", causal: rotating blocks read the last rope_window keys
    attn_temperature: tuple[int, float] | None = None  # (floor_scale, attn_scale): Llama 4's, on NoPE layers

    def __post_init__(self):
        # The config keeps the checked values (a 0-d tensor becomes an int), never the raw ones.
        def keep(name: str, value) -> None:
            object.__setattr__(self, name, value)

        keep("vocab_size", _validate.integer(self.vocab_size, "vocab_size", minimum=1))
        keep("d_model", _validate.d_model(self.d_model))
        keep("n_heads", n_heads := _validate.integer(self.n_heads, "n_heads", minimum=1))
        if self.d_model % n_heads:
            raise ValueError(f"d_model must be divisible by n_heads, got d_model {self.d_model}, n_heads {n_heads}")
        keep("n_layers", _validate.integer(self.n_layers, "n_layers", minimum=0))
        keep("max_len", _validate.integer(self.max_len, "max_len", minimum=1))
        _validate.choice(self.position, "position", POSITIONS)
        _validate.choice(self.combine, "combine", COMBINES)
        keep("position_scale", _validate.real(self.position_scale, "position_scale"))
        keep("embedding_std", _validate.real(self.embedding_std, "embedding_std", positive=True))
        if not isinstance(self.causal, bool) or not isinstance(self.reapply_position, bool):
            raise TypeError("causal and reapply_position must be True or False")
        keep("relative_max_distance",
             _validate.integer(self.relative_max_distance, "relative_max_distance", minimum=1))
        if self.alibi_slopes is not None:
            if self.position != "alibi":
                raise ValueError(f'alibi_slopes is only used with position="alibi", got position="{self.position}"')
            keep("alibi_slopes", checked_slopes(self.alibi_slopes, n_heads, "alibi_slopes"))
        _validate.choice(self.rope_layout, "rope_layout", LAYOUTS)
        _validate.choice(self.attention_kernel, "attention_kernel", ATTENTION_KERNELS)
        if self.position == "rope" and (self.d_model // n_heads) % 2:
            raise ValueError(f"RoPE turns pairs of features: d_model / n_heads must be even, got d_model "
                             f"{self.d_model}, n_heads {n_heads}")
        if self.rope_layout != "interleaved" and self.position != "rope":
            raise ValueError(f'rope_layout is only used with position="rope", got position="{self.position}"')
        self._check_rope_scaling()
        self._check_interleaving()
        if self.position in ATTENTION_CODES and (self.combine != "add" or self.reapply_position):
            raise ValueError(f'position="{self.position}" acts inside attention: use combine="add", reapply_position=False')
        if self.combine == "concat":
            if self.position == "none":
                raise ValueError('combine="concat" needs an input position code such as position="sinusoidal"')
            if self.d_position is None:
                raise ValueError('combine="concat" needs d_position, the width of the code (an even number < d_model)')
            keep("d_position", _validate.d_model(self.d_position, "d_position"))
            if self.d_position >= self.d_model:
                raise ValueError(f"d_position must be smaller than d_model, got {self.d_position} >= {self.d_model}")
            if self.reapply_position:
                raise ValueError('reapply_position works with combine="add" only')
        elif self.d_position is not None:
            raise ValueError('d_position is only used with combine="concat"; leave it None')
        if self.n_outputs is not None:
            keep("n_outputs", _validate.integer(self.n_outputs, "n_outputs", minimum=1))
        if self.d_ff is not None:
            keep("d_ff", _validate.integer(self.d_ff, "d_ff", minimum=1))
        self._check_sizes()

    def _check_rope_scaling(self) -> None:
        object.__setattr__(self, "rope_base", _validate.real(self.rope_base, "rope_base", positive=True))
        if self.rope_base != 10_000.0 and self.position != "rope":
            raise ValueError(f'rope_base is only used with position="rope", got position="{self.position}"')
        rule = self.rope_scaling
        if rule is None:
            return
        if not isinstance(rule, RopeScaling):
            raise TypeError(f"rope_scaling must be a RopeScaling record such as RopeScaling(\"yarn\", factor=4.0, "
                            f"original_max_len=16), or None; got {type(rule).__name__}")
        if self.position != "rope":
            raise ValueError(f'rope_scaling is only used with position="rope", got position="{self.position}"')
        if rule.kind in ("ntk", "dynamic") and self.d_model // self.n_heads == 2:
            raise ValueError(f'rope_scaling: the "{rule.kind}" rule changes the base, which one pair per head '
                             f"(d_model / n_heads = 2) does not use: each head needs at least 4 features")

    def _check_interleaving(self) -> None:
        nope = checked_nope_layers(self.nope_layers, self.n_layers)
        object.__setattr__(self, "nope_layers", nope)
        used = [name for name, value in (("nope_layers", nope or None), ("rope_window", self.rope_window),
                                         ("attn_temperature", self.attn_temperature)) if value is not None]
        if used and self.position != "rope":
            raise ValueError(f'{used[0]} is only used with position="rope", got position="{self.position}"')
        if self.rope_window is not None:
            object.__setattr__(self, "rope_window", _validate.integer(self.rope_window, "rope_window", minimum=1))
            if not self.causal:
                raise ValueError("rope_window is a causal sliding window: it needs causal=True")
        if self.attn_temperature is not None:
            if not nope:
                raise ValueError("attn_temperature scales the queries of NoPE layers: give nope_layers too")
            if not isinstance(self.attn_temperature, (tuple, list)) or len(self.attn_temperature) != 2:
                raise ValueError(f"attn_temperature must be (floor_scale, attn_scale), got {self.attn_temperature!r}")
            floor_scale, attn_scale = self.attn_temperature
            object.__setattr__(self, "attn_temperature", (
                _validate.integer(floor_scale, "attn_temperature[0] (floor_scale)", minimum=1),
                _validate.real(attn_scale, "attn_temperature[1] (attn_scale)")))

    def _check_sizes(self) -> None:
        """Refuse a model too big to build, naming the arguments that make it big."""
        d, d_ff = self.d_model, self.d_ff or 4 * self.d_model
        _validate.size_budget(self.vocab_size * d, "the token embedding [vocab_size, d_model]")
        _validate.size_budget((self.n_outputs or self.vocab_size) * d, "the output layer [n_outputs, d_model]")
        _validate.size_budget(self.max_len * d, "the position table [max_len, d_model]")
        _validate.size_budget(self.n_layers * (4 * d * d + 2 * d * d_ff + 9 * d + d_ff),
                              "the n_layers blocks of width d_model and d_ff")
        _validate.size_budget(self.n_heads * (2 * self.relative_max_distance + 1),
                              "the relative bias [n_heads, 2·relative_max_distance + 1]")

    @property
    def code_width(self) -> int:
        """Width of the position code: d_model when added, d_position when concatenated."""
        return self.d_position if self.combine == "concat" else self.d_model


@dataclass
class ModelOutput:
    """logits [batch, n, n_outputs]; residuals: n_layers + 1 tensors [batch, n, d_model] (the input
    to the first block, then the output of each block); attention_logits and attention_weights:
    one [batch, n_heads, n, n] per layer (logits before the mask)."""

    logits: torch.Tensor
    residuals: list[torch.Tensor] = field(default_factory=list)
    attention_logits: list[torch.Tensor] = field(default_factory=list)
    attention_weights: list[torch.Tensor] = field(default_factory=list)


def fused_attention(q, k, v, mask: torch.Tensor | None, bias: torch.Tensor | None) -> torch.Tensor:
    """softmax(q kᵀ/√d_head + bias, masked) v in one kernel (torch's scaled_dot_product_attention):
    the same function as attention.scaled_dot_product up to float rounding, without the weights.
    q, k, v [batch, heads, n, d_head]; mask [n, n] (True: may attend) or None; bias [heads, n, n]."""
    if bias is None:
        if mask is None:
            return nn.functional.scaled_dot_product_attention(q, k, v)
        return nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    scores_bias = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
    return nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=scores_bias)


class SelfAttention(nn.Module):
    """Multi-head self-attention. x [batch, n, d_model] → (out [batch, n, d_model], weights, logits).

    ``rotate`` (optional) is applied to the queries and to the keys, each [batch, heads, n, d_head],
    before the scores: a position code that turns them, such as RoPE (see TinyTransformer.rotary).
    ``fused=True`` computes the heads with fused_attention and returns None for weights and logits.
    """

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = Linear(d_model, 3 * d_model)
        self.out = Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, bias: torch.Tensor | None = None,
                rotate=None, fused: bool = False, query_scale: torch.Tensor | None = None):
        batch, n, d = x.shape
        q, k, v = self.qkv(x).view(batch, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        if query_scale is not None:  # [n, 1]: each query multiplied (Llama 4's temperature)
            q = q * query_scale.to(q.dtype)
        if rotate is not None:
            q, k = rotate(q), rotate(k)
        if fused:
            heads, weights, logits = fused_attention(q, k, v, mask, bias), None, None
        else:
            heads, weights, logits = scaled_dot_product(q, k, v, mask, bias)  # [batch, heads, n, d_head]
        return self.out(heads.transpose(1, 2).reshape(batch, n, d)), weights, logits


class Block(nn.Module):
    """Pre-LN transformer block: x + attention(LN(x)), then + MLP(LN(·)). ``rotate``: as in SelfAttention."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        self.ln_attention = nn.LayerNorm(d_model)
        self.attention = SelfAttention(d_model, n_heads)
        self.ln_mlp = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(Linear(d_model, d_ff), nn.GELU(), Linear(d_ff, d_model))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, bias: torch.Tensor | None = None,
                rotate=None, fused: bool = False, query_scale: torch.Tensor | None = None):
        update, weights, logits = self.attention(self.ln_attention(x), mask, bias, rotate, fused, query_scale)
        x = x + update
        return x + self.mlp(self.ln_mlp(x)), weights, logits


class TinyTransformer(nn.Module):
    """The course's model. TinyTransformer(ModelConfig(vocab_size=16, position="learned"), seed=0).

    ``seed`` makes the initial weights reproducible without touching the global random state.
    forward(tokens [batch, n]) → logits [batch, n, n_outputs], or a ModelOutput with details=True.
    forward(tokens, start=k) gives the tokens positions k .. k + n - 1 instead of 0 .. n - 1
    (k a whole number >= 0; the normalised code t/(n-1) accepts only k = 0).
    """

    def __init__(self, config: ModelConfig, *, seed: int = 0):
        super().__init__()
        if not isinstance(config, ModelConfig):
            raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
        seed = _validate.seed(seed)
        self.config = config
        d, width = config.d_model, config.code_width
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            token_width = d - width if config.combine == "concat" else d
            self.token_embedding = nn.Embedding(config.vocab_size, token_width)  # N(0, 1) entries
            if config.embedding_std != 1.0:  # rescaled, not redrawn: the other weights stay as they were
                with torch.no_grad():
                    self.token_embedding.weight.mul_(config.embedding_std)
            code = POSITION_CODES.get(config.position)
            self.position = None if code is None else code(width, config.max_len)
            self.relative_bias = (RelativeBias(config.n_heads, config.relative_max_distance)
                                  if config.position == "relative" else None)
            d_ff = config.d_ff or 4 * d
            self.blocks = nn.ModuleList(Block(d, config.n_heads, d_ff) for _ in range(config.n_layers))
            self.ln_final = nn.LayerNorm(d)
            self.head = Linear(d, config.n_outputs or config.vocab_size)

    def embed(self, tokens: torch.Tensor, start: int = 0) -> torch.Tensor:
        """The residual stream entering the first block: tokens [batch, n] → [batch, n, d_model].

        The tokens sit at positions start .. start + n - 1.
        """
        x = self.token_embedding(tokens)
        if self.position is None:
            return x
        code = self.config.position_scale * self.position(tokens.shape[1], start)
        if self.config.combine == "concat":
            return torch.cat([x, code.expand(tokens.shape[0], -1, -1)], dim=-1)
        return x + code

    def attention_bias(self, n: int) -> torch.Tensor | None:
        """The logit bias [n_heads, n, n] that ALiBi or a relative bias adds in every layer (else None)."""
        if self.config.position == "alibi":
            return alibi_bias(n, self.config.n_heads, slopes=self.config.alibi_slopes)
        if self.relative_bias is not None:
            return self.relative_bias(n)
        return None

    def rotary(self, n: int, start: int = 0):
        """For position="rope": the function that turns queries and keys [..., n, d_head] by their
        positions start .. start + n - 1 (pairs as config.rope_layout says, frequencies from
        config.rope_base, stretched as config.rope_scaling says, times its attention scale:
        YaRN's temperature). Else None."""
        config = self.config
        if config.position != "rope":
            return None
        positions = torch.arange(start, start + n, dtype=torch.float64)
        rule, d_head = config.rope_scaling, config.d_model // config.n_heads
        omega = (rope_frequencies(d_head, base=config.rope_base) if rule is None
                 else rule.frequencies(d_head, base=config.rope_base, length=start + n))
        scale = 1.0 if rule is None else rule.attention_scale
        angles = positions[:, None] * omega[None, :]  # what rope_rotate makes, made once per forward pass
        layout = config.rope_layout
        c_rows, s_rows = rotation_rows(torch.cos(angles), torch.sin(angles), layout=layout)
        return lambda x: scale * rotate_rows(x, c_rows, s_rows, layout=layout)

    def forward(self, tokens: torch.Tensor, *, details: bool = False, start: int = 0):
        tokens = self._check_tokens(tokens)
        start = self._check_start(start, tokens.shape[1])
        return self._run(tokens, start, details)

    def _run(self, tokens: torch.Tensor, start: int = 0, details: bool = False):
        """forward without the argument checks (training.train runs it under torch.func.vmap)."""
        n = tokens.shape[1]
        mask = causal_mask(n).to(tokens.device) if self.config.causal else None
        bias = self.attention_bias(n)
        rotate = self.rotary(n, start)
        x = self.embed(tokens, start)
        out = ModelOutput(logits=torch.empty(0))
        out.residuals.append(x)
        fused = self.config.attention_kernel == "fused" and not details
        for index, (block, layer) in enumerate(zip(self.blocks, layer_plan(self.config, n, start))):
            if index and self.config.reapply_position and self.position is not None:
                x = x + self.config.position_scale * self.position(n, start)
            layer_mask = mask if layer.window is None else mask & window_mask(n, layer.window).to(mask.device)
            x, weights, logits = block(x, layer_mask, bias, rotate if layer.rotates else None, fused,
                                       layer.query_scale)
            if details:
                out.residuals.append(x)
                out.attention_logits.append(logits)
                out.attention_weights.append(weights)
        out.logits = self.head(self.ln_final(x))
        if not details:
            return out.logits
        return out

    def _check_start(self, start, n: int) -> int:
        start = _validate.integer(start, "start", minimum=0, maximum=MAX_START)
        if start and self.config.position == "normalised":
            raise ValueError(f'start must be 0 for position="normalised" (t/(n-1) numbers 0 .. n-1), got {start}')
        if self.config.position == "learned" and start + n > self.config.max_len:
            raise ValueError(f"start = {start} puts the last of the {n} tokens at position {start + n - 1}, but the "
                             f"learned code has only max_len = {self.config.max_len} rows")
        return start

    def _check_tokens(self, tokens) -> torch.Tensor:
        if not isinstance(tokens, torch.Tensor):
            raise TypeError(f"tokens must be a torch.Tensor of token ids, got {type(tokens).__name__}")
        if tokens.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"tokens must hold integer token ids (torch.long), got {tokens.dtype}")
        if tokens.ndim != 2 or tokens.shape[1] == 0:
            raise ValueError(f"tokens must have shape [batch, n] with n >= 1, got {tuple(tokens.shape)}")
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.config.vocab_size):
            raise ValueError(f"tokens must be ids in 0 .. {self.config.vocab_size - 1} (vocab_size)")
        if self.config.position == "learned" and tokens.shape[1] > self.config.max_len:
            raise ValueError(
                f"tokens has {tokens.shape[1]} positions but the learned code has only max_len = {self.config.max_len} rows"
            )
        batch, n = tokens.shape
        _validate.size_budget(batch * self.config.n_heads * n * n, "the attention weights [batch, n_heads, n, n] of tokens")
        return tokens.long()


def count_parameters(model: nn.Module) -> int:
    """Number of trainable numbers in a model (buffers such as a fixed code are not counted)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
