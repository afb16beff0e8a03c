"""Data- and model-parallel BERT: a Megatron layout map and presets, on each backend's own engine.

Model parallelism is `keras.distribution`'s, which runs on the JAX backend only (Keras's
TensorFlow prototype says "do not use", and torch has none). Data parallelism runs on all
three: `keras.distribution.DataParallel` on JAX, `tf.distribute.MirroredStrategy` on
TensorFlow, and processes that average their gradients over `torch.distributed` on torch
(`kbert.distribution.torch_data_parallel`, DistributedDataParallel's math). `activate(distribution)`
makes any of them the active one; the rest of this package reads it.

Its modules, one concern each: `layouts` (the layout map, meshes, which distribution is active),
`processes` (a job of several processes: `is_chief`, `chief_first`, `join_jax_job`, `writing_alone`),
`data_shares` (each process's share of the global batches: `process_share`, `taking_process_shares`)
and `torch_data_parallel` (torch's processes averaging their gradients).

Example, on 8 devices: 2 replicas of the model, each sharded over 4 devices:

```python
import keras, kbert, kbert.distribution

keras.distribution.set_distribution(kbert.distribution.model_parallel((2, 4), config="bert_base"))
model = kbert.BertClassifier.from_preset("bert_base", num_classes=2)  # weights sharded here
model.fit(["a gripping film", "a dull film"], [1, 0], batch_size=16)
```
"""

from kbert.distribution import data_shares, layouts, processes, torch_data_parallel
from kbert.distribution.data_shares import process_share, taking_process_shares
from kbert.distribution.layouts import (NAMES, activate, bert_layout_map, check_backend, check_mesh, data_dimension,
                                        data_parallel, describe, get, model_parallel)
from kbert.distribution.processes import JAX_JOB, chief_first, is_chief, join_jax_job, writing_alone

__all__ = ["activate", "bert_layout_map", "check_mesh", "chief_first", "data_dimension", "data_parallel", "describe",
           "get", "is_chief", "join_jax_job", "model_parallel", "process_share",
           "taking_process_shares", "writing_alone"]
