"""The pub-sub spec's scenarios of the broadcaster pallet, one test per scenario, plus the reference's boundary
tests."""

from __future__ import annotations

import pytest

from pubsub_core.broadcaster import (
    PUBLISHER_DEPOSIT,
    AlreadyRegistered,
    Balances,
    Broadcaster,
    BroadcasterConfig,
    DataCleanedUp,
    DataPublished,
    InsufficientBalance,
    KeyExpired,
    KeysDeleted,
    KeysForcedDeleted,
    NoDataToCleanup,
    NoKeysToDelete,
    NotAuthorized,
    NotRegistered,
    PublisherDeregistered,
    PublisherRegistered,
    TooManyKeys,
    TooManyPublishers,
    TotalStorageSizeExceeded,
    ValueTooLarge,
)
from pubsub_core.codec.scale import encode_u32
from pubsub_core.codec.twox import twox64_concat
from pubsub_core.codec.types import PublishedEntry
from state import MemoryBackend, StateTransaction
from tests.relay.helpers import ALICE, BOB, key, setup


# -- Requirement: Publisher Registration ------------------------------------------------------------
def test_public_parachain_registration() -> None:
    pallet, txn = setup()
    events = pallet.register_publisher(txn, ALICE, 2000)
    assert events == [PublisherRegistered(2000, ALICE)]
    info = pallet.publisher_info(txn, 2000)
    assert info is not None and (info.manager, info.deposit) == (ALICE, 100)
    assert Balances.held(txn, ALICE, PUBLISHER_DEPOSIT) == 100
    assert Balances.free(txn, ALICE) == 9_900


def test_system_parachain_publishes_without_registration() -> None:
    pallet, txn = setup()
    events = pallet.publish_data(txn, 1000, key("k"), b"v", 0, now=5)
    assert events == [DataPublished(1000, 1)]
    assert pallet.publisher_info(txn, 1000) is None
    assert pallet.get_published_value(txn, 1000, key("k")) == b"v"


def test_registration_fails_when_already_registered() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    with pytest.raises(AlreadyRegistered):
        pallet.register_publisher(txn, ALICE, 2000)
    with pytest.raises(AlreadyRegistered):
        pallet.force_register_publisher(txn, BOB, 0, 2000)
    assert Balances.held(txn, ALICE, PUBLISHER_DEPOSIT) == 100
    assert Balances.held(txn, BOB, PUBLISHER_DEPOSIT) == 0


def test_registration_fails_when_max_publishers_reached() -> None:
    pallet, txn = setup(BroadcasterConfig(max_publishers=3))
    for para in (2000, 2001, 2002):
        pallet.register_publisher(txn, ALICE, para)
    with pytest.raises(TooManyPublishers) as raised:
        pallet.register_publisher(txn, ALICE, 2003)
    assert raised.value.para_id == 2003 and raised.value.limit == 3
    assert pallet.publisher_info(txn, 2003) is None
    pallet.publish_data(txn, 2000, key("still"), b"ok", 0, now=1)


def test_registration_requires_sufficient_balance() -> None:
    pallet, txn = setup(endow=50)
    with pytest.raises(InsufficientBalance):
        pallet.register_publisher(txn, ALICE, 2000)
    assert pallet.publisher_info(txn, 2000) is None and Balances.free(txn, ALICE) == 50


def test_registration_by_non_manager_is_refused() -> None:
    pallet, txn = setup()
    with pytest.raises(NotAuthorized):
        pallet.register_publisher(txn, BOB, 2000)
    with pytest.raises(NotAuthorized):
        pallet.register_publisher(txn, ALICE, 3000)


def test_force_register_with_zero_deposit_holds_nothing() -> None:
    pallet, txn = setup()
    pallet.force_register_publisher(txn, BOB, 0, 1000)
    assert Balances.held(txn, BOB, PUBLISHER_DEPOSIT) == 0 and Balances.free(txn, BOB) == 10_000


# -- Requirement: Publisher Deregistration ----------------------------------------------------------
def test_voluntary_deregistration() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("a"), b"1", 10, now=1)
    events = pallet.deregister_publisher(txn, ALICE, 2000)
    assert events == [DataCleanedUp(2000), PublisherDeregistered(2000)]
    assert pallet.get_all_published_data(txn, 2000) == []
    assert pallet.ttl_data(txn, 2000, key("a")) is None
    assert pallet.total_storage_size(txn, 2000) == 0
    assert Balances.held(txn, ALICE, PUBLISHER_DEPOSIT) == 0 and Balances.free(txn, ALICE) == 10_000
    assert pallet.publisher_count(txn) == 0


