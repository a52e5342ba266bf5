"""Write the evidence record, course_utils/zoo/evidence.json (``make evidence``).

    python -m tools.evidence              # every section, then write the record
    python -m tools.evidence 10-length    # only these sections (the others kept)

For each trained section of a lesson, train the lesson's recipe at its budget and at
twice the steps on seeds 0-2 (and, where the lesson does not train them, seeds 3-5 at
the budget), and store the per-seed numbers. The lessons print them with
``how_we_know``; the claims tests re-run the same functions and require the same
numbers. Each recipe here is the lesson's, written once: ``measured=`` in the lesson's
footer checks that the lesson's own runs give the record's values."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

import course_utils
from course_utils import (
    ModelConfig,
    TinyTransformer,
    evaluate,
    initialise_table,
    n_classes,
    setup,
    steps_to_accuracy,
    train,
)
from course_utils.evidence import RECORD
from course_utils.recipes import (
    COPY_L,
    COPY_STEPS,
    copy_accuracy,
    copy_offset_models,
    four_term_models,
    last_copy_ablation,
    last_copy_models,
    layer_stack_models,
    own_index_models,
    previous_token_model,
)
from tools import pretrain

PREVIOUS = "previous_token"


def _tiny_05(seed: int, **options) -> TinyTransformer:
    """Lesson 05's model: 16 tokens, 2 heads, one layer, sinusoidal, width 32."""
    options = {
        "vocab_size": 16,
        "d_model": 32,
        "n_layers": 1,
        "position": "sinusoidal",
        **options,
    }
    return TinyTransformer(ModelConfig(**options), seed=seed)


def amplitude_run(amplitude: float, seed: int, steps: int) -> tuple[float, int | None]:
    """Lesson 05 section 7: one model at code amplitude A; (test accuracy, steps to
    90 %)."""
    model = _tiny_05(seed, position_scale=amplitude)
    history = train(model, PREVIOUS, steps=steps, lr=1e-2, seed=seed, progress=False)
    return (
        evaluate(model, PREVIOUS, length=16),
        steps_to_accuracy(history.accuracy, 0.9),
    )


def amplitude_accuracy(amplitude: float, seed: int, steps: int) -> float:
    """Lesson 05 section 7: one model at code amplitude A, its test accuracy."""
    return amplitude_run(amplitude, seed, steps)[0]


CONCAT = {"combine": "concat", "d_position": 8}
ARMS_05 = {
    "add 32 + 32, A = 1": {},
    "concat 24 ; 8, A = 1": CONCAT,
    "concat 24 ; 8, A = √3": {**CONCAT, "position_scale": math.sqrt(3)},
}


def matched_accuracy(arm: str, steps: int) -> list[float]:
    """Lesson 05 section 8: seeds 0-5 of one design side by side; test accuracies."""
    models = [_tiny_05(seed, **ARMS_05[arm]) for seed in range(6)]
    train(
        models,
        PREVIOUS,
        steps=steps,
        lr=1e-2,
        seed=list(range(6)),
        lengths=(16, 16),
        progress=False,
    )
    return [evaluate(model, PREVIOUS, length=16) for model in models]


def four_term_accuracy(task: str, seed: int, steps: int) -> float:
    """Lesson 06: the one-layer, one-head sinusoidal model on ``task``; its accuracy."""
    (model,), _ = four_term_models(task, [seed], steps)
    return evaluate(model, task, length=16)


def own_index_accuracy(causal: bool, bos: bool, steps: int) -> list[float]:
    """Lesson 09: seeds 0-5 of one design side by side; fresh-sequence accuracies."""
    return [
        evaluate(model, "own_index", length=16, bos=bos)
        for model in own_index_models(causal, bos, steps=steps)
    ]


CONFIG_07 = dict(vocab_size=16, d_model=32, n_heads=2, n_layers=2, max_len=24)
CODES_07 = {
    "learned": "learned",
    "sinusoidal": "sinusoidal",
    "table N(0,1)": "learned",
    "all at 0.02": "learned",
}
STEPS_07 = {"learned": 450, "sinusoidal": 150, "table N(0,1)": 150, "all at 0.02": 80}


