import keras
from keras import ops

from kbert.layers.mean_pooling import mean_pool


class SentenceEncoder:
    """Sentence embeddings: tokenize, run the backbone, mean-pool over real tokens, L2-normalise.

    This is sentence-transformers' recipe for all-MiniLM-L6-v2, so with that preset
    the dot product of two embeddings is their cosine similarity.

    Args:
        backbone: a `kbert.BertBackbone`.
        tokenizer: a `kbert.BertTokenizer` with the backbone's vocabulary.
        max_length: int. Longer texts are truncated to this many tokens.

    Example:
    >>> encoder = SentenceEncoder.from_preset("all_minilm_l6_v2")
    >>> e = encoder.encode(["A man plays the guitar.", "Someone is playing music."])
    >>> e.shape, bool(e[0] @ e[1] > 0.5)
    ((2, 384), True)
    >>> encoder.encode("A man plays the guitar.").shape
    (384,)
    """

    def __init__(self, backbone, tokenizer, max_length=256):
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.max_length = max_length

    @classmethod
    def from_preset(cls, name="all_minilm_l6_v2", **kwargs):
        from kbert.checkpoints import load_backbone

        if name != "all_minilm_l6_v2":
            raise ValueError(f"SentenceEncoder presets: 'all_minilm_l6_v2', not {name!r}.")
        return cls(*load_backbone(name), **kwargs)

    def encode(self, texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False,
               convert_to_numpy=True, convert_to_tensor=False):
        """Embeds texts; takes sentence-transformers' `encode` arguments of the same names.

        Args:
            texts: str or list of str. A str is one text and gives one row.
            batch_size: int. Texts per backbone call (each batch padded to its longest text).
            normalize_embeddings: bool. Divide each mean-pooled vector by its L2 norm, the
                Normalize step that ends all-MiniLM-L6-v2's sentence-transformers pipeline:
                with True (the default) the vectors are that pipeline's, which are unit vectors
                whatever sentence-transformers' own `normalize_embeddings` (default False).
                False returns the mean-pooled vectors before that step.
            show_progress_bar: bool. Show a `keras.utils.Progbar` over the batches.
            convert_to_numpy: bool. False returns one backend tensor instead of numpy.
            convert_to_tensor: bool. True returns one backend tensor (overrides convert_to_numpy).

        Returns:
            A float32 array of shape (len(texts), hidden_dim), or (hidden_dim,) for a str.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}.")
        single = isinstance(texts, (str, bytes))
        texts = [texts] if single else list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, (str, bytes)):
                raise TypeError(f"texts[{i}] is {type(text).__name__}, not str.")
        starts = range(0, len(texts), batch_size)
        progress = keras.utils.Progbar(len(starts), unit_name="batch") if show_progress_bar else None
        chunks = []
        for step, start in enumerate(starts, 1):
            batch = self.tokenizer(
                texts[start : start + batch_size], max_length=self.max_length, padding="longest"
            )
            sequence = self.backbone(batch)["sequence_output"]
            pooled = mean_pool(sequence, batch["padding_mask"], normalize=normalize_embeddings)
            chunks.append(ops.stop_gradient(pooled))  # torch would keep every batch's graph
            if progress:
                progress.update(step)
        embeddings = ops.concatenate(chunks) if chunks else ops.zeros((0, self.backbone.hidden_dim))
        if single:
            embeddings = embeddings[0]
        return embeddings if convert_to_tensor or not convert_to_numpy else ops.convert_to_numpy(embeddings)
