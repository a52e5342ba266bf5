"""Training and evaluating a TinyTransformer on a toy task, reproducibly.

train() draws fresh batches from a seeded generator every step, with a length drawn from
``lengths`` for each batch, and shows a notebook-aware progress bar. The batches come from a toy
task (a name such as "previous_token") or from a text (a 1-D tensor of character ids, lesson 14:
windows of it, each position predicting the next character). Fixed seeds give identical
histories run to run (with setup() having set one thread and deterministic algorithms).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn
from tqdm.auto import tqdm

from . import _validate
from .models import TinyTransformer
from .tasks import TASKS, make_batch, n_classes
from .text import _ids, text_batch


@dataclass
class History:
    """Per-step training loss and accuracy on the scored positions of each batch."""

    loss: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)

    def final_accuracy(self, last: int = 20) -> float:
        """Mean training accuracy over the last ``last`` steps."""
        last = _validate.integer(last, "last", minimum=1)
        if not self.accuracy:
            raise ValueError("the history is empty: train for at least one step")
        tail = self.accuracy[-last:]
        return sum(tail) / len(tail)


def _check_model_task(model, task: str, lengths, batch_size, *, name: str = "lengths") -> tuple[str, tuple[int, int]]:
    """Check the model, task, sequence lengths and batch size together; ``name`` is the length argument."""
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    task = _validate.choice(task, "task", TASKS)
    if not isinstance(lengths, (tuple, list)) or len(lengths) != 2:
        raise TypeError(f"lengths must be a pair (shortest, longest), got {lengths!r}")
    shortest = _validate.integer(lengths[0], "lengths[0]", minimum=1)
    longest = _validate.integer(lengths[1], "lengths[1]", minimum=shortest)
    batch_size = _validate.integer(batch_size, "batch_size", minimum=1)
    config = model.config
    if config.position == "learned" and longest > config.max_len:
        raise ValueError(f"{name} goes up to {longest} but the model's learned code has only max_len = "
                         f"{config.max_len} rows")
    _validate.size_budget(batch_size * config.n_heads * longest * longest,
                          f"the attention weights [batch_size, n_heads, {name}, {name}]")
    needed = n_classes(task, vocab_size=config.vocab_size, max_len=config.max_len)
    outputs = config.n_outputs or config.vocab_size
    if outputs != needed:
        raise ValueError(f"task {task!r} needs a model with n_outputs = {needed}, the model has {outputs}")
    if task in ("own_index", "count") and longest > config.max_len:
        raise ValueError(f"task {task!r} has classes up to max_len = {config.max_len}; {name} goes up to {longest}")
    return task, (shortest, longest)


def _check_model_text(model, text, lengths, batch_size) -> tuple[torch.Tensor, tuple[int, int]]:
    """Check a model and a text (1-D character ids) to train on, with the window lengths."""
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    config = model.config
    text = _ids(text, "task", vocab_size=config.vocab_size)
    if not isinstance(lengths, (tuple, list)) or len(lengths) != 2:
        raise TypeError(f"lengths must be a pair (shortest, longest), got {lengths!r}")
    shortest = _validate.integer(lengths[0], "lengths[0]", minimum=1)
    longest = _validate.integer(lengths[1], "lengths[1]", minimum=shortest)
    batch_size = _validate.integer(batch_size, "batch_size", minimum=1)
    if not config.causal:
        raise ValueError("task is a text, which trains a language model: the model must be causal "
                         "(ModelConfig(causal=True)), or it would read the character it predicts")
    if (config.n_outputs or config.vocab_size) != config.vocab_size:
        raise ValueError(f"task is a text: the model must predict the next character, n_outputs = vocab_size = "
                         f"{config.vocab_size}; the model has n_outputs = {config.n_outputs}")
    if config.position == "learned" and longest > config.max_len:
        raise ValueError(f"lengths goes up to {longest} but the model's learned code has only max_len = "
                         f"{config.max_len} rows")
    if text.shape[0] <= longest:
        raise ValueError(f"task (the text) holds {text.shape[0]} characters; windows of lengths[1] + 1 = "
                         f"{longest + 1} need more")
    _validate.size_budget(batch_size * config.n_heads * longest * longest,
                          "the attention weights [batch_size, n_heads, lengths, lengths]")
    return text, (shortest, longest)


def _loss_and_accuracy(model: TinyTransformer, batch) -> tuple[torch.Tensor, float]:
    logits = model(batch.tokens)[batch.scored]
    targets = batch.targets[batch.scored]
    loss = nn.functional.cross_entropy(logits, targets)
    accuracy = (logits.argmax(dim=-1) == targets).float().mean().item()
    return loss, accuracy


def train(
    model: TinyTransformer,
    task: str | torch.Tensor,
    *,
    steps: int = 300,
    batch_size: int = 32,
    lengths: tuple[int, int] = (8, 16),
    lr: float = 3e-3,
    seed: int = 0,
    offset: int = 2,
    bos: bool = False,
    progress: bool = True,
) -> History:
    """Train ``model`` on ``task`` with AdamW for ``steps`` steps; returns the History.

    Each step draws a batch of ``batch_size`` sequences whose length is drawn from
    ``lengths`` = (shortest, longest), inclusive. ``task`` is a toy task's name, or a text: a
    1-D tensor of character ids (lesson 14), whose batches are random windows (text_batch) and
    whose targets are the next characters (the model must be causal). ``offset`` (for
    "copy_offset") and ``bos`` (start every sequence with marker token 0) are passed to
    make_batch; a text ignores them.
    """
    text = isinstance(task, torch.Tensor)
    if text:
        task, (shortest, longest) = _check_model_text(model, task, lengths, batch_size)
    else:
        task, (shortest, longest) = _check_model_task(model, task, lengths, batch_size)
    steps = _validate.steps(steps, "steps")
    batch_size = _validate.integer(batch_size, "batch_size", minimum=1)
    lr = _validate.real(lr, "lr", positive=True)
    if lr > 1:
        raise ValueError(f"lr must be at most 1 (AdamW moves every weight by about lr per step), got {lr}")
    seed = _validate.seed(seed)
    progress = _validate.flag(progress, "progress")
    offset = _validate.integer(offset, "offset", minimum=1)
    bos = _validate.flag(bos, "bos")
    generator = torch.Generator().manual_seed(seed)
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    history = History()
    model.train()
    desc = "training on text" if text else f"training on {task}"
    bar = tqdm(range(steps), desc=desc, disable=not progress, leave=False)
    for _ in bar:
        length = int(torch.randint(shortest, longest + 1, (1,), generator=generator))
        if text:
            batch = text_batch(task, batch_size=batch_size, length=length, generator=generator)
        else:
            batch = make_batch(task, batch_size=batch_size, length=length, vocab_size=model.config.vocab_size,
                               generator=generator, offset=offset, bos=bos)
        loss, accuracy = _loss_and_accuracy(model, batch)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        history.loss.append(loss.item())
        history.accuracy.append(accuracy)
        bar.set_postfix(loss=f"{loss.item():.3f}", accuracy=f"{accuracy:.2f}", refresh=False)
    model.eval()
    return history


@torch.no_grad()
def evaluate(
    model: TinyTransformer,
    task: str,
    *,
    length: int,
    n_batches: int = 4,
    batch_size: int = 64,
    seed: int = 10_000,
    offset: int = 2,
    bos: bool = False,
    from_position: int = 0,
) -> float:
    """Accuracy of ``model`` on fresh ``task`` sequences of exactly ``length`` tokens (scored positions).

    Only positions t >= ``from_position`` count: evaluate(..., length=64, from_position=16) scores
    the positions a model trained on 16 tokens never saw. (A causal model treats positions
    0 .. 15 of a longer sequence exactly as in a 16-token one.)
    """
    length = _validate.integer(length, "length", minimum=1)
    task, _ = _check_model_task(model, task, (length, length), batch_size, name="length")
    n_batches = _validate.steps(n_batches, "n_batches")
    from_position = _validate.integer(from_position, "from_position", minimum=0)
    if from_position >= length:
        raise ValueError(f"from_position must be below length ({length}) so that some position is scored, "
                         f"got {from_position}")
    generator = torch.Generator().manual_seed(_validate.seed(seed))
    was_training = model.training
    model.eval()
    correct = total = 0
    for _ in range(n_batches):
        batch = make_batch(task, batch_size=batch_size, length=length, vocab_size=model.config.vocab_size,
                           generator=generator, offset=offset, bos=bos)
        scored = batch.scored.clone()
        scored[:, :from_position] = False
        logits = model(batch.tokens)[scored]
        correct += (logits.argmax(dim=-1) == batch.targets[scored]).sum().item()
        total += scored.sum().item()
    model.train(was_training)
    if total == 0:
        raise ValueError(f"task {task!r} scores no position t >= from_position ({from_position}) in sequences of "
                         f"length {length}")
    return correct / total


@torch.no_grad()
def accuracy_by_position(model: TinyTransformer, task: str, *, length: int, bos: bool = False,
                         batch_size: int = 256, seed: int = 10_000) -> torch.Tensor:
    """Accuracy at each position 0 .. length-1 on one fresh batch of ``task``. Returns [length].

    Positions that the task does not score (e.g. position 0 of "previous_token") are NaN.
    """
    length = _validate.integer(length, "length", minimum=1)
    task, _ = _check_model_task(model, task, (length, length), batch_size, name="length")
    seed = _validate.seed(seed)
    if not isinstance(bos, bool):
        raise TypeError(f"bos must be True or False, got {bos!r}")
    batch = make_batch(task, batch_size=batch_size, length=length, vocab_size=model.config.vocab_size,
                       generator=torch.Generator().manual_seed(seed), bos=bos)
    was_training = model.training
    model.eval()
    correct = (model(batch.tokens).argmax(dim=-1) == batch.targets).double()
    model.train(was_training)
    correct[~batch.scored] = float("nan")
    return correct.nanmean(dim=0)
