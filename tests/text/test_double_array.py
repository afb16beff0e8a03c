"""kbert.text.double_array: every key finds its value, nothing else finds one."""

import keras
import numpy as np
import pytest

from kbert.text.double_array import build_double_array, trie_lookup

once = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="backend-independent; runs once")


@once
def test_shared_prefixes_and_full_byte_range():
    table = {b"a": 1, b"ab": 2, b"abc": 3, b"b": 4, b"\xff": 5, b"\x01\xff\x80": 6, "é中".encode(): 7,
             b"abd": 2**31 - 1, b"z" * 40: 0}
    units = build_double_array(list(table), list(table.values()))
    assert units.dtype == np.uint32
    assert {key: trie_lookup(units, key) for key in table} == table
    for missing in (b"", b"c", b"abcd", b"ac", b"\x01", b"\x01\xff", b"\xfe", "é".encode(), b"z" * 39, b"z" * 41):
        assert trie_lookup(units, missing) is None, missing


@once
def test_thousands_of_random_keys():
    rng = np.random.default_rng(0)
    keys = {bytes(rng.integers(1, 256, rng.integers(1, 7)).tolist()) for _ in range(3000)}
    keys |= {key[:-1] + b"\x01" for key in list(keys)[:500] if len(key) > 1}  # siblings of existing keys
    keys = sorted(keys)
    values = rng.integers(0, 2**31, len(keys)).tolist()
    units = build_double_array(keys, values)
    assert [trie_lookup(units, key) for key in keys] == values
    stored = set(keys)
    others = {bytes(rng.integers(1, 256, rng.integers(1, 8)).tolist()) for _ in range(3000)} - stored
    others |= {key[:-1] for key in keys if len(key) > 1} - stored  # prefixes that are not keys
    assert all(trie_lookup(units, key) is None for key in others)
