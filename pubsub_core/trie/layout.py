"""Trie layouts: the hasher and the largest value kept inline; Substrate's V0 and V1 differ by that one constant."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pubsub_core.hashing import blake2_256

__all__ = ["HASH_LEN", "Layout", "V0", "V1", "layout_for_version"]

HASH_LEN = 32
"""Length of a node hash; a child whose encoding is shorter is inlined in its parent instead."""


@dataclass(frozen=True, slots=True)
class Layout:
    """What the trie algorithm needs to know about the format (sp-trie LayoutV0/LayoutV1)."""

    name: str
    hasher: Callable[[bytes], bytes]
    max_inline_value: int | None
    """Values of at least this many bytes are stored as a separate value node referenced by hash (None: never)."""

    @property
    def empty_root(self) -> bytes:
        """The root of the empty trie: the hash of the one-byte empty node 0x00."""
        return self.hasher(b"\x00")

    def hashes_value(self, value: bytes) -> bool:
        """Whether this layout stores ``value`` as a separate value node."""
        return self.max_inline_value is not None and len(value) >= self.max_inline_value


V0 = Layout("V0", blake2_256, None)
"""sp-trie LayoutV0<BlakeTwo256>: every value inline in its node."""

V1 = Layout("V1", blake2_256, 33)
"""sp-trie LayoutV1<BlakeTwo256> (TRIE_VALUE_NODE_THRESHOLD = 33): values of 33 bytes or more are hashed."""


def layout_for_version(version: int) -> Layout:
    """The Blake2-256 layout of a Substrate StateVersion (0 or 1)."""
    if version == 0:
        return V0
    if version == 1:
        return V1
    raise ValueError(f"Unknown state version {version}; Substrate defines versions 0 and 1.")
