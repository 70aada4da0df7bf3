"""The block author's snapshot record (producers/writers/author_state.py): what it keeps, and that only a snapshot an author
key signed for this realm opens."""

from __future__ import annotations

import json

from producers.workload import signer
from producers.writers.author_state import AUTHOR_STATE, AuthorSnapshot, open_snapshot, snapshot_record
from pubsub_core.envelope import Envelope, Topic

REALM = "polkadot"
AUTHOR = signer("author")
KEYS = frozenset({AUTHOR.public_key})
SNAPSHOT = AuthorSnapshot(
    number=12, hash=bytes(range(32)), block_offset=30,
    watermarks={AUTHOR.public_key: 12},
    included={("upward", "1000"): 7, ("extrinsics", "para:3000"): 0},
    received={("upward", "1000", bytes(32)): 9, ("upward", "1000", b"\x01" * 32): 3},
    buffered={("upward", "1000"): {9: 120, 10: 64}},
    offsets={"upward": 11, "horizontal": 0, "extrinsics": 2},
)


def test_a_signed_snapshot_opens_to_what_was_written() -> None:
    assert open_snapshot(REALM, KEYS, snapshot_record(REALM, AUTHOR, SNAPSHOT)) == SNAPSHOT


def test_the_record_is_canonical_json_signed_with_the_block_number_as_seqno() -> None:
    envelope = Envelope.decode(snapshot_record(REALM, AUTHOR, SNAPSHOT))
    assert envelope.seqno == 12 and envelope.topic == Topic(REALM, AUTHOR_STATE, "author")
    body = json.loads(envelope.data)
    assert body["buffered"] == [["upward", "1000", [[9, 120], [10, 64]]]]
    assert body["received"][0] == ["upward", "1000", "00" * 32, 9]


def test_a_snapshot_signed_by_another_key_or_for_another_realm_does_not_open() -> None:
    assert open_snapshot(REALM, KEYS, snapshot_record(REALM, signer("someone"), SNAPSHOT)) is None
    assert open_snapshot(REALM, KEYS, snapshot_record("kusama", AUTHOR, SNAPSHOT)) is None
    assert open_snapshot(REALM, frozenset(), snapshot_record(REALM, AUTHOR, SNAPSHOT)) is None


def test_tampered_malformed_or_renumbered_snapshots_do_not_open() -> None:
    raw = bytearray(snapshot_record(REALM, AUTHOR, SNAPSHOT))
    raw[-70] ^= 1  # a byte of the signed data
    assert open_snapshot(REALM, KEYS, bytes(raw)) is None
    assert open_snapshot(REALM, KEYS, b"not an envelope") is None and open_snapshot(REALM, KEYS, None) is None
    topic = Topic(REALM, AUTHOR_STATE, "author")
    assert open_snapshot(REALM, KEYS, AUTHOR.sign(topic, 12, b"{not json").encode()) is None
    data = Envelope.decode(snapshot_record(REALM, AUTHOR, SNAPSHOT)).data
    assert open_snapshot(REALM, KEYS, AUTHOR.sign(topic, 13, data).encode()) is None  # seqno is not the number
    wrong_version = data.replace(b'"version":1', b'"version":2')
    assert open_snapshot(REALM, KEYS, AUTHOR.sign(topic, 12, wrong_version).encode()) is None
