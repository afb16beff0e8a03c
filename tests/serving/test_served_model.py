"""`load_served_model` on each source kind (run folders of each task, a `.keras` file, Hugging Face folders, a
backbone folder, a preset, a TFLite export) answers as the apps' `predict` (or `kbert_edge.EdgeModel`) does; a
TFLite export is served without Keras or TensorFlow; requests' inputs become items or one-line `RequestError`s."""

import json
import os
import subprocess
import sys
import threading

import keras
import numpy as np
import pytest

from kbert_serving.served_model import InputLimits, RequestError, ServedModel, load_served_model
from tests.conftest import APPS
from tests.export.conftest import NER_TAGS, VOCAB, WITHOUT_FRAMEWORKS, numpy_mean_pool, small_backbone

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch",
                                reason="loads each source under one backend (the recipes' tests cover the others)")

MAX_LENGTH = 16
LABELS = ["negative", "positive"]
TEXTS = ["The film was good!", "Angela Merkel visited Paris.", "a bad film " * 8, ""]
QUESTIONS = ["Who visited Paris?", "What is good?"]
CONTEXTS = ["Angela Merkel visited Paris.", "The film was good, the cafe was bad."]


def tokenizer():
    from kbert.text import BertTokenizer

    return BertTokenizer(VOCAB)


def classifier():
    """A two-class classifier of `small_backbone`, its tokenizer and lengths in its preprocessor."""
    from kbert.tasks import BertClassifier, BertTextClassifierPreprocessor

    preprocessor = BertTextClassifierPreprocessor(tokenizer(), MAX_LENGTH)
    return BertClassifier(small_backbone(MAX_LENGTH), 2, preprocessor, label_names=LABELS)


def write_classifier_run(folder):
    """A run folder (as apps/sentiment.py writes) of `classifier()`."""
    from kbert.training import write_run_folder

    model = classifier()
    write_run_folder(folder, model, model.preprocessor.tokenizer, {"task": "sentiment", "max_length": MAX_LENGTH},
                     {"loss": [1.0]})
    return folder


def export_tflite(run, out):
    """Starts apps/export.py --format tflite of `run` (token_ids.tflite only) in a TensorFlow-backend process, and
    returns a function that waits for it and returns `out`: the export runs while the caller does other work."""
    command = [sys.executable, str(APPS / "export.py"), "--model", str(run), "--format", "tflite", "--no-text-model",
               "--out", str(out)]
    log = out.parent / f"{out.name}.log"
    with open(log, "w") as file:
        process = subprocess.Popen(command, env={**os.environ, "KERAS_BACKEND": "tensorflow"}, stdout=file,
                                   stderr=subprocess.STDOUT)

    def finished():
        assert process.wait() == 0, log.read_text()[-3000:]
        return out

    return finished


@pytest.fixture(scope="module")
def classifier_run(tmp_path_factory):
    return write_classifier_run(tmp_path_factory.mktemp("runs") / "sst2")


@pytest.fixture(scope="module")
def exporting(classifier_run, tmp_path_factory):
    """The classifier run's TFLite export, started: `exported` waits for it."""
    finished = export_tflite(classifier_run, tmp_path_factory.mktemp("exports") / "sst2_tflite")
    yield finished
    finished()  # not left running when no test asked for it


@pytest.fixture(scope="module")
def runs(classifier_run, exporting):
    """The folder of `classifier_run` (`sst2`), with run folders of a NER model (`conll`) and a QA model (`squad`),
    and the classifier saved with `model.save` (`sst2.keras`), built while the export runs."""
    from kbert.tasks import (BertQuestionAnswerer, BertQuestionAnswererPreprocessor, BertTokenClassifier,
                             BertTokenClassifierPreprocessor)
    from kbert.training import write_run_folder

    root = classifier_run.parent
    classifier().save(root / "sst2.keras")
    ner = BertTokenClassifier(small_backbone(MAX_LENGTH), NER_TAGS, BertTokenClassifierPreprocessor(tokenizer(),
                                                                                                     MAX_LENGTH))
    ner.get_layer("logits").bias.assign(np.array([0.0, 0.5, 0.5, 0.5, 0.5], "float32"))  # entities appear
    write_run_folder(root / "conll", ner, tokenizer(), {"task": "ner", "max_length": MAX_LENGTH}, {"loss": [1.0]})
    preprocessor = BertQuestionAnswererPreprocessor(tokenizer(), MAX_LENGTH, doc_stride=4, max_question_length=4)
    qa = BertQuestionAnswerer(small_backbone(MAX_LENGTH), preprocessor)
    write_run_folder(root / "squad", qa, tokenizer(), {"task": "qa", "max_length": MAX_LENGTH}, {"loss": [1.0]})
    return root


