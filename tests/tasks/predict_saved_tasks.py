"""Loads FOLDER/<name>.keras after `import kbert` alone; writes what predict gives to FOLDER/<backend>.json.

Run in a fresh process, under any KERAS_BACKEND.
"""

import json
import sys

import keras
import numpy as np

import kbert  # noqa: F401  (the only import the saved models may need)
from task_examples import PREDICT, token_ids


def main(folder):
    results = {}
    for name in ("classifier", "nli", "ner", "qa", "pretrainer"):
        model = keras.saving.load_model(f"{folder}/{name}.keras", safe_mode=True)
        raw = model.predict(token_ids(masked=name == "pretrainer"), verbose=0)
        results[name] = {"raw": keras.tree.map_structure(lambda a: np.asarray(a).tolist(), raw)}
        if name in PREDICT:
            decoded = model.predict(PREDICT[name], verbose=0)
            results[name]["decoded"] = np.asarray(decoded).tolist() if name in ("classifier", "nli") else decoded
        results[name]["compiled_with"] = type(model.optimizer).__name__ if model.optimizer else None
        results[name]["jit_compile"] = model.jit_compile
    fresh = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    fresh.compile()
    results["jit_compile_auto"] = fresh.jit_compile  # what "auto" means here, for a model made in this process
    with open(f"{folder}/{keras.config.backend()}.json", "w") as file:
        json.dump(results, file)


if __name__ == "__main__":
    main(sys.argv[1])
