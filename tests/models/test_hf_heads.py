"""Hugging Face checkpoints with their heads, both ways, against `transformers` itself.

Tiny random checkpoints of every BERT class that kbert reads are made by `transformers` in a
process of its own (`hf_heads_reference.py`); kbert loads each into its task model and must
give every output within 1e-4. kbert's models written back as Hugging Face folders must load
in `transformers` and give kbert's outputs.
"""

import importlib.util
import json
import re

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import kbert
from kbert import BertBackbone
from kbert.text import BertTokenizer
from tests.conftest import run_python
from tests.models import hf_heads_reference as reference

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                reason="transformers is a test-only dependency")

SCRIPT = reference.__file__
TASKS = {
    "BertModel": lambda folder: BertBackbone.from_hf(folder),
    "BertForPreTraining": lambda folder: kbert.BertPretrainer.from_preset(folder),
    "BertForMaskedLM": lambda folder: kbert.BertPretrainer.from_preset(folder),
    "BertForSequenceClassification": lambda folder: kbert.BertClassifier.from_preset(folder),
    "BertForTokenClassification": lambda folder: kbert.BertTokenClassifier.from_preset(folder),
    "BertForQuestionAnswering": lambda folder: kbert.BertQuestionAnswerer.from_preset(folder),
}
MASK_POSITIONS = [[1, 5], [2, 4]]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hf_heads")
    run_python(SCRIPT, "make", folder)
    return folder


def kbert_outputs(model):
    """`model`'s outputs on the reference inputs, by Hugging Face's names."""
    inputs = {"token_ids": np.array(reference.INPUTS["input_ids"]),
              "segment_ids": np.array(reference.INPUTS["token_type_ids"]),
              "padding_mask": np.array(reference.INPUTS["attention_mask"])}
    backbone = model if isinstance(model, BertBackbone) else model.backbone
    encoded = backbone(inputs)
    arrays = {"hidden_states": encoded["sequence_output"], "pooler_output": encoded["pooled_output"]}
    if isinstance(model, kbert.BertPretrainer):
        outputs = model({**inputs, "mask_positions": np.array(MASK_POSITIONS)})
        arrays["prediction_logits"] = outputs["mlm"]
        if "nsp" in outputs:
            arrays["seq_relationship_logits"] = outputs["nsp"]
    elif isinstance(model, kbert.BertQuestionAnswerer):
        arrays.update(model(inputs))
    elif not isinstance(model, BertBackbone):
        arrays["logits"] = model(inputs)
    return {key: keras.ops.convert_to_numpy(value) for key, value in arrays.items()}


def assert_same_outputs(kbert_arrays, hf_arrays, tolerance=1e-4):
    """Every output both sides have, at the real (unpadded) positions."""
    real = np.array(reference.INPUTS["attention_mask"], bool)
    hf_arrays = dict(hf_arrays)
    if "prediction_logits" in hf_arrays:  # kbert predicts at the masked positions only
        hf_arrays["prediction_logits"] = np.take_along_axis(
            hf_arrays["prediction_logits"], np.array(MASK_POSITIONS)[..., None], axis=1)
    compared = []
    for key, value in kbert_arrays.items():
        if key not in hf_arrays or (key == "pooler_output" and "pooler_output" not in hf_arrays):
            continue
        expected = hf_arrays[key]
        if value.shape[:2] == real.shape and key != "prediction_logits":
            value, expected = value[real], expected[real]
        np.testing.assert_allclose(value, expected, atol=tolerance, rtol=0, err_msg=key)
        compared.append(key)
    return compared


@pytest.mark.parametrize("architecture", reference.CLASSES)
def test_checkpoints_load_with_their_heads(checkpoints, architecture):
    model = TASKS[architecture](checkpoints / architecture)
    compared = assert_same_outputs(kbert_outputs(model), np.load(checkpoints / f"{architecture}.npz"))
    head = {"BertModel": "pooler_output", "BertForPreTraining": "seq_relationship_logits",
            "BertForMaskedLM": "prediction_logits", "BertForQuestionAnswering": "start_logits"}
    assert head.get(architecture, "logits") in compared and "hidden_states" in compared, compared


