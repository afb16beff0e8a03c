"""An exported .tflite model run by the LiteRT interpreter, with kbert_core's tokenizer, windows and decoding."""

import ctypes
import importlib.machinery
import importlib.util
import json
import pathlib
import sys

import numpy as np

from kbert_core.answers import best_answers, null_score, says_no_answer, window_candidates
from kbert_core.byte_level_bpe import ByteLevelBPE
from kbert_core.classification import EMPTY_TEXT, class_probabilities, is_blank
from kbert_core.entities import entity_spans
from kbert_core.sentence_piece import SentencePiece
from kbert_core.windows import (MAX_WINDOWS, combine_windows, first_pieces, pack_question_windows, pack_text_windows,
                                question_tokens_kept, question_windows, text_windows, word_windows)
from kbert_core.wordpiece import WordPiece
from kbert_core.zero_shot import HYPOTHESIS_TEMPLATE, ZeroShotQuestion


def load_interpreter(path, text_model, num_threads=None):
    """A LiteRT interpreter for `path`, its tensors allocated; with `text_model`, tensorflow-text's kernels registered.

    What loading prints (LiteRT's CPU delegate, TensorFlow's library) comes here, not in a
    first prediction: apps/edge_predict.py hides it unless --verbose.
    """
    try:
        from ai_edge_litert import interpreter as litert
    except ImportError:
        print("ai-edge-litert is not installed; using tensorflow.lite's interpreter instead.", file=sys.stderr)
        from tensorflow.lite.python import interpreter as litert
    if not text_model:
        interpreter = litert.Interpreter(model_path=str(path), num_threads=num_threads)
    else:
        interpreter = litert.InterpreterWithCustomOps(model_path=str(path), custom_op_registerers=_tf_text_registrars(),
                                                      num_threads=num_threads)
    interpreter.allocate_tensors()
    return interpreter


REGISTRAR_MODULE = "tensorflow_text.core.pybinds.tflite_registrar"
# A question answerer's "no answer" (a model that allows it: SQuAD 2.0), as `BertQuestionAnswerer.predict` gives it.
NO_ANSWER = {"text": "", "start": 0, "end": 0, "found": False, "no_answer": True}


def _tf_text_registrars():
    """tensorflow-text's TFLite op registrars, loaded from its native library alone (without importing
    TensorFlow's Python), under the module name tensorflow-text gives it, so that a process loads it once
    whichever comes first (initialized twice, it aborted the process at exit: "free(): invalid pointer").
    TensorFlow's library, which it links to, is loaded without exporting its symbols: exported, a later
    `import tensorflow` segfaulted."""
    module = sys.modules.get(REGISTRAR_MODULE)
    if module is None:
        text_spec, tf_spec = importlib.util.find_spec("tensorflow_text"), importlib.util.find_spec("tensorflow")
        if text_spec is None or tf_spec is None:
            raise RuntimeError("text.tflite needs tensorflow-text's TFLite kernels (pip install tensorflow-text), "
                               "or use token_ids.tflite, which runs on LiteRT alone.")
        ctypes.CDLL(str(pathlib.Path(tf_spec.origin).parent / "libtensorflow_framework.so.2"),
                    mode=ctypes.RTLD_LOCAL)
        library = pathlib.Path(text_spec.origin).parent / "core" / "pybinds" / "tflite_registrar.so"
        loader = importlib.machinery.ExtensionFileLoader(REGISTRAR_MODULE, str(library))
        module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(
            REGISTRAR_MODULE, str(library), loader=loader))
        loader.exec_module(module)
        sys.modules[REGISTRAR_MODULE] = module
    return [module.AddFastBertNormalize, module.AddFastWordpieceTokenize, module.AddByteSplit,
            module.AddFastSentencepieceTokenize]  # ALBERT's in-graph tokenizer (kbert.text.sentence_piece)


