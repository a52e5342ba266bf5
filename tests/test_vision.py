"""course_utils.vision: MAE's 2-D code, axial 2-D RoPE, patches, the digits loader and the tiny ViT."""

import numpy as np
import pytest
import torch
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import (ViTConfig, TinyViT, attention_distance, embedded_patches, evaluate_vit, grid_positions,
                          load_digits_patches, patchify, resize_table, rope_rotate, rope_rotate_2d,
                          sinusoidal_encoding_2d, train, train_vit, vit_features)
from course_utils.layers import ResidualFeatures, layer_profile


def mae_reference(grid_size: int, embed_dim: int) -> np.ndarray:
    """MAE's formula (He et al. 2022, util/pos_embed.py), written independently in float64: a
    meshgrid with w first, the first half from grid[0] (which varies along a row, i.e. the column),
    the second from grid[1] (the row); each half sin(pos·ω) then cos(pos·ω), ω = 1/10000^(i/(D/4))."""
    coords = np.arange(grid_size, dtype=np.float64)
    grid = np.stack(np.meshgrid(coords, coords), axis=0).reshape(2, -1)  # w first, as MAE's code

    def one_d(dim, pos):
        omega = 1.0 / 10_000.0 ** (np.arange(dim // 2, dtype=np.float64) / (dim / 2.0))
        out = np.outer(pos, omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)

    return np.concatenate([one_d(embed_dim // 2, grid[0]), one_d(embed_dim // 2, grid[1])], axis=1)


@pytest.mark.parametrize("size, d", [(1, 4), (4, 32), (7, 16), (14, 64)])
def test_2d_code_equals_maes(size, d):
    ours = sinusoidal_encoding_2d(size, size, d, dtype=torch.float64).numpy()
    assert np.allclose(ours, mae_reference(size, d), rtol=0, atol=1e-12)


def test_2d_code_layout_and_rectangular_grids():
    code = sinusoidal_encoding_2d(3, 5, 8, dtype=torch.float64)
    rows, cols = grid_positions(3, 5)
    assert code.shape == (15, 8)
    assert rows.tolist() == [0] * 5 + [1] * 5 + [2] * 5 and cols.tolist() == list(range(5)) * 3
    # the first half depends on the column only, the second on the row only
    for column in range(5):
        assert torch.allclose(code[cols == column, :4], code[column, :4].expand(3, 4))
    for row in range(3):
        assert torch.allclose(code[rows == row, 4:], code[5 * row, 4:].expand(5, 4))
    assert torch.allclose(code[:, :2], torch.stack([torch.sin(cols.double()), torch.sin(cols / 100.0)], 1))
    spaced = sinusoidal_encoding_2d(6, 10, 8, spacing=0.5, dtype=torch.float64)
    even = (grid_positions(6, 10)[0] % 2 == 0) & (grid_positions(6, 10)[1] % 2 == 0)
    assert torch.allclose(spaced[even], code)


def test_2d_code_refuses_widths_not_divisible_by_4():
    with pytest.raises(ValueError, match="d_model"):
        sinusoidal_encoding_2d(2, 2, 6)


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.sampled_from([4, 8, 12, 16]), st.integers(0, 2**31 - 1),
       st.integers(-20, 20), st.integers(-20, 20))
def test_rope_2d_score_depends_on_the_grid_offset_only(height, width, d, seed, shift_row, shift_col):
    """(R_p q)·(R_p' k) is the same for every pair of patches with the same (Δrow, Δcol), and moving
    every patch by the same (shift_row, shift_col) changes no score."""
    generator = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, d, generator=generator, dtype=torch.float64)
    rows, cols = (p.double() for p in grid_positions(height, width))
    n = height * width
    scores = rope_rotate_2d(q.expand(n, d), rows, cols) @ rope_rotate_2d(k.expand(n, d), rows, cols).T
    moved = (rope_rotate_2d(q.expand(n, d), rows + shift_row, cols + shift_col)
             @ rope_rotate_2d(k.expand(n, d), rows + shift_row, cols + shift_col).T)
    assert torch.allclose(scores, moved, atol=1e-9)
    by_offset = {}
    for a in range(n):
        for b in range(n):
            key = (int(rows[b] - rows[a]), int(cols[b] - cols[a]))
            by_offset.setdefault(key, []).append(scores[a, b].item())
    for values in by_offset.values():
        assert max(values) - min(values) < 1e-9


def test_rope_2d_is_rope_on_each_half():
    x = torch.randn(2, 6, 8, dtype=torch.float64)
    rows, cols = torch.tensor([0.0, 0, 1, 1, 2, 2.5]), torch.tensor([0.0, 1, 0, 1, 0, -1])
    expected = torch.cat([rope_rotate(x[..., :4], positions=cols), rope_rotate(x[..., 4:], positions=rows)], -1)
    assert torch.allclose(rope_rotate_2d(x, rows, cols), expected, rtol=0, atol=1e-12)


def test_patchify_cuts_squares_in_raster_order():
    images = torch.arange(2 * 4 * 6, dtype=torch.float32).reshape(2, 4, 6)
    patches = patchify(images, 2)
    assert patches.shape == (2, 6, 4)
    assert patches[0, 0].tolist() == [0, 1, 6, 7]  # top-left square, row by row
    assert patches[0, 1].tolist() == [2, 3, 8, 9]  # its right neighbour comes next
    assert patches[0, 3].tolist() == [12, 13, 18, 19]  # then the next row of patches
    with pytest.raises(ValueError, match="patch_size"):
        patchify(images, 4)


def test_digits_loader_shapes_split_and_determinism():
    data = load_digits_patches()
    assert data.train_patches.shape == (1347, 16, 4) and data.test_patches.shape == (450, 16, 4)
    assert data.grid == (4, 4) and data.patch_size == 2
    assert abs(data.train_patches.mean().item()) < 1e-5 and abs(data.train_patches.std().item() - 1) < 1e-2
    test_counts = torch.bincount(data.test_labels, minlength=10)
    all_counts = test_counts + torch.bincount(data.train_labels, minlength=10)
    assert ((test_counts - 0.25 * all_counts).abs() <= 1).all()  # stratified: a quarter of each digit
    again = load_digits_patches()
    assert torch.equal(again.train_patches, data.train_patches) and torch.equal(again.test_labels, data.test_labels)
    big = load_digits_patches(upsample=2)
    assert big.grid == (8, 8) and big.test_patches.shape == (450, 64, 4)
    assert torch.equal(big.test_labels, data.test_labels)  # the same images at 16×16
    other = load_digits_patches(random_state=1)
    assert not torch.equal(other.test_labels, data.test_labels)


def test_resize_table_keeps_a_table_and_interpolates():
    table = torch.randn(16, 6, dtype=torch.float64)
    assert torch.allclose(resize_table(table, (4, 4), (4, 4)), table)
    smooth = torch.stack([torch.arange(4.0).repeat_interleave(4), torch.arange(4.0).repeat(4)], 1)  # (row, col)
    resized = resize_table(smooth, (4, 4), (8, 8), mode="bilinear")
    assert resized.shape == (64, 2)
    assert torch.all(resized[:, 0].reshape(8, 8).diff(dim=0) >= 0)  # rows still increase downwards
    with pytest.raises(ValueError, match="table"):
        resize_table(table, (3, 3), (4, 4))


@pytest.mark.parametrize("position", ["none", "sinusoidal_1d", "sinusoidal_2d", "learned", "rope_2d"])
def test_vit_shapes_and_another_grid(position):
    model = TinyViT(position=position, d_model=16, n_layers=2, seed=0)
    patches = torch.randn(3, 16, 4)
    assert model(patches).shape == (3, 10)
    out = model(patches, details=True)
    assert len(out.residuals) == 5 and out.residuals[0].shape == (3, 16, 16)
    assert torch.equal(out.residuals[-1], model._run(patches, model.grid, 1.0, details=True).residuals[-1])
    assert model(torch.randn(2, 64, 4), grid=(8, 8)).shape == (2, 10)
    assert model(torch.randn(2, 64, 4), grid=(8, 8), spacing=0.5).shape == (2, 10)
    with pytest.raises(ValueError, match="patches"):
        model(torch.randn(2, 64, 4))


def test_shuffling_patches_leaves_a_no_position_vit_unchanged():
    patches = torch.randn(5, 16, 4, dtype=torch.float64)
    order = torch.randperm(16, generator=torch.Generator().manual_seed(3))
    bag = TinyViT(position="none", n_layers=2, seed=1).double()
    assert torch.allclose(bag(patches), bag(patches[:, order]), rtol=0, atol=1e-12)
    for position in ("sinusoidal_2d", "learned", "rope_2d"):
        model = TinyViT(position=position, n_layers=2, seed=1).double()
        if position == "learned":
            torch.nn.init.normal_(model.table, std=1.0)
        assert (model(patches) - model(patches[:, order])).abs().max() > 1e-4


def test_rope_vit_sees_offsets_only():
    """Moving every patch by the same grid offset changes nothing in a 2-D RoPE ViT."""
    model = TinyViT(position="rope_2d", n_layers=2, seed=2).double()
    patches = torch.randn(3, 16, 4, dtype=torch.float64)
    rows, cols = grid_positions(4, 4)
    shifted = model.rotary()  # positions (row, col); compare with (row + 3, col − 2) by hand
    from course_utils.grid_codes import rope_tables_2d
    from course_utils.rope import rotate_pairs
    cos, sin = rope_tables_2d(rows + 3.0, cols - 2.0, 16, model.base)
    x = model.patch_embedding(patches)
    a, b = x, x
    for block in model.blocks:
        a = block(a, None, None, shifted)[0]
        b = block(b, None, None, lambda t: rotate_pairs(t, cos, sin))[0]
    assert torch.allclose(a, b, atol=1e-10)


def test_training_is_reproducible_and_learns():
    data = load_digits_patches()
    models = [TinyViT(position="learned", n_layers=1, seed=0) for _ in range(2)]
    histories = [train(m, (data.train_patches, data.train_labels), steps=30, batch_size=64, lr=2e-2, seed=0,
                       schedule="warmup_linear", progress=False) for m in models]
    assert histories[0].loss == histories[1].loss
    assert torch.equal(models[0](data.test_patches[:8]), models[1](data.test_patches[:8]))
    assert evaluate_vit(models[0], data.test_patches, data.test_labels) > 0.3  # chance is 0.1


def test_vit_features_feed_layer_profile():
    data = load_digits_patches()
    model = TinyViT(position="sinusoidal_2d", n_layers=2, seed=0)
    features = vit_features(model, data.test_patches[:40], data.test_labels[:40])
    assert isinstance(features, ResidualFeatures) and len(features.layers) == 5
    assert features.layers[0].shape == (640, 32)
    assert features.positions[:17].tolist() == list(range(16)) + [0]
    assert features.targets[:17].tolist() == [data.test_labels[0].item()] * 16 + [data.test_labels[1].item()]
    assert 0 <= features.tokens.min() and features.tokens.max() < 16
    blank = (data.test_patches[:40] <= 0).all(dim=-1).reshape(-1)
    assert (features.tokens[blank] == 0).all()
    profile = layer_profile(features)
    assert profile.position_probe[0] > 0.9  # the 2-D code makes the input position readable


def test_vit_details_hold_the_stream_after_each_sub_layer():
    model = TinyViT(position="rope_2d", n_layers=2, seed=4).double()
    patches = torch.randn(2, 16, 4, dtype=torch.float64)
    out = model(patches, details=True)
    rotate = model.rotary()
    x = out.residuals[0]
    for index, block in enumerate(model.blocks):
        after_attention = x + block.attention(block.ln_attention(x), None, None, rotate)[0]
        assert torch.allclose(out.residuals[2 * index + 1], after_attention, atol=1e-12)
        x = after_attention + block.mlp(block.ln_mlp(after_attention))
        assert torch.allclose(out.residuals[2 * index + 2], x, atol=1e-12)
    assert torch.allclose(out.logits, model(patches))


def test_training_side_by_side_equals_training_alone():
    data = load_digits_patches()
    images = (data.train_patches, data.train_labels)
    settings = dict(steps=12, batch_size=64, lr=2e-2, schedule="warmup_linear", progress=False)
    for position in ("learned", "rope_2d"):
        group = [TinyViT(position=position, seed=s) for s in (5, 6)]
        histories = train(group, images, seed=[5, 6], **settings)
        alone = TinyViT(position=position, seed=6)
        history = train(alone, images, seed=6, **settings)
        assert len(histories) == 2 and histories[1].loss == pytest.approx(history.loss, abs=1e-5)
        for a, b in zip(group[1].parameters(), alone.parameters()):
            # Adam divides by the gradient's size: a weight whose gradient is near zero can move
            # by a fraction of lr on a rounding-level difference (measured: at most 5e-4 here)
            assert torch.allclose(a, b, atol=2e-3)
    with pytest.raises(ValueError, match="seed"):
        train(group, images, seed=0, **settings)
    with pytest.raises(ValueError, match="model"):
        train([group[0], TinyViT(position="none")], images, seed=[0, 1], **settings)


def test_train_vit_is_train_with_lesson_13s_settings_and_warns():
    data = load_digits_patches()
    images = (data.train_patches[:200], data.train_labels[:200])
    by_train = [TinyViT(position="learned", seed=s) for s in (0, 1)]
    by_old_name = [TinyViT(position="learned", seed=s) for s in (0, 1)]
    expected = train(by_train, images, steps=3, batch_size=64, lr=2e-2, seed=[0, 1], schedule="warmup_linear",
                     progress=False)
    with pytest.warns(DeprecationWarning, match="train_vit is deprecated"):
        got = train_vit(by_old_name, *images, steps=3, seed=[0, 1], progress=False)
    assert [h.loss for h in got] == [h.loss for h in expected]
    for a, b in zip(by_train[1].parameters(), by_old_name[1].parameters()):
        assert torch.equal(a, b)


def test_a_vit_is_built_from_its_config_record():
    config = ViTConfig(position="rope_2d", grid=[3, 4], d_model=16)
    assert config.grid == (3, 4) and config.d_ff is None
    by_record, by_keywords = TinyViT(config, seed=2), TinyViT(position="rope_2d", grid=(3, 4), d_model=16, seed=2)
    assert by_record.config == by_keywords.config == config
    for a, b in zip(by_record.parameters(), by_keywords.parameters()):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="config"):
        TinyViT(config, d_model=64)
    with pytest.raises(TypeError, match="config"):
        TinyViT("rope_2d")
    with pytest.raises(ValueError, match="n_heads"):
        ViTConfig(position="rope_2d", d_model=16, n_heads=8)  # 2 features a head: no halves of pairs


def test_vit_features_at_block_boundaries_only():
    data = load_digits_patches()
    model = TinyViT(position="learned", n_layers=2, seed=1)
    every = vit_features(model, data.test_patches[:5], data.test_labels[:5])
    blocks = vit_features(model, data.test_patches[:5], data.test_labels[:5], sublayers=False)
    assert len(blocks.layers) == 3  # the input, after block 1, after block 2
    assert all(torch.equal(a, b) for a, b in zip(blocks.layers, every.layers[::2]))
    assert torch.equal(blocks.tokens, every.tokens) and torch.equal(blocks.positions, every.positions)
    with pytest.raises(TypeError, match="sublayers"):
        vit_features(model, data.test_patches[:5], data.test_labels[:5], sublayers=1)


@pytest.mark.parametrize("position", ["none", "learned", "sinusoidal_2d", "rope_2d"])
def test_embedded_patches_are_the_stream_entering_the_first_block(position):
    data = load_digits_patches()
    model = TinyViT(position=position, n_layers=1, seed=2)
    patches = data.test_patches[:3]
    with_code = embedded_patches(model, patches)
    alone = embedded_patches(model, patches, with_code=False)
    assert with_code.dtype == torch.float64 and with_code.shape == (48, 32)
    stream = vit_features(model, patches, data.test_labels[:3]).layers[0]
    assert torch.allclose(with_code, stream, atol=1e-5)  # the model computes it in float32
    code = model.code()
    if code is None:
        assert torch.equal(with_code, alone)
    else:
        assert torch.allclose(with_code - alone, code.detach().double().repeat(3, 1), atol=1e-12)
    # float64 pixels give a stream of rank 4 + 1 (the bias): no float32 noise in other directions
    assert torch.linalg.matrix_rank(alone) == 5
    with pytest.raises(ValueError, match="patches"):
        embedded_patches(model, torch.randn(3, 9, 4))


def test_attention_distance_weighs_grid_distances_by_attention():
    model = TinyViT(position="rope_2d", n_layers=2, seed=3).double()
    patches = torch.randn(4, 16, 4, dtype=torch.float64)
    out = model(patches, details=True)
    assert len(out.attention) == 2 and out.attention[0].shape == (4, 2, 16, 16)
    rows, cols = grid_positions(4, 4)
    expected = torch.zeros(2, 2, dtype=torch.float64)
    for layer, weights in enumerate(out.attention):
        for q in range(16):
            for k in range(16):
                gap = ((rows[q] - rows[k]) ** 2 + (cols[q] - cols[k]) ** 2) ** 0.5
                expected[layer] += weights[:, :, q, k].mean(dim=0) * gap / 16
    assert torch.allclose(attention_distance(model, patches), expected, atol=1e-12)
    # uniform attention (zero queries) gives the mean distance between two patches of the grid
    with torch.no_grad():
        for block in model.blocks:  # equal scores everywhere: uniform attention
            block.attention.qkv.weight.zero_()
            block.attention.qkv.bias.zero_()
    uniform = attention_distance(model, patches)
    assert torch.allclose(uniform, torch.full((2, 2), 2.008, dtype=torch.float64), atol=5e-4)
    with pytest.raises(ValueError, match="n_layers"):
        attention_distance(TinyViT(n_layers=0), patches.float())
