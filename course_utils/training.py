"""The course's one training loop, for every model and every kind of data, reproducibly.

``train(model, task)`` trains a TinyTransformer on a toy task (a name such as "previous_token")
or on a text (a 1-D tensor of character ids, lesson 14: random windows, each position
predicting the next character), and a TinyViT on images ((patches, labels), lesson 13). Each
step draws a fresh batch from a seeded generator and takes one AdamW step, with a constant
learning rate or a warm-up and linear decay (``schedule``), under a notebook-aware progress bar.
A list of models of one design with a list of seeds trains side by side: one vectorised pass
per step (torch.func.vmap), each model on its own batches, as training it alone gives up to
float rounding. Fixed seeds give identical histories run to run (with setup() having set one
thread and deterministic algorithms).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap
from tqdm.auto import tqdm

from . import _validate
from .models import TinyTransformer
from .reproducible import AdamW
from .tasks import TASKS, Batch, make_batch, n_classes, scored_accuracy
from .text import _ids, text_batch
from .vit import TinyViT, checked_images

SCHEDULES = ("constant", "warmup_linear")


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


def _loss_and_accuracy(model, inputs: torch.Tensor, targets: torch.Tensor,
                       scored: torch.Tensor | None) -> tuple[torch.Tensor, float]:
    """Mean cross-entropy and accuracy of one batch: over the scored positions of tokens, or over
    the images (scored None: one label per image)."""
    logits = model(inputs)
    if scored is not None:
        logits, targets = logits[scored], targets[scored]
    loss = nn.functional.cross_entropy(logits, targets)
    accuracy = (logits.argmax(dim=-1) == targets).float().mean().item()
    return loss, accuracy


@dataclass
class _Images:
    """Batches of images for a TinyViT: each generator deals the images in a fresh shuffled order,
    batch_size at a time, and shuffles again when fewer than batch_size are left."""

    patches: torch.Tensor
    labels: torch.Tensor
    batch_size: int
    orders: dict = field(default_factory=dict)

    def rows(self, generator: torch.Generator) -> torch.Tensor:
        order = self.orders.get(id(generator), torch.empty(0, dtype=torch.long))
        if order.numel() < self.batch_size:
            order = torch.randperm(self.patches.shape[0], generator=generator)
        self.orders[id(generator)] = order[self.batch_size:]
        return order[:self.batch_size]


class _Source:
    """Where a model's batches come from: a toy task, a text or images, checked against the model."""

    def __init__(self, model, task, lengths, batch_size: int, offset: int, bos: bool):
        self.offset, self.bos = offset, bos
        if isinstance(model, TinyViT):
            if not isinstance(task, (tuple, list)) or len(task) != 2 \
                    or not all(isinstance(part, torch.Tensor) for part in task):
                raise TypeError("task must be a pair of tensors (patches [N, n, patch_dim], labels [N]) to "
                                f"train a TinyViT, got {type(task).__name__}")
            try:
                patches, labels = checked_images(model, *task)
            except (TypeError, ValueError) as error:  # name the argument the caller passed
                raise type(error)(f"task (patches, labels): {error}") from None
            self.kind, self.desc = "images", "training the ViT"
            self.images = _Images(patches, labels, min(batch_size, patches.shape[0]))
            _validate.size_budget(self.images.batch_size * model.n_heads * patches.shape[1] ** 2,
                                  "the attention weights [batch_size, n_heads, n, n]")
            self.lengths = (patches.shape[1],) * 2
            return
        if isinstance(task, torch.Tensor):
            self.task, self.lengths = _check_model_text(model, task, lengths, batch_size)
            self.kind, self.desc = "text", "training on text"
        else:
            self.task, self.lengths = _check_model_task(model, task, lengths, batch_size)
            self.kind, self.desc = "task", f"training on {self.task}"
        self.batch_size, self.vocab_size = batch_size, model.config.vocab_size

    def draw(self, generator: torch.Generator):
        """One batch: (inputs, targets, scored) — tokens [b, n], next ids [b, n], mask [b, n] for
        a task or a text; patches [b, n, patch_dim], labels [b], None for images."""
        if self.kind == "images":
            rows = self.images.rows(generator)
            return self.images.patches[rows], self.images.labels[rows], None
        length = int(torch.randint(self.lengths[0], self.lengths[1] + 1, (1,), generator=generator))
        if self.kind == "text":
            batch = text_batch(self.task, batch_size=self.batch_size, length=length, generator=generator)
        else:
            batch = make_batch(self.task, batch_size=self.batch_size, length=length, vocab_size=self.vocab_size,
                               generator=generator, offset=self.offset, bos=self.bos)
        return batch.tokens, batch.targets, batch.scored


