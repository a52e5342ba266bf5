"""The model zoo: converged checkpoints that lessons load instead of training for minutes.

    model = pretrained("capstone", position="rope", seed=0)   # a TinyTransformer, eval mode
    model = pretrained("vit", position="learned", seed=3)     # a TinyViT
    entries = zoo_manifest()                                   # what the zoo holds
    print(budget_report("vit"))                                # budget, baselines, 2x rule

Every checkpoint is a safetensors file in this folder (tensors and text only: loading one can
never run code, unlike a pickle), listed in manifest.json with its sha256, the full recipe that
made it (model configuration, steps, batch size, length, learning-rate schedule, data), and the
metrics measured on the weights as shipped (float16, loaded back as float32). The sha256 and the
recipe are the contract: ``python -m tools.pretrain --check NAME`` re-trains a checkpoint from
its recipe and succeeds only if the bytes are identical. The zoo's rule for "converged": the
same recipe with twice the steps (its schedule stretched to match) moves the held-out metric by
at most 0.05 bits per character (text, seed 0) or 1 accuracy point (images, mean of seeds 0–2);
each seed-0 entry records both numbers under "convergence".
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import textwrap
from pathlib import Path

import torch
from safetensors.torch import load as load_safetensors

from .. import _validate
from ..extension import RopeScaling
from ..models import count_parameters, ModelConfig, TinyTransformer
from ..vit import TinyViT, ViTConfig

ZOO_DIR = Path(__file__).resolve().parent
MANIFEST = ZOO_DIR / "manifest.json"
ARCHITECTURES = {"TinyTransformer": (ModelConfig, TinyTransformer), "TinyViT": (ViTConfig, TinyViT)}


@functools.lru_cache(maxsize=4)
def _parsed(path: Path, modified: float) -> dict:
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(manifest, dict) or not isinstance(manifest.get("checkpoints"), list):
        raise ValueError(f"{path} is not a zoo manifest (an object with a list 'checkpoints')")
    return manifest


def _manifest() -> dict:
    """ZOO_DIR's manifest.json, parsed once per change of the file."""
    path = ZOO_DIR / MANIFEST.name
    if not path.is_file():
        raise FileNotFoundError(f"the zoo's manifest {path} is missing: reinstall course_utils, or re-make the "
                                "zoo with `make pretrain`")
    return _parsed(path, path.stat().st_mtime_ns)


def zoo_manifest(experiment: str | None = None) -> list[dict]:
    """The zoo's entries (copies), one dict per checkpoint: name, experiment, position, seed,
    variant, file, sha256, recipe, metrics (and, for seed 0, convergence). ``experiment``
    (e.g. "capstone" or "vit") keeps only that experiment's entries."""
    entries = _manifest()["checkpoints"]
    if experiment is not None:
        experiment = _validate.choice(experiment, "experiment", experiments())
        entries = [e for e in entries if e["experiment"] == experiment]
    return copy.deepcopy(entries)


def experiments() -> tuple[str, ...]:
    """The experiments the zoo holds, in the manifest's order."""
    return tuple(dict.fromkeys(e["experiment"] for e in _manifest()["checkpoints"]))


def _entry(experiment, position, seed, variant: dict) -> dict:
    experiment = _validate.choice(experiment, "experiment", experiments())
    entries = [e for e in _manifest()["checkpoints"] if e["experiment"] == experiment]
    positions = tuple(dict.fromkeys(e["position"] for e in entries))
    position = _validate.choice(position, "position", positions)
    seed = _validate.seed(seed)
    entries = [e for e in entries if e["position"] == position]
    seeds = sorted({e["seed"] for e in entries})
    if seed not in seeds:
        raise ValueError(f"seed: the zoo has {experiment!r} models with position {position!r} for seeds "
                         f"{seeds}, not {seed}")
    entries = [e for e in entries if e["seed"] == seed]
    matching = [e for e in entries if e.get("variant", {}) == variant]
    if not matching:
        offered = "; ".join(", ".join(f"{k}={v!r}" for k, v in e.get("variant", {}).items()) or "(none)"
                            for e in entries)
        raise ValueError(f"variant: no {experiment!r} checkpoint with position {position!r}, seed {seed} has the "
                         f"settings {variant!r}; the zoo has: {offered}")
    return matching[0]


