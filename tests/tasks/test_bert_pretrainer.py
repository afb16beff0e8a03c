"""BertPretrainer: outputs, the saved file, loss falling under fit, and resuming a killed run."""

import json

import keras
import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone
from kbert.training import AtomicBackupAndRestore
from kbert.data.pretraining.dataset import pretraining_dataset
from kbert.tasks.bert_pretrainer import BertPretrainer
from kbert.text import BertTokenizer
from kbert.optimizers import bert_adamw
from tests.conftest import TINY, Kill, tiny_batch

WORDS = ["the", "cat", "dog", "sat", "ran", "on", "mat", "far", "home", "and"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *WORDS]


def batch_with_positions():
    batch = tiny_batch()
    batch["mask_positions"] = np.array([[1, 2], [3, 0], [1, 1]], "int32")
    return batch


def test_outputs_and_tied_decoder():
    backbone = BertBackbone(**TINY)
    model = BertPretrainer(backbone)
    out = model(batch_with_positions())
    assert tuple(out["mlm"].shape) == (3, 2, TINY["vocabulary_size"])
    assert tuple(out["nsp"].shape) == (3, 2)
    head = model.get_layer("mlm_head")
    assert head.token_embedding is backbone.token_embedding
    assert len(model.weights) == len({id(w) for w in model.weights})
    assert "mlm_head/bias" in [w.path for w in model.weights]
    assert set(BertPretrainer(BertBackbone(**TINY), next_sentence=False).output) == {"mlm"}


