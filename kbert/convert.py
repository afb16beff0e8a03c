"""The only module that knows Hugging Face's names: BERT checkpoints in and out of kbert.

Reads `config.json` and `model.safetensors` with the `safetensors` numpy reader, so no
torch is needed, and refuses pickled `pytorch_model.bin` files (unpickling runs code).
Heads come with their task: `BertForSequenceClassification` <-> `BertClassifier`,
`BertForTokenClassification` <-> `BertTokenClassifier`, `BertForQuestionAnswering` <->
`BertQuestionAnswerer`, `BertForPreTraining` and `BertForMaskedLM` <-> `BertPretrainer`
(with and without its next-sentence head), `BertModel` <-> `BertBackbone`, a
sentence-transformers folder (its pooling and normalisation modules) <-> `BertSentenceEncoder`. Only
`model_type: bert` is read: RoBERTa and other relatives are refused by name.
"""

import collections
import functools
import json
import pathlib

import keras
import numpy as np

from kbert.config import BertConfig

# Hugging Face config key -> BertConfig field.
_CONFIG_FIELDS = {
    "vocab_size": "vocabulary_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "hidden_size": "hidden_dim",
    "intermediate_size": "intermediate_dim",
    "max_position_embeddings": "max_sequence_length",
    "type_vocab_size": "num_segments",
    "hidden_dropout_prob": "dropout",
    "layer_norm_eps": "layer_norm_epsilon",
    "initializer_range": "initializer_range",
}
# Keys that must hold this value, or the checkpoint is not the BERT we build.
_REQUIRED_VALUES = {
    "model_type": "bert",
    "hidden_act": "gelu",
    "position_embedding_type": "absolute",
}
# config.json's entry for a kbert task's settings that Hugging Face has no key for (`_kbert_settings`).
KBERT_SETTINGS_KEY = "kbert"
# Each setting `_kbert_settings` writes under "kbert": (the types `hf_kbert_settings` accepts, as said to people).
_KBERT_SETTING_TYPES = {
    "threshold": ((int, float), "a number"), "mask_rate": ((int, float), "a number"),
    "window_pooling": ((str,), "a string"), "train_windows": ((str,), "a string"),
    "sequence_length": ((int,), "an integer"), "n_best": ((int,), "an integer"),
    "max_answer_length": ((int,), "an integer"), "max_question_length": ((int,), "an integer"),
    "doc_stride": ((int, type(None)), "an integer or null"),
    "max_predictions": ((int, type(None)), "an integer or null"),
    "whole_word": ((bool,), "true or false"),
}
# Config keys that are not such settings: Keras's own, the parts, and what Hugging Face's keys hold.
_NOT_KBERT_SETTINGS = {"name", "trainable", "dtype", "compile", "backbone", "preprocessor", "tokenizer",
                       "num_classes", "label_names", "multi_label", "dropout", "next_sentence"}
# Bookkeeping and generation keys that do not change the encoder's function.
_IGNORED_KEYS = {
    "_name_or_path", "architectures", "transformers_version", "torch_dtype", "dtype",
    "gradient_checkpointing", "use_cache", "pad_token_id", "bos_token_id", "eos_token_id",
    "attention_probs_dropout_prob", "classifier_dropout", "id2label", "label2id",
    "output_attentions", "output_hidden_states", "return_dict", "is_decoder",
    "add_cross_attention", "chunk_size_feed_forward", "tie_word_embeddings",
    "problem_type", "finetuning_task", "tokenizer_class", "prefix", "task_specific_params", KBERT_SETTINGS_KEY,
}
# Weights a BERT checkpoint may carry that the backbone has no use for.
_UNUSED_WEIGHTS = ("embeddings.position_ids", "cls.")
# sentence-transformers' Pooling config key of each of `BertSentenceEncoder`'s poolings.
POOLING_KEYS = {"mean": "pooling_mode_mean_tokens", "cls": "pooling_mode_cls_token", "max": "pooling_mode_max_tokens"}


def _dense_head(hf_name, layer):
    """{kbert variable path: (Hugging Face weight, transposed)} of a Dense head."""
    return {f"{layer}/kernel": (f"{hf_name}.weight", True), f"{layer}/bias": (f"{hf_name}.bias", False)}


