"""The Substrate node codec (sp-trie NodeCodec): node headers, partial keys, child bitmaps, values and children.

Nibble paths are lowercase hex strings (one character per nibble): slicing, comparing and sorting them
runs in C, and hex order equals nibble order. A child reference is the child's encoding when that is
shorter than 32 bytes (an inline child) and the child's 32-byte hash otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final

from pubsub_core.codec.memo import DecodeMemo
from pubsub_core.codec.scale import ScaleDecodeError, decode_compact, encode_compact
from pubsub_core.trie.errors import MalformedNodeError
from pubsub_core.trie.layout import HASH_LEN

__all__ = [
    "EMPTY_NODE",
    "NODE_MEMO",
    "Node",
    "NodeKind",
    "decode_node",
    "decode_node_cached",
    "encode_header",
    "encode_node",
    "nibble_index",
]

EMPTY_NODE = b"\x00"
"""The encoding of the empty trie's root node (it never occurs elsewhere)."""

_NIBBLES = "0123456789abcdef"
nibble_index = {c: i for i, c in enumerate(_NIBBLES)}
"""Child index of each hex nibble character."""


class NodeKind(Enum):
    """The five node kinds a header can name (the empty node aside); the value is (first-byte prefix, bits)."""

    LEAF = (0x40, 6)
    BRANCH = (0x80, 6)
    BRANCH_WITH_VALUE = (0xC0, 6)
    HASHED_VALUE_LEAF = (0x20, 5)
    HASHED_VALUE_BRANCH = (0x10, 4)


@dataclass(frozen=True, slots=True)
class Node:
    """A decoded node. ``children`` is None for a leaf, else 16 child references (None where no child).

    ``value`` is the inline value, or the 32-byte hash of the value node when ``value_hashed``; a branch may
    have no value. ``encoded`` is the node's exact encoding, so re-encoding is never needed.
    """

    partial: str
    value: bytes | None
    value_hashed: bool
    children: tuple[bytes | None, ...] | None
    encoded: bytes

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(
        self, partial: str, value: bytes | None, value_hashed: bool, children: tuple[bytes | None, ...] | None,
        encoded: bytes,
    ) -> None:
        object.__setattr__(self, "partial", partial)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "value_hashed", value_hashed)
        object.__setattr__(self, "children", children)
        object.__setattr__(self, "encoded", encoded)

    @property
    def kind(self) -> NodeKind:
        """The kind named by this node's header."""
        if self.children is None:
            return NodeKind.HASHED_VALUE_LEAF if self.value_hashed else NodeKind.LEAF
        if self.value is None:
            return NodeKind.BRANCH
        return NodeKind.HASHED_VALUE_BRANCH if self.value_hashed else NodeKind.BRANCH_WITH_VALUE

    @staticmethod
    def make(
        partial: str, value: bytes | None, value_hashed: bool, children: tuple[bytes | None, ...] | None
    ) -> Node:
        """Build a node and its encoding in one step (the only way new nodes are created)."""
        return Node(partial, value, value_hashed, children, encode_node(partial, value, value_hashed, children))

    def with_children(self, children: tuple[bytes | None, ...], swaps: Sequence[tuple[bytes, bytes]]) -> Node:
        """This branch with ``children``, which differ from its own only by the hashed refs in ``swaps``.

        The usual change in a batch: a child's hash changes. Splicing the new hash into the encoding costs a
        search, where encoding the branch again costs a pass over every child; when a reference is not a hash
        or its bytes are not found exactly once, the branch is encoded from scratch.
        """
        encoded = self.encoded
        for old, new in swaps:
            pattern = b"\x80" + old
            if len(old) != HASH_LEN or len(new) != HASH_LEN or encoded.count(pattern) != 1:
                return Node.make(self.partial, self.value, self.value_hashed, children)
            encoded = encoded.replace(pattern, b"\x80" + new)
        return Node(self.partial, self.value, self.value_hashed, children, encoded)


def encode_header(kind: NodeKind, nibble_count: int) -> bytes:
    """Header for a node of ``kind`` whose partial key has ``nibble_count`` nibbles (no upper bound)."""
    prefix, bits = kind.value
    return _header(prefix, 255 >> (8 - bits), nibble_count)


