"""Every family's classifier exported: ELECTRA's and DistilBERT's WordPiece and ALBERT's SentencePiece as text.tflite
(the tokenizer's op in the graph) and token_ids.tflite, RoBERTa's byte-level BPE as token_ids.tflite alone (no op
holds it); the SavedModel and the edge runner give the Keras model's answers. The folders are the random 1-layer
models and offline-trained tokenizers of `tests/tasks/family_folders_reference.py`."""

import importlib.util
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.export import ExportError, export_saved_model, export_tflite, load_exportable
from kbert.tasks import BertClassifier, BertQuestionAnswerer
from kbert_edge import EdgeModel
from tests.conftest import app_module, run_python
from tests.export.conftest import TENSORFLOW_ONLY, run_edge_predict
from tests.tasks import family_folders_reference as reference

pytestmark = [TENSORFLOW_ONLY, pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                                  reason="transformers builds the families' folders")]

LABELS = ["negative", "neutral", "positive"]
LENGTH = 24
TEXTS = ["A gripping film.", "", "The plot (such as it is) drags - badly.", "naïve CAFÉ déjà vu", "东京 and 😀!",
         "slow " * 30]
PAIRS = ["Dull.", "a film", "", "Café au lait", "fine", "good"]
# family -> (texts per input, whether a string-in model exists)
EXPORTS = {"electra": (1, True), "distilbert": (2, True), "albert": (1, True), "roberta": (2, False)}
FILES = {"electra": ["vocab.txt"], "distilbert": ["vocab.txt"], "albert": ["spiece.model"],
         "roberta": ["vocab.json", "merges.txt"]}


@pytest.fixture(scope="module")
def folders(data_dir, tmp_path_factory):
    pytest.importorskip("sentencepiece", reason="sentencepiece trains ALBERT's model")
    folder = tmp_path_factory.mktemp("family_exports")
    (folder / "cases.json").write_text("[]", "utf-8")
    run_python(reference.__file__, data_dir / "sst2" / "train.tsv", folder / "hf", folder / "cases.json",
               folder / "out.json")
    return folder


@pytest.fixture(scope="module", params=list(EXPORTS))
def exported(request, folders):
    """(family, Keras model, export folder) of a 3-class classifier of the family's folder."""
    family = request.param
    num_texts, text_model = EXPORTS[family]
    keras.utils.set_random_seed(3)
    model = BertClassifier.from_preset(folders / "hf" / family, num_classes=3, sequence_length=LENGTH,
                                       label_names=LABELS)
    model.get_layer("logits").bias.assign(np.array([0.0, 0.2, -0.2], "float32") * 3)  # probabilities apart
    model.save(folders / f"{family}.keras")
    model, tokenizer, spec = load_exportable(folders / f"{family}.keras", num_texts=num_texts)
    out = folders / f"{family}_export"
    export_saved_model(model, tokenizer, spec, out / "saved", text_model=text_model)
    export_tflite(model, tokenizer, spec, out / "tflite", text_model=text_model)
    return family, model, out


def keras_answers(family, model):
    return model.answers(TEXTS if EXPORTS[family][0] == 1 else (TEXTS, PAIRS))


def assert_same_answers(got, expected):
    assert [answer["label"] for answer in got] == [answer["label"] for answer in expected]
    for answer, want in zip(got, expected):
        if want["label"] is not None:
            np.testing.assert_allclose(list(answer["probabilities"].values()), list(want["probabilities"].values()),
                                       atol=1e-4)


def test_the_edge_runner_gives_keras_answers_on_each_familys_exports(exported):
    family, model, out = exported
    expected = keras_answers(family, model)
    assert {answer["label"] for answer in expected} - {None} == {"neutral"}  # texts labelled, blank ones not
    pairs = None if EXPORTS[family][0] == 1 else PAIRS
    names = ["token_ids.tflite", "text.tflite"] if EXPORTS[family][1] else ["token_ids.tflite"]
    for name in names:
        assert_same_answers(EdgeModel(out / "tflite" / name).predict(TEXTS, pairs), expected)
    assert sorted(path.name for path in (out / "tflite").glob("*.tflite")) == sorted(names)
    content = json.loads((out / "tflite" / "export.json").read_text())
    assert content["tokenizer"] == {"kind": type(model.preprocessor.tokenizer).kind,
                                    "files": [*FILES[family], "tokenizer_config.json"]}
    for folder in ("tflite", "saved"):
        assert all((out / folder / file).is_file() for file in content["tokenizer"]["files"])
    if family == "albert":
        assert content["custom_ops"] == {"text.tflite": ["TFText>FastSentencepieceTokenize"]}


