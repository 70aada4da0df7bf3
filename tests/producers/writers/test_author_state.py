"""The block author's snapshot record (producers/writers/author_state.py): what it keeps, and that only a snapshot an author
key signed for this realm opens."""

from __future__ import annotations

import json

import pytest

from producers.workload import signer
from producers.writers.author_state import (
    AUTHOR_STATE,
    SNAPSHOT_VERSION,
    AuthorSnapshot,
    open_snapshot,
    snapshot_record,
)
from pubsub_core.envelope import Envelope, Topic
from pubsub_core.relay import canonical_json
from pubsub_core.release import RELEASE
from state.formats import FormatTooNewError

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
    for version in (b"0", b"-1", b"true", b'"2"'):
        wrong_version = data.replace(b'"version":2', b'"version":' + version)
        assert open_snapshot(REALM, KEYS, AUTHOR.sign(topic, 12, wrong_version).encode()) is None


def test_a_version_1_snapshot_of_release_0_1_0_opens_to_the_same_state() -> None:
    body = json.loads(Envelope.decode(snapshot_record(REALM, AUTHOR, SNAPSHOT)).data)
    assert (body["version"], body["release"]) == (SNAPSHOT_VERSION, RELEASE) == (2, RELEASE)
    del body["release"]  # what release 0.1.0 wrote: version 1, no release
    body["version"] = 1
    old = AUTHOR.sign(Topic(REALM, AUTHOR_STATE, "author"), 12, canonical_json(body).encode()).encode()
    assert open_snapshot(REALM, KEYS, old) == SNAPSHOT


def test_a_genuine_snapshot_of_a_newer_version_stops_the_reader_in_one_line() -> None:
    body = json.loads(Envelope.decode(snapshot_record(REALM, AUTHOR, SNAPSHOT)).data)
    body.update(version=SNAPSHOT_VERSION + 1, release="9.0.0", novel=[1])
    newer = AUTHOR.sign(Topic(REALM, AUTHOR_STATE, "author"), 12, canonical_json(body).encode()).encode()
    with pytest.raises(FormatTooNewError) as refused:
        open_snapshot(REALM, KEYS, newer)
    assert (refused.value.version, refused.value.release) == (3, "9.0.0")
    assert "\n" not in str(refused.value) and "author snapshot" in str(refused.value)
    forged = signer("someone").sign(Topic(REALM, AUTHOR_STATE, "author"), 12, canonical_json(body).encode())
    assert open_snapshot(REALM, KEYS, forged.encode()) is None  # only an author key's snapshot stops anything
