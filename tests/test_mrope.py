"""M-RoPE (course_utils/mrope.py) against Hugging Face transformers' Qwen2-VL (the test-only reference).

- ``mrope_positions`` == Qwen2VLModel.get_rope_index on input_ids built as a processor builds them
  (vision-start/-end tokens, image/video pad tokens, ``*_grid_thw`` in patches before the 2×2
  merge), batched with left padding, for every prompt whose videos have t <= max(h, w); for a
  video with t > max(h, w) the two differ by the documented convention, and only there.
- ``mrope_rotate`` == Qwen2VLRotaryEmbedding + apply_rotary_pos_emb at negated positions (and,
  with mrope_interleaved=True, Qwen3-VL's); with three equal rows == ``rope_rotate(layout="halves")``
  exactly; scores depend on the per-axis position differences only.

get_rope_index is a method of Qwen2VLModel that reads only ``self.config`` and
``self.get_vision_position_ids``, so the tests call it on a stand-in holding a config (no weights);
one test checks the stand-in against a real, tiny Qwen2VLModel.
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import mrope_axes, mrope_positions, mrope_rotate, rope_rotate
from course_utils.encodings import frequencies

transformers = pytest.importorskip("transformers")
from transformers import Qwen2VLConfig  # noqa: E402
from transformers.models.qwen2_vl import modeling_qwen2_vl as qwen2_vl  # noqa: E402
from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLTextConfig  # noqa: E402
from transformers.models.qwen3_vl import modeling_qwen3_vl as qwen3_vl  # noqa: E402
from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig  # noqa: E402

CONFIG = Qwen2VLConfig(
    text_config=dict(hidden_size=16, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
                     num_key_value_heads=2, vocab_size=151936),
    vision_config=dict(depth=1, embed_dim=16, hidden_size=16, num_heads=2, mlp_ratio=1))
MERGE = CONFIG.vision_config.spatial_merge_size  # 2: h and w in patches are 2× the LM tokens


class StandIn:
    """What Qwen2VLModel.get_rope_index reads of its model: the config and one helper method."""

    get_rope_index = qwen2_vl.Qwen2VLModel.get_rope_index
    get_vision_position_ids = qwen2_vl.Qwen2VLModel.get_vision_position_ids

    def __init__(self, config):
        self.config = config


def processor_inputs(prompts, generator):
    """input_ids, mm_token_type_ids, attention_mask [batch, length] (left padding) and the grids.

    Text tokens are ordinary ids; the text before a vision segment ends with vision-start, the text
    after it begins with vision-end. Images (t == 1) and videos (t > 1) list their grids [t, 2h, 2w]
    in patches, in prompt order, over the whole batch.
    """
    rows, image_grid, video_grid = [], [], []
    for segments in prompts:
        ids, kinds = [], []
        for i, (kind, *size) in enumerate(segments):
            if kind == "text":
                tokens = torch.randint(0, 60, (size[0],), generator=generator)
                if i + 1 < len(segments):
                    tokens[-1] = CONFIG.vision_start_token_id
                if i > 0:
                    tokens[0] = CONFIG.vision_end_token_id
                ids += tokens.tolist()
                kinds += [0] * size[0]
                continue
            t, h, w = size
            video = t > 1
            (video_grid if video else image_grid).append([t, MERGE * h, MERGE * w])
            token = CONFIG.video_token_id if video else CONFIG.image_token_id
            ids += [token] * (t * h * w)
            kinds += [2 if video else 1] * (t * h * w)
        rows.append((ids, kinds))
    length = max(len(ids) for ids, _ in rows)
    input_ids = torch.zeros(len(rows), length, dtype=torch.long)
    token_types = torch.zeros(len(rows), length, dtype=torch.int32)
    mask = torch.zeros(len(rows), length, dtype=torch.long)
    for b, (ids, kinds) in enumerate(rows):
        input_ids[b, length - len(ids):] = torch.tensor(ids)
        token_types[b, length - len(ids):] = torch.tensor(kinds, dtype=torch.int32)
        mask[b, length - len(ids):] = 1
    grid = lambda g: torch.tensor(g, dtype=torch.long) if g else None  # noqa: E731
    return input_ids, token_types, mask, grid(image_grid), grid(video_grid)


def transformers_positions(prompts, model=None, seed=0):
    """get_rope_index on the batch of prompts: one [3, n] tensor per prompt (padding dropped)."""
    input_ids, token_types, mask, image_grid, video_grid = processor_inputs(
        prompts, torch.Generator().manual_seed(seed))
    model = model or StandIn(CONFIG)
    positions, _ = model.get_rope_index(input_ids, token_types, image_grid_thw=image_grid,
                                        video_grid_thw=video_grid, attention_mask=mask)
    return [positions[:, b, mask[b].bool()] for b in range(len(prompts))]


@st.composite
def prompt_segments(draw, *, long_videos: bool):
    """A list of segments, never two vision segments in a row; t <= max(h, w) unless long_videos."""
    segments, previous = [], None
    for _ in range(draw(st.integers(1, 6))):
        if previous == "image" or not draw(st.booleans()):
            segments.append(("text", draw(st.integers(1, 4))))
        else:
            h, w = draw(st.integers(1, 4)), draw(st.integers(1, 4))
            t = draw(st.integers(1, 6 if long_videos else max(h, w)))
            segments.append(("image", t, h, w))
        previous = segments[-1][0]
    return segments


def length(segments) -> int:
    return sum(s[1] if s[0] == "text" else s[1] * s[2] * s[3] for s in segments)


# --- mrope_positions ------------------------------------------------------------------------------

@settings(max_examples=examples(60), deadline=None)
@given(st.lists(prompt_segments(long_videos=False), min_size=1, max_size=3))
def test_positions_equal_transformers_get_rope_index(batch):
    for segments, theirs in zip(batch, transformers_positions(batch)):
        ours = mrope_positions(segments)
        assert ours.dtype == torch.long and ours.shape == (3, length(segments))
        assert torch.equal(ours, theirs), (segments, ours, theirs)


def test_the_stand_in_is_what_a_real_qwen2_vl_model_computes():
    """A tiny Qwen2VLModel (random weights, never run) gives the stand-in's positions."""
    model = qwen2_vl.Qwen2VLModel(CONFIG)
    batch = [[("text", 3), ("image", 1, 2, 3), ("text", 2), ("image", 3, 2, 2), ("text", 1)],
             [("image", 2, 4, 1), ("text", 2), ("image", 1, 1, 1)]]
    for real, stand_in in zip(transformers_positions(batch, model), transformers_positions(batch)):
        assert torch.equal(real, stand_in)