def test_labels_come_from_id2label(checkpoints):
    model = kbert.BertTokenClassifier.from_preset(checkpoints / "BertForTokenClassification")
    assert model.label_names == ["O", "B-PER", "I-PER"]
    classifier = kbert.BertClassifier.from_preset(checkpoints / "BertForSequenceClassification")
    assert (classifier.num_classes, classifier.label_names) == (3, ["O", "B-PER", "I-PER"])


def test_a_multi_label_checkpoint_loads_with_its_head_labels_and_sigmoid(checkpoints):
    """Hugging Face's `problem_type="multi_label_classification"`: kbert's probabilities are the sigmoid of
    `transformers`' logits (what its pipelines apply), within 1e-4; asking for a single-label model of the same
    checkpoint keeps the backbone alone."""
    model = kbert.BertClassifier.from_preset(checkpoints / reference.MULTI_LABEL)
    assert (model.multi_label, model.label_names) == (True, ["O", "B-PER", "I-PER"])
    logits = np.load(checkpoints / "BertForSequenceClassification.npz")["logits"]  # the same weights
    probabilities = model.decode(kbert_outputs(model)["logits"], None)
    np.testing.assert_allclose(probabilities, 1 / (1 + np.exp(-logits)), atol=1e-4, rtol=0)
    assert not np.allclose(probabilities.sum(-1), 1.0, atol=1e-3)  # not a softmax
    single = kbert.BertClassifier.from_preset(checkpoints / reference.MULTI_LABEL, num_classes=3, multi_label=False)
    assert not np.allclose(kbert_outputs(single)["logits"], logits, atol=1e-3)  # a new head


def test_other_classes_or_another_task_take_the_backbone_alone(checkpoints):
    folder = checkpoints / "BertForSequenceClassification"
    fresh = kbert.BertClassifier.from_preset(folder, num_classes=2)
    assert fresh.num_classes == 2
    tagger = kbert.BertTokenClassifier.from_preset(folder, label_names=["O", "B-X"])
    hf = np.load(checkpoints / "BertForSequenceClassification.npz")
    assert_same_outputs({"hidden_states": kbert_outputs(tagger)["hidden_states"]}, hf)


