import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kbert")
class BertQuestionAnswerer(keras.Model):
    """Extractive QA (SQuAD): a Dense(2) head on `sequence_output` gives start and end logits.

    Inputs are `[CLS] question [SEP] context [SEP]` (see `kbert.data.SquadWindows`). The
    model returns a dict of `start_logits` and `end_logits`, each (batch, length), in
    float32; padding positions get -1e9 so that they never win and weigh nothing in the
    softmax, whatever the batch is padded to. Train with sparse categorical cross-entropy
    on the answer's first and last token ([CLS], position 0, when a window lacks it).
    The backbone's pooler feeds nothing here and is frozen (see `BertTokenClassifier`).

    Args:
        backbone: `kbert.BertBackbone`.
        dropout: float. Dropout on the token vectors before the head (BERT uses none).

    Example:
    >>> from kbert import BertBackbone
    >>> import numpy as np
    >>> model = BertQuestionAnswerer(BertBackbone.from_preset("bert_tiny"))
    >>> batch = {k: np.ones((2, 8), "int32") for k in ("token_ids", "padding_mask")}
    >>> batch["segment_ids"] = np.zeros((2, 8), "int32")
    >>> sorted((k, tuple(v.shape)) for k, v in model(batch).items())
    [('end_logits', (2, 8)), ('start_logits', (2, 8))]
    """

    def __init__(self, backbone, dropout=0.0, **kwargs):
        inputs = backbone.input
        x = backbone(inputs)["sequence_output"]
        x = keras.layers.Dropout(dropout, name="head_dropout")(x)
        logits = keras.layers.Dense(
            2, kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype="float32", name="span_logits",
        )(x)
        real = ops.cast(inputs["padding_mask"], "bool")
        outputs = {
            "start_logits": ops.where(real, logits[..., 0], -1e9),
            "end_logits": ops.where(real, logits[..., 1], -1e9),
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        backbone.train_pooler(False)  # nothing here reads the pooled output (see the docstring)
        self.backbone = backbone
        self.dropout = dropout

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "dropout": self.dropout,
                "backbone": keras.saving.serialize_keras_object(self.backbone)}

    @classmethod
    def from_config(cls, config):
        backbone = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**{**config, "backbone": backbone})
