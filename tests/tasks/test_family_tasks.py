"""Each family's own tokenizer through the tasks, from a Hugging Face folder: RoBERTa's byte-level BPE, ALBERT's
SentencePiece, ELECTRA's and DistilBERT's WordPiece give the token ids of Hugging Face's `AutoTokenizer` of the same
folder (built by `family_folders_reference.py` in a process of its own), and a classifier fits, predicts, saves and
loads back on raw text with them."""

import importlib.util
import json

import keras
import numpy as np
import pytest

import kbert
from kbert import BertBackbone, BertClassifier
from kbert.data.windows.token_rows import UNLIMITED
from kbert.saving import load_run, model_source
from kbert.text import load_hf_tokenizer
from tests.conftest import run_python
from tests.tasks import family_folders_reference as reference
from tests.text.test_parity import HARD_STRINGS

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                reason="transformers is a test-only dependency")

# Not U+0000, which ALBERT's in-graph op drops before a space (kbert.text.sentence_piece's known difference).
TEXTS = ["A gripping film.", "The plot (such as it is) drags - badly.", "naïve CAFÉ déjà vu", "  two  spaces ",
         "东京 and 😀!", "", "x" * 70, *[text for text in HARD_STRINGS[:30] if "\x00" not in text]]
PAIRS = [text[::-1] for text in TEXTS]
CASES = [{"texts": TEXTS, "pairs": None}, {"texts": TEXTS, "pairs": PAIRS}]
KINDS = {"roberta": "ByteLevelBPETokenizer", "roberta_json": "ByteLevelBPETokenizer",
         "albert": "SentencePieceTokenizer", "albert_json": "SentencePieceTokenizer", "electra": "BertTokenizer",
         "distilbert": "BertTokenizer"}
LENGTH = 48  # below the texts' longest pair: truncation too


@pytest.fixture(scope="module")
def folders(data_dir, tmp_path_factory):
    """(folder of the families' folders, Hugging Face's rows per family per call)."""
    pytest.importorskip("sentencepiece", reason="sentencepiece trains ALBERT's model")
    folder = tmp_path_factory.mktemp("family_folders")
    (folder / "cases.json").write_text(json.dumps(CASES), "utf-8")
    run_python(reference.__file__, data_dir / "sst2" / "train.tsv", folder / "hf", folder / "cases.json",
               folder / "out.json")
    return folder / "hf", json.loads((folder / "out.json").read_text("utf-8"))


def unpadded(out):
    lengths = out["padding_mask"].sum(axis=1)
    return [(ids[:n].tolist(), types[:n].tolist()) for ids, types, n in zip(out["token_ids"], out["segment_ids"],
                                                                            lengths)]


@pytest.mark.parametrize("family", [*reference.FAMILIES, "roberta_json", "albert_json"])
def test_each_folder_gives_its_familys_tokenizer_with_hugging_faces_ids(folders, family):
    root, expected = folders
    backbone = BertBackbone.from_preset(root / family)
    tokenizer = model_source(root / family).load_tokenizer(load_hf_tokenizer, model=backbone)
    assert type(tokenizer).__name__ == KINDS[family]
    assert tokenizer.vocabulary_size == reference.SIZES[backbone.family] == backbone.vocabulary_size
    for call, rows in zip(CASES, expected[family]):
        out = tokenizer(call["texts"], call["pairs"], max_length=UNLIMITED, padding="longest")
        assert unpadded(out) == [(row["ids"], row["type_ids"]) for row in rows]
        offsets = tokenizer(call["texts"], call["pairs"], max_length=UNLIMITED, padding="longest", return_offsets=True)
        np.testing.assert_array_equal(offsets["token_ids"], out["token_ids"])


