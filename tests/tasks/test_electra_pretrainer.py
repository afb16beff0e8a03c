"""ElectraPretrainer: the generator's samples, the discriminator's labels and the replaced-token loss against their
definitions in numpy, the shared embeddings, fit, the saved file; on every backend."""

import keras
import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone
from kbert.data.pretraining.dataset import pretraining_dataset
from kbert.optimizers import bert_adamw
from kbert.tasks.bert_masked_lm_preprocessor import BertMaskedLMPreprocessor
from kbert.tasks.electra_pretrainer import ElectraPretrainer, generator_dimensions
from kbert.text import BertTokenizer
from kbert.training import AtomicBackupAndRestore
from tests.conftest import TINY, Kill, tiny_batch
from tests.tasks.test_bert_pretrainer import VOCAB, corpus  # noqa: F401 (a fixture)

ELECTRA = {**TINY, "num_layers": 1, "hidden_dim": 16, "intermediate_dim": 32, "embedding_dim": 8, "family": "electra",
           "pooler": False, "dropout": 0.0}
CERTAIN = 49  # the token the generator is made to sample (tiny_batch's ids lie in 1..49: kept out of the batch)


def masked_batch():
    """A tiny batch with its masked positions (0: an empty slot), their originals and weights."""
    x = tiny_batch()
    x["token_ids"] = np.where(x["token_ids"] == CERTAIN, 1, x["token_ids"]).astype("int32")
    x["mask_positions"] = np.array([[1, 3, 0], [2, 0, 0], [1, 4, 5]], "int32")
    y = {"mlm": np.array([[5, 6, 0], [7, 0, 0], [CERTAIN, 8, 9]], "int32")}  # row 2 slot 0: the sample is the original
    weights = {"mlm": (x["mask_positions"] > 0).astype("float32")}
    x["token_ids"][np.arange(3)[:, None], x["mask_positions"]] = np.where(weights["mlm"] > 0, 4, x["token_ids"][
        np.arange(3)[:, None], x["mask_positions"]])  # [MASK] at the masked positions
    return x, y, weights


def certain_model(**kwargs):
    """A tiny model whose generator samples `CERTAIN` wherever it predicts (its output bias makes it e^50 likelier
    than any other token): the samples, and so the outputs, are known."""
    keras.utils.set_random_seed(0)
    model = ElectraPretrainer(BertBackbone(**ELECTRA), generator_fraction=0.5, seed=3, **kwargs)
    head = model.get_layer("generator_predictions")
    head.bias.assign(np.where(np.arange(TINY["vocabulary_size"]) == CERTAIN, 50.0, 0.0).astype("float32"))
    return model


def original_ids(x, y):
    """The text before masking, in numpy: `x`'s token ids with `y`'s originals put back at the masked positions."""
    original = x["token_ids"].copy()
    for row, (positions, ids) in enumerate(zip(x["mask_positions"], y["mlm"])):
        original[row, positions[positions > 0]] = ids[positions > 0]
    return original


def numpy_outputs(model, x):
    return {key: ops.convert_to_numpy(value) for key, value in model.predict_on_batch(x).items()}


def test_the_samples_replace_exactly_the_masked_positions():
    x, y, weights = masked_batch()
    corrupted = numpy_outputs(certain_model(), x)["corrupted_ids"]
    masked = np.zeros_like(x["token_ids"], bool)
    masked[np.arange(3)[:, None], x["mask_positions"]] = weights["mlm"] > 0
    np.testing.assert_array_equal(corrupted[~masked], x["token_ids"][~masked])  # [CLS] too: an empty slot's 0
    assert (corrupted[masked] == CERTAIN).all() and masked.sum() == 6


def test_random_samples_change_only_the_masked_positions():
    """Without a certain token: the samples vary from call to call, the unmasked tokens never."""
    keras.utils.set_random_seed(0)
    model = ElectraPretrainer(BertBackbone(**ELECTRA), seed=1)
    x, _, weights = masked_batch()
    masked = np.zeros_like(x["token_ids"], bool)
    masked[np.arange(3)[:, None], x["mask_positions"]] = weights["mlm"] > 0
    draws = np.stack([numpy_outputs(model, x)["corrupted_ids"] for _ in range(4)])
    assert (draws[:, ~masked] == x["token_ids"][~masked]).all()
    assert len({tuple(draw[masked]) for draw in draws}) > 1  # sampled afresh, not the same argmax


