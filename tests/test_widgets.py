"""The explorers: each builds, every control changes its figure, the numbers it shows are right,
bad arguments are refused clearly, and a redraw stays inside the 100 ms budget."""

import io
import re

import pytest
import torch
from PIL import Image

from course_utils import widgets as W
from course_utils.widgets import EXPLORERS, Explorer, random_moves, redraw_times

# For each explorer, a new value for each control (different from its default).
MOVES = {
    "sinusoid": {"d_model": 64, "base": 100.0, "n_positions": 128},
    "offset_map": {"t": 17, "k": -5},
    "amplitude": {"A": 20.0, "d_model": 128},
    "four_terms": {"token_strength": 0.25, "position_strength": 1.75},
    "permutation": {"shuffle": 5, "causal_mask": True, "position_code": True},
    "extension": {"s": 8.0, "method": "linear"},
}

@pytest.fixture(scope="module")
def explorers() -> dict[str, Explorer]:
    return {name: make() for name, make in EXPLORERS.items()}


def test_there_are_at_least_four_explorers():
    assert len(EXPLORERS) >= 4 and set(MOVES) == set(EXPLORERS)


@pytest.mark.parametrize("name", sorted(EXPLORERS))
def test_explorer_is_a_widget_with_a_figure(explorers, name):
    explorer = explorers[name]
    assert "course-explorer" in explorer._dom_classes
    assert "explorer-figure" in explorer.image._dom_classes
    picture = Image.open(io.BytesIO(explorer.image.value))
    assert picture.format == "PNG" and picture.size[0] > 300 and picture.size[1] > 100
    assert explorer.readout.value
    assert explorer.picture().data == explorer.image.value
    assert set(explorer.values()) == set(MOVES[name])


@pytest.mark.parametrize("name,control", [(n, c) for n in sorted(MOVES) for c in MOVES[n]])
def test_every_control_changes_the_figure(name, control):
    explorer = EXPLORERS[name]()
    before = explorer.image.value
    explorer.controls[control].value = MOVES[name][control]  # as a slider move in the browser does
    assert explorer.image.value != before, f"moving {control} did not change {name}'s figure"


def test_set_moves_several_controls_with_one_redraw(monkeypatch):
    explorer = EXPLORERS["offset_map"]()
    calls = []
    original = explorer.redraw
    monkeypatch.setattr(explorer, "redraw", lambda *a, **k: (calls.append(1), original(*a, **k)))
    explorer.set(t=5, k=3)
    assert calls == [1] and explorer.values() == {"t": 5, "k": 3}


def test_set_refuses_an_unknown_control():
    with pytest.raises(ValueError, match="unknown control.*'d'"):
        EXPLORERS["offset_map"]().set(d=3)


def _difference(readout: str) -> float:
    return float(re.search(r"max \|difference\|[ =]+([-+0-9.e]+)", readout).group(1))


@pytest.mark.parametrize("t,k", [(0, 0), (3, 2), (40, -12), (7, 12)])
def test_offset_map_shows_that_m_k_moves_pe_t_to_pe_t_plus_k(t, k):
    explorer = EXPLORERS["offset_map"]()
    explorer.set(t=t, k=k)
    assert _difference(explorer.readout.value) < 1e-9
    assert f"PE({t + k})" in explorer.readout.value


def test_permutation_outputs_move_with_the_words_until_order_is_given():
    explorer = EXPLORERS["permutation"]()
    for shuffle in (0, 3, 11, 23):
        explorer.set(shuffle=shuffle, causal_mask=False, position_code=False)
        assert "every word's output is exactly what it was" in explorer.readout.value
        assert _difference(explorer.readout.value) < 1e-5
    for switch in ("causal_mask", "position_code"):
        explorer.set(shuffle=7, causal_mask=switch == "causal_mask", position_code=switch == "position_code")
        assert "outputs changed for" in explorer.readout.value, switch
        assert _difference(explorer.readout.value) > 1e-3


def test_amplitude_readout_falls_as_the_code_grows():
    explorer = EXPLORERS["amplitude"]()

    def share(amplitude: float) -> float:
        explorer.set(A=amplitude)
        return float(re.search(r"right for ([0-9.]+)%", explorer.readout.value).group(1))

    assert share(0.01) == 100.0
    assert share(100.0) < 20.0


def test_four_terms_scale_as_products_of_the_strengths():
    explorer = EXPLORERS["four_terms"]()

    def spreads() -> list[float]:
        return [float(v) for v in re.findall(r" ([0-9.]+)(?:,|$)", explorer.readout.value)]

    explorer.set(token_strength=1.0, position_strength=1.0)
    unit = spreads()
    explorer.set(token_strength=2.0, position_strength=0.5)
    scaled = spreads()
    for got, base, factor in zip(scaled, unit, (4.0, 1.0, 1.0, 0.25)):
        assert got == pytest.approx(base * factor, abs=2e-3)
    explorer.set(position_strength=0.0)
    assert spreads()[1:] == [0.0, 0.0, 0.0]