@settings(max_examples=examples(60), deadline=None)
@given(prompt_segments(long_videos=True))
def test_after_a_long_video_we_start_at_max_t_h_w_where_transformers_5_starts_at_max_h_w(segments):
    """The convention: next start = start + max(t, h, w). transformers 5's get_rope_index uses
    start + max(h, w), so each token after a video with t > max(h, w) is t − max(h, w) further on
    here, on all three rows; nothing else differs."""
    theirs = transformers_positions([segments])[0]
    shift, shifts = 0, []
    for kind, *size in segments:
        shifts += [shift] * (size[0] if kind == "text" else math.prod(size))
        if kind == "image":
            shift += max(0, size[0] - max(size[1], size[2]))
    assert torch.equal(mrope_positions(segments), theirs + torch.tensor(shifts))


def test_our_convention_never_reuses_a_time_position_and_continues_where_generation_does():
    """After a 5-frame video of 2×2 tokens, transformers 5 puts the next text at start + 2, below the
    video's last time positions (start + 4), yet its generation offset (rope_deltas) continues from
    the maximum + 1, skipping a position. Ours puts the next text at start + 5: every position after
    the video is past it on every axis, and the next generated token is at the last position + 1."""
    segments = [("text", 3), ("image", 5, 2, 2), ("text", 2)]
    ours, theirs = mrope_positions(segments), transformers_positions([segments])[0]
    video = slice(3, 23)
    assert ours[0, video].max() == 3 + 4 and theirs[0, video].max() == 3 + 4
    assert ours[:, 23].tolist() == [8, 8, 8] and theirs[:, 23].tolist() == [5, 5, 5]
    assert (ours[:, 23:] > ours[:, video].max()).all() and not (theirs[:, 23:] > theirs[:, video].max()).all()
    input_ids, token_types, mask, image_grid, video_grid = processor_inputs([segments], torch.Generator())
    _, rope_deltas = StandIn(CONFIG).get_rope_index(input_ids, token_types, image_grid_thw=image_grid,
                                                    video_grid_thw=video_grid, attention_mask=mask)
    next_generated = input_ids.shape[1] + int(rope_deltas)  # transformers' next position
    # transformers: the prompt ends at 6 and the first generated token goes to 8, not 7
    assert next_generated == int(theirs.max()) + 1 == 8 and int(theirs[0, -1]) + 1 == 7
    assert int(ours[0, -1]) + 1 == int(ours.max()) + 1 == 10


