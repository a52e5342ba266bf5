"""Real text for lesson 14: a character-level corpus that ships with Python, and the loss of a
language model at every position.

The corpus is English prose that ships with Python (no download): the documentation topics
behind ``help("assert")`` and the standard library's docstrings, about 1.15 million characters,
chosen so that the text is the same on every supported Python (course_utils/corpus.py); or, with
``docstrings=False``, the running Python's ``pydoc_data.topics`` alone, about 465,000 characters.
Whole units (a topic; all the docstrings of one top-level module) go to the training or the
held-out text, never parts of one. Some units repeat others verbatim (``customization`` is part
of ``specialnames``), so a held-out unit that shares more than MAX_SHARED = 5 % of its
64-character passages (SHINGLE) with the training text is dropped: the held-out text is unseen
prose. Characters are token ids: the ones seen often enough in the training text get their own
id, every other character the one id UNKNOWN = 0.

A language model reads characters 0 .. t and predicts character t + 1; its loss at position t is
the cross-entropy of that prediction in **bits per character**: −log₂ p(true next character).
Guessing uniformly among V characters costs log₂ V bits; a perfect model 0.
"""

from __future__ import annotations

import hashlib
import math
import sys
import warnings
from collections import Counter
from dataclasses import dataclass

import pydoc_data.topics
import torch
from torch import nn

from . import _validate, corpus
from .models import TinyTransformer
from .tasks import Batch

UNKNOWN = 0  # the id of every character outside the vocabulary
UNKNOWN_MARK = "\N{REPLACEMENT CHARACTER}"  # how decode_text shows it
MAX_WINDOWS = 100_000  # loss_by_position: windows per call
SHINGLE = 64  # load_text_corpus: the passage length of the leakage rule
HELD_OUT_EVERY = 8  # load_text_corpus: every 8th unit of each kind is held out (with the docstrings)
MAX_SHARED = 0.05  # load_text_corpus: a held-out topic may share at most this share of passages


@dataclass(frozen=True)
class TextCorpus:
    """A character-level corpus split by topic.

    train, held_out: 1-D long tensors of character ids; vocabulary: the characters, id i is
    vocabulary[i] (vocabulary[0] is UNKNOWN_MARK, the id of every rare character);
    train_topics, held_out_topics: the names of the units (topics, docstring units) in each
    split; dropped_topics: the units held out at first but dropped because they repeat the
    training text (see load_text_corpus); sha256: the hex sha256 of the training text, the
    held-out text and the vocabulary (each as its UTF-8 length in 8 bytes, then its UTF-8), so a
    checkpoint can record which corpus it saw ("" for a corpus built by hand).
    """

    train: torch.Tensor
    held_out: torch.Tensor
    vocabulary: str
    train_topics: tuple[str, ...]
    held_out_topics: tuple[str, ...]
    dropped_topics: tuple[str, ...] = ()
    sha256: str = ""

    @property
    def vocab_size(self) -> int:
        return len(self.vocabulary)

    def encode(self, text: str) -> torch.Tensor:
        """``encode_text(text, self.vocabulary)``."""
        return encode_text(text, self.vocabulary)

    def decode(self, ids) -> str:
        """``decode_text(ids, self.vocabulary)``."""
        return decode_text(ids, self.vocabulary)


def _vocabulary(vocabulary) -> str:
    if not isinstance(vocabulary, str):
        raise TypeError(f"vocabulary must be a string of characters, got {type(vocabulary).__name__}")
    if len(vocabulary) < 2 or vocabulary[0] != UNKNOWN_MARK:
        raise ValueError("vocabulary must start with the unknown mark (id 0) and hold at least one more "
                         "character, as build_vocabulary returns it")
    if len(set(vocabulary)) != len(vocabulary):
        raise ValueError("vocabulary must not repeat a character")
    return vocabulary


