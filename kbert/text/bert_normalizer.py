"""BERT's text normalization as a model for tensorflow-text's `FastBertNormalizer` op.

The stock model of `FastBertNormalizer(lower_case_nfd_strip_accents=True)` applies NFKC
case folding (so "④" becomes "4" and "ﬁ" becomes "fi"), turns control characters into spaces
and keeps private-use characters. Google's BERT and Hugging Face instead delete control,
format and private-use characters and only apply NFD. This module writes the Hugging Face
mapping, code point by code point, into the same flatbuffer layout, so the op, its offsets
and its TFLite kernel stay unchanged.
"""

import functools
import hashlib
import inspect
import pathlib
import unicodedata

import flatbuffers
import numpy as np

from kbert import paths
from kbert.saving import atomic_file
from kbert.text.double_array import build_double_array
from kbert_core.wordpiece import normalize_char

_SURROGATES = range(0xD800, 0xE000)
# Hugging Face's CJK ranges skip these ideographs (a typo: 0x2B920 for 0x2B820), so it keeps
# them inside words, where tensorflow-text would split them off. A private-use character,
# which no vocabulary holds, keeps them inside words and turns such words into [UNK].
_NOT_CJK_FOR_HF = range(0x2B820, 0x2B920)
_UNKNOWN_LETTER = "\ue000"
_CHANGED = 0x40000000  # tensorflow-text's kIsNormalizedStringDifferentMask
_LENGTH_BITS = 6


def normalize_code_point(code_point, lowercase=True):
    """What Hugging Face's `BertNormalizer` makes of one code point.

    Spaces become " ", control/format/private-use characters, U+0000 and U+FFFD vanish and,
    when `lowercase`, the NFD decomposition loses its accents (category Mn) and is
    lower-cased. CJK ideographs stay as they are: the tokenizer splits them off as words.
    The few ideographs that Hugging Face does not split off become U+E000, an unknown letter.

    Args:
        code_point: int. A Unicode code point.
        lowercase: bool. Whether to strip accents and lower-case.

    Example:
    >>> [normalize_code_point(ord(c)) for c in "É\\u200b\\u00a0"]
    ['e', '', ' ']
    """
    if code_point in _NOT_CJK_FOR_HF:
        return _UNKNOWN_LETTER
    return normalize_char.__wrapped__(chr(code_point), lowercase)  # uncached: each code point is asked once


@functools.lru_cache(maxsize=2)
def fast_bert_normalizer_model(lowercase=True):
    """The flatbuffer for `tensorflow_text.FastBertNormalizer(model_buffer=...)`.

    Building it asks every code point (about 2 s); each process that builds a tokenizer needs it, so it is built once
    and kept in `kbert.paths.cache_dir()` under a name that changes with the code that builds it and with Python's
    Unicode tables (`_cache_file`).

    Args:
        lowercase: bool. Whether to strip accents and lower-case.

    Example:
    >>> import tensorflow as tf, tensorflow_text as tf_text
    >>> model = tf.constant(np.frombuffer(fast_bert_normalizer_model(), np.uint8))
    >>> tf_text.FastBertNormalizer(model_buffer=model).normalize(["Ça\\x00va"]).numpy()
    array([b'cava'], dtype=object)
    """
    path = _cache_file(lowercase)
    model = _read_kept(path)
    if model is None:
        model = _built_model(lowercase)
        _keep(path, model)
    return model


def _read_kept(path):
    """The model kept at `path`, or None when there is none, or a half-written or damaged one (its sha256, in
    front, does not match)."""
    try:
        kept = path.read_bytes()
    except OSError:
        return None
    return kept[32:] if hashlib.sha256(kept[32:]).digest() == kept[:32] else None


def _keep(path, model):
    """Writes `model` and its sha256 to `path` (`kbert.saving.atomic_file`); a cache folder that cannot be written
    (or a full disk) only costs the next process the building."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(path) as partial:
            partial.write_bytes(hashlib.sha256(model).digest() + model)
    except OSError:
        pass


def _cache_file(lowercase):
    """Where the model for `lowercase` is kept: named by a hash of Python's Unicode version and the sources that
    build it (this module, the double-array builder, `normalize_char`'s module)."""
    key = hashlib.sha256(f"{unicodedata.unidata_version} {lowercase}".encode())
    for source in (__file__, inspect.getfile(build_double_array), inspect.getfile(normalize_char.__wrapped__)):
        key.update(pathlib.Path(source).read_bytes())
    return paths.cache_dir() / f"bert_normalizer-{key.hexdigest()[:32]}.bin"


def _built_model(lowercase):
    """`fast_bert_normalizer_model`'s flatbuffer, built from `normalize_code_point` for each code point."""
    pool, pool_offsets, keys, values = bytearray(), {}, [], []
    for code_point in range(0x110000):
        if code_point in _SURROGATES:
            continue
        normalized = normalize_code_point(code_point, lowercase)
        if normalized == chr(code_point):
            continue
        encoded = normalized.encode("utf-8")
        if encoded not in pool_offsets:
            pool_offsets[encoded] = len(pool)
            pool += encoded
        keys.append(chr(code_point).encode("utf-8"))
        values.append(_CHANGED | (pool_offsets[encoded] << _LENGTH_BITS) | len(encoded))
    # keys[0] is U+0000, which a darts-clone trie cannot hold: the model keeps it apart.
    return _flatbuffer(lowercase, build_double_array(keys[1:], values[1:]), values[0], pool)


def _flatbuffer(lowercase, trie, data_for_code_point_zero, pool):
    """Serializes tensorflow-text's `FastBertNormalizerModel` table."""
    builder = flatbuffers.Builder(len(pool) + 4 * len(trie) + 1024)
    pool_vector = builder.CreateNumpyVector(np.frombuffer(bytes(pool), np.uint8))
    trie_vector = builder.CreateNumpyVector(trie)
    builder.StartObject(4)
    builder.PrependBoolSlot(0, lowercase, False)
    builder.PrependUOffsetTRelativeSlot(1, trie_vector, 0)
    builder.PrependInt32Slot(2, data_for_code_point_zero, 0)
    builder.PrependUOffsetTRelativeSlot(3, pool_vector, 0)
    builder.Finish(builder.EndObject())
    return bytes(builder.Output())
