"""The task heads of BERT's family (RoBERTa, ALBERT, ELECTRA, DistilBERT) from Hugging Face folders and back, against
`transformers`.

`transformers` makes a tiny random model of each family's sequence classifier (also a regressor and a multi-label
one), token classifier, question answerer and masked LM in a process of its own (`hf_family_heads_reference.py`);
kbert's `Task.from_preset(folder)` must give its logits within 1e-5 (float32) on padded singles and pairs. Written
back with `export_to_transformers`, each loads in `transformers` (no weight missing or unused) with the same
logits, and holds Hugging Face's weights bit for bit. `python -m tests.models.test_hf_family_heads` prints the
largest differences (for the parity report).
"""

import importlib.util
import json
import re

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file

import kbert
from tests.conftest import run_python
from tests.models import hf_families_reference as backbones_reference
from tests.models import hf_family_heads_reference as reference

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                reason="transformers is a test-only dependency")

NAMES = reference.names()
TASKS = {"ForSequenceClassification": kbert.BertClassifier, "ForTokenClassification": kbert.BertTokenClassifier,
         "ForQuestionAnswering": kbert.BertQuestionAnswerer, "ForMaskedLM": kbert.BertPretrainer}
TOLERANCE = 1e-5  # float32


def task_class(name):
    return next(cls for suffix, cls in TASKS.items() if NAMES[name][1].endswith(suffix))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hf_family_heads")
    run_python(reference.__file__, "make", folder)
    return folder


@pytest.fixture(scope="module")
def models(checkpoints):
    """{name: the kbert task model `from_preset` reads from that Hugging Face folder}."""
    return {name: task_class(name).from_preset(checkpoints / name, compile=False) for name in NAMES}


def kbert_outputs(model, family):
    """`model`'s outputs on the reference inputs, by Hugging Face's names."""
    ids, types, mask = backbones_reference.inputs(family)
    inputs = {"token_ids": ids, "segment_ids": types, "padding_mask": mask}
    if isinstance(model, kbert.BertPretrainer):
        return {"logits": keras.ops.convert_to_numpy(model({**inputs, "mask_positions": np.array(
            reference.MASK_POSITIONS, "int32")})["mlm"])}
    outputs = model(inputs)
    if isinstance(model, kbert.BertQuestionAnswerer):
        return {key: keras.ops.convert_to_numpy(value) for key, value in outputs.items()}
    return {"logits": keras.ops.convert_to_numpy(outputs)}


def differences(kbert_arrays, hf_arrays, family):
    """{output: largest absolute difference}, token outputs at real positions only."""
    real = backbones_reference.inputs(family)[2].astype(bool)
    found = {}
    for key, value in kbert_arrays.items():
        expected = hf_arrays[key]
        assert value.shape == expected.shape, (key, value.shape, expected.shape)
        if value.shape[:2] == real.shape:
            value, expected = value[real], expected[real]
        found[key] = float(np.abs(value - expected).max())
    return found


@pytest.mark.parametrize("name", NAMES)
def test_each_familys_head_gives_transformers_logits(checkpoints, models, name):
    family = NAMES[name][0]
    model = models[name]
    assert (type(model), model.backbone.family) == (task_class(name), family)
    hf = np.load(checkpoints / f"{name}.npz")
    found = differences(kbert_outputs(model, family), hf, family)
    assert max(found.values()) <= TOLERANCE, found
    assert min(np.abs(hf[key]).mean() for key in found) > 0.05  # not trivially close


def test_the_heads_take_their_settings_from_the_config(models):
    classifiers = {name: (model.num_classes, model.label_names, model.multi_label, model.dropout)
                   for name, model in models.items() if isinstance(model, kbert.BertClassifier)}
    labels = reference.LABELS
    assert classifiers == {"roberta_ForSequenceClassification": (3, labels, False, 0.1),
                           "albert_ForSequenceClassification": (3, labels, False, 0.1),  # classifier_dropout_prob
                           "electra_ForSequenceClassification": (3, labels, False, 0.1),
                           "distilbert_ForSequenceClassification": (3, labels, False, 0.2),  # seq_classif_dropout
                           "roberta_regression": (1, None, False, 0.1),
                           "distilbert_multi_label": (3, labels, True, 0.2)}
    assert models["electra_ForTokenClassification"].label_names == labels
    assert [models[f"{family}_ForMaskedLM"].get_layer("mlm_head").activation for family in reference.FAMILIES] == [
        "gelu", "gelu_approximate", "gelu", "gelu"]  # ALBERT's head takes its encoder's tanh GELU
    assert not models["roberta_ForMaskedLM"].next_sentence


def test_only_the_heads_that_read_the_pooler_train_it(models):
    """ALBERT's classifier reads the pooler (trained); RoBERTa's reads the first token: its backbone's pooler,
    which Hugging Face's RobertaForSequenceClassification has none of, stays out of training."""
    for name, reads in (("albert_ForSequenceClassification", True), ("roberta_ForSequenceClassification", False),
                        ("albert_ForTokenClassification", False)):
        model = models[name]
        pooler = {id(v) for v in model.backbone.pooler.weights}
        assert model.reads_pooled_output == reads
        assert bool(pooler & {id(v) for v in model.trainable_weights}) == reads, name


