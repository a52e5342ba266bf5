"""The lessons' trained set-ups, one function each, shared by three readers.

A lesson trains a few seeds and prints what they do; the record of longer runs
(tools/evidence.py, printed as the lesson's "How we know" footer) trains the same set-up
at twice the budget and on seeds 3-5; a claims test re-runs both and checks the lesson's
sentences. All three call the functions here, so they cannot drift apart.

- Lesson 06, sections 4-5: ``four_term_model`` and ``four_term_models`` (the one-layer,
  one-head sinusoidal model on previous-token or pointer, one seed at a time).
- Lesson 06, section 6: ``last_copy_models`` (the causal one-head sinusoidal model
  that names the position of the nearest earlier copy of each token) and
  ``last_copy_ablation`` (what it does with each attention-logit term removed).
- Lesson 08: ``layer_stack_model`` and ``layer_stack_models`` (three blocks, the sinusoid
  added once or before every block, on previous-token with a BOS marker).
- Lesson 09: ``own_index_models`` (the one-layer model with no position code that names
  each token's own position, causal or not, with or without a BOS marker).
- Lesson 10, section 5: ``previous_token_model`` (a causal one- or two-layer model with one
  of the position codes, trained on previous-token at 8-16 tokens and read up to 64).
- Lesson 12: ``copy_offset_models`` (plain RoPE trained on copy_offset at exactly
  COPY_L tokens) and ``read_past`` / ``copy_accuracy`` (the model read past L with
  PI, NTK or YaRN, as named in READINGS).
"""

from __future__ import annotations

import torch

from . import _validate
from .decomposition import FourTerms, weight_on_key, without_terms
from .model_edits import with_rope_scaling
from .models import ModelConfig, TinyTransformer
from .tasks import Batch, make_batch, n_classes, scored_accuracy
from .training import evaluate, train

# Lesson 06 ---------------------------------------------------------------------------

FOUR_TERM_MODEL = {"vocab_size": 8, "d_model": 32, "n_heads": 1, "n_layers": 1,
                   "max_len": 16, "position": "sinusoidal"}
FOUR_TERM_STEPS = 200
LAST_COPY = "last_copy"
LAST_COPY_MODEL = {**FOUR_TERM_MODEL, "causal": True}
LAST_COPY_STEPS = 600


def _seeds(seeds) -> list[int]:
    if not isinstance(seeds, (list, tuple, range)):
        raise TypeError(f"seeds must be a list or tuple of ints, got {type(seeds).__name__}")
    seeds = [_validate.seed(seed, "seeds") for seed in seeds]
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    return seeds


def four_term_model(seed: int) -> TinyTransformer:
    """Lesson 06's model, untrained: one layer, one head, d_model 32, the sinusoid added
    at the input, 8 kinds of token, up to 16 positions."""
    return TinyTransformer(ModelConfig(**FOUR_TERM_MODEL), seed=_validate.seed(seed))


def four_term_models(task: str, seeds, steps: int = FOUR_TERM_STEPS) -> tuple[list, list]:
    """``four_term_model`` trained on ``task`` ("previous_token" or "pointer"), one seed
    after another: ``steps`` steps of 32 sequences of 8-16 tokens, AdamW at lr 0.003.
    Returns (models, their training Histories), in the order of ``seeds``."""
    task = _validate.choice(task, "task", ("previous_token", "pointer"))
    seeds = _seeds(seeds)
    steps = _validate.steps(steps, "steps")
    models = [four_term_model(seed) for seed in seeds]
    histories = [train(model, task, steps=steps, lengths=(8, 16), seed=seed,
                       progress=False) for model, seed in zip(models, seeds)]
    return models, histories


def last_copy_models(seeds, steps: int = LAST_COPY_STEPS) -> list[TinyTransformer]:
    """The one-layer, one-head sinusoidal model, causal, trained on "last_copy" (the
    position of the nearest earlier copy of each token), one per seed, side by side:
    ``steps`` steps of 32 sequences of 16 tokens, AdamW with lr warmed up to 0.01 over
    the first tenth, then down to 0. Returns the trained models, in the order of
    ``seeds``."""
    seeds = _seeds(seeds)
    steps = _validate.steps(steps, "steps")
    outputs = n_classes(LAST_COPY, vocab_size=8, max_len=16)
    config = ModelConfig(**LAST_COPY_MODEL, n_outputs=outputs)
    models = [TinyTransformer(config, seed=seed) for seed in seeds]
    train(models, LAST_COPY, steps=steps, lr=1e-2, schedule="warmup_linear",
          lengths=(16, 16), seed=seeds, progress=False)
    return models


def last_copy_test_batch() -> Batch:
    """The 256 fresh 16-token "last_copy" sequences every reading of section 6 uses."""
    return make_batch(LAST_COPY, batch_size=256, length=16, vocab_size=8,
                      generator=torch.Generator().manual_seed(2))


