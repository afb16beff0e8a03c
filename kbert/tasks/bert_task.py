"""`BertTask`: what kbert's task models share: a backbone, a preprocessor, a head, raw inputs."""

import contextlib

import keras
import numpy as np

from kbert.backend_speedups import active
from kbert.backend_speedups.fast_dropout import fast_dropout_masks
from kbert.config import DEFAULT_BATCH_SIZE, DEFAULT_SEQUENCE_LENGTH
from kbert.data.padded_batches import PaddedBatches
from kbert.distribution import check_mesh, data_dimension, taking_process_shares, torch_data_parallel
from kbert.distribution.data_shares import Shard, training_on_shares
from kbert.keywords import check_keywords
from kbert.models.compute_dtype import with_compute_dtype
from kbert.optimizers import bert_adamw
from kbert.saving import check_vocabulary
from kbert.tasks.raw_datasets import checked_dataset, is_dataset


class BertTask(keras.Model):
    """Base of kbert's task models: a `BertBackbone`, a head, and a preprocessor for raw inputs.

    The model itself computes on the backbone's dict of token ids. With a `preprocessor`
    (a `kbert.tasks.BertPreprocessor`), `fit`, `evaluate` and `predict` also take raw
    inputs (lists or numpy arrays of strings, or a `tf.data.Dataset` of them, which the
    preprocessor's `call` maps over in TensorFlow ops): in-memory inputs are tokenized once and served
    in batches of similar length, each padded to its longest row; `predict` returns what
    the task is for (probabilities, entities, answers). Dicts of token ids pass straight
    through, as to any Keras model.

    A task compiles itself on construction with BERT's recipe (`compile()`): `BertAdamW`
    with warmup over the first 10% of each `fit`'s steps and linear decay to 0, the task's
    loss and metrics. Compile again to override any of it.

    Subclasses build the functional graph and pass it to `__init__` with their own
    constructor arguments as `config` (kept as attributes and saved by `get_config`), and
    set `preprocessor_class`, `reads_pooled_output` and `default_learning_rate`.

    Args:
        inputs, outputs: the functional graph, from `backbone.input`.
        backbone: `kbert.BertBackbone`.
        preprocessor: a `BertPreprocessor` or None (token ids only). Its tokenizer must have
            the backbone's `vocabulary_size` tokens (else a ValueError).
        config: dict. The subclass's own constructor arguments.
        compile: bool. Compile with the defaults now.
    """

    preprocessor_class = None
    reads_pooled_output = False
    token_outputs = False  # outputs have a token axis (batch, length, ...)
    needs_labels = True  # fit on raw inputs takes a label per example
    example_rank = 0  # the rank of one raw example (a string; NER's: 1, its words)
    default_learning_rate = 5e-5
    default_sequence_length = DEFAULT_SEQUENCE_LENGTH

    def __init__(self, inputs, outputs, backbone, preprocessor=None, config=None, compile=True, **kwargs):
        check_keywords(type(self), kwargs)  # Keras's own (name, trainable, dtype) pass
        if preprocessor is not None:
            check_vocabulary(backbone, preprocessor.tokenizer, "the preprocessor's tokenizer")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        self._arguments = dict(config or {})
        for name, value in self._arguments.items():
            setattr(self, name, value)
        if compile:
            self.compile()

    # --- construction and saving ---------------------------------------------------------

    @classmethod
    def from_preset(cls, preset, preprocessor=None, sequence_length=None, compile=True, **kwargs):
        """A task model on a preset backbone, with its preprocessor, compiled with BERT's recipe.

        Args:
            preset: str or path. A name from `kbert.PRESETS` (random weights),
                "all_minilm_l6_v2" (the real checkpoint), a Hugging Face BERT folder, a kbert
                backbone folder (`apps/pretrain.py`), or a run folder of a task model. A run
                folder or Hugging Face checkpoint of this task (e.g. `BertForTokenClassification`
                for `BertTokenClassifier`) comes back whole, head and labels included, unless
                `kwargs` ask for other classes; another task gives its backbone.
            preprocessor: a `BertPreprocessor`, or None for this task's default on the
                preset's vocabulary.
            sequence_length: int or None. Tokens per input of the default preprocessor
                (None: `default_sequence_length`, at most the backbone's positions).
            compile: bool. Compile with the defaults.
            **kwargs: the task's constructor arguments (e.g. `num_classes`).

        Example:
        >>> from kbert import BertClassifier
        >>> model = BertClassifier.from_preset("bert_tiny", num_classes=2)
        >>> model.predict(["a gripping film"], verbose=0).shape
        (1, 2)
        """
        from kbert.models.load_backbone import load_backbone
        from kbert.saving import load_saved_model

        check_keywords(cls, kwargs, also=("preprocessor", "sequence_length", "compile"))  # before anything is read
        saved = load_saved_model(preset)  # a task model comes with its preprocessor
        if isinstance(saved, cls) and not kwargs:
            if preprocessor is not None:
                check_vocabulary(saved.backbone, preprocessor.tokenizer, "the preprocessor's tokenizer")
                saved.preprocessor = preprocessor
            elif sequence_length:
                saved.preprocessor.sequence_length = min(sequence_length, saved.backbone.max_sequence_length)
            if compile:
                saved.compile()
            return saved
        backbone, tokenizer = load_backbone(preset)
        length = min(sequence_length or cls.default_sequence_length, backbone.max_sequence_length)
        preprocessor = preprocessor or cls.preprocessor_class(tokenizer, sequence_length=length)
        head = _hf_head_arguments(cls, preset, saved, kwargs)
        if head is None:
            return cls(backbone, preprocessor=preprocessor, compile=compile, **kwargs)
        from kbert.convert import load_hf_head

        model = cls(backbone, preprocessor=preprocessor, compile=compile, **{**head, **kwargs})
        load_hf_head(model, preset)
        return model

    def export_to_transformers(self, path):
        """Writes this model as a Hugging Face folder (config, safetensors weights, tokenizer)
        that `transformers` loads with the matching `BertFor...from_pretrained`.

        Example:
        >>> import tempfile
        >>> from kbert import BertClassifier
        >>> folder = tempfile.mkdtemp()
        >>> BertClassifier.from_preset("bert_tiny", num_classes=2).export_to_transformers(folder)
        >>> BertClassifier.from_preset(folder).num_classes  # the head comes back too
        2
        """
        from kbert.convert import save_hf

        save_hf(self, path)

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable, **self._arguments,
                  "backbone": keras.saving.serialize_keras_object(self.backbone)}
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        return config

    @classmethod
    def from_config(cls, config):
        # Uncompiled: `load_model` compiles a model that was saved compiled (compile_from_config),
        # and `fit` compiles with the defaults a model that never was.
        config = {"compile": False, **config}
        for key in ("backbone", "preprocessor"):
            if isinstance(config.get(key), dict):
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)

    # --- training recipe -----------------------------------------------------------------

    def compile(self, optimizer="auto", loss="auto", metrics="auto", weighted_metrics="auto",
                learning_rate=None, jit_compile="auto", **kwargs):
        """`keras.Model.compile` with the task's defaults for every argument left "auto".

        Args:
            optimizer: "auto" for `kbert.optimizers.bert_adamw(learning_rate)`, its schedule laid
                over each `fit` (10% warmup, linear decay to 0); or any Keras optimizer.
            loss, metrics, weighted_metrics: "auto" for the task's; or as for Keras. Under a
                `keras.distribution` that splits batches, the task's default `metrics` are
                weighted, so that the rows padding a batch to the data dimension count 0.
            learning_rate: float or None. The peak rate of the "auto" optimizer (None: the
                task's `default_learning_rate`).
            jit_compile: as for Keras on TensorFlow and JAX. On torch, True is kbert's compiled
                mode: the backbone's plain-torch pass under `torch.compile`
                (`kbert.backend_speedups.torch_backbone.compiled_forward`; BERT-base compiles in
                about 25 s on an H100), the head and the optimizer eager; Keras's own would compile
                its whole train step (minutes). A saved model keeps "auto" as "auto" (Keras keeps
                what it resolved to), so that a model saved under JAX or TensorFlow, where "auto"
                means compiled, predicts eagerly when loaded under torch.
        """
        if optimizer == "auto":
            optimizer = bert_adamw(learning_rate or self.default_learning_rate, total_steps=None)
        optimizer = self._loss_scaled(optimizer, kwargs.get("auto_scale_loss", True))
        defaults = self.default_compile_arguments()
        arguments = {"loss": loss, "metrics": metrics, "weighted_metrics": weighted_metrics}
        arguments = {key: defaults.get(key) if value == "auto" else value for key, value in arguments.items()}
        if data_dimension() > 1 and metrics == "auto" and not arguments["weighted_metrics"]:
            # Batches padded to the data dimension weigh their padding 0: weighted metrics see that.
            arguments["metrics"], arguments["weighted_metrics"] = None, arguments["metrics"]
        torch_compiled = jit_compile is True and keras.config.backend() == "torch"
        if torch_compiled and not active("torch_backbone"):
            raise ValueError("jit_compile=True on torch compiles the backbone's plain-torch pass, which "
                             "KBERT_SPEEDUPS turns off: allow torch_backbone, or compile with jit_compile=False.")
        self.backbone.torch_compiled = torch_compiled
        super().compile(optimizer=optimizer, **arguments, jit_compile=False if torch_compiled else jit_compile,
                        **kwargs)
        self._compile_config.config["jit_compile"] = jit_compile

    def _loss_scaled(self, optimizer, auto_scale_loss):
        """`optimizer` in a `LossScaleOptimizer` where the backbone computes in float16 (Keras wraps it
        only for a model whose own policy is "mixed_float16"); a ValueError where scaling is turned off."""
        if self.backbone.token_embedding.compute_dtype != "float16" or optimizer is None:
            return optimizer
        optimizer = keras.optimizers.get(optimizer)
        if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
            return optimizer
        if not auto_scale_loss:
            raise ValueError("The backbone computes in float16, whose gradients below 6e-8 round to 0 without "
                             "loss scaling: compile with auto_scale_loss=True (the default) or a "
                             "keras.optimizers.LossScaleOptimizer.")
        return keras.optimizers.LossScaleOptimizer(optimizer)

    def compile_from_config(self, config):
        """Compiles as the saved model was compiled (`keras.saving.load_model` calls this)."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def default_compile_arguments(self):
        """The task's default `loss`, `metrics` and `weighted_metrics`, as a dict."""
        raise NotImplementedError

    @property
    def trainable_weights(self):
        return [v for v in super().trainable_weights if id(v) not in self._unread_weights()]

    @property
    def trainable_variables(self):
        return [v for v in super().trainable_variables if id(v) not in self._unread_weights()]

    @property
    def non_trainable_weights(self):
        unread = self._unread_weights()
        return super().non_trainable_weights + [v for v in super().trainable_weights if id(v) in unread]

    @property
    def non_trainable_variables(self):
        unread = self._unread_weights()
        return super().non_trainable_variables + [v for v in super().trainable_variables if id(v) in unread]

    def _unread_weights(self):
        """Ids of the backbone weights no output depends on: the pooler, for most tasks.

        They stay out of training (no gradient, no weight decay, no Keras warning), as Hugging
        Face's token models leave the pooler out, without changing the backbone itself.
        """
        backbone = getattr(self, "backbone", None)
        if backbone is None or self.reads_pooled_output:
            return set()
        return {id(v) for v in backbone.pooler.weights}

    # --- raw inputs ----------------------------------------------------------------------

    def fit(self, x=None, y=None, batch_size=None, epochs=1, validation_data=None, sample_weight=None,
            shuffle=True, shuffle_seed=None, initial_batch=0, **kwargs):
        """`keras.Model.fit`, also on raw inputs (see the class docstring); shuffles each epoch.

        On raw inputs, epoch e's order is drawn from `shuffle_seed` and e alone (None: a seed drawn
        from numpy's global generator, which `keras.utils.set_random_seed` seeds), so fits that resume
        a run at a later epoch see the uninterrupted run's batches. `initial_batch`, with
        `initial_epoch` and `epochs=initial_epoch + 1`, trains the rest of an epoch from that batch on
        (a run resumed part-way through an epoch: `kbert.training.resumable_fit`).

        Under a distribution (see `kbert.distribution`), the mesh is checked against the backbone
        first, and raw inputs come in global batches padded to a multiple of its data dimension
        (the replicas: devices of a `keras.distribution` or a `tf.distribute` strategy, torch
        processes). On torch, each process trains on its share of every global batch and the
        gradients are averaged over the processes (`kbert.distribution.torch_data_parallel`); token ids come as
        `kbert.distribution.data_shares.shares(global batches)`. Across JAX processes, each feeds its share of
        every global batch and Keras assembles the batch (`kbert.distribution.process_share`, which
        also shares out a stream or `PyDataset` of global batches of token ids).
        """
        if not self.compiled:
            self.compile()
        if keras.distribution.distribution() is not None:
            check_mesh(self.backbone, keras.distribution.distribution())
        initial_epoch = kwargs.get("initial_epoch", 0)
        if initial_batch and epochs != initial_epoch + 1:
            raise ValueError(f"initial_batch={initial_batch} trains the rest of one epoch: fit it with "
                             f"epochs=initial_epoch + 1 ({initial_epoch + 1}, not {epochs}), the later epochs in "
                             "another fit.")
        if self._takes_as_is(x):
            if initial_batch:
                raise ValueError("initial_batch resumes raw inputs (lists or arrays of strings), whose batches "
                                 "kbert makes; with token ids or a dataset, skip the batches yourself.")
            data, y = x, _as_array(y)  # Keras takes arrays of labels, not lists
        else:
            if is_dataset(x):
                x = checked_dataset(self, x)
            else:
                self._check_examples(x, y)
            data, batches = self._batches(x, y, sample_weight, batch_size, shuffle=shuffle, shard=True,
                                          seed=shuffle_seed, start=(initial_epoch, initial_batch))
            if shuffle and batches is not None:
                kwargs["callbacks"] = [batches.epoch_callback(), *(kwargs.get("callbacks") or [])]
            elif initial_batch:
                raise ValueError("initial_batch resumes shuffled raw inputs batched by kbert (not the "
                                 "pretrainer's tf.data pipeline).")
            y = sample_weight = batch_size = None
            if validation_data is not None and not self._takes_as_is(validation_data):
                valid_x, valid_y, valid_weight = keras.utils.unpack_x_y_sample_weight(validation_data)
                validation_data, _ = self._batches(valid_x, valid_y, valid_weight,
                                                   kwargs.pop("validation_batch_size", None))
            shuffle = False  # the batches shuffle themselves
        self._plan_learning_rate(data, x, y, batch_size, epochs - initial_epoch, kwargs.get("steps_per_epoch"))
        arguments = dict(batch_size=batch_size, epochs=epochs, validation_data=validation_data,
                         sample_weight=sample_weight, shuffle=shuffle, **kwargs)
        with training_on_shares(self, data), self._training_speedups():
            return super().fit(data, y, **arguments)

    @staticmethod
    def _training_speedups():
        """What `fit` trains within: JAX's faster dropout masks, when `jax_dropout_masks` is active."""
        return fast_dropout_masks() if active("jax_dropout_masks") else contextlib.nullcontext()

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """`keras.Model.evaluate`, also on raw inputs, and across JAX processes on this process's share
        of every batch (`kbert.distribution.process_share`)."""
        if not self.compiled:
            self.compile()
        if self._takes_as_is(x):
            data, arguments = x, dict(y=_as_array(y), batch_size=batch_size, sample_weight=sample_weight)
        else:
            x = checked_dataset(self, x) if is_dataset(x) else x
            (data, _), arguments = self._batches(x, y, sample_weight, batch_size, shuffle=False), {}
        with taking_process_shares(data):
            return super().evaluate(data, **arguments, **kwargs)

    def predict(self, x, batch_size=None, verbose="auto", dtype="float32", **kwargs):
        """`keras.Model.predict` on token ids; on raw inputs, what the task is for (`decode`).

        Raw inputs are served longest first in batches of similar length
        (`PaddedBatches.predict`); results come back in input order. `dtype="bfloat16"`
        computes the backbone in bfloat16 (`kbert.models.compute_dtype`), faster on
        CPUs with bfloat16 instructions.
        """
        if dtype != "float32":
            return with_compute_dtype(self, dtype).predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        if self._takes_as_is(x):
            return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        if is_dataset(x):
            if self.token_outputs:
                raise ValueError(f"{type(self).__name__}.predict decodes answers from lists or arrays "
                                 "of raw inputs; for a tf.data.Dataset, map the preprocessor and "
                                 "predict on the token ids.")
            return self.decode(super().predict(self._batches(x, None, None, None)[0], verbose=verbose,
                                               **kwargs), None)
        prepared = self.preprocessor.prepare(x)
        if not isinstance(prepared.inputs, dict):  # tokenized per batch, in the tf.data pipeline
            return super().predict(self._batches(x, None, None, batch_size)[0], verbose=verbose, **kwargs)
        if kwargs:
            raise TypeError(f"predict on raw inputs takes batch_size and verbose, not {sorted(kwargs)}; "
                            "for Keras's other arguments, predict on the preprocessor's token ids.")
        return self._predict_prepared(self, prepared, batch_size, verbose)

    def predict_with(self, runner, x, batch_size=None, verbose=0):
        """What `predict` returns on the raw inputs `x`, the model's outputs computed by `runner`: this model,
        or anything with its `predict_on_batch` on token ids (`kbert_edge.EdgeModel` on the model's
        token_ids.tflite), so that an export is scored by the code that scores the Keras model.

        Example:
        >>> from kbert import BertClassifier
        >>> model = BertClassifier.from_preset("bert_tiny", num_classes=2)
        >>> bool((model.predict_with(model, ["a film"]) == model.predict(["a film"], verbose=0)).all())
        True
        """
        return self._predict_prepared(runner, self.preprocessor.prepare(x), batch_size, verbose)

    def _predict_prepared(self, runner, prepared, batch_size, verbose):
        batches = PaddedBatches(prepared.inputs, batch_size=batch_size or DEFAULT_BATCH_SIZE)
        return self.decode(batches.predict(runner, verbose=verbose, token_outputs=self.token_outputs), prepared)

    def decode(self, outputs, prepared):
        """What `predict` returns on raw inputs, from the model's outputs (numpy) on `prepared`."""
        return outputs

    def check_labels(self, y):
        """`y` as the model's targets (e.g. class names to ids); a ValueError before training if not."""
        return y

    def check_label_spec(self, spec):
        """A ValueError when a tf.data.Dataset's labels (their `tf.TensorSpec`) cannot be this task's."""

    def checked_labels(self, y):
        """A tf.data batch's labels, with TensorFlow checks of their values (as `check_labels`)."""
        return y

    def _check_examples(self, x, y):
        """A ValueError, before any step, for raw inputs `fit` cannot train on: none, or not one label each."""
        name = type(self).__name__
        count = len(x[0]) if isinstance(x, tuple) else len(x)
        if not count:
            raise ValueError(f"{name}.fit got no examples: nothing to train on.")
        if y is None and self.needs_labels:
            raise ValueError(f"{name}.fit needs a label for each of its {count} examples (y); got None.")
        if y is not None and not isinstance(y, dict) and len(y) != count:
            raise ValueError(f"{name}.fit got {count} examples but {len(y)} labels: give one label per example.")

    def _takes_as_is(self, x):
        """True for inputs the model reads without its preprocessor (token ids, or no preprocessor)."""
        if self.preprocessor is None or isinstance(x, (dict, keras.utils.PyDataset)):
            return True
        if is_dataset(x):
            return isinstance(keras.utils.unpack_x_y_sample_weight(x.element_spec)[0], dict)
        return False

    def _batches(self, x, y, sample_weight, batch_size, shuffle=False, shard=False, seed=None, start=(0, 0)):
        """(data, batches): raw inputs as batches of token ids, in the form `fit` and `evaluate` take
        (with `shard`, this torch process's share of each, under `kbert.distribution.torch_data_parallel`), and the
        `PaddedBatches` behind them (None for a tf.data pipeline), shuffled batches set to the
        (epoch, batch) `start`."""
        import tensorflow as tf

        if is_dataset(x):
            if y is not None or sample_weight is not None or batch_size is not None:
                raise ValueError("A tf.data.Dataset carries its own labels, weights and batches: pass "
                                 "no y, sample_weight or batch_size with it.")
            return x.map(self.preprocessor, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE), None
        prepared = self.preprocessor.prepare(x, self.check_labels(y), sample_weight)
        batch_size = batch_size or DEFAULT_BATCH_SIZE
        if seed is None:
            seed = int(np.random.randint(2**31))  # seeded by keras.utils.set_random_seed
        if shard:  # every torch process makes the same global batches (evaluate needs no peers)
            seed = torch_data_parallel.shared_seed(seed)
        split = data_dimension(self)
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
            return data.map(lambda *batch: self.preprocessor(*batch),
                            num_parallel_calls=tf.data.AUTOTUNE).prefetch(2), None
        batches = PaddedBatches(prepared.inputs, prepared.y, prepared.sample_weight, batch_size,
                                shuffle=shuffle, seed=seed, group_by_length=shuffle,
                                batch_multiple=split)
        if shuffle:
            batches.set_epoch(*start)
        if shard and torch_data_parallel.active() is not None:
            return Shard(batches, torch_data_parallel.active()), batches
        return batches.for_fit(), batches

    def _plan_learning_rate(self, data, x, y, batch_size, epochs, steps_per_epoch):
        """Lays a fit-planned learning-rate schedule over the steps of this `fit`."""
        optimizer = getattr(self.optimizer, "inner_optimizer", self.optimizer)  # under loss scaling
        if not getattr(getattr(optimizer, "_learning_rate", None), "planned_by_fit", False):
            return
        if not hasattr(optimizer, "plan_fit"):
            raise ValueError("A learning-rate schedule planned by fit needs the optimizer "
                             "kbert.optimizers.BertAdamW, which holds the plan.")
        steps = steps_per_epoch or _steps_per_epoch(data, x, batch_size)
        if steps is None:
            raise ValueError("The learning-rate schedule is laid over the steps of fit, and this "
                             "dataset's length is unknown: pass steps_per_epoch, or compile with "
                             "an optimizer of your own.")
        accumulation = optimizer.gradient_accumulation_steps or 1  # batches per optimizer step
        optimizer.plan_fit(steps * max(epochs, 1) // accumulation)


def _hf_head_arguments(cls, preset, saved, kwargs):
    """The head arguments of a Hugging Face checkpoint of task `cls` that `kwargs` keep (else None)."""
    from kbert.saving import is_preset

    if saved is not None or is_preset(preset):
        return None
    from kbert.convert import hf_task_arguments

    task, head = hf_task_arguments(preset)
    changed = [key for key in ("num_classes", "label_names", "multi_label", "next_sentence")
               if key in kwargs and key in head and kwargs[key] != head[key]]
    if task != cls.__name__ or changed:
        return None  # another task, or another head: the backbone alone
    return head


def _as_array(values):
    """Lists and tuples of labels as numpy arrays; anything else as it is."""
    return np.asarray(values) if isinstance(values, (list, tuple)) else values


def _steps_per_epoch(data, x, batch_size):
    """Batches in an epoch of `data` (a PyDataset, a tf.data.Dataset or arrays), or None if unknown."""
    if isinstance(data, keras.utils.PyDataset):
        return len(data)
    if is_dataset(data):
        count = int(data.cardinality())
        return count if count > 0 else None
    length = len(keras.tree.flatten(x)[0])
    return -(-length // (batch_size or DEFAULT_BATCH_SIZE))