def test_kbert_models_load_in_transformers_with_the_same_outputs(tmp_path):
    keras.utils.set_random_seed(1)
    models = {
        "backbone": BertBackbone.from_preset("bert_tiny"),
        "classifier": kbert.BertClassifier.from_preset("bert_tiny", num_classes=3, label_names=list("abc")),
        "regressor": kbert.BertClassifier.from_preset("bert_tiny", num_classes=1),
        "multi_label": kbert.BertClassifier.from_preset("bert_tiny", num_classes=3, label_names=list("xyz"),
                                                        multi_label=True),
        "tagger": kbert.BertTokenClassifier.from_preset("bert_tiny", label_names=["O", "B-LOC"]),
        "qa": kbert.BertQuestionAnswerer.from_preset("bert_tiny"),
        "pretrainer": kbert.BertPretrainer.from_preset("bert_tiny"),
        "mlm": kbert.BertPretrainer.from_preset("bert_tiny", next_sentence=False),
    }
    for name, model in models.items():
        rng = np.random.default_rng(0)
        for variable in model.weights:  # non-zero biases and LayerNorms, so that a dropped one shows
            noise = 0.05 * rng.normal(size=variable.shape)
            variable.assign((keras.ops.convert_to_numpy(variable) + noise).astype("float32"))
        if isinstance(model, BertBackbone):
            model.export_to_transformers(tmp_path / name, BertTokenizer.from_preset("bert_tiny"))
        else:
            model.export_to_transformers(tmp_path / name)
    run_python(SCRIPT, "run", *[tmp_path / name for name in models])
    for name, model in models.items():
        hf = np.load(tmp_path / name / "hf_outputs.npz")
        compared = assert_same_outputs(kbert_outputs(model), hf)
        assert len(compared) >= 2, (name, compared)
        assert (tmp_path / name / "vocab.txt").is_file()
        # Hugging Face's tokenizer cuts a long text where kbert's model reads (its pipelines truncate so)
        read = model.max_sequence_length if isinstance(model, BertBackbone) else model.preprocessor.sequence_length
        assert len(hf["long_text_ids"]) == read < len(reference.LONG_TEXT.split()), name
        if isinstance(model, kbert.BertClassifier):
            inputs = model.preprocessor.prepare([reference.LONG_TEXT]).inputs
            kept = np.asarray(inputs["token_ids"])[0][np.asarray(inputs["padding_mask"])[0].astype(bool)]
            assert hf["long_text_ids"].tolist() == kept.tolist(), name
    hf = np.load(tmp_path / "multi_label" / "hf_outputs.npz")
    assert str(hf["problem_type"]) == "multi_label_classification"
    kbert_probabilities = models["multi_label"].decode(kbert_outputs(models["multi_label"])["logits"], None)
    np.testing.assert_allclose(kbert_probabilities, hf["probabilities"], atol=1e-4, rtol=0)


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="weights only: runs once")
def test_the_real_checkpoint_round_trips_exactly(tmp_path, minilm_dir):
    BertBackbone.from_preset("all_minilm_l6_v2").export_to_transformers(tmp_path, BertTokenizer.from_preset(minilm_dir))
    exported, original = load_file(str(tmp_path / "model.safetensors")), load_file(str(minilm_dir / "model.safetensors"))
    original = {key: value for key, value in original.items() if key != "embeddings.position_ids"}
    assert set(exported) == set(original)
    assert max(float(np.abs(exported[key] - original[key]).max()) for key in original) == 0.0


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="settings only: runs once")
def test_what_hugging_face_has_no_key_for_comes_back_from_its_folder(tmp_path):
    """A multi-label threshold, the windows a classifier reads long texts through and QA's limits go to
    config.json under "kbert" and come back with `from_preset`, so that the model answers as before (they
    were lost: a long text was cut, the threshold 0.5); arguments given to `from_preset` still win."""
    classifier = kbert.BertClassifier.from_preset("bert_tiny", num_classes=3, label_names=list("xyz"),
                                                  multi_label=True, threshold=0.3, window_pooling="max")
    classifier.preprocessor = kbert.BertTextClassifierPreprocessor(classifier.preprocessor.tokenizer,
                                                                   sequence_length=8, doc_stride=3,
                                                                   train_windows="all")
    classifier.export_to_transformers(tmp_path / "classifier")
    back = kbert.BertClassifier.from_preset(tmp_path / "classifier")
    assert (back.threshold, back.window_pooling, back.multi_label) == (0.3, "max", True)
    assert (back.preprocessor.sequence_length, back.preprocessor.doc_stride,
            back.preprocessor.train_windows) == (8, 3, "all")
    text = ["the film " * 20]
    np.testing.assert_allclose(back.predict(text, verbose=0), classifier.predict(text, verbose=0), atol=1e-6)
    assert kbert.BertClassifier.from_preset(tmp_path / "classifier", threshold=0.6,
                                            sequence_length=16).threshold == 0.6
    qa = kbert.BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=64, max_answer_length=7)
    qa.export_to_transformers(tmp_path / "qa")
    back = kbert.BertQuestionAnswerer.from_preset(tmp_path / "qa")
    assert (back.max_answer_length, back.preprocessor.sequence_length) == (7, 64)  # not 30 and 384
    assert kbert.BertClassifier.from_preset(tmp_path / "qa", num_classes=2).preprocessor.sequence_length == 128


# --- bad checkpoints: a clear error naming the file and the weight, never a partial load ---------

@pytest.fixture
def classifier_checkpoint(checkpoints, tmp_path):
    folder = tmp_path / "classifier"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "vocab.txt"):
        (folder / name).write_bytes((checkpoints / "BertForSequenceClassification" / name).read_bytes())
    return folder


def edit_weights(folder, edit):
    weights = load_file(str(folder / "model.safetensors"))
    edit(weights)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})


def edit_config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))


def test_a_head_that_disagrees_with_its_labels_is_refused(classifier_checkpoint):
    edit_config(classifier_checkpoint, id2label={"0": "neg", "1": "pos"})
    with pytest.raises(ValueError, match=r"model\.safetensors: weight logits/kernel has shape"):
        kbert.BertClassifier.from_preset(classifier_checkpoint)


def test_a_missing_head_weight_is_named(classifier_checkpoint):
    edit_weights(classifier_checkpoint, lambda weights: weights.pop("classifier.bias"))
    with pytest.raises(ValueError, match=r"model\.safetensors: missing head weight.*classifier\.bias"):
        kbert.BertClassifier.from_preset(classifier_checkpoint)