def last_copy_ablation(models, batch: Batch | None = None) -> dict:
    """Each model read on ``batch`` (default ``last_copy_test_batch()``) with all four
    attention-logit terms, then with each one set to 0 (``without_terms``).

    Returns {label: {"accuracy": [...], "weight on the copy": [...],
    "weight on itself": [...]}}, one value per model; labels "all four terms", then
    "without token_token" and so on. The weights are the head's mean attention on the
    scored queries' latest copy and on the query itself (``weight_on_key``); a seed_table
    prints the dict as it is.
    """
    if not isinstance(models, (list, tuple)) or not models \
            or not all(isinstance(m, TinyTransformer) for m in models):
        raise TypeError("models must be a non-empty list of TinyTransformers")
    batch = last_copy_test_batch() if batch is None else batch
    if not isinstance(batch, Batch):
        kind = type(batch).__name__
        raise TypeError(f"batch must be a Batch (make_batch), got {kind}")
    n = batch.tokens.shape[1]
    copy_keys = torch.where(batch.scored, batch.targets, -1)  # -1: not counted
    own_keys = torch.where(batch.scored, torch.arange(n).expand_as(batch.tokens), -1)
    drops = {"all four terms": (), **{f"without {t}": (t,) for t in FourTerms._fields}}
    table = {}
    for label, drop in drops.items():
        row = table[label] = {"accuracy": [], "weight on the copy": [],
                              "weight on itself": []}
        for model in models:
            try:
                run = without_terms(model, batch.tokens, drop)
                accuracy = scored_accuracy(run.logits, batch)
            except (TypeError, ValueError) as error:  # say whose the tokens are
                raise type(error)(f"batch (for models): {error}") from error
            row["accuracy"].append(accuracy)
            row["weight on the copy"].append(weight_on_key(run.weights, copy_keys))
            row["weight on itself"].append(weight_on_key(run.weights, own_keys))
    return table


# Lesson 08 ---------------------------------------------------------------------------

LAYER_STACK_STEPS = 120


def layer_stack_model(seed: int, *, reapply_position: bool = False) -> TinyTransformer:
    """Lesson 08's model, untrained: three blocks, d_model 32, two heads, the sinusoid added
    at the input (and before every block if ``reapply_position``), 16 kinds of token,
    16 positions, one output per previous-token answer."""
    seed = _validate.seed(seed)
    reapply_position = _validate.flag(reapply_position, "reapply_position")
    config = ModelConfig(vocab_size=16, d_model=32, n_layers=3, max_len=16,
                         n_outputs=n_classes("previous_token", vocab_size=16, max_len=16),
                         reapply_position=reapply_position)
    return TinyTransformer(config, seed=seed)


def layer_stack_models(seeds, *, reapply_position: bool = False,
                       steps: int = LAYER_STACK_STEPS) -> tuple[list, list]:
    """``layer_stack_model`` trained on previous-token, the seeds side by side (each on its
    own batches): ``steps`` steps of 32 sequences of 16 tokens opened by a BOS marker,
    AdamW at a constant lr 0.01. Returns (models, their training Histories), in the order
    of ``seeds``."""
    seeds = _seeds(seeds)
    steps = _validate.steps(steps, "steps")
    models = [layer_stack_model(seed, reapply_position=reapply_position) for seed in seeds]
    histories = train(models, "previous_token", steps=steps, lr=1e-2, lengths=(16, 16),
                      seed=seeds, bos=True, progress=False)
    return models, histories


# Lesson 09 ---------------------------------------------------------------------------

OWN_INDEX_STEPS = 180


def own_index_models(causal: bool, bos: bool, seeds=(0, 1, 2, 3, 4, 5),
                     steps: int = OWN_INDEX_STEPS) -> list[TinyTransformer]:
    """Lesson 09's model: one layer, two heads, d_model 32, no position code, ``causal``
    or bidirectional, trained on "own_index" (each token names its own position) on
    sequences of 16 tokens of 8 kinds, each opened by a BOS marker if ``bos``. The seeds
    side by side, each on its own batches: ``steps`` steps of 32 sequences, AdamW with
    lr warmed up to 0.02 over the first tenth, then down to 0. Returns the models in the
    order of ``seeds``."""
    causal = _validate.flag(causal, "causal")
    bos = _validate.flag(bos, "bos")
    seeds = _seeds(seeds)
    steps = _validate.steps(steps, "steps")
    config = ModelConfig(vocab_size=8, d_model=32, n_heads=2, n_layers=1, max_len=16,
                         position="none", causal=causal,
                         n_outputs=n_classes("own_index", vocab_size=8, max_len=16))
    models = [TinyTransformer(config, seed=seed) for seed in seeds]
    train(models, "own_index", steps=steps, lr=2e-2, schedule="warmup_linear",
          lengths=(16, 16), bos=bos, seed=seeds, progress=False)
    return models


# Lesson 10 ---------------------------------------------------------------------------

PREVIOUS_TOKEN_STEPS = 70


