"""Shared fixtures: every trie test runs under both layouts, and trie-over-store tests under both stores."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pubsub_core.trie import V0, V1, Layout, MemoryNodeStore, StateNodeStore, Trie
from state import MemoryBackend, StateTransaction

VECTORS_PATH = Path(__file__).resolve().parent / "vectors" / "trie.json"
"""Vectors from Substrate, smoldot, gossamer, kagome and the W3F fixtures, each naming its public source."""


def load_vectors() -> dict[str, Any]:
    with VECTORS_PATH.open() as f:
        data: dict[str, Any] = json.load(f)
    return data


each_layout = pytest.mark.parametrize("layout", [V0, V1], ids=["V0", "V1"])
"""Run a test under sp-trie LayoutV0 and LayoutV1 (a decorator, so Hypothesis tests can use it too)."""

each_store = pytest.mark.parametrize("store_kind", ["memory", "state"])
"""Run a test over the in-memory node store and the paged store over state/."""


class TrieHarness:
    """A trie persisted in one store across batches; for the state store each batch is one transaction."""

    def __init__(self, kind: str, layout: Layout) -> None:
        self.kind = kind
        self.layout = layout
        self.backend = MemoryBackend()
        self.memory_trie = Trie(MemoryNodeStore(), layout)

    def open(self) -> tuple[Trie, StateTransaction | None]:
        if self.kind == "memory":
            return self.memory_trie, None
        txn = StateTransaction(self.backend)
        return Trie(StateNodeStore(txn, "trie", page_depth=2), self.layout), txn

    def apply(self, changes: Mapping[bytes, bytes | None]) -> bytes:
        trie, txn = self.open()
        root = trie.apply(changes)
        if txn is not None:
            txn.commit()
        return root

    def reader(self) -> Trie:
        return self.open()[0]
