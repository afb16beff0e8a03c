"""kbert.data.pretraining.dataset: the batches' layout, masking modes, and refusals of bad corpora."""

import keras
import numpy as np
import pytest

from kbert.data import DataFormatError
from kbert.data.pretraining.dataset import pretraining_dataset
from kbert.data.pretraining.instances import MAX_SENTENCE_CHARS, read_documents, survey_corpus
from kbert.text import BertTokenizer

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "far", "away", "home", "##s", "##ed", "##ing"]
VOCAB = SPECIAL + WORDS + [".", ","]
CLS = 2
ONCE = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(VOCAB)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    books = []
    for _ in range(4):
        lines = [" ".join(rng.choice(WORDS[:10], rng.integers(3, 12))).capitalize() + "."
                 for _ in range(30)]
        books.append("\n".join(lines))
    path.write_text("\n\n".join(books) + "\n\xff bad byte line \n")
    return path


def test_dataset_layout_and_masking_modes(corpus, tokenizer):
    options = dict(tokenizer=tokenizer, batch_size=4, max_seq_length=32, max_predictions=5,
                   repeat=False, shuffle_buffer=0, seed=0)
    x, y, weights = next(iter(pretraining_dataset([corpus], **options)))
    assert x["token_ids"].shape == (4, 32) and x["mask_positions"].shape == (4, 5)
    assert y["mlm"].shape == (4, 5) and y["nsp"].shape == (4,)
    assert set(weights) == {"mlm", "nsp"}
    assert (x["token_ids"].numpy()[:, 0] == CLS).all()

    default_width = pretraining_dataset([corpus], **{**options, "max_predictions": None})
    assert next(iter(default_width))[0]["mask_positions"].shape == (4, 5)  # ceil(0.15 x 30): prediction_slots(32)

    static = pretraining_dataset([corpus], masking="static", duplication_factor=2, **options)
    first, second = [[batch[0]["token_ids"].numpy() for batch in static] for _ in range(2)]
    assert all((a == b).all() for a, b in zip(first, second))  # cached: the same masks
    assert static.cardinality() == len(first) > 0  # a known length: see pretraining_dataset
    assert (first[0][0] == first[0][1]).sum() > 20  # two masked copies of one pair

    mlm_only = pretraining_dataset([corpus], objective="mlm", **options)
    x, y, _ = next(iter(mlm_only))
    assert set(y) == {"mlm"} and x["segment_ids"].numpy().max() == 0

    for masking in ("dynamic", "static"):  # SpanBERT's spans: runs of masked tokens, never [CLS] or [SEP]
        after_chosen, chosen_count = 0, 0
        for x, y, weights in pretraining_dataset([corpus], masking=masking, mask_unit="span", **options).take(5):
            real = weights["mlm"].numpy() > 0
            chosen = np.zeros(x["token_ids"].shape, bool)
            chosen[np.nonzero(real)[0], x["mask_positions"].numpy()[real]] = True
            assert not np.isin(y["mlm"].numpy()[real], [2, 3]).any()
            after_chosen += (chosen[:, 1:] & chosen[:, :-1]).sum()
            chosen_count += real.sum()
        assert after_chosen / chosen_count > 0.3  # half of the chosen tokens follow one (token masking: 0.04 to 0.13)
    x, y, weights = next(iter(pretraining_dataset([corpus], mask_unit="span", span_boundaries=True, **options)))
    assert {"span_left", "span_right", "span_offset"} <= set(x) and set(y) == set(weights) == {"mlm", "nsp", "sbo"}
    assert (y["sbo"].numpy() == y["mlm"].numpy()).all() and x["span_left"].shape == (4, 5)
    with pytest.raises(ValueError, match="span_boundaries=True .* give mask_unit='span', not 'whole_word'"):
        pretraining_dataset([corpus], mask_unit="whole_word", span_boundaries=True, **options)


def test_bad_corpora_are_refused_before_training(tmp_path, tokenizer):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \n")
    with pytest.raises(ValueError, match="holds no text"):
        pretraining_dataset([empty], tokenizer, 2)
    one = tmp_path / "one.txt"
    one.write_text("The cat sat.\nThe dog ran.\n")
    with pytest.raises(ValueError, match="one document"):
        pretraining_dataset([one], tokenizer, 2)
    assert pretraining_dataset([one], tokenizer, 2, objective="sop") is not None
    for setting, message in (("span_p", "span_p 0"), ("max_span", "max_span 0"), ("mask_rate", "mask_rate 0")):
        with pytest.raises(ValueError, match=message):  # out of range: refused before the corpus is read
            pretraining_dataset([empty], tokenizer, 2, mask_unit="span", **{setting: 0})
    with pytest.raises(ValueError, match="special tokens"):
        BertTokenizer(["the", "cat"])


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")
def test_invalid_utf8_is_refused_before_training_naming_the_line(tmp_path, tokenizer):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"One doc.\n\nAnother.\n\n" + b"More.\n" * 50 + b"Bad \xff\xfe byte.\n")
    with pytest.raises(DataFormatError, match="corpus.txt:55: invalid UTF-8: byte 0xff at column 5"):
        list(read_documents([path]))
    with pytest.raises(DataFormatError, match="corpus.txt:55: invalid UTF-8"):  # not 2 documents in: at once
        pretraining_dataset([path], tokenizer, 2)


