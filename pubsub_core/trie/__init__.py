"""Substrate-compatible Merkle-Patricia trie (sp-trie LayoutV0/LayoutV1, Blake2-256): byte-identical roots,
nodes and storage proofs, a batch-updated trie over a pluggable node store, child tries and the relay root.

The two entry points other packages rely on are ``trie_root(items, version=1)`` and
``read_proof(root, nodes, keys)``; docs/trie.md lists the rest.
"""

from pubsub_core.trie.child import (
    CHILD_STORAGE_PREFIX,
    RelayTries,
    StoreFactory,
    child_storage_key,
    prefixed_child_storage_key,
)
from pubsub_core.trie.errors import (
    DuplicateNodeError,
    IncompleteProofError,
    InvalidChildRootError,
    MalformedNodeError,
    MissingNodeError,
    TrieError,
    UnusedNodesError,
    ValueMismatchError,
)
from pubsub_core.trie.layout import HASH_LEN, V0, V1, Layout, layout_for_version
from pubsub_core.trie.node import EMPTY_NODE, Node, NodeKind, decode_node, encode_header, encode_node
from pubsub_core.trie.proof import (
    LayeredSource,
    ProofDB,
    lookup,
    next_key,
    nodes_on_paths,
    proof_size,
    prove_from_source,
    read_child_proof,
    read_proof,
    verify_proof,
)
from pubsub_core.trie.recorder import AccessTracker
from pubsub_core.trie.root import ordered_trie_root, trie_root, trie_root_for
from pubsub_core.trie.store import MemoryNodeStore, NodeStore, StateNodeStore, StoreStats
from pubsub_core.trie.trie import Trie
from pubsub_core.trie.walker import NodeSource, PathStep, walk_path

EMPTY_ROOT = V1.empty_root
"""Root of the empty trie (blake2_256(0x00)), the same under V0 and V1."""

__all__ = [
    "CHILD_STORAGE_PREFIX",
    "EMPTY_NODE",
    "EMPTY_ROOT",
    "HASH_LEN",
    "AccessTracker",
    "DuplicateNodeError",
    "IncompleteProofError",
    "InvalidChildRootError",
    "LayeredSource",
    "Layout",
    "MalformedNodeError",
    "MemoryNodeStore",
    "MissingNodeError",
    "Node",
    "NodeKind",
    "NodeSource",
    "NodeStore",
    "PathStep",
    "ProofDB",
    "RelayTries",
    "StateNodeStore",
    "StoreFactory",
    "StoreStats",
    "Trie",
    "TrieError",
    "UnusedNodesError",
    "V0",
    "V1",
    "ValueMismatchError",
    "child_storage_key",
    "decode_node",
    "encode_header",
    "encode_node",
    "layout_for_version",
    "lookup",
    "next_key",
    "nodes_on_paths",
    "ordered_trie_root",
    "prefixed_child_storage_key",
    "proof_size",
    "prove_from_source",
    "read_child_proof",
    "read_proof",
    "trie_root",
    "trie_root_for",
    "verify_proof",
    "walk_path",
]
