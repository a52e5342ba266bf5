"""Lesson 16's claims, re-checked: the M-RoPE identities on random inputs the lesson does not use,
the config values it states against transformers' own config classes, and its measurements on
the zoo's converged capstone models at seeds 3, 4 and 5 (the lesson states them for 0, 1, 2 and
prints 3-5). Every assertion is a statement of the lesson, with a margin.
"""

import ast
import inspect
import json
import math

import pytest
import torch
from conftest import ROOT

from course_utils import (angle_coverage, attention_beyond, attention_entropy_by_position, counts_by_position,
                          dynamic_cache_gap, load_text_corpus, long_context_scale, loss_by_position, mrope_axes,
                          mrope_positions, mrope_rotate, pretrained, rope_frequencies, rope_frequencies_from_config,
                          rope_rotate,
                          streaming_attention, streaming_loss, uniform_causal_weights, with_attn_temperature,
                          with_rope_scaling)

SEEDS = (3, 4, 5)
CODES = ("none", "sinusoidal", "learned", "rope", "alibi")
L, LONG, N_WINDOWS = 128, 384, 8
F64 = torch.float64
SECTION = (16, 24, 24)


# --- section 1: M-RoPE ----------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [161, 162])  # random vectors the lesson does not use
def test_text_is_1d_rope_and_scores_are_relative_per_axis(seed):
    g = torch.Generator().manual_seed(seed)
    n, d = 20, 128
    q, k = torch.randn(2, n, d, generator=g, dtype=F64)
    text = torch.arange(n).expand(3, n)
    torch.testing.assert_close(mrope_rotate(q, text, mrope_section=SECTION, base=1e6),
                               rope_rotate(q, positions=torch.arange(n), layout="halves", base=1e6),
                               rtol=0, atol=1e-12)

    def scores(p):
        return mrope_rotate(q, p, mrope_section=SECTION, base=1e6) @ mrope_rotate(
            k, p, mrope_section=SECTION, base=1e6).T

    grid = torch.randint(0, 32, (3, n), generator=g)
    shift = torch.randint(-50, 50, (3, 1), generator=g)
    assert (scores(grid + shift) - scores(grid)).abs().max() < 1e-10
    frame, column = grid.clone(), grid.clone()
    frame[0, 0] += 1
    column[2, 0] += 1
    assert (scores(frame) - scores(grid)).abs().max() > 1.0  # "a real change", much larger ...
    assert (scores(column) - scores(grid)).abs().max() < 0.01  # ... for a frame than for a column


def test_prompt_positions_and_where_the_next_text_starts():
    prompt = [("text", 2), ("image", 1, 2, 3), ("text", 2), ("image", 3, 2, 2), ("text", 2)]
    p = mrope_positions(prompt)
    assert p.shape == (3, 24)
    assert p[:, 8].tolist() == [5, 5, 5]  # text after the 1x2x3 image starts at 2 + 3
    assert p[:, 22].tolist() == [10, 10, 10]  # after the 3x2x2 video at 7: 7 + max(3, 2, 2)
    assert p[0, 10:22].max().item() == 9  # the video's last frame holds time position 9 (5.23's start)


def test_axis_tables():
    blocks = mrope_axes(SECTION, base=1e6)
    assert [blocks[a]["n_pairs"] for a in ("time", "height", "width")] == [16, 24, 24]
    assert blocks["width"]["fastest"] < 2e-4  # "under 2·10⁻⁴ rad per column"
    assert 32 * blocks["width"]["fastest"] < 0.006
    interleaved = mrope_axes((24, 20, 20), base=1e6, mrope_interleaved=True)
    assert interleaved["width"]["pairs"][0] == 2 and 20 < 32 * interleaved["width"]["fastest"] < 22


# --- section 2: Gemma's windows and bases, against transformers ------------------------------------