def learned_accuracy(name: str, seed: int, steps: int) -> float:
    """Lesson 07 section 2: one of its four models (three starts of a learned table, and
    the sinusoid) on previous-token at 6-12 tokens; test accuracy at n = 12."""
    model = TinyTransformer(
        ModelConfig(**CONFIG_07, position=CODES_07[name]), seed=seed
    )
    if name == "table N(0,1)":
        initialise_table(model, std=1.0, seed=seed)
    if name == "all at 0.02":
        initialise_table(model, std=0.02, seed=seed, table="token")
    train(model, PREVIOUS, steps=steps, lengths=(6, 12), seed=seed, progress=False)
    return evaluate(model, PREVIOUS, length=12)


def layers_accuracy(reapply: bool, steps: int) -> list[float]:
    """Lesson 08: seeds 0-5 of the 3-block model (code added once, or before every
    block) side by side on 16 tokens with BOS; test accuracy per seed."""
    models, _ = layer_stack_models(range(6), reapply_position=reapply, steps=steps)
    return [evaluate(model, PREVIOUS, length=16, bos=True) for model in models]


def counting_accuracy(seed: int, steps: int) -> float:
    """Lesson 08 section 1's control it does not keep: the 3-block model on counting
    (lr 0.007, 16 tokens with BOS), alone; accuracy on fresh sequences."""
    config = ModelConfig(
        vocab_size=16,
        d_model=32,
        n_layers=3,
        max_len=16,
        n_outputs=n_classes("count", vocab_size=16, max_len=16),
    )
    model = TinyTransformer(config, seed=seed)
    train(
        model,
        "count",
        steps=steps,
        lr=7e-3,
        lengths=(16, 16),
        seed=seed,
        bos=True,
        progress=False,
    )
    return evaluate(model, "count", length=16, bos=True)


# lesson 10: (position, n_layers, n_heads, ALiBi slopes or None, bos)
ROWS_10 = {
    "none": ("none", 1, 8, None, False),
    "relative": ("relative", 1, 8, None, False),
    "alibi": ("alibi", 1, 8, None, False),
    "rope": ("rope", 1, 8, None, False),
    "rope H=4": ("rope", 1, 4, None, False),
    "rope H=2": ("rope", 1, 2, None, False),
}
COLUMNS_10 = {"n = 16": (16, 0), "64, t ≥ 16": (64, 16)}


def length_scores(row: str, seed: int, steps: int) -> dict[str, float]:
    """Lesson 10 section 5: the row's causal model trained on 8-16 tokens; accuracy at
    n = 16 and on positions t >= 16 of 64-token sequences."""
    position, n_layers, n_heads, slopes, bos = ROWS_10[row]
    model = previous_token_model(
        position,
        seed,
        n_layers=n_layers,
        n_heads=n_heads,
        alibi_slopes=slopes,
        bos=bos,
        steps=steps,
    )
    return {
        column: evaluate(
            model, PREVIOUS, length=n, from_position=start, n_batches=1, bos=bos
        )
        for column, (n, start) in COLUMNS_10.items()
    }


# lesson 12: causal RoPE models on copy_offset (K = 8) at exactly L = 16 tokens; the
# recipes live in course_utils.recipes, which the lesson calls too
LENGTHS_12 = {"L": COPY_L, "2L": 2 * COPY_L, "4L": 4 * COPY_L}
# the readings the footers print for seeds 3-5
FURTHER_READINGS_12 = ("none", "PI", "NTK", "YaRN, β for L=16")


def _doubled(values, steps: int) -> dict:
    """{"budget": values(steps), "double": values(2 * steps)}, one value per seed."""
    return {"budget": values(steps), "double": values(2 * steps)}


def _section(
    *, what: str, budget: str, steps, rows: dict, further_rows=None, **extra
) -> dict:
    """One section of the record: the 2x rule on seeds 0-2 at the tolerance 0.01 and,
    if given, seeds 3-5 at the budget ({row: {column: [one value per seed]}})."""
    section = dict(
        what=what,
        budget=budget,
        steps=steps,
        seeds=[0, 1, 2],
        tolerance=0.01,
        rows=rows,
    )
    if further_rows is not None:
        section["further"] = {
            "seeds": [3, 4, 5],
            "lesson_seeds": [0, 1, 2],
            "rows": further_rows,
        }
    return {**section, **extra}


