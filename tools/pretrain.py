"""Make the model zoo (course_utils/zoo/): train every checkpoint from its recipe, reproducibly.

    python -m tools.pretrain                    # `make pretrain`: every experiment, 2 processes
    python -m tools.pretrain --experiment vit   # one experiment (the manifest keeps the others)
    python -m tools.pretrain --check NAME       # re-train one checkpoint; exit 0 only if the
                                                # bytes equal the shipped file's
    python -m tools.pretrain --list             # the checkpoints and their convergence records
    python -m tools.pretrain --tiny --zoo-dir /tmp/zoo   # the whole pipeline at toy scale

A recipe (RECIPES below, written into every manifest entry) fixes everything that decides the
bytes of a checkpoint: the model's configuration and initial seed, the data and its sha256, the
steps, batch, length, learning rate, weight decay and schedule, the training seed, and the group
of seeds trained side by side with it (torch.func.vmap: a model trained in a group differs from
the same model trained alone by float rounding, so the group is part of the recipe). Each group
trains in its own process with one thread under the course's pinned kernels (session.setup), so
the same recipe gives the same bytes on any x86-64 CPU with AVX2; the processes use the cores.
Weights are stored as float16; every metric is measured on them as stored.

Converged, by the zoo's rule: for each experiment and code the same recipe is also trained with
twice the budget (twice the steps, the schedule stretched to match; for a recipe that stops
itself on a validation text, twice the step cap and twice the patience) for the convergence seeds (text: seed 0; images:
seeds 0-2, whose mean counts, one seed's 450 test images being too few); both held-out numbers go
into the seed-0 entry's "convergence" record. The rule asks them to differ by at most 0.05 bits per
character or 1 accuracy point; --list and the summary say where it holds.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import multiprocessing
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import save as save_safetensors
from tqdm import tqdm

from course_utils import load_digits_patches, load_text_corpus, setup, train
from course_utils.session import pin_numerics
from course_utils.text import unigram_bigram_bits
from course_utils.vision import evaluate_vit
from course_utils.zoo import MANIFEST, ZOO_DIR, build
from tools import fingerprint
from tools.stopping import PlateauStop, mean_bits, validation_split

STORAGE = torch.float16
FIRST_SCORED = 8  # text: the held-out metric averages positions 8 .. L-1 (past the first few)
TEXT_WINDOWS = 1024  # text: evenly spaced held-out windows the metric averages over
RULE = {"held_out_bits_per_char": 0.05, "test_accuracy": 0.01}

# One recipe per experiment and position code; seeds 0-5 each (lessons show 0-2, claims tests 3-5).
# The capstone's language models learn the pydoc topics' paragraphs that are the same on every
# supported Python (load_text_corpus(docstrings=False, fixed=True): lesson 14's kind of text, held
# fixed) until a validation text stops improving: the last tenth of the training text, never
# trained on, never the held-out text. The learning rate warms up over 100 steps, is lowered
# (x0.3) when the validation loss has not improved by 0.001 bits in 3 checks (every 50 steps), and
# after the second lowering the next such plateau ends training; the model kept is the one of the
# best check. `steps` is a cap. Its 2x run doubles the cap and the patience (6 checks, 300 steps
# without improvement before each lowering and the stop), so a plateau the model would have left
# with more patience shows up as a difference.
_CAPSTONE = dict(
    architecture="TinyTransformer",
    config=dict(d_model=64, n_heads=2, n_layers=2, max_len=128, causal=True, attention_kernel="fused"),
    data=dict(source="load_text_corpus", options={"docstrings": False, "fixed": True}),
    train=dict(steps=2400, batch_size=32, length=128, lr=3e-3, weight_decay=0.1, schedule="constant"),
    stopping=dict(validation_share=0.1, every=50, n_windows=256, first_position=8, min_improvement=0.001,
                  patience=3, lr_factor=0.3, lr_drops=2, warmup=100),
    groups=((0,), (1,), (2,), (3,), (4,), (5,)),
    convergence_seeds=(0,),
)
_VIT = dict(
    architecture="TinyViT",
    config=dict(grid=[4, 4], patch_dim=4, d_model=64, n_heads=2, n_layers=2, n_classes=10),
    data=dict(source="load_digits_patches", options={}),
    train=dict(steps=3000, batch_size=64, lr=5e-3, weight_decay=0.0, schedule="warmup_linear"),
    groups=((0, 1, 2), (3, 4, 5)),
    convergence_seeds=(0, 1, 2),
)
# Per code: its settings on top of the experiment's (config, train). Initial scales as in the
# model each code imitates: GPT-2 (learned), Llama (RoPE), BLOOM (ALiBi) and NoPE's GPT-style
# models start token vectors at std 0.02; the sinusoid is Vaswani et al.'s, whose token vectors
# are scaled by sqrt(d_model) to about unit size against the code's amplitude 1.
_GPT_START = {"config": {"embedding_std": 0.02}}
# NoPE learns position only through the causal mask (lesson 09), slowly: at the shared 2,400-step
# cap five of six seeds were still improving and twice the cap moved seed 0 by 0.29 bits
# (2026-11-26), so its cap is four times the others' (the same stopping rule ends it earlier).
_NOPE = {"config": {"embedding_std": 0.02}, "train": {"steps": 9600}, "stopping": {"patience": 6}}
# Lesson 16's interleaved layers, on the capstone recipe (the same text, size, learning rate and
# stopping rule; RoPE's start, std 0.02, as Llama): block 2 does not rotate — a NoPE layer, as
# every fourth layer of SmolLM3 (no_rope_layers [1, 0]: 1 rotates) and Llama 4 — and in "irope"
# the rotating block 1 also reads only the last 32 characters, as Command A's sliding-window RoPE
# layers (Llama 4's are chunked), while the NoPE block reads the whole prefix.
_ROPE_NOPE = {"config": {"embedding_std": 0.02, "position": "rope", "nope_layers": [1]}}
_IROPE = {"config": {**_ROPE_NOPE["config"], "rope_window": 32}}
# Lesson 15's bases, on the capstone recipe (RoPE's start, std 0.02, as Llama): ω_i = base^(-2i/32)
# for a head of 32 features. Men et al.'s similar-token sum B_m first turns negative at m = 5 (base
# 10), 28 (100), 474 (10⁴, the capstone's own) and 3,478 (10⁶): 10 and 100 fail the bound for the
# trained length L = 128, 10⁴ and 10⁶ clear it.
_BASES = {f"base_{name}": {"config": {"embedding_std": 0.02, "position": "rope", "rope_base": base}}
          for name, base in (("10", 10.0), ("100", 100.0), ("1e6", 1e6))}
EXPERIMENTS = {
    "capstone": (_CAPSTONE, {"none": _NOPE, "sinusoidal": {"config": {"embedding_std": 1.0}},
                             "learned": _GPT_START, "rope": _GPT_START, "alibi": _GPT_START}),
    # The ViT's codes: a learned table at std 0.02 (ViT, Dosovitskiy et al. 2021), MAE's fixed 2-D
    # sinusoid (base 10⁴), and Heo et al. 2024's RoPE-Axial with their base θ = 100 (rope-vit).
    "vit": (_VIT, {"none": {}, "learned": {}, "sinusoidal_2d": {}, "rope_2d": {"config": {"base": 100.0}}}),
    "interleaved": (_CAPSTONE, {"rope_nope": _ROPE_NOPE, "irope": _IROPE}),
    "rope_base": (_CAPSTONE, _BASES),
}


# --tiny: the same pipeline at toy scale (seconds, not an hour), for the tests and for trying a change.
TINY = {"capstone": dict(config=dict(d_model=16, n_heads=2, max_len=16),
                         train=dict(steps=6, batch_size=4, length=16), evaluation=dict(n_windows=8),
                         stopping=dict(every=2, n_windows=4, patience=1, warmup=2, lr_drops=0)),
        "vit": dict(config=dict(d_model=16, n_heads=2), train=dict(steps=2, batch_size=8), evaluation={})}
TINY["interleaved"] = TINY["rope_base"] = TINY["capstone"]


def recipe(experiment: str, position: str, seed: int, *, double: bool = False, tiny: bool = False) -> dict:
    """The full recipe of one checkpoint (``double``: the convergence run, twice the steps;
    ``tiny``: the toy scale of --tiny)."""
    base, positions = EXPERIMENTS[experiment]
    # a code's settings may name the model's position code itself ("rope" for lesson 16's layers)
    config = {**base["config"], "position": position, **positions[position].get("config", {})}
    training = dict(base["train"], **positions[position].get("train", {}), seed=seed)
    evaluation = ({"metric": "test_accuracy", "images": "test"} if base["architecture"] == "TinyViT" else
                  {"metric": "held_out_bits_per_char", "n_windows": TEXT_WINDOWS, "first_position": FIRST_SCORED})
    if tiny:
        config.update(TINY[experiment]["config"])
        training.update(TINY[experiment]["train"])
        evaluation.update(TINY[experiment]["evaluation"])
    group = base["convergence_seeds"] if double else next(g for g in base["groups"] if seed in g)
    if double:
        training["steps"] *= 2
    out = {"architecture": base["architecture"], "config": config, "init_seed": seed,
           "data": dict(base["data"]), "train": training, "trained_with_seeds": list(group),
           "evaluation": evaluation, "storage": str(STORAGE).removeprefix("torch."), "threads": 1,
           "torch": torch.__version__}
    if "stopping" in base:
        # the experiment's rule, then the code's own (NoPE's patience), then the toy scale's
        out["stopping"] = {**base["stopping"], **positions[position].get("stopping", {}),
                           **(TINY[experiment].get("stopping", {}) if tiny else {})}
        if double:  # twice the budget of a run that stops itself: twice the cap and twice the patience
            out["stopping"]["patience"] *= 2
    return out


def complete(recipe_: dict, data_sha256: str, vocab_size: int | None) -> dict:
    """Fill in what the data decides: its sha256 and, for text, the vocabulary's size."""
    recipe_["data"]["sha256"] = data_sha256
    if recipe_["architecture"] == "TinyTransformer":
        recipe_["config"]["vocab_size"] = vocab_size
    return recipe_


