"""Pretraining data: the rates BERT specifies, pairing, and refusals of bad corpora."""

import zlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.data import DataFormatError
from kbert.data.pretraining_dataset import pretraining_dataset
from kbert.data.pretraining_instances import (MAX_SENTENCE_CHARS, document_instances, read_documents, split_sentences,
                                              survey_corpus)
from kbert.data.pretraining_masking import mask_batch
from kbert.text import BertTokenizer

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "far", "away", "home", "##s", "##ed", "##ing"]
VOCAB = SPECIAL + WORDS + [".", ","]
MASK, CLS, SEP = 4, 2, 3
ONCE = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


def random_rows(rows=4000, length=64, seed=0):
    """Packed rows [CLS] ... [SEP] [PAD]..., with random lengths and random word pieces."""
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, len(VOCAB), (rows, length)).astype("int32")
    lengths = rng.integers(8, length + 1, rows)
    padding_mask = (np.arange(length) < lengths[:, None]).astype("int32")
    token_ids[:, 0] = CLS
    token_ids[np.arange(rows), lengths - 1] = SEP
    token_ids[padding_mask == 0] = 0
    return token_ids, padding_mask


def mask(token_ids, padding_mask, whole_word=False, seed=(1, 2)):
    out = mask_batch(token_ids, padding_mask, tf.constant(seed), special_ids=[0, 1, 2, 3, 4],
                     is_suffix=[token.startswith("##") for token in VOCAB], mask_id=MASK,
                     replacement_ids=list(range(5, len(VOCAB))), max_predictions=20,
                     whole_word=whole_word)
    return {key: value.numpy() for key, value in out.items()}


@pytest.mark.parametrize("whole_word", [False, True])
def test_masking_rates(whole_word):
    token_ids, padding_mask = random_rows()
    out = mask(token_ids, padding_mask, whole_word)
    weights = out["mask_weights"].astype(bool)
    rows = np.nonzero(weights)[0]
    positions = out["mask_positions"][weights]
    candidates = padding_mask.sum() - 2 * len(token_ids)
    assert abs(weights.sum() / candidates - 0.15) < 0.005
    assert (out["mask_ids"][weights] == token_ids[rows, positions]).all()
    assert not np.isin(token_ids[rows, positions], [0, 1, 2, 3, 4]).any()
    corrupted = out["token_ids"][rows, positions]
    masked, kept = corrupted == MASK, corrupted == token_ids[rows, positions]
    assert abs(masked.mean() - 0.8) < 0.01
    # A random replacement can draw the original token: 1 in 15 of the 10%.
    assert abs(kept.mean() - (0.1 + 0.1 / 15)) < 0.01
    assert abs((~masked & ~kept).mean() - 0.1 * 14 / 15) < 0.01
    unchosen = np.ones_like(token_ids, bool)
    unchosen[rows, positions] = False
    assert (out["token_ids"][unchosen] == token_ids[unchosen]).all()


def test_whole_word_masking_never_splits_a_word():
    token_ids, padding_mask = random_rows(rows=500)
    out = mask(token_ids, padding_mask, whole_word=True)
    chosen = np.zeros_like(token_ids, bool)
    weights = out["mask_weights"].astype(bool)
    chosen[np.nonzero(weights)[0], out["mask_positions"][weights]] = True
    suffix = np.isin(token_ids, [VOCAB.index(t) for t in ("##s", "##ed", "##ing")])
    inside = suffix[:, 1:] & ~np.isin(token_ids[:, :-1], [0, 2, 3])  # a piece and its left part
    assert inside.any()
    assert (chosen[:, 1:][inside] == chosen[:, :-1][inside]).all()


def test_masking_is_stateless_and_row_width_is_max_predictions():
    token_ids, padding_mask = random_rows(rows=8)
    first, again = mask(token_ids, padding_mask), mask(token_ids, padding_mask)
    other = mask(token_ids, padding_mask, seed=(1, 3))
    assert (first["token_ids"] == again["token_ids"]).all()
    assert (first["token_ids"] != other["token_ids"]).any()
    assert first["mask_positions"].shape == (8, 20)


def synthetic_documents(count=60, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.integers(5, 20, rng.integers(3, 30)) for _ in range(rng.integers(1, 40))]
            for _ in range(count)]


@pytest.mark.parametrize("objective", ["nsp", "sop"])
def test_pairs_are_half_random_and_fit(objective):
    documents, rng = synthetic_documents(), np.random.default_rng(1)
    labels = []
    for index, document in enumerate(documents * 16):
        index %= len(documents)
        others = documents[:index] + documents[index + 1:]
        for first, second, label in document_instances(document, others, rng, 64, objective=objective):
            assert len(first) >= 1 and len(second) >= 1 and len(first) + len(second) <= 61
            labels.append(label)
    assert len(labels) > 4000
    assert abs(np.mean(labels) - 0.5) < 0.02


def test_true_next_pairs_keep_the_order_and_truncation_cuts_both_ends():
    document = [np.arange(10, 40), np.arange(40, 70), np.arange(70, 100)]
    rng, starts, ends = np.random.default_rng(0), set(), set()
    for _ in range(200):
        for first, second, label in document_instances(document, [], rng, 40, objective="sop"):
            a, b = (second, first) if label else (first, second)
            assert (np.diff(np.concatenate([a, b])) > 0).all()
            starts.add(int(a[0]))
            ends.add(int(b[-1]))
    assert len(starts) > 1 and len(ends) > 1


def test_long_lines_are_split_into_sequences_not_dropped():
    document = [np.arange(5, 505)]  # one sentence of 500 tokens, sequences of 64
    rng = np.random.default_rng(0)
    rows = list(document_instances(document, [], rng, 64, short_seq_prob=0.0, objective="mlm"))
    assert sum(len(first) for first, _, _ in rows) == 500
    assert all(len(first) <= 62 for first, _, _ in rows)


