"""A run whose loss goes non-finite is stopped, naming the step and the last good backup, which is kept."""

import json

import numpy as np
import pytest

from kbert.training import AtomicBackupAndRestore, NonFiniteLossError, StopOnNonFiniteLoss
from tests.training.conftest import dense_model


def test_non_finite_loss_stops_the_run_and_keeps_the_last_good_backup(tmp_path):
    x, y = np.ones((1, 2)), np.ones((1, 1))  # SGD at 1e30: the weights reach 1e30, the loss inf at step 2
    backup = AtomicBackupAndRestore(tmp_path / "backup")
    with pytest.raises(NonFiniteLossError, match=r"The training loss is inf at step 2: training stopped and the "
                                                 r"last good checkpoint, .*backup \(epoch 1, step 1\), is kept"):
        dense_model(1e30).fit(x, y, epochs=3, callbacks=[StopOnNonFiniteLoss(backup), backup], verbose=0)
    metadata = json.loads((tmp_path / "backup" / "training_metadata.json").read_text())
    assert (metadata["epoch"], metadata["step"], metadata["history"]["loss"][0] < 1e3) == (1, 1, True)
