"""A darts-clone double-array trie, the lookup structure of tensorflow-text's fast ops."""

import numpy as np

_VALUE_LABEL = 0  # children are keyed by byte; a node's value sits under the label 0
_MAX_TRIES = 64


def build_double_array(keys, values):
    """Packs `keys` (non-empty bytes without b"\\0") and their `values` (< 2**31) into units.

    The layout is darts-clone's, as read by tensorflow-text's `DartsCloneTrieWrapper`: the
    node at `p` with offset `o` keeps its child for byte `c` at `p ^ o ^ c` and its value at
    `p ^ o`.

    Example:
    >>> units = build_double_array([b"a", b"ab"], [7, 9])
    >>> units.dtype, trie_lookup(units, b"ab"), trie_lookup(units, b"b")
    (dtype('uint32'), 9, None)
    """
    root = {}
    for key, value in zip(keys, values):
        node = root
        for byte in key:
            node = node.setdefault(byte, {})
        node[_VALUE_LABEL] = value
    units = [0]
    taken = bytearray(b"\1")
    used_bases = set()
    first_free, end = 1, 1
    stack = [(0, root)]
    while stack:
        position, node = stack.pop()
        labels = sorted(node)
        if len(taken) < end + 512:
            taken.extend(bytes(len(taken) + 512))
            units.extend([0] * (len(taken) - len(units)))
        first_free = taken.find(0, first_free)
        base = _find_base(labels, taken, used_bases, first_free, end)
        end = max(end, (base | 255) + 1)
        used_bases.add(base)
        taken[base] = 1  # a used base never holds another node's value
        units[position] |= _offset_bits(position ^ base) | (0x100 if _VALUE_LABEL in node else 0)
        for label in labels:
            child = base ^ label
            taken[child] = 1
            if label == _VALUE_LABEL:
                units[child] = node[label] | 0x80000000
            else:
                units[child] = label
                stack.append((child, node[label]))
    return np.array(units[:end], np.uint32)


def _find_base(labels, taken, used_bases, first_free, end):
    """A base whose slots `base ^ label` are all free: near the first free slot, else past `end`."""
    slot = first_free
    for _ in range(_MAX_TRIES):
        slot = taken.find(0, slot, end)
        if slot < 0:
            break
        base = slot ^ labels[0]
        if base not in used_bases and not any(taken[base ^ label] for label in labels):
            return base
        slot += 1
    return (end + 255) // 256 * 256


def _offset_bits(offset):
    if offset >= 1 << 21:
        raise ValueError("The trie is too large for this double-array builder.")
    return offset << 10


def trie_lookup(units, key):
    """The value stored for `key`, or None: the lookup tensorflow-text's kernels do.

    Example:
    >>> trie_lookup(build_double_array([b"xy"], [3]), b"xy")
    3
    """
    position, unit = 0, int(units[0])
    for byte in key:
        position ^= ((unit >> 10) << ((unit & 0x200) >> 6)) ^ byte
        if position >= len(units):
            return None
        unit = int(units[position])
        if unit & 0x800000FF != byte:
            return None
    if not unit & 0x100:
        return None
    return int(units[position ^ ((unit >> 10) << ((unit & 0x200) >> 6))]) & 0x7FFFFFFF