def test_a_worked_example():
    """Two text tokens, a 2×3 image, two text tokens: the image starts at 2 and the text after it at
    2 + max(1, 2, 3) = 5."""
    positions = mrope_positions([("text", 2), ("image", 1, 2, 3), ("text", 2)])
    assert positions.tolist() == [[0, 1, 2, 2, 2, 2, 2, 2, 5, 6],
                                  [0, 1, 2, 2, 2, 3, 3, 3, 5, 6],
                                  [0, 1, 2, 3, 4, 2, 3, 4, 5, 6]]
    video = mrope_positions([("image", 2, 1, 2)])  # frame by frame, raster order within a frame
    assert video.tolist() == [[0, 0, 1, 1], [0, 0, 0, 0], [0, 1, 0, 1]]


def test_text_alone_is_1d_positions_and_segments_may_be_lists_or_numpy_ints():
    np = pytest.importorskip("numpy")
    assert torch.equal(mrope_positions([("text", 4), ["text", np.int64(3)]]), torch.arange(7).expand(3, 7))
    assert mrope_positions([]).shape == (3, 0)


@pytest.mark.parametrize("segments, error, words", [
    ("text", TypeError, "segments must be a list"),
    ([("image", 1, 2, 2), ("image", 1, 2, 2)], ValueError, r"segments\[0\] and segments\[1\]"),
    ([("text", 1), ("image", 1, 2, 2), ("image", 2, 2, 2)], ValueError, r"segments\[1\] and segments\[2\]"),
    ([("audio", 3)], ValueError, r"segments\[0\] must start with 'text' or 'image'"),
    ([()], ValueError, r"segments\[0\] must start"),
    (["text"], TypeError, r"segments\[0\] must be a tuple"),
    ([("text", 0)], ValueError, r"segments\[0\] n_tokens must be at least 1"),
    ([("text", 2.0)], TypeError, r"segments\[0\] n_tokens must be an integer"),
    ([("text", True)], TypeError, r"segments\[0\] n_tokens must be an integer"),
    ([("text", 1, 2)], ValueError, r"segments\[0\] must be \('text', n_tokens\)"),
    ([("text", 1), ("image", 1, 2)], ValueError, r"segments\[1\] must be \('image', t, h, w\)"),
    ([("image", 1, 0, 2)], ValueError, r"segments\[0\] h must be at least 1"),
    ([("image", -1, 2, 2)], ValueError, r"segments\[0\] t must be at least 1"),
    ([("image", 1, 2, "3")], TypeError, r"segments\[0\] w must be an integer"),
    ([("image", 10**6, 10**3, 10**3)], ValueError, "segments.*cap"),
])
def test_positions_refuse_bad_segments_by_name(segments, error, words):
    with pytest.raises(error, match=words):
        mrope_positions(segments)


# --- mrope_rotate ---------------------------------------------------------------------------------

@st.composite
def sections(draw):
    """mrope_section (three ints >= 0, at least one pair) and d_head = 2·Σ."""
    section = draw(st.lists(st.integers(0, 5), min_size=3, max_size=3).filter(lambda s: sum(s) > 0))
    return section, 2 * sum(section)


@settings(max_examples=examples(60), deadline=None)
@given(sections(), st.lists(st.integers(-200, 200), min_size=1, max_size=9),
       st.sampled_from((torch.float32, torch.float64)), st.sampled_from((10.0, 10_000.0, 1e6)),
       st.integers(0, 2**16))