def test_the_labels_and_the_replaced_token_loss_against_their_definitions():
    model = certain_model()
    x, y, weights = masked_batch()
    out = numpy_outputs(model, x)
    original = original_ids(x, y)
    labels = (out["corrupted_ids"] != original).astype("float64")
    assert labels.sum() == 5 and labels[2, 1] == 0  # six replaced, one by its original: original
    logits, mask = out["rtd"].astype("float64"), x["padding_mask"].astype("float64")
    token_losses = np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))
    rtd_loss = (token_losses * mask).sum() / mask.sum()

    logs = model.test_on_batch(x, y, weights, return_dict=True)
    assert logs["rtd_loss"] == pytest.approx(rtd_loss, rel=1e-5)
    assert logs["loss"] == pytest.approx(logs["mlm_loss"] + 50 * rtd_loss, rel=1e-5)
    accuracy = (((logits > 0) == labels) * mask).sum() / mask.sum()
    assert logs["rtd_accuracy"] == pytest.approx(accuracy, rel=1e-5)


def test_the_replaced_token_auc_against_its_definition():
    """`rtd_auc` is the ROC AUC of the logits over the non-padding tokens: the share of (replaced, original) pairs
    the logits put in order (Mann-Whitney), a tie counting half. The head's last kernel is scaled up so that the
    logits spread over units, as in training (at init they lie within thousandths of 0: one of the metric's bins)."""
    model = certain_model()
    head = model.get_layer("discriminator_predictions").dense_prediction
    head.kernel.assign(head.kernel * 1000.0)
    x, y, weights = masked_batch()
    out = numpy_outputs(model, x)
    original = original_ids(x, y)
    real = x["padding_mask"] > 0
    labels, logits = (out["corrupted_ids"] != original)[real], out["rtd"].astype("float64")[real]
    replaced, kept = logits[labels][:, None], logits[~labels][None, :]
    auc = ((replaced > kept) + 0.5 * (replaced == kept)).mean()
    assert 0.1 < auc < 0.9 and np.ptp(logits) > 1.0  # neither side ordered by chance alone; spread beyond a bin

    logs = model.test_on_batch(x, y, weights, return_dict=True)
    one_pair = 1 / (replaced.size * kept.size)  # the metric's bins: two logits 0.004 apart may share one
    assert logs["rtd_auc"] == pytest.approx(auc, abs=one_pair + 1e-6)


def test_the_discriminator_learns_to_flag_the_replaced_tokens():
    """Fit on one batch, repeated, whose samples are certain: from the corrupted ids and the replaced-token loss
    alone, the discriminator learns to flag every replaced token and to pass (nearly) all others, which it does
    not at random init. A discriminator reading the original ids, misaligned labels or a loss pushing the wrong way
    fail."""
    model = certain_model()
    x, y, weights = masked_batch()
    original = original_ids(x, y)
    real = x["padding_mask"] > 0

    def flags_the_replaced_tokens():
        out = numpy_outputs(model, x)
        replaced, flagged = out["corrupted_ids"] != original, out["rtd"] > 0
        recall, specificity = flagged[replaced & real].mean(), (~flagged)[~replaced & real].mean()
        return recall == 1.0 and specificity > 0.9  # row 2 holds CERTAIN as an original: it may be flagged

    assert not flags_the_replaced_tokens()  # at random init
    model.compile(optimizer=bert_adamw(1e-2, total_steps=40, warmup_ratio=0.0))
    repeated = [{key: np.tile(value, (40, 1)) for key, value in part.items()} for part in (x, y, weights)]
    model.fit(*repeated[:2], sample_weight=repeated[2], batch_size=3, shuffle=False, verbose=0)
    assert flags_the_replaced_tokens()


def test_generator_and_discriminator_share_one_set_of_embeddings():
    backbone = BertBackbone(**ELECTRA)
    model = ElectraPretrainer(backbone, generator_fraction=0.25)
    generator = model.get_layer("generator")
    for name in ("token_embedding", "segment_embedding", "position_embedding", "embeddings_layer_norm"):
        assert generator.get_layer(name) is backbone.get_layer(name)
    assert model.get_layer("generator_predictions").token_embedding is backbone.token_embedding
    ids = [id(weight) for weight in model.weights]
    assert len(ids) == len(set(ids))
    projection = generator.get_layer("generator_embeddings_projection")  # 8 -> 4: each encoder projects up
    assert tuple(projection.kernel.shape) == (8, 4)
    assert generator.get_layer("generator_layer_0").num_heads == 1


