import numpy as np
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

    def encode(self, texts, batch_size=32):
        """Returns a (len(texts), hidden_dim) float32 array of unit vectors."""
        chunks = []
        for start in range(0, len(texts), batch_size):
            batch = self.tokenizer(
                texts[start : start + batch_size], max_length=self.max_length, padding="longest"
            )
            sequence = self.backbone(batch)["sequence_output"]
            chunks.append(ops.convert_to_numpy(mean_pool(sequence, batch["padding_mask"])))
        return np.concatenate(chunks) if chunks else np.zeros((0, self.backbone.hidden_dim), "float32")
