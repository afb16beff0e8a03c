"""A `tf.data.Dataset` of raw inputs checked before `fit` or `evaluate` runs a step on it.

Its elements' structure and types are read from `element_spec` at once, so a dataset of token
ids without the dict, of integers, of single unbatched examples, or without labels is refused
with a ValueError that says what is wrong, instead of a TensorFlow error from inside the graph;
a task's labels are checked by its `check_label_spec` (their type and shape, now) and
`checked_labels` (their values, as the batches come: a class id out of range would otherwise
train on garbage under JAX).
"""

import keras


def checked_dataset(task, data):
    """`data` after the checks above; its labels pass through `task.checked_labels`.

    Example:
    >>> import tensorflow as tf
    >>> from kbert import BertClassifier
    >>> model = BertClassifier.from_preset("bert_tiny", num_classes=2)
    >>> checked_dataset(model, tf.data.Dataset.from_tensor_slices((["a", "b"], [0, 1])))
    Traceback (most recent call last):
    ...
    ValueError: BertClassifier on a tf.data.Dataset takes batches, but this one yields single examples ...: batch it, ...
    """
    import tensorflow as tf

    where = f"{type(task).__name__} on a tf.data.Dataset"
    spec = data.element_spec
    x, y, _ = keras.utils.unpack_x_y_sample_weight(spec) if isinstance(spec, tuple) else (spec, None, None)
    if y is None and task.needs_labels:
        raise ValueError(f"{where} needs (inputs, labels) elements, or (inputs, labels, sample_weights); this one "
                         f"yields inputs alone: {spec}.")
    for part in keras.tree.flatten(x):
        if part.dtype != tf.string:
            raise ValueError(f"{where} reads raw text, but this one yields {part.dtype.name} inputs ({part}). Token "
                             "ids go in dicts of token_ids, segment_ids and padding_mask.")
        if part.shape.rank is not None and part.shape.rank <= task.example_rank:
            raise ValueError(f"{where} takes batches, but this one yields single examples ({part}): batch it, "
                             "e.g. dataset.batch(32).")
    if y is None:
        return data
    task.check_label_spec(y)
    return data.map(lambda x, y, *weights: (x, task.checked_labels(y), *weights))


def is_dataset(x):
    """True for a `tf.data.Dataset` (without importing TensorFlow where nothing has)."""
    import sys

    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(x, tf.data.Dataset)
