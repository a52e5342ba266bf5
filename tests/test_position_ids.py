"""Lesson 15's position ids of padded and packed rows, cross-checked against Hugging Face's
DataCollatorWithFlattening (packing) and generate's cumsum rule (left padding), and the packed
document measurement on small models."""

import pytest
import torch
from transformers import DataCollatorWithFlattening

from course_utils import ModelConfig, TinyTransformer, packed_document_bits, position_ids

LENGTH_SETS = [[3, 2, 1], [5], [1, 1, 1, 1], [4, 7, 2]]


@pytest.mark.parametrize("lengths", LENGTH_SETS)
def test_packed_rows_match_transformers(lengths):
    collator = DataCollatorWithFlattening(return_position_ids=True)
    features = [{"input_ids": list(range(1, n + 1))} for n in lengths]
    theirs = collator(features, return_tensors="pt")["position_ids"]
    documents = torch.cat([torch.full((n,), k + 1) for k, n in enumerate(lengths)])[None]
    assert torch.equal(position_ids(documents), theirs)


def test_left_padding_matches_the_cumsum_rule():
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 0, 0, 0, 1]])
    theirs = mask.cumsum(-1) - 1  # what generate computes; pads are masked either way
    ours = position_ids(mask)
    assert torch.equal(ours[mask == 1], theirs[mask == 1])
    assert (ours[mask == 0] == 0).all()


def test_one_dimensional_and_repeated_ids():
    assert position_ids(torch.tensor([1, 1, 2, 2, 2, 0])).tolist() == [0, 1, 0, 1, 2, 0]
    # a new run of the same number after a pad is a new document
    assert position_ids(torch.tensor([[1, 1, 0, 1, 1]])).tolist() == [[0, 1, 0, 0, 1]]
    assert position_ids(torch.tensor([[3, 3, 1, 1]], dtype=torch.int32)).dtype == torch.long


@pytest.mark.parametrize("bad, error", [
    (torch.tensor([[0.0, 1.0]]), TypeError), ([[0, 1]], TypeError), (torch.tensor([[-1, 1]]), ValueError),
    (torch.zeros(2, 0, dtype=torch.long), ValueError), (torch.zeros(1, 2, 2, dtype=torch.long), ValueError),
])
def test_bad_document_ids_are_refused_by_name(bad, error):
    with pytest.raises(error, match="document_ids"):
        position_ids(bad)


def _model(position: str) -> TinyTransformer:
    config = ModelConfig(vocab_size=8, d_model=16, n_heads=2, n_layers=1, max_len=32, position=position,
                         causal=True)
    return TinyTransformer(config, seed=0)


def test_rope_and_alibi_do_not_see_a_shift_and_learned_does():
    ids = torch.randint(0, 8, (400,), generator=torch.Generator().manual_seed(1))
    for position, same in (("rope", True), ("alibi", True), ("learned", False), ("none", True)):
        model = _model(position)
        reset = packed_document_bits(model, ids, first_length=10, length=12, n_windows=4, packing="reset")
        continued = packed_document_bits(model, ids, first_length=10, length=12, n_windows=4, packing="continued")
        assert reset.shape == (12,)
        assert torch.allclose(reset, continued, atol=1e-5) == same, position


def test_unmasked_reads_the_first_document():
    ids = torch.randint(0, 8, (400,), generator=torch.Generator().manual_seed(2))
    model = _model("rope")
    reset = packed_document_bits(model, ids, first_length=10, length=12, n_windows=4, packing="reset")
    unmasked = packed_document_bits(model, ids, first_length=10, length=12, n_windows=4, packing="unmasked")
    assert not torch.allclose(reset, unmasked)


def test_packed_document_bits_refuses_by_name():
    model = _model("learned")
    ids = torch.randint(0, 8, (400,))
    with pytest.raises(ValueError, match="first_length"):
        packed_document_bits(model, ids, first_length=30, length=12, packing="continued")
    with pytest.raises(ValueError, match="packing"):
        packed_document_bits(model, ids, first_length=3, length=12, packing="shifted")
    with pytest.raises(TypeError, match="model"):
        packed_document_bits("model", ids, first_length=3, length=12)
