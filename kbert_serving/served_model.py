"""What a server serves: a model from any source, a request's inputs as items, and each item's answer.

`load_served_model(source)` takes what the apps' `--model` and `from_preset` take - a run folder, a task
`.keras` file, a Hugging Face folder (a task checkpoint with its head, else its sentence embeddings), a
backbone folder or preset - or an export folder of apps/export.py (its `token_ids.tflite`, else
`text.tflite`), or a `.tflite` file: those run on LiteRT through `kbert_edge`, with no Keras model in memory.

| kind | an item | its answer (as the apps' `predict`) |
|---|---|---|
| `classifier` | `(text,)`, `(text, pair)` | `label`, `probability`, `probabilities` (or `labels`; regressor: `score`) |
| `token_classifier` | `(text,)` | `entities`: `type`, `text`, `start`, `end` (characters), `score` |
| `question_answerer` | `(question, context)` | `text`, `start`, `end` (in the context), `score`, `probability` |
| `sentence_encoder` | `(text,)` | `embedding` (a unit vector where the model normalises) |
| an NLI `classifier`, zero-shot | `HypothesisPair(text, hypothesis)` | its logits (`ZeroShotQuestion.answers`) |
"""

import concurrent.futures
import dataclasses
import json
import pathlib
import threading
import typing

import numpy as np

from kbert_core.zero_shot import HYPOTHESIS_TEMPLATE

KINDS = ("classifier", "token_classifier", "question_answerer", "sentence_encoder", "masked_lm")
# the input names of a request, by kind: (first, second); the second is optional for classifiers
INPUT_NAMES = {"classifier": ("texts", "pairs"), "token_classifier": ("texts", None),
               "question_answerer": ("questions", "contexts"), "sentence_encoder": ("texts", None),
               "masked_lm": ("texts", None)}
TFLITE_FILES = ("token_ids.tflite", "text.tflite")  # an export folder's model, first found
# rows of each batch a Keras model's predict cuts a call into: fewer than a call holds, so that they pad little
PREDICT_BATCH_SIZE = 16


class RequestError(ValueError):
    """A request the server refuses: its HTTP status and one line saying why."""

    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status


@dataclasses.dataclass(frozen=True)
class InputLimits:
    """What one request may hold.

    Args:
        max_items: int. Texts (or pairs, or questions) in one request.
        max_text_chars: int. Characters in one text.
    """

    max_items: int = 256
    max_text_chars: int = 100_000


class ModelThread(concurrent.futures.ThreadPoolExecutor):
    """The one thread a served model is loaded on and answers on, whichever thread asks (the server's batcher runs
    its calls here). Under torch each thread that runs a model keeps an OpenMP pool of its own, and two such pools
    of 2 threads on a 2-core machine make libgomp stop spinning between parallel regions: a sentence's call 25%
    slower, about 97 context switches a call against 3.5 (measured with all-MiniLM-L6-v2 loaded on the main
    thread and called on another).

    Example:
    >>> thread = ModelThread()
    >>> thread.run(threading.current_thread).name.startswith("kbert-model"), thread.run(sum, [1, 2])
    (True, 3)
    """

    def __init__(self):
        super().__init__(1, thread_name_prefix="kbert-model", initializer=self._started)
        self.ident = None

    def _started(self):
        self.ident = threading.get_ident()

    def run(self, function, *args, **kwargs):
        """`function(*args, **kwargs)` on this thread: at once when called on it, else handed to it and waited
        for."""
        if threading.get_ident() == self.ident:
            return function(*args, **kwargs)
        return self.submit(function, *args, **kwargs).result()