_MASKED_LM_HEAD = {
    **_dense_head("cls.predictions.transform.dense", "mlm_head/dense"),
    "mlm_head/layer_norm/gamma": ("cls.predictions.transform.LayerNorm.weight", False),
    "mlm_head/layer_norm/beta": ("cls.predictions.transform.LayerNorm.bias", False),
    "mlm_head/bias": ("cls.predictions.bias", False),
}
# Copies that Hugging Face may save of tied weights: (copy, the weight it must equal).
_TIED_COPIES = {"cls.predictions.decoder.weight": "embeddings.word_embeddings.weight",
                "cls.predictions.decoder.bias": "cls.predictions.bias"}


class _Architecture(collections.namedtuple("_Architecture", ["task", "head", "pooler"])):
    """A Hugging Face BERT class: the kbert class it loads into, its head, whether it has a pooler."""


ARCHITECTURES = {
    "BertModel": _Architecture("BertBackbone", {}, True),
    "BertForSequenceClassification": _Architecture("BertClassifier", _dense_head("classifier", "logits"), True),
    "BertForTokenClassification": _Architecture("BertTokenClassifier", _dense_head("classifier", "logits"), False),
    "BertForQuestionAnswering": _Architecture("BertQuestionAnswerer", _dense_head("qa_outputs", "span_logits"), False),
    "BertForMaskedLM": _Architecture("BertPretrainer", _MASKED_LM_HEAD, False),
    "BertForPreTraining": _Architecture(
        "BertPretrainer", {**_MASKED_LM_HEAD, **_dense_head("cls.seq_relationship", "nsp_head")}, True),
}


def read_hf_config(path):
    """Reads a Hugging Face BERT `config.json` into a `BertConfig`.

    Unknown keys and unsupported values (another activation or position type) raise,
    naming the file, rather than building a model that computes something else.

    Example:
    >>> from kbert.paths import minilm_dir
    >>> read_hf_config(minilm_dir()).hidden_dim
    384
    """
    checkpoint = _checkpoint(path)
    file, values = checkpoint.config_file, checkpoint.config
    for key, expected in _REQUIRED_VALUES.items():
        if key in values and values[key] != expected:
            raise ValueError(f"{file}: {key}={values[key]!r} is not supported; kbert needs {expected!r}.")
    unknown = sorted(set(values) - set(_CONFIG_FIELDS) - set(_REQUIRED_VALUES) - _IGNORED_KEYS)
    if unknown:
        raise ValueError(f"{file}: unknown config field(s) {unknown}; kbert does not know what they change.")
    missing = sorted(set(_CONFIG_FIELDS) - set(values) - {"hidden_dropout_prob", "layer_norm_eps", "initializer_range"})
    if missing:
        raise ValueError(f"{file}: missing config field(s) {missing}.")
    try:
        return BertConfig(**{field: values[key] for key, field in _CONFIG_FIELDS.items() if key in values})
    except ValueError as error:
        raise ValueError(f"{file}: {error}") from None


class HFCheckpoint:
    """A Hugging Face BERT checkpoint folder whose `config.json` and `model.safetensors` are each
    read once, when first asked (`config`, `weights`). Every reader of this module takes one
    in place of the folder, so that a caller reading a checkpoint's config, architecture, head
    and weights reads each file once.

    Example:
    >>> from kbert.paths import minilm_dir
    >>> HFCheckpoint(minilm_dir()).config["num_hidden_layers"]
    6
    """

    def __init__(self, folder):
        self.folder = pathlib.Path(folder)
        if not self.folder.is_dir():
            raise FileNotFoundError(f"{self.folder}: checkpoint folder not found.")
        self.config_file = self.folder / "config.json"
        self.weights_file = self.folder / "model.safetensors"

    @functools.cached_property
    def config(self):
        """config.json as a dict."""
        if not self.config_file.is_file():
            raise FileNotFoundError(f"{self.config_file}: no config.json in the checkpoint folder.")
        return json.loads(self.config_file.read_text("utf-8"))

    @functools.cached_property
    def weights(self):
        """model.safetensors as {name: numpy array}, the encoder's names without the "bert." of task
        checkpoints; a pickled `.bin`, a damaged file or a weight that is not finite is refused."""
        from safetensors.numpy import load_file

        file = self.weights_file
        if not file.is_file():
            pickled = [p.name for p in self.folder.glob("*.bin")]
            hint = (
                f" It holds {pickled}: pickled torch files run code when loaded, so kbert does not read "
                "them; convert once with `safetensors` in a trusted environment." if pickled else ""
            )
            raise FileNotFoundError(f"{file}: no model.safetensors in the checkpoint folder.{hint}")
        try:
            weights = load_file(str(file))
        except Exception as error:  # safetensors' SafetensorError: a truncated or damaged file
            raise ValueError(f"{file}: not a readable safetensors file ({error}).") from None
        not_finite = [key for key, value in weights.items()
                      if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all()]
        if not_finite:
            raise ValueError(f"{file}: {len(not_finite)} weight(s) hold NaN or infinite values, e.g. "
                             f"{not_finite[:3]}: a model made from them predicts NaN.")
        # BertForPreTraining and task checkpoints prefix the encoder with "bert.".
        return {key.removeprefix("bert."): value for key, value in weights.items()}