@pytest.mark.parametrize("family", ["roberta", "albert"])
def test_a_classifier_fits_predicts_saves_and_loads_with_its_familys_tokenizer(folders, family, tmp_path):
    root, expected = folders
    model = BertClassifier.from_preset(root / family, num_classes=2, sequence_length=LENGTH)
    assert type(model.preprocessor.tokenizer).__name__ == KINDS[family]
    for call, rows in zip(CASES, expected[family]):
        x = call["texts"] if call["pairs"] is None else (call["texts"], call["pairs"])
        inputs = model.preprocessor.prepare(x).inputs
        first = [(row["ids"], row["type_ids"]) for row in rows]
        got = unpadded(inputs)
        fits = [len(row[0]) <= LENGTH for row in first]
        assert [g for g, f in zip(got, fits) if f] == [e for e, f in zip(first, fits) if f]
        assert all(len(g[0]) == LENGTH for g, f in zip(got, fits) if not f)  # cut
        assert all(g[0][-1] == model.preprocessor.tokenizer.sep_token_id for g in got)
    texts = ["a gripping film", "dull and slow", "fun", "awful"]
    history = model.fit(texts, [1, 0, 1, 0], batch_size=4, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    pairs = (texts, texts[::-1])
    before = model.predict(texts, verbose=0), model.predict(pairs, verbose=0)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert type(loaded.preprocessor.tokenizer).__name__ == KINDS[family]
    assert loaded.preprocessor.tokenizer.get_config() == model.preprocessor.tokenizer.get_config()
    np.testing.assert_allclose(loaded.predict(texts, verbose=0), before[0], atol=1e-6)
    np.testing.assert_allclose(loaded.predict(pairs, verbose=0), before[1], atol=1e-6)


@pytest.mark.parametrize("family", ["roberta", "albert"])
def test_tf_data_gives_what_prepare_gives(folders, family):
    import tensorflow as tf

    root, _ = folders
    model = BertClassifier.from_preset(root / family, num_classes=2, sequence_length=LENGTH)
    texts = TEXTS[:8]
    data = tf.data.Dataset.from_tensor_slices(((texts, PAIRS[:8]), [0, 1] * 4)).batch(8)
    x, _ = next(iter(data.map(model.preprocessor)))
    prepared = model.preprocessor.prepare((texts, PAIRS[:8])).inputs
    width = prepared["token_ids"].shape[1]
    for key in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(x[key].numpy()[:, :width], prepared[key])


@pytest.mark.parametrize("family", ["roberta", "albert"])
def test_a_run_folder_writes_the_familys_tokenizer_files_and_reads_them_back(folders, family, tmp_path):
    from kbert.training import write_run_folder

    root, _ = folders
    model = BertClassifier.from_preset(root / family, num_classes=2, sequence_length=LENGTH)
    write_run_folder(tmp_path / "run", model, model.preprocessor.tokenizer, {"max_length": LENGTH}, {"loss": [1.0]})
    for name in type(model.preprocessor.tokenizer).FILES:
        assert (tmp_path / "run" / name).is_file()
    loaded = load_run(tmp_path / "run")
    np.testing.assert_allclose(loaded.predict(TEXTS[:4], verbose=0), model.predict(TEXTS[:4], verbose=0), atol=1e-6)
    tokenizer = model_source(tmp_path / "run").load_tokenizer(load_hf_tokenizer, model=loaded)  # the files beside the model
    assert tokenizer.get_config() == model.preprocessor.tokenizer.get_config()
    encoder = kbert.BertTokenClassifier.from_preset(tmp_path / "run", label_names=["O", "B-X"])  # another task
    assert type(encoder.preprocessor.tokenizer).__name__ == KINDS[family]


def test_bad_input_is_one_clear_line(folders, tmp_path):
    import shutil

    from kbert.tasks import BertTextClassifierPreprocessor
    from kbert.text import BertTokenizer

    root, _ = folders
    shutil.copytree(root / "roberta", tmp_path / "roberta")
    vocabulary = json.loads((root / "roberta" / "vocab.json").read_text("utf-8"))
    (tmp_path / "roberta" / "vocab.json").write_text(json.dumps({**vocabulary, "extra": len(vocabulary)}), "utf-8")
    with pytest.raises(ValueError, match=r"roberta/vocab.json has 401 tokens but the model's vocabulary_size is 400"):
        BertClassifier.from_preset(tmp_path / "roberta", num_classes=2)
    (tmp_path / "roberta" / "vocab.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"has no vocab.json: a roberta model's tokenizer \(byte_level_bpe\)"):
        BertClassifier.from_preset(tmp_path / "roberta", num_classes=2)
    wordpiece = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[f"w{i}" for i in range(395)]])
    with pytest.raises(ValueError, match="a BertTokenizer for a roberta model: RoBERTa models, and they alone, read"):
        BertClassifier.from_preset(root / "roberta", num_classes=2,
                                   preprocessor=BertTextClassifierPreprocessor(wordpiece, sequence_length=16))
    model = BertClassifier.from_preset(root / "roberta", num_classes=2, sequence_length=16)
    inputs = model.preprocessor.prepare((["a film"], ["a plot"])).inputs
    with pytest.raises(ValueError, match="segment_ids must all be 0: this roberta model has no token types"):
        model.predict({**inputs, "segment_ids": (np.arange(inputs["token_ids"].shape[1]) > 3)[None].astype("int32")},
                      verbose=0)


