"""How a task's `fit`, `evaluate` and `predict` take their inputs: token ids as they are, raw inputs (lists or
arrays of strings, what a notebook holds: a pandas Series or DataFrame, a `datasets.Dataset`, read by
`kbert.tasks.table_inputs`; a `tf.data.Dataset` of strings) as batches of token ids that the task's preprocessor
makes."""

import dataclasses
import math

import keras
import numpy as np

from kbert.config import DEFAULT_BATCH_SIZE
from kbert.data.batches.padded import PaddedBatches
from kbert.distribution import data_dimension, torch_data_parallel
from kbert.distribution.data_shares import Shard
from kbert.tasks.class_weights import check_class_weight, class_weight_table, weighed, weighed_dataset
from kbert.tasks.raw_datasets import checked_dataset, is_dataset
from kbert.tasks.table_inputs import raw_inputs


def fit_arguments(task, arguments, seed=None, initial_batch=0):
    """Keras `fit`'s `arguments` (a dict: x, y, batch_size, epochs, ...) for `task`: raw inputs become the
    task's batches (shuffled each epoch from `seed`, from the (epoch, batch) of `initial_epoch` and
    `initial_batch`), checked before any step; token ids pass as they are. A `class_weight` is made into sample
    weights here (`kbert.tasks.class_weights`), for raw inputs and token ids alike, and a `validation_split` of
    raw inputs takes their last examples (`split_off_validation`)."""
    arguments = dict(arguments)
    x, y, sample_weight, batch_size = (arguments.pop(key) for key in ("x", "y", "sample_weight", "batch_size"))
    class_weight = arguments.pop("class_weight", None)
    if class_weight is not None:
        task.weighed_classes(y)  # a ValueError, before any work, where the task has none
    initial_epoch, epochs = arguments.get("initial_epoch", 0), arguments["epochs"]
    if initial_batch and epochs != initial_epoch + 1:
        raise ValueError(f"initial_batch={initial_batch} trains the rest of one epoch: fit it with "
                         f"epochs=initial_epoch + 1 ({initial_epoch + 1}, not {epochs}), the later epochs in "
                         "another fit.")
    if takes_as_is(task, x):
        if initial_batch:
            raise ValueError("initial_batch resumes raw inputs (lists or arrays of strings), whose batches "
                             "kbert makes; with token ids or a dataset, skip the batches yourself.")
        if isinstance(x, dict):
            task.backbone.check_inputs(x)  # the ids once, on the host: on a GPU the steps do not read them back
        if class_weight is not None:
            x, sample_weight = weighed_as_is(task, x, as_array(y), sample_weight, class_weight)
        return dict(x=x, y=as_array(y), sample_weight=sample_weight, batch_size=batch_size, **arguments)
    validation_split = arguments.pop("validation_split", 0.0)
    if is_dataset(x):
        if validation_split:
            raise ValueError(f"validation_split={validation_split} splits examples in memory; a tf.data.Dataset's "
                             "validation set is another dataset: give it as validation_data.")
        x = checked_dataset(task, x)
    else:
        x, y, sample_weight = raw_inputs(task, x, y, sample_weight, "fit")
        task._check_examples(x, y)
        task.take_label_names(y)
        if validation_split and arguments["validation_data"] is None:  # else ignored, as by Keras
            (x, y, sample_weight), arguments["validation_data"] = split_off_validation(x, y, sample_weight,
                                                                                       validation_split)
        if class_weight is not None:
            check_class_weight(task, class_weight, y)
    data, batches = task._batches(x, y, sample_weight, batch_size, shuffle=arguments["shuffle"], shard=True,
                                  seed=seed, start=(initial_epoch, initial_batch), class_weight=class_weight)
    if arguments["shuffle"] and batches is not None:
        arguments["callbacks"] = [batches.epoch_callback(), *(arguments.get("callbacks") or [])]
    elif initial_batch:
        raise ValueError("initial_batch resumes shuffled raw inputs batched by kbert (not the "
                         "pretrainer's tf.data pipeline).")
    validation_data = arguments["validation_data"]
    if validation_data is not None and not takes_as_is(task, validation_data):
        valid_x, valid_y, valid_weight = keras.utils.unpack_x_y_sample_weight(validation_data)
        if not is_dataset(valid_x):
            valid_x, valid_y, valid_weight = raw_inputs(task, valid_x, valid_y, valid_weight, "fit")
        arguments["validation_data"], _ = task._batches(valid_x, valid_y, valid_weight,
                                                        arguments.pop("validation_batch_size", None))
    # the batches shuffle themselves
    return dict(x=data, y=None, sample_weight=None, batch_size=None, **{**arguments, "shuffle": False})


