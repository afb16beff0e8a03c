"""BertMaskedLMPreprocessor: texts to masked-LM batches, masked afresh on every call."""

import numpy as np
import pytest

from kbert.tasks import BertMaskedLMPreprocessor
from kbert.text import BertTokenizer

tf = pytest.importorskip("tensorflow")

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d", "e"]
TEXTS = ["a b c d e", "a b"]
IDS = [[2, 5, 6, 7, 8, 9, 3], [2, 5, 6, 3, 0, 0, 0]]


def preprocessor(**kwargs):
    return BertMaskedLMPreprocessor(BertTokenizer(VOCABULARY), **{"mask_rate": 0.4, "max_predictions": 3, **kwargs})


def as_numpy(nest):
    return {key: value.numpy() for key, value in nest.items()}


def test_masks_round_rate_times_the_words_and_targets_the_original_ids():
    """round(0.4 x 5) = 2 predictions in the first row, round(0.4 x 2) = 1 in the second; everything outside
    the chosen positions is the tokenizer's ids, and the targets are the ids that were there."""
    x, y, weights = (as_numpy(part) for part in preprocessor()(tf.constant(TEXTS)))
    assert sorted(y) == ["mlm"] and sorted(weights) == ["mlm"]
    assert weights["mlm"].tolist() == [[1, 1, 0], [1, 0, 0]]
    assert x["padding_mask"].tolist() == [[1] * 7, [1, 1, 1, 1, 0, 0, 0]] and not x["segment_ids"].any()
    ids = np.array(IDS)
    for row, count in enumerate([2, 1]):
        positions = x["mask_positions"][row, :count]
        assert len(set(positions)) == count and all(ids[row, p] >= 5 for p in positions)  # never a special
        assert positions.tolist() == sorted(positions.tolist())
        assert y["mlm"][row, :count].tolist() == ids[row, positions].tolist()
        assert all(x["token_ids"][row, p] in (4, *range(5, 10)) for p in positions)  # [MASK] or a word
        others = np.setdiff1d(np.arange(7), positions)
        assert x["token_ids"][row, others].tolist() == ids[row, others].tolist()


def test_eighty_percent_mask_ten_percent_random_ten_percent_kept():
    """One prediction in each of 4000 rows of "a b c d e": [MASK] 80%; a random word 10%, which is the same
    word a fifth of the time: the original 10% + 2% = 12%, another word 8% (3 sigma: +-2%)."""
    x, y, _ = (as_numpy(part) for part in preprocessor(max_predictions=1)(tf.constant(["a b c d e"] * 4000)))
    chosen = np.take_along_axis(x["token_ids"], x["mask_positions"], axis=1)[:, 0]
    masked, kept = np.mean(chosen == 4), np.mean(chosen == y["mlm"][:, 0])
    assert masked == pytest.approx(0.8, abs=0.02) and kept == pytest.approx(0.12, abs=0.016)
    assert np.bincount(x["mask_positions"][:, 0], minlength=7)[[0, 6]].tolist() == [0, 0]  # [CLS], [SEP]


def test_every_call_draws_new_masks():
    texts = tf.constant(["a b c d e"] * 32)
    first, second = (preprocessor()(texts)[0]["mask_positions"].numpy() for _ in range(2))
    assert (first != second).any()


def test_pairs_with_next_sentence_labels():
    x, y, weights = preprocessor(sequence_length=8)((tf.constant(["a b c"]), tf.constant(["d e"])), tf.constant([1]))
    assert x["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 0, 1, 1, 1]]
    assert y["nsp"].numpy().tolist() == [1] and weights["nsp"].numpy().tolist() == [1.0]
    assert weights["mlm"].numpy().tolist() == [[1, 1, 0]]  # round(0.4 x 5)


def test_whole_word_masks_all_pieces_of_a_word():
    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "##b", "##c"])
    masking = BertMaskedLMPreprocessor(tokenizer, mask_rate=0.5, max_predictions=4, whole_word=True)
    for _ in range(5):
        x, y, weights = masking(tf.constant(["abc a"]))  # tokens: a ##b ##c a at 1..4; budget 2
        chosen = x["mask_positions"].numpy()[0][weights["mlm"].numpy()[0] > 0].tolist()
        assert chosen == [4]  # "abc" (3 pieces) passes the budget; only the last "a" fits


def test_prepare_passes_python_inputs_on_and_config_round_trips():
    masking = preprocessor(whole_word=True)
    prepared = masking.prepare((["a"], ["b"]), [1])
    assert prepared.inputs == (["a"], ["b"]) and prepared.y == [1]
    assert masking.prepare("a b").inputs == ["a b"]
    again = BertMaskedLMPreprocessor.from_config(masking.get_config())
    assert (again.mask_rate, again.max_predictions, again.whole_word) == (0.4, 3, True)
    assert again.tokenizer.vocabulary() == VOCABULARY


def test_sample_weights_are_refused_not_dropped():
    with pytest.raises(ValueError, match="Masked LM takes no sample_weight"):
        preprocessor().prepare(TEXTS, None, [1.0, 2.0])
    with pytest.raises(ValueError, match="Masked LM takes no sample_weight"):
        preprocessor()(tf.constant(TEXTS), None, tf.constant([1.0, 2.0]))
