import numpy as np

from kbert.data.windows.token_rows import token_rows
from kbert_core.answers import MAX_ANSWER_LENGTH, N_BEST, best_answers, null_score, window_candidates
from kbert_core.windows import (MAX_QUESTION_LENGTH, QA_DOC_STRIDE, QA_SEQUENCE_LENGTH, pack_question_windows,
                                question_windows)


class SquadWindows:
    """SQuAD questions packed as `[CLS] question [SEP] context window [SEP]`, and decoded back.

    Contexts longer than a window are covered by overlapping windows (BERT's recipe): each
    holds `max_length - question tokens - 3` context tokens and starts `doc_stride` tokens
    after the previous one. Questions are cut to `max_question_length` tokens. With
    `training`, `start_positions` and `end_positions` give the answer's first and last token
    in each window, or 0 ([CLS]) in windows that do not hold the whole answer; examples
    whose answer was not located in the context (`answer_start` None) are skipped and
    counted in `skipped`, and so are those with no answers unless `unanswerable`, where they
    train on [CLS] in every window (SQuAD 2.0's unanswerable questions). `decode` turns
    start/end logits back into answer texts of the original contexts, through each token's
    character offsets.

    Args:
        tokenizer: `kbert.text.BertTokenizer`.
        examples: list of `kbert.data.readers.squad_example.SquadExample`.
        max_length: int. Tokens per window, special tokens included (384 in BERT's recipe).
        doc_stride: int. Tokens between the starts of consecutive windows (128).
        max_question_length: int. Question tokens kept (64).
        training: bool. Compute answer positions (and skip unlocated answers).
        unanswerable: bool. In training, keep the examples without answers (`answers == []`), all windows on [CLS].

    Example:
    >>> from kbert.data.readers.squad_example import SquadExample
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "?"])
    >>> example = SquadExample("q", "a?", "a b c a b c", ["c"], 4)
    >>> windows = SquadWindows(tokenizer, [example], max_length=8, doc_stride=2, training=True)
    >>> windows.inputs["token_ids"].tolist()
    [[2, 5, 8, 3, 5, 6, 7, 3], [2, 5, 8, 3, 7, 5, 6, 3], [2, 5, 8, 3, 6, 7, 3, 0]]
    >>> windows.start_positions.tolist(), windows.end_positions.tolist()
    ([6, 4, 0], [6, 4, 0])
    """

    def __init__(self, tokenizer, examples, max_length=QA_SEQUENCE_LENGTH, doc_stride=QA_DOC_STRIDE,
                 max_question_length=MAX_QUESTION_LENGTH, training=False, unanswerable=False):
        self.examples = list(examples)
        contexts = {}
        for example in self.examples:
            contexts.setdefault(example.context, len(contexts))
        context_rows = token_rows(tokenizer, list(contexts))
        question_rows = token_rows(tokenizer, [example.question for example in self.examples])
        questions, owners, self.skipped = [], [], 0
        layout = tokenizer.layout  # BERT's [CLS] q [SEP] c [SEP], or RoBERTa's <s> q </s></s> c </s>
        for i, example in enumerate(self.examples):
            question = question_rows[i][0][:max_question_length]
            ids, offsets = context_rows[contexts[example.context]]
            windows = question_windows(len(question), len(ids), max_length, doc_stride, layout.specials(2))
            answer = _answer_tokens(offsets, example.answer_span) if training else None
            if training and answer is None and not (unanswerable and not example.answers):
                self.skipped += 1
                continue
            questions.append((question, ids, offsets, windows))
            owners.append((i, answer))
        packed = pack_question_windows(questions, tokenizer.cls_token_id, tokenizer.sep_token_id,
                                       tokenizer.pad_token_id, layout=layout)
        self.offsets, self.max_context = packed.pop("offsets"), packed.pop("max_context")
        self.inputs = packed
        self.window_examples = np.repeat([i for i, _ in owners], [len(q[3]) for q in questions]).astype("int32")
        self.start_positions = np.zeros(len(self.window_examples), "int32")
        self.end_positions = np.zeros(len(self.window_examples), "int32")
        r = 0
        for (_, answer), (question, _, _, windows) in zip(owners, questions):
            first = len(layout.start) + len(question) + len(layout.middle)  # the first context token's position
            for begin, end in windows:
                if answer is not None and begin <= answer[0] and answer[1] < end:
                    self.start_positions[r] = first + answer[0] - begin
                    self.end_positions[r] = first + answer[1] - begin
                r += 1

    def __len__(self):
        return len(self.window_examples)

    def decode(self, start_logits, end_logits, n_best=N_BEST, max_answer_length=MAX_ANSWER_LENGTH,
               allow_no_answer=False, no_answer_threshold=0.0):
        """The best answers of each example, over all of its windows.

        In each window the `n_best` highest start and end logits among context tokens are
        paired (end >= start, at most `max_answer_length` tokens, a start where this window
        gives the token its most context); across windows the pairs are ranked by start +
        end logit. Returns, per example, a list of up to `n_best` dicts: `text` (sliced from
        the original context), `start`, `end` (char span), `score` (the logit sum) and
        `probability` (softmax of the scores over the list). An empty list: no valid pair.
        With `allow_no_answer`, the list also holds "no answer" (text "", span (0, 0)), scored by
        the least of the example's windows' start + end logit at position 0 and ranked as
        `kbert_core.answers.best_answers` says, first when it beats the best span by more than
        `no_answer_threshold`.

        Args:
            start_logits, end_logits: arrays (windows, length), the model's outputs.
            n_best: int. Candidates per window and answers kept per example.
            max_answer_length: int. Longest answer, in tokens.
            allow_no_answer: bool. Answer "" where the model says the context holds no answer (SQuAD 2.0).
            no_answer_threshold: float. How much the null score must beat the best span's by.
        """
        start_logits = np.asarray(start_logits, "float32")
        end_logits = np.asarray(end_logits, "float32")
        width = start_logits.shape[1]
        candidates = [[] for _ in self.examples]
        nulls = [[] if allow_no_answer else None for _ in self.examples]
        for r, i in enumerate(self.window_examples):
            candidates[i] += window_candidates(start_logits[r], end_logits[r], self.offsets[r, :width],
                                               self.max_context[r, :width], n_best, max_answer_length)
            if allow_no_answer:
                nulls[i].append(null_score(start_logits[r], end_logits[r]))
        return [best_answers(found, example.context, n_best, window_nulls, no_answer_threshold)
                for example, found, window_nulls in zip(self.examples, candidates, nulls)]


def _answer_tokens(offsets, span):
    """(first, last) context token overlapping the char span, or None."""
    if span is None:
        return None
    overlap = np.flatnonzero((offsets[:, 1] > span[0]) & (offsets[:, 0] < span[1]))
    return (int(overlap[0]), int(overlap[-1])) if len(overlap) else None
