"""Tests for course_utils.text (lesson 14): the corpus and its split, the character encoding,
windows of text, training on a text with `train`, and loss_by_position with and without a
sliding window."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import (ModelConfig, TinyTransformer, load_text_corpus,
                          loss_by_position, text_batch, text_windows, train)
from course_utils.text import context_gain, decode_text, encode_text, UNKNOWN, UNKNOWN_MARK, build_vocabulary


@pytest.fixture(scope="module")
def corpus():
    return load_text_corpus(docstrings=False)  # the pydoc topics alone, as in version 0.2


def _model(position: str = "alibi", *, vocab_size: int = 12, max_len: int = 64, causal: bool = True):
    config = ModelConfig(vocab_size=vocab_size, d_model=8, n_heads=2, n_layers=2, max_len=max_len,
                         position=position, causal=causal)
    return TinyTransformer(config, seed=0)


# --- the corpus ----------------------------------------------------------------------------------

def test_the_split_is_by_whole_topic_and_deterministic(corpus):
    from pydoc_data.topics import topics

    train, held, dropped = map(set, (corpus.train_topics, corpus.held_out_topics, corpus.dropped_topics))
    assert train | held | dropped == set(topics)
    assert not train & held and not train & dropped and not held & dropped
    names = sorted(topics)
    assert tuple(sorted(held | dropped)) == tuple(names[::4])
    assert {"identifiers", "while"} <= dropped and len(held) >= 10
    again = load_text_corpus(docstrings=False)
    assert torch.equal(again.train, corpus.train) and torch.equal(again.held_out, corpus.held_out)
    assert again.vocabulary == corpus.vocabulary


def test_the_held_out_text_is_exactly_its_topics(corpus):
    from pydoc_data.topics import topics

    text = corpus.decode(corpus.held_out)
    for name in corpus.held_out_topics:
        body = topics[name].strip()
        assert corpus.decode(corpus.encode(body)) in text
    # a held-out topic's text does not appear in the training text (no leakage)
    train_text = corpus.decode(corpus.train)
    for name in corpus.held_out_topics[:5]:
        probe = corpus.decode(corpus.encode(topics[name].strip()[:400]))
        assert probe not in train_text


def test_no_held_out_topic_repeats_the_training_text(corpus):
    """The leakage rule: at most 5 % of a held-out topic's 64-character passages occur verbatim in
    the training text, and every dropped topic breaks it (pydoc topics quote each other)."""
    from pydoc_data.topics import topics

    from course_utils.text import MAX_SHARED, SHINGLE

    assert (SHINGLE, MAX_SHARED) == (64, 0.05)
    train_text = "".join(topics[name].strip() + "\n\n" for name in corpus.train_topics)
    seen = {train_text[i:i + 64] for i in range(len(train_text) - 63)}

    def shared(name):
        body = topics[name].strip()
        passages = [body[i:i + 64] for i in range(len(body) - 63)]
        return sum(p in seen for p in passages) / len(passages)

    assert corpus.decode(corpus.train) == corpus.decode(corpus.encode(train_text))
    assert all(shared(name) <= 0.05 for name in corpus.held_out_topics)
    assert all(shared(name) > 0.05 for name in corpus.dropped_topics)
    # held-out passages of 256 characters are essentially never in the training text
    held_text = corpus.decode(corpus.held_out)
    probes = [held_text[i:i + 256] for i in range(0, len(held_text) - 256, 997)]
    assert sum(p in train_text for p in probes) <= 0.02 * len(probes)


def test_a_split_that_leaves_nothing_held_out_is_refused(monkeypatch):
    import pydoc_data.topics

    monkeypatch.setattr(pydoc_data.topics, "topics", {"a": "x" * 300, "b": "x" * 300, "c": "x" * 90})
    with pytest.raises(ValueError, match="held_out_every"):
        load_text_corpus(held_out_every=2, min_count=1, docstrings=False)


def test_the_vocabulary_comes_from_the_training_text(corpus):
    assert corpus.vocabulary[0] == UNKNOWN_MARK
    assert corpus.vocab_size == len(corpus.vocabulary) == len(set(corpus.vocabulary))
    assert int(corpus.train.max()) < corpus.vocab_size and int(corpus.held_out.max()) < corpus.vocab_size
    assert corpus.vocabulary[1] == " "  # the most frequent character
    assert 0 < (corpus.held_out == UNKNOWN).float().mean() < 0.01  # rare characters are rare
    assert corpus.train.dtype == torch.long and corpus.held_out.dtype == torch.long


def test_min_count_decides_what_is_rare():
    vocabulary = build_vocabulary("aaabbc", min_count=2)
    assert vocabulary == UNKNOWN_MARK + "ab"
    assert encode_text("abcz", vocabulary).tolist() == [1, 2, UNKNOWN, UNKNOWN]
    assert decode_text(encode_text("abcz", vocabulary), vocabulary) == f"ab{UNKNOWN_MARK}{UNKNOWN_MARK}"
    assert build_vocabulary("ba", min_count=1) == UNKNOWN_MARK + "ab"  # ties in code-point order
    with pytest.raises(ValueError, match="min_count"):
        build_vocabulary("abc", min_count=2)


@given(st.text(alphabet="abcdef \n", min_size=1, max_size=40))
@settings(max_examples=examples(30), deadline=None)
def test_encode_then_decode_is_the_identity_on_known_characters(text):
    vocabulary = UNKNOWN_MARK + "abcdef \n"
    ids = encode_text(text, vocabulary)
    assert ids.shape == (len(text),) and ids.dtype == torch.long
    assert decode_text(ids, vocabulary) == text
    assert decode_text(ids.tolist(), vocabulary) == text


def test_wrong_inputs_are_refused_by_name():
    with pytest.raises(ValueError, match="vocabulary"):
        encode_text("ab", "ab")  # no unknown mark at id 0
    with pytest.raises(ValueError, match="ids"):
        decode_text(torch.tensor([0, 5]), UNKNOWN_MARK + "ab")
    with pytest.raises(TypeError, match="ids"):
        decode_text(torch.tensor([0.0]), UNKNOWN_MARK + "ab")
    with pytest.raises(ValueError, match="held_out_every"):
        load_text_corpus(held_out_every=1)
    with pytest.raises(TypeError, match="docstrings"):
        load_text_corpus(docstrings=1)
    with pytest.raises(TypeError, match="min_count"):
        load_text_corpus(min_count=2.0)
    with pytest.raises(ValueError, match="held_out_every"):
        load_text_corpus(held_out_every=10_000)


# --- windows ---------------------------------------------------------------------------------------

def test_text_batch_targets_are_the_next_characters():
    ids = torch.arange(100)
    batch = text_batch(ids, batch_size=5, length=7, generator=torch.Generator().manual_seed(0))
    assert batch.tokens.shape == batch.targets.shape == batch.scored.shape == (5, 7)
    assert torch.equal(batch.targets, batch.tokens + 1)  # consecutive characters
    assert torch.equal(batch.tokens[:, 1:], batch.tokens[:, :-1] + 1)
    assert bool(batch.scored.all())
    assert int(batch.targets.max()) <= 99
    again = text_batch(ids, batch_size=5, length=7, generator=torch.Generator().manual_seed(0))
    assert torch.equal(again.tokens, batch.tokens)


def test_a_window_can_end_at_the_last_character():
    ids = torch.arange(9)
    batch = text_batch(ids, batch_size=50, length=8, generator=torch.Generator().manual_seed(1))
    assert torch.equal(batch.tokens, torch.arange(8).expand(50, 8))
    with pytest.raises(ValueError, match="length"):
        text_batch(ids, batch_size=1, length=9, generator=torch.Generator())


def test_text_windows_are_evenly_spaced_and_cover_both_ends():
    ids = torch.arange(1000)
    windows = text_windows(ids, length=10, n_windows=4)
    assert windows.tokens[:, 0].tolist() == [0, 330, 659, 989]
    assert int(windows.targets[-1, -1]) == 999
    assert torch.equal(windows.targets, windows.tokens + 1)


# --- training on a text ------------------------------------------------------------------------

def test_train_on_a_text_lowers_the_loss_and_keeps_task_training_unchanged():
    text = torch.tensor([1, 2, 3, 4] * 50)  # a periodic text: the next character is predictable
    model = _model("rope", vocab_size=5)
    history = train(model, text, steps=60, batch_size=8, lengths=(8, 8), lr=0.02, seed=0, progress=False)
    assert len(history.loss) == 60
    assert history.loss[-1] < 0.2 < history.loss[0]
    assert history.final_accuracy() > 0.95
    # the same seed gives the same batches, so the same history
    again = train(_model("rope", vocab_size=5), text, steps=60, batch_size=8, lengths=(8, 8), lr=0.02, seed=0,
                  progress=False)
    assert again.loss == history.loss


def test_train_on_a_text_refuses_what_cannot_be_a_language_model():
    text = torch.tensor([1, 2, 3] * 10)
    with pytest.raises(ValueError, match="causal"):
        train(_model(causal=False), text, steps=1, progress=False)
    with pytest.raises(ValueError, match="vocab_size"):
        train(_model(vocab_size=3), text, steps=1, progress=False)
    with pytest.raises(ValueError, match="task"):
        train(_model(), torch.tensor([1, 2, 3]), steps=1, lengths=(8, 8), progress=False)
    with pytest.raises(TypeError, match="task"):
        train(_model(), text.float(), steps=1, progress=False)
    with pytest.raises(ValueError, match="max_len"):
        train(_model("learned", max_len=8), text, steps=1, lengths=(4, 9), progress=False)


# --- loss by position --------------------------------------------------------------------------

def test_loss_by_position_is_the_cross_entropy_in_bits():
    model = _model("sinusoidal")
    ids = torch.randint(0, 12, (300,), generator=torch.Generator().manual_seed(0))
    loss = loss_by_position(model, ids, length=20, n_windows=3)
    windows = text_windows(ids, length=20, n_windows=3)
    with torch.no_grad():
        log_p = torch.log_softmax(model(windows.tokens).double(), dim=-1)
    expected = -log_p.gather(-1, windows.targets[..., None])[..., 0].mean(0) / math.log(2)
    assert loss.shape == (20,)
    assert torch.allclose(loss.double(), expected, atol=1e-5)


@pytest.mark.parametrize("position", ["none", "sinusoidal", "learned", "rope", "alibi"])
def test_a_sliding_window_is_the_model_on_the_last_characters(position):
    model = _model(position)
    ids = torch.randint(0, 12, (200,), generator=torch.Generator().manual_seed(1))
    context, length = 5, 12
    cut = loss_by_position(model, ids, length=length, n_windows=2, context=context)
    full = loss_by_position(model, ids, length=length, n_windows=2)
    windows = text_windows(ids, length=length, n_windows=2)
    assert torch.allclose(cut[:context], full[:context])  # nothing to cut yet
    for t in (context, length - 1):
        read = windows.tokens[:, t - context + 1:t + 1]  # renumbered 0 .. context-1
        with torch.no_grad():
            log_p = torch.log_softmax(model(read)[:, -1].double(), dim=-1)
        expected = -log_p.gather(-1, windows.targets[:, t:t + 1])[:, 0].mean() / math.log(2)
        assert abs(cut[t].item() - expected.item()) < 1e-5


def test_a_sliding_window_as_long_as_the_text_changes_nothing():
    model = _model("rope")
    ids = torch.randint(0, 12, (100,), generator=torch.Generator().manual_seed(2))
    assert torch.equal(loss_by_position(model, ids, length=10, context=10, n_windows=2),
                       loss_by_position(model, ids, length=10, n_windows=2))


def test_loss_by_position_refuses_by_name_and_leaves_the_mode():
    ids = torch.randint(0, 12, (100,))
    with pytest.raises(ValueError, match="causal"):
        loss_by_position(_model(causal=False), ids, length=8)
    with pytest.raises(ValueError, match="max_len"):
        loss_by_position(_model("learned", max_len=8), ids, length=16)
    loss_by_position(_model("learned", max_len=8), ids, length=16, context=8)  # a window of 8 fits
    with pytest.raises(ValueError, match="vocab_size"):
        loss_by_position(_model(vocab_size=5), ids, length=8)
    model = _model()
    model.train()
    loss_by_position(model, ids, length=8)
    assert model.training


def test_unigram_bigram_bits_are_the_counts_cross_entropy():
    from course_utils.text import unigram_bigram_bits

    train = torch.tensor([1, 2, 1, 2, 1, 3])
    held = torch.tensor([1, 2, 3])
    unigram, bigram = unigram_bigram_bits(train, held, vocab_size=4)
    p1 = torch.tensor([1, 4, 3, 2], dtype=torch.float64) / 10  # counts + 1 over 4 + 6
    assert unigram == pytest.approx(-p1[held].log2().mean().item())
    # after 1: 2 twice, 3 once (+0.1 each of 4); after 2: 1 twice
    p_12, p_23 = 2.1 / 3.4, 0.1 / 2.4
    assert bigram == pytest.approx(-(math.log2(p_12) + math.log2(p_23)) / 2)
    with pytest.raises(ValueError, match="train"):
        unigram_bigram_bits(torch.tensor([1]), held, vocab_size=4)
    with pytest.raises(ValueError, match="held_out"):
        unigram_bigram_bits(train, torch.tensor([5, 1]), vocab_size=4)


def test_counts_by_position_scores_the_windows_loss_by_position_reads():
    from course_utils import counts_by_position, text_windows, unigram_bigram_bits

    g = torch.Generator().manual_seed(0)
    train, held = torch.randint(0, 6, (400,), generator=g), torch.randint(0, 6, (200,), generator=g)
    # one window over the whole held-out text: the mean is unigram_bigram_bits' number
    bigram = unigram_bigram_bits(train, held, vocab_size=6)[1]
    unigram = unigram_bigram_bits(train, held[1:], vocab_size=6)[0]  # the targets: characters 1 .. 199
    whole = dict(vocab_size=6, length=199, n_windows=1)
    assert counts_by_position(train, held, order=1, **whole).double().mean().item() == pytest.approx(unigram, rel=1e-6)
    assert counts_by_position(train, held, **whole).double().mean().item() == pytest.approx(bigram, rel=1e-6)
    # position t of each window: the bigram loss of (character t, character t + 1), averaged over windows
    curve = counts_by_position(train, held, vocab_size=6, length=10, n_windows=7)
    windows = text_windows(held, length=10, n_windows=7)
    for t in (0, 4, 9):
        expected = sum(unigram_bigram_bits(train, torch.stack([windows.tokens[w, t], windows.targets[w, t]]),
                                           vocab_size=6)[1] for w in range(7)) / 7
        assert curve[t].item() == pytest.approx(expected, rel=1e-5)
    assert curve.shape == (10,) and curve.dtype == torch.float32


@pytest.mark.parametrize("kwargs, name, error", [
    (dict(order=3), "order", ValueError),
    (dict(order=1.0), "order", TypeError),
    (dict(length=0), "length", ValueError),
    (dict(n_windows=0), "n_windows", ValueError),
    (dict(vocab_size=2), "ids", ValueError),
])
def test_counts_by_position_refuses_by_name(kwargs, name, error):
    from course_utils import counts_by_position

    args = dict(vocab_size=6, length=5, n_windows=2) | kwargs
    with pytest.raises(error, match=name):
        counts_by_position(torch.arange(6).repeat(3), torch.arange(6).repeat(2), **args)


def test_validation_split_keeps_the_last_share_apart():
    from course_utils import validation_split

    ids = torch.arange(100) % 7
    train, validation = validation_split(ids, share=0.1)
    assert torch.equal(torch.cat([train, validation]), ids) and len(validation) == 10
    assert len(validation_split(ids, share=0.255)[1]) == 25  # rounded down
    for share, error in ((0.0, ValueError), (1.0, ValueError), (0.001, ValueError), ("0.1", TypeError),
                         (True, TypeError)):
        with pytest.raises(error, match="share"):
            validation_split(ids, share=share)


def test_context_gain_is_the_loss_at_t0_minus_the_later_mean():
    curves = {"rope": [torch.tensor([4.0, 3.0, 2.0, 1.0]), torch.tensor([5.0, 1.0, 1.0, 3.0])],
              "bigram counts": [torch.tensor([3.0, 3.0, 3.0, 3.0])]}
    table = context_gain(curves, first_position=2)
    assert table["rope"] == {"t = 0": [4.0, 5.0], "t 2-3": [1.5, 2.0], "gain from context": [2.5, 3.0]}
    assert table["bigram counts"]["gain from context"] == [0.0]
    with pytest.raises(ValueError, match="curves\\['rope'\\]"):
        context_gain(curves, first_position=4)
    with pytest.raises(TypeError, match="curves"):
        context_gain({"rope": torch.zeros(4)})
