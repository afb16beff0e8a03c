import re
import subprocess

import keras
import numpy as np

import kbert
from kbert.training import model_card
from kbert.training.model_card import MODEL_CARD_FILE, git_commit, library_versions, sha256, write_model_card

ABC_SHA256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # FIPS 180-2's "abc" example


def section(card, heading):
    """The lines of `card` under `## heading`, up to the next heading."""
    return card.split(f"## {heading}\n")[1].split("\n## ")[0].strip().splitlines()


def test_the_card_lists_data_hyperparameters_and_metrics(tmp_path):
    (tmp_path / "train.tsv").write_bytes(b"abc")
    (tmp_path / "shards").mkdir()
    data = {"train": tmp_path / "train.tsv", "valid": None, "shards": [str(tmp_path / "train.tsv"), tmp_path / "gone"],
            "init": tmp_path / "shards"}
    hyperparameters = {"epochs": 3, "learning_rate": 5e-05, "mesh": [2, 4], "pooling": "cls", "remat": False}
    metrics = {"validation": {"f1": 0.8125, "per_type": {"PER": {"f1": 1 / 3}}}, "steps": 120, "stopped": True,
               "label_names": ["O", "B-PER"]}
    write_model_card(tmp_path, "ner from tiny", data, hyperparameters, metrics)
    card = (tmp_path / MODEL_CARD_FILE).read_text()
    assert card.startswith("# ner from tiny\n")
    assert f"by kbert {kbert.__version__} (git " in card and f"on the {keras.config.backend()} backend" in card
    assert section(card, "Data") == [
        "| role | file | bytes | sha256 |", "|---|---|---|---|",
        f"| train | {tmp_path / 'train.tsv'} | 3 | {ABC_SHA256} |",
        f"| shards | {tmp_path / 'train.tsv'} | 3 | {ABC_SHA256} |",
        f"| shards | {tmp_path / 'gone'} | - | (not a file) |",
        f"| init | {tmp_path / 'shards'} | - | (not a file) |"]
    assert section(card, "Hyperparameters")[2:] == [
        "| epochs | 3 |", "| learning_rate | 5e-05 |", "| mesh | [2, 4] |", '| pooling | "cls" |', "| remat | false |"]
    # Numbers only, by dotted name, to 6 significant digits; the bool and the list are left out.
    assert section(card, "Metrics")[2:] == [
        "| validation.f1 | 0.8125 |", "| validation.per_type.PER.f1 | 0.333333 |", "| steps | 120 |"]
    assert f"- numpy {np.__version__}" in section(card, "Software")


def test_sha256_reads_the_file_in_chunks(tmp_path):
    (tmp_path / "abc").write_bytes(b"abc")
    assert sha256(tmp_path / "abc", chunk=1) == sha256(tmp_path / "abc") == ABC_SHA256


def test_git_commit_names_the_source_checkout_or_says_unknown(monkeypatch):
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", git_commit())

    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(subprocess, "run", no_git)
    assert git_commit() == "unknown"


def test_library_versions_lists_the_installed_ones(monkeypatch):
    versions = library_versions()
    assert versions["numpy"] == np.__version__ and versions["keras"] == keras.version()
    monkeypatch.setattr(model_card, "LIBRARIES", ("numpy", "no-such-library-kbert"))
    assert library_versions() == {"numpy": np.__version__}