def _schedule(optimiser, schedule: str, steps: int):
    """"warmup_linear": the learning rate rises linearly to lr over the first tenth of the steps,
    then falls linearly to 0; "constant": no scheduler."""
    if schedule == "constant":
        return None
    warmup = max(1, steps // 10)
    return torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min((step + 1) / warmup, (steps - step) / max(1, steps - warmup)))


def _same_design(models) -> list:
    if not models or not all(isinstance(m, (TinyTransformer, TinyViT)) for m in models):
        raise TypeError("model must be a TinyTransformer or a TinyViT, or a non-empty list of them")
    first = models[0]
    shapes = {name: p.shape for name, p in first.named_parameters()}
    for other in models[1:]:
        if (type(other), other.config) != (type(first), first.config) or {name: p.shape for name, p in other.named_parameters()} != shapes:
            raise ValueError("model: models trained together must have the same design (configuration, widths, "
                             "layers); only their seeds may differ")
    if len({id(m) for m in models}) != len(models):
        raise ValueError("model: the list holds the same model twice")
    return list(models)


def _train_one(model, source: _Source, generator, optimiser, scheduler, steps: int, progress: bool,
               on_step=None) -> History:
    history = History()
    if on_step is not None and on_step(0, model, optimiser):
        model.eval()
        return history
    bar = tqdm(range(1, steps + 1), desc=source.desc, disable=not progress, leave=False)
    for step in bar:
        model.train()
        loss, accuracy = _loss_and_accuracy(model, *source.draw(generator))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if scheduler is not None:
            scheduler.step()
        history.loss.append(loss.item())
        history.accuracy.append(accuracy)
        bar.set_postfix(loss=f"{loss.item():.3f}", accuracy=f"{accuracy:.2f}", refresh=False)
        if on_step is not None and on_step(step, model, optimiser):
            break
    model.eval()
    return history