def read_hf_weights(path):
    """Reads `model.safetensors` from a checkpoint folder (or `HFCheckpoint`) as a dict of numpy arrays."""
    return _checkpoint(path).weights


def read_hf_architecture(path):
    """The Hugging Face class a checkpoint folder was saved from: a key of `ARCHITECTURES`
    (`BertModel` when config.json names none).

    Example:
    >>> from kbert.paths import minilm_dir
    >>> read_hf_architecture(minilm_dir())
    'BertModel'
    """
    checkpoint = _checkpoint(path)
    file, names = checkpoint.config_file, checkpoint.config.get("architectures") or ["BertModel"]
    if len(names) != 1 or names[0] not in ARCHITECTURES:
        raise ValueError(f"{file}: architectures={names} is not supported; kbert reads one of "
                         f"{sorted(ARCHITECTURES)}.")
    return names[0]


def hf_task_arguments(path):
    """`(kbert class name, constructor arguments)` of the task model a checkpoint folder holds.

    Classes come from `id2label` (a regressor for `problem_type: regression`, or one label
    and no problem type; multi-label for `multi_label_classification`); the pretrainer
    predicts the next sentence for `BertForPreTraining`.

    Example:
    >>> from kbert.paths import minilm_dir
    >>> hf_task_arguments(minilm_dir())
    ('BertBackbone', {})
    """
    checkpoint = _checkpoint(path)
    architecture = read_hf_architecture(checkpoint)
    task = ARCHITECTURES[architecture].task
    file, values = checkpoint.config_file, checkpoint.config
    dropout = values.get("classifier_dropout")
    dropout = {} if dropout is None else {"dropout": dropout}
    labels = [str(name) for _, name in sorted(
        (int(i), name) for i, name in (values.get("id2label") or {"0": "LABEL_0", "1": "LABEL_1"}).items())]
    if task == "BertClassifier":
        problem = values.get("problem_type")
        if problem not in (None, "regression", "single_label_classification", "multi_label_classification"):
            raise ValueError(f"{file}: problem_type={problem!r} is not supported; kbert classifies "
                             "into one class, into any number of them, or scores (regression).")
        if problem == "regression" or (problem is None and len(labels) == 1):
            return task, {"num_classes": 1, "multi_label": False, **dropout}
        return task, {"num_classes": len(labels), "label_names": labels,
                      "multi_label": problem == "multi_label_classification", **dropout}
    if task == "BertTokenClassifier":
        return task, {"label_names": labels, **dropout}
    if task == "BertPretrainer":
        return task, {"next_sentence": architecture == "BertForPreTraining"}
    return task, {}