class ServedModel:
    """A model behind the server: `kind`, `answer(items)` (computed on its `thread`, a `ModelThread`) and
    `metadata`; `load_served_model` makes one, loaded on that thread."""

    kind = None
    runtime = None

    regression = False  # a classifier of one score a text or pair (a cross-encoder), not of classes

    def __init__(self, name, source, label_names, max_length, thread=None):
        self.name, self.source, self.label_names, self.max_length = name, str(source), label_names, max_length
        self.thread = thread or ModelThread()

    @property
    def metadata(self):
        """The model's facts, as `GET /v1/model` gives them."""
        first, second = INPUT_NAMES[self.kind]
        return {"name": self.name, "kind": self.kind, "source": self.source, "runtime": self.runtime,
                "label_names": self.label_names, "max_length": self.max_length,
                "inputs": [name for name in (first, second) if name], "regression": self.regression}

    def items(self, inputs, limits):
        """The items of a request's named inputs (`{"texts": [...], "pairs": [...]}`, `{"questions": [...],
        "contexts": [...]}`: lists of strings, a context may be one string for every question); `RequestError`
        naming what is wrong.

        Example:
        >>> model = ServedModel("m", "m", None, 128)
        >>> model.kind = "question_answerer"
        >>> model.items({"questions": ["Who?", "Where?"], "contexts": "Ann sings in Rome."}, InputLimits())
        [('Who?', 'Ann sings in Rome.'), ('Where?', 'Ann sings in Rome.')]
        """
        if not isinstance(inputs, dict):
            raise RequestError(f"The inputs must be a JSON object with {self._names()}, not {_json_type(inputs)}.")
        first, second = INPUT_NAMES[self.kind]
        unknown = sorted(set(inputs) - {first, second})
        if unknown:
            raise RequestError(f"Unknown input {unknown[0]!r}: this {self.kind} takes {self._names()}.")
        if first not in inputs:
            raise RequestError(f"The request has no {first!r}: this {self.kind} takes {self._names()}.")
        columns = [strings(inputs[first], first, limits)]
        if self.kind == "question_answerer" or inputs.get(second) is not None:
            given = inputs.get(second)
            if isinstance(given, str) and self.kind == "question_answerer":
                given = [given] * len(columns[0])
            columns.append(strings(given, second, limits))
            if len(columns[1]) != len(columns[0]):
                raise RequestError(f"{len(columns[0])} {first} but {len(columns[1])} {second}: give one each.")
        if self.kind == "question_answerer":  # as the QA recipe's predict: nothing to answer from or about
            for i, item in enumerate(zip(*columns)):
                _check_not_blank(item, [f"{first}[{i}]", f"{second}[{i}]"])
        self.check_texts(columns[0])
        return list(zip(*columns))

    def item_of(self, instance, index, limits):
        """The item of one instance of TF Serving's row format: a string, or an object of the kind's singular
        input names (`{"text", "pair"}`, `{"question", "context"}`).

        Example:
        >>> model = ServedModel("m", "m", None, 128)
        >>> model.kind = "classifier"
        >>> model.item_of("a film", 0, InputLimits()), model.item_of({"text": "a", "pair": "b"}, 1, InputLimits())
        (('a film',), ('a', 'b'))
        """
        first, second = (name and name[:-1] for name in INPUT_NAMES[self.kind])
        if isinstance(instance, str):
            instance = {first: instance}
        if not isinstance(instance, dict):
            raise RequestError(f"instances[{index}] is {_json_type(instance)}: give a string or an object.")
        unknown = sorted(set(instance) - {first, second})
        if unknown:
            raise RequestError(f"instances[{index}] has {unknown[0]!r}: this {self.kind}'s instances take "
                               f"{' and '.join(repr(name) for name in (first, second) if name)}.")
        names = [first] + ([second] if self.kind == "question_answerer" or instance.get(second) is not None else [])
        for name in names:
            if instance.get(name) is None:
                raise RequestError(f"instances[{index}] has no {name!r}.")
        item = tuple(text(instance[name], f"instances[{index}].{name}", limits) for name in names)
        if self.kind == "question_answerer":
            _check_not_blank(item, names, f"instances[{index}].")
        self.check_texts([item[0]], f"instances[{index}].{first}")
        return item

    def zero_shot(self, body, limits):
        """(`kbert_core.zero_shot.ZeroShotQuestion`, whether one text was given alone) of a zero-shot request
        (`zero_shot_request`), whose `pairs` the model answers as `HypothesisPair` items (with their logits); a
        `RequestError` naming what is wrong, or why the model cannot (`zero_shot_question`)."""
        texts, single, labels, template, multi_label = zero_shot_request(body, limits)
        if self.kind != "classifier":
            raise RequestError(f"{self.name} is a {self.kind}: zero-shot classification reads an NLI classifier.")
        try:
            question = self.zero_shot_question(texts, labels, template or HYPOTHESIS_TEMPLATE, multi_label)
        except ValueError as error:
            raise RequestError(str(error)) from None
        pairs = len(question.texts) * len(question.labels)
        if pairs > limits.max_items:
            raise RequestError(f"{len(question.texts):,} texts x {len(question.labels):,} labels are {pairs:,} "
                               f"pairs; this server reads at most {limits.max_items:,} a request.", 413)
        return question, single

    def zero_shot_question(self, texts, candidate_labels, hypothesis_template, multi_label):
        """A classifier's `ZeroShotQuestion`; a ValueError where it cannot answer one (not an NLI classifier)."""
        raise NotImplementedError

    def check_texts(self, texts, name="texts"):
        """A `RequestError` for texts the model cannot answer whatever else is in its batch (a masked LM's: one
        without the mask token or too long); here, none."""

    def answer(self, items):
        """The answers to a batch of items of one shape (all singles or all pairs), in order, computed on the
        model's `thread` from whichever thread asks."""
        return self.thread.run(self._answer, items)

    def _answer(self, items):
        raise NotImplementedError

    def token_counts(self, texts):
        """Tokens the model reads of each text (at most `max_length`), for the OpenAI route's `usage`."""
        raise NotImplementedError

    def _names(self):
        first, second = INPUT_NAMES[self.kind]
        if second is None:
            return f"{first!r} (a list of strings)"
        optional = " (optional)" if self.kind == "classifier" else ""
        return f"{first!r} and {second!r}{optional} (lists of strings of one length)"


