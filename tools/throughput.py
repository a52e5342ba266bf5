"""How well the zoo's training uses the CPU: its throughput against one core's matmul peak.

    python -m tools.throughput      # part of `make bench`

The peak is what one core can do, not what the course's pins allow: a 1024 × 1024 float32
``torch.mm`` in a separate process with one thread and MKL's fastest branch for the CPU
(``MKL_CBWR=AVX2`` on an AVX2 CPU; the course pins ``AVX2,STRICT``, measured too). Training is
measured as the zoo trains (tools/pretrain.py: one process, one thread, the course's pins) on
each experiment's recipe for a few dozen steps after a warm-up, and counted as 6 × parameters ×
tokens floating-point operations per step (forward and backward matmuls; attention's own
products and every element-wise operation come on top, uncounted).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

PEAK_SIZE = 1024
PEAK_REPEATS = 40

_PEAK = """
import json, time, torch
torch.set_num_threads(1)
a, b = torch.randn({n}, {n}), torch.randn({n}, {n})
for _ in range(5):
    torch.mm(a, b)
best = float("inf")
for _ in range(3):
    start = time.perf_counter()
    for _ in range({repeats}):
        torch.mm(a, b)
    best = min(best, (time.perf_counter() - start) / {repeats})
print(json.dumps(2 * {n} ** 3 / best / 1e9))
"""

_TRAIN = """
import json, time, torch
from course_utils import count_parameters, setup, train
from tools import pretrain
setup(0)
recipe = pretrain.recipe({experiment!r}, {position!r}, 0)
data, sha256 = pretrain._data(recipe["data"])
group = recipe["trained_with_seeds"]
vocab_size = getattr(data, "vocab_size", None)
models = [pretrain.build(pretrain.complete(pretrain.recipe({experiment!r}, {position!r}, s), sha256, vocab_size))
          for s in group]
options = dict({{k: v for k, v in recipe["train"].items() if k not in ("seed", "length", "steps")}},
               schedule="constant")
if recipe["architecture"] == "TinyViT":
    task, lengths, per_row = (data.train_patches, data.train_labels), (16, 16), 16
else:
    task, lengths, per_row = data.train, (recipe["train"]["length"],) * 2, recipe["train"]["length"]
def run(steps):
    if len(models) == 1:
        train(models[0], task, steps=steps, lengths=lengths, seed=0, progress=False, **options)
    else:
        train(models, task, steps=steps, lengths=lengths, seed=list(group), progress=False, **options)
run(5)
start = time.perf_counter()
run({steps})
seconds = time.perf_counter() - start
tokens = {steps} * recipe["train"]["batch_size"] * per_row * len(models)
flops = 6 * count_parameters(models[0]) * tokens
print(json.dumps({{"tokens_per_second": tokens / seconds, "gflops": flops / seconds / 1e9,
                  "parameters": count_parameters(models[0]), "models_side_by_side": len(models)}}))
"""


def _python(code: str, **env) -> str:
    environment = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", **env)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                         check=True, timeout=900)
    return run.stdout.strip().splitlines()[-1]


def matmul_peak(cbwr: str) -> float:
    """GFLOP/s of a 1024² float32 matmul on one thread with ``MKL_CBWR=cbwr``, best of 3."""
    return json.loads(_python(_PEAK.format(n=PEAK_SIZE, repeats=PEAK_REPEATS), MKL_CBWR=cbwr))


def training_throughput(experiment: str, position: str, steps: int = 30) -> dict:
    """Tokens per second and GFLOP/s of one zoo recipe trained as tools/pretrain trains it."""
    return json.loads(_python(_TRAIN.format(experiment=experiment, position=position, steps=steps)))


def measure() -> dict:
    """Both peaks and each experiment's throughput (its slowest code), as % of the fastest peak."""
    peaks = {"AVX2 (fastest)": matmul_peak("AVX2"), "AVX2,STRICT (the course's pin)": matmul_peak("AVX2,STRICT")}
    peak = max(peaks.values())
    runs = {f"{experiment} {position}": training_throughput(experiment, position)
            for experiment, position in (("capstone", "rope"), ("capstone", "learned"), ("vit", "rope_2d"),
                                         ("vit", "learned"))}
    for run in runs.values():
        run["percent_of_peak"] = 100 * run["gflops"] / peak
    return {"peaks_gflops": peaks, "training": runs}


def main() -> int:
    result = measure()
    for name, value in result["peaks_gflops"].items():
        print(f"matmul peak, one thread, MKL_CBWR={name}: {value:.1f} GFLOP/s")
    for name, run in result["training"].items():
        print(f"{name}: {run['tokens_per_second']:,.0f} tokens/s, {run['gflops']:.1f} GFLOP/s, "
              f"{run['percent_of_peak']:.0f}% of the peak")
    return 0


if __name__ == "__main__":
    sys.exit(main())
