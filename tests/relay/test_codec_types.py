"""Pub-sub SCALE types against the reference code's hex vectors and the scalecodec registry."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pubsub_core.codec import ScaleDecodeError
from pubsub_core.codec.twox import twox64, twox64_concat, twox128
from pubsub_core.codec.types import PublishedEntry, PublisherInfo, SubscribedKey, TtlState
from pubsub_core.hashing import blake2_256

from tests.support.scale_registry import scale_decode, scale_encode


@pytest.mark.parametrize(
    ("entry", "width", "hex_"),
    [
        (PublishedEntry(b"value", 0, 0), 4, "1476616c75650000000000000000"),
        (PublishedEntry(b"value", 500, 100), 4, "1476616c7565f401000064000000"),
        (PublishedEntry(bytes([0xAA, 0xBB]), 0, 0), 8, "08aabb000000000000000000000000"),
        (PublishedEntry(bytes([0x11]), 0, 0), 8, "0411000000000000000000000000"),
    ],
)
def test_published_entry_matches_reference_vectors(entry: PublishedEntry, width: int, hex_: str) -> None:
    assert entry.encode(width).hex() == hex_
    assert PublishedEntry.decode(bytes.fromhex(hex_), width) == entry


def test_published_entry_of_32_byte_value_is_45_bytes_with_u64_block_number() -> None:
    assert len(PublishedEntry(bytes([0xAB]) * 32, 0, 0).encode(8)) == 45


@given(st.binary(max_size=300), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_published_entry_equals_registry_encoding(value: bytes, ttl: int, when: int) -> None:
    entry = PublishedEntry(value, ttl, when)
    assert entry.encode() == scale_encode("PublishedEntry", {"value": "0x" + value.hex(), "ttl": ttl, "when_inserted": when})
    assert PublishedEntry.decode(entry.encode()) == entry


def test_published_entry_rejects_trailing_and_truncated_bytes() -> None:
    data = PublishedEntry(b"v", 1, 2).encode()
    with pytest.raises(ScaleDecodeError):
        PublishedEntry.decode(data + b"\x00")
    with pytest.raises(ScaleDecodeError):
        PublishedEntry.decode(data[:-1])


@pytest.mark.parametrize(
    ("state", "registry_form", "hex_"),
    [
        (TtlState.infinite(), "Infinite", "00"),
        (TtlState.valid_for(50), {"ValidFor": 50}, "0132000000"),
        (TtlState.timed_out(), "TimedOut", "02"),
    ],
)
def test_ttl_state_encoding(state: TtlState, registry_form: object, hex_: str) -> None:
    assert state.encode().hex() == hex_
    assert TtlState.decode(bytes.fromhex(hex_)) == state
    assert scale_encode("TtlState", registry_form).hex() == hex_
    assert scale_decode("TtlState", bytes.fromhex(hex_)) == registry_form


@pytest.mark.parametrize(
    ("ttl", "inserted", "now", "expected"),
    [
        (0, 100, 200, TtlState.infinite()),
        (100, 100, 150, TtlState.valid_for(50)),
        (100, 100, 200, TtlState.timed_out()),
        (100, 1000, 1099, TtlState.valid_for(1)),
        (100, 1000, 1100, TtlState.timed_out()),
        (2**32 - 1, 2**32 - 1, 0, TtlState.valid_for(2**32 - 1)),
    ],
)
def test_ttl_state_compute_matches_reference(ttl: int, inserted: int, now: int, expected: TtlState) -> None:
    assert TtlState.compute(ttl, inserted, now) == expected


def test_ttl_state_rejects_unknown_variant() -> None:
    with pytest.raises(ScaleDecodeError):
        TtlState.decode(b"\x03")


@pytest.mark.parametrize(
    ("text", "hex_"),
    [
        (b"key", "447f0b47ade868b5ba625ee132e0b70814231c780f362e883bb3fda138e1476f"),
        (b"my_key", "bc9d53ee74990af2b89dacb0a0f2e037a7d8025b0b269ff0be1cf41eab7cc88b"),
        (b"test_key", "4bb87fd68ba5822a84b0365f7081b4ce4bee6793ff360f0c675c15f20e6e1b98"),
    ],
)
def test_subscribed_key_from_data_hashes_with_blake2(text: bytes, hex_: str) -> None:
    key = SubscribedKey.from_data(text)
    assert key.as_bytes().hex() == hex_
    assert key.encode() == blake2_256(text)


def test_subscribed_key_from_hash_uses_bytes_as_is() -> None:
    assert SubscribedKey.from_hash(bytes([0x42]) * 32).encode() == bytes([0x42]) * 32
    with pytest.raises(ValueError):
        SubscribedKey.from_hash(b"short")


def test_publisher_info_equals_registry_encoding() -> None:
    info = PublisherInfo(bytes(range(32)), 100)
    assert info.encode() == scale_encode("PublisherInfo", {"manager": "0x" + bytes(range(32)).hex(), "deposit": 100})
    assert PublisherInfo.decode(info.encode()) == info


def test_twox_hashers_match_reference_vectors() -> None:
    assert twox64((1000).to_bytes(4, "little")).hex() == "b6ff6f7d467b87a9"
    assert twox128(b"Broadcaster").hex() == "6aca18c1f7576767ccb238db4ccaedf2"
    assert (twox128(b"Broadcaster") + twox128(b"PublishedDataRoots")).hex() == (
        "6aca18c1f7576767ccb238db4ccaedf239166324ac7ea24c870f96ab961f9654"
    )
    assert twox64_concat((2000).to_bytes(4, "little")).hex() == "63f5a4efb16ffa83d0070000"


def test_broadcaster_events_equal_registry_encoding() -> None:
    from pubsub_core.broadcaster import (
        DataCleanedUp,
        DataPublished,
        KeyExpired,
        KeysDeleted,
        KeysForcedDeleted,
        PublisherDeregistered,
        PublisherRegistered,
        decode_event,
        event_from_json,
    )

    k = "0x" + bytes(range(32)).hex()
    cases = [
        (DataPublished(2000, 1), {"DataPublished": (2000, 1)}),
        (PublisherRegistered(2000, bytes(range(32))), {"PublisherRegistered": (2000, k)}),
        (PublisherDeregistered(2000), {"PublisherDeregistered": 2000}),
        (DataCleanedUp(2000), {"DataCleanedUp": 2000}),
        (KeyExpired(1000, bytes(range(32))), {"KeyExpired": (1000, k)}),
        (KeysDeleted(2000, 2), {"KeysDeleted": (2000, 2)}),
        (KeysForcedDeleted(2000, 3), {"KeysForcedDeleted": (2000, 3)}),
    ]
    for event, registry_form in cases:
        assert event.encode() == scale_encode("BroadcasterEvent", registry_form)
        assert decode_event(event.encode()) == event
        assert event_from_json(event.to_json()) == event


def test_broadcaster_error_indices_follow_the_reference_order() -> None:
    from pubsub_core.broadcaster import NotRegistered, TooManyKeys, TotalStorageSizeExceeded, ValueTooLarge

    assert ValueTooLarge(1, 2, 1).encode() == b"\x01"
    assert TooManyKeys(1, bytes(32), 50).encode() == b"\x02"
    assert TotalStorageSizeExceeded(1, 3000, 2048).encode() == b"\x03"
    assert NotRegistered(3000).encode() == b"\x05"