def test_three_equal_rows_are_1d_rope_in_the_halves_layout_exactly(section_d, p, dtype, base, seed):
    section, d = section_d
    x = torch.randn(2, len(p), d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)
    p = torch.tensor(p)
    ours = mrope_rotate(x, p.expand(3, -1), mrope_section=section, base=base)
    assert torch.equal(ours, rope_rotate(x, positions=p, base=base, layout="halves"))
    assert ours.dtype == dtype


def hugging_face(x, positions, section, base, interleaved=False):
    """Qwen2-VL's (interleaved: Qwen3-VL's) text rotary embedding, cos/sin from three rows with the
    sections recombined, applied with apply_rotary_pos_emb. x [batch, heads, n, d]; positions [3, n]."""
    heads, d = x.shape[1], x.shape[-1]
    rope = {"rope_type": "default", "rope_theta": base, "mrope_section": list(section)}
    sizes = dict(hidden_size=heads * d, num_attention_heads=heads, num_key_value_heads=heads, num_hidden_layers=1,
                 vocab_size=151936)
    if interleaved:
        module = qwen3_vl
        embedding = qwen3_vl.Qwen3VLTextRotaryEmbedding(
            Qwen3VLTextConfig(**sizes, head_dim=d, rope_parameters=rope | {"mrope_interleaved": True}))
    else:
        module = qwen2_vl
        embedding = qwen2_vl.Qwen2VLRotaryEmbedding(Qwen2VLTextConfig(**sizes, rope_parameters=rope))
    cos, sin = embedding(x, positions[:, None, :].expand(3, x.shape[0], -1))
    rotated, _ = module.apply_rotary_pos_emb(x, x, cos, sin)
    return rotated


@settings(max_examples=examples(40), deadline=None)
@given(sections(), st.integers(1, 8), st.sampled_from((10.0, 10_000.0, 1e6)), st.integers(0, 2**16))
def test_equals_transformers_qwen2_vl_rotary_embedding_at_negated_positions(section_d, n, base, seed):
    """transformers makes cos/sin in float32: equal within 1e-5 for positions up to 60."""
    section, d = section_d
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 2, n, d, generator=generator, dtype=torch.float64)
    positions = torch.randint(0, 61, (3, n), generator=generator)
    ours = mrope_rotate(x, -positions, mrope_section=section, base=base)
    torch.testing.assert_close(ours, hugging_face(x, positions, section, base), rtol=1e-5, atol=1e-5)


def test_equals_transformers_on_a_real_prompt_with_qwen2_vl_sizes():
    """Head 128, mrope_section (16, 24, 24), base 10⁶ (Qwen2-VL-7B's config), positions from a prompt."""
    positions = mrope_positions([("text", 5), ("image", 1, 3, 4), ("text", 3), ("image", 2, 2, 2), ("text", 2)])
    x = torch.randn(1, 2, positions.shape[1], 128, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    theirs = hugging_face(x, positions, (16, 24, 24), 1e6)
    torch.testing.assert_close(mrope_rotate(x, -positions, mrope_section=(16, 24, 24), base=1e6), theirs,
                               rtol=1e-5, atol=1e-5)
    mirrored = mrope_rotate(x, positions, mrope_section=(16, 24, 24), base=1e6)  # the direction matters
    assert (mirrored - theirs).abs().max() > 0.1


def interleavable(section) -> bool:
    """Qwen3-VL's cycle time, height, width, ... gives height and width their pairs."""
    return 3 * section[1] <= sum(section) + 1 and 3 * section[2] <= sum(section)


@settings(max_examples=examples(40), deadline=None)
@given(sections().filter(lambda s: interleavable(s[0])), st.integers(1, 8), st.sampled_from((10.0, 10_000.0, 5e6)),
       st.integers(0, 2**16))
def test_interleaved_equals_transformers_qwen3_vl_rotary_embedding_at_negated_positions(section_d, n, base, seed):
    section, d = section_d
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 2, n, d, generator=generator, dtype=torch.float64)
    positions = torch.randint(0, 61, (3, n), generator=generator)
    ours = mrope_rotate(x, -positions, mrope_section=section, base=base, mrope_interleaved=True)
    torch.testing.assert_close(ours, hugging_face(x, positions, section, base, interleaved=True),
                               rtol=1e-5, atol=1e-5)


