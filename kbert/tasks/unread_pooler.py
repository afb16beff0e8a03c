"""`UnreadPooler`: a task model leaves the backbone's pooler out of its training when no output reads it."""

from kbert.backend_speedups import active


class UnreadPooler:
    """Mixin of the `keras.Model` task models with a `backbone`: unless `reads_pooled_output`, the weights
    of the backbone's pooler count as non-trainable in this model.

    They stay out of training (no gradient, no weight decay, no Keras warning), as Hugging Face's
    token models leave the pooler out, without changing the backbone itself.

    Example:
    >>> from kbert import BertBackbone, BertTokenClassifier
    >>> model = BertTokenClassifier(BertBackbone.from_preset("bert_tiny"), ["O", "B-X"])
    >>> pooler = {id(w) for w in model.backbone.pooler.weights}
    >>> [sum(id(w) in pooler for w in weights) for weights in (model.trainable_weights, model.non_trainable_weights)]
    [0, 2]
    """

    reads_pooled_output = False

    @property
    def trainable_weights(self):
        return self._read_weights("trainable_weights", lambda: super(UnreadPooler, self).trainable_weights)

    @property
    def trainable_variables(self):
        return self._read_weights("trainable_variables", lambda: super(UnreadPooler, self).trainable_variables)

    def _read_weights(self, name, walked):
        """The weights of `walked()` but the unread ones; with the speed-up `torch_train_step`, gathered once
        while the model does not change (Keras's torch trainer reads them three times a step)."""
        def gather():
            unread = self._unread_weights()
            return [v for v in walked() if id(v) not in unread]

        if not active("torch_train_step"):
            return gather()
        from kbert.backend_speedups.torch_train_step import gathered

        return list(gathered(self, name, gather))

    @property
    def non_trainable_weights(self):
        unread = self._unread_weights()
        return super().non_trainable_weights + [v for v in super().trainable_weights if id(v) in unread]

    @property
    def non_trainable_variables(self):
        unread = self._unread_weights()
        return super().non_trainable_variables + [v for v in super().trainable_variables if id(v) in unread]

    def _unread_weights(self):
        """Ids of the backbone weights no output depends on: the pooler, for most tasks."""
        backbone = getattr(self, "backbone", None)
        if backbone is None or self.reads_pooled_output or backbone.pooler is None:
            return set()
        return {id(v) for v in backbone.pooler.weights}


def pooled_output(backbone, outputs, task):
    """`outputs["pooled_output"]` of `backbone`, which the head of `task` (its class name) reads; a backbone
    without a pooler (ELECTRA's, DistilBERT's, a BERT's built with `pooler=False`) raises a ValueError naming its
    family.

    Example:
    >>> from kbert import BertBackbone
    >>> backbone = BertBackbone.from_preset("distilbert_base", num_layers=1)
    >>> pooled_output(backbone, backbone(backbone.input), "BertPretrainer(next_sentence=True)")
    Traceback (most recent call last):
    ValueError: BertPretrainer(next_sentence=True) reads the backbone's pooled output, which a distilbert backbone
    has none of (pooler=False).
    """
    if backbone.pooler is None:
        raise ValueError(f"{task} reads the backbone's pooled output, which a {backbone.family} backbone has none "
                         "of (pooler=False).")
    return outputs["pooled_output"]
