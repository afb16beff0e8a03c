"""kbert.data.windows.squad: strided windows over long contexts, answer positions, decoding back to text."""

import numpy as np
import pytest

from kbert.data.readers.squad_example import SquadExample
from kbert.data.windows.squad import SquadWindows
from kbert.text import BertTokenizer

WORDS = ["who", "is", "the", "king", "of", "france", "paris", "river", "city", "a", "?", "."]


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])


def test_windows_answer_positions_and_cls(tokenizer):
    context = " ".join(["river"] * 20 + ["Paris", "."] + ["city"] * 20)
    example = SquadExample("q", "Who is the king?", context, ["Paris"], context.index("Paris"))
    windows = SquadWindows(tokenizer, [example], max_length=16, doc_stride=4, training=True)
    budget = 16 - 5 - 3
    assert len(windows) == 1 + -(-(42 - budget) // 4)
    for r in range(len(windows)):
        ids = windows.inputs["token_ids"][r]
        start, end = windows.start_positions[r], windows.end_positions[r]
        if start:
            assert ids[start] == tokenizer.token_to_id("paris") and start == end
        else:  # windows without the answer point at [CLS]
            assert tokenizer.token_to_id("paris") not in ids.tolist()
    assert (windows.start_positions > 0).sum() == 2  # "paris" sits in two overlapping windows
    assert windows.inputs["segment_ids"][0].tolist() == [0] * 7 + [1] * 9


def test_decode_across_windows_maps_back_to_the_original_text(tokenizer):
    context = "A river. " * 10 + "The King of FRANCE is a city. " + "A river. " * 10
    example = SquadExample("q", "Who?", context)
    windows = SquadWindows(tokenizer, [example], max_length=16, doc_stride=5)
    start_logits = np.zeros(windows.inputs["token_ids"].shape)
    end_logits = np.zeros_like(start_logits)
    start_logits[:, 0] = end_logits[:, 0] = 100.0  # [CLS] and the question never win
    start_logits[:, 2] = end_logits[:, 2] = 100.0
    for r in range(len(windows)):
        for position, (a, b) in enumerate(windows.offsets[r]):
            if context[a:b] == "King":
                start_logits[r, position] = 5.0
            if context[a:b] == "FRANCE":
                end_logits[r, position] = 4.0
            if context[a:b] == "city":
                end_logits[r, position] = 9.0  # 6 tokens from "King": beyond max_answer_length
    best = windows.decode(start_logits, end_logits, n_best=20, max_answer_length=3)[0]
    assert best[0]["text"] == "King of FRANCE" and best[0]["score"] == pytest.approx(9.0)
    assert context[best[0]["start"] : best[0]["end"]] == "King of FRANCE"
    short = windows.decode(start_logits, end_logits, max_answer_length=2)[0]
    assert short and all(len(b["text"].split()) <= 2 for b in short)
    assert sum(b["probability"] for b in best) == pytest.approx(1.0)


def test_ten_thousand_word_context(tokenizer):
    context = " ".join(["river city"] * 5000)
    windows = SquadWindows(tokenizer, [SquadExample("q", "who?", context)], max_length=384, doc_stride=128)
    covered = windows.offsets[:, :, 1].max()
    assert covered == len(context) and windows.inputs["token_ids"].shape[1] == 384


def test_unanswerable_questions_train_on_cls_and_no_answer_scores_the_least_null_of_the_windows(tokenizer):
    """An example without answers is skipped in training unless `unanswerable`, where each of its windows targets
    [CLS]; decoding with allow_no_answer scores "no answer" by the least start + end logit at [CLS] over the
    windows (BERT's run_squad.py) and puts it first only where it beats the best span by more than the threshold."""
    context = "A river. " * 10 + "The King of FRANCE is a city. " + "A river. " * 10
    examples = [SquadExample("a", "Who?", context, ["The King"], context.index("The King")),
                SquadExample("b", "Who?", context)]
    assert SquadWindows(tokenizer, examples, max_length=16, doc_stride=5, training=True).skipped == 1
    windows = SquadWindows(tokenizer, examples, max_length=16, doc_stride=5, training=True, unanswerable=True)
    mine = windows.window_examples == 1
    assert windows.skipped == 0 and mine.sum() > 2
    assert not windows.start_positions[mine].any() and not windows.end_positions[mine].any()
    assert windows.start_positions[~mine].any()

    windows = SquadWindows(tokenizer, examples[1:], max_length=16, doc_stride=5)
    start_logits = np.zeros(windows.inputs["token_ids"].shape)
    end_logits = np.zeros_like(start_logits)
    king = context.index("King")
    for r in range(len(windows)):
        at = np.flatnonzero(windows.offsets[r, :, 0] == king)
        start_logits[r, at], end_logits[r, at] = 2.0, 1.0  # "King" scores 3 wherever it is read
        start_logits[r, 0] = end_logits[r, 0] = 5.0 - 0.5 * (r == 2)  # null 10, but 9 in window 2
    assert windows.decode(start_logits, end_logits)[0][0]["text"] == "King"  # no null without allow_no_answer
    best = windows.decode(start_logits, end_logits, allow_no_answer=True)[0]
    assert (best[0]["text"], best[0]["start"], best[0]["end"], best[0]["score"]) == ("", 0, 0, 9.0)
    assert best[1]["text"] == "King"
    assert windows.decode(start_logits, end_logits, allow_no_answer=True, no_answer_threshold=6.0)[0][0][
        "text"] == "King"  # 9 - 3 = 6 does not beat 6
