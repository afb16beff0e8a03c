import keras


@keras.saving.register_keras_serializable(package="kbert")
class BertClassifier(keras.Model):
    """Sentence (or sentence-pair) classifier: backbone, dropout, a Dense head on `pooled_output`.

    Pairs (NLI premise and hypothesis) come in packed as `[CLS] A [SEP] B [SEP]` with
    segment ids 0/1, which is what the tokenizer does with `pairs=`. The model returns
    logits of shape (batch, num_classes); with `num_classes=1` it is a regressor (STS-B
    scores), trained with mean squared error. The head computes in float32 even under a
    mixed precision policy, so the loss sees full-precision logits.

    Args:
        backbone: `kbert.BertBackbone`.
        num_classes: int. Classes; 1 for regression.
        dropout: float. Dropout on the pooled output before the head.
        label_names: list of str or None. Class names, kept in the saved model.

    Example:
    >>> from kbert import BertBackbone
    >>> import numpy as np
    >>> model = BertClassifier(BertBackbone.from_preset("bert_tiny"), 3, label_names=["e", "n", "c"])
    >>> batch = {k: np.ones((2, 8), "int32") for k in ("token_ids", "padding_mask")}
    >>> batch["segment_ids"] = np.zeros((2, 8), "int32")
    >>> tuple(model(batch).shape), model.label_names
    ((2, 3), ['e', 'n', 'c'])
    """

    def __init__(self, backbone, num_classes, dropout=0.1, label_names=None, **kwargs):
        if label_names is not None and len(label_names) != num_classes:
            raise ValueError(f"Got {len(label_names)} label_names for num_classes={num_classes}.")
        inputs = backbone.input
        x = backbone(inputs)["pooled_output"]
        x = keras.layers.Dropout(dropout, name="head_dropout")(x)
        logits = keras.layers.Dense(
            num_classes, kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype="float32", name="logits",
        )(x)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        backbone.train_pooler(True)  # a token model built on this backbone may have frozen it
        self.backbone = backbone
        self.num_classes = num_classes
        self.dropout = dropout
        self.label_names = None if label_names is None else [str(name) for name in label_names]

    @property
    def regression(self):
        """True when the model predicts one score (num_classes=1) rather than classes."""
        return self.num_classes == 1

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "num_classes": self.num_classes,
                "dropout": self.dropout, "label_names": self.label_names,
                "backbone": keras.saving.serialize_keras_object(self.backbone)}

    @classmethod
    def from_config(cls, config):
        backbone = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**{**config, "backbone": backbone})
