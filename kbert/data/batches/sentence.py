from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.data.batches.padded import PaddedBatches


class SentenceBatches(PaddedBatches):
    """Sentences (or pairs) tokenized once, served in batches cut to the longest row, any backend.

    `PaddedBatches` over the tokenizer's output: each batch is as long as its longest
    row, rounded up to a multiple of `length_multiple`, so that short sentences (SST-2)
    are not padded to `max_length` and jit compilers (XLA, jax.jit) see only a few shapes.
    Training sets reshuffle each epoch (seeded). Regression scores come as (batch, 1),
    the shape of the model's output.

    Args:
        examples: `kbert.data.SentenceExamples`.
        tokenizer: `kbert.text.BertTokenizer` (or any callable with its signature and keys).
        batch_size: int.
        max_length: int. Most tokens per example, special tokens included.
        shuffle: bool. Shuffle every epoch (for training).
        seed: int. Seed of the shuffles.
        length_multiple: int. Batch lengths are rounded up to a multiple of this.

    Example:
    >>> import numpy as np
    >>> from kbert.data import SentenceExamples
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"])
    >>> data = SentenceExamples(["hi", "hi hi hi hi hi hi hi hi hi hi"], labels=np.array([0, 1]))
    >>> batches = SentenceBatches(data, tokenizer, batch_size=1, length_multiple=4)
    >>> [tuple(batches[i][0]["token_ids"].shape) for i in range(len(batches))]
    [(1, 4), (1, 12)]
    """

    def __init__(self, examples, tokenizer, batch_size, max_length=DEFAULT_SEQUENCE_LENGTH, shuffle=False, seed=0,
                 length_multiple=8, **kwargs):
        labels = examples.labels
        if labels is not None and labels.dtype.kind == "f":
            labels = labels[:, None]
        inputs = tokenizer(examples.texts, examples.pairs, max_length=max_length, padding="longest")
        super().__init__(inputs, labels, batch_size=batch_size, shuffle=shuffle, seed=seed,
                         length_multiple=length_multiple, **kwargs)