def section_05_amplitude() -> dict:
    names = {a: f"A = {a:g} (code {4 * a:g})" for a in (0.1, 1.0, 8.0)}
    rows = {
        name: {
            "test accuracy": _doubled(
                lambda steps, a=a: [amplitude_accuracy(a, s, steps) for s in (0, 1, 2)],
                120,
            )
        }
        for a, name in names.items()
    }
    further = {(a, s): amplitude_run(a, s, 120) for a in names for s in (3, 4, 5)}
    return _section(
        what="test accuracy on fresh 16-token sequences",
        budget="120 steps × 32 sequences of 8–16 tokens, AdamW at lr 0.01",
        steps=[120, 240],
        rows=rows,
        further_rows={
            name: {
                "test accuracy": [further[a, s][0] for s in (3, 4, 5)],
                "steps to 90 %": [further[a, s][1] for s in (3, 4, 5)],
            }
            for a, name in names.items()
        },
    )


def section_05_matched() -> dict:
    rows = {
        arm: {
            "test accuracy": _doubled(
                lambda steps, arm=arm: matched_accuracy(arm, steps)[:3], 120
            )
        }
        for arm in ARMS_05
    }
    return _section(
        what="test accuracy; seeds 0–5 trained side by side",
        budget="120 steps × 32 sequences × 16 tokens, AdamW at lr 0.01",
        steps=[120, 240],
        rows=rows,
    )


def _section_06(task: str, further: bool = False) -> dict:
    name = task.replace("_", " ")
    rows = {
        name: {
            "test accuracy": _doubled(
                lambda steps: [four_term_accuracy(task, s, steps) for s in (0, 1, 2)],
                200,
            )
        }
    }
    further_rows = None
    if further:  # seeds 3-5, which the lesson does not train
        further_rows = {
            name: {
                "test accuracy": [four_term_accuracy(task, s, 200) for s in (3, 4, 5)]
            }
        }
    return _section(
        what="test accuracy on fresh 16-token sequences",
        budget="200 steps × 32 sequences of 8–16 tokens, AdamW at lr 0.003",
        steps=[200, 400],
        rows=rows,
        further_rows=further_rows,
    )


def section_06_last_copy() -> dict:
    rows = {
        "last copy": {
            "test accuracy": _doubled(
                lambda steps: [
                    evaluate(model, "last_copy", length=16)
                    for model in last_copy_models((0, 1, 2), steps)
                ],
                600,
            )
        }
    }
    further = last_copy_ablation(last_copy_models((3, 4, 5)))
    return _section(
        what="test accuracy on fresh 16-token sequences; seeds 0–2 side by side",
        budget="600 steps × 32 sequences × 16 tokens; AdamW, lr warmed up to 0.01, "
        "then to 0",
        steps=[600, 1200],
        rows=rows,
        further_rows={
            label: {"accuracy": row["accuracy"]} for label, row in further.items()
        },
    )


def _section_12(n_heads: int, together: bool, row: str, trained: str) -> dict:
    """Lesson 12: plain RoPE at L, 2L and 4L on seeds 0-2 at 150 and 300 steps; seeds
    3-5 (side by side, as the lesson's further seeds) read every way at 2L and 4L."""
    runs = {
        steps: copy_offset_models(n_heads, (0, 1, 2), steps, together=together)
        for steps in (COPY_STEPS, 2 * COPY_STEPS)
    }
    rows = {
        row: {
            column: {
                "budget": [copy_accuracy(m, n) for m in runs[COPY_STEPS]],
                "double": [copy_accuracy(m, n) for m in runs[2 * COPY_STEPS]],
            }
            for column, n in LENGTHS_12.items()
        }
    }
    further = copy_offset_models(n_heads, (3, 4, 5), together=True)
    section = _section(
        what=f"plain RoPE's accuracy at L and at t ≥ L; {trained}",
        budget="150 steps × 32 sequences of exactly L = 16 tokens, AdamW at lr 0.003",
        steps=[COPY_STEPS, 2 * COPY_STEPS],
        rows=rows,
        further_rows={
            reading: {
                column: [copy_accuracy(m, n, reading) for m in further]
                for column, n in LENGTHS_12.items()
                if column != "L"
            }
            for reading in FURTHER_READINGS_12
        },
    )
    section["further"]["trained"] = "side by side"
    return section


def _section_09(designs: dict) -> dict:
    rows = {
        name: {
            "fresh seqs": _doubled(
                lambda steps, c=causal, b=bos: own_index_accuracy(c, b, steps)[:3], 180
            )
        }
        for name, (causal, bos) in designs.items()
    }
    return _section(
        what="fresh-sequence accuracy; seeds 0–5 trained side by side",
        budget="180 steps × 32 sequences × 16 tokens; AdamW, lr warmed up to 0.02, "
        "then to 0",
        steps=[180, 360],
        rows=rows,
    )


