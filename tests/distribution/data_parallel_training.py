"""A few steps of a bert_tiny classifier on raw strings, under a data-parallel distribution or none:
what the TensorFlow (MirroredStrategy) and torch (processes) data-parallel tests compare."""

import keras
import numpy as np

import kbert
import kbert.distribution

TEXTS = [f"film {word} was {'good' if i % 2 else 'bad'}" for i, word in enumerate("abcdefghijklmnopqrstuv")]
LABELS = [i % 2 for i in range(len(TEXTS))]
BATCH = 5  # global: 22 rows in batches of 5, 5, 5, 5, 2; on 2 replicas, 5 is padded to 6


def train(distribution, shuffle=True, shuffle_seed=0):
    """The weights after 2 epochs under `distribution` (activated while building and training),
    the optimizer's steps, and how far the weights moved. Shuffled from `shuffle_seed` (a torch
    job shuffles as its process 0 does)."""
    kbert.distribution.activate(distribution)
    try:
        keras.utils.set_random_seed(0)
        backbone = kbert.BertBackbone.from_preset("bert_tiny", dropout=0.0)
        preprocessor = kbert.BertClassifier.preprocessor_class(kbert.BertTokenizer.from_preset("bert_tiny"), sequence_length=16)
        model = kbert.BertClassifier(backbone, num_classes=2, preprocessor=preprocessor, dropout=0.0)
        model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9))  # unlike Adam, sees a gradient's scale
        initial = model.get_weights()
        keras.utils.set_random_seed(shuffle_seed)
        model.fit(TEXTS, LABELS, batch_size=BATCH, epochs=2, shuffle=shuffle, verbose=0)
    finally:
        kbert.distribution.activate(None)
    moved = max(np.abs(a - b).max() for a, b in zip(initial, model.get_weights()))
    return model.get_weights(), int(keras.ops.convert_to_numpy(model.optimizer.iterations)), float(moved)
