"""Predict from an exported .tflite file with the LiteRT interpreter only: no Keras, no TensorFlow.

    python apps/edge_predict.py exports/sst2_tflite/token_ids.tflite "a gripping film" "dull"
    python apps/edge_predict.py exports/sst2_tflite/text.tflite "a gripping film"
    python apps/edge_predict.py exports/nli_tflite/text.tflite "A man sleeps." --pair "Nobody sleeps."
    python apps/edge_predict.py exports/squad_tflite/token_ids.tflite --question "Who?" --context article.txt

Reads `export.json` and `vocab.txt` beside the model (written by apps/export.py). This file
stands alone: copy it with the model folder to the device. It needs numpy and
`ai-edge-litert` (`pip install ai-edge-litert`); without it, it falls back to
`tensorflow.lite`'s interpreter (and says so).

- `token_ids.tflite` (builtin ops only): text is tokenized here by `WordPiece`, a pure-Python
  BERT tokenizer over `vocab.txt` that gives kbert's ids and offsets on ordinary text.
  Question answering reads long contexts through overlapping windows (`doc_stride`) and
  picks the best span over all of them (`answer_question`), the part of QA that does not
  convert to TFLite.
- `text.tflite` (raw strings in): also needs tensorflow-text's TFLite kernels. They are
  loaded from the installed `tensorflow-text` package's native library without importing
  TensorFlow's Python modules (the library links `libtensorflow_framework.so.2`, which the
  `tensorflow` wheel provides). One window per input: long QA contexts are cut.
"""

import argparse
import ctypes
import functools
import importlib.machinery
import importlib.util
import json
import pathlib
import sys
import unicodedata

import numpy as np