def section_07_learned() -> dict:
    rows = {
        f"{name}, {steps} steps": {
            "test accuracy (n = 12)": _doubled(
                lambda n, name=name: [learned_accuracy(name, s, n) for s in (0, 1, 2)],
                steps,
            )
        }
        for name, steps in STEPS_07.items()
    }
    return _section(
        what="test accuracy at n = 12; each row at its own budget",
        budget="the steps in each row × 32 sequences of 6–12 tokens, AdamW at lr 0.003",
        steps=None,
        rows=rows,
    )


def section_08_layers() -> dict:
    rows = {
        name: {
            "accuracy": _doubled(
                lambda steps, r=reapply: layers_accuracy(r, steps)[:3], 120
            )
        }
        for name, reapply in (("added once", False), ("before every block", True))
    }
    return _section(
        what="accuracy on fresh sequences; seeds 0–5 trained side by side",
        budget="120 steps × 32 sequences of 16 tokens, AdamW at lr 0.01",
        steps=[120, 240],
        rows=rows,
    )


def section_08_count() -> dict:
    rows = {
        "count": {
            "accuracy": _doubled(
                lambda steps: [counting_accuracy(s, steps) for s in (0, 1, 2)], 120
            )
        }
    }
    return _section(
        what="accuracy on fresh sequences; each seed alone",
        budget="120 steps × 32 sequences of 16 tokens, AdamW at lr 0.007",
        steps=[120, 240],
        rows=rows,
        in_lesson=False,
    )


def section_10_length() -> dict:
    doubled_rows = ("none", "relative", "alibi", "rope", "rope H=4", "rope H=2")
    runs = {
        (row, seed, steps): length_scores(row, seed, steps)
        for row in doubled_rows
        for seed in (0, 1, 2)
        for steps in (70, 140)
    }
    rows = {
        row: {
            column: {
                "budget": [runs[row, s, 70][column] for s in (0, 1, 2)],
                "double": [runs[row, s, 140][column] for s in (0, 1, 2)],
            }
            for column in COLUMNS_10
        }
        for row in doubled_rows
    }
    further_rows = ("none", "rope", "rope H=4", "rope H=2")
    further = {
        (row, seed): length_scores(row, seed, 70)
        for row in further_rows
        for seed in (3, 4, 5)
    }
    return _section(
        what="accuracy at n = 16 and on t ≥ 16 of 64-token sequences",
        budget="70 steps × 16 sequences of 8–16 tokens, AdamW at lr 0.015 for "
        "every code",
        steps=[70, 140],
        rows=rows,
        further_rows={
            row: {
                column: [further[row, s][column] for s in (3, 4, 5)]
                for column in COLUMNS_10
            }
            for row in further_rows
        },
    )


SECTIONS = {
    "05-amplitude": section_05_amplitude,
    "05-matched": section_05_matched,
    "06-previous": lambda: _section_06(PREVIOUS, further=True),
    "06-pointer": lambda: _section_06("pointer"),
    "06-last-copy": section_06_last_copy,
    "07-learned": section_07_learned,
    "08-count": section_08_count,
    "08-layers": section_08_layers,
    "09-bos": lambda: _section_09(
        {"causal": (True, True), "bidirectional": (False, True)}
    ),
    "09-no-bos": lambda: _section_09({"causal, no BOS": (True, False)}),
    "10-length": section_10_length,
    "12-narrow": lambda: _section_12(
        2, False, "two heads of 16", "seeds 0–2 each alone"
    ),
    "12-wide": lambda: _section_12(1, True, "one head of 32", "seeds 0–2 side by side"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "keys",
        nargs="*",
        help=f"sections to make (default: all of {', '.join(SECTIONS)})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=RECORD,
        help="where to write the record (default: the course's)",
    )
    args = parser.parse_args(argv)
    unknown = [key for key in args.keys if key not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; known: {list(SECTIONS)}")
    record = (
        json.loads(args.out.read_text(encoding="utf-8"))
        if args.out.is_file()
        else {"format": 1, "sections": {}}
    )
    setup(0)
    for key in args.keys or list(SECTIONS):
        start = time.perf_counter()
        record["sections"][key] = SECTIONS[key]()
        print(f"{key}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    record["sections"] = {
        key: record["sections"][key] for key in SECTIONS if key in record["sections"]
    }
    record["made_with"] = {
        "course_utils": course_utils.__version__,
        "torch": torch.__version__,
    }
    record["numerics"] = pretrain.numerics()  # the bytes are promised where these match
    args.out.write_text(
        json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