def test_sinusoid_readout_matches_the_encoding_functions():
    from course_utils import offset_similarity

    explorer = EXPLORERS["sinusoid"]()
    explorer.set(d_model=16, base=10_000.0)
    expected = offset_similarity(1.0, 16).item() / 8
    assert f"similarity at k = 1: {expected:.4f}" in explorer.readout.value
    assert "wavelengths from 6.28 to" in explorer.readout.value


@pytest.mark.parametrize("make,kwargs,error,words", [
    (W.sinusoid_explorer, {"d_model": 6}, ValueError, "d_model must be between 4 and 128 in steps of 4"),
    (W.sinusoid_explorer, {"d_model": 2.5}, TypeError, "d_model must be an integer"),
    (W.sinusoid_explorer, {"base": -1}, ValueError, "base must be positive"),
    (W.sinusoid_explorer, {"n_positions": 10_000}, ValueError, "n_positions must be between"),
    (W.offset_map_explorer, {"d_model": 7}, ValueError, "d_model must be a positive even"),
    (W.offset_map_explorer, {"d_model": 64}, ValueError, "d_model must be at most 16"),
    (W.offset_map_explorer, {"k": 99}, ValueError, "k must be between -12 and 12"),
    (W.amplitude_explorer, {"amplitude": 0}, ValueError, "amplitude must be positive"),
    (W.amplitude_explorer, {"amplitude": 500}, ValueError, "amplitude must be between 0.01 and 100"),
    (W.amplitude_explorer, {"n_positions": 10**9}, ValueError, "n_positions must be between 2 and 256"),
    (W.four_terms_explorer, {"n": 50_000}, ValueError, "n must be between 2 and 64"),
    (W.four_terms_explorer, {"d_model": 1024}, ValueError, "d_model must be at most 128"),
    (W.amplitude_explorer, {"vocab": "many"}, TypeError, "vocab must be an integer"),
    (W.four_terms_explorer, {"token_strength": float("nan")}, ValueError, "token_strength must be finite"),
    (W.four_terms_explorer, {"n": 1}, ValueError, "n must be between 2 and 64"),
    (W.permutation_explorer, {"sentence": ["a", "b"]}, TypeError, "sentence must be a string"),
    (W.permutation_explorer, {"sentence": "one"}, ValueError, "2 to 12 words"),
])
def test_bad_arguments_are_refused_with_their_name(make, kwargs, error, words):
    with pytest.raises(error, match=re.escape(words)):
        make(**kwargs)


def test_redraw_times_checks_its_arguments(explorers):
    with pytest.raises(TypeError, match="explorer must be an Explorer"):
        redraw_times("sinusoid", [{}])
    with pytest.raises(TypeError, match="updates must be a non-empty list"):
        redraw_times(explorers["sinusoid"], [])


@pytest.mark.parametrize("name", sorted(EXPLORERS))
def test_redraw_median_is_within_100_ms(name):
    """The issue's budget, with 20 random moves of every control (measured ≈ 10–50 ms here).

    The budget is checked on the redraw's own CPU time, so that other jobs on the machine (CI
    runs tests two at a time) cannot change the verdict; `make bench` reports the wall clock."""
    torch.set_num_threads(1)
    explorer = EXPLORERS[name]()
    timing = redraw_times(explorer, random_moves(explorer, 20, seed=0))
    assert timing["n"] == 20 and timing["median_cpu_ms"] <= timing["median_ms"] + 1
    assert timing["median_cpu_ms"] <= 100, f"{name}: median redraw {timing['median_cpu_ms']:.1f} ms of CPU"


@pytest.mark.parametrize("name", sorted(EXPLORERS))
def test_random_moves_are_legal_positions_of_every_control(explorers, name):
    explorer = explorers[name]
    moves = random_moves(explorer, 30, seed=1)
    assert len(moves) == 30 and moves == random_moves(explorer, 30, seed=1)
    for values in moves:
        assert set(values) == set(explorer.controls)
        for control_name, value in values.items():
            control = explorer.controls[control_name]
            if hasattr(control, "min"):
                low, high = (control.base ** control.min, control.base ** control.max) if hasattr(control, "base") \
                    else (control.min, control.max)
                assert low <= value <= high
    with pytest.raises(TypeError, match="explorer must be an Explorer"):
        random_moves(None)
    with pytest.raises(ValueError, match="n must be at least 1"):
        random_moves(explorer, 0)


def test_extension_explorer_counts_the_pairs_that_meet_new_angles():
    explorer = EXPLORERS["extension"](d_head=16, trained_length=16)
    explorer.set(s=4.0, method="none")
    # Trained at L = 16, pairs 1..7 turn less than a full circle; at 64 tokens every one passes its range.
    assert explorer.readout.value.startswith("7 of 8 pairs reach angles never seen")
    explorer.set(method="linear")
    assert explorer.readout.value.startswith("0 of 8 pairs") and "0.250 rad in the fastest" in explorer.readout.value
    explorer.set(method="ntk")
    assert "1.000 rad in the fastest" in explorer.readout.value
    with pytest.raises(ValueError, match="method"):
        EXPLORERS["extension"](method="xpos")
    with pytest.raises(ValueError, match="trained_length"):
        EXPLORERS["extension"](trained_length=2)
