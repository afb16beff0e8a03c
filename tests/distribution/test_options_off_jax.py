"""The task apps' --distribution model on a backend other than JAX: exit 2 with a clear line, before any
training and with no run folder written (the refusals are backend-independent: TensorFlow); --remat trains there
(its losses and gradients on each backend: tests/training/test_remat.py;
--distribution data trains on TensorFlow: test_data_parallel.py; on torch, and torch's refusals:
test_torch_app_processes.py)."""

import json

import keras
import pytest

from tests.conftest import app_module
from tests.tasks.conftest import tiny_init, write_sentiment_tsv  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow",
                                reason="refusals off JAX: checked once, on TensorFlow")


@pytest.mark.parametrize("options, message", [
    (["--distribution", "model", "--mesh", "1x1"], "Model parallelism (keras.distribution.ModelParallel) needs "
                                                   "the JAX backend (KERAS_BACKEND=jax); this process runs 'tensorflow'"),
    (["--gradient-accumulation", "0"], "argument --gradient-accumulation: expected a positive integer, got '0'"),
])
def test_refused_before_training(options, message, tiny_init, tmp_path, capsys):  # noqa: F811
    cli_errors, sentence_cli = app_module("cli_errors"), app_module("sentence_cli")
    data = write_sentiment_tsv(tmp_path / "train.tsv", rows=8)
    argv = ["train", "--data", str(data), "--init", str(tiny_init), "--out", str(tmp_path / "run"), *options]
    with pytest.raises(SystemExit) as exit:
        cli_errors.run(lambda args: sentence_cli.main("sentiment", args), argv, prog="sentiment.py")
    assert exit.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_remat_trains(tiny_init, tmp_path):  # noqa: F811
    sentence_cli = app_module("sentence_cli")
    data = write_sentiment_tsv(tmp_path / "train.tsv", rows=8)
    sentence_cli.main("sentiment", ["train", "--data", str(data), "--init", str(tiny_init), "--out",
                                    str(tmp_path / "run"), "--epochs", "1", "--remat"])
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["hyperparameters"]["remat"] is True