def _header(prefix: int, most: int, count: int) -> bytes:
    if count < most:
        return bytes((prefix | count,))
    rest = count - most
    return bytes((prefix | most,)) + b"\xff" * (rest // 255) + bytes((rest % 255,))


_REF_PREFIX = [bytes((length << 2,)) for length in range(HASH_LEN)] + [b"\x80"]
_BIT = [1 << index for index in range(16)]
"""Compact length prefix of a child reference, by reference length (inline < 32 bytes, or a 32-byte hash)."""


def encode_node(
    partial: str, value: bytes | None, value_hashed: bool, children: Sequence[bytes | None] | None
) -> bytes:
    """Encode a node: header, partial key, [bitmap], [value], [children] (sp-trie NodeCodec)."""
    count = len(partial)
    if children is None:
        header = _header(0x20, 31, count) if value_hashed else _header(0x40, 63, count)
    elif value is None:
        header = _header(0x80, 63, count)
    elif value_hashed:
        header = _header(0x10, 15, count)
    else:
        header = _header(0xC0, 63, count)
    parts = [header, bytes.fromhex("0" + partial if count & 1 else partial)]
    if children is not None:
        parts.append(b"")  # the bitmap, once the children are known
    if value is not None:
        if value_hashed:
            parts.append(value)
        else:
            size = len(value)
            parts.append(bytes((size << 2,)) if size < 64 else encode_compact(size))
            parts.append(value)
    if children is not None:
        bitmap = 0
        for index, child in enumerate(children):
            if child is not None:
                bitmap |= _BIT[index]
        parts[2] = bitmap.to_bytes(2, "little")
        prefix = _REF_PREFIX
        try:
            parts.extend([prefix[len(c)] + c for c in children if c is not None])
        except IndexError as exc:
            raise ValueError("A child reference is a 32-byte hash or an inline node shorter than 32 bytes.") from exc
    return b"".join(parts)


def decode_node(data: bytes) -> Node | None:
    """Decode one node; None for the empty node 0x00. Anything else invalid raises MalformedNodeError."""
    size = len(data)
    if size == 0:
        raise MalformedNodeError(data, "a node cannot be zero bytes long")
    first = data[0]
    if first == 0:
        if size != 1:
            raise MalformedNodeError(data, "the empty node 0x00 is followed by trailing bytes", 1)
        return None
    top = first >> 6
    value_hashed = False
    if top == 1:
        is_branch, has_value, most = False, True, 63
    elif top == 2:
        is_branch, has_value, most = True, False, 63
    elif top == 3:
        is_branch, has_value, most = True, True, 63
    elif first & 0xE0 == 0x20:
        is_branch, has_value, most, value_hashed = False, True, 31, True
    elif first & 0xF0 == 0x10:
        is_branch, has_value, most, value_hashed = True, True, 15, True
    else:
        raise MalformedNodeError(data, f"header byte 0x{first:02x} names no node kind")
    count = first & most
    pos = 1
    if count == most:
        while True:
            if pos >= size:
                raise MalformedNodeError(data, "the partial key length runs past the end", pos)
            more = data[pos]
            pos += 1
            count += more
            if more < 255:
                break
    end = pos + (count + 1) // 2
    if end > size:
        raise MalformedNodeError(data, f"a partial key of {count} nibbles runs past the end", pos)
    partial = data[pos:end].hex()
    if count & 1:
        if partial[0] != "0":
            raise MalformedNodeError(data, "the padding nibble of an odd partial key is not zero", pos)
        partial = partial[1:]
    pos = end
    bitmap = 0
    if is_branch:
        if pos + 2 > size:
            raise MalformedNodeError(data, "the child bitmap runs past the end", pos)
        bitmap = data[pos] | data[pos + 1] << 8
        if bitmap == 0:
            raise MalformedNodeError(data, "a branch has a bitmap without a child", pos)
        pos += 2
    value: bytes | None = None
    if has_value:
        if value_hashed:
            length = HASH_LEN
        elif pos < size and not data[pos] & 3:
            length = data[pos] >> 2
            pos += 1
        else:
            length, pos = _compact(data, pos, "value length")
        if pos + length > size:
            raise MalformedNodeError(data, f"a value of {length} bytes runs past the end", pos)
        value = data[pos : pos + length]
        pos += length
    children: tuple[bytes | None, ...] | None = None
    if is_branch:
        refs: list[bytes | None] = [None] * 16
        for index in range(16):
            if bitmap >> index & 1:
                if pos < size and not data[pos] & 3:  # the one-byte compact form: every hash and inline child
                    length = data[pos] >> 2
                    pos += 1
                else:
                    length, pos = _compact(data, pos, f"child {index} length")
                if pos + length > size:
                    raise MalformedNodeError(data, f"child {index} of {length} bytes runs past the end", pos)
                if length == 0:
                    raise MalformedNodeError(data, f"child {index} is an empty reference", pos)
                refs[index] = data[pos : pos + length]
                pos += length
        children = tuple(refs)
    if pos != size:
        raise MalformedNodeError(data, f"{size - pos} trailing bytes follow the node", pos)
    return Node(partial, value, value_hashed, children, bytes(data))


NODE_MEMO: Final[DecodeMemo[Node]] = DecodeMemo(1 << 14)
"""Decoded nodes by encoding, shared by every reader in the process (nodes are immutable); trie stores leave the
nodes they write here too (``StateNodeStore.write``)."""


def decode_node_cached(data: bytes) -> Node | None:
    """``decode_node`` remembered in ``NODE_MEMO`` (about the last 16,384 distinct encodings): path
    walks and page loads decode the same few nodes again and again (every subscribed key's walk starts at the
    same roots, every relay block reloads the same pages); a hit costs a hash of the bytes instead of a parse
    (docs/benchmarks.md, "Measured code choices"). Errors are not remembered: bad bytes raise
    again; neither is the empty node (None)."""
    node = NODE_MEMO.get(data)
    if node is None:
        node = decode_node(data)
        if node is not None:
            NODE_MEMO.remember(data, node)
    return node


def _compact(data: bytes, pos: int, what: str) -> tuple[int, int]:
    try:
        return decode_compact(data, pos)
    except ScaleDecodeError as exc:
        raise MalformedNodeError(data, f"the {what} is not a valid compact integer", pos) from exc
