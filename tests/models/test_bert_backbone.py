import json

import keras
import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone, BertClassifier, BertTokenizer
from kbert.optimizers import mixed_compute
from kbert.saving import BACKBONE_FILE
from kbert.tasks.bert_question_answerer import BertQuestionAnswerer
from tests.conftest import TINY, tiny_batch


def numpy_outputs(model, batch, **kwargs):
    return {k: ops.convert_to_numpy(v) for k, v in model(batch, **kwargs).items()}


def test_output_shapes():
    out = numpy_outputs(BertBackbone(**TINY), tiny_batch())
    assert out["sequence_output"].shape == (3, 7, 8)
    assert out["pooled_output"].shape == (3, 8)


def test_every_weight_starts_with_values_of_its_own():
    """No two kernels or tables of the same shape start equal (an unseeded Keras initializer shared by every layer
    gave each the same values), and a global seed repeats them all."""
    keras.utils.set_random_seed(0)
    model = BertBackbone(**{**TINY, "num_layers": 3})
    arrays = [ops.convert_to_numpy(w) for w in model.weights if w.path.endswith(("kernel", "embeddings"))]
    assert len(arrays) > 10
    for i, first in enumerate(arrays):
        for second in arrays[i + 1:]:
            assert first.shape != second.shape or not np.array_equal(first, second)
    keras.utils.set_random_seed(0)
    again = BertBackbone(**{**TINY, "num_layers": 3})
    for weight, repeated in zip(model.weights, again.weights, strict=True):
        np.testing.assert_array_equal(ops.convert_to_numpy(weight), ops.convert_to_numpy(repeated))


def test_config_round_trip():
    config = BertBackbone(**TINY).get_config()
    json.dumps(config)
    assert BertBackbone.from_config(config).get_config() == config


def test_padding_does_not_change_real_positions():
    model = BertBackbone(**TINY)
    batch = tiny_batch()
    padded = {k: np.pad(v, ((0, 0), (0, 4))) for k, v in batch.items()}
    padded["token_ids"][:, -4:] = 7  # garbage under the mask must not leak in
    short, long = numpy_outputs(model, batch), numpy_outputs(model, padded)
    mask = batch["padding_mask"].astype(bool)
    np.testing.assert_allclose(
        long["sequence_output"][:, :7][mask], short["sequence_output"][mask], atol=1e-5
    )
    np.testing.assert_allclose(long["pooled_output"], short["pooled_output"], atol=1e-5)


def test_dropout_only_in_training():
    model = BertBackbone(**{**TINY, "dropout": 0.5})
    batch = tiny_batch()
    a = numpy_outputs(model, batch)["sequence_output"]
    np.testing.assert_array_equal(a, numpy_outputs(model, batch)["sequence_output"])
    b = numpy_outputs(model, batch, training=True)["sequence_output"]
    assert np.abs(a - b).max() > 1e-3


