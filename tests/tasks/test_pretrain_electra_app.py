"""apps/pretrain.py --objective electra end to end on a tiny corpus: the discriminator saved as an ELECTRA backbone,
the run resumed and trained further, a changed setting and a generator wider than the model refused."""

import json

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.saving import RunFolderError
from tests.conftest import app_module
from tests.conftest import ONCE_ON_TORCH
from tests.tasks.test_pretrain_app import tiny_run_command

CONFIG = dict(family="electra", num_layers=1, num_heads=2, hidden_dim=32, intermediate_dim=64, embedding_dim=16,
              pooler=False, dropout=0.0)


def command(tmp_path, steps):
    config = tmp_path / "electra.json"
    config.write_text(json.dumps(CONFIG))
    return [*tiny_run_command(tmp_path, "electra", steps=steps, checkpoint_every=1, holdout=0.25)[2:],
            "--config", str(config), "--objective", "electra", "--quiet"]


@ONCE_ON_TORCH  # tests/tasks/test_electra_pretrainer.py trains the model on every backend
def test_the_app_pretrains_an_electra_discriminator_and_resumes(tmp_path, capsys):
    main = app_module("pretrain").main
    main(command(tmp_path, steps=2))
    run = tmp_path / "electra"
    settings = json.loads((run / "settings.json").read_text())
    assert settings["objective"] == "electra" and settings["generator_fraction"] == 0.25
    metrics = json.loads((run / "metrics.json").read_text())
    assert {"loss", "mlm_loss", "rtd_loss", "rtd_accuracy", "rtd_auc"} <= set(metrics["end"])
    first = BertBackbone.from_preset(run)  # the folder every task's --init reads
    assert first.family == "electra" and first.pooler is None and first.embedding_dim == 16
    assert first.num_layers == 1 and first.hidden_dim == 32  # the discriminator, not the 8-wide generator

    with pytest.raises(RunFolderError, match=r"started with --generator-fraction 0\.25, not 0\.5"):
        main([*command(tmp_path, steps=2), "--generator-fraction", "0.5"])
    capsys.readouterr()
    main(command(tmp_path, steps=3))  # trains on from the backup
    assert "Resuming after 2 batches" in capsys.readouterr().out
    assert json.loads((run / "metrics.json").read_text())["steps"] == 3
    trained = keras.saving.load_model(run / "backbone.keras")
    assert any(not np.array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))
               for a, b in zip(first.weights, trained.weights, strict=True))


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="the app's options are backend-independent")
@pytest.mark.parametrize("options, message", [
    (["--generator-fraction", "2"], "argument --generator-fraction: 2.0 would make the generator wider than the model"),
    (["--generator-fraction", "0"], "argument --generator-fraction: 0.0 would make the generator of no width"),
])
def test_a_generator_wider_than_the_model_is_refused_in_one_line(tmp_path, capsys, options, message):
    with pytest.raises(SystemExit):
        app_module("pretrain").main([*command(tmp_path, steps=2), *options])
    assert message in capsys.readouterr().err
    assert not (tmp_path / "electra").exists()


@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="the app's options are backend-independent")
def test_the_generator_fraction_belongs_to_electra(tmp_path, capsys):
    with pytest.raises(SystemExit):
        app_module("pretrain").main([*tiny_run_command(tmp_path, "mlm", steps=0, checkpoint_every=1, holdout=0)[2:],
                                     "--objective", "mlm", "--generator-fraction", "0.5"])
    assert "give it with --objective electra (not mlm)" in capsys.readouterr().err
