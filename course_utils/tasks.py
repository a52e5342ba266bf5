"""Toy sequence tasks, generated on the fly from a seed.

Every task is per-token classification: a batch holds ``tokens`` [batch, n] and ``targets``
[batch, n], plus ``scored`` [batch, n] marking the positions whose prediction counts (for
"previous_token", position 0 has no previous token; for "pointer", a token that names a
position past the end of the sequence). All sequences in one batch share a
length; lengths vary from batch to batch.

| task             | target at position i                      | needs position? |
|------------------|-------------------------------------------|-----------------|
| "reverse"        | the token at position n - 1 - i           | yes             |
| "previous_token" | the token at position i - 1               | yes             |
| "copy_offset"    | the token at position i - offset          | yes             |
| "own_index"      | i itself                                  | yes             |
| "pointer"        | the token at position tokens[i]: the      | yes, and the    |
|                  | query's token names the key's position    | token with it   |
| "count"          | how often token i occurs in the sequence  | no              |
| "last_copy"      | the position j < i of the nearest earlier | yes, and the    |
|                  | copy of token i (lesson 06)               | token with it   |

In "last_copy" a position whose token has not occurred before is not scored.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _validate

TASKS = ("reverse", "previous_token", "copy_offset", "own_index", "count", "pointer", "last_copy")
NEEDS_POSITION = {"reverse": True, "previous_token": True, "copy_offset": True, "own_index": True, "count": False,
                  "pointer": True, "last_copy": True}


@dataclass(frozen=True)
class Batch:
    """tokens [batch, n] (long), targets [batch, n] (long), scored [batch, n] (bool)."""

    tokens: torch.Tensor
    targets: torch.Tensor
    scored: torch.Tensor


def n_classes(task: str, *, vocab_size: int, max_len: int) -> int:
    """How many output classes a model needs for ``task``."""
    task = _validate.choice(task, "task", TASKS)
    vocab_size = _validate.integer(vocab_size, "vocab_size", minimum=2)
    max_len = _validate.integer(max_len, "max_len", minimum=1)
    if task in ("own_index", "last_copy"):  # the answer is a position
        return max_len
    if task == "count":
        return max_len + 1
    return vocab_size


def make_batch(
    task: str,
    *,
    batch_size: int,
    length: int,
    vocab_size: int,
    generator: torch.Generator,
    offset: int = 2,
    bos: bool = False,
) -> Batch:
    """One batch of ``task`` with sequences of ``length`` tokens drawn from 0 .. vocab_size-1.

    ``offset`` is the shift of "copy_offset". In "pointer" each token is also a position: the
    target at i is tokens[b, tokens[b, i]] (use vocab_size <= length so every pointer lands). With ``bos=True`` every sequence starts with a
    marker token 0 (beginning of sequence) and the other tokens are drawn from 1 .. vocab_size-1.
    ``generator`` (a torch.Generator) makes the batch reproducible. Returns a Batch, each field
    [batch_size, length].
    """
    task = _validate.choice(task, "task", TASKS)
    batch_size = _validate.integer(batch_size, "batch_size", minimum=1)
    length = _validate.integer(length, "length", minimum=1)
    vocab_size = _validate.integer(vocab_size, "vocab_size", minimum=2, maximum=2**63 - 1)  # ids are int64
    offset = _validate.integer(offset, "offset", minimum=1)
    if not isinstance(bos, bool):
        raise TypeError(f"bos must be True or False, got {bos!r}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    _validate.size_budget(batch_size * length, "the batch [batch_size, length]")
    if task in ("count", "last_copy"):  # every token is compared with every other
        _validate.size_budget(batch_size * length * length, f"the {task} comparisons [batch_size, length, length]")
    if task == "copy_offset" and offset >= length:
        raise ValueError(f"offset must be smaller than length for copy_offset, got offset {offset}, length {length}")

    tokens = torch.randint(1 if bos else 0, vocab_size, (batch_size, length), generator=generator)
    if bos:
        tokens[:, 0] = 0
    position = torch.arange(length).expand(batch_size, length)
    scored = torch.ones(batch_size, length, dtype=torch.bool)
    if task == "reverse":
        targets = tokens.flip(dims=[1])
    elif task in ("previous_token", "copy_offset"):
        shift = 1 if task == "previous_token" else offset
        targets = torch.zeros_like(tokens)
        targets[:, shift:] = tokens[:, :-shift]
        scored[:, :shift] = False
    elif task == "own_index":
        targets = position.clone()
    elif task == "pointer":  # the token at position tokens[i]; a pointer past the end is not scored
        scored = tokens < length
        targets = torch.gather(tokens, 1, torch.where(scored, tokens, 0))
    elif task == "last_copy":  # the largest j < i with tokens[j] == tokens[i]; none: not scored
        earlier = torch.ones(length, length, dtype=torch.bool).tril(diagonal=-1)  # [i, j]: j < i
        copies = (tokens[:, :, None] == tokens[:, None, :]) & earlier
        scored = copies.any(dim=-1)
        targets = torch.where(copies, torch.arange(length), -1).amax(dim=-1).clamp(min=0)
    else:  # count
        targets = (tokens[:, :, None] == tokens[:, None, :]).sum(dim=-1)
    return Batch(tokens=tokens, targets=targets, scored=scored)


def scored_accuracy(logits: torch.Tensor, batch: Batch) -> float:
    """Share of ``batch``'s scored positions whose largest logit is the target.

    logits [batch, n, n_classes] (a model's output on ``batch.tokens``); ``batch`` from make_batch.
    Positions the task does not score (``batch.scored`` False) do not count.
    """
    if not isinstance(batch, Batch):
        raise TypeError(f"batch must be a Batch from make_batch, got {type(batch).__name__}")
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or logits.shape[:2] != batch.targets.shape:
        shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"logits must be [batch, n, n_classes] with [batch, n] = {tuple(batch.targets.shape)} "
                         f"(the batch's), got {shape}")
    if not batch.scored.any():
        raise ValueError("batch scores no position, so it has no accuracy")
    return (logits.argmax(dim=-1) == batch.targets)[batch.scored].double().mean().item()