MAX_WORD_CHARS = 100
_WHITESPACE = frozenset([0x09, 0x0A, 0x0D, 0x20, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
                         0x202F, 0x205F, 0x3000])
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
        (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


# ---------------------------------------------------------------- tokenizer (pure Python)

@functools.lru_cache(maxsize=65536)
def _normalize_char(char, lowercase):
    """BERT's normalization of one character (kbert/text/bert_normalizer.py's rules)."""
    code = ord(char)
    if code in _WHITESPACE:
        return " "
    category = unicodedata.category(char)
    if code in (0, 0xFFFD) or category in ("Cc", "Cf", "Co"):
        return ""
    if not lowercase or category == "Cn":
        return char
    return "".join(c for c in unicodedata.normalize("NFD", char) if unicodedata.category(c) != "Mn").lower()


def _splits_alone(char):
    """Punctuation (BERT's ASCII ranges and Unicode P*) and CJK ideographs are words by themselves."""
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P") or any(lo <= code <= hi for lo, hi in _CJK)


class WordPiece:
    """BERT's WordPiece tokenizer in pure Python, over a `vocab.txt` (one token a line).

    Lower-casing and accent stripping (when `lowercase`), deletion of control characters,
    splitting at spaces, punctuation and CJK ideographs, then greedy longest-match
    WordPiece; words over 100 characters, or with no matching piece, become one [UNK].

    Example:
    >>> wp = WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi", "##s"])
    >>> wp.encode(["His hi!"], max_length=8)["token_ids"].tolist()
    [[2, 5, 6, 5, 1, 3, 0, 0]]
    """

    def __init__(self, vocabulary, lowercase=True):
        if isinstance(vocabulary, (str, pathlib.Path)):
            vocabulary = pathlib.Path(vocabulary).read_text("utf-8").split("\n")
            vocabulary = vocabulary[:-1] if vocabulary[-1] == "" else vocabulary
        self.ids = {token: i for i, token in enumerate(vocabulary)}
        self.lowercase = lowercase
        self.unk, self.cls, self.sep, self.pad = (self.ids[t] for t in ("[UNK]", "[CLS]", "[SEP]", "[PAD]"))

    def tokenize(self, text):
        """(ids, char spans, word indices) of one text."""
        chars = [(c, i) for i, char in enumerate(text) for c in _normalize_char(char, self.lowercase)]
        words, word = [], []
        for char, origin in chars:
            if char == " " or _splits_alone(char):
                if word:
                    words.append(word)
                word = [] if char == " " else [(char, origin)]
                if word:
                    words.append(word)
                    word = []
            else:
                word.append((char, origin))
        if word:
            words.append(word)
        ids, spans, word_ids = [], [], []
        for w, word in enumerate(words):
            for piece_id, first, last in self._pieces("".join(c for c, _ in word)):
                ids.append(piece_id)
                spans.append((word[first][1], word[last][1] + 1))
                word_ids.append(w)
        return ids, spans, word_ids

    def _pieces(self, word):
        if len(word) > MAX_WORD_CHARS:
            return [(self.unk, 0, len(word) - 1)]
        pieces, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    pieces.append((self.ids[piece], start, end - 1))
                    start = end
                    break
            else:
                return [(self.unk, 0, len(word) - 1)]
        return pieces

    def encode(self, texts, pairs=None, max_length=128, truncation="longest_first", max_first_length=None):
        """Packs `[CLS] A [SEP] (B [SEP])`, padded to `max_length`: int32 arrays like kbert's tokenizer."""
        rows = [self.tokenize(text) for text in texts]
        second = [self.tokenize(pair) for pair in pairs] if pairs is not None else None
        out = {key: np.zeros((len(texts), max_length), "int32")
               for key in ("token_ids", "segment_ids", "padding_mask", "word_ids")}
        out["offsets"] = np.zeros((len(texts), max_length, 2), "int32")
        out["word_ids"][:] = -1
        out["truncated"] = np.zeros(len(texts), bool)
        for r, row in enumerate(rows):
            segments = [row] if second is None else [row, second[r]]
            lengths = [len(s[0]) for s in segments]
            kept = _kept_lengths(lengths, max_length - len(segments) - 1, truncation, max_first_length)
            out["truncated"][r] = sum(lengths) + len(segments) + 1 > max_length
            position = 1
            out["token_ids"][r, 0] = self.cls
            for s, ((ids, spans, word_ids), n) in enumerate(zip(segments, kept)):
                stop = position + n
                out["token_ids"][r, position:stop] = ids[:n]
                out["offsets"][r, position:stop] = spans[:n] if n else np.zeros((0, 2))
                out["word_ids"][r, position:stop] = word_ids[:n]
                out["segment_ids"][r, position : stop + 1] = s
                out["token_ids"][r, stop] = self.sep
                position = stop + 1
            out["padding_mask"][r, :position] = 1
        return out


def _kept_lengths(lengths, budget, truncation, max_first_length):
    """Tokens kept per segment, as kbert's `truncation_lengths` (Hugging Face's rule)."""
    if len(lengths) == 1:
        return [min(lengths[0], budget)]
    first, second = lengths
    if max_first_length is not None:
        first = min(first, max_first_length)
    if truncation == "only_second" or max_first_length is not None:
        kept = min(first, budget)
        return [kept, min(second, max(budget - kept, 0))]
    shorter = min(first, second)
    longer_kept = shorter if shorter > budget else max(shorter, budget - shorter)
    if shorter + longer_kept > budget:
        shorter_kept, longer_kept = budget // 2, budget // 2 + budget % 2
    else:
        shorter_kept = shorter
    if first > second:
        return [min(first, longer_kept), min(second, shorter_kept)]
    return [min(first, shorter_kept), min(second, longer_kept)]


# ---------------------------------------------------------------- interpreter

def load_interpreter(path, text_model, num_threads=None):
    """A LiteRT interpreter for `path`; with `text_model`, tensorflow-text's kernels registered."""
    try:
        from ai_edge_litert import interpreter as litert
    except ImportError:
        print("ai-edge-litert is not installed; using tensorflow.lite's interpreter instead.", file=sys.stderr)
        from tensorflow.lite.python import interpreter as litert
    if not text_model:
        return litert.Interpreter(model_path=str(path), num_threads=num_threads)
    return litert.InterpreterWithCustomOps(model_path=str(path), custom_op_registerers=_tf_text_registrars(),
                                           num_threads=num_threads)


def _tf_text_registrars():
    """tensorflow-text's TFLite op registrars, loaded from its native library alone."""
    text_spec, tf_spec = importlib.util.find_spec("tensorflow_text"), importlib.util.find_spec("tensorflow")
    if text_spec is None or tf_spec is None:
        raise RuntimeError("text.tflite needs tensorflow-text's TFLite kernels (pip install tensorflow-text), "
                           "or use token_ids.tflite, which runs on LiteRT alone.")
    ctypes.CDLL(str(pathlib.Path(tf_spec.origin).parent / "libtensorflow_framework.so.2"), mode=ctypes.RTLD_GLOBAL)
    library = pathlib.Path(text_spec.origin).parent / "core" / "pybinds" / "tflite_registrar.so"
    loader = importlib.machinery.ExtensionFileLoader("tflite_registrar", str(library))
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(
        "tflite_registrar", str(library), loader=loader))
    loader.exec_module(module)
    return [module.AddFastBertNormalize, module.AddFastWordpieceTokenize, module.AddByteSplit]