def test_deregistration_requires_manager() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    with pytest.raises(NotAuthorized):
        pallet.deregister_publisher(txn, BOB, 2000)
    with pytest.raises(NotRegistered):
        pallet.deregister_publisher(txn, ALICE, 2001)


@pytest.mark.parametrize("slashes", [False, True])
def test_force_deregistration_by_governance(slashes: bool) -> None:
    pallet, txn = setup(BroadcasterConfig(force_deregister_slashes=slashes))
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("a"), b"1", 0, now=1)
    events = pallet.force_deregister_publisher(txn, 2000)
    assert events == [DataCleanedUp(2000), PublisherDeregistered(2000)]
    assert pallet.get_all_published_data(txn, 2000) == [] and pallet.publisher_info(txn, 2000) is None
    assert Balances.held(txn, ALICE, PUBLISHER_DEPOSIT) == 0
    assert Balances.free(txn, ALICE) == (9_900 if slashes else 10_000)


# -- Requirement: XCM Publish Instruction (pallet side; the XCM side is in test_xcm.py) ----------------
def test_successful_publish() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    events = pallet.publish_data(txn, 2000, bytes(32), b"\x01\x02\x03", 0, now=7)
    assert events == [DataPublished(2000, 1)]
    assert pallet.published_keys(txn, 2000) == [bytes(32)]
    assert pallet.published_entry(txn, 2000, bytes(32)) == PublishedEntry(b"\x01\x02\x03", 0, 7)


def test_publish_with_finite_ttl() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("k"), b"v", 1000, now=100)
    assert pallet.ttl_data(txn, 2000, key("k")) == (1000, 100)
    entry = pallet.published_entry(txn, 2000, key("k"))
    assert entry is not None and entry.expires_at() == 1100


def test_publish_fails_for_unregistered_public_parachain() -> None:
    pallet, txn = setup()
    with pytest.raises(NotRegistered) as raised:
        pallet.publish_data(txn, 3000, key("k"), b"v", 0, now=1)
    assert raised.value.para_id == 3000
    assert not pallet.publisher_exists(txn, 3000)


def test_publish_fails_when_storage_limit_exceeded() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("a"), bytes(992), 0, now=1)
    pallet.publish_data(txn, 2000, key("b"), bytes(2048 - 64 - 992), 0, now=1)
    assert pallet.total_storage_size(txn, 2000) == 2048
    with pytest.raises(TotalStorageSizeExceeded):
        pallet.publish_data(txn, 2000, key("c"), b"", 0, now=1)


def test_system_parachain_boundary_1999_and_2000() -> None:
    pallet, txn = setup()
    pallet.publish_data(txn, 1999, key("k"), b"v", 0, now=1)
    with pytest.raises(NotRegistered):
        pallet.publish_data(txn, 2000, key("k"), b"v", 0, now=1)


def test_system_para_threshold_is_configurable() -> None:
    pallet, txn = setup(BroadcasterConfig(system_para_threshold=1000))
    with pytest.raises(NotRegistered):
        pallet.publish_data(txn, 1500, key("k"), b"v", 0, now=1)


# -- Requirement: Data Storage Limits ---------------------------------------------------------------
def test_key_count_limit() -> None:
    pallet, txn = setup(BroadcasterConfig(max_stored_keys=50, max_total_storage_size=10_000))
    pallet.register_publisher(txn, ALICE, 2000)
    for i in range(50):
        pallet.publish_data(txn, 2000, key(f"key{i}"), b"v", 0, now=1)
    with pytest.raises(TooManyKeys):
        pallet.publish_data(txn, 2000, key("one-more"), b"v", 0, now=1)
    pallet.publish_data(txn, 2000, key("key0"), b"updated", 0, now=2)
    assert len(pallet.published_keys(txn, 2000)) == 50