def build(recipe: dict):
    """A freshly initialised model of ``recipe`` (its "architecture", "config" and "init_seed")."""
    if not isinstance(recipe, dict):
        raise TypeError(f"recipe must be a dict (a manifest entry's 'recipe'), got {type(recipe).__name__}")
    architecture = _validate.choice(recipe.get("architecture"), "recipe['architecture']", tuple(ARCHITECTURES))
    config_class, model_class = ARCHITECTURES[architecture]
    settings = dict(recipe["config"])
    if settings.get("rope_scaling") is not None:
        settings["rope_scaling"] = RopeScaling(**settings["rope_scaling"])
    for name in ("grid", "alibi_slopes"):
        if isinstance(settings.get(name), list):
            settings[name] = tuple(settings[name])
    return model_class(config_class(**settings), seed=recipe["init_seed"])


def read_checkpoint(entry: dict) -> dict[str, torch.Tensor]:
    """The tensors of a manifest entry's file, after checking its sha256 against the manifest."""
    path = ZOO_DIR / entry["file"]
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {entry['name']!r}: its file {path} is missing; reinstall course_utils "
                                f"or re-make it with `python -m tools.pretrain --experiment {entry['experiment']} --position {entry['position']}`")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"]:
        raise ValueError(f"checkpoint {entry['name']!r}: {path.name} has sha256 {digest}, the manifest says "
                         f"{entry['sha256']}; the file was changed or damaged: reinstall course_utils or re-make "
                         f"it with `python -m tools.pretrain --experiment {entry['experiment']} --position {entry['position']}`")
    return load_safetensors(data)


def _device(device) -> torch.device:
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be a string such as 'cpu' or 'cuda', or a torch.device; got "
                        f"{type(device).__name__}")
    try:
        return torch.device(device)
    except RuntimeError as error:
        raise ValueError(f"device: {error}") from None


def pretrained(experiment: str, *, position: str, seed: int = 0, device="cpu", **variant):
    """The zoo's converged model for ``experiment`` ("capstone", "vit", ...), ``position`` and
    ``seed``, in eval mode on ``device`` (default the CPU; "cuda" on Colab's GPU), its weights
    float32. ``variant`` selects among checkpoints that differ in another setting (see
    zoo_manifest()). The file's sha256 is checked first; a wrong name lists what the zoo has.
    The manifest entry is on the model as ``model.zoo_entry``.
    """
    entry = _entry(experiment, position, seed, variant)
    device = _device(device)
    model = build(entry["recipe"])
    tensors = read_checkpoint(entry)
    model.load_state_dict({name: tensor.float() for name, tensor in tensors.items()}, strict=True)
    model.zoo_entry = copy.deepcopy(entry)
    return model.to(device).eval()


def _seed_list(seeds, name: str) -> tuple[int, ...]:
    if not isinstance(seeds, (list, tuple, range)):
        raise TypeError(f"{name} must be a sequence of seeds such as (0, 1, 2), got {type(seeds).__name__}")
    out = tuple(_validate.seed(s, name) for s in seeds)
    if not out:
        raise ValueError(f"{name} must name at least one seed")
    return out


def _span(seeds: tuple[int, ...]) -> str:
    consecutive = len(seeds) > 2 and seeds == tuple(range(seeds[0], seeds[-1] + 1))
    return f"{seeds[0]}–{seeds[-1]}" if consecutive else ", ".join(map(str, seeds))