def test_trains_with_fit():
    keras.utils.set_random_seed(0)  # the initial weights decide how fast 30 epochs fit
    model = BertBackbone(**{**TINY, "dropout": 0.0})  # memorising 8 rows: no dropout noise
    inputs = model.input
    logits = keras.layers.Dense(2)(model(inputs)["pooled_output"])
    classifier = keras.Model(inputs, logits)
    classifier.compile(optimizer=keras.optimizers.Adam(1e-2),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = tiny_batch(batch=8, length=6, seed=1)
    y = np.arange(8) % 2
    history = classifier.fit(x, y, epochs=30, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]


@pytest.mark.parametrize("key,value", [("token_ids", 50), ("token_ids", -1), ("segment_ids", 2)])
def test_out_of_range_ids_are_refused(key, value):
    model = BertBackbone(**TINY)
    batch = tiny_batch()
    batch[key][0, 0] = value
    with pytest.raises(ValueError, match=f"{key} must lie in"):
        model(batch)
    with pytest.raises(ValueError, match=f"{key} must lie in"):
        model.predict(batch, verbose=0)


@pytest.mark.skipif(keras.config.backend() != "torch", reason="torch runs training steps eagerly")
def test_ids_on_an_accelerator_are_not_read_back_each_step(monkeypatch):
    """Reading a GPU tensor's ids copies them to the host and waits for the GPU in every step (a
    tensor on torch's "meta" device stands for one, in CPU-only tests); fit checks arrays up front."""
    import torch

    from kbert.models import bert_backbone

    model = BertBackbone(**TINY)
    batch = {key: torch.empty(value.shape, dtype=torch.int32, device="meta") for key, value in tiny_batch().items()}
    model.check_inputs(batch)  # nothing read: a CPU tensor's values would be
    # As on a GPU: the steps' tensors are not read, the arrays given to fit are.
    monkeypatch.setattr(bert_backbone, "_concrete_values", lambda values: values if isinstance(values, np.ndarray)
                        else None)
    bad = tiny_batch()
    bad["token_ids"][0, 0] = 50
    with pytest.raises(ValueError, match="token_ids must lie in"):
        BertClassifier(model, num_classes=2).fit(bad, np.zeros(3), verbose=0)


def test_too_long_sequence_names_the_limit():
    model = BertBackbone(**TINY)
    with pytest.raises(ValueError, match="max_sequence_length=12"):
        model(tiny_batch(length=13))


def test_missing_input_is_named():
    batch = tiny_batch()
    del batch["segment_ids"]
    model = BertBackbone(**TINY)
    with pytest.raises(ValueError, match="segment_ids"):
        model(batch)
    with pytest.raises(ValueError, match="segment_ids"):
        model.predict(batch, verbose=0)


def compute_dtype(backbone):
    return backbone.get_layer("transformer_layer_0").compute_dtype


def write_tiny_vocab(folder):
    (folder / "vocab.txt").write_text("".join(f"{token}\n" for token in [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[f"w{i}" for i in range(TINY["vocabulary_size"] - 5)]]))


def test_from_preset_of_a_saved_backbone_follows_the_global_policy(tmp_path):
    saved = BertBackbone(**TINY, dtype="float32")  # as kbert files named the policy before
    saved.save(tmp_path / BACKBONE_FILE)
    write_tiny_vocab(tmp_path)
    with mixed_compute():
        backbone = BertBackbone.from_preset(tmp_path)
    assert compute_dtype(backbone) == "bfloat16"
    for ours, theirs in zip(backbone.get_weights(), saved.get_weights()):
        np.testing.assert_array_equal(ours, theirs)


def test_from_preset_takes_the_backbone_of_a_fine_tuned_run(tmp_path):
    fine_tuned = BertQuestionAnswerer(BertBackbone(**TINY))
    fine_tuned.save(tmp_path / "model.keras")
    write_tiny_vocab(tmp_path)
    backbone, tokenizer = BertBackbone.from_preset(tmp_path), BertTokenizer.from_preset(tmp_path)
    assert isinstance(backbone, BertBackbone) and tokenizer.vocabulary_size == TINY["vocabulary_size"]
    assert len(backbone.weights) == len(fine_tuned.backbone.weights) < len(fine_tuned.weights)
    for ours, theirs in zip(backbone.get_weights(), fine_tuned.backbone.get_weights()):
        np.testing.assert_array_equal(ours, theirs)
    pooler = {w.path for w in backbone.pooler.weights}
    assert not pooler & {w.path for w in fine_tuned.trainable_weights}  # QA never reads it
    assert pooler <= {w.path for w in backbone.trainable_weights}  # a classifier fine-tuned from it will


def test_a_preset_takes_overrides_and_minilms_vocabulary():
    backbone = BertBackbone.from_preset("bert_tiny", dropout=0.0, num_layers=1)
    tokenizer = BertTokenizer.from_preset("bert_tiny")
    assert (backbone.num_layers, backbone.dropout, backbone.hidden_dim) == (1, 0.0, 128)
    assert tokenizer.vocabulary_size == backbone.vocabulary_size == 30522
    assert tokenizer.token_to_id("[CLS]") == 101  # MiniLM's uncased vocabulary


def test_a_saved_backbone_is_loaded_as_saved(tmp_path):
    BertBackbone(**TINY).save(tmp_path / BACKBONE_FILE)
    write_tiny_vocab(tmp_path)
    with pytest.raises(ValueError, match="a saved backbone is loaded as saved; got overrides {'dropout': 0.0}"):
        BertBackbone.from_preset(tmp_path, dropout=0.0)


def test_a_folder_of_no_known_kind_names_the_kinds_and_presets(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    for init in (tmp_path, tmp_path / "missing", "bert_nano"):
        for load in (BertBackbone.from_preset, BertTokenizer.from_preset):
            with pytest.raises(FileNotFoundError, match=r"is neither a preset \(.*bert_tiny.*all_minilm_l6_v2\), "
                                                        "a Hugging Face folder with config.json, a kbert folder "
                                                        "with backbone.keras or model.keras, nor a .keras file"):
                load(init)


# --- the family's settings (kbert.BertConfig): each a change of the same layers ------------------------------

ALBERT_LIKE = {**TINY, "embedding_dim": 6, "num_layers": 3, "num_layer_groups": 1, "activation": "gelu_approximate"}


def test_blocks_that_share_weights_compute_as_blocks_given_the_same_weights():
    """One layer called three times (ALBERT's one group) is three blocks with equal weights, the embedding
    projected up first; its weights are in the model once."""
    shared = BertBackbone(**ALBERT_LIKE)
    separate = BertBackbone(**{**ALBERT_LIKE, "num_layer_groups": None})
    values = {w.path: ops.convert_to_numpy(w) for w in shared.weights}
    for weight in separate.weights:
        weight.assign(values[weight.path.replace("transformer_layer_1", "transformer_layer_0")
                             .replace("transformer_layer_2", "transformer_layer_0")])
    batch = tiny_batch()
    for key, value in numpy_outputs(shared, batch).items():
        np.testing.assert_allclose(value, numpy_outputs(separate, batch)[key], atol=1e-6)
    block_weights = len(separate.get_layer("transformer_layer_1").weights)
    assert len(shared.weights) == len(separate.weights) - 2 * block_weights
    assert [layer.name for layer in shared.transformer_layers] == ["transformer_layer_0"] * 3
    assert tuple(shared.get_layer("embeddings_projection").kernel.shape) == (6, 8)


def test_shared_blocks_train_and_save(tmp_path):
    """Rematerialized (the blocks recomputed in the backward pass) they train as without; a saved one loads back
    with its settings and outputs."""
    from kbert.training.remat import rematerialized

    losses = []
    for remat in (False, True):
        keras.utils.set_random_seed(0)  # the same weights both times
        with rematerialized(remat):
            backbone = BertBackbone(**{**ALBERT_LIKE, "dropout": 0.0})
        classifier = BertClassifier(backbone, 2, dropout=0.0)
        classifier.compile(optimizer=keras.optimizers.SGD(0.1),
                           loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        losses.append(classifier.fit(tiny_batch(), np.array([0, 1, 0]), epochs=3, verbose=0).history["loss"])
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
    assert losses[0][-1] < losses[0][0]
    backbone.save(tmp_path / "albert.keras")
    back = keras.saving.load_model(tmp_path / "albert.keras")
    assert back.get_config() == backbone.get_config() and back.num_layer_groups == 1
    np.testing.assert_allclose(numpy_outputs(back, tiny_batch())["sequence_output"],
                               numpy_outputs(backbone, tiny_batch())["sequence_output"], atol=1e-6)


def test_without_segments_or_pooler_the_outputs_are_the_sequence_alone():
    """DistilBERT's: no segment table (the segment ids, all 0, are still taken), no pooler and no `pooled_output`."""
    backbone = BertBackbone(**TINY, num_segments=0, pooler=False)
    batch = tiny_batch()
    batch["segment_ids"][:] = 0
    assert list(numpy_outputs(backbone, batch)) == ["sequence_output"]
    assert backbone.pooler is None and not {"segment_embedding", "pooled_dense"} & {
        layer.name for layer in backbone.layers}
    with pytest.raises(ValueError, match=r"segment_ids must all be 0: this bert model has no token types "
                                         r"\(num_segments=0\); got 2 other id\(s\), e.g. 1\."):
        backbone(tiny_batch())


def test_offset_positions_leave_real_positions_unchanged_by_padding():
    """RoBERTa's positions count along the real tokens: padding in front of them changes nothing."""
    backbone = BertBackbone(**TINY, position_offset=2, num_segments=1)
    batch = tiny_batch()
    batch["segment_ids"][:] = 0
    shifted = {key: np.roll(value, 1, axis=1) for key, value in batch.items()}  # the first row's last id wraps
    shifted["padding_mask"][0, 0] = 0  # padding in front: ids move one place to the right
    out, moved = numpy_outputs(backbone, batch), numpy_outputs(backbone, shifted)
    np.testing.assert_allclose(moved["sequence_output"][1:, 1:][batch["padding_mask"][1:, :-1] == 1],
                               out["sequence_output"][1:, :-1][batch["padding_mask"][1:, :-1] == 1], atol=1e-5)
