import numpy as np

from kbert.data.token_rows import token_rows


class SquadWindows:
    """SQuAD questions packed as `[CLS] question [SEP] context window [SEP]`, and decoded back.

    Contexts longer than a window are covered by overlapping windows (BERT's recipe): each
    holds `max_length - question tokens - 3` context tokens and starts `doc_stride` tokens
    after the previous one. Questions are cut to `max_question_length` tokens. With
    `training`, `start_positions` and `end_positions` give the answer's first and last token
    in each window, or 0 ([CLS]) in windows that do not hold the whole answer; examples
    whose answer was not located in the context (`answer_start` None) are skipped and
    counted in `skipped`. `decode` turns start/end logits back into answer texts of the
    original contexts, through each token's character offsets.

    Args:
        tokenizer: `kbert.text.BertTokenizer`.
        examples: list of `kbert.data.SquadExample`.
        max_length: int. Tokens per window, special tokens included (384 in BERT's recipe).
        doc_stride: int. Tokens between the starts of consecutive windows (128).
        max_question_length: int. Question tokens kept (64).
        training: bool. Compute answer positions (and skip unlocated answers).

    Example:
    >>> from kbert.data.squad_example import SquadExample
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "?"])
    >>> example = SquadExample("q", "a?", "a b c a b c", ["c"], 4)
    >>> windows = SquadWindows(tokenizer, [example], max_length=8, doc_stride=2, training=True)
    >>> windows.inputs["token_ids"].tolist()
    [[2, 5, 8, 3, 5, 6, 7, 3], [2, 5, 8, 3, 7, 5, 6, 3], [2, 5, 8, 3, 6, 7, 3, 0]]
    >>> windows.start_positions.tolist(), windows.end_positions.tolist()
    ([6, 4, 0], [6, 4, 0])
    """

    def __init__(self, tokenizer, examples, max_length=384, doc_stride=128, max_question_length=64,
                 training=False):
        self.examples = list(examples)
        contexts = {}
        for example in self.examples:
            contexts.setdefault(example.context, len(contexts))
        context_rows = token_rows(tokenizer, list(contexts))
        question_rows = token_rows(tokenizer, [example.question for example in self.examples])
        rows, self.skipped = [], 0
        for i, example in enumerate(self.examples):
            question = question_rows[i][0][:max_question_length]
            budget = max_length - len(question) - 3
            if budget < 1:
                raise ValueError(f"max_length={max_length} leaves no room for the context after a "
                                 f"{len(question)}-token question.")
            ids, offsets = context_rows[contexts[example.context]]
            answer = _answer_tokens(offsets, example.answer_span) if training else None
            if training and answer is None:
                self.skipped += 1
                continue
            spans = list(_spans(len(ids), budget, doc_stride))
            for begin, end in spans:
                rows.append((i, question, ids, offsets, begin, end, _max_context(spans, begin, end), answer))
        width = max((len(q) + (end - begin) + 3 for _, q, _, _, begin, end, _, _ in rows), default=3)
        count = len(rows)
        token_ids = np.full((count, width), tokenizer.pad_token_id, "int32")
        segment_ids = np.zeros((count, width), "int32")
        padding_mask = np.zeros((count, width), "int32")
        self.offsets = np.full((count, width, 2), -1, "int32")
        self.max_context = np.zeros((count, width), bool)
        self.window_examples = np.array([row[0] for row in rows], "int32")
        self.start_positions = np.zeros(count, "int32")
        self.end_positions = np.zeros(count, "int32")
        for r, (i, question, ids, offsets, begin, end, max_context, answer) in enumerate(rows):
            first = len(question) + 2  # the position of the first context token
            n = first + end - begin + 1
            token_ids[r, :n] = [tokenizer.cls_token_id, *question, tokenizer.sep_token_id,
                                *ids[begin:end], tokenizer.sep_token_id]
            segment_ids[r, first:n] = 1
            padding_mask[r, :n] = 1
            self.offsets[r, first : n - 1] = offsets[begin:end]
            self.max_context[r, first : n - 1] = max_context
            if answer is not None and begin <= answer[0] and answer[1] < end:
                self.start_positions[r] = first + answer[0] - begin
                self.end_positions[r] = first + answer[1] - begin
        self.inputs = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}

    def __len__(self):
        return len(self.window_examples)

    def decode(self, start_logits, end_logits, n_best=20, max_answer_length=30):
        """The best answers of each example, over all of its windows.

        In each window the `n_best` highest start and end logits among context tokens are
        paired (end >= start, at most `max_answer_length` tokens, a start where this window
        gives the token its most context); across windows the pairs are ranked by start +
        end logit. Returns, per example, a list of up to `n_best` dicts: `text` (sliced from
        the original context), `start`, `end` (char span), `score` (the logit sum) and
        `probability` (softmax of the scores over the list). An empty list: no valid pair.

        Args:
            start_logits, end_logits: arrays (windows, length), the model's outputs.
            n_best: int. Candidates per window and answers kept per example.
            max_answer_length: int. Longest answer, in tokens.
        """
        start_logits = np.asarray(start_logits, "float32")
        end_logits = np.asarray(end_logits, "float32")
        width = start_logits.shape[1]
        candidates = [[] for _ in self.examples]
        for r, i in enumerate(self.window_examples):
            context = self.offsets[r, :width, 0] >= 0
            positions = np.flatnonzero(context)
            if not len(positions):
                continue
            starts = positions[np.argsort(-start_logits[r, positions], kind="stable")[:n_best]]
            ends = positions[np.argsort(-end_logits[r, positions], kind="stable")[:n_best]]
            starts = starts[self.max_context[r, starts]]
            length = ends[None, :] - starts[:, None] + 1
            ok = (length >= 1) & (length <= max_answer_length)
            for a, b in zip(*np.nonzero(ok)):
                s, e = starts[a], ends[b]
                candidates[i].append((float(start_logits[r, s] + end_logits[r, e]),
                                      int(self.offsets[r, s, 0]), int(self.offsets[r, e, 1])))
        results = []
        for example, found in zip(self.examples, candidates):
            best, seen = [], set()
            for score, start, end in sorted(found, key=lambda c: -c[0]):
                if (start, end) not in seen:
                    seen.add((start, end))
                    best.append({"text": example.context[start:end], "start": start, "end": end, "score": score})
                if len(best) == n_best:
                    break
            if best:
                scores = np.array([b["score"] for b in best])
                probabilities = np.exp(scores - scores.max())
                probabilities /= probabilities.sum()
                for b, p in zip(best, probabilities):
                    b["probability"] = float(p)
            results.append(best)
        return results


def _spans(length, budget, stride):
    """[begin, end) context token ranges of BERT's sliding windows."""
    begin = 0
    while True:
        end = min(begin + budget, length)
        yield begin, end
        if end >= length:
            return
        begin += min(end - begin, stride)


def _max_context(spans, begin, end):
    """For each token of [begin, end): whether this window gives it the most context.

    A token's context in a window is min(tokens left, tokens right) + 0.01 * window length,
    as in BERT's `_check_is_max_context`; ties go to the earlier window.
    """
    positions = np.arange(begin, end)
    scores = [np.where((positions >= b) & (positions < e),
                       np.minimum(positions - b, e - 1 - positions) + 0.01 * (e - b), -np.inf)
              for b, e in spans]
    return np.argmax(np.stack(scores), axis=0) == spans.index((begin, end))


def _answer_tokens(offsets, span):
    """(first, last) context token overlapping the char span, or None."""
    if span is None:
        return None
    overlap = np.flatnonzero((offsets[:, 1] > span[0]) & (offsets[:, 0] < span[1]))
    return (int(overlap[0]), int(overlap[-1])) if len(overlap) else None
