"""`BertTask`: what kbert's task models share: a backbone, a preprocessor, a head, raw inputs."""

import keras

from kbert.backend_speedups import active
from kbert.backend_speedups.fast_dropout import fit_dropout_masks
from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.distribution import check_mesh, data_dimension, taking_process_shares
from kbert.distribution.data_shares import training_on_shares
from kbert.keywords import check_keywords
from kbert.models.compute_dtype import with_compute_dtype
from kbert.optimizers import bert_adamw
from kbert.optimizers.bert_adamw import plan_fit_schedule
from kbert.optimizers.mixed_precision import loss_scaled
from kbert.saving import check_vocabulary
from kbert.tasks import task_data
from kbert.tasks.load_task import load_task
from kbert.tasks.table_inputs import raw_inputs
from kbert.tasks.unread_pooler import UnreadPooler


class BertTask(UnreadPooler, keras.Model):
    """Base of kbert's task models: a `BertBackbone`, a head, and a preprocessor for raw inputs.

    The model itself computes on the backbone's dict of token ids. With a `preprocessor`
    (a `kbert.tasks.BertPreprocessor`), `fit`, `evaluate` and `predict` also take raw
    inputs (lists or numpy arrays of strings, or a `tf.data.Dataset` of them, which the
    preprocessor's `call` maps over in TensorFlow ops): in-memory inputs are tokenized once and served
    in batches of similar length, each padded to its longest row (`kbert.tasks.task_data`); `predict`
    returns what the task is for (probabilities, entities, answers). Dicts of token ids pass straight
    through, as to any Keras model.

    What a notebook holds is taken too (`kbert.tasks.table_inputs`): a pandas Series or a `datasets`
    column is a list; a tuple of strings is a list of texts; a DataFrame or a `datasets.Dataset` gives
    its columns, in order, as the task's inputs (`input_names`: the classifier's texts, or texts and
    pairs; select columns to choose them, `df[["premise", "hypothesis"]]`), and `y` may name its label
    column: `model.fit(df, "label")` trains on the other columns.

    A task compiles itself on construction with BERT's recipe (`compile()`): `BertAdamW`
    with warmup over the first 10% of each `fit`'s steps and linear decay to 0, the task's
    loss and metrics. Compile again to override any of it.

    Subclasses build the functional graph and pass it to `__init__` with their own
    constructor arguments as `config` (kept as attributes and saved by `get_config`), and
    set `preprocessor_class`, `reads_pooled_output` (`UnreadPooler`) and `default_learning_rate`.

    Args:
        inputs, outputs: the functional graph, from `backbone.input`.
        backbone: `kbert.BertBackbone`.
        preprocessor: a `BertPreprocessor` or None (token ids only). Its tokenizer must have
            the backbone's `vocabulary_size` tokens (else a ValueError).
        config: dict. The subclass's own constructor arguments.
        compile: bool. Compile with the defaults now.
    """

    preprocessor_class = None
    token_outputs = False  # outputs have a token axis (batch, length, ...)
    needs_labels = True  # fit on raw inputs takes a label per example
    example_rank = 0  # the rank of one raw example (a string; NER's: 1, its words)
    input_names = ("texts", "pairs")  # the columns of a table it reads, in order (`kbert.tasks.table_inputs`)
    decoding_settings = ()  # constructor arguments that change only what `predict` makes of the outputs
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

    @classmethod
    def from_preset(cls, preset, preprocessor=None, sequence_length=None, compile=True, **kwargs):
        """A task model on a preset backbone, with its preprocessor, compiled with BERT's recipe.

        Args:
            preset: str or path. A name from `kbert.PRESETS` (random weights),
                "all_minilm_l6_v2" (the real checkpoint), a Hugging Face BERT folder, a kbert
                backbone folder (`apps/pretrain.py`), or a run folder of a task model. A run
                folder or Hugging Face checkpoint of this task (e.g. `BertForTokenClassification`
                for `BertTokenClassifier`) comes back whole, head and labels included, unless
                `kwargs` ask for other classes (a saved model of this task keeps its head when
                `kwargs` are only its `decoding_settings`, e.g. QA's `allow_no_answer`); another task
                gives its backbone.
            preprocessor: a `BertPreprocessor`, or None for this task's default on the
                preset's vocabulary.
            sequence_length: int or None. Tokens per input of the default preprocessor
                (None: `default_sequence_length`, at most the backbone's positions).
            compile: bool. Compile with the defaults.
            **kwargs: the task's constructor arguments (e.g. `num_classes`), and its default
                preprocessor's settings (e.g. the classifier's `doc_stride` and `train_windows`,
                QA's `doc_stride`), which also change a saved model's preprocessor.

        Example:
        >>> from kbert import BertClassifier
        >>> model = BertClassifier.from_preset("bert_tiny", num_classes=2)
        >>> model.predict(["a gripping film"], verbose=0).shape
        (1, 2)
        >>> BertClassifier.from_preset("bert_tiny", num_classes=2, doc_stride=64).preprocessor.doc_stride
        64
        """
        return load_task(cls, preset, preprocessor, sequence_length, compile, **kwargs)

    def set_decoding(self, **settings):
        """Changes the `decoding_settings` given (saved with the model), which change what `predict` makes of the
        model's outputs and nothing the model computes; a ValueError names any other.

        Example:
        >>> from kbert import BertQuestionAnswerer
        >>> model = BertQuestionAnswerer.from_preset("bert_tiny")
        >>> model.set_decoding(n_best=5)
        >>> model.n_best, model.get_config()["n_best"]
        (5, 5)
        """
        for name, value in settings.items():
            if name not in self.decoding_settings:
                raise ValueError(f"{type(self).__name__} has no decoding setting {name!r}; its are: "
                                 f"{', '.join(self.decoding_settings) or 'none'}.")
            setattr(self, name, value)
            self._arguments[name] = value

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

    def compile(self, optimizer="auto", loss="auto", metrics="auto", weighted_metrics="auto",
                learning_rate=None, jit_compile="auto", **kwargs):
        """`keras.Model.compile` with the task's defaults for every argument left "auto".

        Args:
            optimizer: "auto" for `kbert.optimizers.bert_adamw(learning_rate)`, its schedule laid
                over each `fit` (10% warmup, linear decay to 0); or any Keras optimizer. Wrapped in a
                `LossScaleOptimizer` where the backbone computes in float16.
            loss, metrics, weighted_metrics: "auto" for the task's; or as for Keras. Under a
                `keras.distribution` that splits batches, the task's default `metrics` are
                weighted, so that the rows padding a batch to the data dimension count 0.
            learning_rate: float or None. The peak rate of the "auto" optimizer (None: the
                task's `default_learning_rate`).
            jit_compile: as for Keras on TensorFlow and JAX. On torch, True is kbert's compiled
                mode: the backbone's plain-torch pass under `torch.compile`
                (`kbert.backend_speedups.torch_backbone.compiled_forward`), the head and the optimizer
                eager. A saved model keeps "auto" as "auto", so that a model saved under JAX or
                TensorFlow, where "auto" means compiled, predicts eagerly when loaded under torch.
        """
        if optimizer == "auto":
            optimizer = bert_adamw(learning_rate or self.default_learning_rate, total_steps=None)
        optimizer = loss_scaled(optimizer, self.backbone.token_embedding.compute_dtype,
                                kwargs.get("auto_scale_loss", True))
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

    def compile_from_config(self, config):
        """Compiles as the saved model was compiled (`keras.saving.load_model` calls this)."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def default_compile_arguments(self):
        """The task's default `loss`, `metrics` and `weighted_metrics`, as a dict."""
        raise NotImplementedError

    def fit(self, x=None, y=None, batch_size=None, epochs=1, validation_data=None, sample_weight=None,
            shuffle=True, shuffle_seed=None, initial_batch=0, **kwargs):
        """`keras.Model.fit`, also on raw inputs (see the class docstring); shuffles each epoch.

        On raw inputs, epoch e's order is drawn from `shuffle_seed` and e alone (None: a seed drawn
        from numpy's global generator, which `keras.utils.set_random_seed` seeds), so fits that resume
        a run at a later epoch see the uninterrupted run's batches. `initial_batch`, with
        `initial_epoch` and `epochs=initial_epoch + 1`, trains the rest of an epoch from that batch on
        (a run resumed part-way through an epoch: `kbert.training.resumable_fit`).

        `class_weight`, `{class name or id: weight}` or "balanced", weighs each example (a token classifier's each
        word) by its class through its sample weight, on raw inputs and token ids alike: the loss and the weighted
        metrics see it, as with Keras's (`kbert.tasks.class_weights`). Tasks without one class an example refuse it.
        `validation_split` holds out the last raw examples, as Keras's splits arrays.

        Under a distribution (`kbert.distribution`), the mesh is checked against the backbone first, raw
        inputs come in global batches padded to a multiple of its data dimension (`data_dimension`), and
        each torch or JAX process trains on its share (`kbert.distribution.data_shares.training_on_shares`).
        """
        if not self.compiled:
            self.compile()
        if keras.distribution.distribution() is not None:
            check_mesh(self.backbone, keras.distribution.distribution())
        arguments = task_data.fit_arguments(self, dict(
            x=x, y=y, batch_size=batch_size, epochs=epochs, validation_data=validation_data,
            sample_weight=sample_weight, shuffle=shuffle, **kwargs), shuffle_seed, initial_batch)
        plan_fit_schedule(self.optimizer, epochs - kwargs.get("initial_epoch", 0), lambda: kwargs.get(
            "steps_per_epoch") or task_data.steps_per_epoch(arguments["x"], x, arguments["batch_size"]))
        if active("tensorflow_build_first"):
            from kbert.backend_speedups.tensorflow_build_first import build_optimizer_first

            build_optimizer_first(self)
        with training_on_shares(self, arguments["x"]), fit_dropout_masks():
            return super().fit(**arguments)

    def train_step(self, *args):
        """Keras's training step (its arguments are the backend's: JAX's takes the state too); on torch with the
        speed-up `torch_train_step`, the same step on what it gathered from the model
        (`kbert.backend_speedups.torch_train_step.train_step`) where that applies."""
        if active("torch_train_step"):
            from kbert.backend_speedups.torch_train_step import train_step

            logs = train_step(self, *args)
            if logs is not None:
                return logs
        return super().train_step(*args)

    def predict_step(self, *args):
        """Keras's predict step; on torch with the speed-up `torch_predict_step`, the model's graph run without
        Keras's per-call work (`kbert.backend_speedups.torch_predict_step.predict_step`) where that applies."""
        if active("torch_predict_step"):
            from kbert.backend_speedups.torch_predict_step import predict_step

            outputs = predict_step(self, *args)
            if outputs is not None:
                return outputs
        return super().predict_step(*args)

    def predict_on_batch(self, x):
        """Keras's, on token ids (raw inputs: `predict`); on TensorFlow with the speed-up `tensorflow_open_predict`,
        its predict function traced once for batches of any size and length
        (`kbert.backend_speedups.tensorflow_open_predict.trace_for_any_shape`)."""
        task_data.check_token_ids(self, x, "predict_on_batch", "predict")
        if active("tensorflow_open_predict"):
            from kbert.backend_speedups.tensorflow_open_predict import trace_for_any_shape

            trace_for_any_shape(self, x)
        return super().predict_on_batch(x)

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        """Keras's, on token ids (raw inputs: `fit`)."""
        task_data.check_token_ids(self, x, "train_on_batch", "fit")
        return super().train_on_batch(x, y, sample_weight, class_weight, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        """Keras's, on token ids (raw inputs: `evaluate`)."""
        task_data.check_token_ids(self, x, "test_on_batch", "evaluate")
        return super().test_on_batch(x, y, sample_weight, return_dict)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """`keras.Model.evaluate`, also on raw inputs, and across JAX processes on this process's share
        of every batch (`kbert.distribution.process_share`)."""
        if not self.compiled:
            self.compile()
        arguments = task_data.evaluate_arguments(self, x, y, sample_weight, batch_size)
        with taking_process_shares(arguments["x"]):
            return super().evaluate(**arguments, **kwargs)

    def predict(self, x, batch_size=None, verbose="auto", dtype="float32", **kwargs):
        """`keras.Model.predict` on token ids; on raw inputs, what the task is for (`decode`).

        Raw inputs are served longest first in batches of similar length
        (`PaddedBatches.predict`); results come back in input order. `dtype="bfloat16"`
        computes the backbone in bfloat16 (`kbert.models.compute_dtype`), faster on
        CPUs with bfloat16 instructions.
        """
        if dtype != "float32":
            return with_compute_dtype(self, dtype).predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        if task_data.takes_as_is(self, x):
            if isinstance(x, dict):
                self.backbone.check_inputs(x)  # as `fit` does: e.g. token types a RoBERTa model has none of
            return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        return task_data.predict_raw(self, super().predict, x, batch_size, verbose, **kwargs)

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
        x = raw_inputs(self, x, call="predict")[0]
        return task_data.predict_prepared(self, runner, self.preprocessor.prepare(x), batch_size, verbose)

    def decode(self, outputs, prepared):
        """What `predict` returns on raw inputs, from the model's outputs (numpy) on `prepared`."""
        return outputs

    def take_label_names(self, y):
        """In `fit`, before `check_labels`: a model that names its classes but was given no names takes them
        from the labels `y` where it can (`BertClassifier`); here, nothing."""

    def check_labels(self, y):
        """`y` as the model's targets (e.g. class names to ids); a ValueError before training if not."""
        return y

    def weighed_classes(self, y=None):
        """The names of the classes that `fit`'s `class_weight` weighs, in id order (`kbert.tasks.class_weights`),
        for the labels `y`; a ValueError where there are none to weigh (here: a task without classes)."""
        raise ValueError(f"{type(self).__name__}.fit takes no class_weight: its examples have no class to weigh "
                         "them by.")

    def check_label_spec(self, spec):
        """A ValueError when a tf.data.Dataset's labels (their `tf.TensorSpec`) cannot be this task's."""

    def checked_labels(self, y):
        """A tf.data batch's labels, with TensorFlow checks of their values (as `check_labels`)."""
        return y

    def _check_examples(self, x, y):
        """A ValueError, before any step, for raw inputs `fit` cannot train on (`task_data.check_examples`)."""
        task_data.check_examples(self, x, y)

    def _batches(self, x, y, sample_weight, batch_size, **kwargs):
        """Raw inputs as batches of token ids and the `PaddedBatches` behind them (`task_data.raw_batches`)."""
        return task_data.raw_batches(self, x, y, sample_weight, batch_size, **kwargs)