def test_keras_file_round_trip(tmp_path):
    model = BertPretrainer(BertBackbone(**TINY, dropout=0.0))
    config = model.get_config()
    json.dumps(config)
    model.save(tmp_path / "pretrainer.keras")
    loaded = keras.saving.load_model(tmp_path / "pretrainer.keras")
    batch = batch_with_positions()
    for key in ("mlm", "nsp"):
        np.testing.assert_allclose(ops.convert_to_numpy(loaded(batch)[key]),
                                   ops.convert_to_numpy(model(batch)[key]), atol=1e-6)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Four 'books' of short sentences with a fixed word order: easy to learn."""
    rng = np.random.default_rng(0)
    books = []
    for book in range(4):
        words = WORDS[book:] + WORDS[:book]
        books.append("\n".join(" ".join(words[:rng.integers(4, 10)]).capitalize() + "."
                               for _ in range(20)))
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n\n".join(books) + "\n")
    return path


def tiny_pretrainer(steps, **options):
    backbone = BertBackbone(**{**TINY, "vocabulary_size": len(VOCAB), "max_sequence_length": 24,
                               "hidden_dim": 32, "intermediate_dim": 64})
    model = BertPretrainer(backbone, **options)
    model.compile(optimizer=bert_adamw(3e-3, total_steps=steps, warmup_ratio=0.1))
    return model


def tiny_data(corpus, seed=0, **masking):
    return pretraining_dataset([corpus], BertTokenizer(VOCAB), batch_size=8, max_seq_length=24,
                               max_predictions=4, shuffle_buffer=64, seed=seed, **masking)


@pytest.mark.parametrize("mask_unit", ["token", "span"])
def test_fit_lowers_the_loss(corpus, mask_unit):
    keras.utils.set_random_seed(0)
    model = tiny_pretrainer(steps=45)
    history = model.fit(tiny_data(corpus, mask_unit=mask_unit), epochs=3, steps_per_epoch=15, shuffle=False,
                        verbose=0).history
    assert history["mlm_loss"][-1] < history["mlm_loss"][0] - 0.2
    assert history["mlm_perplexity"][-1] == pytest.approx(np.exp(history["mlm_loss"][-1]), rel=1e-5)
    assert history["loss"][-1] == pytest.approx(history["mlm_loss"][-1] + history["nsp_loss"][-1], rel=1e-3)


def test_span_boundary_objective_adds_its_loss_and_learns(corpus):
    """SpanBERT's objective: its loss, over the masked tokens, is added to the MLM and NSP losses, and falls; raw
    texts, which give no spans, are refused before any step."""
    keras.utils.set_random_seed(0)
    model = tiny_pretrainer(steps=30, span_boundary=True)
    data = tiny_data(corpus, mask_unit="span", span_boundaries=True)
    history = model.fit(data, epochs=2, steps_per_epoch=15, shuffle=False, verbose=0).history
    assert history["sbo_loss"][-1] < history["sbo_loss"][0] - 0.1
    total = history["mlm_loss"][-1] + history["nsp_loss"][-1] + history["sbo_loss"][-1]
    assert history["loss"][-1] == pytest.approx(total, rel=1e-3) and "sbo_accuracy" in history
    raw = BertPretrainer.from_preset("bert_tiny", next_sentence=False, span_boundary=True)
    with pytest.raises(ValueError, match="span-boundary objective .* raw texts"):
        raw.fit(["a first text to mask", "and another one"], verbose=0)


def test_perplexity_is_exp_of_the_masked_cross_entropy(corpus):
    """Checked against a numpy log-softmax of the predicted logits, weighted as the loss is."""
    keras.utils.set_random_seed(0)
    model = tiny_pretrainer(steps=1)
    x, y, weights = next(tiny_data(corpus).as_numpy_iterator())
    logs = model.test_on_batch(x, y, weights, return_dict=True)
    logits = ops.convert_to_numpy(model.predict_on_batch(x)["mlm"]).astype("float64")
    top = logits.max(-1, keepdims=True)
    log_probabilities = logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))
    token_losses = -np.take_along_axis(log_probabilities, y["mlm"][..., None], -1)[..., 0]
    mean_loss = (token_losses * weights["mlm"]).sum() / weights["mlm"].sum()
    assert logs["mlm_perplexity"] == pytest.approx(np.exp(mean_loss), rel=1e-4)


@pytest.mark.parametrize("masking", ["static", "dynamic"])
def test_evaluate_on_a_finite_dataset_counts_each_batch_once(corpus, masking):
    """A held-out pass (repeat=False) reports the batch-size-weighted mean of its batches'
    losses and NSP accuracy. Keras's TensorFlow trainer counted one batch too many in these
    trackers at the end of a dataset of unknown length with a static batch size (3.979 for
    4.311 on 12 batches)."""
    keras.utils.set_random_seed(0)
    model = tiny_pretrainer(steps=1)
    held_out = pretraining_dataset([corpus], BertTokenizer(VOCAB), batch_size=8, max_seq_length=24,
                                   max_predictions=4, masking=masking, duplication_factor=1,
                                   repeat=False, shuffle_buffer=0, seed=0)
    logs = model.evaluate(held_out, return_dict=True, verbose=0)
    batches = [(model.test_on_batch(x, y, w, return_dict=True), len(x["token_ids"]))
               for x, y, w in held_out.as_numpy_iterator()]
    assert len(batches) >= 3
    for key in ("loss", "mlm_loss", "nsp_loss", "nsp_accuracy"):
        expected = np.average([out[key] for out, _ in batches], weights=[n for _, n in batches])
        assert logs[key] == pytest.approx(expected, rel=1e-5), key


def test_a_killed_run_resumes_at_the_same_step(corpus, tmp_path):
    backup = tmp_path / "backup"
    model = tiny_pretrainer(steps=12)
    with pytest.raises(KeyboardInterrupt):
        model.fit(tiny_data(corpus), epochs=4, steps_per_epoch=3, shuffle=False, verbose=0,
                  callbacks=[AtomicBackupAndRestore(backup, 3), Kill(1)])  # after 2 epochs
    saved = {w.path: ops.convert_to_numpy(w) for w in model.weights}
    (backup / "partial.weights.h5").write_bytes(b"half a file")  # killed while writing

    resumed = tiny_pretrainer(steps=12)
    restore = AtomicBackupAndRestore(backup, 3)
    restore.set_model(resumed)
    restore.on_train_begin()
    assert int(ops.convert_to_numpy(resumed.optimizer.iterations)) == 6
    for w in resumed.weights:
        np.testing.assert_array_equal(ops.convert_to_numpy(w), saved[w.path])
    history = resumed.fit(tiny_data(corpus, seed=1), epochs=4, steps_per_epoch=3, shuffle=False, verbose=0,
                          callbacks=[AtomicBackupAndRestore(backup, 3)])
    assert history.epoch == [2, 3]
    assert int(ops.convert_to_numpy(resumed.optimizer.iterations)) == 12
    assert float(ops.convert_to_numpy(resumed.optimizer.learning_rate)) == 0.0  # schedule's end


def test_mixed_precision_step():
    model = BertPretrainer(BertBackbone(**TINY, dtype="mixed_bfloat16"))
    model.compile(optimizer=bert_adamw(1e-3, total_steps=10))
    batch = batch_with_positions()
    assert ops.dtype(model(batch)["mlm"]) == "float32"
    y = {"mlm": np.array([[5, 6], [7, 0], [8, 8]], "int32"), "nsp": np.array([0, 1, 0], "int32")}
    weights = {"mlm": np.array([[1, 1], [1, 0], [1, 1]], "float32"), "nsp": np.ones(3, "float32")}
    logs = model.train_on_batch(batch, y, sample_weight=weights, return_dict=True)
    assert np.isfinite(logs["loss"])