def hf_kbert_settings(path):
    """`(task settings, preprocessor settings)`: what kbert wrote under "kbert" in a task's config.json
    (`save_hf`) that Hugging Face has no key for, such as a multi-label threshold or the windows a classifier
    reads long texts through; two empty dicts for other checkpoints.

    Example:
    >>> import tempfile, kbert
    >>> folder = tempfile.mkdtemp()
    >>> model = kbert.BertClassifier.from_preset("bert_tiny", num_classes=3, multi_label=True, threshold=0.4)
    >>> save_hf(model, folder)
    >>> hf_kbert_settings(folder)[0]["threshold"], hf_kbert_settings(folder)[1]["sequence_length"]
    (0.4, 128)
    """
    checkpoint = _checkpoint(path)
    settings = checkpoint.config.get(KBERT_SETTINGS_KEY) or {}
    where = f"{checkpoint.config_file}: {KBERT_SETTINGS_KEY}"
    _check_setting(where, settings, (dict,), 'an object {"task": {...}, "preprocessor": {...}}')
    parts = []
    for part in ("task", "preprocessor"):
        values = settings.get(part, {})
        _check_setting(f"{where}.{part}", values, (dict,), "an object of settings")
        for name, value in values.items():
            if name not in _KBERT_SETTING_TYPES:
                raise ValueError(f"{where}.{part}.{name} is not a setting kbert writes; expected one of "
                                 f"{', '.join(sorted(_KBERT_SETTING_TYPES))}.")
            _check_setting(f"{where}.{part}.{name}", value, *_KBERT_SETTING_TYPES[name])
        parts.append(dict(values))
    return tuple(parts)


def _check_setting(where, value, types, expected):
    """Raises a ValueError naming `where` (the file and the field) unless `value` is of one of `types` (bool is no
    number here, though Python makes it an int).

    Example:
    >>> _check_setting("config.json: kbert.task.threshold", "0.4", (int, float), "a number")
    Traceback (most recent call last):
    ValueError: config.json: kbert.task.threshold is '0.4' (a string); expected a number.
    """
    if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
        return
    kinds = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "a list",
             dict: "an object", type(None): "null"}
    raise ValueError(f"{where} is {value!r} ({kinds.get(type(value), type(value).__name__)}); expected {expected}.")


def _encoder_weights(num_layers, pooler=True):
    """`(Hugging Face name, kbert path, kind)` of each part of the encoder, for both directions.

    Kinds: "table" (an embedding), "norm" (LayerNorm: weight, bias <-> gamma, beta), "dense"
    (weight, transposed as torch stores (out, in), and bias) and "qkv" (query, key and value
    denses <-> one fused `qkv_dense`).
    """
    parts = [("embeddings.word_embeddings", "token_embedding", "table"),
             ("embeddings.token_type_embeddings", "segment_embedding", "table"),
             ("embeddings.position_embeddings", "position_embedding", "table"),
             ("embeddings.LayerNorm", "embeddings_layer_norm", "norm")]
    if pooler:
        parts.append(("pooler.dense", "pooled_dense", "dense"))
    for i in range(num_layers):
        hf, kb = f"encoder.layer.{i}", f"transformer_layer_{i}"
        parts += [(f"{hf}.attention.self", f"{kb}/self_attention/qkv_dense", "qkv"),
                  (f"{hf}.attention.output.dense", f"{kb}/self_attention/output_dense", "dense"),
                  (f"{hf}.attention.output.LayerNorm", f"{kb}/attention_layer_norm", "norm"),
                  (f"{hf}.intermediate.dense", f"{kb}/intermediate_dense", "dense"),
                  (f"{hf}.output.dense", f"{kb}/output_dense", "dense"),
                  (f"{hf}.output.LayerNorm", f"{kb}/output_layer_norm", "norm")]
    return parts


def hf_to_kbert_weights(hf_weights, num_layers, pooler=True):
    """Maps Hugging Face BERT weight names and layouts to kbert variable paths.

    `pooler=False` leaves out the pooler (token and masked-LM checkpoints have none).
    """
    def take(key):
        if key not in hf_weights:
            raise KeyError(key)
        return np.asarray(hf_weights[key])

    weights = {}
    for hf, kb, kind in _encoder_weights(num_layers, pooler):
        if kind == "table":
            weights[f"{kb}/embeddings"] = take(f"{hf}.weight")
        elif kind == "norm":
            weights.update({f"{kb}/gamma": take(f"{hf}.weight"), f"{kb}/beta": take(f"{hf}.bias")})
        else:
            names = [f"{hf}.{part}" for part in ("query", "key", "value")] if kind == "qkv" else [hf]
            weights[f"{kb}/kernel"] = np.concatenate([take(f"{name}.weight").T for name in names], axis=1)
            weights[f"{kb}/bias"] = np.concatenate([take(f"{name}.bias") for name in names])
    return weights