@pytest.fixture(scope="module")
def exported(exporting):
    return exporting()


def singles(texts):
    return [(text,) for text in texts]


def test_run_folders_answer_as_the_apps_predict(runs):
    from kbert.recipes import ner, qa, sentence

    served = load_served_model(runs / "sst2")
    assert (served.kind, served.name, served.label_names, served.max_length) == ("classifier", "sst2", LABELS,
                                                                                 MAX_LENGTH)
    assert served.answer(singles(TEXTS)) == sentence.predict(runs / "sst2", TEXTS)
    assert served.answer([(TEXTS[0], TEXTS[1])]) == sentence.predict(runs / "sst2", TEXTS[:1], TEXTS[1:2])
    served = load_served_model(runs / "conll", name="ner")
    assert (served.kind, served.name, served.label_names) == ("token_classifier", "ner", NER_TAGS)
    expected = ner.predict(runs / "conll", TEXTS)
    assert served.answer(singles(TEXTS)) == expected and any(answer["entities"] for answer in expected)
    served = load_served_model(runs / "squad")
    assert served.kind == "question_answerer" and served.metadata["inputs"] == ["questions", "contexts"]
    assert served.answer(list(zip(QUESTIONS, CONTEXTS))) == qa.predict(runs / "squad", CONTEXTS, QUESTIONS)


def test_a_model_is_loaded_and_answers_on_a_thread_of_its_own(classifier_run, monkeypatch):
    """Whichever thread asks (`ModelThread`: under torch, a second thread running the model slows every call)."""
    from kbert_serving import served_model

    loaded_on, called_on, keras_model = [], [], served_model._keras_model
    monkeypatch.setattr(served_model, "_keras_model",
                        lambda *args: loaded_on.append(threading.current_thread()) or keras_model(*args))
    served = load_served_model(classifier_run)
    answers = served.model.answers
    monkeypatch.setattr(served.model, "answers", lambda *args, **kwargs: called_on.append(threading.current_thread())
                        or answers(*args, **kwargs))
    expected = served.answer(singles(TEXTS))
    asked = threading.Thread(target=lambda: called_on.append(served.answer(singles(TEXTS)) == expected))
    asked.start()
    asked.join()
    assert loaded_on[0] is not threading.main_thread() and called_on == [loaded_on[0], loaded_on[0], True]


def test_a_keras_file_answers_as_the_apps_predict(runs):
    from kbert.recipes import sentence

    served = load_served_model(runs / "sst2.keras")
    assert (served.kind, served.name, served.source) == ("classifier", "sst2", str(runs / "sst2.keras"))
    assert served.answer(singles(TEXTS)) == sentence.predict(runs / "sst2.keras", TEXTS)