def _json_type(value):
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


class HypothesisPair(typing.NamedTuple):
    """An item of a zero-shot request: a text and one label's hypothesis about it, answered with the NLI
    classifier's logits (a shape of its own in the batcher, not a pair to label)."""

    text: str
    hypothesis: str


def zero_shot_request(body, limits):
    """(texts, whether one text was given alone, candidate labels, hypothesis template or None, multi_label) of a
    request in Hugging Face's zero-shot-classification shape: `{"inputs": text or [texts], "parameters":
    {"candidate_labels": [...] or "a,b", "hypothesis_template": ..., "multi_label": ...}}`; a `RequestError` naming
    what is wrong.

    Example:
    >>> zero_shot_request({"inputs": "Ann scored.", "parameters": {"candidate_labels": ["sports"]}}, InputLimits())
    (['Ann scored.'], True, ['sports'], None, False)
    """
    if not isinstance(body, dict) or "inputs" not in body:
        raise RequestError('A zero-shot request is {"inputs": text or [texts], "parameters": {"candidate_labels": '
                           '[...]}}.')
    unknown = sorted(set(body) - {"inputs", "parameters"}) or sorted(
        set(body.get("parameters") or {}) - {"candidate_labels", "hypothesis_template", "multi_label"})
    if unknown:
        raise RequestError(f"Unknown field {unknown[0]!r}: a zero-shot request takes \"inputs\" and \"parameters\" "
                           "(\"candidate_labels\", \"hypothesis_template\", \"multi_label\").")
    parameters = body.get("parameters") or {}
    if not isinstance(parameters, dict) or "candidate_labels" not in parameters:
        raise RequestError('"parameters" must be an object with "candidate_labels".')
    labels = parameters["candidate_labels"]  # a string: comma-separated, as the pipeline reads it
    labels = text(labels, "candidate_labels", limits) if isinstance(labels, str) else strings(
        labels, "candidate_labels", limits)
    template = parameters.get("hypothesis_template")
    if template is not None:
        template = text(template, "hypothesis_template", limits)
    multi_label = parameters.get("multi_label", False)
    if not isinstance(multi_label, bool):
        raise RequestError(f'"multi_label" is true or false, not {_json_type(multi_label)}.')
    return strings(body["inputs"], "inputs", limits), isinstance(body["inputs"], str), labels, template, multi_label