def test_a_generator_wider_than_the_discriminator_is_refused():
    with pytest.raises(ValueError, match="generator_fraction 1.5 makes a generator 24 wide, wider than the "
                                         "discriminator's hidden_dim 16"):
        ElectraPretrainer(BertBackbone(**ELECTRA), generator_fraction=1.5)
    assert generator_dimensions(1024, 1 / 4) == (256, 4, 1024)  # ELECTRA-Large's generator


def tiny_electra(steps):
    keras.utils.set_random_seed(0)
    model = ElectraPretrainer(BertBackbone(**{**ELECTRA, "vocabulary_size": len(VOCAB), "max_sequence_length": 24}),
                              generator_fraction=0.5, seed=0)
    model.compile(optimizer=bert_adamw(3e-3, total_steps=steps, warmup_ratio=0.1))
    return model


def tiny_data(corpus, skip_batches=0):
    return pretraining_dataset([corpus], BertTokenizer(VOCAB), batch_size=8, max_seq_length=24, max_predictions=4,
                               objective="mlm", shuffle_buffer=64, seed=0, skip_batches=skip_batches)


def test_fit_on_texts_and_the_keras_file(tmp_path):
    tokenizer = BertTokenizer(VOCAB)
    model = ElectraPretrainer(BertBackbone(**{**ELECTRA, "vocabulary_size": len(VOCAB)}),
                              BertMaskedLMPreprocessor(tokenizer, sequence_length=12), seed=0)
    history = model.fit(["the cat sat on the mat", "the dog ran home"], epochs=1, verbose=0).history
    assert {"loss", "mlm_loss", "rtd_loss", "rtd_accuracy", "mlm_accuracy"} <= set(history)
    model = certain_model(compile=False)  # no optimizer to save
    model.save(tmp_path / "electra.keras")
    loaded = keras.saving.load_model(tmp_path / "electra.keras")
    x, _, _ = masked_batch()
    expected, got = numpy_outputs(model, x), numpy_outputs(loaded, x)
    np.testing.assert_array_equal(got["corrupted_ids"], expected["corrupted_ids"])
    np.testing.assert_allclose(got["rtd"], expected["rtd"], atol=1e-6)
    assert loaded.generator_fraction == 0.5 and loaded.discriminator_weight == 50.0


def test_fit_trains_every_weight_and_a_killed_run_resumes_with_the_samples_it_would_have_drawn(
        corpus, tmp_path):  # noqa: F811
    """`fit` lowers the loss and moves every weight (the generator's, the heads', the shared embeddings'). The
    generator's seed state is restored with the backup (`kbert.training.random_state`): with the data stream read
    past the batches trained, a run killed and resumed ends with the weights of the run never killed."""
    whole = tiny_electra(steps=6)
    before = [ops.convert_to_numpy(weight) for weight in whole.trainable_weights]
    history = whole.fit(tiny_data(corpus), epochs=3, steps_per_epoch=2, shuffle=False, verbose=0).history
    assert history["loss"][-1] < history["loss"][0]
    unchanged = [weight.path for weight, value in zip(whole.trainable_weights, before)
                 if np.array_equal(ops.convert_to_numpy(weight), value)]
    assert not unchanged, unchanged

    killed = tiny_electra(steps=6)
    with pytest.raises(KeyboardInterrupt):
        killed.fit(tiny_data(corpus), epochs=3, steps_per_epoch=2, shuffle=False, verbose=0,
                   callbacks=[AtomicBackupAndRestore(tmp_path, 2), Kill(0)])  # after its first epoch
    resumed = tiny_electra(steps=6)
    resumed.fit(tiny_data(corpus, skip_batches=2), epochs=3, steps_per_epoch=2, shuffle=False, verbose=0,
                callbacks=[AtomicBackupAndRestore(tmp_path, 2)])
    assert int(ops.convert_to_numpy(resumed.optimizer.iterations)) == 6
    for expected, got in zip(whole.weights, resumed.weights, strict=True):
        np.testing.assert_allclose(ops.convert_to_numpy(got), ops.convert_to_numpy(expected), atol=1e-5,
                                   err_msg=expected.path)