def read_tokenizer(folder, kind="wordpiece"):
    """The `kbert_core` tokenizer of an export folder, by `export.json`'s tokenizer `kind` (exports before kbert
    recorded it: WordPiece): `WordPiece` over vocab.txt (cased where tokenizer_config.json says so),
    `SentencePiece` over ALBERT's spiece.model, `ByteLevelBPE` over RoBERTa's vocab.json and merges.txt.

    Example:
    >>> read_tokenizer("no/such/folder", "sentence_piece")
    Traceback (most recent call last):
    FileNotFoundError: no/such/folder holds neither spiece.model nor tokenizer.json: an ALBERT tokenizer folder ...
    """
    folder = pathlib.Path(folder)
    if kind == "sentence_piece":
        return SentencePiece.from_hf(folder)
    if kind == "byte_level_bpe":
        return ByteLevelBPE.from_hf(folder)
    if kind != "wordpiece":
        raise ValueError(f"{folder / 'export.json'}: tokenizer kind {kind!r} is not one of wordpiece, "
                         "sentence_piece, byte_level_bpe.")
    config_file = folder / "tokenizer_config.json"
    lowercase = json.loads(config_file.read_text()).get("do_lower_case", True) if config_file.is_file() else True
    return WordPiece(folder / "vocab.txt", lowercase)


