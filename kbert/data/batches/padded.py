import math

import keras
import numpy as np

from kbert.distribution import data_dimension, process_share
from kbert.progress import ProgressLines, progress_mode


class PaddedBatches(keras.utils.PyDataset):
    """Batches of already tokenized rows, each cut to its longest row (rounded up), any backend.

    With `token_aligned`, arrays of rank 2 or more in `y` and `sample_weight` are token-aligned
    (batch, length, ...) and are cut like the inputs; otherwise they hold one value or one row per
    input row (a multi-label classifier's classes, a teacher's probabilities) and are kept whole.
    `y` may be a dict of arrays, for models with several outputs. Inputs of rank 3 (rows, texts, length)
    hold several texts a row (a bi-encoder's pairs): a batch of B rows serves their B x texts
    token rows, each row's texts one after another, cut to the batch's longest text.

    Args:
        inputs: dict of int arrays (rows, length) or (rows, texts, length), with a `padding_mask`.
        y: array, dict of arrays, or None. Targets.
        sample_weight: array or None. Per-row or per-token weights (0 = ignored).
        batch_size: int.
        token_aligned: bool. `y` and `sample_weight` of rank 2 or more have the inputs' token axis
            (a token classifier's tags and weights).
        shuffle: bool. Shuffle every epoch (for training). The order of epoch e is a function
            of `seed` and e alone (`set_epoch`), so a run resumed at any epoch, or part-way
            through one, sees the batches the uninterrupted run saw.
        seed: int. Seed of the shuffles.
        length_multiple: int. Batch lengths are rounded up to a multiple of this, so jit
            compilers see a few shapes rather than one per length.
        group_by_length: bool. With `shuffle`, fill each batch with rows of similar length
            (less padding, faster on CPU), then shuffle the order of the batches.
        batch_multiple: int. Pad each batch's rows up to a multiple of this (the data dimension
            of a `keras.distribution`) with copies of its rows weighted 0, and weight its real
            rows by padded/real rows, so that a loss averaged over the batch equals the
            unpadded batch's. With a multiple above 1, batches with `y` always carry a sample_weight.

    Example:
    >>> inputs = {"token_ids": np.ones((3, 16), "int32"), "padding_mask": np.zeros((3, 16), "int32")}
    >>> inputs["padding_mask"][:, :5] = 1
    >>> batches = PaddedBatches(inputs, y=np.zeros((3, 16)), batch_size=2, token_aligned=True)
    >>> x, y = batches[0]
    >>> tuple(x["token_ids"].shape), tuple(y.shape), len(batches)
    ((2, 8), (2, 8), 2)
    >>> tuple(PaddedBatches(inputs, y=np.zeros((3, 12)), batch_size=2)[0][1].shape)  # 12 labels a row
    (2, 12)
    """

    def __init__(self, inputs, y=None, sample_weight=None, batch_size=32, shuffle=False, seed=0,
                 length_multiple=8, group_by_length=False, batch_multiple=1, token_aligned=False, **kwargs):
        super().__init__(**kwargs)
        self.inputs = inputs
        self.y = y
        self.sample_weight = sample_weight
        self.token_aligned = token_aligned
        lengths = inputs["padding_mask"].sum(axis=-1)
        self.lengths = lengths.max(axis=-1) if lengths.ndim > 1 else lengths  # a row's longest text
        self.width = inputs["padding_mask"].shape[-1]
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.length_multiple = length_multiple
        self.group_by_length = group_by_length
        self.batch_multiple = batch_multiple
        self.seed = seed
        self.epoch = 0
        self.skip = 0  # batches of this epoch not served (a resumed epoch's, done before the kill)
        self.order = np.arange(len(self.lengths))
        self.widths = None  # set by _fix_first_widths for unshuffled batches
        if shuffle:
            self.set_epoch(0)
        else:
            self._fix_first_widths()

    def __len__(self):
        return self._batches_in_an_epoch() - self.skip

    def _batches_in_an_epoch(self):
        return math.ceil(len(self.order) / self.batch_size)

    def __getitem__(self, index):
        index += self.skip
        rows = self.order[index * self.batch_size : (index + 1) * self.batch_size]
        width = self._width(index)
        real = len(rows)
        padded = -(-real // self.batch_multiple) * self.batch_multiple
        rows = np.concatenate([rows, rows[np.arange(padded - real) % real]])
        cut = lambda value: value[rows, :width] if value.ndim > 1 else value[rows]  # noqa: E731
        target = cut if self.token_aligned else (lambda value: value[rows])  # noqa: E731
        texts = lambda value: value[rows][..., :width].reshape(-1, width)  # noqa: E731 (rows of several texts)
        batch = ({key: (texts if value.ndim > 2 else cut)(value) for key, value in self.inputs.items()},)
        if self.y is not None:
            batch += ({k: target(v) for k, v in self.y.items()} if isinstance(self.y, dict) else target(self.y),)
        if self.sample_weight is not None or (self.batch_multiple > 1 and self.y is not None):
            weight = np.ones(len(rows), "float32") if self.sample_weight is None else target(self.sample_weight)
            if self.batch_multiple > 1:
                weight = weight.astype("float32") * (padded / real)
                weight[real:] = 0
            batch += (weight,)
        return batch if len(batch) > 1 else batch[0]

    def predict(self, model, verbose=0, token_outputs=True, progress=None):
        """Runs `model.predict_on_batch` over the rows, longest first in batches of similar
        length; returns the outputs in row order.

        Sorting by length spares most of the padding that batches in row order carry; each
        batch is as long as its longest row. When the model compiles a program per input
        shape (`model.jit_compile`: XLA, `jax.jit`), lengths are rounded up to a few buckets
        (`bucket_length`) instead, and a short last batch is padded with copies of its rows
        to a power of two, so that few shapes compile. Under a distribution that splits each
        batch (`kbert.distribution.data_dimension`), every batch is padded with copies of its
        rows to a multiple of the data dimension (the copies' outputs are dropped) and, under a
        `keras.distribution` in one process, laid out along the data dimension, so that each
        device computes its share of the rows (`predict_on_batch` alone would run the whole
        batch on every replica).

        Args:
            model: a Keras model, or anything with its `predict_on_batch`. Its outputs may
                be an array or a dict of arrays (e.g. start and end logits).
            verbose: 0 silent; 1 a progress bar over the batches (when more than one); 2 or "lines"
                a line every 30 s with the time left (`kbert.progress.ProgressLines`); "auto" a bar on
                a terminal, else lines.
            token_outputs: bool. Outputs of rank 2 or more have a token axis (batch, length,
                ...), padded back with zeros to the inputs' full length. False: every output
                has one row per input (e.g. class probabilities (batch, classes)).
            progress: None, or a `keras.utils.Progbar` to advance by one per batch instead.

        Example:
        >>> class Lengths:  # a stand-in model: the number of tokens of each row
        ...     def predict_on_batch(self, x):
        ...         return x["padding_mask"].sum(axis=1)
        >>> inputs = {"padding_mask": np.array([[1, 0, 0], [1, 1, 1], [1, 1, 0]])}
        >>> PaddedBatches(inputs, batch_size=2).predict(Lengths()).tolist()
        [1, 3, 2]
        """
        if self.shuffle:
            raise ValueError("predict needs the rows in order: build the batches with shuffle=False.")
        if not len(self.lengths):
            raise ValueError("There are no rows to predict.")
        if self.inputs["padding_mask"].ndim > 2:
            raise ValueError("predict takes one text a row, not rows of several texts (pairs).")
        mode = progress_mode(verbose or 0)
        if progress is None and mode is not None and len(self) > 1:
            progress = (keras.utils.Progbar(len(self), unit_name="batch") if mode == "bar"
                        else ProgressLines(len(self), "predict", "batch"))
        compiled = bool(getattr(model, "jit_compile", False))
        split = data_dimension(model) if isinstance(model, keras.Model) else 1
        order = np.argsort(-self.lengths, kind="stable")
        results = None
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            longest = max(int(self.lengths[rows[0]]), 1)
            if compiled:
                width = bucket_length(longest, self.width)
                served = np.resize(rows, min(1 << (len(rows) - 1).bit_length(), self.batch_size))
            else:  # eager or graph: any width runs as fast, so no padding past the longest row
                width, served = longest, rows
            served = np.resize(served, -(-len(served) // split) * split)
            batch = {key: value[served, :width] for key, value in self.inputs.items()}
            outputs = model.predict_on_batch(_laid_out(batch) if split > 1 else batch)
            outputs = keras.tree.map_structure(lambda value: np.asarray(value)[: len(rows)], outputs)
            if results is None:
                results = keras.tree.map_structure(lambda value: self._rows_like(value, token_outputs), outputs)
            for result, value in zip(keras.tree.flatten(results), keras.tree.flatten(outputs)):
                if token_outputs and value.ndim > 1:
                    result[rows, : value.shape[1]] = value
                else:
                    result[rows] = value
            if progress is not None:
                progress.add(1)
        return results

    def _rows_like(self, value, token_outputs):
        """Zeros for every row of an output like the batch output `value`."""
        if token_outputs and value.ndim > 1:
            return np.zeros((len(self.lengths), self.width, *value.shape[2:]), value.dtype)
        return np.zeros((len(self.lengths), *value.shape[1:]), value.dtype)

    def for_fit(self):
        """These batches in the form Keras's `fit` and `evaluate` take under the current backend.

        Under TensorFlow, a `tf.data.Dataset` whose signature leaves the batch and length axes
        open: Keras would otherwise fix the shapes it accepts from the first batches it peeks
        at, and a later batch of another length (after a reshuffle) would stop training.
        Other backends take the batches as they are; on JAX, this process's share of each
        (`kbert.distribution.process_share`) when the active distribution spans several processes.
        """
        if keras.config.backend() != "tensorflow":
            return process_share(self)
        import tensorflow as tf

        def open_spec(value):
            value = np.asarray(value)
            return tf.TensorSpec([None] * min(value.ndim, 2) + list(value.shape[2:]), value.dtype)

        signature = keras.tree.map_structure(open_spec, self[0])

        def generate():  # the epoch's order is set by `epoch_callback` before each pass
            for index in range(len(self)):
                yield self[index]

        data = tf.data.Dataset.from_generator(generate, output_signature=signature)
        return data.apply(tf.data.experimental.assert_cardinality(len(self))).prefetch(2)

    def set_epoch(self, epoch, skip=0):
        """Serves the batches of epoch `epoch` (0 is the first), from its batch `skip` on.

        Shuffled batches come in an order drawn from (seed, epoch) alone: a fit that starts
        at epoch 3, or at batch 40 of it (a run resumed from a backup), sees what the
        uninterrupted fit saw there. `len()` counts the batches still to serve.

        Example:
        >>> inputs = {"padding_mask": np.ones((6, 4), "int32")}
        >>> batches = PaddedBatches(inputs, batch_size=2, shuffle=True, seed=7)
        >>> batches.set_epoch(1)
        >>> rows = batches.order.tolist()
        >>> batches.set_epoch(1, skip=2)
        >>> len(batches), batches.order.tolist() == rows
        (1, True)
        """
        if not 0 <= skip < self._batches_in_an_epoch():
            raise ValueError(f"An epoch has {self._batches_in_an_epoch()} batches: cannot start it at batch {skip}.")
        self.epoch, self.skip = epoch, skip
        if not self.shuffle:
            return
        rng = np.random.default_rng([self.seed, epoch])
        order = rng.permutation(len(self.order))
        if self.group_by_length:  # sort by length (random among equals), then shuffle the batches
            order = order[np.argsort(self.lengths[order], kind="stable")]
            batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
            order = np.concatenate([batches[i] for i in rng.permutation(len(batches))])
        self.order = order
        self._vary_first_widths()

    def epoch_callback(self):
        """A Keras callback that sets these batches to each epoch of a `fit` as it begins (`set_epoch`);
        the epoch they are set to now keeps its `skip` (a fit resuming part-way through it). `BertTask.fit`
        passes it."""
        start_epoch, skip = self.epoch, self.skip

        def begin(epoch, logs=None):
            self.set_epoch(epoch, skip if epoch == start_epoch else 0)

        return keras.callbacks.LambdaCallback(on_epoch_begin=begin)

    def on_epoch_end(self):
        """Keras's end of an epoch: without `epoch_callback`, the next epoch's order (a fit in which
        Keras ends epochs also at its start, as on JAX and torch, may skip one)."""
        if self.shuffle:
            self.set_epoch(self.epoch + 1)

    def _vary_first_widths(self):
        """Swaps batch 1 with one of another width than batch 0, if there is one.

        Under TensorFlow, `fit` fixes the shapes it accepts from the first two batches: if
        both had the same length, a later, different length would fail.
        """
        widths = [self._width(i) for i in range(self._batches_in_an_epoch())]
        if len(widths) < 3 or widths[0] != widths[1] or len(set(widths)) == 1:
            return
        j = next(i for i, width in enumerate(widths) if width != widths[0])
        size = self.batch_size
        second, other = self.order[size : 2 * size].copy(), self.order[j * size : (j + 1) * size].copy()
        if len(other) == size:
            self.order[size : 2 * size], self.order[j * size : (j + 1) * size] = other, second

    def _fix_first_widths(self):
        """Unshuffled rows stay in order, so instead of swapping batches (`_vary_first_widths`),
        batch 1 is padded one `length_multiple` wider than batch 0 when both have the same width
        and a later batch has another; when it cannot be wider, every batch gets the full width.
        """
        widths = [self._width(i) for i in range(self._batches_in_an_epoch())]
        if len(widths) < 3 or widths[0] != widths[1] or len(set(widths)) == 1:
            return
        if widths[1] < self.width:
            widths[1] = min(widths[1] + self.length_multiple, self.width)
        else:
            widths = [self.width] * len(widths)
        self.widths = widths

    def _width(self, index):
        if self.widths is not None:
            return self.widths[index]
        longest = int(self.lengths[self.order[index * self.batch_size : (index + 1) * self.batch_size]].max())
        return min(-(-longest // self.length_multiple) * self.length_multiple, self.width)


def _laid_out(batch):
    """`batch` split along the data dimension of the active `keras.distribution` (JAX, one process),
    as Keras lays out the batches of `fit`; as it is otherwise."""
    distribution = keras.distribution.distribution()
    if distribution is None or keras.config.backend() != "jax":
        return batch
    import jax

    if jax.process_count() > 1:  # a global array needs every process's rows: predict runs per process
        return batch
    return {key: keras.distribution.distribute_tensor(value, distribution.get_data_layout(value.shape))
            for key, value in batch.items()}


BUCKET_STEPS = ((16, 2), (32, 4), (64, 8), (128, 16), (256, 32), (None, 64))  # (up to this length, a multiple of)


def bucket_length(length, longest):
    """`length` rounded up to the next of a few bucket lengths, at most `longest`.

    Multiples of 2 up to 16 tokens, of 4 up to 32, of 8 up to 64, of 16 up to 128, of 32 up to
    256, then of 64: padding under a quarter of the length past 16 tokens (short texts, the
    common case, are where a coarse step costs most: multiples of 8 padded STS-B's sentences,
    14.4 tokens on average, by 28%; these steps by 7%), and 28 lengths up to 512 for a jit
    compiler to compile.

    Example:
    >>> [bucket_length(n, 512) for n in (1, 9, 17, 65, 129, 300, 512)], bucket_length(300, 280)
    ([2, 10, 20, 80, 160, 320, 512], 280)
    """
    for limit, multiple in BUCKET_STEPS:
        if limit is None or length <= limit:
            return min(-(-length // multiple) * multiple, longest)
