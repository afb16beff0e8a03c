import json

import numpy as np
import pytest

from kbert.saving import load_run
from tests.conftest import TESTS, next_backend, run_python
from tests.tasks.conftest import tiny_init  # noqa: F401 (a fixture)

PEOPLE, PLACES = ["man", "someone", "nobody"], ["film", "fun"]


def write_conll(path, sentences=16, seed=0):
    """Toy NER: people words are B-PER, place words B-LOC, the rest O; one 30-word sentence."""
    rng = np.random.default_rng(seed)
    blocks = []
    for i in range(sentences):
        words = rng.choice(["a", "the", "plays", "is", *PEOPLE, *PLACES], size=30 if i == 0 else rng.integers(2, 8))
        tags = ["B-PER" if w in PEOPLE else "B-LOC" if w in PLACES else "O" for w in words]
        blocks.append("\n".join(f"{w} {t}" for w, t in zip(words, tags)))
    path.write_text("\n\n".join(blocks) + "\n")
    return path


def write_squad(path):
    sentences = ["the man plays a film .", "someone sleeps .", "nobody is fine .", "the film is good ."]
    data = []
    for a in range(3):
        context = " ".join(sentences[a:] + sentences[:a])
        qas = [{"id": f"{a}-{q}", "question": question, "answers": [{"text": answer, "answer_start": context.index(answer)}]}
               for q, (question, answer) in enumerate([("who plays ?", "the man"), ("who sleeps ?", "someone"),
                                                        ("what is good ?", "the film")])]
        data.append({"title": f"article {a}", "paragraphs": [{"context": context, "qas": qas}]})
    path.write_text(json.dumps({"version": "1.1", "data": data}))
    return path


def record_models(monkeypatch, cls):
    """The models that `cls.from_preset` builds, appended as it builds them."""
    built, from_preset = [], cls.from_preset
    monkeypatch.setattr(cls, "from_preset", lambda *args, **kwargs: built.append(from_preset(*args, **kwargs))
                        or built[-1])
    return built


def check_mixed_precision_run(run, metrics, trained, texts, pairs=None):
    """bfloat16 compute and float32 weights in training; a float32 model with finite outputs in the run folder."""
    import keras

    assert metrics["hyperparameters"]["mixed_precision"] is True
    assert json.loads((run / "metrics.json").read_text())["hyperparameters"]["mixed_precision"] is True
    assert trained.backbone.get_layer("transformer_layer_0").compute_dtype == "bfloat16"
    assert {v.dtype for v in trained.weights} == {"float32"} and np.isfinite(metrics["history"]["loss"]).all()
    assert keras.config.dtype_policy().name == "float32"  # restored after building
    model = load_run(run)
    tokenizer, max_length = model.preprocessor.tokenizer, model.preprocessor.sequence_length
    assert model.backbone.get_layer("transformer_layer_0").compute_dtype == "float32"
    outputs = model.predict_on_batch(tokenizer(texts, pairs, max_length=max_length, padding="longest"))
    for output in outputs.values() if isinstance(outputs, dict) else [outputs]:
        output = keras.ops.convert_to_numpy(output)
        assert output.dtype == np.float32 and np.isfinite(output).all()


def predictions_under_the_next_backend(recipe, run, out):
    """`predict_ner_and_qa.py`'s predictions of the run folder `run` under the next backend (`next_backend`)."""
    other = next_backend()
    pytest.importorskip(other)
    run_python(TESTS / "recipes" / "predict_ner_and_qa.py", recipe, run, out, backend=other)
    theirs = json.loads(out.read_text())
    assert theirs["backend"] == other
    return theirs[recipe]


def train_flags():
    """The training flags that apps/ner.py and apps/qa.py share, and what they parse to."""
    common = ["--data", "d", "--init", "i", "--out", "o", "--epochs", "1", "--batch-size", "2", "--lr", "0.001",
              "--max-length", "64", "--mixed-precision", "--limit", "5", "--seed", "3", "--progress", "0",
              "--distribution", "model", "--mesh", "2x4", "--gradient-accumulation", "2", "--remat",
              "--checkpoint-every", "50"]
    expected = dict(command="train", data="d", init="i", out="o", epochs=1, batch_size=2, lr=0.001, max_length=64,
                    mixed_precision=True, distribution="model", mesh=(2, 4), gradient_accumulation=2, remat=True,
                    limit=5, validation_limit=None, seed=3, progress=0, checkpoint_every={"backup_steps": 50},
                    restart=False, json=False, verbose=False)
    return common, expected


def default_flags(parser):
    """(epochs, lr, max_length, mixed_precision, progress) of a bare `train` command."""
    d = vars(parser.parse_args(["train", "--data", "d", "--out", "o"]))
    return d["epochs"], d["lr"], d["max_length"], d["mixed_precision"], d["progress"]


# What every task's metrics.json holds about its run (kbert.training.results.run_metrics; issue 41).
RUN_FIELDS = {"task", "backend", "hyperparameters", "distribution", "machine", "parameters", "trainable_parameters",
              "steps", "resumed_at_step", "fit_seconds", "steps_per_second", "best_epoch", "history", "validation"}


def check_run_metrics(metrics, monitor=None):
    """The run's fields, the same for every task, and consistent: steps a second from steps and seconds, the best
    epoch the one of the best `monitor` in the history (else the last)."""
    assert RUN_FIELDS <= set(metrics), RUN_FIELDS - set(metrics)
    assert metrics["steps"] > 0 and 0 < metrics["trainable_parameters"] <= metrics["parameters"]
    seconds = metrics["fit_seconds"]  # rounded to 0.1 s, steps_per_second to 0.001
    slowest, fastest = metrics["steps"] / (seconds + 0.05), metrics["steps"] / max(seconds - 0.05, 1e-9)
    assert slowest - 0.001 <= metrics["steps_per_second"] <= fastest + 0.001
    scores = metrics["history"][monitor or "loss"]
    best = int(np.argmin(scores) if monitor == "val_loss" else np.argmax(scores)) + 1 if monitor else len(scores)
    assert metrics["best_epoch"] == best
