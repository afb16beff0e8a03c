import numpy as np

from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.data.windows.token_rows import token_rows
from kbert_core.windows import first_pieces, word_windows


class NerWindows:
    """Sentences of words cut into BERT windows, with word labels on each word's first token.

    Each text is tokenized in full, then cut at word boundaries into windows of at most
    `max_length - 2` tokens, each packed as `[CLS] tokens [SEP]`: a long sentence becomes
    several windows and is never truncated, so every word gets a prediction. The windows do
    not overlap (unlike SQuAD's strided windows): a word near a cut sees the context on one
    side of the cut only, and a single word of more than `max_length - 2` pieces is cut inside
    (its first piece still carries the label). The first WordPiece of every word carries the
    word's label (and weight 1); later pieces, [CLS], [SEP] and padding weigh 0, so they count
    in neither loss nor metric. `word_logits` maps the model's token outputs back to words.
    A word that yields no token at all (only characters BERT deletes, such as control
    characters) gets no logits; callers predict `O` for it.

    Args:
        tokenizer: `kbert.text.BertTokenizer`.
        texts: list of str.
        word_spans: list of int arrays (words, 2): [start, end) char span of each word in its
            text (`TaggedSentences` words joined by spaces, or `word_spans_of(tokenizer, texts)`).
        max_length: int. Tokens per window, special tokens included.
        labels: list of int arrays (words,) or None. The label id of each word.

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi", "##s"])
    >>> windows = NerWindows(tokenizer, ["his hi hi"], [np.array([[0, 3], [4, 6], [7, 9]])],
    ...                      max_length=4, labels=[np.array([1, 2, 3])])
    >>> windows.inputs["token_ids"].tolist(), windows.labels.tolist()
    ([[2, 5, 6, 3], [2, 5, 5, 3]], [[0, 1, 0, 0], [0, 2, 3, 0]])
    """

    def __init__(self, tokenizer, texts, word_spans, max_length=DEFAULT_SEQUENCE_LENGTH, labels=None):
        if max_length < 3:
            raise ValueError(f"max_length must leave room for a token besides [CLS] and [SEP]; got {max_length}.")
        self.num_words = [len(spans) for spans in word_spans]
        rows = []  # (text index, ids, word index per token, first-piece flags)
        for i, (ids, offsets) in enumerate(token_rows(tokenizer, texts)):
            starts = np.asarray(word_spans[i], "int64").reshape(-1, 2)[:, 0]
            words = np.searchsorted(starts, offsets[:, 0], side="right") - 1
            first = first_pieces(words)
            for begin, end in word_windows(first, max_length - 2):
                rows.append((i, ids[begin:end], words[begin:end], first[begin:end]))
        width = max((len(ids) for _, ids, _, _ in rows), default=0) + 2
        count = len(rows)
        token_ids = np.full((count, width), tokenizer.pad_token_id, "int32")
        padding_mask = np.zeros((count, width), "int32")
        self.token_words = np.full((count, width), -1, "int32")
        self.sample_weight = np.zeros((count, width), "float32")
        self.labels = np.zeros((count, width), "int32")
        self.window_texts = np.array([i for i, _, _, _ in rows], "int32")
        for row, (i, ids, words, first) in enumerate(rows):
            n = len(ids)
            token_ids[row, : n + 2] = [tokenizer.cls_token_id, *ids, tokenizer.sep_token_id]
            padding_mask[row, : n + 2] = 1
            self.token_words[row, 1 : n + 1] = np.where(first, words, -1)
            self.sample_weight[row, 1 : n + 1] = first
            if labels is not None:
                self.labels[row, 1 : n + 1] = np.where(first, np.asarray(labels[i])[words.clip(0)], 0)
        self.inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                       "padding_mask": padding_mask}

    def __len__(self):
        return len(self.window_texts)

    def word_logits(self, logits):
        """Per text, a (words, classes) float array of the logits of each word's first piece.

        Rows of words without any token are NaN.

        Args:
            logits: array (windows, length, classes), the model's outputs on `inputs`
                (length may be shorter than the inputs' when batches were cut).
        """
        logits = np.asarray(logits, "float32")
        out = [np.full((n, logits.shape[-1]), np.nan, "float32") for n in self.num_words]
        width = min(logits.shape[1], self.token_words.shape[1])
        for row, text in enumerate(self.window_texts):
            words = self.token_words[row, :width]
            keep = words >= 0
            out[text][words[keep]] = logits[row, :width][keep]
        return out


    def word_tags(self, logits, label_names):
        """The tag of every word of every text, and its probability: `(tags, probabilities)`.

        Lists (per text) of lists (per word). A word without any token (only characters BERT
        deletes) is tagged `O` with probability 1.

        Args:
            logits: array (windows, length, classes), the model's outputs on `inputs`.
            label_names: list of str. The tags, in class-id order (with an `O`).
        """
        tags, probabilities = [], []
        for word_logits in self.word_logits(logits):
            missing = np.isnan(word_logits[:, 0])
            word_logits = np.where(missing[:, None], 0.0, word_logits)
            exp = np.exp(word_logits - word_logits.max(axis=-1, keepdims=True))
            probs = exp / exp.sum(axis=-1, keepdims=True)
            best = np.where(missing, label_names.index("O"), probs.argmax(-1))
            tags.append([label_names[i] for i in best])
            probabilities.append(np.where(missing, 1.0, probs.max(-1)).tolist())
        return tags, probabilities

