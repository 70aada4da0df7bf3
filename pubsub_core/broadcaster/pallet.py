"""The broadcaster pallet (relay chain): registration with deposits, publish with limits, TTL expiry, deletes.

An explicit state machine over a ``StateTransaction``: every call runs inside ``txn.atomic()``, so it either
applies fully and returns its events, or raises a typed ``BroadcasterError``/``BalancesError`` and leaves no
write behind. Semantics follow the reference code's broadcaster pallet with the pub-sub spec where
they differ (docs/design.md, "Sources"), and without the reference bugs 9 to 12 (docs/decisions.md).
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import takewhile
from typing import Protocol
from hashlib import blake2b

from state import StateTransaction

from pubsub_core.broadcaster.balances import PUBLISHER_DEPOSIT, Balances
from pubsub_core.broadcaster.config import BroadcasterConfig
from pubsub_core.broadcaster.errors import (
    AlreadyRegistered,
    BroadcasterError,
    NoDataToCleanup,
    NoKeysToDelete,
    NotAuthorized,
    NotRegistered,
    TooManyKeys,
    TooManyPublishers,
    TotalStorageSizeExceeded,
    ValueTooLarge,
)
from pubsub_core.broadcaster.events import (
    BroadcasterEvent,
    DataCleanedUp,
    DataPublished,
    KeyExpired,
    KeysDeleted,
    KeysForcedDeleted,
    PublisherDeregistered,
    PublisherRegistered,
)
from pubsub_core.codec.scale import ScaleDecodeError, decode_compact, encode_bytes, encode_compact, encode_u32
from pubsub_core.codec.twox import twox64_concat
from pubsub_core.codec.types import KEY_LEN, U32_MAX, PublishedEntry, PublisherInfo

__all__ = [
    "Broadcaster",
    "CHILD_NAMESPACE",
    "IdleResult",
    "MANAGERS_NAMESPACE",
    "PublishBatch",
    "PublishItem",
    "PublishRequest",
    "child_data_key",
    "split_child_data_key",
    "ttl_storage_key",
]

CHILD_NAMESPACE = "pubsub.child"
"""Every publisher's child-trie entries: key ``u32_le(para) ‖ key32``, value SCALE ``PublishedEntry``."""
MANAGERS_NAMESPACE = "registrar.Managers"
"""The para registrar's manager account per para (``u32_le(para)`` → 32 bytes), written at genesis."""

_REGISTERED = "broadcaster.RegisteredPublishers"
_EXISTS = "broadcaster.PublisherExists"
_KEYS = "broadcaster.PublishedKeys"
_SIZE = "broadcaster.TotalStorageSize"
_TTL = "broadcaster.TtlData"
_CURSOR = "broadcaster.TtlScanCursor"
_COUNT = "broadcaster.PublisherCount"
_TTL_KEYS = "broadcaster.TtlKeys"
"""Per publisher, its keys that have a ``TtlData`` entry (bounded by ``MaxStoredKeys``): on_idle's second level."""
_TTL_INDEX = "broadcaster.TtlIndex"
"""Bucket (first byte of ``twox64(para)``) → the sorted ``Twox64Concat(para)`` keys of the publishers in that
bucket with a ``TtlData`` entry: on_idle's first level, so it walks ``TtlData`` in key order without a scan."""
_PARA_KEY_LEN = 12


def _para(para_id: int) -> bytes:
    return encode_u32(para_id)


def child_data_key(para_id: int, key: bytes) -> bytes:
    """The state key of a publisher's child-trie entry in ``CHILD_NAMESPACE``."""
    return _para(para_id) + key


def split_child_data_key(raw: bytes) -> tuple[int, bytes]:
    """Inverse of ``child_data_key``: (para id, 32-byte key)."""
    return int.from_bytes(raw[:4], "little"), raw[4:]


def ttl_storage_key(para_id: int, key: bytes) -> bytes:
    """``TtlData`` key suffix: ``Twox64Concat(para) ‖ Blake2_128Concat(key)``; the scan order of on_idle."""
    return twox64_concat(_para(para_id)) + blake2b(key, digest_size=16).digest() + key


def _split_ttl_key(raw: bytes) -> tuple[int, bytes]:
    return int.from_bytes(raw[8:12], "little"), raw[28:]