class EdgeModel:
    """An exported .tflite model with its `export.json` and tokenizer files (written by apps/export.py).

    `token_ids.tflite` (builtin ops only) gets its token ids from the `kbert_core` tokenizer that export.json names
    (`read_tokenizer`: WordPiece, ALBERT's SentencePiece or RoBERTa's byte-level BPE); NER and question
    answering read long texts through windows here (`word_windows`, `question_windows`) and
    put the answers back together. `text.tflite` takes strings and needs tensorflow-text's
    TFLite kernels; for NER and QA it reads the same windows inside its graph.

    Both read at most `max_windows` windows per NER text or QA context and say `truncated`
    when an input needed more, or (QA) when the question was cut to `max_question_length`
    tokens; classifiers and the backbone read one window (`truncated`: the input was cut).

    Args:
        path: str or path. `text.tflite` or `token_ids.tflite` from apps/export.py.
        num_threads: int or None. CPU threads of the interpreter (None: LiteRT's default, one).
        max_windows: int or None. NER and QA on `token_ids.tflite`: most windows read per input
            (None: the export's `max_windows`, which `text.tflite` holds in its graph; exports
            that do not record it: `kbert_core.windows.MAX_WINDOWS`).
    """

    def __init__(self, path, num_threads=None, max_windows=None):
        path = pathlib.Path(path)
        self.spec = json.loads((path.parent / "export.json").read_text())
        # "classifier", "backbone", "token_classifier" or "question_answerer"; exports written
        # before kbert named it model_kind call it "task".
        self.model_kind = self.spec.get("model_kind") or self.spec["task"]
        self.text_model = path.name == "text.tflite"
        exported = self.spec.get("max_windows", MAX_WINDOWS)
        if self.text_model and max_windows not in (None, exported):
            raise ValueError(f"text.tflite reads at most {exported} windows per input, fixed when it was exported "
                             "(apps/export.py --max-windows); max_windows applies to token_ids.tflite.")
        self.max_windows = exported if max_windows is None else max_windows
        if self.max_windows < 1:
            raise ValueError(f"max_windows must be at least 1, got {self.max_windows}.")
        self.interpreter = load_interpreter(path, self.text_model, num_threads)
        (self.signature, _), = self.interpreter.get_signature_list().items()
        self.runner = self.interpreter.get_signature_runner(self.signature)
        tokenizer = self.spec.get("tokenizer", {"kind": "wordpiece", "files": ["vocab.txt"]})
        self.tokenizer = read_tokenizer(path.parent, tokenizer["kind"])
        # for blank texts, as the Keras classifier's tokenizer says (RoBERTa's keeps case: ByteLevelBPETokenizer)
        self.lowercase = tokenizer["kind"] != "byte_level_bpe" and self.tokenizer.lowercase
        # the rows of the model's token embeddings (exports before kbert recorded it: unchecked)
        self.vocabulary_size = self.spec.get("vocabulary_size")
        if self.vocabulary_size is not None and len(self.tokenizer.ids) > self.vocabulary_size:
            raise ValueError(f"{path.parent / tokenizer['files'][0]} holds {len(self.tokenizer.ids)} tokens, the "
                             f"model {self.vocabulary_size}: it is not the vocabulary exported with {path.name}.")
        self.max_length = self.spec["max_length"]
        self.label_names = self.spec["label_names"]

    @property
    def regression(self):
        """Whether this is a classifier of one score a text or pair (its outputs hold a "score"), not of classes."""
        return self.model_kind == "classifier" and "score" in self.runner.get_output_details()

    def run_ids(self, batch):
        """The token-id model's outputs on a batch of any width up to `max_length` (padded to it)."""
        width = batch["token_ids"].shape[1]
        if width > self.max_length:
            raise ValueError(f"The batch has {width} tokens per row; this model takes at most {self.max_length}.")
        ids, size = np.asarray(batch["token_ids"]), self.vocabulary_size or np.iinfo("int32").max
        outside = (ids < 0) | (ids >= size)
        if outside.any():
            raise ValueError(f"Token id {ids[outside][0]} (row {np.argwhere(outside)[0][0]}) is outside the model's "
                             f"vocabulary: ids run from 0 to {size - 1}.")
        return self.runner(**{k: np.pad(np.asarray(batch[k], "int32"), [(0, 0), (0, self.max_length - width)],
                                        constant_values=self.tokenizer.pad if k == "token_ids" else 0)
                              for k in ("token_ids", "segment_ids", "padding_mask")})

    def predict_on_batch(self, batch):
        """A Keras model's `predict_on_batch` on a token-id batch of any width up to `max_length`.

        The rows are padded to `max_length` (the model's fixed shape) and the outputs cut back
        to the batch's width: NER and classifier `logits`, or QA's dict of `start_logits` and
        `end_logits`. So this model stands in for the Keras one in kbert's evaluation
        (`kbert.data.batches.padded.PaddedBatches.predict`, and the NER and QA recipes built on it).
        """
        kind, width = self.model_kind, batch["token_ids"].shape[1]
        if self.text_model or kind == "backbone":
            raise ValueError("predict_on_batch runs the token_ids.tflite model of a classifier, NER or QA.")
        out = self.run_ids(batch)
        if kind == "question_answerer":
            return {k: out[k][:, :width] for k in ("start_logits", "end_logits")}
        return out["logits"][:, :width] if kind == "token_classifier" else out["logits"]

    def predict(self, texts, pairs=None):
        """Classifier: label and probabilities; backbone: embeddings; NER: entities; per text.

        A classifier gives an empty or blank text (or pair) no label but a note (`EMPTY_TEXT`), as
        the apps' `predict` does, rather than the label of nothing.
        """
        kind = self.model_kind
        if kind == "question_answerer":
            raise ValueError("question answering takes answer_question(question, context)")
        blank = [kind == "classifier" and is_blank(text, None if pairs is None else pairs[i], self.lowercase)
                 for i, text in enumerate(texts)]
        if any(blank):
            kept = [i for i, empty in enumerate(blank) if not empty]
            answers = iter(self.predict([texts[i] for i in kept], None if pairs is None else [pairs[i] for i in kept])
                           if kept else [])
            return [{"text": text, "label": None, "note": EMPTY_TEXT} if empty else next(answers)
                    for text, empty in zip(texts, blank)]
        if kind == "token_classifier" and not self.text_model:
            return [self._token_entities(text) for text in texts]
        if kind == "classifier" and not self.text_model and self.spec.get("window_pooling"):
            return [self._windowed_classification(text) for text in texts]
        if self.text_model:
            inputs = {"texts": np.array(texts, dtype=object)}
            if pairs is not None:
                inputs["pairs"] = np.array(pairs, dtype=object)
            out = self.runner(**inputs)
        else:
            out = self.tokenizer.encode(texts, pairs, self.max_length)
            out.update(self.run_ids(out))
        if kind == "backbone":
            return [{"text": t, "embedding": e.tolist(), "truncated": bool(cut)}
                    for t, e, cut in zip(texts, out["embeddings"], out["truncated"])]
        if kind == "classifier":
            return [self._classification(out, i, text) for i, text in enumerate(texts)]
        return [{"text": text, "entities": self._graph_entities(out, i, text), "truncated": bool(out["truncated"][i]),
                 "windows": int(out["windows"][i])} for i, text in enumerate(texts)]

    def zero_shot(self, texts, candidate_labels, hypothesis_template=HYPOTHESIS_TEMPLATE, multi_label=False):
        """`kbert.BertClassifier.zero_shot` on the export of an NLI classifier (a class named "entailment"):
        which of `candidate_labels` each text is, as Hugging Face's zero-shot-classification pipeline answers
        (`kbert_core.zero_shot`). token_ids.tflite only: text.tflite gives probabilities, not the logits it needs.

        Returns per text (for a text given alone, its answer alone) `{"sequence", "labels", "scores"}`, the labels
        best first.
        """
        question = self.zero_shot_question(texts, candidate_labels, hypothesis_template, multi_label)
        answers = question.answers(self.pair_logits(*question.pairs))
        return answers[0] if isinstance(texts, str) else answers

    def zero_shot_question(self, texts, candidate_labels, hypothesis_template=HYPOTHESIS_TEMPLATE, multi_label=False):
        """The `ZeroShotQuestion` to this export, checked before it runs (see `zero_shot`); a ValueError where it is
        not an NLI classifier's token_ids.tflite."""
        if self.model_kind != "classifier" or self.text_model or self.spec.get("multi_label"):
            what = ("text.tflite, whose outputs are probabilities: use token_ids.tflite" if self.text_model
                    else "a multi-label classifier" if self.spec.get("multi_label") else f"a {self.model_kind}")
            raise ValueError(f"Zero-shot classification reads an NLI classifier's logits: this is {what}.")
        return ZeroShotQuestion.of(self.label_names, texts, candidate_labels, hypothesis_template, multi_label)

    def pair_logits(self, texts, pairs):
        """A pair classifier's logits (pairs, classes) on token_ids.tflite, each pair packed and cut as `predict`
        reads it."""
        return self.run_ids(self.tokenizer.encode(texts, pairs, self.max_length))["logits"]

    def _classification(self, out, i, text):
        names = self.spec["label_names"]
        if "score" in out:
            return {"text": text, "score": float(out["score"][i]), "truncated": bool(out["truncated"][i])}
        probabilities = out["probabilities"][i]
        named = dict(zip(names or range(len(probabilities)), probabilities.round(6).tolist()))
        if self.spec.get("multi_label"):  # a sigmoid per class: those at or above the threshold
            chosen = [name for name, p in zip(names or range(len(probabilities)), probabilities)
                      if p >= self.spec["threshold"]]
            return {"text": text, "labels": chosen, "probabilities": named, "truncated": bool(out["truncated"][i])}
        best = int(np.argmax(probabilities))
        return {"text": text, "label": names[best] if names else best, "probability": float(probabilities[best]),
                "probabilities": named, "truncated": bool(out["truncated"][i])}

    def _windowed_classification(self, text):
        """A classifier exported with `window_pooling` on token_ids.tflite: the text's windows (the first
        `max_windows`), their logits combined as the Keras model combines them (`combine_windows`)."""
        ids = self.tokenizer.tokenize(text)[0]
        needed = text_windows(len(ids), self.max_length, self.spec["doc_stride"])
        windows = needed[: self.max_windows]
        rows, examples = pack_text_windows([(ids, windows)], self.tokenizer.cls, self.tokenizer.sep, self.tokenizer.pad)
        logits = np.concatenate([self.run_ids({key: value[r : r + 1] for key, value in rows.items()})["logits"]
                                 for r in range(len(examples))])
        combined = combine_windows(logits, examples, self.spec["window_pooling"])
        if combined.shape[-1] == 1:
            out = {"score": combined[:, 0]}
        else:
            out = {"probabilities": class_probabilities(combined, self.spec.get("multi_label"))}
        return self._classification({**out, "truncated": [len(needed) > len(windows)]}, 0, text)

    @staticmethod
    def _graph_entities(out, i, text):
        """The entities text.tflite grouped in its graph."""
        return [{"type": out["entity_types"][i, e].decode(), "text": text[out["entity_starts"][i, e] :
                                                                          out["entity_ends"][i, e]],
                 "start": int(out["entity_starts"][i, e]), "end": int(out["entity_ends"][i, e]),
                 "score": float(out["entity_scores"][i, e])} for e in range(int(out["entity_count"][i]))]

    def _token_entities(self, text):
        """NER on token_ids.tflite over word-aligned windows, the first `max_windows` of them: each word
        tagged by its first piece."""
        ids, spans, word_ids = self.tokenizer.tokenize(text)
        first = first_pieces(word_ids)
        needed = word_windows(first, self.max_length - 2)
        windows = needed[: self.max_windows]
        read = windows[-1][1]  # tokens read
        tags, probabilities = [], []
        for begin, end in windows:
            row = np.array([[self.tokenizer.cls, *ids[begin:end], self.tokenizer.sep]], "int32")
            out = self.run_ids({"token_ids": row, "segment_ids": np.zeros_like(row), "padding_mask": np.ones_like(row)})
            window = out["probabilities"][0, 1 : end - begin + 1][first[begin:end]]
            tags += [self.label_names[k] for k in window.argmax(-1)]
            probabilities += window.max(-1).tolist()
        word_spans = {}  # word id -> [start of its first piece, end of its last piece read]
        for (start, end), word in zip(spans[:read], word_ids[:read]):
            word_spans.setdefault(word, [start, end])[1] = end
        return {"text": text, "entities": entity_spans(text, list(word_spans.values()), tags, probabilities),
                "truncated": len(needed) > len(windows), "windows": len(windows)}

    def answer_question(self, question, context, n_best=None, max_answer_length=None):
        """The best answer span to `question` in `context`, over overlapping windows.

        Windows as `kbert.data.windows.squad.SquadWindows`: `max_length` tokens, the question cut to
        `max_question_length` (and to `max_length - 4`), window starts `doc_stride` tokens
        apart, the first `max_windows` windows read; spans are scored by start + end logit
        among each window's `n_best` starts and ends, a start counting only in the window
        that gives it the most context. Returns dict `text`, `start`, `end` (chars), `score`,
        `probability` (softmax over the n best), `found`, `truncated` (the context needed
        more windows, or the question was cut) and `windows` (read); with no answer `text`
        "", `found` False, `truncated` and `windows`. An export of a model that allows no answer
        (SQuAD 2.0) answers "no answer" as `predict` does, where the least start + end logit at
        position 0 over the windows beats the best span's by more than its threshold: `text` "",
        `start` and `end` 0, that `score`, its `probability`, `found` False and `no_answer` True.
        """
        spec = self.spec
        n_best, max_answer_length = n_best or spec["n_best"], max_answer_length or spec["max_answer_length"]
        if self.text_model:
            out = self.runner(questions=np.array([question], dtype=object), contexts=np.array([context], dtype=object))
            flags = {"truncated": bool(out["truncated"][0]), "windows": int(out["windows"][0])}
            if spec.get("allow_no_answer") and out["no_answer"][0]:
                return {**NO_ANSWER, "score": float(out["score"][0]), "probability": float(out["probability"][0]),
                        **flags}
            if not out["found"][0]:
                return {"text": "", "found": False, **flags}
            start, end = int(out["answer_start"][0]), int(out["answer_end"][0])
            return {"text": context[start:end], "start": start, "end": end, "score": float(out["score"][0]),
                    "probability": float(out["probability"][0]), "found": True, **flags}
        question_ids = self.tokenizer.tokenize(question)[0]
        layout = self.tokenizer.layout  # BERT's [CLS] q [SEP] c [SEP], or RoBERTa's <s> q </s></s> c </s>
        kept = question_tokens_kept(spec["max_question_length"], self.max_length, layout.specials(2))
        question_cut, question_ids = len(question_ids) > kept, question_ids[:kept]
        context_ids, context_spans, _ = self.tokenizer.tokenize(context)
        needed = question_windows(len(question_ids), len(context_ids), self.max_length, spec["doc_stride"],
                                  layout.specials(2))
        windows = needed[: self.max_windows]
        flags = {"truncated": question_cut or len(needed) > len(windows), "windows": len(windows)}
        packed = pack_question_windows([(question_ids, context_ids, context_spans, windows)], self.tokenizer.cls,
                                       self.tokenizer.sep, self.tokenizer.pad, layout=layout)
        candidates, nulls = [], []
        for r in range(len(windows)):  # batch 1: one window at a time
            out = self.run_ids({k: packed[k][r : r + 1] for k in ("token_ids", "segment_ids", "padding_mask")})
            candidates += window_candidates(out["start_logits"][0], out["end_logits"][0], packed["offsets"][r],
                                            packed["max_context"][r], n_best, max_answer_length)
            nulls.append(null_score(out["start_logits"][0], out["end_logits"][0]))
        allowed = spec.get("allow_no_answer", False)
        best = best_answers(candidates, context, n_best, nulls if allowed else None,
                            spec.get("no_answer_threshold", 0.0))
        if not best:
            return {"text": "", "found": False, **flags}
        if says_no_answer(best[0]):
            return {**best[0], **NO_ANSWER, **flags}
        return {**best[0], "found": True, **flags}