def test_reading_splits_sentences_and_documents(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"\xef\xbb\xbfMr. Darcy bowed. She smiled!\r\nOops\n\n\n\nNext book.\n")
    assert list(read_documents([path])) == [["Mr. Darcy bowed.", "She smiled!", "Oops"], ["Next book."]]
    assert split_sentences("No end") == ["No end"]


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")
def test_invalid_utf8_is_refused_before_training_naming_the_line(tmp_path, tokenizer):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"One doc.\n\nAnother.\n\n" + b"More.\n" * 50 + b"Bad \xff\xfe byte.\n")
    with pytest.raises(DataFormatError, match="corpus.txt:55: invalid UTF-8: byte 0xff at column 5"):
        list(read_documents([path]))
    with pytest.raises(DataFormatError, match="corpus.txt:55: invalid UTF-8"):  # not 2 documents in: at once
        pretraining_dataset([path], tokenizer, 2)


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

    static = pretraining_dataset([corpus], masking="static", duplication_factor=2, **options)
    first, second = [[batch[0]["token_ids"].numpy() for batch in static] for _ in range(2)]
    assert all((a == b).all() for a, b in zip(first, second))  # cached: the same masks
    assert static.cardinality() == len(first) > 0  # a known length: see pretraining_dataset
    assert (first[0][0] == first[0][1]).sum() > 20  # two masked copies of one pair

    mlm_only = pretraining_dataset([corpus], objective="mlm", **options)
    x, y, _ = next(iter(mlm_only))
    assert set(y) == {"mlm"} and x["segment_ids"].numpy().max() == 0


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
    with pytest.raises(ValueError, match="special tokens"):
        BertTokenizer(["the", "cat"])


def reviews(count, tag):
    """One-line documents, blank lines between them, as IMDB's unsup.txt has its reviews."""
    return [f"Review {tag}{i} was fine. It had {i} good scenes." for i in range(count)]


@ONCE
def test_held_out_share_of_one_line_documents_and_of_long_ones(tmp_path):
    """Issue 26: the last 20 lines of each document emptied the training split of one-line documents."""
    one_line = tmp_path / "reviews.txt"
    one_line.write_text("\n\n".join(reviews(400, "r")) + "\n")
    held = [doc for doc in reviews(400, "r") if zlib.crc32(doc.encode()) < 0.1 * 2**32]  # the rule, by hand
    assert 20 < len(held) < 60
    train = [" ".join(doc) for doc in read_documents([one_line], holdout=0.1)]
    assert [" ".join(doc) for doc in read_documents([one_line], holdout=0.1, held_out=True)] == held
    assert sorted(train + held) == sorted(reviews(400, "r")) and not set(train) & set(held)

    book = tmp_path / "book.txt"  # one document of 400 paragraphs: held out in passages of 20 lines
    lines = [f"Paragraph {i} of the book." for i in range(400)]
    book.write_text("\n".join(lines) + "\n")
    passages = [lines[start:start + 20] for start in range(0, 400, 20)]
    flags = [zlib.crc32("\n".join(passage).encode()) < 0.3 * 2**32 for passage in passages]
    assert 0 < sum(flags) < len(flags)
    train = list(read_documents([book], holdout=0.3))
    assert sum(map(len, train)) == 20 * flags.count(False)
    assert len(train) == sum(1 for i, held in enumerate(flags) if not held and (i == 0 or flags[i - 1]))  # cut at gaps
    survey = survey_corpus([book, one_line], holdout=0.3)
    assert survey["held_out"]["lines"] == 20 * sum(flags) + sum(
        zlib.crc32(doc.encode()) < 0.3 * 2**32 for doc in reviews(400, "r"))
    assert survey["train"]["documents"] == len(train) + len(list(read_documents([one_line], holdout=0.3)))


@ONCE
def test_files_interleave_by_seed_and_an_empty_file_gives_nothing(tmp_path):
    paths = [tmp_path / "a.txt", tmp_path / "empty.txt", tmp_path / "b.txt"]
    paths[0].write_text("\n\n".join(reviews(40, "a")))
    paths[1].write_text("\n\n \n")
    paths[2].write_text("\n\n".join(reviews(40, "b")))
    order = [doc[0].split()[1] for doc in read_documents(paths, seed=3)]
    assert order == [doc[0].split()[1] for doc in read_documents(paths, seed=3)]
    assert order != [doc[0].split()[1] for doc in read_documents(paths, seed=4)]
    assert sorted(order) == sorted([f"a{i}" for i in range(40)] + [f"b{i}" for i in range(40)])
    for tag in "ab":  # each file in its own order, the two mixed from the start
        assert [name for name in order if name[0] == tag] == [f"{tag}{i}" for i in range(40)]
    assert {name[0] for name in order[:10]} == {"a", "b"}
    assert survey_corpus(paths)["empty_files"] == [paths[1]]


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
def test_vocabulary_sample_is_bounded_and_uniform(tmp_path):
    path = tmp_path / "reviews.txt"
    path.write_text("\n\n".join(reviews(2000, "r")))
    samples = [survey_corpus([path], sample_lines=100, seed=seed)["sample"] for seed in range(20)]
    assert all(len(sample) == 100 and len(set(sample)) == 100 for sample in samples)
    numbers = [int(line.split()[1][1:]) for sample in samples for line in sample]
    assert abs(np.mean(numbers) - 999.5) < 40 and np.mean(np.array(numbers) >= 1900) > 0.03  # not the first lines


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
