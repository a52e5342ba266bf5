"""Position ids in batches: left padding and packed documents (lesson 15).

A batch puts texts of different lengths in one tensor. Two ways, and each needs the right
position ids (the numbers RoPE turns by, or the rows of a learned table):

- **Padding**: short texts get pad tokens, which the attention mask hides. A decoder pads on the
  left, so that every text's next token is the last column; the first real token of a text with
  p pads then sits in column p, and its position must be 0, not p: position = (number of real
  tokens so far) − 1, Hugging Face's ``attention_mask.cumsum(-1) − 1`` in ``generate``.
- **Packing**: training fills each row with several documents back to back (no pads). Each
  document must see only itself (a block-diagonal mask; "flash-attention varlen") and count its
  positions from 0. Hugging Face's ``DataCollatorWithFlattening`` makes such position ids and,
  by default, no mask: with FlashAttention-2, transformers finds the document boundaries where
  the position ids restart, so there the position ids are the mask.

``position_ids`` makes them from per-token document numbers; ``packed_document_bits`` measures on
a trained model what happens to the second of two packed documents when its positions continue
after the first, or when it may also read the first.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from . import _validate
from .models import TinyTransformer
from .text import MAX_WINDOWS, _ids, text_windows

PACKINGS = ("reset", "continued", "unmasked")


def position_ids(document_ids: torch.Tensor) -> torch.Tensor:
    """The position of every token within its own document. document_ids [batch, n] (or [n])
    integers: 0 a pad token, k ≥ 1 the k-th document of the row (an attention mask of 0/1 is a
    row of one document). A document is a run of equal non-zero numbers; each starts at 0.
    Pads get position 0 (the mask hides them). Returns long, shaped like document_ids.

    >>> position_ids(torch.tensor([[0, 0, 1, 1, 1], [1, 1, 2, 2, 2]]))
    tensor([[0, 0, 0, 1, 2], [0, 1, 0, 1, 2]])
    """
    if not isinstance(document_ids, torch.Tensor):
        raise TypeError(f"document_ids must be a torch.Tensor of integers, got {type(document_ids).__name__}")
    if document_ids.is_floating_point() or document_ids.is_complex():
        raise TypeError(f"document_ids must hold integers (0 pad, k >= 1 document k), got {document_ids.dtype}")
    if document_ids.ndim not in (1, 2) or document_ids.shape[-1] == 0:
        raise ValueError(f"document_ids must have shape [batch, n] or [n] with n >= 1, got "
                         f"{tuple(document_ids.shape)}")
    _validate.size_budget(document_ids.numel(), "document_ids")
    ids = document_ids.long()
    if (ids < 0).any():
        raise ValueError("document_ids must be at least 0 (0 a pad token, k >= 1 document k)")
    rows = ids[None] if ids.ndim == 1 else ids
    n = rows.shape[1]
    column = torch.arange(n).expand_as(rows)
    previous = torch.cat([torch.full_like(rows[:, :1], -1), rows[:, :-1]], dim=1)
    starts = torch.where(rows != previous, column, torch.zeros_like(column))
    first = torch.cummax(starts, dim=1).values  # column where the current run began
    out = torch.where(rows > 0, column - first, torch.zeros_like(column))
    return out[0] if ids.ndim == 1 else out


@torch.no_grad()
def packed_document_bits(model, ids: torch.Tensor, *, first_length: int, length: int, n_windows: int = 16,
                         packing: str = "reset") -> torch.Tensor:
    """The loss in bits per character at each position of a second packed document. Returns [length].

    Document B is each of ``text_windows(ids, length=length, n_windows=n_windows)``; document A,
    packed before it, is the first ``first_length`` characters of the next window (cyclically).
    ``packing``:

    - "reset": B reads only itself, at positions 0 .. length−1 (position ids reset per document,
      block-diagonal mask): the same as B alone.
    - "continued": B reads only itself but at positions first_length .. first_length+length−1
      (the mask is right, the position ids were not reset) — also what left padding with
      first_length pads does when positions are not taken from the attention mask.
    - "unmasked": A and B in one row at positions 0 .. first_length+length−1, B may read A
      (neither mask nor position ids know about documents).
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if not model.config.causal or (model.config.n_outputs or model.config.vocab_size) != model.config.vocab_size:
        raise ValueError("model must be a causal next-character model (causal=True, n_outputs = vocab_size)")
    if model.config.position == "normalised":
        raise ValueError('model must not use position="normalised": t/(n-1) has no shifted positions')
    ids = _ids(ids, vocab_size=model.config.vocab_size)
    first_length = _validate.integer(first_length, "first_length", minimum=1, maximum=10**6)
    length = _validate.integer(length, "length", minimum=1, maximum=10**6)
    n_windows = _validate.integer(n_windows, "n_windows", minimum=1, maximum=MAX_WINDOWS)
    packing = _validate.choice(packing, "packing", PACKINGS)
    span = length if packing == "reset" else first_length + length
    if model.config.position == "learned" and span > model.config.max_len:
        raise ValueError(f"first_length + length = {first_length + length} positions exceed the learned "
                         f"table's max_len = {model.config.max_len} (packing={packing!r})")
    if ids.shape[0] < max(length, first_length) + 1:
        raise ValueError(f"ids holds {ids.shape[0]} characters; a window of length + 1 = {length + 1} and "
                         f"first_length + 1 = {first_length + 1} need more")
    _validate.size_budget(n_windows * (max(first_length, length) + 1), "the windows [n_windows, "
                          "max(first_length, length) + 1]")
    _validate.size_budget(n_windows * model.config.n_heads * span * span, "the attention weights "
                          "[n_windows, n_heads, first_length + length, first_length + length]")
    _validate.size_budget(n_windows * span * max(model.config.d_model, model.config.vocab_size) * 4,
                          "the activations [n_windows, first_length + length, d_model]")
    second = text_windows(ids, length=length, n_windows=n_windows)
    first = text_windows(ids, length=first_length, n_windows=n_windows).tokens.roll(-1, dims=0)
    was_training = model.training
    model.eval()
    try:
        if packing == "reset":
            logits = model(second.tokens)
        elif packing == "continued":
            logits = model(second.tokens, start=first_length)
        else:
            logits = model(torch.cat([first, second.tokens], dim=1))[:, first_length:]
    finally:
        model.train(was_training)
    nats = nn.functional.cross_entropy(logits.transpose(1, 2).float(), second.targets, reduction="none")
    return (nats / math.log(2)).mean(dim=0)