def split_off_validation(x, y, sample_weight, fraction):
    """((x, y, sample_weight) to train on, the same to validate on) of raw examples: the last `fraction` of them
    validates, as Keras's `validation_split` splits arrays (before any shuffle; the training part rounded down).

    Example:
    >>> split_off_validation((["a", "b", "c"], ["A", "B", "C"]), [0, 1, 0], None, 0.5)
    (((['a'], ['A']), [0], None), ((['b', 'c'], ['B', 'C']), [1, 0], None))
    """
    count = example_count(x)
    at = math.floor(count * (1.0 - fraction))
    if not 0 < fraction < 1 or at in (0, count):
        raise ValueError(f"validation_split={fraction} cannot split {count} examples into a training and a "
                         "validation set: give a fraction between 0 and 1 that leaves examples on both sides.")

    def part(values, validating):
        if values is None:
            return None
        if isinstance(values, (tuple, dict)):
            items = values.items() if isinstance(values, dict) else enumerate(values)
            parts = {key: part(value, validating) for key, value in items}
            return parts if isinstance(values, dict) else tuple(parts.values())
        return values[at:] if validating else values[:at]

    return tuple(tuple(part(values, validating) for values in (x, y, sample_weight)) for validating in (False, True))


def weighed_as_is(task, x, y, sample_weight, class_weight):
    """(x, sample_weight) of token ids and their labels, with `class_weight` in the sample weights (of a dataset's
    batches, where `x` is a tf.data.Dataset)."""
    names = task.weighed_classes(y)
    if is_dataset(x):
        if y is not None or sample_weight is not None:
            raise ValueError("A tf.data.Dataset carries its own labels and weights: pass no y or sample_weight "
                             "with it.")
        return weighed_dataset(x, class_weight_table(class_weight, names), task.token_outputs), None
    if y is None or isinstance(x, keras.utils.PyDataset):
        raise ValueError(f"{type(task).__name__}.fit weighs classes of labels given as arrays (y) or in a "
                         "tf.data.Dataset; for other inputs, give each example's weight in its sample weights.")
    table = class_weight_table(class_weight, names, y, sample_weight)
    return x, weighed(table, y, sample_weight, task.token_outputs)


def evaluate_arguments(task, x, y, sample_weight, batch_size):
    """Keras `evaluate`'s x, y, sample_weight and batch_size for `task` (a dict): raw inputs as its batches."""
    if takes_as_is(task, x):
        return dict(x=x, y=as_array(y), batch_size=batch_size, sample_weight=sample_weight)
    if is_dataset(x):
        x = checked_dataset(task, x)
    else:
        x, y, sample_weight = raw_inputs(task, x, y, sample_weight, "evaluate")
    return dict(x=task._batches(x, y, sample_weight, batch_size, shuffle=False)[0])


def predict_raw(task, predict, x, batch_size, verbose, **kwargs):
    """What `task.predict` returns on the raw inputs `x`: `predict` (Keras's, of `task`) on the batches of a
    tf.data pipeline (a dataset, the pretrainer's texts), `predict_prepared` on the others."""
    if is_dataset(x):
        if task.token_outputs:
            raise ValueError(f"{type(task).__name__}.predict decodes answers from lists or arrays "
                             "of raw inputs; for a tf.data.Dataset, map the preprocessor and "
                             "predict on the token ids.")
        return task.decode(predict(task._batches(x, None, None, None)[0], verbose=verbose, **kwargs), None)
    x = raw_inputs(task, x, call="predict")[0]
    prepared = task.preprocessor.prepare(x)
    if not isinstance(prepared.inputs, dict):  # tokenized per batch, in the tf.data pipeline
        return predict(task._batches(x, None, None, batch_size)[0], verbose=verbose, **kwargs)
    if kwargs:
        raise TypeError(f"predict on raw inputs takes batch_size and verbose, not {sorted(kwargs)}; "
                        "for Keras's other arguments, predict on the preprocessor's token ids.")
    return predict_prepared(task, task, prepared, batch_size, verbose)


