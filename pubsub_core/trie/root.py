"""Root of a set of entries computed from scratch (sp-trie trie_root): sort once, split by nibble, hash bottom-up."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable

from pubsub_core.codec.scale import encode_compact
from pubsub_core.trie.layout import HASH_LEN, Layout, layout_for_version
from pubsub_core.trie.node import EMPTY_NODE, encode_node, nibble_index

__all__ = ["common_prefix_len", "ordered_trie_root", "root_node_encoding", "trie_root", "trie_root_for"]


def common_prefix_len(a: str, b: str, start: int) -> int:
    """Length of the common prefix of two nibble strings known to agree on their first ``start`` nibbles."""
    stop = min(len(a), len(b))
    if stop <= start:
        return stop
    diff = int(a[start:stop], 16) ^ int(b[start:stop], 16)
    return stop - (diff.bit_length() + 3) // 4


def trie_root(items: Iterable[tuple[bytes, bytes]], version: int = 1) -> bytes:
    """The Blake2-256 trie root of (key, value) pairs under StateVersion ``version``; a later duplicate key wins."""
    return trie_root_for(items, layout_for_version(version))


def trie_root_for(items: Iterable[tuple[bytes, bytes]], layout: Layout) -> bytes:
    """The trie root of (key, value) pairs under any layout (for example one with another hasher)."""
    return layout.hasher(root_node_encoding(items, layout))


def ordered_trie_root(values: Iterable[bytes], version: int = 1) -> bytes:
    """Root of values keyed by their SCALE-compact index (sp-trie ordered_trie_root, the extrinsics root)."""
    return trie_root(((encode_compact(i), v) for i, v in enumerate(values)), version)


def root_node_encoding(items: Iterable[tuple[bytes, bytes]], layout: Layout) -> bytes:
    """The encoding of the root node (0x00 for no entries), before it is hashed into the root."""
    entries = {bytes(k): bytes(v) for k, v in items}
    if not entries:
        return EMPTY_NODE
    ordered = sorted((k.hex(), v) for k, v in entries.items())
    keys = [k for k, _ in ordered]
    values = [v for _, v in ordered]
    return _encode_subtree(keys, values, 0, len(keys), 0, layout)


def _encode_subtree(keys: list[str], values: list[bytes], lo: int, hi: int, depth: int, layout: Layout) -> bytes:
    """Encoding of the node holding keys[lo:hi] (sorted, sharing their first ``depth`` nibbles)."""
    threshold = layout.max_inline_value
    hasher = layout.hasher
    first = keys[lo]
    if hi - lo == 1:
        value = values[lo]
        if threshold is not None and len(value) >= threshold:
            return encode_node(first[depth:], hasher(value), True, None)
        return encode_node(first[depth:], value, False, None)
    split = common_prefix_len(first, keys[hi - 1], depth)
    node_value: bytes | None = None
    hashed = False
    index = lo
    if len(first) == split:
        node_value = values[lo]
        if threshold is not None and len(node_value) >= threshold:
            node_value = hasher(node_value)
            hashed = True
        index += 1
    children: list[bytes | None] = [None] * 16
    prefix = first[:split]
    while index < hi:
        nibble = keys[index][split]
        upper = bisect_left(keys, prefix + chr(ord(nibble) + 1), index, hi)
        child = _encode_subtree(keys, values, index, upper, split + 1, layout)
        children[nibble_index[nibble]] = child if len(child) < HASH_LEN else hasher(child)
        index = upper
    return encode_node(first[depth:split], node_value, hashed, children)
