"""kbert.recipes.pretrain beyond BERT (issue 51): a RoBERTa-shaped model (byte-level BPE, masked LM alone) and an
ALBERT-shaped one (SentencePiece, sentence-order prediction) pretrained a few steps on a tiny corpus with tokenizers
trained offline (`tokenizers`, `sentencepiece`), the run resumed, and its backbone and tokenizer fine-tuned by a task on
raw text from the run folder; what cannot work refused before anything is written. apps/pretrain.py --tokenizer:
tests/tasks/test_pretrain_family_app.py."""

import itertools

import keras
import numpy as np
import pytest

from kbert import BertBackbone, BertClassifier
from kbert.recipes import pretrain as recipe
from kbert.saving import SettingsChangedError
from kbert.text import load_hf_tokenizer
from kbert.text.hf_tokenizers import FAMILY_KINDS, KIND_FILES
from tests.conftest import ONCE_ON_TORCH, run_python

SHARED = dict(num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=32, dropout=0.0)
CONFIGS = {"roberta": dict(SHARED, family="roberta", num_segments=1, position_offset=2, layer_norm_epsilon=1e-5),
           "albert": dict(SHARED, family="albert", embedding_dim=8, num_layer_groups=1,
                          activation="gelu_approximate")}
OBJECTIVES = {"roberta": "mlm", "albert": "sop"}  # RoBERTa's recipe; ALBERT's
OPTIONS = dict(checkpoint_every=1, batch_size=4, sequence_length=32, holdout_fraction=0.0, verbose=0)


@pytest.fixture(scope="module")
def corpus(data_dir, tmp_path_factory):
    """(corpus file, its lines): 300 SST-2 sentences, in documents of 6 lines (SOP pairs a document's segments)."""
    rows = itertools.islice(open(data_dir / "sst2" / "train.tsv", encoding="utf-8"), 1, 301)
    lines = [row.split("\t")[0].strip() for row in rows]
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("".join(line + ("\n\n" if i % 6 == 5 else "\n") for i, line in enumerate(lines)), "utf-8")
    return path, lines


@pytest.fixture(scope="module")
def tokenizer_folders(corpus, tmp_path_factory):
    """{family: a folder of its tokenizer, trained on the corpus}, as Hugging Face's tokenizers read them."""
    pytest.importorskip("tokenizers", reason="tokenizers trains RoBERTa's byte-level BPE")
    pytest.importorskip("sentencepiece", reason="sentencepiece trains ALBERT's model")
    # their training as the family task tests' (its module imports transformers, a test-only dependency)
    reference = pytest.importorskip("tests.tasks.family_folders_reference")
    folders = {}
    for family in CONFIGS:
        folders[family] = tmp_path_factory.mktemp(family)
        reference.train_tokenizer(family, corpus[1], folders[family])
    return folders