def budget_report(experiment: str, *, seeds=(0, 1, 2), further=(3, 4, 5), brief: bool = False) -> str:
    """The budget behind an experiment's checkpoints, from the manifest, as text (fits 88 columns).

    One table row per position code: parameters, the token vectors' starting std (text), the step
    each of ``seeds`` stopped at, the training metric (mean of ``seeds``), the held-out metric
    (mean of ``seeds``) and the zoo's 2× rule (its recorded numbers and verdict). Above it the
    budget (steps x batch, and length for text), below it the trivial baselines of the task
    (chance and majority class for images; unigram and bigram counts for text) and which seeds
    the claims tests re-check (``further``). ``brief``: one line instead, for under a later result.
    """
    entries = zoo_manifest(_validate.choice(experiment, "experiment", experiments()))
    seeds, further = _seed_list(seeds, "seeds"), _seed_list(further, "further")
    if not isinstance(brief, bool):
        raise TypeError(f"brief must be True or False, got {type(brief).__name__}")
    by = {(e["position"], e["seed"]): e for e in entries}
    codes = tuple(dict.fromkeys(e["position"] for e in entries))
    missing = [f"{code} seed {s}" for code in codes for s in seeds + further if (code, s) not in by]
    if missing:
        raise ValueError(f"seeds/further: the zoo has no {experiment!r} checkpoint for {', '.join(missing)}")
    first = by[codes[0], seeds[0]]
    plan, metric = first["recipe"]["train"], first["recipe"]["evaluation"]["metric"]
    text = metric == "held_out_bits_per_char"
    rules = {code: by[code, 0].get("convergence") for code in codes}
    holds = {code: r is not None and abs(r["at_double_budget"] - r["at_budget"]) <= r["rule"]
             for code, r in rules.items()}
    caps = sorted({by[code, seeds[0]]["recipe"]["train"]["steps"] for code in codes})
    unit = f"windows of {plan['length']} characters" if text else "images"
    cap = " or ".join(f"{c:,}" for c in caps)
    steps = f"at most {cap} steps" if text else f"{cap} steps"
    shown = f"seeds {_span(seeds)} (claims tests: {_span(further)})"
    failed = [code for code in codes if not holds[code]]
    verdict = ("the 2× rule holds for every code" if not failed else
               f"the 2× rule FAILS for {', '.join(failed)}: still learning")
    if brief:
        return textwrap.fill(f"zoo {experiment!r}: {steps} × {plan['batch_size']} {unit}, {shown}; {verdict}",
                             width=88)
    size = "bits/char" if text else "accuracy"
    trained = "train_bits_per_char" if text else "train_accuracy"
    lines = textwrap.wrap(f"budget: {steps} × {plan['batch_size']} {unit}, AdamW lr {plan['lr']}, weight decay "
                          f"{plan['weight_decay']}; {shown}", width=88)
    lines.append(f"{'code':<14}{'parameters':>11}{'std':>6}{'steps, seeds ' + _span(seeds):>19}"
                 f"{'train':>7}{'held out':>9}  2× rule ({size})")
    for code in codes:
        made = [by[code, s] for s in seeds]
        stop = " ".join(f"{e['metrics'].get('stopped_at_step', e['recipe']['train']['steps']):,}" for e in made)
        train = sum(e["metrics"][trained] for e in made) / len(made)
        held = sum(e["metrics"][metric] for e in made) / len(made)
        std = made[0]["recipe"]["config"].get("embedding_std")
        rule = rules[code]
        moved = ("none recorded" if rule is None else
                 f"{rule['at_budget']:.3f} → {rule['at_double_budget']:.3f} {'holds' if holds[code] else 'FAILS'}")
        lines.append(f"{code:<14}{count_parameters(build(made[0]['recipe'])):>11,}{'' if std is None else std:>6}"
                     f"{stop:>19}{train:>7.3f}{held:>9.3f}  {moved}")
    m = first["metrics"]
    if text:
        baselines = (f"baselines: unigram counts {m['unigram_bits_per_char']:.3f}, bigram counts "
                     f"{m['bigram_bits_per_char']:.3f} bits/char held out. train and held out: means of the seeds; "
                     f"std: the token vectors' at the start; 2× rule: seed 0 at twice the step cap and patience")
    else:
        baselines = (f"baselines: chance {m['chance_accuracy']:.3f}, majority class "
                     f"{m['majority_class_accuracy']:.3f}. train and held out (test images): means of the seeds; "
                     f"2× rule: mean of seeds 0–2 at twice the steps")
    lines += textwrap.wrap(baselines, width=88) + [verdict]
    return "\n".join(lines)