def previous_token_model(position: str, seed: int, *, n_layers: int = 1, n_heads: int = 8,
                         alibi_slopes=None, bos: bool = False,
                         steps: int = PREVIOUS_TOKEN_STEPS) -> TinyTransformer:
    """Lesson 10 section 5's model: causal, d_model 32 in ``n_heads`` heads, ``n_layers``
    layers, 8 kinds of token, room for 64 positions, ``position`` its code
    (``alibi_slopes``: ALiBi's slopes, None for Press et al.'s), trained on previous-token
    at 8-16 tokens (each opened by a BOS marker if ``bos``): ``steps`` steps of 16
    sequences, AdamW at lr 0.015. Returns the trained model."""
    seed = _validate.seed(seed)
    bos = _validate.flag(bos, "bos")
    steps = _validate.steps(steps, "steps")
    config = ModelConfig(vocab_size=8, d_model=32, n_heads=n_heads, n_layers=n_layers,
                         max_len=64, position=position, causal=True,
                         alibi_slopes=alibi_slopes)
    model = TinyTransformer(config, seed=seed)
    train(model, "previous_token", steps=steps, batch_size=16, lengths=(8, 16), lr=1.5e-2,
          seed=seed, bos=bos, progress=False)
    return model


# Lesson 12 ---------------------------------------------------------------------------

COPY_L, COPY_K, COPY_STEPS = 16, 8, 150
# the lesson's readings past L: (scaling, YaRN's beta_fast and beta_slow)
READINGS = {
    "none": (None, 32.0, 1.0),
    "PI": ("linear", 32.0, 1.0),
    "NTK": ("ntk", 32.0, 1.0),
    "YaRN": ("yarn", 32.0, 1.0),
    "YaRN, β for L=16": ("yarn", 1.0, 0.05),
}


def copy_offset_models(n_heads: int, seeds, steps: int = COPY_STEPS, *,
                       together: bool) -> list[TinyTransformer]:
    """Lesson 12's causal RoPE model (d_model 32 in ``n_heads`` heads, one layer)
    trained on copy_offset (K = COPY_K) at exactly L = COPY_L tokens: ``steps`` steps of
    32 sequences, AdamW at lr 0.003. ``together``: the seeds side by side (each on its
    own batches), else one after another. Returns the models in the order of
    ``seeds``."""
    n_heads = _validate.integer(n_heads, "n_heads", minimum=1, maximum=32)
    if 32 % n_heads:
        raise ValueError(f"n_heads must divide d_model 32, got {n_heads}")
    seeds = _seeds(seeds)
    steps = _validate.steps(steps, "steps")
    together = _validate.flag(together, "together")
    config = ModelConfig(vocab_size=16, d_model=32, n_heads=n_heads, n_layers=1,
                         max_len=64, position="rope", causal=True)
    models = [TinyTransformer(config, seed=seed) for seed in seeds]
    groups = [(models, seeds)] if together else list(zip(models, seeds))
    for group, seed in groups:
        train(group, "copy_offset", steps=steps, lengths=(COPY_L, COPY_L),
              offset=COPY_K, lr=3e-3, seed=seed, progress=False)
    return models


def read_past(model: TinyTransformer, reading: str, factor: float,
              betas: tuple[float, float] | None = None) -> TinyTransformer:
    """``model`` read with one of READINGS at ``factor`` s >= 1 (n / L), trained length
    L = COPY_L: a copy with scaled frequencies (``with_rope_scaling``). ``betas``
    (beta_fast, beta_slow) replace a YaRN reading's own."""
    reading = _validate.choice(reading, "reading", tuple(READINGS))
    factor = _validate.real(factor, "factor")
    if factor < 1:
        raise ValueError(f"factor must be at least 1 (s = n / L), got {factor}")
    scaling, fast, slow = READINGS[reading]
    if betas is not None:
        if scaling != "yarn":
            raise ValueError(f"betas go with a YaRN reading, not with {reading!r}")
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"betas must be a pair (beta_fast, beta_slow), got {betas!r}")
        fast, slow = (_validate.real(beta, "betas", positive=True) for beta in betas)
        if slow >= fast:
            raise ValueError(f"betas must be (beta_fast, beta_slow) with beta_slow below "
                             f"beta_fast, got {betas!r}")
    if scaling is None:
        return with_rope_scaling(model, None)
    return with_rope_scaling(model, scaling, factor=factor, original_max_len=COPY_L,
                             beta_fast=fast, beta_slow=slow)


def copy_accuracy(model: TinyTransformer, n: int, reading: str = "none") -> float:
    """Accuracy of ``model`` on n-token copy_offset sequences, read with ``reading`` at
    factor n / L; past L only the positions t >= L count."""
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    n = _validate.integer(n, "n", minimum=COPY_K + 1, maximum=model.config.max_len)
    return evaluate(read_past(model, reading, max(n / COPY_L, 1.0)), "copy_offset",
                    offset=COPY_K, length=n, from_position=COPY_L if n > COPY_L else 0)
