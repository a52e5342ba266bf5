"""Try a zoo recipe at another budget or schedule, to see what a cheaper zoo would cost.

    python -m tools.recipe_trials capstone rope --steps 1000 --schedule warmup_linear
    python -m tools.recipe_trials capstone none --steps 6000 --schedule constant
    python -m tools.recipe_trials vit sinusoidal_2d --steps 1500

Starts from the zoo's recipe (tools/pretrain.py: model configuration, initial seed, data, batch,
learning rate, weight decay), replaces what the options name, trains with the course's ``train``
in this process (one thread, the course's pins) and prints the held-out metric as the zoo
measures it, on float32 weights, with the seconds it took. A language model trains on the whole
training text for a fixed number of steps (no validation tail, no stopping rule); the ViT trains
seeds 0-2 side by side, as the zoo's first group, and the mean of their test accuracies is its
metric. Nothing is written: the README's zoo section quotes these trials (issue 27's budget).
"""

from __future__ import annotations

import argparse
import time

from course_utils import setup, train
from course_utils.vision import evaluate_vit
from course_utils.zoo import build
from tools import pretrain
from tools.stopping import mean_bits


def trial(experiment: str, position: str, *, steps: int, schedule: str | None = None, lr: float | None = None,
          batch_size: int | None = None) -> dict:
    """Train the recipe's model(s) at this budget; returns the metric, per-seed values and seconds."""
    setup(0)
    seeds = pretrain.EXPERIMENTS[experiment][0]["convergence_seeds"]
    recipes = [pretrain.recipe(experiment, position, seed) for seed in seeds]
    data, data_sha = pretrain._data(recipes[0]["data"])
    for r in recipes:
        pretrain.complete(r, data_sha, getattr(data, "vocab_size", None))
    options = {k: v for k, v in recipes[0]["train"].items() if k not in ("seed", "length")}
    options.update({k: v for k, v in (("steps", steps), ("schedule", schedule), ("lr", lr),
                                      ("batch_size", batch_size)) if v is not None})
    models = [build(r) for r in recipes]
    started = time.perf_counter()
    if recipes[0]["architecture"] == "TinyViT":
        train(models if len(models) > 1 else models[0], (data.train_patches, data.train_labels), lengths=(1, 1),
              seed=list(seeds) if len(models) > 1 else seeds[0], progress=False, **options)
        values = [evaluate_vit(m, data.test_patches, data.test_labels) for m in models]
        metric = "test_accuracy"
    else:
        length = recipes[0]["train"]["length"]
        train(models[0], data.train, lengths=(length, length), seed=seeds[0], progress=False, **options)
        values = [mean_bits(models[0], data.held_out, length=length, n_windows=pretrain.TEXT_WINDOWS,
                            first_position=pretrain.FIRST_SCORED)]
        metric = "held_out_bits_per_char"
    return {"metric": metric, "mean": sum(values) / len(values), "values": values, "options": options,
            "seconds": time.perf_counter() - started}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment", choices=sorted(pretrain.EXPERIMENTS))
    parser.add_argument("position")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--schedule", choices=("constant", "warmup_linear"))
    parser.add_argument("--lr", type=float)
    parser.add_argument("--batch-size", type=int)
    args = parser.parse_args(argv)
    if args.position not in pretrain.EXPERIMENTS[args.experiment][1]:
        parser.error(f"position: {args.experiment} has {sorted(pretrain.EXPERIMENTS[args.experiment][1])}")
    out = trial(args.experiment, args.position, steps=args.steps, schedule=args.schedule, lr=args.lr,
                batch_size=args.batch_size)
    budget = ", ".join(f"{k} {v}" for k, v in out["options"].items())
    values = " ".join(f"{v:.4f}" for v in out["values"])
    print(f"{args.experiment} {args.position} ({budget}): {out['metric']} {out['mean']:.4f} "
          f"[{values}] in {out['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