def rerank_request(body, limits):
    """(query, documents, top_n or None, return_documents) of a request in Cohere's rerank shape: `{"query": text,
    "documents": [texts or {"text": ...}], "top_n": n, "return_documents": bool}` (a "model" field is read and
    ignored); a `RequestError` naming what is wrong.

    Example:
    >>> rerank_request({"query": "music?", "documents": ["a band", {"text": "a cat"}], "top_n": 1}, InputLimits())
    ('music?', ['a band', 'a cat'], 1, False)
    """
    if not isinstance(body, dict) or "query" not in body or "documents" not in body:
        raise RequestError('A rerank request is {"query": text, "documents": [texts], "top_n": n}.')
    unknown = sorted(set(body) - {"query", "documents", "top_n", "return_documents", "model"})
    if unknown:
        raise RequestError(f"Unknown field {unknown[0]!r}: a rerank request takes \"query\", \"documents\", "
                           "\"top_n\" and \"return_documents\".")
    query = text(body["query"], "query", limits)
    documents = body["documents"]
    if isinstance(documents, list):
        documents = [document.get("text") if isinstance(document, dict) else document for document in documents]
    documents = strings(documents, "documents", limits)
    for i, document in enumerate([query, *documents]):
        if not document.strip():
            raise RequestError(f"{'query' if i == 0 else f'documents[{i - 1}]'} is blank: nothing to rank by.")
    top_n = body.get("top_n")
    if top_n is not None and (isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1):
        raise RequestError(f'"top_n" is a number of documents, at least 1, not {json.dumps(top_n)}.')
    return_documents = body.get("return_documents", False)
    if not isinstance(return_documents, bool):
        raise RequestError(f'"return_documents" is true or false, not {_json_type(return_documents)}.')
    return query, documents, top_n, return_documents


def strings(values, name, limits):
    """`values` if it is a non-empty list of strings within `limits`; else a `RequestError` naming the first fault."""
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list):
        raise RequestError(f"{name!r} must be a list of strings, not {_json_type(values)}.")
    if not values:
        raise RequestError(f"{name!r} is empty: give at least one string.")
    if len(values) > limits.max_items:
        raise RequestError(f"{name!r} holds {len(values):,} strings; this server takes at most "
                           f"{limits.max_items:,} a request: send them in several requests.", 413)
    return [text(value, f"{name}[{i}]", limits) for i, value in enumerate(values)]


def text(value, where, limits):
    """`value` if it is a string within `limits`; else a `RequestError` saying what it is `where` it is.

    Example:
    >>> text(5, "texts[2]", InputLimits())
    Traceback (most recent call last):
    ...
    kbert_serving.served_model.RequestError: texts[2] is a number, not a string.
    """
    if not isinstance(value, str):
        raise RequestError(f"{where} is {_json_type(value)}, not a string.")
    if len(value) > limits.max_text_chars:
        raise RequestError(f"{where} is {len(value):,} characters long; this server takes at most "
                           f"{limits.max_text_chars:,}.", 413)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:  # a lone surrogate: JSON's \u escapes let one through
        raise RequestError(f"{where} holds a lone surrogate at character {error.start}: not text.") from None
    return value


def _check_not_blank(item, names, prefix=""):
    """A question and its context need text, as the QA recipe's `predict` says."""
    for name, value in zip(names, item):
        if not value.strip():
            raise RequestError(f"{prefix}{name} is empty: a question and its context need text.")