def _data(data: dict):
    """The data set a recipe names and its sha256 (loaded once per process)."""
    return _loaded(data["source"], json.dumps(data["options"], sort_keys=True))


@functools.lru_cache(maxsize=4)
def _loaded(source: str, options: str):
    if source == "load_text_corpus":
        corpus = load_text_corpus(**json.loads(options))
        return corpus, corpus.sha256
    digits = load_digits_patches(**json.loads(options))
    digest = hashlib.sha256()
    for tensor in (digits.train_patches, digits.train_labels, digits.test_patches, digits.test_labels):
        digest.update(tensor.contiguous().numpy().tobytes())
    return digits, digest.hexdigest()


def _stored(model) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().to(STORAGE).contiguous() for name, tensor in model.state_dict().items()}


def _as_stored(model, tensors: dict) -> None:
    """Put the float16 weights back into ``model`` (as float32): metrics are measured on them."""
    model.load_state_dict({name: tensor.float() for name, tensor in tensors.items()}, strict=True)


def _metrics(model, data, recipe_: dict) -> dict:
    if recipe_["architecture"] == "TinyViT":
        return {"test_accuracy": round(evaluate_vit(model, data.test_patches, data.test_labels), 6),
                "train_accuracy": round(evaluate_vit(model, data.train_patches, data.train_labels), 6)}
    length, evaluation = recipe_["train"]["length"], recipe_["evaluation"]

    def bits(ids) -> float:
        return round(mean_bits(model, ids, length=length, n_windows=evaluation["n_windows"],
                               first_position=evaluation["first_position"]), 4)

    trained = data.train
    if "stopping" in recipe_:  # the text it was trained on, without the validation tail
        trained, _ = validation_split(trained, recipe_["stopping"])
    return {"held_out_bits_per_char": bits(data.held_out), "train_bits_per_char": bits(trained)}


