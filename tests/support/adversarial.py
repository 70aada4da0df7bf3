"""Dishonest collators for tests: each mode turns an honest relay proof into one the runtime must reject.

| mode | what the collator does | rejected as |
|---|---|---|
| OMIT_BELOW_LIMIT | drops the largest non-root node although the budget could pay for it | MissingNodeBelowLimit |
| EXTRANEOUS | adds a node nothing reads | ExtraneousNode |
| DUPLICATE | lists a node twice | DuplicateNode |
| TAMPER_VALUE | flips a byte of a value (value node, or the leaf holding an inline value) | MissingNodeBelowLimit |
| REPLAY | sends an older block's proof | RootMismatch |
"""

from __future__ import annotations

from dataclasses import replace
from enum import Enum

from pubsub_core.hashing import blake2_256
from pubsub_core.subscriber.errors import CheatingReason
from pubsub_core.subscriber.types import RelayProof
from pubsub_core.trie.errors import MalformedNodeError
from pubsub_core.trie.node import decode_node

__all__ = ["AdversaryMode", "EXPECTED_REASON", "corrupt"]


class AdversaryMode(Enum):
    OMIT_BELOW_LIMIT = "omit_below_limit"
    EXTRANEOUS = "extraneous"
    DUPLICATE = "duplicate"
    TAMPER_VALUE = "tamper_value"
    REPLAY = "replay"


EXPECTED_REASON = {
    AdversaryMode.OMIT_BELOW_LIMIT: CheatingReason.MISSING_NODE_BELOW_LIMIT,
    AdversaryMode.EXTRANEOUS: CheatingReason.EXTRANEOUS_NODE,
    AdversaryMode.DUPLICATE: CheatingReason.DUPLICATE_NODE,
    AdversaryMode.TAMPER_VALUE: CheatingReason.MISSING_NODE_BELOW_LIMIT,
    AdversaryMode.REPLAY: CheatingReason.ROOT_MISMATCH,
}
"""The reason the runtime gives for each mode."""


def _is_value_carrier(node: bytes) -> bool:
    """A value node (does not decode as a trie node), or a node with an inline value."""
    try:
        decoded = decode_node(node)
    except MalformedNodeError:
        return True
    return decoded is not None and decoded.value is not None and not decoded.value_hashed


def corrupt(mode: AdversaryMode, honest: RelayProof, older: RelayProof | None = None) -> RelayProof | None:
    """The dishonest proof for ``mode``, or None when ``honest`` gives that mode nothing to work on
    (an empty proof; for TAMPER_VALUE a proof of the root node alone; for REPLAY no older proof of another root)."""
    nodes = list(honest.nodes)
    if mode is AdversaryMode.REPLAY:
        if older is None or older.relay_root == honest.relay_root or not older.nodes:
            return None
        return replace(honest, nodes=older.nodes)
    if mode is AdversaryMode.EXTRANEOUS:
        return replace(honest, nodes=tuple(sorted(nodes + [b"\x41\x00extraneous" + bytes(honest.relay_root[:4])])))
    if not nodes:
        return None
    root_free = [i for i, node in enumerate(nodes) if blake2_256(node) != honest.relay_root] or list(range(len(nodes)))
    if mode is AdversaryMode.OMIT_BELOW_LIMIT:
        largest = max(root_free, key=lambda i: (len(nodes[i]), nodes[i]))
        return replace(honest, nodes=tuple(nodes[:largest] + nodes[largest + 1 :]))
    if mode is AdversaryMode.DUPLICATE:
        return replace(honest, nodes=tuple(sorted(nodes + [nodes[0]])))
    if all(blake2_256(node) == honest.relay_root for node in nodes):
        return None
    carriers = [i for i in root_free if _is_value_carrier(nodes[i])] or root_free
    index = carriers[-1]
    tampered = bytearray(nodes[index])
    tampered[-1] ^= 0x01
    return replace(honest, nodes=tuple(sorted(nodes[:index] + [bytes(tampered)] + nodes[index + 1 :])))