@ONCE_ON_TORCH  # each family's tasks run on every backend: tests/tasks/test_family_tasks.py
@pytest.mark.parametrize("family", ["roberta", "albert"])
def test_a_family_pretrains_with_its_own_tokenizer_resumes_and_fine_tunes(corpus, tokenizer_folders, family, tmp_path,
                                                                          capsys):
    out, given = tmp_path / "run", load_hf_tokenizer(tokenizer_folders[family])
    settings = {"family": family}
    options = dict(OPTIONS, config=CONFIGS[family], vocabulary=tokenizer_folders[family], objective=OBJECTIVES[family])
    metrics = recipe.train([corpus[0]], out, settings, steps=2, **options)
    assert metrics["steps"] == 2 and np.isfinite(metrics["history"]["loss"]).all()
    assert ({"accuracy"} if family == "roberta" else {"mlm_accuracy", "nsp_accuracy"}) <= set(metrics["history"])
    kind = FAMILY_KINDS[family]
    assert {*KIND_FILES[kind], "tokenizer_config.json", "backbone.keras"} <= {path.name for path in out.iterdir()}
    assert not (out / "vocab.txt").exists() and recipe.is_prepared(out)
    assert load_hf_tokenizer(out).get_config() == given.get_config()  # its own files, written by its `save`

    capsys.readouterr()
    more = recipe.train([corpus[0]], out, {**settings, "steps": 3}, steps=3, **options)  # resumes from the backup
    assert "Resuming after 2 batches" in capsys.readouterr().out
    assert (more["resumed_at_step"], more["steps"]) == (2, 3)

    backbone, tokenizer = recipe.load_init(out)  # to pretrain further: the family's tokenizer, not a BertTokenizer
    assert (backbone.family, backbone.vocabulary_size) == (family, given.vocabulary_size)
    assert tokenizer.get_config() == given.get_config()
    model = BertClassifier.from_preset(out, num_classes=2, sequence_length=32)  # a task's --init
    assert model.preprocessor.tokenizer.get_config() == given.get_config()
    texts = ["a gripping film", "dull and slow", "great fun", "awful"]
    history = model.fit(texts, [1, 0, 1, 0], batch_size=4, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    probabilities = keras.ops.convert_to_numpy(model.predict(texts, verbose=0))
    assert probabilities.shape == (4, 2) and np.isfinite(probabilities).all()
    saved = BertBackbone.from_preset(out)
    assert saved.family == family and saved.num_segments == CONFIGS[family].get("num_segments", 2)


@ONCE_ON_TORCH
@pytest.mark.parametrize("family, changes, message", [
    ("roberta", dict(objective="nsp"), "objective nsp tells two segments apart by their token types, which a roberta "
                                       "model has none of \\(num_segments 1\\): pretrain it with objective mlm"),
    ("roberta", dict(vocabulary=None), "A roberta model reads a byte_level_bpe tokenizer \\(vocab.json, merges.txt\\), "
                                       "and kbert learns WordPiece vocabularies only: give one \\(vocabulary "
                                       "FOLDER\\)"),
    ("albert", dict(vocabulary="roberta"), "A albert model reads a sentence_piece tokenizer \\(spiece.model\\), not a "
                                           "byte_level_bpe one"),
    ("albert", dict(config=dict(CONFIGS["albert"], vocabulary_size=999)),
     "config: vocabulary_size 999 is not the tokenizer's 300 tokens")])
def test_what_a_family_cannot_pretrain_is_refused_before_anything_is_written(corpus, tokenizer_folders, tmp_path,
                                                                             family, changes, message):
    options = dict(OPTIONS, config=CONFIGS[family], vocabulary=tokenizer_folders[family], objective=OBJECTIVES[family])
    options.update(changes)
    if changes.get("vocabulary") in tokenizer_folders:
        options["vocabulary"] = tokenizer_folders[changes["vocabulary"]]
    with pytest.raises(ValueError, match=message):
        recipe.train([corpus[0]], tmp_path / "run", {}, steps=2, **options)
    assert list(tmp_path.iterdir()) == []


@ONCE_ON_TORCH
def test_another_familys_run_in_the_folder_is_refused_as_another_run(corpus, tokenizer_folders, tmp_path):
    out = tmp_path / "run"
    options = {family: dict(OPTIONS, config=CONFIGS[family], vocabulary=tokenizer_folders[family],
                            objective=OBJECTIVES[family]) for family in CONFIGS}
    recipe.train([corpus[0]], out, {"family": "albert"}, steps=1, **options["albert"])
    # not "A roberta model reads a byte_level_bpe tokenizer, not a sentence_piece one" (the folder's, not the one given)
    with pytest.raises(SettingsChangedError, match="this run started with family 'albert', not 'roberta'"):
        recipe.train([corpus[0]], out, {"family": "roberta"}, steps=1, **options["roberta"])
    assert load_hf_tokenizer(out).kind == FAMILY_KINDS["albert"]


@pytest.fixture(scope="module")
def hugging_face_folders(data_dir, tmp_path_factory):
    """Each family's Hugging Face folder (`save_pretrained` of a random 1-layer model beside its tokenizer's files),
    written by `tests/tasks/family_folders_reference.py` in a process of its own."""
    pytest.importorskip("transformers", reason="transformers writes the families' folders")
    pytest.importorskip("sentencepiece", reason="sentencepiece trains ALBERT's model")
    reference = pytest.importorskip("tests.tasks.family_folders_reference")
    folder = tmp_path_factory.mktemp("hf_folders")
    (folder / "cases.json").write_text("[]", "utf-8")
    run_python(reference.__file__, data_dir / "sst2" / "train.tsv", folder / "hf", folder / "cases.json",
               folder / "out.json")
    return folder / "hf"


@ONCE_ON_TORCH
@pytest.mark.parametrize("family", ["roberta", "albert"])
def test_pretraining_continues_from_a_hugging_face_folder_of_the_family(corpus, hugging_face_folders, family,
                                                                        tmp_path):
    """`load_init` of a Hugging Face RoBERTa / ALBERT folder: its weights, its family's tokenizer (read from the
    folder's own files), trained further with the family's objective; the run folder keeps that tokenizer."""
    folder = hugging_face_folders / family
    backbone, tokenizer = recipe.load_init(folder)
    given = load_hf_tokenizer(folder)
    assert (backbone.family, type(tokenizer)) == (family, type(given))
    assert tokenizer.get_config() == given.get_config()
    before = [weight.numpy().copy() for weight in backbone.get_layer("token_embedding").weights]
    out = tmp_path / "run"
    metrics = recipe.train([corpus[0]], out, {"init": str(folder)}, init=(backbone, tokenizer), steps=2,
                           objective=OBJECTIVES[family], **OPTIONS)
    assert metrics["steps"] == 2 and np.isfinite(metrics["history"]["loss"]).all()
    assert load_hf_tokenizer(out).get_config() == given.get_config()
    trained = BertBackbone.from_preset(out)
    assert (trained.family, trained.vocabulary_size) == (family, given.vocabulary_size)
    after = trained.get_layer("token_embedding").weights[0].numpy()
    assert after.shape == before[0].shape and not np.allclose(after, before[0])  # trained from the folder's weights
    assert np.abs(after - before[0]).max() < 0.1  # a few steps away from them, not a fresh draw