def test_gemma_values_are_transformers():
    transformers = pytest.importorskip("transformers")
    gemma2 = transformers.Gemma2Config(num_hidden_layers=6)
    assert gemma2.rope_parameters["rope_theta"] == 10_000.0 and gemma2.sliding_window == 4096
    assert gemma2.layer_types == ["sliding_attention", "full_attention"] * 3  # one to one
    gemma3 = transformers.Gemma3TextConfig(num_hidden_layers=12, rope_theta=1_000_000.0, rope_local_base_freq=10_000.0,
                                           rope_scaling={"rope_type": "linear", "factor": 8.0})
    assert gemma3.layer_types == (["sliding_attention"] * 5 + ["full_attention"]) * 2  # five to one
    assert gemma3.rope_parameters["sliding_attention"]["rope_theta"] == 10_000.0
    full = gemma3.rope_parameters["full_attention"]
    assert full["rope_theta"] == 1_000_000.0 and full["rope_type"] == "linear" and full["factor"] == 8.0
    assert transformers.Gemma3TextConfig().sliding_window == 4096  # "the class default is 4,096"


GEMMA_2_9B = {"model_type": "gemma2", "hidden_size": 3584, "head_dim": 256, "num_attention_heads": 16,
              "max_position_embeddings": 8192, "rope_theta": 10000.0, "sliding_window": 4096}