def build_vocabulary(text: str, *, min_count: int = 20) -> str:
    """The characters of ``text`` that occur at least ``min_count`` times, most frequent first
    (ties in code-point order), after the unknown mark at id 0. Returns a string, id i ↔ char i."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    min_count = _validate.integer(min_count, "min_count", minimum=1)
    counts = Counter(text)
    kept = sorted((c for c, n in counts.items() if n >= min_count and c != UNKNOWN_MARK),
                  key=lambda c: (-counts[c], c))
    if not kept:
        raise ValueError(f"no character of text occurs min_count = {min_count} times: lower min_count "
                         "or give a longer text")
    return UNKNOWN_MARK + "".join(kept)


def encode_text(text: str, vocabulary: str) -> torch.Tensor:
    """Character ids of ``text``: [len(text)] long; a character not in ``vocabulary`` gets UNKNOWN (0)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    vocabulary = _vocabulary(vocabulary)
    _validate.size_budget(len(text), "the ids [len(text)]")
    index = {c: i for i, c in enumerate(vocabulary)}
    return torch.tensor([index.get(c, UNKNOWN) for c in text], dtype=torch.long)


def decode_text(ids, vocabulary: str) -> str:
    """The characters of ``ids`` (a 1-D tensor or list of ids below len(vocabulary)); UNKNOWN shows as �."""
    vocabulary = _vocabulary(vocabulary)
    if isinstance(ids, torch.Tensor):
        if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
            raise TypeError(f"ids must hold integer ids, got dtype {ids.dtype}")
        if ids.ndim != 1:
            raise ValueError(f"ids must be 1-D, got shape {tuple(ids.shape)}")
        values = ids.tolist()
    elif isinstance(ids, (list, tuple)):
        values = [_validate.integer(i, "ids") for i in ids]
    else:
        raise TypeError(f"ids must be a 1-D tensor or a list of ids, got {type(ids).__name__}")
    if any(i < 0 or i >= len(vocabulary) for i in values):
        raise ValueError(f"ids must be in 0 .. {len(vocabulary) - 1} (len(vocabulary) - 1)")
    return "".join(vocabulary[i] for i in values)


def _split(bodies: dict[str, str], first: tuple[str, ...], min_count: int, *, what: str,
           held_out_every: int) -> TextCorpus:
    """The corpus of ``bodies`` ({unit: text}) with the units ``first`` held out at first: the
    others, sorted by name, make the training text, each followed by a blank line; a held-out unit
    repeating the training text (the leakage rule) is dropped."""
    chosen = set(first)
    kept = tuple(name for name in sorted(bodies) if name not in chosen)
    train_text = "".join(bodies[name] + "\n\n" for name in kept)
    seen = {train_text[i:i + SHINGLE] for i in range(len(train_text) - SHINGLE + 1)}

    def shared(body: str) -> float:
        passages = [body[i:i + SHINGLE] for i in range(len(body) - SHINGLE + 1)]
        return sum(p in seen for p in passages) / len(passages) if passages else 0.0

    held = tuple(name for name in first if shared(bodies[name]) <= MAX_SHARED)
    dropped = tuple(name for name in first if name not in held)
    if not held:
        raise ValueError(f"held_out_every = {held_out_every} leaves no held-out {what} that does "
                         "not repeat the training text")
    held_text = "".join(bodies[name] + "\n\n" for name in held)
    vocabulary = build_vocabulary(train_text, min_count=min_count)
    digest = hashlib.sha256()
    for part in (train_text, held_text, vocabulary):
        data = part.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little") + data)
    return TextCorpus(train=encode_text(train_text, vocabulary), held_out=encode_text(held_text, vocabulary),
                      vocabulary=vocabulary, train_topics=kept, held_out_topics=held,
                      dropped_topics=dropped, sha256=digest.hexdigest())


def _every(names: list[str], held_out_every: int) -> tuple[str, ...]:
    return tuple(name for i, name in enumerate(sorted(names)) if i % held_out_every == 0)