@ONCE
def test_a_100_kb_line_is_cut_at_spaces_and_trains(tmp_path, tokenizer):
    words = [WORDS[i % 10] for i in range(25_000)]
    path = tmp_path / "long.txt"
    path.write_text(" ".join(words) + "\n\nThe cat sat.\n")
    assert path.stat().st_size > 100_000
    long, short = read_documents([path])
    assert max(map(len, long)) <= MAX_SENTENCE_CHARS and " ".join(long).split() == words
    survey = survey_corpus([path], sample_lines=1000)
    assert len(survey["sample"]) == len(long) + 1 and max(map(len, survey["sample"])) <= MAX_SENTENCE_CHARS
    data = pretraining_dataset([path], tokenizer, batch_size=4, max_seq_length=64, repeat=False, seed=0)
    assert sum(int(x["padding_mask"].numpy().sum()) for x, _, _ in data) > 20_000


@ONCE
def test_held_out_dataset_reads_the_held_out_share(tmp_path, tokenizer):
    path = tmp_path / "reviews.txt"
    path.write_text("\n\n".join(" ".join(WORDS[:10][i % 7:]) + " home" * (i % 5) + f" {i}." for i in range(60)))
    options = dict(tokenizer=tokenizer, batch_size=2, max_seq_length=64, objective="mlm", repeat=False,
                   shuffle_buffer=0, masking="static", duplication_factor=1, seed=0)
    held = survey_corpus([path], holdout=0.2)["held_out"]["documents"]
    assert 0 < held < 30
    rows = sum(len(x["token_ids"]) for x, _, _ in pretraining_dataset([path], holdout=0.2, held_out=True,
                                                                        **{**options, "batch_size": 1}))
    assert rows == held  # one row per short document
    with pytest.raises(ValueError, match=r"held-out share \(0.0001\) .* holds no text"):
        pretraining_dataset([path], holdout=0.0001, held_out=True, **options)


@ONCE
def test_the_training_stream_goes_on_past_one_pass_over_several_files(tmp_path, tokenizer):
    paths = [tmp_path / "a.txt", tmp_path / "b.txt"]
    for path, start in zip(paths, (0, 3)):
        path.write_text("\n\n".join(" ".join(WORDS[(start + i) % 10:]) + "." for i in range(6)))
    options = dict(tokenizer=tokenizer, batch_size=4, max_seq_length=16, objective="mlm", shuffle_buffer=0, seed=0)
    one_pass = sum(1 for _ in pretraining_dataset(paths, repeat=False, **options))
    assert one_pass > 0
    assert sum(1 for _ in pretraining_dataset(paths, **options).take(3 * one_pass)) == 3 * one_pass


@ONCE
@pytest.mark.parametrize("masking, mask_unit", [("dynamic", "token"), ("static", "token"), ("dynamic", "span"),
                                                ("static", "span")])
def test_a_stream_resumed_past_its_batches_reads_what_the_whole_stream_reads(corpus, tokenizer, masking, mask_unit):
    """Issue 43: a resumed pretraining run passes the batches it trained on as `skip_batches`; with the same seed
    it then reads the uninterrupted run's batches: the same pairs, shuffle and masks (SpanBERT's spans too)."""
    options = dict(tokenizer=tokenizer, batch_size=4, max_seq_length=32, seed=3, masking=masking, duplication_factor=2,
                   mask_unit=mask_unit)

    def flat(batches):
        return [np.concatenate([np.ravel(part[key]) for part in batch for key in sorted(part)]) for batch in batches]

    whole = flat(pretraining_dataset([corpus], **options).take(8))
    resumed = flat(pretraining_dataset([corpus], skip_batches=5, **options).take(3))
    another_seed = flat(pretraining_dataset([corpus], skip_batches=5, **{**options, "seed": 4}).take(3))
    assert all((a == b).all() for a, b in zip(whole[5:], resumed))
    assert not all(a.shape == b.shape and (a == b).all() for a, b in zip(resumed, another_seed))
