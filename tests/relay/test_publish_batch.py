"""``Broadcaster.publish_many`` and the executor's Publish runs against a naive reference: one publish at a time,
each reading and rewriting the publisher's whole records (what the pallet did before batching). Same state,
same events, same error at the same item, same weight."""

from __future__ import annotations

from hashlib import blake2b

from hypothesis import example, given, settings
from hypothesis import strategies as st

from pubsub_core.broadcaster import Broadcaster, BroadcasterConfig, BroadcasterError, DataPublished
from pubsub_core.broadcaster.errors import NotRegistered, TooManyKeys, TotalStorageSizeExceeded, ValueTooLarge
from pubsub_core.broadcaster.pallet import PublishItem
from pubsub_core.codec.twox import twox64_concat
from pubsub_core.xcm import AllowPublishFrom, BarrierChain, Location, Publish, Weight, Xcm, XcmErrorCode, XcmExecutor
from pubsub_core.xcm.executor import ExecutorConfig
from state import MemoryBackend, StateTransaction
from tests.relay.helpers import ALICE, key

CONFIG = BroadcasterConfig(max_stored_keys=4, max_total_storage_size=260, max_value_length=63)
SYSTEM_PARA = 1000
REGISTERED_PARA = 2000
UNREGISTERED_PARA = 2001
KEYS = [key(f"k{i}") for i in range(6)]


# -- the reference: one publish at a time, written out from the pallet's documented storage layout -------------


def _para(para_id: int) -> bytes:
    return para_id.to_bytes(4, "little")


def _key_set(raw: bytes | None) -> set[bytes]:
    if raw is None:
        return set()
    assert raw[0] & 0b11 == 0  # fewer than 64 keys: a one-byte compact length
    return {raw[1 + i : 33 + i] for i in range(0, raw[0] >> 2 << 5, 32)}


def _encode_key_set(keys: set[bytes]) -> bytes:
    return bytes((len(keys) << 2,)) + b"".join(sorted(keys))


def reference_publish(txn: StateTransaction, para_id: int, k: bytes, value: bytes, ttl: int, now: int) -> str | None:
    """Publish one item the slow way; the error code or None. Writes nothing when it fails."""
    para = _para(para_id)
    registered = txn.get("broadcaster.RegisteredPublishers", para) is not None
    if not registered and not CONFIG.is_system_para(para_id):
        return "NotRegistered"
    if len(value) > CONFIG.max_value_length:
        return "ValueTooLarge"
    keys = _key_set(txn.get("broadcaster.PublishedKeys", para))
    old = txn.get("pubsub.child", para + k) if k in keys else None
    if old is None and len(keys) + 1 > CONFIG.max_stored_keys:
        return "TooManyKeys"
    old_size = 0 if old is None else 32 + (old[0] >> 2)  # values here are under 64 bytes
    raw_size = txn.get("broadcaster.TotalStorageSize", para)
    new_total = (0 if raw_size is None else int.from_bytes(raw_size, "little")) - old_size + 32 + len(value)
    if new_total > CONFIG.max_total_storage_size:
        return "TotalStorageSizeExceeded"
    txn.put("broadcaster.PublisherExists", para, b"\x01")
    txn.put("pubsub.child", para + k, bytes((len(value) << 2,)) + value + _para(ttl) + _para(now))
    txn.put("broadcaster.PublishedKeys", para, _encode_key_set(keys | {k}))
    txn.put("broadcaster.TotalStorageSize", para, _para(new_total))
    ttl_key = twox64_concat(para) + blake2b(k, digest_size=16).digest() + k
    ttl_keys = _key_set(txn.get("broadcaster.TtlKeys", para))
    had_any = bool(ttl_keys)
    if ttl == 0:
        txn.delete("broadcaster.TtlData", ttl_key)
        ttl_keys.discard(k)
    else:
        txn.put("broadcaster.TtlData", ttl_key, _para(ttl) + _para(now))
        ttl_keys.add(k)
    if ttl_keys:
        txn.put("broadcaster.TtlKeys", para, _encode_key_set(ttl_keys))
    else:
        txn.delete("broadcaster.TtlKeys", para)
    if had_any != bool(ttl_keys):
        para_key = twox64_concat(para)
        bucket = bytes((para_key[0],))
        raw = txn.get("broadcaster.TtlIndex", bucket) or b""
        members = {raw[i : i + 12] for i in range(0, len(raw), 12)} ^ {para_key}
        if members:
            txn.put("broadcaster.TtlIndex", bucket, b"".join(sorted(members)))
        else:
            txn.delete("broadcaster.TtlIndex", bucket)
    return None


