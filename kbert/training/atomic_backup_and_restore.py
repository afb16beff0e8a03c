import json
import os
import pathlib

import keras


class AtomicBackupAndRestore(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore` whose backups survive a kill at any moment.

    Keras writes the backup in place, so a kill during the write (even `kill -9`) leaves a
    half-written file that the next run fails to load. Here each file is written beside its
    final name and renamed over it (atomic on one file system). The backup holds the
    weights and the optimizer state, so the learning-rate schedule resumes at the same step.
    The epoch to resume at comes from the restored optimizer's step count, which is
    always consistent with the weights. Back up once per epoch; to back up every N steps,
    fit with `steps_per_epoch=N`.

    Args:
        backup_dir: str or path. A folder used by this run only.
        steps_per_epoch: int. The `steps_per_epoch` given to `fit`.

    Example:
    >>> import numpy as np, tempfile
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> backup = AtomicBackupAndRestore(tempfile.mkdtemp(), steps_per_epoch=2)
    >>> x, y = np.zeros((4, 2)), np.zeros((4, 1))
    >>> _ = model.fit(x, y, batch_size=2, epochs=3, callbacks=[backup], verbose=0)
    >>> len(model.fit(x, y, batch_size=2, epochs=5, callbacks=[backup], verbose=0).epoch)
    2
    """

    def __init__(self, backup_dir, steps_per_epoch):
        super().__init__(str(backup_dir), save_freq="epoch", delete_checkpoint=False)
        self.steps_per_epoch = steps_per_epoch

    def _load_model(self):
        super()._load_model()
        if os.path.exists(self._weights_path):
            steps = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
            self.model._initial_epoch = steps // self.steps_per_epoch

    def _save_model(self):
        folder = pathlib.Path(self.backup_dir)
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / "partial.weights.h5"
        self.model.save_weights(partial, overwrite=True)
        os.replace(partial, self._weights_path)
        metadata = {"epoch": self._current_epoch,
                    "step": int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))}
        (folder / "partial.json").write_text(json.dumps(metadata))
        os.replace(folder / "partial.json", self._training_metadata_path)