def test_value_size_limit() -> None:
    pallet, txn = setup(BroadcasterConfig(max_value_length=2048, max_total_storage_size=4096))
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("max"), bytes(2048), 0, now=1)
    with pytest.raises(ValueTooLarge) as raised:
        pallet.publish_data(txn, 2000, key("big"), bytes(2049), 0, now=1)
    assert (raised.value.length, raised.value.limit) == (2049, 2048)


def test_total_storage_size_limit() -> None:
    """The reference's test, with its mock's MaxValueLength of 1024."""
    pallet, txn = setup(BroadcasterConfig(max_value_length=1024))
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("key1"), bytes(1024), 0, now=1)
    assert pallet.total_storage_size(txn, 2000) == 1056
    with pytest.raises(TotalStorageSizeExceeded) as raised:
        pallet.publish_data(txn, 2000, key("key2"), bytes(1024), 0, now=1)
    assert raised.value.new_total == 2112
    pallet.publish_data(txn, 2000, key("key1"), bytes(100), 0, now=1)
    pallet.publish_data(txn, 2000, key("key2"), bytes(900), 0, now=1)
    assert pallet.total_storage_size(txn, 2000) == 132 + 932


def test_failed_publish_writes_nothing() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    before = txn.pending_changes()
    with pytest.raises(ValueTooLarge):
        pallet.publish_data(txn, 2000, key("k"), bytes(1025), 5, now=1)
    assert txn.pending_changes() == before


def test_system_paras_publish_without_counting_toward_max_publishers() -> None:
    """The pub-sub spec: system paras publish without registration, and MaxPublishers counts registrations only; their
    data stays reachable by governance and offboarding (reference bug 10)."""
    pallet, txn = setup(BroadcasterConfig(max_publishers=2))
    pallet.publish_data(txn, 1000, key("k"), b"v", 0, now=1)
    pallet.publish_data(txn, 1001, key("k"), b"v", 0, now=1)
    assert pallet.publisher_count(txn) == 0
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.register_publisher(txn, ALICE, 2001)
    assert pallet.publisher_count(txn) == 2
    pallet.publish_data(txn, 1002, key("k"), b"v", 0, now=1)  # the limit is full, a system chain still publishes
    with pytest.raises(TooManyPublishers):
        pallet.register_publisher(txn, ALICE, 2002)
    assert pallet.force_delete_keys(txn, 1000, [key("k")]) == [KeysForcedDeleted(1000, 1)]
    assert pallet.offboard(txn, [1001]) == [DataCleanedUp(1001)]
    assert pallet.publisher_count(txn) == 2
    pallet.deregister_publisher(txn, ALICE, 2000)
    pallet.register_publisher(txn, ALICE, 2002)


# -- Requirement: TTL Expiration --------------------------------------------------------------------
def test_key_expires() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("K"), b"v", 100, now=1000)
    assert pallet.on_idle(txn, 1099, 10**15).events == ()
    result = pallet.on_idle(txn, 1100, 10**15)
    assert result.events == (KeyExpired(2000, key("K")),)
    assert pallet.get_published_value(txn, 2000, key("K")) is None
    assert pallet.ttl_data(txn, 2000, key("K")) is None
    assert not pallet.publisher_exists(txn, 2000)


def test_infinite_ttl() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("K"), b"v", 0, now=1)
    assert pallet.ttl_data(txn, 2000, key("K")) is None
    assert pallet.on_idle(txn, 2**32 - 1, 10**15).events == ()
    assert pallet.get_published_value(txn, 2000, key("K")) == b"v"


def test_ttl_reset_on_update() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("K"), b"v", 100, now=1000)
    pallet.publish_data(txn, 2000, key("K"), b"w", 200, now=1050)
    assert pallet.ttl_data(txn, 2000, key("K")) == (200, 1050)
    assert pallet.on_idle(txn, 1249, 10**15).events == ()
    assert pallet.on_idle(txn, 1250, 10**15).events == (KeyExpired(2000, key("K")),)


def test_ttl_change_from_finite_to_infinite() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("K"), b"v", 100, now=1)
    pallet.publish_data(txn, 2000, key("K"), b"v", 0, now=2)
    assert pallet.ttl_data(txn, 2000, key("K")) is None
    assert pallet.on_idle(txn, 10_000, 10**15).events == ()