def run_group(job: tuple[str, str, tuple[int, ...], bool, bool]) -> dict:
    """Train one group of seeds (in a fresh process: one thread, pinned kernels). job:
    (experiment, position, seeds, double, tiny). Returns {"results": {seed: (file bytes, or None
    for a convergence run; metrics; recipe)}, "seconds": ...}."""
    experiment, position, group, double, tiny = job
    setup(0)
    started = time.perf_counter()
    recipes = {seed: recipe(experiment, position, seed, double=double, tiny=tiny) for seed in group}
    first = recipes[group[0]]
    data, data_sha = _data(first["data"])
    for r in recipes.values():
        complete(r, data_sha, getattr(data, "vocab_size", None))
    models = [build(recipes[seed]) for seed in group]
    options = {k: v for k, v in first["train"].items() if k not in ("seed", "length")}
    if first["architecture"] == "TinyViT":
        task, lengths = (data.train_patches, data.train_labels), (1, 1)  # images: lengths unused
    else:
        task, lengths = data.train, (first["train"]["length"],) * 2
    seeds = [recipes[s]["train"]["seed"] for s in group]
    stopping = {}
    if "stopping" in first:  # text, one model per group: the last share of the training text validates
        assert len(models) == 1, "a recipe that stops itself trains one model per group"
        trained, validation = validation_split(task, first["stopping"])
        stop = PlateauStop(validation, first["train"]["length"], first["train"]["lr"], first["stopping"])
        train(models[0], trained, lengths=lengths, seed=seeds[0], progress=False, on_step=stop, **options)
        stopping = stop.restore(models[0])
    elif len(models) == 1:
        train(models[0], task, lengths=lengths, seed=seeds[0], progress=False, **options)
    else:
        train(models, task, lengths=lengths, seed=seeds, progress=False, **options)
    results = {}
    for seed, model in zip(group, models):
        tensors = _stored(model)
        _as_stored(model, tensors)
        about = {"recipe": recipes[seed]}
        if first["architecture"] == "TinyTransformer":
            about["vocabulary"] = data.vocabulary
        # One metadata key: safetensors writes several in a random order, and the bytes must not vary.
        blob = None if double else save_safetensors(tensors, metadata={"zoo": json.dumps(about, sort_keys=True)})
        results[seed] = (blob, dict(_metrics(model, data, recipes[seed]), **stopping), recipes[seed])
    return {"job": job, "results": results, "seconds": time.perf_counter() - started}


