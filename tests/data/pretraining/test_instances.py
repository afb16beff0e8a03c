"""kbert.data.pretraining.instances: pairing, sentence and document reading, the held-out split."""

import zlib

import keras
import numpy as np
import pytest

from kbert.data.pretraining.instances import document_instances, read_documents, split_sentences, survey_corpus

ONCE = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


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
def test_vocabulary_sample_is_bounded_and_uniform(tmp_path):
    path = tmp_path / "reviews.txt"
    path.write_text("\n\n".join(reviews(2000, "r")))
    samples = [survey_corpus([path], sample_lines=100, seed=seed)["sample"] for seed in range(20)]
    assert all(len(sample) == 100 and len(set(sample)) == 100 for sample in samples)
    numbers = [int(line.split()[1][1:]) for sample in samples for line in sample]
    assert abs(np.mean(numbers) - 999.5) < 40 and np.mean(np.array(numbers) >= 1900) > 0.03  # not the first lines