def load_text_corpus(*, held_out_every: int | None = None, min_count: int = 20,
                     docstrings: bool = True, fixed: bool | None = None) -> TextCorpus:
    """Real English prose that ships with Python as a TextCorpus, split by unit.

    With ``docstrings=True`` (about 1.15 million characters) the units are the documentation
    topics of ``pydoc_data.topics`` (``topic:assert``: its paragraphs that are the same on every
    supported Python) and the standard library's docstrings, one unit per top-level module or
    package (``doc:email``: every docstring of ``email.*``), as course_utils/corpus.py reads them
    from the running Python with the listing in course_utils/data/corpus_pieces.json. Topics and
    docstring units are each sorted by name and every ``held_out_every``-th of each kind (the 1st,
    9th, 17th, ... for the default 8: about 137,000 characters, one in eight, enough to measure a
    model on, the rest to train it) is held out, so both kinds are on both sides. With
    ``docstrings=False`` the units are the whole pydoc topics of the running Python, named as in
    ``help()`` (``assert``): about 465,000 characters, the corpus of version 0.2, every 4th topic
    held out by default; its text differs a little between Python releases. With
    ``docstrings=False, fixed=True`` the units are the topics again, but only their paragraphs
    that are the same on every reference Python (about 272,000 characters, 78 topics, every 4th
    held out by default): the same text on every supported Python, which the zoo's language
    models learn. ``fixed`` defaults to ``docstrings`` (the docstrings exist only as fixed pieces).

    The training text is the other units sorted by name, each followed by a blank line. Some units
    repeat others verbatim, so a held-out unit with more than MAX_SHARED (5 %) of its SHINGLE
    (64)-character passages found in the training text is dropped (to ``dropped_topics``, in
    neither text): the held-out text is unseen prose. The vocabulary is built from the training
    text alone (``build_vocabulary`` with ``min_count``), so the held-out text may contain UNKNOWN
    ids, never an unseen id. ``TextCorpus.sha256`` identifies the result (texts and vocabulary).

    A Python that lacks or changed some listed pieces (one newer than the reference Pythons of the
    listing) still gets a corpus, with a warning naming how many are missing.
    """
    docstrings = _validate.flag(docstrings, "docstrings")
    fixed = docstrings if fixed is None else _validate.flag(fixed, "fixed")
    if docstrings and not fixed:
        raise ValueError("fixed must be True (or None) with docstrings=True: the docstrings are read only as the "
                         "pieces that are the same on every reference Python")
    if held_out_every is None:
        held_out_every = HELD_OUT_EVERY if docstrings else 4
    held_out_every = _validate.integer(held_out_every, "held_out_every", minimum=2)
    min_count = _validate.integer(min_count, "min_count", minimum=1)
    if not fixed:
        topics = pydoc_data.topics.topics
        if held_out_every > len(topics):
            raise ValueError(f"held_out_every must be at most the number of topics ({len(topics)}), "
                             f"got {held_out_every}")
        bodies = {name: topics[name].strip() for name in topics}
        return _split(bodies, _every(list(bodies), held_out_every), min_count, what="topic",
                      held_out_every=held_out_every)
    pieces, missing = corpus.load_pieces()
    if not docstrings:  # the topics alone: only their pieces count
        pieces = tuple(piece for piece in pieces if piece.unit.startswith("topic:"))
        missing = tuple(name for name in missing if name.startswith("topic:"))
    if missing:
        shown = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
        warnings.warn(f"{len(missing)} of the {len(pieces) + len(missing)} pieces of the corpus are missing or "
                      f"changed on Python {sys.version.split()[0]} ({shown}): the corpus differs a little from "
                      "the one the course's stored checkpoints were trained on, so their held-out numbers may "
                      "differ slightly", stacklevel=2)
    parts: dict[str, list[str]] = {}
    for piece in pieces:
        parts.setdefault(piece.unit, []).append(piece.text)
    bodies = {unit: "\n\n".join(texts) for unit, texts in parts.items()}
    topics = [unit for unit in bodies if unit.startswith("topic:")]
    modules = [unit for unit in bodies if not unit.startswith("topic:")]
    if not docstrings:
        if held_out_every > len(topics):
            raise ValueError(f"held_out_every must be at most the number of topics ({len(topics)}), "
                             f"got {held_out_every}")
        return _split({unit: bodies[unit] for unit in topics}, _every(topics, held_out_every), min_count,
                      what="topic", held_out_every=held_out_every)
    if held_out_every > min(len(topics), len(modules)):
        raise ValueError(f"held_out_every must be at most the number of topics ({len(topics)}) and of "
                         f"docstring units ({len(modules)}), got {held_out_every}")
    first = tuple(sorted(_every(topics, held_out_every) + _every(modules, held_out_every)))
    return _split(bodies, first, min_count, what="unit", held_out_every=held_out_every)


