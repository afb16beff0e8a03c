"""The TFLite Task Library and MediaPipe Tasks run `token_ids_metadata.tflite` unchanged, as kbert does.

Each client runs in `.venv-edge-clients` (`tools/edge_clients_venv.sh`; `runtime_clients.py` is
the script it runs), tokenizing with the vocabulary packed in the file's metadata; its outputs
are compared with the Keras model's on the same strings, tokenized by kbert.
"""

import json
import subprocess

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.export import ExportSpec, export_tflite
from kbert.export import runtimes
from kbert.export.tflite import interpreter
from kbert.layers import mean_pool
from kbert.tasks import BertClassifier, BertQuestionAnswerer
from kbert.tasks.bert_question_answerer_preprocessor import BertQuestionAnswererPreprocessor
from tests.conftest import TESTS
from tests.export.conftest import TENSORFLOW_ONLY, VOCAB, tiny_backbone

pytestmark = TENSORFLOW_ONLY
NEEDS_CLIENTS = pytest.mark.skipif(runtimes.clients_python() is None, reason=(
    "the TFLite Task Library and MediaPipe are not installed: tools/edge_clients_venv.sh creates "
    ".venv-edge-clients (tflite-support pins protobuf<4, so not in .venv)"))
CLIENT_SCRIPT = TESTS / "export" / "runtime_clients.py"
LABELS = ["negative", "neutral", "positive"]
MAX_LENGTH = 24
# ASCII, since the runtimes' tokenizer lowercases ASCII only; the last one is cut at MAX_LENGTH tokens.
TEXTS = ["The film was good!", "Angela Merkel visited Paris.", "what is a bad film", "unaffable cafe, naive",
         "", "a bad film " * 10]