def predict_prepared(task, runner, prepared, batch_size, verbose):
    """`task.decode` of the outputs `runner` (the task, or anything with its `predict_on_batch`) computes on the
    `prepared` inputs (`prepared_outputs`)."""
    return task.decode(prepared_outputs(task, runner, prepared, batch_size, verbose), prepared)


def prepared_outputs(task, runner, prepared, batch_size, verbose=0):
    """The outputs (numpy, in input order) `runner` (the task, or anything with its `predict_on_batch`) computes on
    the `prepared` inputs, served longest first in batches of similar length (`PaddedBatches.predict`)."""
    batches = PaddedBatches(prepared.inputs, batch_size=batch_size or DEFAULT_BATCH_SIZE)
    return batches.predict(runner, verbose=verbose, token_outputs=task.token_outputs)


def check_examples(task, x, y, call="fit"):
    """A ValueError, before any step, for raw inputs `fit` (or `evaluate`: `call`) cannot train on (score): none,
    or not one label each."""
    name = f"{type(task).__name__}.{call}"
    count = example_count(x)
    if not count:
        raise ValueError(f"{name} got no examples: nothing to {'train on' if call == 'fit' else 'score'}.")
    if y is None and task.needs_labels:
        raise ValueError(f"{name} needs a label for each of its {count} examples (y); got None.")
    if y is not None and not isinstance(y, dict) and len(y) != count:
        raise ValueError(f"{name} got {count} examples but {len(y)} labels: give one label per example.")


def example_count(x):
    """The number of raw examples in `x`: a list of them, or a tuple of columns."""
    return len(x[0]) if isinstance(x, tuple) else len(x)


def evaluate_outputs(task, outputs, y, sample_weight=None, return_dict=False):
    """What Keras's `evaluate` returns for `task` (its compiled loss and metrics, as a list, or a dict with
    `return_dict`) on `outputs` computed already, one row per example (numpy), against the targets `y`.

    Example:
    >>> from kbert import BertClassifier
    >>> model = BertClassifier.from_preset("bert_tiny", num_classes=2)
    >>> scores = evaluate_outputs(model, np.array([[2.0, 0.0], [0.0, 2.0]]), np.array([0, 0]), return_dict=True)
    >>> {key: round(value, 4) for key, value in scores.items()}
    {'loss': 1.1269, 'accuracy': 0.5}
    """
    from keras import ops

    task.reset_metrics()
    y_pred = ops.convert_to_tensor(outputs)
    y, sample_weight = (None if part is None else ops.convert_to_tensor(part) for part in (y, sample_weight))
    loss = task._compute_loss(y=y, y_pred=y_pred, sample_weight=sample_weight, training=False)
    task._loss_tracker.update_state(loss, sample_weight=len(outputs))  # as Keras's test_step weighs a batch
    logs = task.compute_metrics(None, y, y_pred, sample_weight)
    logs = {key: float(ops.convert_to_numpy(value)) for key, value in logs.items()}
    return logs if return_dict else task._flatten_metrics_in_order(logs)


def check_token_ids(task, x, call, instead):
    """A ValueError where `task.<call>` (a `*_on_batch` of Keras's, on one batch of the model's inputs) is given raw
    inputs, naming the call that takes them (`instead`)."""
    if not takes_as_is(task, x):
        raise ValueError(f"{type(task).__name__}.{call} takes a batch of token ids, the model's inputs (e.g. "
                         f"model.preprocessor.prepare(texts).inputs); raw inputs go to {instead}.")


def takes_as_is(task, x):
    """True for inputs `task` reads without its preprocessor (token ids, or no preprocessor)."""
    if task.preprocessor is None or isinstance(x, (dict, keras.utils.PyDataset)):
        return True
    if is_dataset(x):
        return isinstance(keras.utils.unpack_x_y_sample_weight(x.element_spec)[0], dict)
    return False