@pytest.mark.parametrize("family", ["roberta", "albert"])
def test_token_classifier_and_qa_read_offsets_of_their_familys_tokenizer(folders, family, tmp_path):
    root, _ = folders
    tagger = kbert.BertTokenClassifier.from_preset(root / family, label_names=["O", "B-X", "I-X"], sequence_length=12)
    words = [["A", "gripping", "film", "by", "Tom", "Hanks"], ["Dull", "!"], ["x" * 30, "y"]]
    tagger.fit(words, [[0, 0, 0, 0, 1, 2], [0, 0], [1, 0]], batch_size=2, epochs=1, verbose=0)
    tagged = tagger.predict(words, verbose=0) + tagger.predict(["Tom Hanks plays, in a film."], verbose=0)
    assert [len(answer["tags"]) for answer in tagged][:3] == [6, 2, 2]  # a tag per word, long words in windows
    # The tokenizer's words: RoBERTa's cut "," and "." off; ALBERT's are the whitespace-separated ones.
    assert len(tagged[3]["tags"]) == {"roberta": 8, "albert": 6}[family]
    for answer in tagged:
        assert all(answer["text"][e["start"]:e["end"]] == e["text"] for e in answer["entities"])
    tagger.save(tmp_path / "tagger.keras")
    assert keras.saving.load_model(tmp_path / "tagger.keras").predict(words, verbose=0) == tagger.predict(words,
                                                                                                         verbose=0)
    reader = kbert.BertQuestionAnswerer.from_preset(root / family, sequence_length=24, doc_stride=8)
    questions, contexts = ["who plays?", "what?"], ["Tom Hanks plays in a long film about nothing at all.", "A film."]
    windows = reader.preprocessor.prepare((questions, contexts))
    tokenizer = reader.preprocessor.tokenizer
    question = tokenizer(questions[:1], max_length=UNLIMITED, padding="longest")["token_ids"][0, 1:-1].tolist()
    separators = [tokenizer.sep_token_id] * (2 if family == "roberta" else 1)
    first = windows.inputs["token_ids"][0].tolist()
    assert first[:len(question) + 1 + len(separators)] == [tokenizer.cls_token_id, *question, *separators]
    assert windows.inputs["segment_ids"].any() == (family == "albert")
    assert len(windows.windows) > 2  # the long context in several windows
    if family == "roberta":  # QA windows in TensorFlow ops are BERT's layout only
        import tensorflow as tf

        data = tf.data.Dataset.from_tensor_slices((questions, contexts)).batch(2)
        with pytest.raises(ValueError, match="lays out RoBERTa's: give the questions and contexts as lists"):
            data.map(lambda q, c: reader.preprocessor((q, c)))
    reader.fit((questions, contexts), [{"text": ["Tom Hanks"], "answer_start": [0]}, {"text": ["film"],
                                                                                    "answer_start": [2]}],
               batch_size=2, epochs=1, verbose=0)
    answers = reader.predict((questions, contexts), verbose=0)
    for answer, context in zip(answers, contexts):
        assert context[answer["start"]:answer["end"]] == answer["text"]
    reader.save(tmp_path / "reader.keras")
    assert keras.saving.load_model(tmp_path / "reader.keras").predict((questions, contexts), verbose=0) == answers