GEMMA_3_4B = {"model_type": "gemma3_text", "hidden_size": 2560, "head_dim": 256, "num_attention_heads": 8,
              "max_position_embeddings": 131072, "rope_local_base_freq": 10000.0, "rope_theta": 1000000.0,
              "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}


def _lesson_dicts(number: str) -> dict:
    """The upper-case dicts a lesson's code cells assign (its config.json copies)."""
    path = next((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    namespace = {"math": math}
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        tree = ast.parse("".join(cell["source"]).replace("%pip", "# %pip"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) \
                    and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets):
                try:  # a config is a literal; a dict built from the lesson's variables is not
                    exec(compile(ast.Module([node], []), str(path), "exec"), namespace)
                except NameError:
                    pass
    return {k: v for k, v in namespace.items() if k.isupper() and isinstance(v, dict)}


def test_the_frontier_configs_are_lesson_15s_and_their_window_claims():
    """Section 2's gpt-oss and Gemma 4 rows: the configs lesson 15 checks against transformers;
    a 128-token window turns under a third of gpt-oss's pairs fully; Gemma 4's global layers
    turn every pair they rotate fully within their context (a quarter of the head)."""
    ours, fifteen = _lesson_dicts("16"), _lesson_dicts("15")
    for name in ("GPT_OSS_120B", "GEMMA_4_26B"):
        assert ours[name] == fifteen[name], name
    oss, _ = rope_frequencies_from_config(ours["GPT_OSS_120B"])
    turned = angle_coverage(oss, 128) >= 1
    assert 0 < int(turned.sum()) < len(oss) / 3
    # "exactly the pairs its YaRN keeps; it stretches the slower ones in the windows too"
    plain = rope_frequencies(64, base=150000.0)
    kept = torch.isclose(oss, plain, rtol=1e-12, atol=0)
    assert torch.equal(kept, turned) and bool((oss[~kept] < plain[~kept]).all())
    gemma, _ = rope_frequencies_from_config(ours["GEMMA_4_26B"], layer_type="full_attention")
    turning = gemma[gemma > 0]
    assert len(turning) == len(gemma) / 4 and bool((angle_coverage(turning, 262144) >= 1).all())


def test_window_coverage_claims():
    local, _ = rope_frequencies_from_config(GEMMA_3_4B, layer_type="sliding_attention")
    cover = angle_coverage(local, 1024)
    assert int((cover >= 1).sum()) == 71 and cover.min() < 0.02
    global_, _ = rope_frequencies_from_config(GEMMA_3_4B, layer_type="full_attention")
    cover = angle_coverage(global_, 131072)
    assert int((cover >= 1).sum()) == 73 and cover.min() < 0.003
    gemma2, _ = rope_frequencies_from_config(GEMMA_2_9B)
    assert int((angle_coverage(gemma2, 8192) >= 1).sum()) == 100


# --- sections 3 and 4: the zoo's capstone models, seeds 3-5 ---------------------------------------

@pytest.fixture(scope="module")
def corpus():
    return load_text_corpus(docstrings=False, fixed=True)


@pytest.fixture(scope="module")
def rope_models():
    return {s: pretrained("capstone", position="rope", seed=s) for s in SEEDS}


@pytest.mark.parametrize("code", CODES)
def test_no_capstone_model_has_an_attention_sink(corpus, code):
    count = torch.arange(2, L + 1, dtype=F64)
    for s in SEEDS:
        weights = streaming_attention(pretrained("capstone", position=code, seed=s), corpus.held_out, length=L,
                                      n_windows=16)
        rho = (weights[..., 1:, 0].to(F64) * count).mean(-1)
        if code == "none":  # "a first-layer head a little above uniform, far from 32"
            assert 1.0 < rho.max() < 2.0 and rho[0].max() == rho.max() and rho[1].max() < 0.5, (s, rho)
            continue
        assert (rho < 1).all(), (code, s, rho)  # below uniform on every head
        if code == "alibi":
            assert rho.max() > 0.8, (s, rho)  # "closest to uniform"
        else:
            assert rho.max() < 0.4, (code, s, rho)  # "at most 0.31" on seeds 0-2


@pytest.fixture(scope="module")
def stream(corpus, rope_models):
    readings = {"full": (None, 0), "w16": (16, 0), "w16+4": (16, 4), "w64": (64, 0), "w64+4": (64, 4)}
    return {(r, s): streaming_loss(rope_models[s], corpus.held_out, length=LONG, n_windows=N_WINDOWS,
                                   window=w, sinks=k)
            for r, (w, k) in readings.items() for s in SEEDS}


@pytest.mark.parametrize("seed", SEEDS)
def test_a_window_keeps_rope_stable_and_sinks_change_nothing(stream, seed):
    past = {r: stream[r, seed][L:].mean().item() for r in ("full", "w16", "w16+4", "w64", "w64+4")}
    inside = stream["full", seed][:L].mean().item()
    assert 2.0 < inside < 2.25
    assert past["full"] > 3.5 and past["full"] > inside + 1.0  # "loses its footing past L"
    for r in ("w16", "w16+4", "w64", "w64+4"):
        assert 1.75 < past[r] < 1.95, (r, past[r])  # "1.8-1.9 on all six seeds"
        assert past["full"] - past[r] > 1.5
    for w in (16, 64):
        assert abs(past[f"w{w}+4"] - past[f"w{w}"]) < 0.02  # "no difference at this budget"


def test_long_context_scales_as_printed():
    yarn = long_context_scale("yarn", LONG, original_max_len=L)
    assert yarn[0].item() == pytest.approx((0.1 * math.log(3) + 1) ** 2) == pytest.approx(1.232, abs=5e-4)
    log_length = long_context_scale("log_length", LONG, original_max_len=L)
    assert log_length[L - 1] == 1.0 and log_length[LONG - 1].item() == pytest.approx(math.log(LONG) / math.log(L))
    llama4 = long_context_scale("llama4", LONG, original_max_len=L)
    assert llama4[L - 2] == 1.0 and llama4[L - 1].item() == pytest.approx(1 + 0.1 * math.log(2))
    far = long_context_scale("llama4", 2**20, original_max_len=8192, floor_scale=8192)
    assert far[8190] == 1.0 and far[8191].item() == pytest.approx(1.0693, abs=1e-4)
    assert far[2**20 - 1].item() == pytest.approx(1.486, abs=1e-3)


@pytest.fixture(scope="module")
def temperature(corpus, rope_models):
    entropy, bits = {}, {}
    for s in SEEDS:
        for rule in ("none", "yarn", "log_length", "llama4"):
            scale = None if rule == "none" else long_context_scale(rule, LONG, original_max_len=L)
            entropy[rule, s] = attention_entropy_by_position(rope_models[s], corpus.held_out, length=LONG,
                                                             n_windows=N_WINDOWS, query_scale=scale)[..., L:].mean(-1)
            bits[rule, s] = streaming_loss(rope_models[s], corpus.held_out, length=LONG, n_windows=N_WINDOWS,
                                           query_scale=scale)
    return entropy, bits


@pytest.mark.parametrize("seed", SEEDS)
def test_temperatures_lower_entropy_on_every_head_and_bits_a_little(temperature, stream, seed):
    entropy, bits = temperature
    none_past = bits["none", seed][L:].mean().item()
    window_past = stream["w64", seed][L:].mean().item()
    means = {rule: entropy[rule, seed].mean().item() for rule in ("none", "yarn", "log_length", "llama4")}
    assert means["yarn"] < means["log_length"] < means["llama4"] < means["none"]  # "the order of their factors"
    for rule in ("yarn", "log_length", "llama4"):
        assert (entropy[rule, seed] < entropy["none", seed]).all(), rule  # every head
        past = bits[rule, seed][L:].mean().item()
        assert 0 < none_past - past < 0.4, (rule, none_past, past)  # "drops ... only a little"
        assert past - window_past > 1.5  # "still far worse than a window of 64"
    for rule in ("log_length", "llama4"):  # inside L they change nothing
        assert abs(bits[rule, seed][:L].mean().item() - bits["none", seed][:L].mean().item()) < 0.005
    assert abs(bits["yarn", seed][:L].mean().item() - bits["none", seed][:L].mean().item()) < 0.06


@pytest.mark.parametrize("seed", SEEDS)
def test_dynamic_scaling_with_a_kept_cache_drifts_logits(corpus, rope_models, seed):
    model = with_rope_scaling(rope_models[seed], "dynamic", factor=3.0, original_max_len=L)
    gap = dynamic_cache_gap(model, corpus.held_out, length=LONG, n_windows=N_WINDOWS)
    assert gap[:, :L].abs().max() == 0
    first, second = gap[:, L:2 * L].mean(-1), gap[:, 2 * L:].mean(-1)
    assert (first > 1.0).all() and (second < 3.0).all(), (first, second)
    assert (second > first).all()  # "growing with t" on every head


# --- section 5: which value means "no RoPE", against transformers ----------------------------------

def test_no_rope_layers_means_use_rope():
    transformers = pytest.importorskip("transformers")
    smol = transformers.SmolLM3Config(num_hidden_layers=8)
    assert smol.no_rope_layers == [1, 1, 1, 0, 1, 1, 1, 0]
    from transformers.models.smollm3 import modeling_smollm3
    assert "self.use_rope = config.no_rope_layers[layer_idx]" in inspect.getsource(modeling_smollm3.SmolLM3Attention)
    llama4 = transformers.Llama4TextConfig(num_hidden_layers=8)
    assert llama4.no_rope_layers == [1, 1, 1, 0, 1, 1, 1, 0]
    assert (llama4.floor_scale, llama4.attn_scale, llama4.attention_chunk_size) == (8192, 0.1, 8192)
    assert llama4.attn_temperature_tuning is True
    from transformers.models.llama4 import modeling_llama4
    source = inspect.getsource(modeling_llama4.Llama4TextAttention)
    assert "self.attn_temperature_tuning and not self.use_rope" in source  # temperature on NoPE layers only
    cohere2 = transformers.Cohere2Config(num_hidden_layers=8)
    assert cohere2.layer_types == (["sliding_attention"] * 3 + ["full_attention"]) * 2
    from transformers.models.cohere2 import modeling_cohere2
    assert "if self.sliding_window is not None:" in inspect.getsource(modeling_cohere2.Cohere2Attention)


# --- section 5: interleaved RoPE and NoPE blocks, from the zoo ------------------------------------

LAYOUTS = {"rope": ("capstone", "rope"), "rope_nope": ("interleaved", "rope_nope"),
           "irope": ("interleaved", "irope"), "none": ("capstone", "none")}
FAR, N_FAR = 4 * L, 16
PARTS = {"in": (8, L), "near": (L, 2 * L), "far": (2 * L, FAR)}


@pytest.fixture(scope="module")
def layouts(corpus):
    """Held-out bits at t 8-127, 128-255, 256-511 of 16 windows of 512, as the lesson reads them."""
    out = {}
    for name, (experiment, code) in LAYOUTS.items():
        for s in SEEDS:
            model = pretrained(experiment, position=code, seed=s)
            rows = {name: model}
            if name in ("rope_nope", "irope"):
                rows[name + "+temp"] = with_attn_temperature(model, floor_scale=L)
            for row, m in rows.items():
                curve = loss_by_position(m, corpus.held_out, length=FAR, n_windows=N_FAR)
                out[row, s] = {part: curve[a:b].mean().item() for part, (a, b) in PARTS.items()}
    bigram = counts_by_position(corpus.train, corpus.held_out, vocab_size=corpus.vocab_size, length=FAR,
                                n_windows=N_FAR)
    out["bigram"] = {part: bigram[a:b].mean().item() for part, (a, b) in PARTS.items()}
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_only_the_windowed_interleaving_holds_past_L(layouts, seed):
    rope, rope_nope, irope, none = (layouts[name, seed] for name in ("rope", "rope_nope", "irope", "none"))
    bigram = layouts["bigram"]
    assert max(abs(irope["in"] - rope["in"]), abs(rope_nope["in"] - rope["in"])) < 0.1, "close inside L"
    assert none["in"] - max(rope["in"], irope["in"], rope_nope["in"]) > 0.25, "0.3 or more ahead of all NoPE"
    for part in ("near", "far"):
        assert irope[part] < bigram[part] - 1.2, "the windowed layout holds, 1.3-1.6 below the bigram counts"
        assert irope[part] < 2.3
    assert rope["near"] > irope["near"] + 1.0 and rope["far"] > 4.5, "all RoPE breaks"
    assert rope_nope["near"] > irope["near"] + 1.0 and rope_nope["far"] > 4.5, "so does RoPE then NoPE"
    assert none["near"] > none["in"] + 0.4 and none["far"] > bigram["far"], "all NoPE gets worse"
    for name in ("rope_nope", "irope"):  # Llama 4's temperature at evaluation: no change worth a word
        for part in PARTS:
            assert abs(layouts[name + "+temp", seed][part] - layouts[name, seed][part]) < 0.03


@pytest.mark.parametrize("seed", SEEDS)
def test_the_nope_block_reads_far_but_the_far_text_does_not_help(corpus, seed):
    irope = pretrained("interleaved", position="irope", seed=seed)
    even = attention_beyond(uniform_causal_weights(FAR), L - 1)[2 * L:].mean().item()
    weights = streaming_attention(irope, corpus.held_out, length=FAR, n_windows=N_FAR)[1]
    reach = attention_beyond(weights, L - 1)[:, 2 * L:].mean(-1)
    assert even == pytest.approx(0.65, abs=0.005)
    assert ((reach > 0.55) & (reach < even)).all(), reach  # "0.60-0.63, close to an even spread's 0.65"
    whole, *last = (loss_by_position(irope, corpus.held_out, length=2 * L, n_windows=4,
                                     **({} if c is None else {"context": c}))[L:].mean().item()
                    for c in (None, L, 32))
    assert 0.0 < whole - last[0] < 0.04, "0.01-0.02 bits worse than the last 128 characters"
    assert 0.0 < whole - last[1] < 0.15, "and worse than the last 32"
