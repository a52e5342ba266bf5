"""The zoo's stopping rule for a language model (tools/pretrain.py): train until a validation text
stops improving, as train()'s ``on_step``.

The recipe's "stopping" settings: ``validation_share`` (the last share of the training text,
never trained on), a check every ``every`` steps (positions ``first_position`` .. L-1 of
``n_windows`` evenly spaced windows), an improvement of at least ``min_improvement`` bits, a
plateau of ``patience`` checks without one, the learning rate lowered ``lr_drops`` times by
``lr_factor`` (the next plateau ends training), and a warm-up over ``warmup`` steps.
"""

from __future__ import annotations

import torch

from course_utils import loss_by_position, text


def mean_bits(model, ids: torch.Tensor, *, length: int, n_windows: int, first_position: int) -> float:
    """The zoo's text metric: bits per character at positions first_position .. length-1 of
    n_windows evenly spaced windows of ``ids`` (loss_by_position), averaged."""
    curve = loss_by_position(model, ids, length=length, n_windows=n_windows)
    return curve[first_position:].mean().item()


class PlateauStop:
    """A recipe's "stopping" rule as train()'s on_step: warm-up, a lower learning rate on each
    plateau of the validation loss, stop at the plateau after the last lowering, keep the best.

    validation: the character ids it is measured on; length: the training length; rule: the
    recipe's "stopping" settings. After training, ``restore(model)`` loads the best weights.
    """

    def __init__(self, validation: torch.Tensor, length: int, lr: float, rule: dict):
        self.validation, self.length, self.lr, self.rule = validation, length, lr, rule
        self.scale, self.drops, self.waiting = 1.0, 0, 0
        self.best, self.best_step, self.best_state, self.checks = float("inf"), 0, None, []
        self.stopped = 0

    def measure(self, model) -> float:
        return mean_bits(model, self.validation, length=self.length, n_windows=self.rule["n_windows"],
                         first_position=self.rule["first_position"])

    def __call__(self, step: int, model, optimiser) -> bool:
        stop = False
        if step and step % self.rule["every"] == 0:
            value = self.measure(model)
            self.checks.append((step, round(value, 4)))
            if value < self.best - self.rule["min_improvement"]:
                self.best, self.best_step, self.waiting = value, step, 0
                self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            else:
                self.waiting += 1
            if self.waiting >= self.rule["patience"]:
                stop = self.drops >= self.rule["lr_drops"]
                self.drops, self.scale, self.waiting = self.drops + 1, self.scale * self.rule["lr_factor"], 0
        warm = min(1.0, (step + 1) / self.rule["warmup"])  # the learning rate of step + 1
        for group in optimiser.param_groups:
            group["lr"] = self.lr * self.scale * warm
        self.stopped = step
        return stop

    def restore(self, model) -> dict:
        """Load the best weights into ``model``; returns the record the manifest keeps."""
        if self.best_state is None:
            raise ValueError(f"no validation check improved on the start (checks: {self.checks}); a run must "
                             f"last at least one check ({self.rule['every']} steps) and give finite losses")
        model.load_state_dict(self.best_state)
        return {"stopped_at_step": self.stopped, "best_step": self.best_step,
                "validation_bits_per_char": round(self.best, 4), "lr_lowered": min(self.drops, self.rule["lr_drops"])}


def validation_split(ids: torch.Tensor, rule: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """(the ids trained on, the validation ids): the last ``validation_share`` of ``ids``."""
    return text.validation_split(ids, share=rule["validation_share"])