def test_hugging_face_folders(runs, tmp_path):
    """A task checkpoint comes back with its head; a `BertModel` folder serves mean-pooled unit embeddings."""
    from kbert.convert import save_hf
    from kbert.recipes import qa, sentence
    from kbert.saving import load_run

    model = load_run(runs / "sst2")
    tokenizer_of_run = model.preprocessor.tokenizer
    model.export_to_transformers(tmp_path / "hf_sst2")
    served = load_served_model(tmp_path / "hf_sst2")
    assert (served.kind, served.label_names, served.runtime) == ("classifier", LABELS, "keras (torch)")
    expected = sentence.predict(runs / "sst2", TEXTS)
    for answer, wanted in zip(served.answer(singles(TEXTS)), expected):
        assert answer.get("label") == wanted.get("label")
        assert answer.get("probabilities") == pytest.approx(wanted.get("probabilities"), abs=1e-5)
    for run, kind in (("conll", "token_classifier"), ("squad", "question_answerer")):
        load_run(runs / run).export_to_transformers(tmp_path / f"hf_{run}")
        served = load_served_model(tmp_path / f"hf_{run}")
        assert (served.kind, served.label_names) == (kind, NER_TAGS if run == "conll" else None)
    assert served.answer(list(zip(QUESTIONS, CONTEXTS))) == qa.predict(runs / "squad", CONTEXTS, QUESTIONS)
    save_hf(model.backbone, tmp_path / "hf_bert", tokenizer=tokenizer_of_run)
    served = load_served_model(tmp_path / "hf_bert")
    assert served.kind == "sentence_encoder" and served.metadata["inputs"] == ["texts"]
    check_embeddings(served, model.backbone, tokenizer_of_run)


def check_embeddings(served, backbone, tokenizer_of_model):
    """`served`'s embeddings of short texts are `backbone`'s mean over real tokens, of norm 1 (by definition)."""
    texts = TEXTS[:2]
    batch = tokenizer_of_model(texts, max_length=MAX_LENGTH, padding="longest")
    sequence = keras.ops.convert_to_numpy(backbone(batch)["sequence_output"])
    expected = numpy_mean_pool(sequence, keras.ops.convert_to_numpy(batch["padding_mask"]))
    answers = served.answer(singles(texts))
    assert [answer["text"] for answer in answers] == texts
    np.testing.assert_allclose([answer["embedding"] for answer in answers], expected, atol=1e-5)


def test_a_backbone_folder_and_a_preset_serve_sentence_embeddings(tmp_path):
    from kbert.saving.saved_models import save_backbone

    backbone = small_backbone(MAX_LENGTH)
    (tmp_path / "pretrained").mkdir()
    save_backbone(tmp_path / "pretrained", backbone, tokenizer())
    served = load_served_model(tmp_path / "pretrained")
    assert (served.kind, served.name, served.label_names) == ("sentence_encoder", "pretrained", None)
    check_embeddings(served, backbone, tokenizer())
    served = load_served_model("bert_tiny")
    assert (served.kind, served.name, served.source) == ("sentence_encoder", "bert_tiny", "bert_tiny")
    [answer] = served.answer([("a film",)])
    assert len(answer["embedding"]) == 128 and np.linalg.norm(answer["embedding"]) == pytest.approx(1, abs=1e-5)
    assert served.token_counts(["a film", ""]) == [4, 2]  # [CLS] a film [SEP]; [CLS] [SEP]


def test_a_tflite_export_answers_as_edge_model_and_the_apps_predict(runs, exported):
    from kbert.recipes import sentence
    from kbert_edge import EdgeModel

    served = load_served_model(exported)
    assert (served.kind, served.runtime, served.name, served.label_names) == ("classifier", "litert", "sst2_tflite",
                                                                              LABELS)
    answers = served.answer(singles(TEXTS))
    assert answers == EdgeModel(exported / "token_ids.tflite").predict(TEXTS)
    for answer, wanted in zip(answers, sentence.predict(runs / "sst2", TEXTS)):  # Keras, in this process
        assert answer.get("label") == wanted.get("label")
        assert answer.get("probabilities") == pytest.approx(wanted.get("probabilities"), abs=1e-4)
    assert load_served_model(exported / "token_ids.tflite").name == "token_ids"


SERVE_AN_EXPORT = """
import json, sys
from kbert_serving import load_served_model
model = load_served_model(sys.argv[1])
print(json.dumps({"runtime": model.runtime, "answers": model.answer([(text,) for text in json.loads(sys.argv[2])])}))
"""