def test_large_ttl_saturates_instead_of_overflowing() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("K"), b"v", 2**32 - 1, now=10)
    assert pallet.ttl_data(txn, 2000, key("K")) == (2**32 - 1, 10)
    assert pallet.on_idle(txn, 2**32 - 2, 10**15).events == ()


def test_partial_cleanup_under_weight_limit() -> None:
    """The spec's "Partial cleanup under weight limit": 1000 keys are expired, on_idle has weight for 500 deletions (the
    reference's charge: reads(1), then reads_writes(2, 4) per entry), so 500 keys are deleted, the cursor is the last of
    them, and the next on_idle resumes after it."""
    cfg = BroadcasterConfig(max_stored_keys=50, max_total_storage_size=100_000, max_publishers=100)
    pallet, txn = setup(cfg)
    paras = range(1000, 1020)
    for para in paras:
        for i in range(50):
            pallet.publish_data(txn, para, key(f"{para}-{i}"), b"v", 10, now=1)
    # TtlData order is twox64 of the para first: 500 entries are the first 10 publishers' 50 keys.
    by_hash = sorted(paras, key=lambda p: twox64_concat(encode_u32(p)))
    weight_for_500 = cfg.idle_base_weight + 500 * cfg.idle_per_key_weight
    first = pallet.on_idle(txn, 100, weight_for_500 + cfg.idle_per_key_weight - 1)
    expired = [event for event in first.events if isinstance(event, KeyExpired)]
    assert len(first.events) == len(expired) == 500
    assert {event.publisher for event in expired} == set(by_hash[:10])
    assert first.consumed_weight == weight_for_500
    cursor = pallet.ttl_cursor(txn)
    assert cursor is not None and KeyExpired(*cursor) == first.events[-1]
    second = pallet.on_idle(txn, 100, weight_for_500 * 10)
    expired = [event for event in second.events if isinstance(event, KeyExpired)]
    assert len(second.events) == len(expired) == 500
    assert {event.publisher for event in expired} == set(by_hash[10:])
    assert pallet.ttl_cursor(txn) is not None  # the scan cap was hit exactly at the end of the map
    third = pallet.on_idle(txn, 100, weight_for_500)
    assert third.events == () and third.consumed_weight == cfg.idle_base_weight
    assert pallet.ttl_cursor(txn) is None


def test_partial_cleanup_under_weight_limit_reaches_a_key_past_empty_buckets() -> None:
    """Regression: with weight for a few deletions, a key whose publisher sits in a late TtlIndex bucket (para
    1000: bucket 182) was never deleted, because the walk paid for every empty bucket before it, ran out, and
    recorded no cursor, so every call restarted from bucket 0."""
    pallet, txn = setup()
    cfg = pallet.config
    assert twox64_concat(encode_u32(1000))[0] == 182
    pallet.publish_data(txn, 1000, key("K"), b"v", 1, now=1)
    weight = cfg.idle_base_weight + 7 * cfg.idle_per_key_weight
    results = [pallet.on_idle(txn, 5, weight) for _ in range(100)]
    assert results[0].events == (KeyExpired(1000, key("K")),)
    assert results[0].consumed_weight == cfg.idle_base_weight + cfg.idle_per_key_weight
    assert all(result.events == () for result in results[1:])
    assert pallet.get_published_value(txn, 1000, key("K")) is None
    assert pallet.ttl_cursor(txn) is None


def test_on_idle_scans_one_entry_for_one_entry_weight_and_resumes_after_it() -> None:
    """The smallest weight that pays for an entry scans exactly one per call, in TtlData order, whatever the
    buckets in between; the cursor is the entry scanned, and a lap wraps within a call."""
    pallet, txn = setup()
    cfg = pallet.config
    paras = [1000, 1001, 1002]
    for para in paras:
        pallet.publish_data(txn, para, key(f"{para}"), b"v", 1, now=1)
    order = sorted(paras, key=lambda p: twox64_concat(encode_u32(p)))
    weight = cfg.idle_base_weight + cfg.idle_per_key_weight
    pallet.publish_data(txn, order[1], key("live"), b"v", 0, now=1)  # infinite TTL: never scanned
    for para in order:
        result = pallet.on_idle(txn, 2, weight)
        assert result.events == (KeyExpired(para, key(f"{para}")),)
        assert result.consumed_weight == weight
        assert pallet.ttl_cursor(txn) == (para, key(f"{para}"))
    assert pallet.on_idle(txn, 2, weight).events == ()
    assert pallet.ttl_cursor(txn) is None
    # The cursor's successor is gone (deleted by its publisher): the call wraps to the start instead of idling.
    for para in paras:
        pallet.publish_data(txn, para, key(f"{para}"), b"v", 1, now=3)
    assert pallet.on_idle(txn, 4, weight).events == (KeyExpired(order[0], key(f"{order[0]}")),)
    pallet.delete_own_keys(txn, order[1], [key(f"{order[1]}")])
    pallet.delete_own_keys(txn, order[2], [key(f"{order[2]}")])
    pallet.publish_data(txn, order[0], key(f"{order[0]}"), b"v", 1, now=4)
    assert pallet.on_idle(txn, 5, weight).events == (KeyExpired(order[0], key(f"{order[0]}")),)
    assert pallet.ttl_cursor(txn) == (order[0], key(f"{order[0]}"))


