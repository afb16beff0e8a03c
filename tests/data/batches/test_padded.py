import numpy as np
import pytest

from kbert.data.batches.padded import PaddedBatches, bucket_length


def inputs(lengths, width=16):
    mask = (np.arange(width)[None] < np.array(lengths)[:, None]).astype("int32")
    return {"token_ids": mask * 7, "segment_ids": 0 * mask, "padding_mask": mask}


def test_cut_to_longest_and_targets_by_rank():
    batches = PaddedBatches(inputs([3, 9, 2]), {"a": np.arange(3), "b": np.ones((3, 16))},
                            np.ones((3, 16)), batch_size=2, token_aligned=True)
    x, y, weights = batches[0]
    assert x["token_ids"].shape == (2, 16) and y["a"].tolist() == [0, 1] and y["b"].shape == (2, 16)
    assert batches[1][0]["token_ids"].shape == (1, 8) and weights.shape == (2, 16)


def test_group_by_length_keeps_every_row_once():
    lengths = np.random.default_rng(0).integers(1, 16, 50)
    batches = PaddedBatches(inputs(lengths), batch_size=8, shuffle=True, group_by_length=True)
    assert sorted(batches.order.tolist()) == list(range(50))
    spread = [np.ptp(lengths[batches.order[i : i + 8]]) for i in range(0, 48, 8)]
    assert max(spread) < np.ptp(lengths)


class Echo:
    def predict_on_batch(self, x):
        return {"start": x["token_ids"] * 1.0, "n": x["padding_mask"].sum(1)}


def test_predict_pads_back_in_row_order():
    out = PaddedBatches(inputs([3, 9, 2]), batch_size=2).predict(Echo())
    assert out["start"].shape == (3, 16) and out["n"].tolist() == [3, 9, 2]
    assert out["start"][2].tolist() == [7, 7] + [0] * 14


def test_first_two_batches_differ_in_width_when_possible():
    lengths = [16] * 16 + [3] * 8  # two full batches of width 16 first, if unlucky
    for seed in range(5):
        batches = PaddedBatches(inputs(lengths), batch_size=8, shuffle=True, seed=seed, group_by_length=True)
        assert batches[0]["token_ids"].shape[1] != batches[1]["token_ids"].shape[1]
        assert sorted(batches.order.tolist()) == list(range(24))


def test_unshuffled_first_two_batches_differ_in_width():
    """Validation batches (rows in order): under TensorFlow a later width would fail otherwise."""
    batches = PaddedBatches(inputs([5, 5, 6, 2, 2, 9]), batch_size=2)
    assert [batches[i]["token_ids"].shape[1] for i in range(3)] == [8, 16, 16]
    assert batches.predict(Echo())["n"].tolist() == [5, 5, 6, 2, 2, 9]
    full = PaddedBatches(inputs([16, 16, 15, 16, 2, 2]), batch_size=2)  # cannot widen batch 1: all full
    assert [full[i]["token_ids"].shape[1] for i in range(3)] == [16, 16, 16]


class Recorder:
    """Classes per row (batch, 3), recording the shapes it is served."""

    def __init__(self, jit_compile=False):
        self.jit_compile = jit_compile
        self.shapes = []

    def predict_on_batch(self, x):
        self.shapes.append(x["token_ids"].shape)
        return np.stack([x["padding_mask"].sum(1), x["token_ids"][:, 0], np.zeros(len(x["token_ids"]))], 1)


def test_predict_serves_longest_first_and_returns_rows_in_order():
    lengths = [3, 9, 2, 16, 5]
    model = Recorder()
    out = PaddedBatches(inputs(lengths), batch_size=2).predict(model, token_outputs=False)
    assert out.shape == (5, 3) and out[:, 0].tolist() == lengths  # (batch, classes) kept as is
    assert model.shapes == [(2, 16), (2, 5), (1, 2)]  # [16, 9], [5, 3], [2], each as long as its longest


def test_compiled_models_see_bucketed_lengths_and_power_of_two_rows():
    lengths = [70, 3, 70, 70, 3, 70, 3]
    model = Recorder(jit_compile=True)
    out = PaddedBatches(inputs(lengths, width=128), batch_size=4).predict(model, token_outputs=False)
    assert out[:, 0].tolist() == lengths
    assert model.shapes == [(4, 80), (4, 4)]  # rows 70 round to the bucket 80; 3 rows padded to 4


def test_bucket_lengths_step_by_2_4_8_16_32_then_64():
    assert [bucket_length(n, 512) for n in (1, 2, 3, 16, 17, 32, 33, 64, 65, 128, 129, 256, 257, 512)] == \
        [2, 2, 4, 16, 20, 32, 40, 64, 80, 128, 160, 256, 320, 512]
    assert bucket_length(300, 280) == 280 and bucket_length(7, 5) == 5  # never past the rows' width
    buckets = [bucket_length(n, 512) for n in range(1, 513)]
    assert len(set(buckets)) == 28  # 8 + 4 + 4 + 4 + 4 + 4 compiled shapes at most
    assert all(0 <= b - n < max(2, n / 4) for n, b in enumerate(buckets, start=1))


def test_predict_on_no_rows_says_so():
    with pytest.raises(ValueError, match="no rows to predict"):
        PaddedBatches(inputs([]), batch_size=2).predict(Echo())


def test_an_epochs_order_depends_on_the_seed_and_the_epoch_alone():
    """What a run resumed at any epoch, or part-way through one, relies on (kbert.training.resumable_fit)."""
    lengths = np.random.default_rng(1).integers(1, 16, 30)

    def epoch_rows(batches):
        return [batches[i]["padding_mask"].sum(axis=1).tolist() for i in range(len(batches))]

    walked = PaddedBatches(inputs(lengths), batch_size=4, shuffle=True, seed=5, group_by_length=True)
    orders = []
    for epoch in range(3):
        walked.set_epoch(epoch)
        orders.append(walked.order.tolist())
    assert orders[0] != orders[1] != orders[2] and all(sorted(order) == list(range(30)) for order in orders)
    jumped = PaddedBatches(inputs(lengths), batch_size=4, shuffle=True, seed=5, group_by_length=True)
    jumped.set_epoch(2)
    assert jumped.order.tolist() == orders[2]
    whole = epoch_rows(jumped)
    jumped.set_epoch(2, skip=5)
    assert len(jumped) == 8 - 5 and epoch_rows(jumped) == whole[5:]
    other_seed = PaddedBatches(inputs(lengths), batch_size=4, shuffle=True, seed=6, group_by_length=True)
    other_seed.set_epoch(2)
    assert other_seed.order.tolist() != orders[2]
    with pytest.raises(ValueError, match="An epoch has 8 batches: cannot start it at batch 8"):
        jumped.set_epoch(0, skip=8)


def test_the_epoch_callback_sets_each_epoch_and_keeps_the_skip_of_the_epoch_resumed():
    batches = PaddedBatches(inputs([3] * 12), batch_size=2, shuffle=True, seed=0)
    batches.set_epoch(1, skip=4)
    callback = batches.epoch_callback()
    batches.on_epoch_end()  # as Keras's fit calls it when it starts
    callback.on_epoch_begin(1)
    assert (batches.epoch, batches.skip, len(batches)) == (1, 4, 2)
    callback.on_epoch_begin(2)
    assert (batches.epoch, batches.skip, len(batches)) == (2, 0, 6)