def run_client(client, path, inputs):
    result = subprocess.run([str(runtimes.clients_python()), str(CLIENT_SCRIPT), client, str(path)],
                            input=json.dumps(inputs), capture_output=True, text=True)
    if result.returncode:
        raise AssertionError(f"{client} failed on {path.name}:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def classifier(tmp_path_factory, tokenizer):
    model = BertClassifier(tiny_backbone(), len(LABELS), label_names=LABELS)
    batch = tokenizer(TEXTS, max_length=MAX_LENGTH)
    head = model.get_layer("logits")  # confident, different labels for different texts:
    head.kernel.assign(head.kernel * 40.0)
    head.bias.assign(head.bias - keras.ops.mean(model(batch), axis=0))
    root = tmp_path_factory.mktemp("runtime_classifier")
    spec = ExportSpec("classifier", MAX_LENGTH, label_names=tuple(LABELS))
    for quantize in ("none", "dynamic-int8"):
        export_tflite(model, tokenizer, spec, root / quantize, quantize, text_model=False, metadata=True)
    return root, batch, keras.ops.convert_to_numpy(keras.ops.softmax(model(batch), axis=-1))


@NEEDS_CLIENTS
@pytest.mark.parametrize("client", ["task_library_classifier", "mediapipe_classifier"])
def test_classifier_runtimes_give_the_keras_probabilities(classifier, client):
    root, _, expected = classifier
    assert len(set(expected.argmax(-1))) > 1
    got = np.array([[scores[label] for label in LABELS]
                    for scores in run_client(client, root / "none" / runtimes.FILE, TEXTS)])
    np.testing.assert_allclose(got, expected, atol=1e-4)
    assert got.argmax(-1).tolist() == expected.argmax(-1).tolist()


@NEEDS_CLIENTS
@pytest.mark.parametrize("client", ["task_library_classifier", "mediapipe_classifier"])
def test_dynamic_int8_classifier_runtimes_run_the_file_as_kbert_does(classifier, client):
    """The same outputs as LiteRT running the file on kbert's token ids; within 0.03 of float32 Keras."""
    root, batch, expected = classifier
    path = root / "dynamic-int8" / runtimes.FILE
    runner = interpreter(path).get_signature_runner(runtimes.SIGNATURE)
    lite = np.concatenate([runner(**{k: v[i : i + 1] for k, v in batch.items()})["probability"]
                           for i in range(len(TEXTS))])
    got = np.array([[scores[label] for label in LABELS] for scores in run_client(client, path, TEXTS)])
    np.testing.assert_allclose(got, lite, atol=1e-4)
    assert got.argmax(-1).tolist() == lite.argmax(-1).tolist()
    np.testing.assert_allclose(got, expected, atol=0.03)


@NEEDS_CLIENTS
@pytest.mark.parametrize("client", ["task_library_classifier", "mediapipe_classifier"])
def test_multi_label_classifier_runtimes_give_a_sigmoid_per_class(tmp_path, tokenizer, client):
    """A multi-label model's file (issue 42): each runtime gives every class its own probability, the Keras
    model's sigmoid, so that several classes can pass a score threshold."""
    model = BertClassifier(tiny_backbone(), len(LABELS), label_names=LABELS, multi_label=True)
    model.get_layer("logits").bias.assign(np.array([3.0, 2.0, -3.0], "float32"))  # two likely classes, one not
    spec = ExportSpec("classifier", MAX_LENGTH, label_names=tuple(LABELS), multi_label=True)
    export_tflite(model, tokenizer, spec, tmp_path, text_model=False, metadata=True)
    texts = TEXTS[:4]
    expected = keras.ops.convert_to_numpy(keras.ops.sigmoid(model(tokenizer(texts, max_length=MAX_LENGTH))))
    got = np.array([[scores[label] for label in LABELS] for scores in run_client(client, tmp_path / runtimes.FILE,
                                                                                    texts)])
    np.testing.assert_allclose(got, expected, atol=1e-4)
    assert (got[:, :2] > 0.5).all() and (got[:, 2] < 0.5).all()


@NEEDS_CLIENTS
def test_task_library_question_answerer_gives_the_keras_answers(tmp_path, tokenizer):
    keras.utils.set_random_seed(1)
    backbone = BertBackbone.from_preset("bert_tiny", vocabulary_size=len(VOCAB), max_sequence_length=384)
    model = BertQuestionAnswerer(backbone, BertQuestionAnswererPreprocessor(tokenizer, 384))
    questions = ["Who visited Paris?", "What was good?"]
    contexts = ["Angela Merkel visited Paris in the film.", "The film was good, the cafe was bad."]
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    model.fit((questions, contexts), ["Angela Merkel", "The film"], epochs=30, verbose=0)
    spec = ExportSpec("question_answerer", 384, num_texts=2)
    export_tflite(model, tokenizer, spec, tmp_path / "qa", text_model=False, metadata=True)
    answers = run_client("task_library_question_answerer", tmp_path / "qa" / runtimes.FILE,
                         list(zip(questions, contexts)))
    batch = tokenizer(questions, contexts, max_length=384, truncation="only_second")
    logits = {k: keras.ops.convert_to_numpy(v) for k, v in model(batch).items()}
    for i, (ours, theirs) in enumerate(zip(model.predict((questions, contexts)), answers)):
        assert theirs[0]["text"] == ours["text"]
        for answer in theirs:  # its n-best: token spans scored by the logits kbert computes
            np.testing.assert_allclose(
                answer["logit"], logits["start_logits"][i, answer["start"]] + logits["end_logits"][i, answer["end"]],
                atol=1e-4)


@NEEDS_CLIENTS
def test_mediapipe_text_embedder_gives_the_keras_embeddings(tmp_path, tokenizer):
    backbone = tiny_backbone()
    export_tflite(backbone, tokenizer, ExportSpec("backbone", MAX_LENGTH), tmp_path / "embedder",
                  text_model=False, metadata=True)
    got = np.array(run_client("mediapipe_embedder", tmp_path / "embedder" / runtimes.FILE, TEXTS))
    batch = tokenizer(TEXTS, max_length=MAX_LENGTH)
    expected = keras.ops.convert_to_numpy(mean_pool(backbone(batch)["sequence_output"], batch["padding_mask"]))
    np.testing.assert_allclose(got, expected, atol=1e-4)


@NEEDS_CLIENTS
def test_mediapipe_text_embedder_gives_a_trained_sentence_encoders_embeddings(tmp_path, tokenizer):
    from kbert import BertSentenceEncoder

    encoder = BertSentenceEncoder(tiny_backbone(), pooling="max")  # its own pooling, not the backbone's mean
    export_tflite(encoder, tokenizer, ExportSpec("backbone", MAX_LENGTH), tmp_path / "embedder", text_model=False,
                  metadata=True)
    got = np.array(run_client("mediapipe_embedder", tmp_path / "embedder" / runtimes.FILE, TEXTS))
    expected = keras.ops.convert_to_numpy(encoder(tokenizer(TEXTS, max_length=MAX_LENGTH)))
    np.testing.assert_allclose(got, expected, atol=1e-4)
