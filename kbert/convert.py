"""With `kbert.hf_families`, the only modules that know Hugging Face's names: checkpoints of BERT and its family
in and out of kbert.

Reads `config.json` and `model.safetensors` with the `safetensors` numpy reader, so no
torch is needed, and refuses pickled `pytorch_model.bin` files (unpickling runs code).
Heads come with their task: `BertForSequenceClassification` <-> `BertClassifier`,
`BertForTokenClassification` <-> `BertTokenClassifier`, `BertForQuestionAnswering` <->
`BertQuestionAnswerer`, `BertForPreTraining` and `BertForMaskedLM` <-> `BertPretrainer`
(with and without its next-sentence head), `BertModel` <-> `BertBackbone`, a
sentence-transformers folder (its pooling and normalisation modules) <-> `BertSentenceEncoder`.
The same classes of RoBERTa, ALBERT, ELECTRA and DistilBERT (`RobertaModel`, `RobertaForSequenceClassification`,
..., `DistilBertForMaskedLM`) <-> the same kbert models on a backbone of that family, with that family's heads;
their other classes (`ElectraForPreTraining`, `AlbertForPreTraining`, `...ForMultipleChoice`) are refused by name,
as is every other `model_type` (DeBERTa, XLM-R, ...).
"""

import collections
import functools
import json
import pathlib

import keras
import numpy as np

from kbert.config import FAMILIES, BertConfig
from kbert.hf_families import KBERT_SETTINGS_KEY, config_fields, encoder_weights, family_of, hf_config_values

# Each setting `_kbert_settings` writes under "kbert": (the types `hf_kbert_settings` accepts, as said to people).
_KBERT_SETTING_TYPES = {
    "threshold": ((int, float), "a number"), "mask_rate": ((int, float), "a number"),
    "window_pooling": ((str,), "a string"), "train_windows": ((str,), "a string"),
    "sequence_length": ((int,), "an integer"), "n_best": ((int,), "an integer"),
    "max_answer_length": ((int,), "an integer"), "max_question_length": ((int,), "an integer"),
    "doc_stride": ((int, type(None)), "an integer or null"),
    "max_predictions": ((int, type(None)), "an integer or null"),
    "whole_word": ((bool,), "true or false"), "allow_no_answer": ((bool,), "true or false"),
    "no_answer_threshold": ((int, float), "a number"),
}
# Config keys that are not such settings: Keras's own, the parts, and what Hugging Face's keys hold.
_NOT_KBERT_SETTINGS = {"name", "trainable", "dtype", "compile", "backbone", "preprocessor", "tokenizer",
                       "num_classes", "label_names", "multi_label", "dropout", "next_sentence", "span_boundary"}
# Weights a BERT checkpoint may carry that the backbone has no use for.
_UNUSED_WEIGHTS = ("embeddings.position_ids", "cls.")
# sentence-transformers' Pooling config key of each of `BertSentenceEncoder`'s poolings.
POOLING_KEYS = {"mean": "pooling_mode_mean_tokens", "cls": "pooling_mode_cls_token", "max": "pooling_mode_max_tokens"}


def _dense_head(hf_name, layer):
    """{kbert variable path: (Hugging Face weight, transposed)} of a Dense head."""
    return {f"{layer}/kernel": (f"{hf_name}.weight", True), f"{layer}/bias": (f"{hf_name}.bias", False)}


def _masked_lm_head(dense, layer_norm, bias):
    """{kbert variable path: (Hugging Face weight, transposed)} of a masked-LM head (`kbert.layers.MaskedLMHead`):
    its transform's dense layer and LayerNorm, and its output bias (the decoder is tied to the word embeddings)."""
    return {**_dense_head(dense, "mlm_head/dense"), "mlm_head/layer_norm/gamma": (f"{layer_norm}.weight", False),
            "mlm_head/layer_norm/beta": (f"{layer_norm}.bias", False), "mlm_head/bias": (bias, False)}