def jobs(experiments: list[str], tiny: bool = False, positions: list[str] | None = None) -> list[tuple]:
    """Every group to train: the shipped groups, then the convergence runs (twice the steps);
    ``positions``: only these codes."""
    out = []
    for experiment in experiments:
        base, codes = EXPERIMENTS[experiment]
        for position in codes:
            if positions and position not in positions:
                continue
            out += [(experiment, position, tuple(group), False, tiny) for group in base["groups"]]
            out.append((experiment, position, tuple(base["convergence_seeds"]), True, tiny))
    return out


def _cost(job) -> float:
    experiment, position, group, double, _ = job
    steps = recipe(experiment, position, group[0])["train"]["steps"]
    text = EXPERIMENTS[experiment][0]["architecture"] == "TinyTransformer"
    return steps * (2 if double else 1) * len(group) * (8 if text else 1)


def _baselines(experiment: str) -> dict:
    base = EXPERIMENTS[experiment][0]
    data, _ = _data(base["data"])
    if base["architecture"] == "TinyViT":
        counts = torch.bincount(data.train_labels, minlength=10)
        return {"majority_class_accuracy": round((data.test_labels == counts.argmax()).double().mean().item(), 6),
                "chance_accuracy": 0.1}
    unigram, bigram = unigram_bigram_bits(data.train, data.held_out, vocab_size=data.vocab_size)
    return {"unigram_bits_per_char": round(unigram, 4), "bigram_bits_per_char": round(bigram, 4)}


def numerics() -> dict:
    """The CPU and its float32 numerics fingerprint (tools/fingerprint.py; training uses no
    float64 products): a checkpoint's bytes are promised again where those lines are the same,
    which they are on Intel and AMD CPUs with AVX2 (course_utils/reproducible.py)."""
    return {"cpu": fingerprint.cpu(), "fingerprint": fingerprint.float32_lines(fingerprint.fingerprint())}


def _name(experiment: str, position: str, seed: int) -> str:
    return f"{experiment}-{position}-seed{seed}"


def _manifest_path(zoo_dir: Path) -> Path:
    return zoo_dir / MANIFEST.name


def _read(zoo_dir: Path) -> list[dict]:
    path = _manifest_path(zoo_dir)
    return json.loads(path.read_text(encoding="utf-8"))["checkpoints"] if path.is_file() else []