def test_serving_a_tflite_export_imports_no_keras_and_no_tensorflow(exported, tmp_path):
    (tmp_path / "serve_export.py").write_text(SERVE_AN_EXPORT)
    command = [sys.executable, "-c", WITHOUT_FRAMEWORKS, str(tmp_path / "serve_export.py"), str(exported),
               json.dumps(TEXTS)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout)
    assert found["runtime"] == "litert"
    assert found["answers"] == json.loads(json.dumps(load_served_model(exported).answer(singles(TEXTS))))


def test_bad_sources_are_one_line_each(exported, tmp_path):
    from kbert.convert import save_hf
    from kbert.tasks import BertPretrainer

    (tmp_path / "export_without_tflite").mkdir()
    for name in ("export.json", "vocab.txt"):
        (tmp_path / "export_without_tflite" / name).write_bytes((exported / name).read_bytes())
    save_hf(BertPretrainer(small_backbone(MAX_LENGTH)), tmp_path / "hf_pretrainer", tokenizer=tokenizer())
    for source, error, words in [
            (tmp_path / "missing", FileNotFoundError, "missing' is neither a preset"),
            (tmp_path / "missing.tflite", FileNotFoundError, "missing.tflite does not exist"),
            (tmp_path / "export_without_tflite", FileNotFoundError, "holds export.json but no token_ids.tflite")]:
        with pytest.raises(error) as raised:
            load_served_model(source)
        assert words in str(raised.value) and "\n" not in str(raised.value), str(raised.value)
    masked_lm = load_served_model(tmp_path / "hf_pretrainer")  # a pretraining checkpoint answers fill-mask requests
    assert masked_lm.kind == "masked_lm" and masked_lm.metadata["mask_token"] == "[MASK]"
    with pytest.raises(RequestError, match=r"texts\[0\] \('a film'\) has no mask token"):
        masked_lm.items({"texts": ["a film"]}, InputLimits())


def model_of(kind):
    """A `ServedModel` of `kind` with no model behind it: what parsing a request needs."""
    served = ServedModel("m", "m", None, MAX_LENGTH)
    served.kind = kind
    return served


LIMITS = InputLimits(max_items=3, max_text_chars=20)


@pytest.mark.parametrize("kind, inputs, items", [
    ("classifier", {"texts": ["a film", "a bad film"]}, [("a film",), ("a bad film",)]),
    ("classifier", {"texts": "a film"}, [("a film",)]),  # one string: one text
    ("classifier", {"texts": ["a", "b"], "pairs": ["c", "d"]}, [("a", "c"), ("b", "d")]),
    ("classifier", {"texts": ["a"], "pairs": None}, [("a",)]),
    ("token_classifier", {"texts": ["Angela met Ann.", ""]}, [("Angela met Ann.",), ("",)]),
    ("question_answerer", {"questions": ["Who?", "Where?"], "contexts": "Ann sings."},
     [("Who?", "Ann sings."), ("Where?", "Ann sings.")]),  # one context for every question
    ("question_answerer", {"questions": ["Who?"], "contexts": ["Ann sings."]}, [("Who?", "Ann sings.")]),
    ("sentence_encoder", {"texts": ["a", "b", "c"]}, [("a",), ("b",), ("c",)]),
])
def test_items(kind, inputs, items):
    assert model_of(kind).items(inputs, LIMITS) == items


