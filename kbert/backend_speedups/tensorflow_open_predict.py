"""TensorFlow: a task's predict function traced once, for batches of any size and length.

Keras traces its predict function per input shape, generalizing with `reduce_retracing`: raw inputs served in
batches of similar length (`PaddedBatches.predict`) made it trace three graphs, the first batch's shape, then
(batch, None), then (None, None) at a short last batch. Traced first for (None, None), every batch reuses that one
graph.
"""

import weakref

import numpy as np

_TRACED_OPEN = weakref.WeakSet()  # the predict functions traced for any shape already


def trace_for_any_shape(model, x):
    """Traces `model`'s predict function (Keras's, made if need be) for batches shaped like the dict of numpy
    arrays `x` with their batch and length axes open, once per function: Keras makes a new one when the model is
    compiled again. Nothing for a model that runs eagerly, held by a distribution strategy, for other inputs, or
    under another backend (the example traces once on TensorFlow, and runs everywhere).

    Example:
    >>> import keras
    >>> ids = keras.Input((None,), dtype="int32", name="token_ids")
    >>> model = keras.Model({"token_ids": ids}, keras.layers.Embedding(5, 2)(ids))
    >>> for length in (3, 4, 2):
    ...     trace_for_any_shape(model, {"token_ids": np.ones((2, length), "int32")})
    ...     _ = model.predict_on_batch({"token_ids": np.ones((2, length), "int32")})
    >>> tensorflow = keras.config.backend() == "tensorflow"  # elsewhere nothing is traced: no count to read
    >>> model.predict_function.experimental_get_tracing_count() if tensorflow else 1
    1
    """
    if getattr(model, "_distribute_strategy", None) is not None or not isinstance(x, dict):  # TensorFlow's trainer
        return
    if not all(isinstance(value, np.ndarray) and value.ndim >= 1 for value in x.values()):
        return
    model.make_predict_function()
    function = model.predict_function
    if not hasattr(function, "get_concrete_function") or function in _TRACED_OPEN:  # run_eagerly: plain Python
        return
    import tensorflow as tf

    spec = {key: tf.TensorSpec([None] * min(value.ndim, 2) + list(value.shape[2:]), value.dtype)
            for key, value in x.items()}
    function.get_concrete_function([(spec,)])  # what `predict_on_batch` passes: a list of one (x,)
    _TRACED_OPEN.add(function)