class _Unchecked(nn.Module):
    """A model's forward pass without its argument checks: what torch.func.vmap runs."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if isinstance(self.model, TinyViT):
            return self.model._run(inputs, self.model.grid, 1.0)
        return self.model._run(inputs)


def _optimiser(params: dict, lr: float, weight_decay: float, *, stacked: bool = False):
    """The course's AdamW (reproducible.py: torch's update with a correctly rounded square root)
    over ``params`` {name: tensor} (``stacked``: each with a leading [models] axis). Weight
    decay, if any, applies to the matrices and tables, not to biases and LayerNorm gains, as
    GPT-2 and nanoGPT train."""
    if not weight_decay:
        return AdamW(params.values(), lr=lr, weight_decay=0.0)
    matrix = [p.ndim - stacked >= 2 for p in params.values()]
    groups = [{"params": [p for p, m in zip(params.values(), matrix) if m], "weight_decay": weight_decay},
              {"params": [p for p, m in zip(params.values(), matrix) if not m], "weight_decay": 0.0}]
    return AdamW(groups, lr=lr)


def _train_side_by_side(models, source: _Source, generators, lr: float, weight_decay: float, schedule: str,
                        steps: int, progress: bool) -> list[History]:
    for m in models:
        m.train()
    params, buffers = stack_module_state(models)  # [models, ...] copies of every weight
    template = _Unchecked(copy.deepcopy(models[0]).to("meta"))
    names = {name: "model." + name for name in params}

    def logits_of(p, b, x):
        return functional_call(template, ({names[k]: v for k, v in p.items()},
                                          {"model." + k: v for k, v in b.items()}), (x,))

    optimiser = _optimiser(params, lr, weight_decay, stacked=True)
    scheduler = _schedule(optimiser, schedule, steps)
    histories = [History() for _ in models]
    for _ in tqdm(range(steps), desc=source.desc, disable=not progress, leave=False):
        drawn = [source.draw(generator) for generator in generators]
        inputs = torch.stack([d[0] for d in drawn])
        targets = torch.stack([d[1] for d in drawn])
        logits = vmap(logits_of)(params, buffers, inputs)  # [models, batch, (n,) classes]
        if drawn[0][2] is None:  # images: [models, batch, classes]
            losses = nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none").mean(dim=1)
            correct = (logits.argmax(dim=-1) == targets).float().mean(dim=1)
        else:  # tokens: [models, batch, n, classes], the mean over each model's scored positions
            scored = torch.stack([d[2] for d in drawn]).float()
            per_token = nn.functional.cross_entropy(logits.permute(0, 3, 1, 2), targets, reduction="none")
            losses = (per_token * scored).sum(dim=(1, 2)) / scored.sum(dim=(1, 2))
            correct = ((logits.argmax(dim=-1) == targets).float() * scored).sum(dim=(1, 2)) / scored.sum(dim=(1, 2))
        optimiser.zero_grad()
        losses.sum().backward()  # each model's gradient comes from its own loss only
        optimiser.step()
        if scheduler is not None:
            scheduler.step()
        for history, loss, accuracy in zip(histories, losses.tolist(), correct.tolist()):
            history.loss.append(loss)
            history.accuracy.append(accuracy)
    with torch.no_grad():
        for i, m in enumerate(models):
            for name, p in m.named_parameters():
                p.copy_(params[name][i])
            m.eval()
    return histories


def train(
    model,
    task,
    *,
    steps: int = 300,
    batch_size: int = 32,
    lengths: tuple[int, int] = (8, 16),
    lr: float = 3e-3,
    weight_decay: float = 0.0,
    seed=0,
    offset: int = 2,
    bos: bool = False,
    schedule: str = "constant",
    progress: bool = True,
    on_step=None,
) -> History | list[History]:
    """Train ``model`` on ``task`` with AdamW for ``steps`` steps; returns the History.

    model: a TinyTransformer or a TinyViT. task: for a TinyTransformer, a toy task's name or a
    text, a 1-D tensor of character ids (lesson 14), whose batches are random windows
    (text_batch) and whose targets are the next characters (the model must be causal); for a
    TinyViT, a pair (patches [N, n, patch_dim], labels [N]) of images, dealt batch_size at a
    time in a shuffled order (a fresh shuffle whenever they run out). Each step's sequences have
    a length drawn from ``lengths`` = (shortest, longest), inclusive (not used by images).
    ``offset`` (for "copy_offset") and ``bos`` (start every sequence with marker token 0) are
    passed to make_batch; a text and images ignore them. schedule: "constant" (lr throughout)
    or "warmup_linear" (up to lr over the first tenth of the steps, then linearly down to 0).
    weight_decay: AdamW's decoupled decay of the matrices and tables (not biases, not LayerNorm
    gains); 0 by default.

    on_step: None, or a function ``on_step(step, model, optimiser)`` called once before the
    first step (step 0) and after each step (1, 2, ...); if it returns True, training stops there
    (the History then holds the steps done). It may evaluate the model (training resumes in
    train mode) and set the learning rate of the steps that follow (``optimiser.param_groups``;
    with schedule="constant", which then leaves it alone): early stopping on a validation text
    and a learning rate lowered on a plateau are written this way (tools/pretrain.py). One model
    only.

    Several seeds side by side: ``model`` a list of models of one design (only their seeds
    differ) and ``seed`` a list with one seed per model; each draws its own batches from its own
    seed, and all take one vectorised step together (torch.func.vmap): each model sees the
    batches, and does the arithmetic, of training it alone, in a fraction of the time. The sums
    run in another order, so losses agree to float rounding (about 1e-6), and a weight whose
    gradient is near zero can move by a fraction of lr differently (Adam divides by the
    gradient's size). Sequences must then have one length (lengths = (n, n)). Returns one
    History per model. The models end in eval mode.
    """
    side_by_side = isinstance(model, (list, tuple))
    models = _same_design(list(model)) if side_by_side else [model]
    if not isinstance(models[0], (TinyTransformer, TinyViT)):
        raise TypeError(f"model must be a TinyTransformer or a TinyViT (or a list of them), got "
                        f"{type(models[0]).__name__}")
    batch_size = _validate.integer(batch_size, "batch_size", minimum=1)
    offset = _validate.integer(offset, "offset", minimum=1)
    bos = _validate.flag(bos, "bos")
    source = _Source(models[0], task, lengths, batch_size, offset, bos)
    steps = _validate.steps(steps, "steps")
    lr = _validate.real(lr, "lr", positive=True)
    if lr > 1:
        raise ValueError(f"lr must be at most 1 (AdamW moves every weight by about lr per step), got {lr}")
    weight_decay = _validate.real(weight_decay, "weight_decay")
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be 0 or more, got {weight_decay}")
    if weight_decay * lr >= 1:
        raise ValueError(f"weight_decay · lr must be below 1 (AdamW shrinks every matrix by that share per step), "
                         f"got {weight_decay} · {lr}")
    schedule = _validate.choice(schedule, "schedule", SCHEDULES)
    progress = _validate.flag(progress, "progress")
    if on_step is not None and not callable(on_step):
        raise TypeError(f"on_step must be None or a function (step, model, optimiser), got {type(on_step).__name__}")
    if on_step is not None and side_by_side:
        raise ValueError("on_step works with one model; train the models one at a time to stop each on its own")
    seeds = list(seed) if isinstance(seed, (list, tuple)) else [seed]
    if side_by_side != isinstance(seed, (list, tuple)) or len(seeds) != len(models):
        raise ValueError("seed must be one seed for one model, or a list with one seed per model")
    generators = [torch.Generator().manual_seed(_validate.seed(s)) for s in seeds]
    if not side_by_side:
        optimiser = _optimiser(dict(models[0].named_parameters()), lr, weight_decay)
        return _train_one(models[0], source, generators[0], optimiser, _schedule(optimiser, schedule, steps), steps,
                          progress, on_step)
    if source.lengths[0] != source.lengths[1]:
        raise ValueError(f"lengths must be one length (n, n) to train models side by side (their batches are "
                         f"stacked), got {tuple(source.lengths)}")
    _validate.size_budget(len(models) * batch_size * models[0].n_heads * source.lengths[1] ** 2
                          if isinstance(models[0], TinyViT) else
                          len(models) * batch_size * models[0].config.n_heads * source.lengths[1] ** 2,
                          "the attention weights [models, batch_size, n_heads, n, n]")
    return _train_side_by_side(models, source, generators, lr, weight_decay, schedule, steps, progress)


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
    batches, logits = [], []
    for _ in range(n_batches):
        batch = make_batch(task, batch_size=batch_size, length=length, vocab_size=model.config.vocab_size,
                           generator=generator, offset=offset, bos=bos)
        scored = batch.scored.clone()
        scored[:, :from_position] = False
        batches.append(Batch(batch.tokens, batch.targets, scored))
        logits.append(model(batch.tokens))
    model.train(was_training)
    joined = Batch(*(torch.cat([getattr(b, name) for b in batches]) for name in ("tokens", "targets", "scored")))
    if not joined.scored.any():
        raise ValueError(f"task {task!r} scores no position t >= from_position ({from_position}) in sequences of "
                         f"length {length}")
    return scored_accuracy(torch.cat(logits), joined)


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