def _count_log_probs(train: torch.Tensor, vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """log₂ p of character counts [V] (add-one smoothing) and of next-character counts given the
    previous character [V, V] (add-0.1 smoothing; row a: the character after a), counted on train."""
    _validate.size_budget(vocab_size * vocab_size, "the bigram counts [vocab_size, vocab_size]")
    counts = torch.bincount(train, minlength=vocab_size).double() + 1
    pairs = torch.full((vocab_size, vocab_size), 0.1, dtype=torch.float64)  # pairs[a, b]: b follows a
    pairs.index_put_((train[:-1], train[1:]), torch.ones(train.numel() - 1, dtype=torch.float64), accumulate=True)
    return (counts / counts.sum()).log2(), (pairs / pairs.sum(1, keepdim=True)).log2()


def unigram_bigram_bits(train: torch.Tensor, held_out: torch.Tensor, *, vocab_size: int) -> tuple[float, float]:
    """The trivial baselines of a character model: the held-out loss in bits per character of
    character counts (unigram, add-one smoothing) and of next-character counts given the previous
    character (bigram, add-0.1 smoothing), both counted on ``train``. train, held_out: 1-D ids
    below ``vocab_size``. Returns (unigram, bigram)."""
    vocab_size = _validate.integer(vocab_size, "vocab_size", minimum=1)
    train = _ids(train, "train", vocab_size=vocab_size)
    held_out = _ids(held_out, "held_out", vocab_size=vocab_size)
    if train.numel() < 2 or held_out.numel() < 2:
        raise ValueError("train and held_out must each hold at least 2 characters")
    unigram, bigram = _count_log_probs(train, vocab_size)
    return -unigram[held_out].mean().item(), -bigram[held_out[:-1], held_out[1:]].mean().item()


def counts_by_position(train: torch.Tensor, ids: torch.Tensor, *, vocab_size: int, length: int,
                       n_windows: int = 16, order: int = 2) -> torch.Tensor:
    """The loss of the count baselines at each position t = 0 .. length-1 of the windows
    ``loss_by_position`` reads (``text_windows(ids, length=length, n_windows=n_windows)``), in bits
    per character, averaged over the windows: the baseline on exactly the characters a model is
    scored on. order 1: character counts (unigram); order 2: next-character counts given the
    character at t (bigram); both counted on ``train`` as in unigram_bigram_bits. Returns [length].
    """
    vocab_size = _validate.integer(vocab_size, "vocab_size", minimum=1)
    train = _ids(train, "train", vocab_size=vocab_size)
    order = _validate.integer(order, "order", minimum=1, maximum=2)
    if train.numel() < 2:
        raise ValueError("train must hold at least 2 characters")
    windows = text_windows(_ids(ids, vocab_size=vocab_size), length=length, n_windows=n_windows)
    unigram, bigram = _count_log_probs(train, vocab_size)
    bits = unigram[windows.targets] if order == 1 else bigram[windows.tokens, windows.targets]
    return -bits.mean(dim=0).float()


def validation_split(ids: torch.Tensor, *, share: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(the ids to train on, the validation ids): the last ``share`` of ``ids`` (rounded down to
    whole characters) is the validation text, never trained on; it picks when training stops
    (the zoo's language models, README) and leaves the held-out text untouched. ids: [N]."""
    ids = _ids(ids)
    if isinstance(share, bool) or not isinstance(share, (int, float)):
        raise TypeError(f"share must be a number between 0 and 1, got {type(share).__name__}")
    if not 0 < share < 1:
        raise ValueError(f"share must lie strictly between 0 and 1, got {share}")
    n_validation = int(ids.shape[0] * share)
    if not 0 < n_validation < ids.shape[0]:
        raise ValueError(f"share {share} of the {ids.shape[0]} characters of ids leaves no validation text or "
                         "nothing to train on")
    return ids[:ids.shape[0] - n_validation], ids[ids.shape[0] - n_validation:]


def _ids(ids, name: str = "ids", *, vocab_size: int | None = None) -> torch.Tensor:
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{name} must be a 1-D tensor of character ids, got {type(ids).__name__}")
    if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise TypeError(f"{name} must hold integer character ids (torch.long), got dtype {ids.dtype}")
    if ids.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one id per character), got shape {tuple(ids.shape)}")
    if ids.numel() and int(ids.min()) < 0:
        raise ValueError(f"{name} must hold ids >= 0")
    if vocab_size is not None and ids.numel() and int(ids.max()) >= vocab_size:
        raise ValueError(f"{name} has ids up to {int(ids.max())} but the model's vocab_size is {vocab_size}")
    return ids.long()


def text_batch(ids: torch.Tensor, *, batch_size: int, length: int, generator: torch.Generator) -> Batch:
    """``batch_size`` windows of ``length`` + 1 consecutive characters of ``ids``, each starting at a
    random place drawn from ``generator``: tokens are characters 0 .. length-1 of a window, targets
    characters 1 .. length (the next character at every position). Returns a Batch, each field
    [batch_size, length], every position scored.
    """
    ids = _ids(ids)
    batch_size = _validate.integer(batch_size, "batch_size", minimum=1)
    length = _validate.integer(length, "length", minimum=1)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if ids.shape[0] < length + 1:
        raise ValueError(f"ids holds {ids.shape[0]} characters; a window of length + 1 = {length + 1} needs more")
    _validate.size_budget(batch_size * (length + 1), "the windows [batch_size, length + 1]")
    starts = torch.randint(0, ids.shape[0] - length, (batch_size,), generator=generator)
    windows = ids[starts[:, None] + torch.arange(length + 1)]
    return Batch(tokens=windows[:, :-1], targets=windows[:, 1:],
                 scored=torch.ones(batch_size, length, dtype=torch.bool))


def text_windows(ids: torch.Tensor, *, length: int, n_windows: int) -> Batch:
    """``n_windows`` windows of ``length`` + 1 characters of ``ids`` at evenly spaced starts, the
    first at 0 and the last ending at the end of ``ids``: the same windows on every call (no
    randomness), as an evaluation needs. Returns a Batch like text_batch's, each field
    [n_windows, length].
    """
    ids = _ids(ids)
    length = _validate.integer(length, "length", minimum=1)
    n_windows = _validate.integer(n_windows, "n_windows", minimum=1, maximum=MAX_WINDOWS)
    if ids.shape[0] < length + 1:
        raise ValueError(f"ids holds {ids.shape[0]} characters; a window of length + 1 = {length + 1} needs more")
    _validate.size_budget(n_windows * (length + 1), "the windows [n_windows, length + 1]")
    starts = torch.linspace(0, ids.shape[0] - length - 1, n_windows).round().long()
    windows = ids[starts[:, None] + torch.arange(length + 1)]
    return Batch(tokens=windows[:, :-1], targets=windows[:, 1:],
                 scored=torch.ones(n_windows, length, dtype=torch.bool))


@torch.no_grad()
def loss_by_position(model, ids: torch.Tensor, *, length: int, n_windows: int = 16,
                     context: int | None = None) -> torch.Tensor:
    """The loss in bits per character at each position t = 0 .. length-1 of ``n_windows`` windows
    of ``ids``: −log₂ p(character t + 1 | what the model reads), averaged over the windows.
    Returns [length].

    The windows are ``text_windows(ids, length=length, n_windows=n_windows)``: evenly spaced, the
    same for every model. With
    ``context=None`` position t reads characters 0 .. t of its window. With ``context=c`` it reads
    only the last c of them, t − c + 1 .. t, numbered 0 .. c − 1 (a sliding window): for t < c
    nothing changes; beyond, whatever lies further back is cut off.
    """

    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if not model.config.causal:
        raise ValueError("model must be causal (ModelConfig(causal=True)): a language model may not read "
                         "the character it predicts")
    outputs = model.config.n_outputs or model.config.vocab_size
    if outputs != model.config.vocab_size:
        raise ValueError(f"model must predict the next character (n_outputs = vocab_size = "
                         f"{model.config.vocab_size}), it has n_outputs = {outputs}")
    ids = _ids(ids, vocab_size=model.config.vocab_size)
    length = _validate.integer(length, "length", minimum=1)
    n_windows = _validate.integer(n_windows, "n_windows", minimum=1, maximum=MAX_WINDOWS)
    if context is not None:
        context = _validate.integer(context, "context", minimum=1)
    read = length if context is None else min(context, length)
    if model.config.position == "learned" and read > model.config.max_len:
        raise ValueError(f"length {length} needs {read} rows of the learned code, the model has only "
                         f"max_len = {model.config.max_len}")
    if ids.shape[0] < length + 1:
        raise ValueError(f"ids holds {ids.shape[0]} characters; a window of length + 1 = {length + 1} needs more")
    # The windows go through the model in chunks whose attention weights [chunk, n_heads, read, read]
    # stay under the course's cap on one tensor (one chunk, the whole batch, wherever they fit).
    _validate.size_budget(model.config.n_heads * read * read, "the attention weights of one window "
                          "[n_heads, length, length]")
    per_chunk = _validate.MAX_ELEMENTS // (model.config.n_heads * read * read)
    _validate.size_budget(n_windows * max(1, length - read + 1) * read * max(model.config.d_model, outputs),
                          "the sliding windows [n_windows, length - context + 1, context, d_model]")
    windows = text_windows(ids, length=length, n_windows=n_windows)
    tokens, targets = windows.tokens, windows.targets
    was_training = model.training
    model.eval()
    try:
        # positions 0 .. read-1 read their whole prefix either way
        logits = torch.cat([model(part) for part in tokens[:, :read].split(per_chunk)])
        if read < length:  # position t >= read: a sliding window of the last `read` characters
            slides = tokens.unfold(1, read, 1)[:, 1:]  # [n_windows, length - read, read]
            last = torch.cat([model(chunk)[:, -1] for chunk in slides.reshape(-1, read).split(per_chunk)])
            logits = torch.cat([logits, last.view(n_windows, length - read, -1)], dim=1)
    finally:
        model.train(was_training)
    nats = nn.functional.cross_entropy(logits.transpose(1, 2).float(), targets, reduction="none")
    return (nats / math.log(2)).mean(dim=0)


def context_gain(curves: dict, *, first_position: int = 8) -> dict[str, dict[str, list[float]]]:
    """What context is worth, per row: ``{row: {"t = 0", "t a-b", "gain from context": [per seed]}}``.

    ``curves`` maps a row name (a position code, "bigram counts", ...) to its loss curves in bits
    per character by position, one [L] tensor per seed (``loss_by_position``). Per curve: the loss at
    t = 0 (no context), the mean over t = first_position .. L-1, and their difference. The result
    is what ``seed_table`` prints.
    """
    if not isinstance(curves, dict) or not curves:
        raise TypeError(f"curves must be a non-empty dict {{row: [loss curve [L] per seed]}}, got {curves!r:.60}")
    first_position = _validate.integer(first_position, "first_position", minimum=1)
    table = {}
    for row, per_seed in curves.items():
        if not isinstance(per_seed, (list, tuple)) or not per_seed or not all(
                isinstance(c, torch.Tensor) and c.dim() == 1 for c in per_seed):
            raise TypeError(f"curves[{row!r}] must be a list of loss curves [L], one per seed")
        length = {c.shape[0] for c in per_seed}
        if len(length) != 1 or first_position >= min(length):
            raise ValueError(f"curves[{row!r}] must be curves of one length above first_position "
                             f"({first_position}), got lengths {sorted(length)}")
        last = length.pop() - 1
        first = [c[0].item() for c in per_seed]
        later = [c[first_position:].mean().item() for c in per_seed]
        table[row] = {"t = 0": first, f"t {first_position}-{last}": later,
                      "gain from context": [a - b for a, b in zip(first, later)]}
    return table