@pytest.mark.parametrize("kind, inputs, status, message", [
    ("classifier", ["a film"], 400, "The inputs must be a JSON object with 'texts' and 'pairs' (optional) (lists of "
                                    "strings of one length), not a list."),
    ("classifier", {"text": ["a"]}, 400, "Unknown input 'text': this classifier takes 'texts' and 'pairs'"),
    ("token_classifier", {"texts": ["a"], "pairs": ["b"]}, 400,
     "Unknown input 'pairs': this token_classifier takes 'texts' (a list of strings)."),
    ("sentence_encoder", {}, 400, "The request has no 'texts': this sentence_encoder takes 'texts'"),
    ("classifier", {"texts": 3}, 400, "'texts' must be a list of strings, not a number."),
    ("classifier", {"texts": {"a": 1}}, 400, "'texts' must be a list of strings, not an object."),
    ("classifier", {"texts": []}, 400, "'texts' is empty: give at least one string."),
    ("classifier", {"texts": ["a", None]}, 400, "texts[1] is null, not a string."),
    ("classifier", {"texts": ["a", "b"], "pairs": ["c", 4]}, 400, "pairs[1] is a number, not a string."),
    ("classifier", {"texts": ["a", "b"], "pairs": ["c"]}, 400, "2 texts but 1 pairs: give one each."),
    ("question_answerer", {"questions": ["Who?"]}, 400, "'contexts' must be a list of strings, not null."),
    ("question_answerer", {"questions": ["Who?"], "contexts": ["a", "b"]}, 400, "1 questions but 2 contexts"),
    ("classifier", {"texts": ["a"] * 4}, 413, "'texts' holds 4 strings; this server takes at most 3 a request"),
    ("classifier", {"texts": ["a", "b" * 21]}, 413, "texts[1] is 21 characters long; this server takes at most 20."),
    ("question_answerer", {"questions": ["Who?"], "contexts": ["c" * 21]}, 413, "contexts[0] is 21 characters"),
])
def test_bad_inputs_are_one_line_naming_the_field(kind, inputs, status, message):
    with pytest.raises(RequestError) as raised:
        model_of(kind).items(inputs, LIMITS)
    assert raised.value.status == status and str(raised.value).startswith(message), str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("kind, instance, item", [
    ("classifier", "a film", ("a film",)),
    ("classifier", {"text": "a film"}, ("a film",)),
    ("classifier", {"text": "a man plays", "pair": "someone plays"}, ("a man plays", "someone plays")),
    ("sentence_encoder", "a film", ("a film",)),
    ("question_answerer", {"question": "Who?", "context": "Ann sings."}, ("Who?", "Ann sings.")),
])
def test_item_of_an_instance(kind, instance, item):
    assert model_of(kind).item_of(instance, 0, LIMITS) == item


@pytest.mark.parametrize("kind, instance, status, field", [
    ("classifier", 5, 400, "a number: give a string or an object"),
    ("classifier", ["a film"], 400, "a list: give a string or an object"),
    ("classifier", {"sentence": "a film"}, 400, "'sentence': this classifier's instances take 'text' and 'pair'"),
    ("token_classifier", {"text": "a", "pair": "b"}, 400, "'pair': this token_classifier's instances take 'text'"),
    ("classifier", {"text": 5}, 400, "text"),
    ("classifier", {"text": "a", "pair": ["b"]}, 400, "pair"),
    ("classifier", {"pair": "b"}, 400, "text"),
    ("question_answerer", "Who?", 400, "context"),  # a question alone: no context
    ("question_answerer", {"question": "Who?", "context": "c" * 21}, 413, "context"),
])
def test_a_bad_instance_is_one_line_naming_its_index_and_field(kind, instance, status, field):
    with pytest.raises(RequestError) as raised:
        model_of(kind).item_of(instance, 7, LIMITS)
    message = str(raised.value)
    assert raised.value.status == status and message.startswith("instances[7]") and field in message, message
    assert "\n" not in message


@pytest.mark.parametrize("kind", ["classifier", "multi_label", "regressor", "sentence_encoder"])
def test_packed_rows_answer_as_padded_batches(served, kind):
    """`pack` (the default): a call's texts on packed rows (`BertClassifier.answers(pack=True)`), the same answers
    within 1e-5 as padded batches."""
    model = served[kind]
    texts = ["a film", "an utterly gripping film, long and never dull for a single minute " * 2, "dull", "ok then"]
    assert model.pack
    packed = model.answer(singles(texts))
    model.pack = False
    try:
        padded = model.answer(singles(texts))
    finally:
        model.pack = True
    for a, b in zip(packed, padded, strict=True):
        assert a.keys() == b.keys() and a.get("label") == b.get("label")
        for key in ("probabilities", "embedding", "score"):
            if key in a:
                values = list(a[key].values()) if isinstance(a[key], dict) else a[key]
                expected = list(b[key].values()) if isinstance(b[key], dict) else b[key]
                np.testing.assert_allclose(values, expected, atol=1e-5)
