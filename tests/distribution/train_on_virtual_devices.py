"""Trains bert_tiny classifiers on 8 virtual JAX CPU devices, on one device, data-parallel and
model-parallel; writes their losses, weights and shardings to the .npz file argv[1]."""

import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"  # before jax is imported
os.environ["KERAS_BACKEND"] = "jax"

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kbert  # noqa: E402
import kbert.distribution  # noqa: E402

TEXTS = [f"film {word} was {'good' if i % 2 else 'bad'}" for i, word in enumerate("abcdefghijklmnopqrstuvwx")]
LABELS = [i % 2 for i in range(len(TEXTS))]
TOKENIZER = kbert.BertTokenizer.from_preset("bert_tiny")
CHECKED = ("token_embedding/embeddings", "transformer_layer_0/self_attention/qkv_dense/kernel",
           "transformer_layer_0/self_attention/output_dense/kernel",
           "transformer_layer_1/intermediate_dense/kernel", "transformer_layer_1/output_dense/kernel",
           "transformer_layer_1/output_layer_norm/gamma", "logits/kernel")


def train(name, distribution, rows):
    keras.distribution.set_distribution(distribution)
    keras.utils.set_random_seed(0)
    backbone = kbert.BertBackbone.from_preset("bert_tiny", dropout=0.0)
    preprocessor = kbert.BertClassifier.preprocessor_class(TOKENIZER, sequence_length=16)
    model = kbert.BertClassifier(backbone, num_classes=2, preprocessor=preprocessor, dropout=0.0)
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9))  # unlike Adam, sees a gradient's scale
    initial = model.get_weights()
    history = model.fit(TEXTS[:rows], LABELS[:rows], batch_size=8, epochs=2, verbose=0)
    out = {f"{name}/loss": np.array(history.history["loss"]),
           f"{name}/moved": np.array(max(np.abs(a - b).max() for a, b in zip(initial, model.get_weights())))}
    out.update({f"{name}/weight{i}": w for i, w in enumerate(model.get_weights())})
    by_path = {v.path: v for v in model.weights}
    momentum = [v for v in model.optimizer.variables if "qkv_dense_kernel" in v.path][-1]
    for path, variable in [(path, by_path[path]) for path in CHECKED] + [("qkv momentum", momentum)]:
        spec = getattr(variable.value.sharding, "spec", None)  # one device: no spec
        out[f"{name}/sharding/{path}"] = np.array(repr(None if spec is None else tuple(spec)))
    keras.distribution.set_distribution(None)
    return out


results = {"devices": np.array(len(keras.distribution.list_devices()))}
for rows in (24, 20):  # 20: a batch of 4 rows, which does not divide by 8
    results.update(train(f"single{rows}", None, rows))
    results.update(train(f"data{rows}", kbert.distribution.data_parallel(), rows))
    if rows == 20:  # batches of 8, 8 and 4 rows: none padded on the mesh's data dimension of 4
        model_parallel = kbert.distribution.model_parallel((4, 2), config="bert_tiny")
        results.update(train(f"model{rows}", model_parallel, rows))
keras.distribution.set_distribution(kbert.distribution.data_parallel())
# The pretrainer masks per batch in tf.data: its batches are not padded but dropped.
pretrainer = kbert.BertPretrainer.from_preset("bert_tiny", sequence_length=16, next_sentence=False)
pretrainer.fit(TEXTS[:20], batch_size=8, verbose=0)  # the last batch of 4 is dropped
results["pretrainer/steps"] = np.array(int(pretrainer.optimizer.iterations))
np.savez(sys.argv[1], **results)
