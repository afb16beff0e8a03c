import numpy as np

from kbert.data import SentenceBatches, SentenceExamples
from kbert.text import BertTokenizer

TOKENIZER = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[f"w{i}" for i in range(40)]])


def examples(count=21):
    """Text i is i % 13 + 1 words long; its words spell its index, so rows can be traced."""
    texts = [" ".join([f"w{i % 40}"] * (i % 13 + 1)) for i in range(count)]
    return SentenceExamples(texts, labels=np.arange(count, dtype="int32"))


def test_batches_padded_to_their_longest_row_rounded_up():
    batches = SentenceBatches(examples(), TOKENIZER, batch_size=4, max_length=12, length_multiple=4)
    for index in range(len(batches)):
        inputs, labels = batches[index]
        longest = inputs["padding_mask"].sum(axis=1).max()
        width = inputs["token_ids"].shape[1]
        assert width == min(-(-longest // 4) * 4, 12) and width - longest < 4
        assert all(value.shape == (len(labels), width) and value.dtype == np.int32 for value in inputs.values())
        lengths = np.minimum(labels % 13 + 3, 12)  # words + [CLS] + [SEP], cut at 12
        np.testing.assert_array_equal(inputs["padding_mask"].sum(axis=1), lengths)
        np.testing.assert_array_equal(inputs["token_ids"][:, 1], TOKENIZER.token_to_id("w0") + labels % 40)


def test_shuffle_is_seeded_and_covers_every_example_each_epoch():
    def epoch_labels(batches):
        labels = np.concatenate([batches[i][1] for i in range(len(batches))])
        batches.on_epoch_end()
        return labels.tolist()

    batches = SentenceBatches(examples(), TOKENIZER, batch_size=4, shuffle=True, seed=1)
    first, second = epoch_labels(batches), epoch_labels(batches)
    assert sorted(first) == sorted(second) == list(range(21)) and first != second
    again = SentenceBatches(examples(), TOKENIZER, batch_size=4, shuffle=True, seed=1)
    assert epoch_labels(again) == first
    plain = SentenceBatches(examples(), TOKENIZER, batch_size=4)
    assert epoch_labels(plain) == list(range(21)) == epoch_labels(plain)


def test_pairs_get_segment_ids_and_unlabeled_batches_are_inputs_only():
    data = SentenceExamples(["w1 w2", "w3"], ["w4", "w5 w6 w7"])
    inputs = SentenceBatches(data, TOKENIZER, batch_size=2, length_multiple=1)[0]
    assert isinstance(inputs, dict)
    assert inputs["segment_ids"].tolist() == [[0, 0, 0, 0, 1, 1, 0], [0, 0, 0, 1, 1, 1, 1]]


def test_regression_labels_shaped_like_the_model_output():
    data = SentenceExamples(["w1", "w2"], ["w3", "w4"], np.array([0.5, 4.0], "float32"))
    assert SentenceBatches(data, TOKENIZER, batch_size=2)[0][1].shape == (2, 1)