class EdgeModel:
    """An exported .tflite model with its `export.json` and `vocab.txt`.

    Args:
        path: str or path. `text.tflite` or `token_ids.tflite` from apps/export.py.
        num_threads: int or None. CPU threads of the interpreter (None: LiteRT's default, one).
    """

    def __init__(self, path, num_threads=None):
        path = pathlib.Path(path)
        self.spec = json.loads((path.parent / "export.json").read_text())
        self.text_model = path.name == "text.tflite"
        self.interpreter = load_interpreter(path, self.text_model, num_threads)
        (self.signature, _), = self.interpreter.get_signature_list().items()
        self.runner = self.interpreter.get_signature_runner(self.signature)
        config_file = path.parent / "tokenizer_config.json"
        lowercase = json.loads(config_file.read_text()).get("do_lower_case", True) if config_file.is_file() else True
        self.tokenizer = WordPiece(path.parent / "vocab.txt", lowercase)
        self.max_length = self.spec["max_length"]
        self.label_names = self.spec["label_names"]

    def run_ids(self, batch):
        return self.runner(**{k: batch[k] for k in ("token_ids", "segment_ids", "padding_mask")})

    def predict_on_batch(self, batch):
        """A Keras model's `predict_on_batch` on a token-id batch of any width up to `max_length`.

        The rows are padded to `max_length` (the model's fixed shape) and the outputs cut back
        to the batch's width: NER and classifier `logits`, or QA's dict of `start_logits` and
        `end_logits`. So this model stands in for the Keras one in kbert's evaluation
        (`kbert.data.PaddedBatches.predict`, and the NER and QA task functions built on it).
        """
        task, width = self.spec["task"], batch["token_ids"].shape[1]
        if self.text_model or task == "backbone":
            raise ValueError("predict_on_batch runs the token_ids.tflite model of a classifier, NER or QA.")
        if width > self.max_length:
            raise ValueError(f"The batch has {width} tokens per row; this model takes at most {self.max_length}.")
        padded = {k: np.pad(np.asarray(batch[k], "int32"), [(0, 0), (0, self.max_length - width)],
                            constant_values=self.tokenizer.pad if k == "token_ids" else 0)
                  for k in ("token_ids", "segment_ids", "padding_mask")}
        out = self.run_ids(padded)
        if task == "question_answerer":
            return {k: out[k][:, :width] for k in ("start_logits", "end_logits")}
        return out["logits"][:, :width] if task == "token_classifier" else out["logits"]

    def predict(self, texts, pairs=None):
        """Classifier: label and probabilities; backbone: embeddings; NER: entities; per text."""
        task = self.spec["task"]
        if self.text_model:
            inputs = {"texts": np.array(texts, dtype=object)}
            if pairs is not None:
                inputs["pairs"] = np.array(pairs, dtype=object)
            out = self.runner(**inputs)
        else:
            batch = self.tokenizer.encode(texts, pairs, self.max_length)
            out = {**self.run_ids(batch), **{k: batch[k] for k in ("offsets", "word_ids", "truncated")}}
        if task == "backbone":
            return [{"text": t, "embedding": e.tolist()} for t, e in zip(texts, out["embeddings"])]
        if task == "classifier":
            return [self._classification(out, i, text) for i, text in enumerate(texts)]
        if task == "token_classifier":
            return [{"text": text, "entities": self._entities(out, i, text),
                     "truncated": bool(out["truncated"][i])} for i, text in enumerate(texts)]
        raise ValueError("question answering takes answer_question(question, context)")

    def _classification(self, out, i, text):
        names = self.spec["label_names"]
        if "score" in out:
            return {"text": text, "score": float(out["score"][i]), "truncated": bool(out["truncated"][i])}
        probabilities = out["probabilities"][i]
        best = int(np.argmax(probabilities))
        return {"text": text, "label": names[best] if names else best, "probability": float(probabilities[best]),
                "probabilities": dict(zip(names or range(len(probabilities)), probabilities.round(6).tolist())),
                "truncated": bool(out["truncated"][i])}

    def _entities(self, out, i, text):
        if self.text_model:
            return [{"type": out["entity_types"][i, e].decode(), "start": int(out["entity_starts"][i, e]),
                     "end": int(out["entity_ends"][i, e]), "score": float(out["entity_scores"][i, e]),
                     "text": text[out["entity_starts"][i, e] : out["entity_ends"][i, e]]}
                    for e in range(int(out["entity_count"][i]))]
        return group_entities(self.spec["label_names"], out["probabilities"][i], out["word_ids"][i],
                              out["offsets"][i], text)

    def answer_question(self, question, context, n_best=None, max_answer_length=None):
        """The best answer span to `question` in `context`, over overlapping windows.

        Windows as `kbert.data.SquadWindows`: `max_length` tokens, the question cut to
        `max_question_length`, window starts `doc_stride` tokens apart; spans are scored by
        start + end logit among each window's `n_best` starts and ends, a start counting
        only in the window that gives it the most context. Returns dict `text`, `start`,
        `end` (chars), `score`, `probability` (softmax over the n best), or `text` "" and
        `found` False.
        """
        spec = self.spec
        n_best, max_answer_length = n_best or spec["n_best"], max_answer_length or spec["max_answer_length"]
        if self.text_model:
            out = self.runner(questions=np.array([question], dtype=object), contexts=np.array([context], dtype=object))
            if not out["found"][0]:
                return {"text": "", "found": False}
            start, end = int(out["answer_start"][0]), int(out["answer_end"][0])
            return {"text": context[start:end], "start": start, "end": end, "score": float(out["score"][0]),
                    "probability": float(out["probability"][0]), "found": True,
                    "truncated": bool(out["truncated"][0])}
        q_ids = self.tokenizer.tokenize(question)[0][: spec["max_question_length"]]
        c_ids, c_spans, _ = self.tokenizer.tokenize(context)
        budget = self.max_length - len(q_ids) - 3
        windows, begin = [], 0
        while True:
            end = min(begin + budget, len(c_ids))
            windows.append((begin, end))
            if end >= len(c_ids):
                break
            begin += min(end - begin, spec["doc_stride"])
        candidates = []
        for begin, end in windows:
            ids = [self.tokenizer.cls, *q_ids, self.tokenizer.sep, *c_ids[begin:end], self.tokenizer.sep]
            first = len(q_ids) + 2
            batch = {"token_ids": np.zeros((1, self.max_length), "int32"),
                     "segment_ids": np.zeros((1, self.max_length), "int32"),
                     "padding_mask": np.zeros((1, self.max_length), "int32")}
            batch["token_ids"][0, : len(ids)] = ids
            batch["segment_ids"][0, first : len(ids)] = 1
            batch["padding_mask"][0, : len(ids)] = 1
            out = self.run_ids(batch)
            positions = np.arange(first, first + end - begin)
            if not len(positions):
                continue
            starts = positions[np.argsort(-out["start_logits"][0, positions], kind="stable")[:n_best]]
            ends = positions[np.argsort(-out["end_logits"][0, positions], kind="stable")[:n_best]]
            token = lambda p: begin + p - first  # noqa: E731  (context token of window position p)
            starts = [s for s in starts if _max_context(windows, begin, end, token(s))]
            for s in starts:
                for e in ends:
                    if 1 <= e - s + 1 <= max_answer_length:
                        candidates.append((float(out["start_logits"][0, s] + out["end_logits"][0, e]),
                                           c_spans[token(s)][0], c_spans[token(e)][1]))
        best, seen = [], set()
        for score, start, end in sorted(candidates, key=lambda c: -c[0]):
            if (start, end) not in seen and len(best) < n_best:
                seen.add((start, end))
                best.append((score, start, end))
        if not best:
            return {"text": "", "found": False}
        scores = np.array([b[0] for b in best])
        probabilities = np.exp(scores - scores.max())
        score, start, end = best[0]
        return {"text": context[start:end], "start": start, "end": end, "score": score,
                "probability": float(probabilities[0] / probabilities.sum()), "found": True,
                "windows": len(windows)}