def raw_batches(task, x, y, sample_weight, batch_size, shuffle=False, shard=False, seed=None, start=(0, 0),
                class_weight=None):
    """(data, batches): raw inputs as batches of token ids, in the form `fit` and `evaluate` take
    (with `shard`, this torch process's share of each, under `kbert.distribution.torch_data_parallel`), and the
    `PaddedBatches` behind them (None for a tf.data pipeline), shuffled batches set to the
    (epoch, batch) `start`; with `class_weight`, each row's (token's) class weight in its sample weight."""
    import tensorflow as tf

    if is_dataset(x):
        if y is not None or sample_weight is not None or batch_size is not None:
            raise ValueError("A tf.data.Dataset carries its own labels, weights and batches: pass "
                             "no y, sample_weight or batch_size with it.")
        data = x.map(task.preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
        if class_weight is not None:
            data = weighed_dataset(data, class_weight_table(class_weight, task.weighed_classes(None)),
                                   task.token_outputs)
        return data.prefetch(tf.data.AUTOTUNE), None
    if sample_weight is not None:
        sample_weight = checked_sample_weight(sample_weight, example_count(x))
    prepared = task.preprocessor.prepare(x, task.check_labels(y), sample_weight)
    if class_weight is not None:
        table = class_weight_table(class_weight, task.weighed_classes(y), prepared.y, prepared.sample_weight)
        prepared = dataclasses.replace(prepared, sample_weight=weighed(table, prepared.y, prepared.sample_weight,
                                                                       prepared.token_aligned))
    batch_size = batch_size or DEFAULT_BATCH_SIZE
    if seed is None:
        seed = int(np.random.randint(2**31))  # seeded by keras.utils.set_random_seed
    if shard:  # every torch process makes the same global batches (evaluate needs no peers)
        seed = torch_data_parallel.shared_seed(seed)
    split = data_dimension(task)
    if not isinstance(prepared.inputs, dict):  # tokenized per batch, in the tf.data pipeline
        if shard and torch_data_parallel.active() is not None:
            raise ValueError("Raw inputs tokenized per batch (the pretrainer's) are not sharded over "
                             "torch processes yet: data parallelism on torch takes the other tasks.")
        elements = tuple(part for part in (prepared.inputs, prepared.y, prepared.sample_weight)
                         if part is not None)
        data = tf.data.Dataset.from_tensor_slices(elements)
        if shuffle:
            data = data.shuffle(len(data), seed=seed, reshuffle_each_iteration=True)
        # masked per batch, so not padded: the last batch is dropped
        if batch_size % split:
            raise ValueError(f"batch_size={batch_size} does not divide by the data dimension "
                             f"{split} of the active distribution; choose a multiple of {split}.")
        data = data.batch(batch_size, drop_remainder=split > 1)
        return data.map(lambda *batch: task.preprocessor(*batch),
                        num_parallel_calls=tf.data.AUTOTUNE).prefetch(2), None
    batches = PaddedBatches(prepared.inputs, prepared.y, prepared.sample_weight, batch_size,
                            shuffle=shuffle, seed=seed, group_by_length=shuffle,
                            batch_multiple=split, token_aligned=prepared.token_aligned)
    if shuffle:
        batches.set_epoch(*start)
    if shard and torch_data_parallel.active() is not None:
        return Shard(batches, torch_data_parallel.active()), batches
    return batches.for_fit(), batches


def checked_sample_weight(sample_weight, count):
    """`sample_weight` (a list, a pandas Series' values, an array) as float32, one finite weight for each of the
    `count` raw examples; a ValueError where it is not.

    Example:
    >>> checked_sample_weight([1, 0.5], 2).tolist()
    [1.0, 0.5]
    """
    try:
        weights = np.asarray(sample_weight, "float32")
    except (TypeError, ValueError):
        raise ValueError(f"sample_weight must be numbers, one per example; got {sample_weight!r:.80}.") from None
    if weights.shape != (count,):
        raise ValueError(f"sample_weight has shape {weights.shape}: give one weight per example ({count},).")
    if not np.isfinite(weights).all():
        raise ValueError(f"sample_weight {int(np.flatnonzero(~np.isfinite(weights))[0])} is not finite.")
    return weights


def steps_per_epoch(data, x, batch_size):
    """Batches in an epoch of `data` (a PyDataset, a tf.data.Dataset or arrays `x`), or None if unknown.

    Example:
    >>> steps_per_epoch({"token_ids": np.zeros((70, 8))}, {"token_ids": np.zeros((70, 8))}, 32)
    3
    """
    if isinstance(data, keras.utils.PyDataset):
        return len(data)
    if is_dataset(data):
        count = int(data.cardinality())
        return count if count > 0 else None
    length = len(keras.tree.flatten(x)[0])
    return -(-length // (batch_size or DEFAULT_BATCH_SIZE))


def as_array(values):
    """Lists and tuples of labels as numpy arrays; anything else as it is."""
    return np.asarray(values) if isinstance(values, (list, tuple)) else values