def _split_index(raw: bytes | None) -> list[bytes]:
    if raw is None:
        return []
    return [raw[i : i + _PARA_KEY_LEN] for i in range(0, len(raw), _PARA_KEY_LEN)]


def _encode_keys(keys: Iterable[bytes]) -> bytes:
    ordered = sorted(keys)
    return encode_compact(len(ordered)) + b"".join(ordered)


def _decode_keys(raw: bytes | None) -> set[bytes]:
    """A ``BoundedVec<[u8; 32]>`` of keys as a set. Hand-written: slicing the whole vector after one length
    check replaces a ``ScaleReader.take`` per key, a hot path of the relay run (docs/benchmarks.md, "Measured code
    choices")."""
    if raw is None:
        return set()
    count, start = decode_compact(raw, 0)
    end = start + count * KEY_LEN
    if end != len(raw):
        raise ScaleDecodeError(f"{count} keys need {end - start} bytes, {len(raw) - start} follow", raw, start)
    return {raw[i : i + KEY_LEN] for i in range(start, end, KEY_LEN)}


def _entry_value_length(raw: bytes) -> int:
    """The value length of a SCALE ``PublishedEntry`` (``compact(len) ‖ value ‖ u32 ttl ‖ u32 when``), checked
    against the entry's size: what a publish needs of the entry it replaces, without decoding the value."""
    length, start = decode_compact(raw, 0)
    if start + length + 8 != len(raw):
        raise ScaleDecodeError(f"a published entry of {len(raw)} bytes cannot hold a {length}-byte value", raw, start)
    return length


class PublishRequest(Protocol):
    """What ``publish_many`` reads of an item: an XCM ``Publish`` instruction or a ``PublishItem``."""

    @property
    def key(self) -> bytes: ...

    @property
    def value(self) -> bytes: ...

    @property
    def ttl(self) -> int: ...


@dataclass(frozen=True, slots=True)
class PublishItem:
    """One value to publish: what an XCM ``Publish`` instruction carries (``ttl`` 0 = infinite)."""

    key: bytes
    value: bytes
    ttl: int = 0


@dataclass(frozen=True)
class PublishBatch:
    """What ``publish_many`` did: the first ``applied`` items are published (one ``DataPublished`` each);
    ``error`` is why item ``applied`` was refused (None: every item was published)."""

    events: tuple[BroadcasterEvent, ...]
    applied: int
    error: BroadcasterError | None


@dataclass(frozen=True)
class IdleResult:
    """What one on_idle run did: its events (KeyExpired, in scan order) and the weight it consumed."""

    events: tuple[BroadcasterEvent, ...]
    consumed_weight: int