def _max_context(windows, begin, end, token):
    """Whether window [begin, end) gives `token` its most context (BERT's rule; ties: earliest)."""
    def score(b, e):
        return min(token - b, e - 1 - token) + 0.01 * (e - b) if b <= token < e else -np.inf
    scores = [score(b, e) for b, e in windows]
    return int(np.argmax(scores)) == windows.index((begin, end))


def group_entities(label_names, probabilities, word_ids, offsets, text):
    """Entities from per-token probabilities: each word tagged by its first piece, conlleval's grouping."""
    words, previous = [], -1
    for t, word in enumerate(word_ids):
        if word >= 0 and word != previous:
            best = int(np.argmax(probabilities[t]))
            words.append([label_names[best], float(probabilities[t, best]), int(offsets[t, 0]), int(offsets[t, 1])])
        elif word >= 0:
            words[-1][3] = int(offsets[t, 1])
        previous = word
    entities, current = [], None
    for tag, probability, start, end in [*words, ["O", 0.0, 0, 0]]:
        prefix, kind = (tag[0], tag[2:]) if tag[:2] in ("B-", "I-") else ("O", None)
        if current and (prefix != "I" or kind != current["type"]):
            current["score"] = float(np.mean(current.pop("scores")))
            current["text"] = text[current["start"] : current["end"]]
            entities.append(current)
            current = None
        if prefix == "B" or (prefix == "I" and current is None):
            current = {"type": kind, "start": start, "end": end, "scores": [probability]}
        elif prefix == "I":
            current["end"] = end
            current["scores"].append(probability)
    return entities


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="text.tflite or token_ids.tflite written by apps/export.py")
    parser.add_argument("texts", nargs="*", help="texts (default: one per line on stdin)")
    parser.add_argument("--pair", action="append", help="second text of a pair (repeat per text)")
    parser.add_argument("--question", action="append", help="QA: a question (repeatable)")
    parser.add_argument("--context", help="QA: a text file, or the text itself")
    args = parser.parse_args(argv)
    model = EdgeModel(args.model)
    if model.spec["task"] == "question_answerer":
        if not args.question or args.context is None:
            sys.exit("A QA model takes --question and --context.")
        try:
            is_file = "\n" not in args.context and pathlib.Path(args.context).is_file()
        except OSError:  # too long for a file name: the text itself
            is_file = False
        context = pathlib.Path(args.context).read_text("utf-8") if is_file else args.context
        results = [{"question": q, **model.answer_question(q, context)} for q in args.question]
    else:
        texts = args.texts or [line.rstrip("\r\n") for line in sys.stdin]
        if args.pair is not None and len(args.pair) != len(texts):
            sys.exit(f"Got {len(texts)} texts but {len(args.pair)} --pair values.")
        results = model.predict(texts, args.pair)
    for result in results:
        print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    try:
        from cli_errors import run  # apps/cli_errors.py: one line per error; a copy of this file alone runs bare
    except ImportError:
        main()
    else:
        run(main)
