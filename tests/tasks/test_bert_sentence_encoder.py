"""BertSentenceEncoder: pooling against numpy on the backbone's outputs, fit on pairs and triplets (each loss equal
to its definition on the model's embeddings), raw lists and tf.data alike, save and reload, bad input. The losses
against sentence-transformers' own: tests/tasks/test_bi_encoder_losses.py."""

import keras
import numpy as np
import pytest

from kbert import BertBackbone, BertSentenceEncoder, SentenceEncoder
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


@pytest.mark.skipif(keras.config.backend() != "tensorflow",
                    reason="once: mean pooling is checked on every backend above, the checkpoint in test_hf_parity")
def test_all_minilm_l6_v2_encodes_as_the_sentence_transformers_pipeline(minilm_dir):
    texts = ["A man is playing a guitar.", "Someone is strumming a musical instrument.", "Stocks fell."]
    model = BertSentenceEncoder.from_preset("all_minilm_l6_v2")
    # SentenceEncoder is checked against sentence-transformers in tests/models/test_hf_parity.py
    np.testing.assert_allclose(model.encode(texts), SentenceEncoder.from_preset().encode(texts), atol=1e-5)


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
@pytest.mark.parametrize("pooling, normalize", [("cls", False), ("max", True)])
def test_written_back_it_encodes_in_sentence_transformers_as_here(tmp_path, pooling, normalize):
    import importlib.util
    import json

    from tests.conftest import TESTS, run_python

    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("sentence-transformers (the reference) is not installed: pip install -e .[test]")
    model = _model(pooling=pooling, normalize=normalize)
    model.export_to_transformers(tmp_path / "st")
    (tmp_path / "texts.json").write_text(json.dumps(ANCHORS))
    run_python(TESTS / "tasks" / "sentence_transformers_encode.py", tmp_path / "st", tmp_path / "texts.json",
               tmp_path / "out.npy")
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), model.encode(ANCHORS), atol=1e-5)
    again = BertSentenceEncoder.from_preset(tmp_path / "st")  # its pooling and normalisation read from the folder
    assert (again.pooling, again.normalize) == (pooling, normalize)
    np.testing.assert_allclose(again.encode(ANCHORS), model.encode(ANCHORS), atol=1e-5)


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
