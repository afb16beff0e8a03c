"""apps/pretrain.py --tokenizer: a RoBERTa-shaped model pretrained with its byte-level BPE (a folder `tokenizers`
wrote), the folder recorded in settings.json and its files kept in the run folder; in one line, what cannot work:
NSP without token types, --tokenizer beside --vocab or --init, a folder without a tokenizer. The recipe's families
(resumed, fine-tuned): tests/recipes/test_pretrain_families.py."""

import json

import pytest

from kbert import BertBackbone
from tests.conftest import ONCE_ON_TORCH, app_module
from tests.recipes.test_pretrain_families import CONFIGS, corpus, tokenizer_folders  # noqa: F401 (fixtures)

pytestmark = ONCE_ON_TORCH  # the app's options; the recipe trains on every backend


def command(tmp_path, tokenizer, corpus_file):
    config = tmp_path / "roberta.json"
    config.write_text(json.dumps(CONFIGS["roberta"]))
    return ["--corpus", str(corpus_file), "--run", "roberta", "--output", str(tmp_path), "--config", str(config),
            "--tokenizer", str(tokenizer), "--steps", "1", "--checkpoint-every", "1", "--batch-size", "4",
            "--seq-len", "32", "--holdout-fraction", "0", "--quiet"]


def test_the_app_pretrains_a_roberta_shaped_model_with_its_tokenizer_folder(tmp_path, corpus, tokenizer_folders):
    main = app_module("pretrain").main
    arguments = command(tmp_path, tokenizer_folders["roberta"], corpus[0])
    with pytest.raises(ValueError, match=r"--objective nsp tells two segments apart by their token types, which a "
                                         r"roberta model has none of \(num_segments 1\): pretrain it with --objective "
                                         "mlm"):
        main(arguments)  # --objective nsp by default
    assert not (tmp_path / "roberta" / "settings.json").exists()
    with pytest.raises(ValueError, match="A albert model reads a sentence_piece tokenizer .*: give --tokenizer of its"):
        main([*arguments, "--objective", "mlm", "--tokenizer", str(tokenizer_folders["roberta"]), "--config",
              str(write_json(tmp_path / "albert.json", CONFIGS["albert"]))])
    main([*arguments, "--objective", "mlm"])
    run = tmp_path / "roberta"
    settings = json.loads((run / "settings.json").read_text())
    assert settings["tokenizer"] == str(tokenizer_folders["roberta"].resolve()) and settings["vocab"] is None
    assert {"vocab.json", "merges.txt", "backbone.keras"} <= {path.name for path in run.iterdir()}
    backbone = BertBackbone.from_preset(run)
    assert backbone.family == "roberta" and backbone.num_segments == 1


@pytest.mark.parametrize("extra, message", [
    (["--vocab", "vocab.txt"], "both give the tokenizer: drop one"),
    (["--init", "bert_tiny"], "brings its own config and vocabulary: drop --tokenizer and --config"),
])
def test_the_tokenizer_given_twice_is_refused(tmp_path, corpus, tokenizer_folders, extra, message):
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    extra = [str(tmp_path / value) if value == "vocab.txt" else value for value in extra]
    with pytest.raises(ValueError, match=message):
        app_module("pretrain").main([*command(tmp_path, tokenizer_folders["roberta"], corpus[0]), *extra])
    assert not (tmp_path / "roberta").exists()


def test_a_tokenizer_folder_without_a_tokenizer_is_refused(tmp_path, corpus):
    with pytest.raises(FileNotFoundError, match="--tokenizer: .* holds no tokenizer: expected vocab.txt"):
        app_module("pretrain").main(command(tmp_path, tmp_path, corpus[0]))


def write_json(path, value):
    path.write_text(json.dumps(value))
    return path