def test_an_extra_weight_is_named(classifier_checkpoint):
    edit_weights(classifier_checkpoint, lambda weights: weights.update(
        {"classifier2.weight": np.zeros((3, 32), "float32")}))
    with pytest.raises(ValueError, match=r"model\.safetensors.*classifier2\.weight"):
        kbert.BertClassifier.from_preset(classifier_checkpoint)


@pytest.mark.parametrize("changes, message", [
    ({"architectures": ["BertForNextSentencePrediction"]}, "BertForNextSentencePrediction.*is not supported"),
    ({"model_type": "deberta-v2"}, "model_type='deberta-v2' is not supported; kbert reads bert, roberta, albert"),
    ({"model_type": "roberta"}, r"architectures=\['BertForSequenceClassification'\] is not supported for "
                                "model_type 'roberta'"),
    ({"problem_type": "ranking"}, "problem_type='ranking' is not supported"),
])
def test_unsupported_checkpoints_are_refused_by_name(classifier_checkpoint, changes, message):
    edit_config(classifier_checkpoint, **changes)
    with pytest.raises(ValueError, match=rf"config\.json.*{message}"):
        kbert.BertClassifier.from_preset(classifier_checkpoint)


@pytest.fixture(scope="module")
def kbert_classifier_folder(tmp_path_factory):
    """A classifier kbert wrote as a Hugging Face folder, with its settings under "kbert" in config.json."""
    folder = tmp_path_factory.mktemp("kbert_classifier") / "classifier"
    kbert.BertClassifier.from_preset("bert_tiny", num_classes=2, multi_label=True).export_to_transformers(folder)
    return folder


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="settings only: runs once")
@pytest.mark.parametrize("settings, message", [
    ({"task": {"threshold": "high"}}, "kbert.task.threshold is 'high' (a string); expected a number"),
    ({"task": {"threshold": True}}, "kbert.task.threshold is True (a boolean); expected a number"),
    ({"preprocessor": {"sequence_length": "128"}}, "kbert.preprocessor.sequence_length is '128' (a string); "
                                                   "expected an integer"),
    ({"preprocessor": {"doc_stride": 6.5}}, "kbert.preprocessor.doc_stride is 6.5 (a number); expected an integer "
                                            "or null"),
    ({"preprocessor": ["sequence_length", 128]}, "kbert.preprocessor is ['sequence_length', 128] (a list); "
                                                   "expected an object of settings"),
    ({"task": {"treshold": 0.4}}, "kbert.task.treshold is not a setting kbert writes; expected one of"),
    ("0.4", "kbert is '0.4' (a string); expected an object"),
])
def test_kbert_settings_of_the_wrong_type_are_named_with_the_file(kbert_classifier_folder, tmp_path, settings,
                                                                   message):
    """A "kbert" entry of config.json edited by hand (a string for a number, a list for an object) ended in a bare
    TypeError deep in the model: one line names the file, the field and what it must be."""
    folder = tmp_path / "classifier"
    folder.mkdir()
    for path in kbert_classifier_folder.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    edit_config(folder, kbert=settings)
    with pytest.raises(ValueError, match="^" + re.escape(f"{folder / 'config.json'}: {message}")):
        kbert.BertClassifier.from_preset(folder)


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="settings only: runs once")
def test_every_setting_kbert_writes_has_a_type_to_check(tmp_path):
    """What `save_hf` writes under "kbert" for every task reads back through the check (none unknown to it)."""
    from kbert.convert import hf_kbert_settings

    models = [kbert.BertClassifier.from_preset("bert_tiny", num_classes=2),
              kbert.BertTokenClassifier.from_preset("bert_tiny", label_names=["O", "B-X"]),
              kbert.BertQuestionAnswerer.from_preset("bert_tiny"), kbert.BertPretrainer.from_preset("bert_tiny")]
    for i, model in enumerate(models):
        model.export_to_transformers(tmp_path / str(i))
        written = json.loads((tmp_path / str(i) / "config.json").read_text())["kbert"]
        assert hf_kbert_settings(tmp_path / str(i)) == (written["task"], written["preprocessor"])


def test_a_span_boundary_pretrainer_is_not_written_without_its_head(tmp_path):
    model = kbert.BertPretrainer(kbert.BertBackbone.from_preset("bert_tiny"), next_sentence=False, span_boundary=True)
    with pytest.raises(ValueError, match="no class for SpanBERT's span-boundary head"):
        model.export_to_transformers(tmp_path / "sbo")
    assert not (tmp_path / "sbo").exists()