def kbert_to_hf_weights(values, num_layers, pooler=True):
    """The inverse of `hf_to_kbert_weights`: {kbert path: array} to Hugging Face names."""
    weights = {}
    for hf, kb, kind in _encoder_weights(num_layers, pooler):
        if kind == "table":
            weights[f"{hf}.weight"] = values[f"{kb}/embeddings"]
        elif kind == "norm":
            weights.update({f"{hf}.weight": values[f"{kb}/gamma"], f"{hf}.bias": values[f"{kb}/beta"]})
        else:
            names = [f"{hf}.{part}" for part in ("query", "key", "value")] if kind == "qkv" else [hf]
            kernels = np.split(values[f"{kb}/kernel"], len(names), axis=1)
            biases = np.split(values[f"{kb}/bias"], len(names))
            for name, kernel, bias in zip(names, kernels, biases):
                weights.update({f"{name}.weight": kernel.T, f"{name}.bias": bias})
    return weights


def assign_weights(variables, weights, source="weights", optional=()):
    """Assigns a {variable path: array} dict to {variable path: variable}: all of it or nothing.

    Every variable must get a value of its exact shape (those starting with a prefix in
    `optional` may keep theirs), and every value a variable.
    """
    missing = sorted(path for path in set(variables) - set(weights) if not path.startswith(tuple(optional)))
    unexpected = sorted(set(weights) - set(variables))
    if missing or unexpected:
        raise ValueError(f"{source}: missing weights {missing[:5]}, unexpected weights {unexpected[:5]}.")
    for path, value in weights.items():
        if tuple(variables[path].shape) != value.shape:
            raise ValueError(
                f"{source}: weight {path} has shape {value.shape}; the model expects "
                f"{tuple(variables[path].shape)}."
            )
    for path, value in weights.items():
        variables[path].assign(value)


def load_hf_weights(backbone, path):
    """Loads the encoder of a Hugging Face BERT checkpoint folder into a `kbert.BertBackbone`.

    A task checkpoint's head is left out (`load_hf_head` loads it into its task model); a
    checkpoint without a pooler leaves the backbone's as it is.
    """
    checkpoint = _checkpoint(path)
    file = checkpoint.weights_file
    architecture = ARCHITECTURES[read_hf_architecture(checkpoint)]
    hf_weights = checkpoint.weights
    head = {name for name, _ in architecture.head.values()} | set(_TIED_COPIES)
    unused = sorted(k for k in hf_weights if not k.startswith(("encoder.", "embeddings.", "pooler."))
                    and k not in head and not k.startswith(_UNUSED_WEIGHTS))
    if unused:
        raise ValueError(f"{file}: weights {unused[:5]} are not part of a BERT encoder.")
    pooler = architecture.pooler or "pooler.dense.weight" in hf_weights
    try:
        weights = hf_to_kbert_weights(hf_weights, backbone.num_layers, pooler)
    except KeyError as error:
        raise ValueError(f"{file}: missing weight {error.args[0]!r}.") from None
    known = _hf_names(backbone.num_layers) | head
    extra = sorted(k for k in hf_weights if k not in known and not k.startswith(_UNUSED_WEIGHTS))
    if extra:
        raise ValueError(f"{file}: weights {extra[:5]} do not fit a {backbone.num_layers}-layer BERT.")
    variables = {v.path.removeprefix(f"{backbone.name}/"): v for v in backbone.weights}
    assign_weights(variables, weights, str(file), optional=() if pooler else ("pooled_dense/",))


def load_hf_head(model, path):
    """Loads the head of a Hugging Face task checkpoint into the kbert task model of its class.

    All of the head or nothing: each weight must be there with the shape `model` has.
    """
    checkpoint = _checkpoint(path)
    file = checkpoint.weights_file
    architecture = read_hf_architecture(checkpoint)
    head = ARCHITECTURES[architecture].head
    hf_weights = checkpoint.weights
    missing = sorted(name for name, _ in head.values() if name not in hf_weights)
    if missing:
        raise ValueError(f"{file}: missing head weight(s) {missing} of a {architecture}.")
    for copy, original in _TIED_COPIES.items():
        if copy in hf_weights and original in hf_weights and not np.array_equal(
                hf_weights[copy], hf_weights[original]):
            raise ValueError(f"{file}: {copy} differs from {original}; kbert ties the two.")
    weights = {kbert: np.asarray(hf_weights[name]).T if transposed else np.asarray(hf_weights[name])
               for kbert, (name, transposed) in head.items()}
    layers = {kbert.split("/")[0] for kbert in head}
    variables = {v.path: v for v in model.weights if v.path.split("/")[0] in layers}
    assign_weights(variables, weights, str(file))


