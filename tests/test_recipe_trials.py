"""tools/recipe_trials.py: the README's budget trials run a zoo recipe at another budget."""

import pytest

from tools import recipe_trials


def test_a_trial_trains_the_recipe_at_the_budget_asked_and_reports_the_zoo_metric(capsys):
    out = recipe_trials.trial("capstone", "rope", steps=3, schedule="warmup_linear", batch_size=4)
    assert out["metric"] == "held_out_bits_per_char"
    assert out["options"]["steps"] == 3 and out["options"]["batch_size"] == 4
    assert out["options"]["lr"] == 3e-3  # the recipe's own, not replaced
    assert len(out["values"]) == 1 and 3.0 < out["mean"] < 8.0  # near log2(83) = 6.4 after 3 steps
    assert recipe_trials.main(["vit", "learned", "--steps", "2"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("vit learned (steps 2, batch_size 64") and "test_accuracy" in printed
    assert len(printed.split("[")[1].split("]")[0].split()) == 3  # seeds 0-2, side by side


def test_an_unknown_position_is_named_with_the_experiments_codes(capsys):
    with pytest.raises(SystemExit):
        recipe_trials.main(["vit", "rope", "--steps", "2"])
    assert "position: vit has ['learned', 'none', 'rope_2d', 'sinusoidal_2d']" in capsys.readouterr().err