class KerasServedModel(ServedModel):
    """A kbert task model (or a backbone, as a sentence encoder), answering as the apps' `predict` does; with `pack`,
    a classifier's or sentence encoder's texts computed on packed rows (`BertClassifier.answers(pack=True)`); None:
    packed under torch (the rows run in its plain-torch pass), padded batches under TensorFlow and JAX (where packed
    rows run eagerly, padded ones compiled). `thread`: the `ModelThread` the model was loaded on (`load_served_model`
    passes it); None: a new one, where a model that ran on another thread runs slower under torch."""

    def __init__(self, model, tokenizer, max_length, name, source, dtype="float32",
                 batch_size=PREDICT_BATCH_SIZE, pack=None, thread=None):
        import keras

        from kbert.tasks import (BertClassifier, BertPretrainer, BertQuestionAnswerer, BertSentenceEncoder,
                                 BertTokenClassifier)

        kinds = {BertClassifier: "classifier", BertTokenClassifier: "token_classifier",
                 BertQuestionAnswerer: "question_answerer", BertSentenceEncoder: "sentence_encoder",
                 BertPretrainer: "masked_lm"}
        self.kind = next((kind for cls, kind in kinds.items() if isinstance(model, cls)), None)
        if self.kind is None:
            raise ValueError(f"{source} holds a {type(model).__name__}; the server serves "
                             f"{', '.join(cls.__name__ for cls in kinds)} and backbones.")
        super().__init__(name, source, getattr(model, "label_names", None), max_length, thread)
        self.model, self.tokenizer, self.dtype, self.batch_size = model, tokenizer, dtype, batch_size
        self.regression = bool(getattr(model, "regression", False))
        self.pack = keras.config.backend() == "torch" if pack is None else pack
        self.runtime = f"keras ({keras.config.backend()})"

    @property
    def metadata(self):
        """`ServedModel.metadata`; a masked LM's `mask_token` too."""
        found = super().metadata
        if self.kind == "masked_lm":
            found["mask_token"] = self.tokenizer.id_to_token(self.tokenizer.mask_token_id)
        return found

    def check_texts(self, texts, name="texts"):
        """A masked LM's texts each with the mask token and no longer than the model reads
        (`kbert.tasks.fill_mask.masked_rows`), else a `RequestError` naming the first that is not."""
        if self.kind != "masked_lm":
            return
        from kbert.tasks.fill_mask import masked_rows

        try:
            masked_rows(self.tokenizer, texts, self.max_length)
        except ValueError as error:
            raise RequestError(str(error) if name == "texts" else str(error).replace("texts[0]", name, 1)) from None

    def zero_shot_question(self, texts, candidate_labels, hypothesis_template, multi_label):
        from kbert.tasks.zero_shot import zero_shot_question

        return zero_shot_question(self.model, texts, candidate_labels, hypothesis_template, multi_label)

    def _answer(self, items):
        from kbert.models.compute_dtype import with_compute_dtype
        from kbert.recipes import ner, qa
        from kbert.tasks.fill_mask import mask_answers

        columns = [list(column) for column in zip(*items)]
        if isinstance(items[0], HypothesisPair):
            logits = with_compute_dtype(self.model, self.dtype).logits(tuple(columns), self.batch_size)
            return [row.tolist() for row in logits]
        if self.kind == "classifier":
            return self.model.answers(columns[0] if len(columns) == 1 else tuple(columns), self.batch_size,
                                      dtype=self.dtype, pack=self.pack)
        if self.kind == "token_classifier":
            return ner.answers(self.model, columns[0], self.batch_size, self.dtype)
        if self.kind == "question_answerer":
            return qa.answers(self.model, columns[0], columns[1], self.batch_size, self.dtype)
        if self.kind == "masked_lm":
            return mask_answers(self.model, columns[0], batch_size=self.batch_size)
        embeddings = self.model.encode(columns[0], batch_size=self.batch_size, dtype=self.dtype, pack=self.pack)
        return [{"text": text, "embedding": row.tolist()} for text, row in zip(columns[0], embeddings)]

    def token_counts(self, texts):
        mask = self.tokenizer(list(texts), max_length=self.max_length, padding="longest")["padding_mask"]
        return np.asarray(mask).sum(axis=1).tolist()


class EdgeServedModel(ServedModel):
    """An exported `.tflite` model run by LiteRT through `kbert_edge.EdgeModel`: no Keras model in memory."""

    runtime = "litert"

    def __init__(self, path, name, num_threads=None):
        from kbert_edge import EdgeModel

        self.edge = EdgeModel(path, num_threads=num_threads)
        self.kind = {"backbone": "sentence_encoder"}.get(self.edge.model_kind, self.edge.model_kind)
        super().__init__(name, path, self.edge.label_names, self.edge.max_length)

    @property
    def regression(self):
        return self.edge.regression

    def zero_shot_question(self, texts, candidate_labels, hypothesis_template, multi_label):
        return self.edge.zero_shot_question(texts, candidate_labels, hypothesis_template, multi_label)

    def _answer(self, items):
        columns = [list(column) for column in zip(*items)]
        if isinstance(items[0], HypothesisPair):
            return [row.tolist() for row in self.edge.pair_logits(columns[0], columns[1])]
        if self.kind == "question_answerer":
            return [{"question": question, **self.edge.answer_question(question, context)}
                    for question, context in items]
        return self.edge.predict(columns[0], columns[1] if len(columns) > 1 else None)

    def token_counts(self, texts):
        return [min(len(self.edge.tokenizer.tokenize(text)[0]) + 2, self.max_length) for text in texts]