def test_interleaved_on_qwen3_vl_sizes_differs_from_blocks_only_on_images():
    """Head 128, (24, 20, 20): equal to transformers' Qwen3-VL; on text (three equal rows) the
    interleaving changes nothing, on an image it does."""
    positions = mrope_positions([("text", 4), ("image", 1, 3, 3), ("text", 2)])
    x = torch.randn(1, 2, positions.shape[1], 128, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    ours = mrope_rotate(x, -positions, mrope_section=[24, 20, 20], base=5e6, mrope_interleaved=True)
    torch.testing.assert_close(ours, hugging_face(x, positions, (24, 20, 20), 5e6, interleaved=True),
                               rtol=1e-5, atol=1e-5)
    blocks = mrope_rotate(x, -positions, mrope_section=[24, 20, 20], base=5e6)
    text = torch.tensor([True] * 4 + [False] * 9 + [True] * 2)
    assert torch.equal(ours[..., text, :], blocks[..., text, :])
    assert (ours[..., ~text, :] - blocks[..., ~text, :]).abs().max() > 0.1


@settings(max_examples=examples(40), deadline=None)
@given(sections(), st.integers(1, 6), st.integers(0, 2**16))
def test_scores_depend_on_the_per_axis_position_differences_only(section_d, n, seed):
    """q_t·k_s after rotation == q_t·(k_s rotated by P_s − P_t): the same for any shift of each axis."""
    section, d = section_d
    generator = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, n, d, generator=generator, dtype=torch.float64)
    pq, pk = torch.randint(-50, 50, (2, 3, n), generator=generator)
    shift = torch.randint(-1000, 1000, (3, 1), generator=generator)
    scores = (mrope_rotate(q, pq, mrope_section=section) * mrope_rotate(k, pk, mrope_section=section)).sum(-1)
    shifted = (mrope_rotate(q, pq + shift, mrope_section=section)
               * mrope_rotate(k, pk + shift, mrope_section=section)).sum(-1)
    offsets = (q * mrope_rotate(k, pk - pq, mrope_section=section)).sum(-1)
    torch.testing.assert_close(shifted, scores, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(offsets, scores, rtol=1e-9, atol=1e-9)


def test_each_axis_turns_only_its_own_pairs():
    """Moving the height position changes exactly the pairs of the height block (16 .. 39)."""
    x = torch.randn(1, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    before = mrope_rotate(x, torch.tensor([[3], [5], [7]]), mrope_section=[16, 24, 24])
    after = mrope_rotate(x, torch.tensor([[3], [9], [7]]), mrope_section=[16, 24, 24])
    changed = ((before - after).abs() > 1e-12)[0]
    pairs = changed[:64] | changed[64:]
    assert pairs.nonzero().flatten().tolist() == list(range(16, 40))


def test_real_positions_work_as_in_rope_rotate():
    x = torch.randn(3, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    p = torch.tensor([0.5, -1.25, 7.0], dtype=torch.float64)
    torch.testing.assert_close(mrope_rotate(x, p.expand(3, 3), mrope_section=(1, 1, 1)),
                               rope_rotate(x, positions=p, layout="halves"), rtol=0, atol=0)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(mrope_section=(1, 1, 1), base=0.0), ValueError, "base must be positive"),
    (dict(mrope_section=(1, 1, 2)), ValueError, r"mrope_section must sum to d_head/2 = 3 \(the last dimension of x"),
    (dict(mrope_section=(1, 2)), ValueError, "mrope_section must hold 3 ints"),
    (dict(mrope_section="112"), TypeError, "mrope_section must be a list"),
    (dict(mrope_section=(1, 1.0, 1)), TypeError, r"mrope_section\[1\] must be an integer"),
    (dict(mrope_section=(3, -1, 1)), ValueError, r"mrope_section\[1\] must be at least 0"),
    (dict(mrope_section=(0, 0, 0)), ValueError, "mrope_section must give at least one pair"),
    (dict(mrope_section=(1, 0, 2), mrope_interleaved=True), ValueError,
     r"mrope_section \[1, 0, 2\] cannot be interleaved"),
    (dict(mrope_section=(1, 1, 1), mrope_interleaved=1), TypeError, "mrope_interleaved must be True or False"),
    (dict(x=torch.zeros(4, 6, dtype=torch.long), mrope_section=(1, 1, 1)), TypeError, "x must hold floating"),
    (dict(x=torch.zeros(4, 5), mrope_section=(1, 1, 1)), ValueError, "the last dimension of x"),
    (dict(x=torch.zeros(6), mrope_section=(1, 1, 1)), ValueError, "x must have at least 2"),
    (dict(positions=torch.zeros(4, dtype=torch.long), mrope_section=(1, 1, 1)), ValueError,
     r"positions must have shape \[3, n\] = \[3, 4\]"),
    (dict(positions=torch.zeros(3, 5, dtype=torch.long), mrope_section=(1, 1, 1)), ValueError, "positions"),
    (dict(positions=torch.zeros(3, 4, dtype=torch.bool), mrope_section=(1, 1, 1)), TypeError,
     "positions must hold real"),
    (dict(positions=torch.full((3, 4), math.nan), mrope_section=(1, 1, 1)), ValueError, "positions contains NaN"),
    (dict(positions=[[0, 1, 2, 3]] * 3, mrope_section=(1, 1, 1)), TypeError, "positions must be a torch.Tensor"),
])
def test_rotate_refuses_bad_arguments_by_name(kwargs, error, words):
    call = dict(x=torch.zeros(4, 6), positions=torch.zeros(3, 4, dtype=torch.long)) | kwargs
    with pytest.raises(error, match=words):
        mrope_rotate(call.pop("x"), call.pop("positions"), **call)


