"""`predict` on raw strings on 8 virtual JAX CPU devices: a bert_tiny classifier and token classifier,
saved on one device, loaded and run on one device, under `data_parallel()` and under
`model_parallel((4, 2))`, on row counts the data dimension does not divide.

argv: WORKDIR. Writes WORKDIR/predictions.npz: per distribution and case, the classifier's
probabilities, the token classifier's logits (`PaddedBatches.predict`, what its `predict` decodes) and
its decoded tags, and the rows and layout of each batch the models ran; "<distribution>/error/<case>" instead when a case fails.
"""

import os
import pathlib
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"  # before jax is imported
os.environ["KERAS_BACKEND"] = "jax"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kbert  # noqa: E402
import kbert.distribution  # noqa: E402
from kbert.data.batches.padded import PaddedBatches  # noqa: E402

WORDS = "film cast plot score scene actor story music ending script camera light sound".split()
TEXTS = [" ".join(WORDS[: 1 + (i * 5) % 13]) + f" number {i}" for i in range(13)]  # 13 lengths, unsorted
CASES = {"13_batch32": (TEXTS, 32), "13_batch5": (TEXTS, 5), "1": (TEXTS[4:5], None)}
DISTRIBUTIONS = {"single": lambda: None, "data": kbert.distribution.data_parallel,
                 "model": lambda: kbert.distribution.model_parallel((4, 2), config="bert_tiny")}


def save_models(work):
    keras.utils.set_random_seed(0)
    tokenizer = kbert.BertTokenizer.from_preset("bert_tiny")
    backbone = kbert.BertBackbone.from_preset("bert_tiny")
    classifier = kbert.BertClassifier(
        backbone, num_classes=3, preprocessor=kbert.BertClassifier.preprocessor_class(tokenizer, sequence_length=16))
    tagger = kbert.BertTokenClassifier(
        kbert.BertBackbone.from_preset("bert_tiny"), label_names=["O", "B-X", "I-X"],
        preprocessor=kbert.BertTokenClassifier.preprocessor_class(tokenizer, sequence_length=16))
    classifier.save(work / "classifier.keras")
    tagger.save(work / "tagger.keras")


def watched(model, seen):
    """`model`, whose `predict_on_batch` notes in `seen` the rows and the layout of each batch's token ids."""
    run = model.predict_on_batch

    def predict_on_batch(x):
        sharding = getattr(x["token_ids"], "sharding", None)
        seen.append(f"{len(x['token_ids'])} {None if sharding is None else tuple(sharding.spec)}")
        return run(x)

    model.predict_on_batch = predict_on_batch
    return model


def main(work):
    save_models(work)
    results = {"devices": np.array(len(keras.distribution.list_devices()))}
    for name, distribution in DISTRIBUTIONS.items():
        keras.distribution.set_distribution(distribution())
        results[f"{name}/data_dimension"] = np.array(kbert.distribution.data_dimension())
        seen = []
        classifier = watched(keras.saving.load_model(work / "classifier.keras"), seen)
        tagger = watched(keras.saving.load_model(work / "tagger.keras"), seen)
        for case, (texts, batch_size) in CASES.items():
            seen.clear()
            try:
                results[f"{name}/probabilities/{case}"] = classifier.predict(texts, batch_size=batch_size, verbose=0)
                inputs = tagger.preprocessor.prepare(texts).inputs
                results[f"{name}/logits/{case}"] = PaddedBatches(inputs, batch_size=batch_size or 32).predict(tagger)
                results[f"{name}/tags/{case}"] = np.array(
                    [" ".join(out["tags"]) for out in tagger.predict(texts, batch_size=batch_size, verbose=0)])
                results[f"{name}/batches/{case}"] = np.array(seen)
            except Exception as error:  # noqa: BLE001 (reported to the test)
                results[f"{name}/error/{case}"] = np.array(f"{type(error).__name__}: {error}"[:500])
    keras.distribution.set_distribution(None)
    np.savez(work / "predictions.npz", **results)


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