def test_on_idle_work_is_proportional_to_what_it_scans() -> None:
    """on_idle neither loads nor sorts the whole TtlData map: it reads the TTL index as far as it scans, and is
    charged for the entries it scans."""
    cfg = BroadcasterConfig(max_stored_keys=50, max_total_storage_size=100_000, max_ttl_scans_per_idle=5)
    pallet, backend = Broadcaster(cfg), MemoryBackend()
    txn = StateTransaction(backend)
    paras = range(1000, 1040)
    for para in paras:
        for i in range(50):
            pallet.publish_data(txn, para, key(f"{para}-{i}"), b"v", 1000, now=1)
    txn.commit()
    before = backend.stats.scan_calls, backend.stats.bytes_read
    txn = StateTransaction(backend)
    result = pallet.on_idle(txn, 2, 10**15)
    assert result.events == ()
    assert backend.stats.scan_calls == before[0], "no namespace is scanned"
    assert backend.stats.bytes_read - before[1] < 50 * (32 + 8) * 2, "about one publisher's entries are read"
    assert result.consumed_weight == cfg.idle_base_weight + 5 * cfg.idle_per_key_weight
    # A weight that pays for the cursor but no entry reads nothing else and moves nothing.
    before = backend.stats.read_calls, backend.stats.bytes_read
    txn = StateTransaction(backend)
    short = pallet.on_idle(txn, 2, cfg.idle_base_weight + cfg.idle_per_key_weight - 1)
    assert short.events == () and short.consumed_weight == cfg.idle_base_weight
    assert (backend.stats.read_calls, backend.stats.bytes_read) == (before[0] + 1, before[1]), "only the cursor"
    assert pallet.ttl_cursor(txn) is None


def test_on_idle_is_capped_by_max_ttl_scans_per_idle() -> None:
    pallet, txn = setup(BroadcasterConfig(max_ttl_scans_per_idle=3))
    for i in range(5):
        pallet.publish_data(txn, 1000, key(f"k{i}"), b"v", 1, now=1)
    assert len(pallet.on_idle(txn, 5, 10**15).events) == 3
    assert pallet.ttl_cursor(txn) is not None
    assert len(pallet.on_idle(txn, 5, 10**15).events) == 2
    assert pallet.ttl_cursor(txn) is None
    assert pallet.on_idle(txn, 5, 10**15).events == ()


def test_on_idle_without_base_weight_does_nothing() -> None:
    pallet, txn = setup()
    pallet.publish_data(txn, 1000, key("k"), b"v", 1, now=1)
    assert pallet.on_idle(txn, 5, pallet.config.idle_base_weight - 1).consumed_weight == 0


# -- Requirement: Manual Key Deletion ---------------------------------------------------------------
@pytest.mark.parametrize("para", [2000, 1000])
def test_parachain_self_deletion(para: int) -> None:
    """The spec's "Parachain self-deletion": the parachain deletes its keys; 1000 is a system para with no registration
    and no manager."""
    pallet, txn = setup()
    if para == 2000:
        pallet.register_publisher(txn, ALICE, para)
    for name in "ABC":
        pallet.publish_data(txn, para, key(name), name.encode(), 5, now=1)
    assert pallet.delete_own_keys(txn, para, [key("A"), key("B")]) == [KeysDeleted(para, 2)]
    assert pallet.published_keys(txn, para) == [key("C")]
    assert pallet.ttl_data(txn, para, key("A")) is None
    with pytest.raises(NotRegistered):
        pallet.delete_own_keys(txn, 3000, [key("C")])