def test_kbert_heads_load_in_transformers_with_the_same_logits_and_hugging_faces_weights(checkpoints, models,
                                                                                       tmp_path):
    for name, model in models.items():
        model.export_to_transformers(tmp_path / name)
    run_python(reference.__file__, "run", *[tmp_path / name for name in NAMES])
    for name, model in models.items():
        family, class_name, problem = NAMES[name]
        hf = np.load(tmp_path / name / "hf_outputs.npz")
        assert (list(hf["missing"]), list(hf["unexpected"]), str(hf["problem_type"])) == ([], [], str(problem)), name
        config = json.loads((tmp_path / name / "config.json").read_text())
        assert (config["model_type"], config["architectures"]) == (family, [class_name])
        found = differences(kbert_outputs(model, family), {key: hf[key] for key in hf.files}, family)
        assert max(found.values()) <= TOLERANCE, (name, found)
        exported, original = (load_file(str(folder / name / "model.safetensors")) for folder in (tmp_path,
                                                                                                 checkpoints))
        assert set(exported) == set(original), name  # Hugging Face's own names, all of them
        for key, value in original.items():
            np.testing.assert_array_equal(exported[key], value, err_msg=f"{name}: {key}")


@pytest.mark.parametrize("family", reference.FAMILIES)
def test_a_familys_classifier_saves_and_loads_with_the_same_logits(models, family, tmp_path):
    model = models[f"{family}_ForSequenceClassification"]
    model.save(tmp_path / "model.keras")
    again = keras.saving.load_model(tmp_path / "model.keras")
    assert [layer.name for layer in again.layers] == [layer.name for layer in model.layers]
    np.testing.assert_array_equal(kbert_outputs(again, family)["logits"], kbert_outputs(model, family)["logits"])


def test_a_family_preset_gets_its_familys_heads():
    """Built from presets (no checkpoint): RoBERTa's and ELECTRA's classifiers read the first token through
    `head_dense`, DistilBERT's too (dropout after it only), ALBERT's the pooler as BERT's; the masked LM's dense layer
    maps to ALBERT's narrower embedding."""
    heads = {}
    for preset in ("roberta_base", "albert_base", "electra_small", "distilbert_base"):
        backbone = kbert.BertBackbone.from_preset(preset, num_layers=1, hidden_dim=32, num_heads=2,
                                                  intermediate_dim=37, vocabulary_size=40)
        names = [layer.name for layer in kbert.BertClassifier(backbone, 2, compile=False).layers]
        heads[backbone.family] = names[names.index(backbone.name) + 1:]
        if backbone.family == "albert":
            head = kbert.BertPretrainer(backbone, next_sentence=False, compile=False).get_layer("mlm_head")
            assert tuple(head.dense.kernel.shape) == (32, backbone.config.embedding_dim)
    assert heads == {"roberta": ["first_token_dropout", "head_dense", "head_dropout", "logits"],
                     "albert": ["head_dropout", "logits"],
                     "electra": ["first_token_dropout", "head_dense", "head_dropout", "logits"],
                     "distilbert": ["head_dense", "head_dropout", "logits"]}


# --- bad input: one clear line each ----------------------------------------------------------------------------

@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="files only: runs once")
@pytest.mark.parametrize("family, architecture", [("roberta", "RobertaForMultipleChoice"),
                                                  ("electra", "ElectraForPreTraining"),
                                                  ("albert", "AlbertForPreTraining")])
def test_a_family_class_kbert_does_not_read_is_named_with_those_it_reads(checkpoints, tmp_path, family, architecture):
    folder = tmp_path / family
    folder.mkdir()
    source = checkpoints / f"{family}_ForSequenceClassification"
    for name in ("model.safetensors", "vocab.txt"):
        (folder / name).write_bytes((source / name).read_bytes())
    config = json.loads((source / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "architectures": [architecture]}))
    prefix = reference.PREFIXES[family]
    readable = [f"{prefix}{suffix}" for suffix in ("Model", *TASKS)]
    with pytest.raises(ValueError, match="^" + re.escape(
            f"{folder / 'config.json'}: architectures=['{architecture}'] is not supported for model_type "
            f"'{family}'; kbert reads one of {readable}.") + "$"):
        kbert.BertClassifier.from_preset(folder)


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="settings only: runs once")
def test_pretraining_heads_of_the_family_are_refused_in_one_line(tmp_path):
    """kbert's next-sentence head needs a pooler (ELECTRA has none), and is not written as a family's pretraining
    class (ALBERT's sentence order, ELECTRA's replaced tokens)."""
    electra = kbert.BertBackbone.from_preset("electra_small", num_layers=1)
    with pytest.raises(ValueError, match="^" + re.escape(
            "BertPretrainer(next_sentence=True) reads the backbone's pooled output, which a electra backbone has "
            "none of (pooler=False).") + "$"):
        kbert.BertPretrainer(electra, next_sentence=True)
    albert = kbert.BertPretrainer(kbert.BertBackbone.from_preset("albert_base", num_layers=1), compile=False)
    with pytest.raises(ValueError, match="^" + re.escape(
            "BertPretrainer(next_sentence=True) of a albert backbone: kbert writes a albert masked LM alone "
            "(AlbertForMaskedLM: next_sentence=False), not its pretraining head.") + "$"):
        albert.export_to_transformers(tmp_path)
    assert not list(tmp_path.iterdir())  # nothing written


if __name__ == "__main__":  # the parity report: python -m tests.models.test_hf_family_heads (each KERAS_BACKEND)
    import pathlib
    import tempfile

    folder = pathlib.Path(tempfile.mkdtemp())
    run_python(reference.__file__, "make", folder)
    for name, (family, _, _) in NAMES.items():
        model = task_class(name).from_preset(folder / name, compile=False)
        found = differences(kbert_outputs(model, family), np.load(folder / f"{name}.npz"), family)
        print(keras.config.backend(), name, " ".join(f"{key} {value:.2e}" for key, value in found.items()))
