import keras
import numpy as np

from kbert import BertBackbone
from kbert.optimizers import bert_adamw
from tests.conftest import TINY, tiny_batch


def test_schedule_drives_the_optimizer_through_fit():
    backbone = BertBackbone(**TINY)
    logits = keras.layers.Dense(2)(backbone.output["pooled_output"])
    model = keras.Model(backbone.input, logits)
    optimizer = bert_adamw(1e-3, total_steps=4, warmup_ratio=0.5)
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(tiny_batch(batch=4), np.array([0, 1, 0, 1]), batch_size=1, epochs=1, verbose=0)
    assert int(optimizer.iterations) == 4
    assert float(optimizer.learning_rate) == 0.0  # decayed to zero at total_steps
