"""The one loader of every model source: what a source is, decided in one place (`model_source`), each file read
once however the source is taken (a task model of its kind, else its backbone), and `load_run`."""

import importlib
import json
import pathlib

import keras
import pytest
import safetensors.numpy

from kbert import BertBackbone, BertClassifier, BertTokenClassifier
from kbert.saving import MODEL_FILE, ModelSource, load_run, model_source, save_backbone
from kbert.tasks import BertQuestionAnswerer, BertQuestionAnswererPreprocessor, BertTextClassifierPreprocessor
from kbert.text import BertTokenizer, load_hf_tokenizer
from tests.conftest import TINY

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[f"w{i}" for i in range(TINY["vocabulary_size"] - 5)]]


def tiny_classifier():
    preprocessor = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=8)
    return BertClassifier(BertBackbone(**TINY), num_classes=3, preprocessor=preprocessor)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """A folder of each kind a user can give, keyed by kind."""
    root = tmp_path_factory.mktemp("sources")
    (root / "backbone").mkdir()
    save_backbone(root / "backbone", BertBackbone(**TINY), BertTokenizer(VOCABULARY))
    classifier = tiny_classifier()
    (root / "run").mkdir()
    for folder, file in ((root / "run", MODEL_FILE), (root, "classifier.keras")):
        classifier.save(folder / file)
        classifier.preprocessor.tokenizer.save(folder)
    classifier.export_to_transformers(root / "hugging_face")
    return {"backbone_folder": root / "backbone", "run_folder": root / "run", "keras_file": root / "classifier.keras",
            "hugging_face": root / "hugging_face"}


def test_each_kind_is_told_apart(sources):
    assert model_source("bert_tiny") == ModelSource("bert_tiny", "preset", None)
    assert model_source("all_minilm_l6_v2").kind == "pretrained"
    for kind, path in sources.items():
        source = model_source(path)
        assert (source.kind, source.path) == (kind, path)
        assert model_source(source) is source
        assert (source.folder / "vocab.txt").is_file()  # the tokenizer beside the model, whatever the kind
    assert model_source(str(sources["run_folder"])).kind == "run_folder"


def test_what_is_no_source_is_refused_naming_the_kinds(tmp_path):
    for path in (tmp_path / "missing", tmp_path):  # a path that does not exist, a folder holding nothing
        kinds = r"neither a preset \(albert_base, bert_base, .*roberta_base, all_minilm_l6_v2\).*\.keras file"
        with pytest.raises(FileNotFoundError, match=kinds):
            model_source(path)


def test_only_hugging_face_sources_have_a_checkpoint_and_only_kbert_ones_a_saved_model(sources):
    assert model_source("bert_tiny").checkpoint is None and model_source("bert_tiny").saved_model is None
    hf = model_source(sources["hugging_face"])
    assert hf.saved_model is None and hf.checkpoint.config["num_hidden_layers"] == TINY["num_layers"]
    assert isinstance(model_source(sources["backbone_folder"]).saved_model, BertBackbone)
    assert isinstance(model_source(sources["keras_file"]).saved_model, BertClassifier)


def count_calls(monkeypatch, owner, name, counts):
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        counts[name] = counts.get(name, 0) + 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


def test_a_hugging_face_task_checkpoint_is_read_once(sources, monkeypatch):
    """Its config.json told the backbone, the architecture and the head; its safetensors the
    encoder and the head: each was read twice or three times."""
    reads = {}
    original = pathlib.Path.read_text

    def read_text(path, *args, **kwargs):
        reads[path.name] = reads.get(path.name, 0) + 1
        return original(path, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_text", read_text)
    count_calls(monkeypatch, safetensors.numpy, "load_file", reads)
    model = BertClassifier.from_preset(sources["hugging_face"])
    assert model.num_classes == 3
    assert reads["config.json"] == 1 and reads["load_file"] == 1


@pytest.mark.parametrize("kind", ["run_folder", "keras_file"])
def test_a_saved_model_is_loaded_once_also_when_its_backbone_is_taken(sources, kind, monkeypatch):
    """Another task (or other classes) than the saved one takes its backbone: the file was loaded twice."""
    loads = {}
    count_calls(monkeypatch, importlib.import_module("kbert.saving.model_source"), "load_keras_file", loads)
    model = BertTokenClassifier.from_preset(sources[kind], label_names=["O", "B-PER"])
    assert loads == {"load_keras_file": 1}
    saved = keras.saving.load_model(model_source(sources[kind]).keras_file, compile=False)
    for ours, theirs in zip(model.backbone.get_weights(), saved.backbone.get_weights(), strict=True):
        assert (ours == theirs).all()


def test_a_source_loads_the_backbone_and_tokenizer_of_the_class_it_is_given(sources):
    tokenizer = model_source("bert_tiny").load_tokenizer(load_hf_tokenizer, cls=BertTokenizer)
    assert tokenizer.vocabulary_size == 30522 and tokenizer.token_to_id("[CLS]") == 101  # MiniLM's uncased vocabulary
    for kind in ("backbone_folder", "run_folder", "keras_file", "hugging_face"):
        source = model_source(sources[kind])
        backbone = source.load_backbone(BertBackbone)
        assert type(backbone) is BertBackbone and backbone.num_layers == TINY["num_layers"]
        assert source.load_tokenizer(load_hf_tokenizer, cls=BertTokenizer, model=backbone).vocabulary() == VOCABULARY


def test_a_vocabulary_of_another_size_than_the_model_is_refused(sources):
    source = model_source(sources["backbone_folder"])
    with pytest.raises(ValueError, match=r"vocab.txt has 50 tokens but the model's vocabulary_size is 60"):
        source.load_tokenizer(load_hf_tokenizer, BertBackbone(**{**TINY, "vocabulary_size": 60}), cls=BertTokenizer)


def test_an_old_task_run_gets_its_preprocessor_from_the_folder(tmp_path):
    """A task saved without preprocessor: vocab.txt, max_length and doc_stride from metrics.json."""
    BertQuestionAnswerer(BertBackbone(**TINY)).save(tmp_path / MODEL_FILE)
    BertTokenizer(VOCABULARY).save(tmp_path)
    (tmp_path / "metrics.json").write_text(json.dumps({"max_length": 32, "doc_stride": 7, "f1": 0.5}))
    preprocessor = load_run(tmp_path).preprocessor
    assert isinstance(preprocessor, BertQuestionAnswererPreprocessor)
    assert (preprocessor.sequence_length, preprocessor.doc_stride, preprocessor.max_question_length) == (32, 7, 64)
    assert preprocessor.tokenizer.vocabulary() == VOCABULARY
    (tmp_path / "metrics.json").unlink()
    again = load_run(tmp_path)
    assert again.preprocessor.sequence_length == BertQuestionAnswerer.default_sequence_length == 384


def test_load_run_of_a_keras_file_and_of_nothing(tmp_path, sources):
    BertBackbone(**TINY).save(tmp_path / "b.keras")
    assert isinstance(load_run(tmp_path / "b.keras"), BertBackbone)  # a bare backbone comes back as saved
    assert isinstance(load_run(sources["run_folder"]), BertClassifier)
    for nothing in (tmp_path / "empty", sources["backbone_folder"], "bert_tiny"):
        with pytest.raises(FileNotFoundError, match="model.keras does not exist: give a run folder written by "):
            load_run(nothing)