class Broadcaster:
    """The pallet's calls, hooks and read helpers; stateless apart from its config."""

    def __init__(self, config: BroadcasterConfig | None = None) -> None:
        self.config = config or BroadcasterConfig()

    # -- genesis ---------------------------------------------------------------------------------
    @staticmethod
    def set_para_manager(txn: StateTransaction, para_id: int, manager: bytes) -> None:
        """Record the registrar's manager of a para (genesis); only it may register the para for publishing."""
        txn.put(MANAGERS_NAMESPACE, _para(para_id), manager)

    # -- reads -----------------------------------------------------------------------------------
    @staticmethod
    def publisher_info(txn: StateTransaction, para_id: int) -> PublisherInfo | None:
        raw = txn.get(_REGISTERED, _para(para_id))
        return None if raw is None else PublisherInfo.decode(raw)

    @staticmethod
    def publisher_exists(txn: StateTransaction, para_id: int) -> bool:
        return txn.contains(_EXISTS, _para(para_id))

    @staticmethod
    def published_keys(txn: StateTransaction, para_id: int) -> list[bytes]:
        return sorted(_decode_keys(txn.get(_KEYS, _para(para_id))))

    @staticmethod
    def total_storage_size(txn: StateTransaction, para_id: int) -> int:
        raw = txn.get(_SIZE, _para(para_id))
        return 0 if raw is None else int.from_bytes(raw, "little")

    @staticmethod
    def publisher_count(txn: StateTransaction) -> int:
        """How many publishers are registered: what ``MaxPublishers`` limits (system paras publishing without
        registration are not counted: the pub-sub spec, "Registration fails when max publishers reached")."""
        raw = txn.get_value(_COUNT)
        return 0 if raw is None else int.from_bytes(raw, "little")

    @staticmethod
    def published_entry(txn: StateTransaction, para_id: int, key: bytes) -> PublishedEntry | None:
        raw = txn.get(CHILD_NAMESPACE, child_data_key(para_id, key))
        return None if raw is None else PublishedEntry.decode(raw)

    @staticmethod
    def get_published_value(txn: StateTransaction, para_id: int, key: bytes) -> bytes | None:
        entry = Broadcaster.published_entry(txn, para_id, key)
        return None if entry is None else entry.value

    @staticmethod
    def get_all_published_data(txn: StateTransaction, para_id: int) -> list[tuple[bytes, bytes]]:
        """(key, value) pairs of a publisher in key order."""
        keys = Broadcaster.published_keys(txn, para_id)
        txn.prefetch(CHILD_NAMESPACE, [child_data_key(para_id, key) for key in keys])
        return [(key, Broadcaster.get_published_value(txn, para_id, key) or b"") for key in keys]

    @staticmethod
    def prefetch_publishers(txn: StateTransaction, para_ids: Iterable[int]) -> None:
        """Load the records a publish reads (registration, key set, total size, TTL key set) of ``para_ids``
        with one backend read per record kind, instead of one per record per publisher on first use."""
        paras = [_para(para_id) for para_id in sorted(set(para_ids))]
        if paras:
            for namespace in (_REGISTERED, _KEYS, _SIZE, _TTL_KEYS):
                txn.prefetch(namespace, paras)

    @staticmethod
    def ttl_data(txn: StateTransaction, para_id: int, key: bytes) -> tuple[int, int] | None:
        """``TtlData(para, key)`` = (ttl, when_inserted), present only for finite TTL."""
        raw = txn.get(_TTL, ttl_storage_key(para_id, key))
        if raw is None:
            return None
        return int.from_bytes(raw[:4], "little"), int.from_bytes(raw[4:8], "little")

    @staticmethod
    def ttl_cursor(txn: StateTransaction) -> tuple[int, bytes] | None:
        """``TtlScanCursor``: the last (para, key) a partial on_idle scan visited."""
        raw = txn.get_value(_CURSOR)
        return None if raw is None else _split_ttl_key(raw)

    # -- calls -----------------------------------------------------------------------------------
    def register_publisher(self, txn: StateTransaction, who: bytes, para_id: int) -> list[BroadcasterEvent]:
        """Signed: register ``para_id`` with ``who`` as manager, holding ``publisher_deposit`` from ``who``.

        Unlike the reference (bug 11), only the para's registrar manager may register it.
        """
        with txn.atomic():
            if self.publisher_info(txn, para_id) is not None:
                raise AlreadyRegistered(para_id)
            manager = txn.get(MANAGERS_NAMESPACE, _para(para_id))
            if manager != who:
                raise NotAuthorized(para_id, who, "only the para's registrar manager may register it")
            return self._register(txn, who, self.config.publisher_deposit, para_id)

    def force_register_publisher(
        self, txn: StateTransaction, manager: bytes, deposit: int, para_id: int
    ) -> list[BroadcasterEvent]:
        """Root: register ``para_id`` for any ``manager`` with any ``deposit`` (0 holds nothing)."""
        with txn.atomic():
            if self.publisher_info(txn, para_id) is not None:
                raise AlreadyRegistered(para_id)
            return self._register(txn, manager, deposit, para_id)

    def cleanup_published_data(self, txn: StateTransaction, who: bytes, para_id: int) -> list[BroadcasterEvent]:
        """Signed by the manager: wipe every key of the publisher; the registration and deposit stay."""
        with txn.atomic():
            self._ensure_manager(txn, who, para_id)
            if not self.publisher_exists(txn, para_id):
                raise NoDataToCleanup(para_id)
            return self._wipe(txn, para_id)

    def deregister_publisher(self, txn: StateTransaction, who: bytes, para_id: int) -> list[BroadcasterEvent]:
        """Signed by the manager: wipe the publisher's data, release the deposit, drop the registration."""
        with txn.atomic():
            info = self._ensure_manager(txn, who, para_id)
            events = self._wipe(txn, para_id) if self.publisher_exists(txn, para_id) else []
            return events + self._deregister(txn, para_id, info, slash=False)

    def force_deregister_publisher(self, txn: StateTransaction, para_id: int) -> list[BroadcasterEvent]:
        """Root: like deregistration; the deposit is slashed or returned per ``force_deregister_slashes``."""
        with txn.atomic():
            info = self.publisher_info(txn, para_id)
            if info is None:
                raise NotRegistered(para_id)
            events = self._wipe(txn, para_id) if self.publisher_exists(txn, para_id) else []
            return events + self._deregister(txn, para_id, info, slash=self.config.force_deregister_slashes)

    def delete_keys(
        self, txn: StateTransaction, who: bytes, para_id: int, keys: Sequence[bytes]
    ) -> list[BroadcasterEvent]:
        """Signed by the manager: delete the listed keys now; unknown and repeated keys are skipped."""
        with txn.atomic():
            self._ensure_manager(txn, who, para_id)
            return [KeysDeleted(para_id, self._delete_keys(txn, para_id, keys))]

    def delete_own_keys(self, txn: StateTransaction, para_id: int, keys: Sequence[bytes]) -> list[BroadcasterEvent]:
        """The para itself (a para origin, the pub-sub spec's "Parachain self-deletion"): delete some of its own keys.

        Open to a registered publisher and to a system para publishing without registration, which has no
        manager to call ``delete_keys`` for it; any other para is ``NotRegistered``.
        """
        with txn.atomic():
            if self.publisher_info(txn, para_id) is None and not self.config.is_system_para(para_id):
                raise NotRegistered(para_id)
            return [KeysDeleted(para_id, self._delete_keys(txn, para_id, keys))]

    def force_delete_keys(self, txn: StateTransaction, para_id: int, keys: Sequence[bytes]) -> list[BroadcasterEvent]:
        """Root: delete keys of a registered publisher or of an unregistered system para (bug 10 fixed)."""
        with txn.atomic():
            if self.publisher_info(txn, para_id) is None and not self.config.is_system_para(para_id):
                raise NotRegistered(para_id)
            return [KeysForcedDeleted(para_id, self._delete_keys(txn, para_id, keys))]

    def publish_data(
        self, txn: StateTransaction, para_id: int, key: bytes, value: bytes, ttl: int, now: int
    ) -> list[BroadcasterEvent]:
        """Store ``PublishedEntry{value, ttl, now}`` under ``key`` in the para's child trie (``Publish`` trait).

        Checks in order: registered or system para (``NotRegistered``), value length (``ValueTooLarge``),
        key count for a new key (``TooManyKeys``), total size (``TotalStorageSizeExceeded``). A system para
        needs no registration and is not counted toward ``MaxPublishers`` (the pub-sub spec); its data is still tracked
        (``PublisherExists``), so cleanup, ``force_delete_keys`` and offboarding reach it (bug 10).
        """
        batch = self.publish_many(txn, para_id, [PublishItem(key, value, ttl)], now)
        if batch.error is not None:
            raise batch.error
        return list(batch.events)

    def publish_many(
        self, txn: StateTransaction, para_id: int, items: Sequence[PublishRequest], now: int
    ) -> PublishBatch:
        """``publish_data`` for each item in order, stopping at the first that fails: the items before it stay
        published (as consecutive XCM ``Publish`` instructions do), the failing one and the rest write nothing.

        The state written equals that of one ``publish_data`` per item; the difference is the cost: the
        publisher's records (registration, key set, total size, TTL key set) are read and decoded once and
        written back once, where one call per item decoded the whole key set twice and re-encoded it for every
        item: UMP dispatch's hot path (docs/benchmarks.md, "Measured code choices").
        """
        for item in items:
            if len(item.key) != KEY_LEN:
                raise ValueError(f"published keys are {KEY_LEN} bytes, got {len(item.key)}")
        cfg = self.config
        para = _para(para_id)
        if not items:
            return PublishBatch((), 0, None)
        if self.publisher_info(txn, para_id) is None and not cfg.is_system_para(para_id):
            return PublishBatch((), 0, NotRegistered(para_id))
        keys = _decode_keys(txn.get(_KEYS, para))
        # One backend read for the entries the items may replace, instead of one per item (25,665 reads).
        txn.prefetch(CHILD_NAMESPACE, [para + item.key for item in items if item.key in keys])
        total = self.total_storage_size(txn, para_id)
        written: dict[bytes, int] = {}
        """Value lengths of the keys this batch publishes: the entry a later item replaces."""
        error: BroadcasterError | None = None
        applied = 0
        for item in items:
            key, length = item.key, len(item.value)
            if length > cfg.max_value_length:
                error = ValueTooLarge(para_id, length, cfg.max_value_length)
                break
            old_length = written.get(key)
            if old_length is None and key in keys:
                raw = txn.get(CHILD_NAMESPACE, para + key)
                old_length = None if raw is None else _entry_value_length(raw)
            if old_length is None and len(keys) + 1 > cfg.max_stored_keys:
                error = TooManyKeys(para_id, key, cfg.max_stored_keys)
                break
            new_total = total - (0 if old_length is None else KEY_LEN + old_length) + KEY_LEN + length
            if new_total > cfg.max_total_storage_size:
                error = TotalStorageSizeExceeded(para_id, new_total, cfg.max_total_storage_size)
                break
            total = new_total
            keys.add(key)
            written[key] = length
            applied += 1
        if applied:
            with txn.atomic():
                self._write_published(txn, para_id, items[:applied], keys, total, now)
        return PublishBatch((DataPublished(para_id, 1),) * applied, applied, error)

    def _write_published(
        self, txn: StateTransaction, para_id: int, items: Sequence[PublishRequest], keys: set[bytes], total: int,
        now: int,
    ) -> None:
        """Write what ``items`` (all accepted) leave behind: per item its entry and ``TtlData`` in item order,
        then the publisher's key set, total size and TTL key set once, as their last per-item write would."""
        para = _para(para_id)
        ttl_prefix = twox64_concat(para)
        ttl_keys = _decode_keys(txn.get(_TTL_KEYS, para))
        had_ttl_keys = set(ttl_keys)
        when = encode_u32(now)
        txn.put(_EXISTS, para, b"\x01")
        for item in items:
            key, ttl = item.key, item.ttl
            # PublishedEntry(item.value, ttl, now).encode(), without the dataclass (ttl and now are checked
            # by encode_u32 as the entry's __post_init__ would).
            txn.put(CHILD_NAMESPACE, para + key, encode_bytes(item.value) + encode_u32(ttl) + when)
            ttl_key = ttl_prefix + blake2b(key, digest_size=16).digest() + key
            if ttl == 0:
                txn.delete(_TTL, ttl_key)
                ttl_keys.discard(key)
            else:
                txn.put(_TTL, ttl_key, encode_u32(ttl) + when)
                ttl_keys.add(key)
        txn.put(_KEYS, para, _encode_keys(keys))
        txn.put(_SIZE, para, encode_u32(total))
        if ttl_keys != had_ttl_keys:
            self._store_ttl_keys(txn, para_id, bool(had_ttl_keys), ttl_keys)

    # -- hooks -----------------------------------------------------------------------------------
    def on_idle(self, txn: StateTransaction, now: int, remaining_weight: int) -> IdleResult:
        """Delete expired keys (``now >= when_inserted + ttl``, saturating) in TtlData key order.

        Charges what the reference charges: ``idle_base_weight`` once (the cursor) and ``idle_per_key_weight``
        for every scanned entry, expired or not; the index reads that lead to an entry are part of its charge,
        as the reference's iterator step is (docs/decisions.md, "on_idle cost"). Scans as many entries as the
        weight pays for, at most ``max_ttl_scans_per_idle``, strictly after ``TtlScanCursor``, wrapping to the
        start of the map once within the run; records the last scanned entry as the cursor, or kills it when
        the whole map was scanned. So a run that pays for one entry scans one, and the next resumes after it.
        """
        cfg = self.config
        if remaining_weight < cfg.idle_base_weight:
            return IdleResult((), 0)
        key_weight = cfg.idle_per_key_weight
        budget = cfg.max_ttl_scans_per_idle
        if key_weight:
            budget = min(budget, (remaining_weight - cfg.idle_base_weight) // key_weight)
        with txn.atomic():
            cursor = txn.get_value(_CURSOR)
            if budget == 0:
                return IdleResult((), cfg.idle_base_weight)
            events: list[BroadcasterEvent] = []
            scans = 0
            for raw_key in self._ttl_lap(txn, cursor):
                scans += 1
                raw_value = txn.get(_TTL, raw_key)
                if raw_value is not None:
                    ttl = int.from_bytes(raw_value[:4], "little")
                    when = int.from_bytes(raw_value[4:8], "little")
                    if now >= min(when + ttl, U32_MAX):
                        para_id, key = _split_ttl_key(raw_key)
                        self._remove_key(txn, para_id, key)
                        events.append(KeyExpired(para_id, key))
                if scans == budget:
                    txn.set_value(_CURSOR, raw_key)
                    break
            else:
                txn.set_value(_CURSOR, None)
            return IdleResult(tuple(events), cfg.idle_base_weight + scans * key_weight)

    @staticmethod
    def _ttl_lap(txn: StateTransaction, cursor: bytes | None) -> Iterator[bytes]:
        """Every TtlData key once, in key order, starting strictly after ``cursor``: to the end of the map, then
        from its start up to ``cursor``. Lazy: the index is read only as far as the caller takes keys."""
        yield from Broadcaster._ttl_keys_after(txn, cursor)
        if cursor is not None:
            yield from takewhile(lambda raw_key: raw_key <= cursor, Broadcaster._ttl_keys_after(txn, None))

    @staticmethod
    def _ttl_keys_after(txn: StateTransaction, cursor: bytes | None) -> Iterator[bytes]:
        """TtlData keys strictly after ``cursor`` (None: all) in key order, through the two-level index: from
        the cursor's bucket (its first byte) and publisher (its first 12 bytes) on, a bucket's publishers,
        then each publisher's keys; each publisher's key list is read when the walk reaches it."""
        cursor_para = b"" if cursor is None else cursor[:_PARA_KEY_LEN]
        first = 0 if cursor is None else cursor[0]
        # The buckets are read in one backend call: one read per bucket cost 26,000 backend calls over 103 blocks.
        txn.prefetch(_TTL_INDEX, [bytes((bucket,)) for bucket in range(first, 256)])
        for bucket in range(first, 256):
            for para_key in _split_index(txn.get(_TTL_INDEX, bytes((bucket,)))):
                if para_key < cursor_para:
                    continue
                keys = _decode_keys(txn.get(_TTL_KEYS, para_key[8:]))
                # para_key is Twox64Concat(para): the prefix of each of its TtlData keys (ttl_storage_key).
                raw_keys = sorted(para_key + blake2b(key, digest_size=16).digest() + key for key in keys)
                if cursor is not None and para_key == cursor_para:
                    raw_keys = [raw_key for raw_key in raw_keys if raw_key > cursor]
                txn.prefetch(_TTL, raw_keys)
                yield from raw_keys

    def offboard(self, txn: StateTransaction, para_ids: Iterable[int]) -> list[BroadcasterEvent]:
        """Session change (``OnNewSessionOutgoing``): wipe and deregister outgoing paras, in para id order.

        Also wipes unregistered system paras, whose data the reference never cleans (bug 10).
        """
        events: list[BroadcasterEvent] = []
        with txn.atomic():
            for para_id in sorted(set(para_ids)):
                if self.publisher_exists(txn, para_id):
                    events += self._wipe(txn, para_id)
                info = self.publisher_info(txn, para_id)
                if info is not None:
                    events += self._deregister(txn, para_id, info, slash=False)
        return events

    # -- internals -------------------------------------------------------------------------------
    def _register(self, txn: StateTransaction, manager: bytes, deposit: int, para_id: int) -> list[BroadcasterEvent]:
        if self.publisher_count(txn) >= self.config.max_publishers:
            raise TooManyPublishers(para_id, self.config.max_publishers)
        info = PublisherInfo(manager, deposit)
        if deposit:
            Balances.hold(txn, manager, PUBLISHER_DEPOSIT, deposit)
        txn.put(_REGISTERED, _para(para_id), info.encode())
        self._add_count(txn, 1)
        return [PublisherRegistered(para_id, manager)]

    def _ensure_manager(self, txn: StateTransaction, who: bytes, para_id: int) -> PublisherInfo:
        info = self.publisher_info(txn, para_id)
        if info is None:
            raise NotRegistered(para_id)
        if info.manager != who:
            raise NotAuthorized(para_id, who, "the caller is not the publisher's manager")
        return info

    def _deregister(
        self, txn: StateTransaction, para_id: int, info: PublisherInfo, slash: bool
    ) -> list[BroadcasterEvent]:
        if info.deposit:
            if slash:
                Balances.slash_held(txn, info.manager, PUBLISHER_DEPOSIT, info.deposit)
            else:
                Balances.release(txn, info.manager, PUBLISHER_DEPOSIT, info.deposit)
        txn.delete(_REGISTERED, _para(para_id))
        self._add_count(txn, -1)
        return [PublisherDeregistered(para_id)]

    def _wipe(self, txn: StateTransaction, para_id: int) -> list[BroadcasterEvent]:
        for key in _decode_keys(txn.get(_KEYS, _para(para_id))):
            txn.delete(CHILD_NAMESPACE, child_data_key(para_id, key))
            txn.delete(_TTL, ttl_storage_key(para_id, key))
            self._track_ttl(txn, para_id, key, finite=False)
        self._clear_publisher(txn, para_id)
        return [DataCleanedUp(para_id)]

    def _clear_publisher(self, txn: StateTransaction, para_id: int) -> None:
        """The last key is gone: drop the per-publisher records (bug 12: PublisherExists is cleared too)."""
        for namespace in (_KEYS, _SIZE, _EXISTS):
            txn.delete(namespace, _para(para_id))

    def _delete_keys(self, txn: StateTransaction, para_id: int, keys: Sequence[bytes]) -> int:
        stored = _decode_keys(txn.get(_KEYS, _para(para_id)))
        present = [key for key in dict.fromkeys(keys) if key in stored]
        if not present:
            raise NoKeysToDelete(para_id, tuple(keys))
        for key in present:
            self._remove_key(txn, para_id, key)
        return len(present)

    def _remove_key(self, txn: StateTransaction, para_id: int, key: bytes) -> None:
        entry = self.published_entry(txn, para_id, key)
        keys = _decode_keys(txn.get(_KEYS, _para(para_id)))
        keys.discard(key)
        txn.delete(CHILD_NAMESPACE, child_data_key(para_id, key))
        txn.delete(_TTL, ttl_storage_key(para_id, key))
        self._track_ttl(txn, para_id, key, finite=False)
        if not keys:
            self._clear_publisher(txn, para_id)
            return
        freed = 0 if entry is None else KEY_LEN + len(entry.value)
        txn.put(_KEYS, _para(para_id), _encode_keys(keys))
        txn.put(_SIZE, _para(para_id), encode_u32(max(self.total_storage_size(txn, para_id) - freed, 0)))

    @staticmethod
    def _track_ttl(txn: StateTransaction, para_id: int, key: bytes, finite: bool) -> None:
        """Keep ``TtlKeys`` and ``TtlIndex`` in step with ``TtlData``: ``key`` has a finite TTL or not."""
        keys = _decode_keys(txn.get(_TTL_KEYS, _para(para_id)))
        if (key in keys) == finite:
            return
        had_any = bool(keys)
        if finite:
            keys.add(key)
        else:
            keys.discard(key)
        Broadcaster._store_ttl_keys(txn, para_id, had_any, keys)

    @staticmethod
    def _store_ttl_keys(txn: StateTransaction, para_id: int, had_any: bool, keys: set[bytes]) -> None:
        """Write the publisher's new ``TtlKeys``; add it to or drop it from ``TtlIndex`` when the set became
        non-empty or empty (``had_any``: whether it had keys before)."""
        if keys:
            txn.put(_TTL_KEYS, _para(para_id), _encode_keys(keys))
        else:
            txn.delete(_TTL_KEYS, _para(para_id))
        if had_any == bool(keys):
            return
        para_key = twox64_concat(_para(para_id))
        bucket = bytes((para_key[0],))
        members = _split_index(txn.get(_TTL_INDEX, bucket))
        if keys:
            insort(members, para_key)
        else:
            members.remove(para_key)
        if members:
            txn.put(_TTL_INDEX, bucket, b"".join(members))
        else:
            txn.delete(_TTL_INDEX, bucket)

    @staticmethod
    def _add_count(txn: StateTransaction, delta: int) -> None:
        txn.set_value(_COUNT, encode_u32(Broadcaster.publisher_count(txn) + delta))
