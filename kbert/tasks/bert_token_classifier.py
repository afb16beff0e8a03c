import keras


@keras.saving.register_keras_serializable(package="kbert")
class BertTokenClassifier(keras.Model):
    """Tags every token (NER): backbone, dropout, a Dense head on `sequence_output`.

    The model returns logits of shape (batch, length, num_classes), one row per token;
    `kbert.data.NerWindows` puts each word's label on its first WordPiece and gives the
    other positions weight 0. The head computes in float32 even under mixed precision.
    The backbone's pooler feeds nothing here, so its weights are frozen (kept and saved as
    they are), as Hugging Face's token models leave it out: no backend then warns of
    variables without gradients, and none decays them.

    Args:
        backbone: `kbert.BertBackbone`.
        label_names: list of str. The tags (e.g. `O`, `B-PER`, `I-PER`), in id order; kept
            in the saved model.
        dropout: float. Dropout on the token vectors before the head.

    Example:
    >>> from kbert import BertBackbone
    >>> import numpy as np
    >>> model = BertTokenClassifier(BertBackbone.from_preset("bert_tiny"), ["O", "B-PER", "I-PER"])
    >>> batch = {k: np.ones((2, 8), "int32") for k in ("token_ids", "padding_mask")}
    >>> batch["segment_ids"] = np.zeros((2, 8), "int32")
    >>> tuple(model(batch).shape), model.num_classes
    ((2, 8, 3), 3)
    """

    def __init__(self, backbone, label_names, dropout=0.1, **kwargs):
        label_names = [str(name) for name in label_names]
        if len(set(label_names)) != len(label_names) or not label_names:
            raise ValueError(f"label_names must be distinct and not empty; got {label_names}.")
        inputs = backbone.input
        x = backbone(inputs)["sequence_output"]
        x = keras.layers.Dropout(dropout, name="head_dropout")(x)
        logits = keras.layers.Dense(
            len(label_names), kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype="float32", name="logits",
        )(x)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        backbone.train_pooler(False)  # nothing here reads the pooled output (see the docstring)
        self.backbone = backbone
        self.label_names = label_names
        self.dropout = dropout

    @property
    def num_classes(self):
        return len(self.label_names)

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "label_names": self.label_names,
                "dropout": self.dropout, "backbone": keras.saving.serialize_keras_object(self.backbone)}

    @classmethod
    def from_config(cls, config):
        backbone = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**{**config, "backbone": backbone})