# Each family's heads by Hugging Face's names: masked LM; sequence classification, and whether it has the pooler
# (BERT's and ALBERT's read it; the others' the first token through `head_dense`:
# `kbert.tasks.bert_classifier.FIRST_TOKEN_HEADS`).
_MASKED_LM_HEADS = {
    "bert": _masked_lm_head("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                            "cls.predictions.bias"),
    "roberta": _masked_lm_head("lm_head.dense", "lm_head.layer_norm", "lm_head.bias"),
    "albert": _masked_lm_head("predictions.dense", "predictions.LayerNorm", "predictions.bias"),
    "electra": _masked_lm_head("generator_predictions.dense", "generator_predictions.LayerNorm",
                               "generator_lm_head.bias"),
    "distilbert": _masked_lm_head("vocab_transform", "vocab_layer_norm", "vocab_projector.bias"),
}
_FIRST_TOKEN_CLASSIFIER = {**_dense_head("classifier.dense", "head_dense"),
                           **_dense_head("classifier.out_proj", "logits")}
_CLASSIFIERS = {"bert": (_dense_head("classifier", "logits"), True), "roberta": (_FIRST_TOKEN_CLASSIFIER, False),
                "albert": (_dense_head("classifier", "logits"), True), "electra": (_FIRST_TOKEN_CLASSIFIER, False),
                "distilbert": ({**_dense_head("pre_classifier", "head_dense"), **_dense_head("classifier", "logits")},
                               False)}
# Copies that Hugging Face may save of tied weights: (copy, the weight it must equal).
_WORDS = "embeddings.word_embeddings.weight"
_TIED_COPIES = {"cls.predictions.decoder.weight": _WORDS, "cls.predictions.decoder.bias": "cls.predictions.bias",
                "lm_head.decoder.weight": _WORDS, "lm_head.decoder.bias": "lm_head.bias",
                "predictions.decoder.weight": _WORDS, "predictions.decoder.bias": "predictions.bias",
                "generator_lm_head.weight": _WORDS, "vocab_projector.weight": _WORDS}


class _Architecture(collections.namedtuple("_Architecture", ["task", "head", "pooler", "family"])):
    """A Hugging Face class: the kbert class it loads into, its head, whether it has a pooler, its family."""


def _architectures():
    """{Hugging Face class: `_Architecture`} of every class kbert reads and writes: each family's base model,
    sequence and token classifiers, question answerer and masked LM, and BERT's pretraining model."""
    rows = {}
    for model_type in FAMILIES:
        family = family_of({"model_type": model_type}, "config")
        classifier, reads_pooler = _CLASSIFIERS[model_type]
        rows.update({
            family.base_class: _Architecture("BertBackbone", {}, family.pooler is not None, model_type),
            f"{family.class_prefix}ForSequenceClassification": _Architecture(
                "BertClassifier", classifier, reads_pooler, model_type),
            f"{family.class_prefix}ForTokenClassification": _Architecture(
                "BertTokenClassifier", _dense_head("classifier", "logits"), False, model_type),
            f"{family.class_prefix}ForQuestionAnswering": _Architecture(
                "BertQuestionAnswerer", _dense_head("qa_outputs", "span_logits"), False, model_type),
            f"{family.class_prefix}ForMaskedLM": _Architecture(
                "BertPretrainer", _MASKED_LM_HEADS[model_type], False, model_type),
        })
    rows["BertForPreTraining"] = _Architecture(
        "BertPretrainer", {**_MASKED_LM_HEADS["bert"], **_dense_head("cls.seq_relationship", "nsp_head")}, True, "bert")
    return rows


ARCHITECTURES = _architectures()


def read_hf_config(path):
    """Reads a Hugging Face `config.json` of BERT or its family (`kbert.config.FAMILIES`) into a `BertConfig`.

    Unknown keys and unsupported values (another activation or position type) raise,
    naming the file, rather than building a model that computes something else (`kbert.hf_families.config_fields`).

    Example:
    >>> from kbert.paths import minilm_dir
    >>> read_hf_config(minilm_dir()).hidden_dim
    384
    """
    checkpoint = _checkpoint(path)
    file = checkpoint.config_file
    fields = config_fields(checkpoint.config, file)
    try:
        return BertConfig(**fields)
    except ValueError as error:
        raise ValueError(f"{file}: {error}") from None


class HFCheckpoint:
    """A Hugging Face checkpoint folder (BERT or its family) whose `config.json` and `model.safetensors` are each
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
        """model.safetensors as {name: numpy array}, the encoder's names without the "bert." (the family's
        "roberta.", ...) of task checkpoints; a pickled `.bin`, a damaged file or a weight that is not finite
        is refused."""
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
        # BertForPreTraining and task checkpoints prefix the encoder with "bert." (RobertaFor... "roberta.", ...).
        prefix = family_of(self.config, self.config_file).weight_prefix
        return {key.removeprefix(prefix): value for key, value in weights.items()}


def read_hf_weights(path):
    """Reads `model.safetensors` from a checkpoint folder (or `HFCheckpoint`) as a dict of numpy arrays."""
    return _checkpoint(path).weights


def read_hf_architecture(path):
    """The Hugging Face class a checkpoint folder was saved from: a key of `ARCHITECTURES` of its
    config's family (the family's base class, e.g. `BertModel`, when config.json names none).

    Example:
    >>> from kbert.paths import minilm_dir
    >>> read_hf_architecture(minilm_dir())
    'BertModel'
    """
    checkpoint = _checkpoint(path)
    family = family_of(checkpoint.config, checkpoint.config_file)
    file, names = checkpoint.config_file, checkpoint.config.get("architectures") or [family.base_class]
    if len(names) == 1 and names[0] in ARCHITECTURES and ARCHITECTURES[names[0]].family == family.model_type:
        return names[0]
    readable = [name for name, architecture in ARCHITECTURES.items() if architecture.family == family.model_type]
    raise ValueError(f"{file}: architectures={names} is not supported for model_type {family.model_type!r}; "
                     f"kbert reads one of {readable}.")


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
    dropout = values.get(family_of(values, file).classifier_dropout)
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


def hf_to_kbert_weights(hf_weights, config, pooler=True):
    """Maps the Hugging Face weight names and layouts of `config`'s family (`kbert.hf_families.encoder_weights`)
    to kbert variable paths.

    `pooler=False` leaves out the pooler (token and masked-LM checkpoints have none).
    """
    def take(key):
        if key not in hf_weights:
            raise KeyError(key)
        return np.asarray(hf_weights[key])

    weights = {}
    for hf, kb, kind in encoder_weights(config, pooler):
        if kind == "table":
            weights[f"{kb}/embeddings"] = take(f"{hf}.weight")
        elif kind == "norm":
            weights.update({f"{kb}/gamma": take(f"{hf}.weight"), f"{kb}/beta": take(f"{hf}.bias")})
        else:
            names = hf if kind == "qkv" else [hf]
            weights[f"{kb}/kernel"] = np.concatenate([take(f"{name}.weight").T for name in names], axis=1)
            weights[f"{kb}/bias"] = np.concatenate([take(f"{name}.bias") for name in names])
    return weights


def kbert_to_hf_weights(values, config, pooler=True):
    """The inverse of `hf_to_kbert_weights`: {kbert path: array} to the Hugging Face names of `config`'s family."""
    weights = {}
    for hf, kb, kind in encoder_weights(config, pooler):
        if kind == "table":
            weights[f"{hf}.weight"] = values[f"{kb}/embeddings"]
        elif kind == "norm":
            weights.update({f"{hf}.weight": values[f"{kb}/gamma"], f"{hf}.bias": values[f"{kb}/beta"]})
        else:
            names = hf if kind == "qkv" else [hf]
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
    """Loads the encoder of a Hugging Face checkpoint folder (BERT or its family) into a `kbert.BertBackbone`.

    A task checkpoint's head is left out (`load_hf_head` loads it into its task model); a
    checkpoint without a pooler leaves the backbone's as it is.
    """
    checkpoint = _checkpoint(path)
    file = checkpoint.weights_file
    architecture = ARCHITECTURES[read_hf_architecture(checkpoint)]
    hf_weights = checkpoint.weights
    config = backbone.config
    head = {name for name, _ in architecture.head.values()} | set(_TIED_COPIES)
    known = _hf_names(config)
    roots = {name.split(".")[0] + "." for name in known}  # embeddings., encoder., pooler. (BERT's)
    unused = sorted(k for k in hf_weights if not k.startswith(tuple(roots))
                    and k not in head and not k.startswith(_UNUSED_WEIGHTS))
    if unused:
        raise ValueError(f"{file}: weights {unused[:5]} are not part of a {config.family} encoder.")
    pooled = [name for name, path, _ in encoder_weights(config) if path == "pooled_dense"]
    pooler = bool(pooled) and (architecture.pooler or f"{pooled[0]}.weight" in hf_weights)
    try:
        weights = hf_to_kbert_weights(hf_weights, config, pooler)
    except KeyError as error:
        raise ValueError(f"{file}: missing weight {error.args[0]!r}.") from None
    extra = sorted(k for k in hf_weights if k not in known | head and not k.startswith(_UNUSED_WEIGHTS))
    if extra:
        raise ValueError(f"{file}: weights {extra[:5]} do not fit a {backbone.num_layers}-layer {config.family}"
                         f"{f' of {config.num_layer_groups} layer group(s)' if config.num_layer_groups else ''}.")
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
    own by default), its files, whose `model_max_length` is the task's sequence length (the
    backbone's positions for a backbone): `AutoModel...from_pretrained` of the matching class (`BertModel`,
    `BertForSequenceClassification`, ..., another family's: `RobertaModel`, `RobertaForSequenceClassification`, ...)
    computes what `model` computes. `BertTask.export_to_transformers` calls this.

    Example:
    >>> import tempfile, kbert
    >>> folder = tempfile.mkdtemp()
    >>> save_hf(kbert.BertClassifier.from_preset("bert_tiny", num_classes=3), folder)
    >>> read_hf_architecture(folder), hf_task_arguments(folder)[1]["num_classes"]
    ('BertForSequenceClassification', 3)
    """
    from safetensors.numpy import save_file

    architecture = _architecture_of(model)
    encoder_alone = ARCHITECTURES[architecture].task == "BertBackbone"
    backbone = model if encoder_alone else model.backbone
    config_values = hf_config_values(backbone.config)  # before any file: refuses what the family cannot hold
    pooler = ARCHITECTURES[architecture].pooler
    values = {v.path: keras.ops.convert_to_numpy(v) for v in model.weights}
    if not encoder_alone:
        values.update({v.path.removeprefix(f"{backbone.name}/"): keras.ops.convert_to_numpy(v)
                       for v in backbone.weights})
    weights = kbert_to_hf_weights(values, backbone.config, pooler)
    prefix = "" if encoder_alone else family_of(config_values, "config").weight_prefix
    weights = {prefix + name: value for name, value in weights.items()}
    weights.update({name: values[kbert].T if transposed else values[kbert]
                    for kbert, (name, transposed) in ARCHITECTURES[architecture].head.items()})
    folder = pathlib.Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({name: np.ascontiguousarray(value, "float32") for name, value in weights.items()},
              str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = {"architectures": [architecture], **config_values, **_hf_head_config(model)}
    if not encoder_alone:
        config[KBERT_SETTINGS_KEY] = _kbert_settings(model)
    (folder / "config.json").write_text(json.dumps(config, indent=2), "utf-8")
    preprocessor = getattr(model, "preprocessor", None)
    tokenizer = tokenizer or getattr(preprocessor, "tokenizer", None)
    if tokenizer is not None:
        tokenizer.save(folder)
        # The tokens Hugging Face's tokenizer keeps under truncation=True (its pipelines truncate so): what the task
        # reads, or the backbone's positions. Without it the tokenizer truncates nothing, and a long text fails.
        length = preprocessor.sequence_length if preprocessor is not None else backbone.max_sequence_length
        tokenizer_config = folder / "tokenizer_config.json"
        config = {**json.loads(tokenizer_config.read_text("utf-8")), "model_max_length": int(length)}
        tokenizer_config.write_text(json.dumps(config, indent=2), "utf-8")


def _architecture_of(model):
    """The Hugging Face class of a kbert model (`ARCHITECTURES` backwards)."""
    kind = type(model).__name__
    family = getattr(model, "family", None) or getattr(getattr(model, "backbone", None), "family", "bert")
    prefix = family_of({"model_type": family}, "config").class_prefix
    if kind == "BertPretrainer" and model.span_boundary:
        raise ValueError("BertPretrainer(span_boundary=True): Hugging Face has no class for SpanBERT's span-boundary "
                         "head; save the backbone (`kbert.save_backbone`) or export a masked LM without it.")
    if kind == "BertPretrainer" and model.next_sentence:
        if family != "bert":
            raise ValueError(f"BertPretrainer(next_sentence=True) of a {family} backbone: kbert writes a {family} "
                             f"masked LM alone ({prefix}ForMaskedLM: next_sentence=False), not its pretraining head.")
        return "BertForPreTraining"
    for architecture, (task, _, _, of_family) in ARCHITECTURES.items():
        if task == kind and of_family == family and architecture != "BertForPreTraining":
            return architecture
    raise TypeError(f"{kind} has no Hugging Face counterpart; kbert writes "
                    f"{sorted({a.task for a in ARCHITECTURES.values()})}.")


def _hf_head_config(model):
    """The label keys of a task model's config.json, and its classifier's dropout under its family's key."""
    label_names = getattr(model, "label_names", None)
    if label_names is None and not hasattr(model, "num_classes"):
        return {}
    dropout = {family_of({"model_type": model.backbone.family}, "config").classifier_dropout: model.dropout}
    if model.num_classes == 1:
        return {"problem_type": "regression", "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}, **dropout}
    label_names = label_names or [f"LABEL_{i}" for i in range(model.num_classes)]
    problem = {"problem_type": "multi_label_classification"} if getattr(model, "multi_label", False) else {}
    return {**problem, "id2label": {str(i): name for i, name in enumerate(label_names)},
            "label2id": {name: i for i, name in enumerate(label_names)}, **dropout}


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


def _hf_names(config):
    """The Hugging Face names of `config`'s encoder's weights, pooler included."""
    return set(kbert_to_hf_weights(collections.defaultdict(lambda: np.zeros((3, 3))), config))


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
