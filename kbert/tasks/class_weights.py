"""`fit`'s `class_weight` for the tasks with one class a row or a token (`BertClassifier`, `BertTokenClassifier`):
weights keyed by class name or id, or "balanced"; a row's (a token's) weight is its class's times its sample weight.

Keras's own `class_weight` takes ids only (a name is ignored under JAX and torch and fails under TensorFlow), reads a
token classifier's tags as one-hot rows, and refuses the sample weights a token classifier's batches carry: kbert
makes the weights into sample weights itself (`weighed`, `weighed_dataset`) before Keras sees the batches."""

import math

import numpy as np

BALANCED = "balanced"


def check_class_weight(task, class_weight, y=None):
    """A ValueError, before any work, where `task` cannot weigh its labels `y` by `class_weight` (a task without
    classes, a key that names none of its classes, a weight below 0)."""
    names = task.weighed_classes(y)
    if not (isinstance(class_weight, str) and class_weight == BALANCED):
        class_weight_table(class_weight, names)


def class_weight_table(class_weight, class_names, targets=None, sample_weight=None):
    """float32 (classes,): each class's weight. `class_weight` is a dict keyed by `class_names` or by class ids
    (a class it leaves out weighs 1, as in Keras), or "balanced": rows / (classes * the class's rows) over the
    `targets` (class ids) the loss reads (not those whose `sample_weight` is 0), scikit-learn's
    `compute_class_weight("balanced")`; classes absent from `targets` weigh 1 and are not counted. A ValueError
    names a key or weight that cannot be.

    Example:
    >>> class_weight_table({"pos": 3}, ["neg", "pos"]).tolist()
    [1.0, 3.0]
    >>> [round(float(weight), 3) for weight in class_weight_table("balanced", ["neg", "pos"], np.array([0, 0, 0, 1]))]
    [0.667, 2.0]
    """
    table = np.ones(len(class_names), "float32")
    if isinstance(class_weight, str) and class_weight == BALANCED:
        if targets is None:
            raise ValueError('class_weight="balanced" counts the labels of data in memory; for a dataset, give '
                             "each class's weight: {class name or id: weight}.")
        counts = np.bincount(read_targets(targets, sample_weight, len(class_names)), minlength=len(class_names))
        present = counts > 0
        table[present] = counts.sum() / (present.sum() * counts[present])
        return table
    if not isinstance(class_weight, dict):
        raise ValueError(f'class_weight takes {{class name or id: weight}} or "{BALANCED}", not {class_weight!r}.')
    for key, weight in class_weight.items():
        if isinstance(key, str) and key in class_names:
            index = class_names.index(key)
        elif isinstance(key, (int, np.integer)) and not isinstance(key, bool) and 0 <= key < len(class_names):
            index = int(key)
        else:
            raise ValueError(f"class_weight has the key {key!r}, which is neither a class name of {class_names} "
                             f"nor a class id (0 to {len(class_names) - 1}).")
        if isinstance(weight, bool) or not isinstance(weight, (int, float, np.number)) or not (
                math.isfinite(weight) and weight >= 0):
            raise ValueError(f"class_weight[{key!r}] is {weight!r}: a weight is a finite number, 0 or more.")
        table[index] = weight
    return table


def read_targets(targets, sample_weight, num_classes):
    """The class ids among `targets` that weigh more than 0 in `sample_weight` (all of them where it is None), flat;
    a ValueError for one outside the classes."""
    ids = np.asarray(targets).reshape(-1)
    if sample_weight is not None:
        ids = ids[np.asarray(sample_weight).reshape(-1) > 0]
    if not np.issubdtype(ids.dtype, np.number):
        raise ValueError(f"class_weight weighs class ids 0 to {num_classes - 1}; the labels are {ids.dtype} values.")
    outside = ids[(ids < 0) | (ids >= num_classes) | (ids % 1 != 0)]
    if len(outside):
        raise ValueError(f"class_weight weighs class ids 0 to {num_classes - 1}; a label is {outside[0].item()}.")
    return ids.astype("int64")


def weighed(table, targets, sample_weight=None, token_level=False):
    """The sample weights of `targets` (class ids (rows,) or (rows, 1); (rows, tokens) at `token_level`) under
    `table`: each one's class weight times its `sample_weight` (None: 1). Targets that weigh 0 may be any number.

    Example:
    >>> weighed(np.array([1.0, 3.0]), np.array([[1, -100]]), np.array([[1.0, 0.0]]), token_level=True).tolist()
    [[3.0, 0.0]]
    """
    targets = np.asarray(targets)
    if not token_level:
        targets = targets.reshape(len(targets))
    read_targets(targets, sample_weight, len(table))  # a ValueError for a label the loss reads outside the classes
    read = True if sample_weight is None else np.reshape(sample_weight, targets.shape) > 0
    weights = table[np.where(read, targets, 0).astype("int64")]
    return weights if sample_weight is None else weights * np.reshape(sample_weight, targets.shape)


def weighed_dataset(data, table, token_level=False):
    """A tf.data.Dataset of `(x, y)` or `(x, y, sample_weight)` batches (class ids in y) as `(x, y, weights)`,
    `weighed` in TensorFlow ops."""
    import keras
    import tensorflow as tf

    table = tf.constant(table)

    def weigh(*batch):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(batch)
        if y is None:
            raise ValueError("class_weight weighs labels; this dataset's batches have none.")
        ids = tf.cast(y, tf.int32)
        if not token_level:
            ids = tf.reshape(ids, [-1])
        if sample_weight is None:
            return x, y, tf.gather(table, ids)
        sample_weight = tf.reshape(tf.cast(sample_weight, tf.float32), tf.shape(ids))
        return x, y, tf.gather(table, tf.where(sample_weight > 0, ids, 0)) * sample_weight

    return data.map(weigh, num_parallel_calls=tf.data.AUTOTUNE)