def tflite_file(source):
    """The `.tflite` model a source names (a `.tflite` file, or an export folder's first of `TFLITE_FILES`),
    or None for any other source.

    Example:
    >>> tflite_file("exports/sst2/token_ids.tflite").name, tflite_file("saved_models/sst2")
    ('token_ids.tflite', None)
    """
    path = pathlib.Path(source)
    if path.suffix == ".tflite":
        return path
    if (path / "export.json").is_file():
        found = [path / name for name in TFLITE_FILES if (path / name).is_file()]
        if not found:
            raise FileNotFoundError(f"{path} holds export.json but no {' or '.join(TFLITE_FILES)}: the server "
                                    "runs an export's TFLite model (apps/export.py --format tflite).")
        return found[0]
    return None


def load_served_model(source, name=None, dtype="float32", batch_size=PREDICT_BATCH_SIZE, num_threads=None,
                      verify=True, pack=None):
    """The `ServedModel` of `source` (see the module's docstring), named `name` (default: the source's name).
    A Keras model's `predict` cuts the items of each call into batches of `batch_size` of similar length;
    `dtype` as `BertTask.predict`'s; `pack` (None: under torch): a Keras classifier's or sentence encoder's texts
    computed on packed rows of the call's longest text (`batch_size` rows a backbone call; 64 random SST-2
    sentences: 896 tokens computed, 1,472 in padded batches of 16), not in padded batches.

    Example:
    >>> model = load_served_model("bert_tiny")
    >>> model.kind, model.answer([("a film",)])[0]["text"]
    ('sentence_encoder', 'a film')
    """
    name = name or pathlib.Path(str(source)).name.removesuffix(".keras").removesuffix(".tflite")
    path = tflite_file(source)
    if path is not None:
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist.")
        return EdgeServedModel(path, name, num_threads)
    thread = ModelThread()
    model, tokenizer, max_length = thread.run(_keras_model, source, verify)
    return KerasServedModel(model, tokenizer, max_length, name, source, dtype, batch_size, pack, thread)


def _keras_model(source, verify):
    """`(task model, tokenizer, max_length)` of a Keras source: backbones as `BertSentenceEncoder`s."""
    import kbert
    from kbert.config import DEFAULT_SEQUENCE_LENGTH
    from kbert.convert import ARCHITECTURES, read_hf_architecture
    from kbert.saving import load_run, model_source

    found = model_source(source, verify)
    if found.kind in ("run_folder", "keras_file"):
        model = load_run(found)
        if isinstance(model, kbert.BertBackbone):
            tokenizer = found.load_tokenizer(kbert.BertTokenizer, model)
            max_length = found.metrics.get("max_length", DEFAULT_SEQUENCE_LENGTH)
            model = kbert.BertSentenceEncoder(model, kbert.BertSentenceEncoderPreprocessor(tokenizer, max_length))
        return model, model.preprocessor.tokenizer, served_length(model)
    task = "BertBackbone"
    if found.kind == "hugging_face":
        task = ARCHITECTURES[read_hf_architecture(found.path)].task
    cls = kbert.BertSentenceEncoder if task == "BertBackbone" else getattr(kbert, task)
    model = cls.from_preset(source)
    return model, model.preprocessor.tokenizer, served_length(model)


def served_length(model):
    """The most tokens the server lets `model` read of a text: its preprocessor's sequence length (a masked LM reads
    a text whole, up to the backbone's positions)."""
    import kbert

    if isinstance(model, kbert.BertPretrainer):
        return model.backbone.max_sequence_length
    return model.preprocessor.sequence_length


def json_line(value):
    """`value` as compact JSON (numpy numbers as numbers), for responses.

    Example:
    >>> json_line({"score": np.float32(0.5), "ids": np.arange(2)})
    '{"score":0.5,"ids":[0,1]}'
    """
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_plain)


def _plain(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")