def make(experiments: list[str], processes: int, *, zoo_dir: Path = ZOO_DIR, tiny: bool = False,
         positions: list[str] | None = None) -> int:
    """Train every group of ``experiments`` (``positions``: only these codes) and write their
    files and manifest entries into ``zoo_dir``; every other entry is kept."""
    todo = sorted(jobs(experiments, tiny, positions), key=_cost, reverse=True)
    made = {(job[0], job[1]) for job in todo}
    done = []
    started = time.perf_counter()
    numerics_here = numerics()
    if processes == 1:  # in this process
        done = [run_group(job) for job in tqdm(todo, desc="zoo groups")]
    else:  # fresh processes: each sets its one thread and pinned kernels before computing
        with multiprocessing.get_context("spawn").Pool(processes, maxtasksperchild=1) as pool:
            for result in tqdm(pool.imap_unordered(run_group, todo), total=len(todo), desc="zoo groups"):
                done.append(result)
    entries = {e["name"]: e for e in _read(zoo_dir) if (e["experiment"], e["position"]) not in made}
    doubles, double_seconds = {}, {}
    for result in done:
        experiment, position, group, double, _ = result["job"]
        for seed, (blob, metrics, recipe_) in result["results"].items():
            if double:
                doubles.setdefault((experiment, position), {})[seed] = metrics
                double_seconds[experiment, position] = round(result["seconds"], 1)
                continue
            name = _name(experiment, position, seed)
            (zoo_dir / f"{name}.safetensors").write_bytes(blob)
            entries[name] = {"name": name, "experiment": experiment, "position": position, "seed": seed,
                             "variant": {}, "file": f"{name}.safetensors",
                             "sha256": hashlib.sha256(blob).hexdigest(), "recipe": recipe_, "metrics": metrics,
                             "seconds": round(result["seconds"] / len(group), 1), "numerics": numerics_here}
    for experiment in experiments:
        baselines = _baselines(experiment)
        base = EXPERIMENTS[experiment][0]
        metric = "test_accuracy" if base["architecture"] == "TinyViT" else "held_out_bits_per_char"
        for position in EXPERIMENTS[experiment][1]:
            if (experiment, position) not in made:
                continue
            seeds = base["convergence_seeds"]
            shipped = [entries[_name(experiment, position, s)]["metrics"][metric] for s in seeds]
            doubled = [doubles[experiment, position][s][metric] for s in seeds]
            for entry in entries.values():
                if (entry["experiment"], entry["position"]) == (experiment, position):
                    entry["metrics"].update(baselines)
            entries[_name(experiment, position, 0)]["convergence"] = {
                "metric": metric, "seeds": list(seeds),
                "steps": entries[_name(experiment, position, 0)]["recipe"]["train"]["steps"],
                "at_budget": round(sum(shipped) / len(seeds), 6),
                "at_double_budget": round(sum(doubled) / len(seeds), 6), "rule": RULE[metric],
                "seconds": double_seconds[experiment, position]}
            if "stopping" in base:  # where each run stopped (its cap: steps, or twice them)
                entries[_name(experiment, position, 0)]["convergence"]["stopped_at_step"] = [
                    entries[_name(experiment, position, 0)]["metrics"]["stopped_at_step"],
                    doubles[experiment, position][0]["stopped_at_step"]]
    order = {(e, p): i for i, (e, p) in enumerate((e, p) for e in EXPERIMENTS for p in EXPERIMENTS[e][1])}
    listed = sorted(entries.values(), key=lambda e: (order.get((e["experiment"], e["position"]), 99), e["seed"]))
    seconds = time.perf_counter() - started
    _manifest_path(zoo_dir).write_text(json.dumps(
        {"about": "course_utils/zoo/__init__.py; made by python -m tools.pretrain", "tiny": tiny,
         "made_in_seconds": round(seconds), "processes": processes,
         "made": sorted(f"{experiment} {position}" for experiment, position in made),
         "checkpoints": listed}, indent=1) + "\n", encoding="utf-8")
    print(f"zoo made in {seconds:.0f} s with {processes} processes")
    summary(zoo_dir)
    return 0