def test_manager_deletes_keys() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    for name in "ABC":
        pallet.publish_data(txn, 2000, key(name), name.encode(), 5, now=1)
    assert pallet.delete_keys(txn, ALICE, 2000, [key("A"), key("B"), key("A")]) == [KeysDeleted(2000, 2)]
    assert pallet.published_keys(txn, 2000) == [key("C")]
    assert pallet.ttl_data(txn, 2000, key("A")) is None
    assert pallet.total_storage_size(txn, 2000) == 33


def test_delete_keys_requires_manager_and_existing_keys() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("A"), b"a", 0, now=1)
    with pytest.raises(NotAuthorized):
        pallet.delete_keys(txn, BOB, 2000, [key("A")])
    with pytest.raises(NoKeysToDelete):
        pallet.delete_keys(txn, ALICE, 2000, [key("Z")])


def test_governance_force_deletion() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    for name in "ABC":
        pallet.publish_data(txn, 2000, key(name), b"x", 0, now=1)
    events = pallet.force_delete_keys(txn, 2000, [key("A"), key("B"), key("C")])
    assert events == [KeysForcedDeleted(2000, 3)]
    assert pallet.published_keys(txn, 2000) == []
    assert not pallet.publisher_exists(txn, 2000)
    assert pallet.deregister_publisher(txn, ALICE, 2000) == [PublisherDeregistered(2000)]


def test_force_delete_keys_reaches_unregistered_system_para() -> None:
    pallet, txn = setup()
    pallet.publish_data(txn, 1000, key("A"), b"x", 0, now=1)
    assert pallet.force_delete_keys(txn, 1000, [key("A")]) == [KeysForcedDeleted(1000, 1)]
    with pytest.raises(NotRegistered):
        pallet.force_delete_keys(txn, 3000, [key("A")])


def test_offboarding_cleans_registered_and_system_publishers() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("A"), b"x", 0, now=1)
    pallet.publish_data(txn, 1000, key("A"), b"x", 0, now=1)
    events = pallet.offboard(txn, [2000, 1000, 2005])
    assert events == [DataCleanedUp(1000), DataCleanedUp(2000), PublisherDeregistered(2000)]
    assert pallet.publisher_count(txn) == 0
    assert Balances.free(txn, ALICE) == 10_000


def test_cleanup_published_data_keeps_registration() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, key("A"), b"x", 9, now=1)
    assert pallet.cleanup_published_data(txn, ALICE, 2000) == [DataCleanedUp(2000)]
    assert pallet.publisher_info(txn, 2000) is not None
    assert pallet.ttl_data(txn, 2000, key("A")) is None


def test_cleanup_errors_in_order() -> None:
    pallet, txn = setup()
    with pytest.raises(NotRegistered):
        pallet.cleanup_published_data(txn, ALICE, 2000)
    pallet.register_publisher(txn, ALICE, 2000)
    with pytest.raises(NotAuthorized):
        pallet.cleanup_published_data(txn, BOB, 2000)
    with pytest.raises(NoDataToCleanup):
        pallet.cleanup_published_data(txn, ALICE, 2000)


def test_publish_max_value_size_works_at_the_default_limit() -> None:
    pallet, txn = setup()
    limit = pallet.config.max_value_length
    assert limit == 992
    pallet.register_publisher(txn, ALICE, 2000)
    pallet.publish_data(txn, 2000, bytes([0xAB]) * 32, bytes(limit), 0, now=1)
    with pytest.raises(ValueTooLarge):
        pallet.publish_data(txn, 2000, bytes([0xAB]) * 32, bytes(limit + 1), 0, now=1)


def test_publisher_state_is_independent_per_para() -> None:
    pallet, txn = setup()
    for para in (2000, 2001, 2002):
        pallet.register_publisher(txn, ALICE, para)
        pallet.publish_data(txn, para, key("shared"), str(para).encode(), 0, now=1)
    assert [pallet.get_published_value(txn, p, key("shared")) for p in (2000, 2001, 2002)] == [
        b"2000", b"2001", b"2002"
    ]
    assert Broadcaster.publisher_count(txn) == 3
