"""Loads FOLDER/model.keras (safe mode on) and writes its outputs on FOLDER/x.npz to FOLDER/y.npz.

Run under another KERAS_BACKEND than the one that saved the model.
"""

import sys

import keras
import numpy as np

import kbert  # noqa: F401  (registers kbert's serializable classes)


def main(folder):
    model = keras.saving.load_model(f"{folder}/model.keras", safe_mode=True)
    outputs = model(dict(np.load(f"{folder}/x.npz")))
    np.savez(f"{folder}/y.npz", **{k: keras.ops.convert_to_numpy(v) for k, v in outputs.items()})


if __name__ == "__main__":
    main(sys.argv[1])