def summary(zoo_dir: Path = ZOO_DIR) -> None:
    """A table of every code: its metric on each seed and the convergence record."""
    entries = _read(zoo_dir)
    for experiment in dict.fromkeys(e["experiment"] for e in entries):
        rows = [e for e in entries if e["experiment"] == experiment]
        metric = rows[0]["recipe"]["evaluation"]["metric"]
        print(f"\n{experiment}: {metric} by seed; convergence (mean of its seeds) at the budget and at twice it")
        for position in dict.fromkeys(e["position"] for e in rows):
            mine = [e for e in rows if e["position"] == position]
            values = " ".join(f"{e['metrics'][metric]:.3f}" for e in mine)
            c = next((e["convergence"] for e in mine if "convergence" in e), None)
            held = "" if c is None else (
                f"  {c['at_budget']:.3f} -> {c['at_double_budget']:.3f} "
                f"({'holds' if abs(c['at_double_budget'] - c['at_budget']) <= c['rule'] else 'FAILS'})")
            if c is not None and "stopped_at_step" in c:
                held += f"; stopped at steps {c['stopped_at_step'][0]} and {c['stopped_at_step'][1]}"
            print(f"  {position:<14} {values}{held}")


def check(name: str, *, zoo_dir: Path = ZOO_DIR) -> int:
    """Re-train checkpoint ``name``'s group from its recipe; 0 if the bytes equal the shipped file's."""
    entries = _read(zoo_dir)
    entry = next((e for e in entries if e["name"] == name), None)
    if entry is None:
        print(f"no checkpoint named {name!r}; the zoo has: {', '.join(e['name'] for e in entries)}")
        return 2
    tiny = json.loads(_manifest_path(zoo_dir).read_text(encoding="utf-8")).get("tiny", False)
    fresh = complete(recipe(entry["experiment"], entry["position"], entry["seed"], tiny=tiny),
                     entry["recipe"]["data"]["sha256"], entry["recipe"]["config"].get("vocab_size"))
    if fresh != entry["recipe"]:
        print(f"{name}: the recipe in tools/pretrain.py differs from the manifest's; re-make the zoo")
        return 1
    job = (entry["experiment"], entry["position"], tuple(entry["recipe"]["trained_with_seeds"]), False, tiny)
    result = run_group(job)
    blob, metrics, recipe_ = result["results"][entry["seed"]]
    shipped = (zoo_dir / entry["file"]).read_bytes()
    digest = hashlib.sha256(blob).hexdigest()
    same = blob == shipped and digest == entry["sha256"] and recipe_ == entry["recipe"]
    print(f"{name}: re-trained in {result['seconds']:.0f} s (group of seeds {list(job[2])}); sha256 {digest} "
          f"{'equals' if same else 'DIFFERS FROM'} the shipped {entry['sha256']}; metrics {metrics}")
    made_on, here = entry.get("numerics"), numerics()
    if not same and made_on and not fingerprint.reproduces(made_on["fingerprint"], here["fingerprint"]):
        moved = sorted(k for k, v in here["fingerprint"].items() if made_on["fingerprint"].get(k) != v)
        print(f"note: this CPU ({here['cpu']}) computes {', '.join(moved)} differently from the one that made "
              f"{name} ({made_on['cpu']}): its bytes are promised only where the fingerprint matches")
    return 0 if same else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", action="append", choices=sorted(EXPERIMENTS),
                        help="make only this experiment (repeatable); the manifest keeps the others")
    parser.add_argument("--position", action="append", help="make only this code (repeatable)")
    parser.add_argument("--check", metavar="NAME", help="re-train NAME and compare its bytes with the file")
    parser.add_argument("--list", action="store_true", help="print the zoo's summary table")
    parser.add_argument("--processes", type=int, default=2, help="training processes, one thread each")
    parser.add_argument("--zoo-dir", type=Path, default=ZOO_DIR, help="where the files and manifest go")
    parser.add_argument("--tiny", action="store_true", help="the toy scale: the whole pipeline in seconds")
    args = parser.parse_args(argv)
    pin_numerics()
    args.zoo_dir.mkdir(parents=True, exist_ok=True)
    if args.check:
        return check(args.check, zoo_dir=args.zoo_dir)
    if args.list:
        summary(args.zoo_dir)
        return 0
    return make(args.experiment or list(EXPERIMENTS), args.processes, zoo_dir=args.zoo_dir, tiny=args.tiny,
                positions=args.position)


if __name__ == "__main__":
    sys.exit(main())