# -- fixtures -------------------------------------------------------------------------------------------------


def fresh() -> tuple[Broadcaster, MemoryBackend]:
    backend = MemoryBackend()
    pallet = Broadcaster(CONFIG)
    txn = StateTransaction(backend)
    Broadcaster.set_para_manager(txn, REGISTERED_PARA, ALICE)
    pallet.force_register_publisher(txn, ALICE, 0, REGISTERED_PARA)
    txn.commit()
    return pallet, backend


def dump(backend: MemoryBackend) -> dict[str, dict[bytes, bytes]]:
    return {namespace: backend.scan(namespace) for namespace in backend.namespaces()}


ITEM = st.tuples(st.integers(0, len(KEYS) - 1), st.sampled_from([0, 1, 5, 40, 63, 64]), st.sampled_from([0, 0, 3, 7]))
BATCHES = st.lists(
    st.tuples(st.sampled_from([SYSTEM_PARA, REGISTERED_PARA, UNREGISTERED_PARA]), st.lists(ITEM, max_size=7)),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(BATCHES)
@example([(REGISTERED_PARA, [(0, 5, 3), (0, 5, 0)])])  # a finite TTL set and cleared again in one batch
@example([(SYSTEM_PARA, [(0, 63, 0), (1, 63, 0), (2, 63, 0), (0, 40, 0), (3, 5, 0)])])  # replaced, then too big
@example([(REGISTERED_PARA, [(i, 1, 0) for i in range(5)])])  # the fifth key is one too many
@example([(REGISTERED_PARA, [(0, 1, 3)]), (REGISTERED_PARA, [(0, 1, 0), (1, 1, 7)])])  # TtlKeys: same size, new set
def test_publish_many_equals_one_publish_at_a_time(batches: list[tuple[int, list[tuple[int, int, int]]]]) -> None:
    pallet, ours = fresh()
    _, theirs = fresh()
    for now, (para_id, raw_items) in enumerate(batches, start=1):
        items = [PublishItem(KEYS[k], bytes([k]) * length, ttl) for k, length, ttl in raw_items]
        txn = StateTransaction(ours)
        batch = pallet.publish_many(txn, para_id, items, now)
        txn.commit()
        reference = StateTransaction(theirs)
        error: str | None = None
        applied = 0
        for item in items:  # a failing item writes nothing; the ones after it are not published
            error = reference_publish(reference, para_id, item.key, item.value, item.ttl, now)
            if error is not None:
                break
            applied += 1
        reference.commit()
        assert batch.applied == applied
        assert batch.events == (DataPublished(para_id, 1),) * applied
        assert (None if batch.error is None else batch.error.code) == error
        assert dump(ours) == dump(theirs)


def test_a_refused_item_keeps_the_ones_before_and_writes_nothing_of_its_own() -> None:
    pallet, backend = fresh()
    txn = StateTransaction(backend)
    items = [PublishItem(KEYS[0], b"a", 3), PublishItem(KEYS[1], bytes(64), 0), PublishItem(KEYS[2], b"c", 0)]
    batch = pallet.publish_many(txn, REGISTERED_PARA, items, now=9)
    assert batch.applied == 1 and isinstance(batch.error, ValueTooLarge)
    assert pallet.published_keys(txn, REGISTERED_PARA) == [KEYS[0]]
    assert pallet.ttl_data(txn, REGISTERED_PARA, KEYS[0]) == (3, 9)
    assert pallet.total_storage_size(txn, REGISTERED_PARA) == 33


def test_an_unregistered_para_publishes_nothing() -> None:
    pallet, backend = fresh()
    txn = StateTransaction(backend)
    batch = pallet.publish_many(txn, UNREGISTERED_PARA, [PublishItem(KEYS[0], b"a")], now=1)
    assert batch.applied == 0 and batch.events == () and isinstance(batch.error, NotRegistered)
    assert txn.pending_changes() == {}


def test_publish_data_raises_the_batch_error() -> None:
    pallet, backend = fresh()
    txn = StateTransaction(backend)
    for i in range(4):
        pallet.publish_data(txn, REGISTERED_PARA, KEYS[i], b"v", 0, now=1)
    try:
        pallet.publish_data(txn, REGISTERED_PARA, KEYS[4], b"v", 0, now=1)
    except BroadcasterError as exc:
        assert isinstance(exc, TooManyKeys)
    else:
        raise AssertionError("a fifth key was accepted with max_stored_keys 4")


# -- the executor: a run of Publish instructions is one batch ---------------------------------------------------


def test_executor_run_stops_at_the_failing_publish_with_its_index_and_weight() -> None:
    pallet, backend = fresh()
    txn = StateTransaction(backend)
    config = ExecutorConfig()
    executor = XcmExecutor(BarrierChain([AllowPublishFrom()]), pallet, config)
    message = Xcm((Publish(KEYS[0], bytes(63), 0), Publish(KEYS[1], bytes(63), 0), Publish(KEYS[2], bytes(63), 0),
                   Publish(KEYS[3], bytes(63), 0), Publish(KEYS[4], b"", 0)))
    outcome = executor.execute(txn, Location.parachain(REGISTERED_PARA), message, now=1)
    # 3 x (32 + 63) = 285 > 260: the third publish is refused.
    assert outcome.error is not None and outcome.error.index == 2
    assert outcome.error.code is XcmErrorCode.PUBLISH_FAILED
    assert isinstance(outcome.error.cause, TotalStorageSizeExceeded)
    assert outcome.error.__cause__ is outcome.error.cause
    assert outcome.events == (DataPublished(REGISTERED_PARA, 1),) * 2
    assert outcome.used_weight == Weight(3 * config.publish_weight.ref_time, 0)
    assert pallet.published_keys(txn, REGISTERED_PARA) == sorted(KEYS[:2])


def test_executor_complete_run_weighs_every_publish() -> None:
    pallet, backend = fresh()
    txn = StateTransaction(backend)
    config = ExecutorConfig()
    executor = XcmExecutor(BarrierChain([AllowPublishFrom()]), pallet, config)
    message = Xcm(tuple(Publish(KEYS[i], b"v", 0) for i in range(3)))
    outcome = executor.execute(txn, Location.parachain(SYSTEM_PARA), message, now=1)
    assert outcome.error is None and outcome.events == (DataPublished(SYSTEM_PARA, 1),) * 3
    assert outcome.used_weight == Weight(3 * config.publish_weight.ref_time, 0)


def test_prefetch_publishers_reads_each_record_kind_once() -> None:
    pallet, backend = fresh()
    setup_txn = StateTransaction(backend)
    pallet.publish_many(setup_txn, REGISTERED_PARA, [PublishItem(KEYS[0], b"a", 3)], now=1)
    pallet.publish_many(setup_txn, SYSTEM_PARA, [PublishItem(KEYS[1], b"b", 0)], now=1)
    setup_txn.commit()
    txn = StateTransaction(backend)
    before = backend.stats.read_calls
    Broadcaster.prefetch_publishers(txn, [SYSTEM_PARA, REGISTERED_PARA, SYSTEM_PARA])
    assert backend.stats.read_calls - before == 4
    assert txn.pending_changes() == {}
    before = backend.stats.read_calls
    for para in (SYSTEM_PARA, REGISTERED_PARA):
        pallet.publisher_info(txn, para)
        pallet.published_keys(txn, para)
        pallet.total_storage_size(txn, para)
        txn.get("broadcaster.TtlKeys", para.to_bytes(4, "little"))
    assert backend.stats.read_calls == before
    assert pallet.published_keys(txn, REGISTERED_PARA) == [KEYS[0]]
    Broadcaster.prefetch_publishers(txn, [])
    assert backend.stats.read_calls == before