# --- mrope_axes -----------------------------------------------------------------------------------

def test_axes_of_qwen2_vl_split_the_frequency_ladder_in_three_blocks():
    axes = mrope_axes([16, 24, 24], base=1e6)
    omega = frequencies(128, base=1e6)
    assert [axes[a]["pairs"] for a in ("time", "height", "width")] == [tuple(range(0, 16)), tuple(range(16, 40)),
                                                                       tuple(range(40, 64))]
    assert [axes[a]["n_pairs"] for a in axes] == [16, 24, 24]
    for axis in axes.values():
        assert axis["fastest"] == float(omega[axis["pairs"][0]]) and axis["slowest"] == float(omega[axis["pairs"][-1]])
        assert axis["longest_wavelength"] == pytest.approx(2 * math.pi / axis["slowest"], rel=1e-12)
    assert axes["time"]["fastest"] == 1.0 and axes["time"]["longest_wavelength"] == pytest.approx(160.11, abs=0.01)
    assert axes["width"]["slowest"] == pytest.approx(1e6 ** (-126 / 128), rel=1e-12)


def test_interleaved_axes_of_qwen3_vl_each_span_the_ladder():
    """(24, 20, 20): pairs 0, 3, ..., 57 and 60 .. 63 time, 1, 4, ..., 58 height, 2, 5, ..., 59 width."""
    axes = mrope_axes((24, 20, 20), mrope_interleaved=True)
    assert axes["time"]["pairs"] == tuple(range(0, 60, 3)) + (60, 61, 62, 63)
    assert axes["height"]["pairs"] == tuple(range(1, 60, 3)) and axes["width"]["pairs"] == tuple(range(2, 60, 3))
    omega = frequencies(128)
    assert axes["width"]["fastest"] == float(omega[2]) and axes["width"]["slowest"] == float(omega[59])
    blocks = mrope_axes((24, 20, 20))
    assert axes["width"]["fastest"] / blocks["width"]["fastest"] > 100  # blocks give width only slow pairs


def test_axes_with_no_pairs_and_bad_sections():
    axes = mrope_axes((2, 0, 1))
    assert axes["height"] == {"pairs": (), "n_pairs": 0, "fastest": None, "slowest": None,
                              "longest_wavelength": None}
    assert axes["width"]["fastest"] == pytest.approx(10_000 ** (-4 / 6), rel=1e-12)
    with pytest.raises(ValueError, match="mrope_section must hold 3"):
        mrope_axes([64])
    with pytest.raises(ValueError, match="base must be positive"):
        mrope_axes([1, 1, 1], base=-2)