def save_hf(model, path, tokenizer=None):
    """Writes a kbert backbone or task model as a Hugging Face folder that `transformers` loads.

    The folder holds `config.json`, `model.safetensors` and, with a `tokenizer` (a task's
    own by default), `vocab.txt` and `tokenizer_config.json`: `AutoModel...from_pretrained`
    of the matching class (`BertModel`, `BertForSequenceClassification`, ...) computes what
    `model` computes. `BertTask.export_to_transformers` calls this.

    Example:
    >>> import tempfile, kbert
    >>> folder = tempfile.mkdtemp()
    >>> save_hf(kbert.BertClassifier.from_preset("bert_tiny", num_classes=3), folder)
    >>> read_hf_architecture(folder), hf_task_arguments(folder)[1]["num_classes"]
    ('BertForSequenceClassification', 3)
    """
    from safetensors.numpy import save_file

    architecture = _architecture_of(model)
    backbone = model if architecture == "BertModel" else model.backbone
    pooler = ARCHITECTURES[architecture].pooler
    values = {v.path: keras.ops.convert_to_numpy(v) for v in model.weights}
    if architecture != "BertModel":
        values.update({v.path.removeprefix(f"{backbone.name}/"): keras.ops.convert_to_numpy(v)
                       for v in backbone.weights})
    weights = kbert_to_hf_weights(values, backbone.num_layers, pooler)
    prefix = "" if architecture == "BertModel" else "bert."
    weights = {prefix + name: value for name, value in weights.items()}
    weights.update({name: values[kbert].T if transposed else values[kbert]
                    for kbert, (name, transposed) in ARCHITECTURES[architecture].head.items()})
    folder = pathlib.Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({name: np.ascontiguousarray(value, "float32") for name, value in weights.items()},
              str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = {"architectures": [architecture], **_hf_config(backbone), **_hf_head_config(model)}
    if architecture != "BertModel":
        config[KBERT_SETTINGS_KEY] = _kbert_settings(model)
    (folder / "config.json").write_text(json.dumps(config, indent=2), "utf-8")
    tokenizer = tokenizer or getattr(getattr(model, "preprocessor", None), "tokenizer", None)
    if tokenizer is not None:
        tokenizer.save(folder)


def _architecture_of(model):
    """The Hugging Face class of a kbert model (`ARCHITECTURES` backwards)."""
    kind = type(model).__name__
    if kind == "BertPretrainer":
        return "BertForPreTraining" if model.next_sentence else "BertForMaskedLM"
    for architecture, (task, _, _) in ARCHITECTURES.items():
        if task == kind:
            return architecture
    raise TypeError(f"{kind} has no Hugging Face counterpart; kbert writes "
                    f"{sorted({a.task for a in ARCHITECTURES.values()})}.")


def _hf_config(backbone):
    """Hugging Face's config.json of a backbone (`read_hf_config` backwards)."""
    config = backbone.get_config()
    values = {key: config[field] for key, field in _CONFIG_FIELDS.items()}
    return {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute",
            **values, "attention_probs_dropout_prob": config["dropout"], "pad_token_id": 0}


def _hf_head_config(model):
    """The label keys of a task model's config.json."""
    label_names = getattr(model, "label_names", None)
    if getattr(model, "num_classes", None) == 1:
        return {"problem_type": "regression", "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0},
                "classifier_dropout": model.dropout}
    if label_names is None and hasattr(model, "num_classes"):
        label_names = [f"LABEL_{i}" for i in range(model.num_classes)]
    if label_names is None:
        return {}
    problem = {"problem_type": "multi_label_classification"} if getattr(model, "multi_label", False) else {}
    return {**problem, "id2label": {str(i): name for i, name in enumerate(label_names)},
            "label2id": {name: i for i, name in enumerate(label_names)},
            "classifier_dropout": model.dropout}


def _kbert_settings(model):
    """A task model's settings that Hugging Face's keys do not hold: the task's (a threshold, how a classifier
    pools its windows, QA's answer limits) and its preprocessor's (sequence length, windows), for the "kbert"
    entry of config.json (`hf_kbert_settings` reads them back; `transformers` keeps them as an attribute)."""
    settings = {"task": _settings_of(model)}
    preprocessor = getattr(model, "preprocessor", None)
    if type(preprocessor) is model.preprocessor_class:  # another class may not take the same settings
        settings["preprocessor"] = _settings_of(preprocessor)
    return settings


def _settings_of(layer):
    return {key: value for key, value in layer.get_config().items() if key not in _NOT_KBERT_SETTINGS}


def _hf_names(num_layers):
    """The Hugging Face names of a `num_layers` encoder's weights, pooler included."""
    return set(kbert_to_hf_weights(collections.defaultdict(lambda: np.zeros((3, 3))), num_layers))


def _checkpoint(path):
    """`path` as an `HFCheckpoint` (one given is returned as it is, with what it has read)."""
    return path if isinstance(path, HFCheckpoint) else HFCheckpoint(path)


def read_sentence_transformers_settings(folder):
    """`{"pooling", "normalize", "sequence_length"}` of the sentence-transformers folder `folder` (its
    `modules.json`, the Pooling module's config.json, `sentence_bert_config.json`), {} for a plain Hugging
    Face folder. Modules kbert does not compute (a Dense layer, sqrt-length pooling, ...) are refused,
    naming the file: the embeddings would differ from sentence-transformers' without a word.

    Example:
    >>> from kbert.paths import minilm_dir
    >>> read_sentence_transformers_settings(minilm_dir())
    {'pooling': 'mean', 'normalize': True, 'sequence_length': 256}
    """
    folder = pathlib.Path(folder)
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return {}
    modules = {module["type"].rsplit(".", 1)[-1]: folder / module["path"] for module in json.loads(
        modules_file.read_text("utf-8"))}
    unknown = sorted(set(modules) - {"Transformer", "Pooling", "Normalize"})
    if unknown or "Pooling" not in modules:
        raise ValueError(f"{modules_file}: modules {unknown or ['no Pooling']} are not kbert's; BertSentenceEncoder "
                         "computes a Transformer, a Pooling (mean, cls or max) and an optional Normalize.")
    pooling_file = modules["Pooling"] / "config.json"
    pooling = json.loads(pooling_file.read_text("utf-8"))
    modes = [name for name, key in POOLING_KEYS.items() if pooling.get(key)]
    others = sorted(key for key, value in pooling.items()
                    if key.startswith("pooling_mode_") and value and key not in POOLING_KEYS.values())
    if len(modes) != 1 or others:
        raise ValueError(f"{pooling_file}: pooling modes {modes + others} are not one of {list(POOLING_KEYS)}.")
    settings = {"pooling": modes[0], "normalize": "Normalize" in modules}
    config_file = folder / "sentence_bert_config.json"
    if config_file.is_file():
        length = json.loads(config_file.read_text("utf-8")).get("max_seq_length")
        if length:
            settings["sequence_length"] = int(length)
    return settings


def write_sentence_transformers_modules(path, pooling, normalize, hidden_dim, max_seq_length):
    """Makes the Hugging Face `BertModel` folder `path` a sentence-transformers one: `modules.json`, a
    Pooling module (`pooling`: one of `POOLING_KEYS`), a Normalize module if `normalize`, and
    `sentence_bert_config.json`; what `read_sentence_transformers_settings` reads back.

    Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> write_sentence_transformers_modules(folder, "cls", False, hidden_dim=8, max_seq_length=64)
    >>> read_sentence_transformers_settings(folder)
    {'pooling': 'cls', 'normalize': False, 'sequence_length': 64}
    """
    folder = pathlib.Path(path)
    modules = [("", "Transformer"), ("1_Pooling", "Pooling")] + [("2_Normalize", "Normalize")] * normalize
    (folder / "modules.json").write_text(json.dumps(
        [{"idx": i, "name": str(i), "path": where, "type": f"sentence_transformers.models.{kind}"}
         for i, (where, kind) in enumerate(modules)], indent=2))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": hidden_dim, **{key: pooling == name for name, key in POOLING_KEYS.items()},
        "pooling_mode_mean_sqrt_len_tokens": False}, indent=2))
    if normalize:
        (folder / "2_Normalize").mkdir(exist_ok=True)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq_length,
                                                                  "do_lower_case": False}))