def test_the_edge_runner_answers_questions_in_robertas_layout(folders, tmp_path):
    """kbert_edge's question windows on RoBERTa's token ids: `<s> q </s></s> c </s>`, four special tokens a window,
    as Keras's QA reads them; the answers over several windows are the Keras model's."""
    keras.utils.set_random_seed(5)
    model = BertQuestionAnswerer.from_preset(folders / "hf" / "roberta", sequence_length=LENGTH, doc_stride=6,
                                             max_question_length=8)
    head = model.get_layer("span_logits")
    head.kernel.assign(head.kernel * 300)  # answers apart: a random head's logits hardly differ
    model.save(tmp_path / "qa.keras")
    exported = load_exportable(tmp_path / "qa.keras", num_texts=2)
    export_tflite(*exported, tmp_path / "qa", text_model=False)
    edge_model = EdgeModel(tmp_path / "qa" / "token_ids.tflite")
    questions = ["Who wrote the film?", "what is long " * 6, "Where?"]
    contexts = [TEXTS[2] + " " + TEXTS[0] + " It was written by Ann Lee in Paris, and the plot drags.",
                "A short one.", "Paris, naïve café " * 4]
    expected = model.predict((questions, contexts), verbose=0)
    for question, context, want in zip(questions, contexts, expected):
        got = edge_model.answer_question(question, context)
        assert got["windows"] > 1 or question == questions[1]  # strided windows, as Keras reads them
        assert (got["text"], got["start"], got["end"]) == (want["text"], want["start"], want["end"])
        np.testing.assert_allclose(got["probability"], want["probability"], atol=1e-4)


def test_the_saved_model_gives_keras_outputs(exported):
    family, model, out = exported
    loaded = tf.saved_model.load(str(out / "saved"))
    x = TEXTS if EXPORTS[family][0] == 1 else (TEXTS, PAIRS)
    inputs = model.preprocessor.prepare(x).inputs
    width = inputs["token_ids"].shape[1]
    batch = {key: np.pad(inputs[key], [(0, 0), (0, LENGTH - width)]) for key in inputs}
    batch["token_ids"][:, width:] = model.preprocessor.tokenizer.pad_token_id
    logits = loaded.signatures["token_ids"](**{key: tf.constant(value) for key, value in batch.items()})["logits"]
    if model.backbone.num_segments == 0:  # DistilBERT ignores the segment ids WordPiece gives pairs; an eager call
        inputs = {**inputs, "segment_ids": np.zeros_like(inputs["segment_ids"])}  # refuses them
    np.testing.assert_allclose(logits.numpy(), keras.ops.convert_to_numpy(model(inputs)), atol=1e-4)
    if EXPORTS[family][1]:
        texts = {"texts": tf.constant(TEXTS), **({} if EXPORTS[family][0] == 1 else {"pairs": tf.constant(PAIRS)})}
        labels = [label.decode() or None for label in loaded.signatures["serving_default"](**texts)["label"].numpy()]
        assert labels == [answer["label"] for answer in keras_answers(family, model)]
    else:  # the token-ids function alone, which Keras's ExportArchive also makes the default
        assert sorted(loaded.signatures["serving_default"].structured_input_signature[1]) == sorted(batch)


@pytest.mark.parametrize("exported", ["albert", "roberta"], indirect=True)
def test_edge_predict_tokenizes_albert_and_roberta_without_tensorflow(exported):
    """apps/edge_predict.py on token_ids.tflite, in a process that cannot import TensorFlow: kbert_core's
    SentencePiece and ByteLevelBPE give the ids (WordPiece: test_edge_predict.py)."""
    family, model, out = exported
    args = [TEXTS[0], TEXTS[2]] + ([] if EXPORTS[family][0] == 1 else ["--pair", PAIRS[0], "--pair", PAIRS[2]])
    result = run_edge_predict(out / "tflite" / "token_ids.tflite", *args, "--json")
    got = [json.loads(line) for line in result.stdout.splitlines()]
    expected = model.answers([TEXTS[0], TEXTS[2]] if EXPORTS[family][0] == 1 else
                             ([TEXTS[0], TEXTS[2]], [PAIRS[0], PAIRS[2]]))
    assert_same_answers(got, expected)


def test_a_roberta_string_in_model_is_refused_in_one_line(folders, tmp_path):
    model = BertClassifier.from_preset(folders / "hf" / "roberta", num_classes=2, sequence_length=16)
    model.save(tmp_path / "roberta.keras")
    exportable = load_exportable(tmp_path / "roberta.keras")
    refusal = r"the byte_level_bpe tokenizer \(RoBERTa's\) has no TensorFlow or TFLite op, so no string-in model"
    with pytest.raises(ExportError, match=refusal + r".*\(text_model=False\)"):
        export_tflite(*exportable, tmp_path / "tflite")
    with pytest.raises(ExportError, match=refusal):
        export_saved_model(*exportable, tmp_path / "saved")
    with pytest.raises(SystemExit, match=refusal + ".*pass --no-text-model"):
        app_module("export").main(["--model", str(tmp_path / "roberta.keras"), "--format", "tflite",
                                   "--out", str(tmp_path / "out")])
    assert not (tmp_path / "tflite").exists() and not (tmp_path / "out").exists()
