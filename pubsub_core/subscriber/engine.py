"""The one traversal behind both Prune (collator) and Verify (runtime): RelayProofExtender::process_proof.

Both modes run this same code over the same subscriber state; they differ only in where relay nodes come
from. Prune reads an initial proof of every subscribed key, built from the collator's relay state, and
records every node it reads (that record is the block's proof); Verify reads the block's proof and tracks
accesses. Because the budget check happens before every read with the
same rule, the collator includes exactly what the runtime will read, and in Verify any missing node is a
node the budget could still pay for, that is, a cheating collator.

Per block:
1. read the cursor and the subscriptions, skip disabled publishers, detect subscription changes;
2. order the work (system paras first, then a block-hash-seeded shuffle) and rotate to the cursor;
3. per publisher, read its child root from the relay main trie; skip the publisher if it equals
   PreviousPublishedDataRoots (change detection);
4. per key not yet processed at that root, walk the new child trie along the key, comparing each next
   node with the path recorded when the key was last processed: the first match proves the rest of the path
   (and the value) unchanged, so the walk stops there (dual-trie traversal). Nodes come from this block's
   reads, then CachedTrieNodes, then the relay proof. A value is read only when its entry hash differs from
   the one last delivered;
5. a publisher's root advances once all its keys were processed at that root; on budget exhaustion the
   cursor records where to resume.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from pubsub_core.codec.hexjson import hex_0x, unhex_0x
from pubsub_core.codec.scale import ScaleDecodeError, encode_u32
from pubsub_core.codec.types import PublishedEntry, SubscribedKey, TtlState
from pubsub_core.hashing import blake2_256
from pubsub_core.subscriber import storage as st
from pubsub_core.subscriber.budget import Budget
from pubsub_core.subscriber.config import SubscriberConfig
from pubsub_core.subscriber.errors import CheatingCollatorError, CheatingReason, SubscriptionError
from pubsub_core.subscriber.meter import Weight, WeightMeter
from pubsub_core.subscriber.ordering import WorkItem, work_segments
from pubsub_core.subscriber.storage import EntryDigest, KeyState, PathStep
from pubsub_core.subscriber.types import (
    EventKind,
    PalletEvent,
    PovRecord,
    ProcessingResult,
    Update,
    UpdateKind,
)
from pubsub_core.trie import EMPTY_ROOT
from pubsub_core.trie.child import child_storage_key, prefixed_child_storage_key
from pubsub_core.trie.errors import MalformedNodeError
from pubsub_core.trie.layout import HASH_LEN
from pubsub_core.trie.walker import PathStep as TriePathStep
from pubsub_core.trie.walker import walk_path
from state import StateTransaction

__all__ = [
    "BlockContext",
    "DisableReason",
    "EMPTY_ROOT",
    "EngineResult",
    "RelaySource",
    "Subscriptions",
    "child_storage_key",
    "prefixed_child_storage_key",
    "run_block",
]

"""Root of an empty (or absent) child trie: every key reads as absent."""

_NO_ENTRY = bytes(32)


class DisableReason(Enum):
    """``DisableReason``: why a publisher is in DisabledPublishers (SCALE index as value)."""

    TRIE_DEPTH_EXCEEDED = 0


@dataclass(frozen=True, slots=True)
class Subscriptions:
    """``SubscriptionHandler::subscriptions()``: (publisher, keys) pairs and the weight of computing them."""

    entries: tuple[tuple[int, tuple[SubscribedKey, ...]], ...]
    weight: Weight = field(default_factory=Weight)

    @classmethod
    def of(cls, mapping: Mapping[int, Sequence[SubscribedKey]], weight: Weight | None = None) -> Subscriptions:
        return cls(tuple((para, tuple(keys)) for para, keys in mapping.items()), weight or Weight())

    def to_json(self) -> dict[str, Any]:
        """``{"entries": [{"publisher": 1000, "keys": ["0x…", ...]}, ...], "weight": {...}}``."""
        return {
            "entries": [{"publisher": para, "keys": [hex_0x(key.hash) for key in keys]} for para, keys in self.entries],
            "weight": self.weight.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Subscriptions:
        entries = tuple(
            (int(item["publisher"]), tuple(SubscribedKey(unhex_0x(key)) for key in item["keys"]))
            for item in data["entries"]
        )
        return cls(entries, Weight.from_json(data.get("weight", {"ref_time": 0, "proof_size": 0})))

    def check_para_ids(self) -> None:
        """SubscriptionError for the first para id that is not a u32 (``merged`` raises the same)."""
        for para, _ in self.entries:
            if not 0 <= para <= 0xFFFFFFFF:
                raise SubscriptionError(para, "a para id is a u32")

    def merged(self) -> dict[int, list[bytes]]:
        """Per publisher, its distinct keys ascending (several declarations of one publisher are merged)."""
        self.check_para_ids()
        merged: dict[int, set[bytes]] = {}
        for para, keys in self.entries:
            merged.setdefault(para, set()).update(key.hash for key in keys)
        return {para: sorted(keys) for para, keys in sorted(merged.items())}


@dataclass(frozen=True, slots=True)
class BlockContext:
    """What both sides know about the block being built: who subscribes, the relay parent, and the budget."""

    subscriber: int
    relay_block_number: int
    relay_block_hash: bytes
    relay_root: bytes
    budget: Budget


class RelaySource(Protocol):
    """Where relay nodes come from: the collator's relay view (Prune) or the proof (Verify)."""

    def get(self, node_hash: bytes) -> bytes | None:
        """The node (or value node) with this hash, None when absent."""
        ...


@dataclass(frozen=True, slots=True)
class EngineResult:
    """The traversal's outputs: result, deliveries and events in order, metering, and every relay node read."""

    result: ProcessingResult
    updates: tuple[Update, ...]
    events: tuple[PalletEvent, ...]
    pov: PovRecord
    relay_nodes: dict[bytes, bytes]


class _Exhausted(Exception):
    """The meter cannot pay one more read: stop with Incomplete at the current work item."""


class _DepthExceeded(Exception):
    """A key's path needs more than MaxTrieDepth nodes."""


class _Missing(Exception):
    """The relay source lacks a node the traversal needs (always below the limit: the budget was checked)."""

    def __init__(self, node_hash: bytes) -> None:
        super().__init__(node_hash.hex())
        self.node_hash = node_hash


_Delivery = tuple[bytes, UpdateKind, bytes, TtlState, bytes, bytes]
"""An Update before its sequence number is known: key, kind, value, TTL state, child root, entry hash."""


@dataclass
class _Pending:
    """A delivery or event waiting for the end of the block (dropped if its publisher gets disabled)."""

    publisher: int
    update: _Delivery | None
    event: tuple[EventKind, int, bytes | None, int | None, str | None] | None


@dataclass
class _Stats:
    proof_bytes: int = 0
    proof_nodes: int = 0
    value_nodes: int = 0
    cache_hits: int = 0
    cache_read_bytes: int = 0
    state_read_bytes: int = 0
    keys_processed: int = 0
    keys_unchanged: int = 0
    publishers_unchanged: int = 0


class _Run:
    """One block's processing; holds the per-block read sets so each node or entry is paid for once."""

    def __init__(
        self,
        txn: StateTransaction,
        source: RelaySource,
        ctx: BlockContext,
        config: SubscriberConfig,
        meter: WeightMeter,
    ) -> None:
        self.txn = txn
        self.source = source
        self.ctx = ctx
        self.config = config
        self.meter = meter
        self.relay_nodes: dict[bytes, bytes] = {}
        self.state_seen: dict[str, set[bytes]] = {}  # per namespace: the keys read (and paid for) this block
        self.cache_seen: dict[int, set[bytes]] = {}  # per publisher: the cached nodes looked up this block
        self.pending: list[_Pending] = []
        self.stats = _Stats()
        self.current: WorkItem | None = None
        self._namespaces: dict[int, tuple[str, str, str]] = {}
        # The two weights every read uses, as ints for WeightMeter.fits/add: SubscriberConfig.min_step is a
        # property that builds Weights, and this traversal pays about 2 million reads in the simulator benchmark.
        min_step = config.min_step
        self._step_ref_time, self._step_proof_size = min_step.ref_time, min_step.proof_size
        self._read_ref_time, self._read_proof_size = config.db_read.ref_time, config.db_read.proof_size

    def namespaces(self, para: int) -> tuple[str, str, str]:
        """``(keys_ns, refs_ns, cache_ns)`` of a publisher, formatted once per block rather than once per read."""
        names = self._namespaces.get(para)
        if names is None:
            names = self._namespaces[para] = (st.keys_ns(para), st.refs_ns(para), st.cache_ns(para))
        return names

    # -- metered reads -----------------------------------------------------------------------
    def _pay(self, size: int) -> None:
        """Check that one more read of the largest node still fits, then pay for this read."""
        meter = self.meter
        if not meter.fits(self._step_ref_time, self._step_proof_size):
            raise _Exhausted
        meter.add(self._read_ref_time, self._read_proof_size + size)

    def read_state(self, namespace: str, key: bytes) -> bytes | None:
        """A subscriber storage read; its bytes join the PoV (parachain storage proof), once per block."""
        value = self.txn.get(namespace, key)
        seen = self.state_seen.get(namespace)
        if seen is None:
            seen = self.state_seen[namespace] = set()
        if key not in seen:
            # _pay inlined, one txn.get per call instead of two, on every first read of a run
            # (docs/benchmarks.md, "Measured code choices"). The keys seen are kept per namespace, so no
            # (namespace, key) tuple is built and hashed per read.
            size = 0 if value is None else len(value)
            meter = self.meter
            if not meter.fits(self._step_ref_time, self._step_proof_size):
                raise _Exhausted
            meter.add(self._read_ref_time, self._read_proof_size + size)
            seen.add(key)
            self.stats.state_read_bytes += size
        return value

    def relay_node(self, node_hash: bytes) -> bytes:
        """A relay node: free if already read this block, else paid and taken from the source."""
        found = self.relay_nodes.get(node_hash)
        if found is not None:
            return found
        if node_hash == EMPTY_ROOT:
            return b"\x00"
        meter = self.meter
        if not meter.fits(self._step_ref_time, self._step_proof_size):
            raise _Exhausted
        data = self.source.get(node_hash)
        if data is None:
            raise _Missing(node_hash)
        meter.add(self._read_ref_time, self._read_proof_size + len(data))
        self.relay_nodes[node_hash] = data
        self.stats.proof_bytes += len(data)
        self.stats.proof_nodes += 1
        return data

    def child_node(self, para: int, node_hash: bytes) -> bytes:
        """A child-trie structure node: this block's reads first, then CachedTrieNodes, then the relay source."""
        found = self.relay_nodes.get(node_hash)
        if found is not None:
            return found
        _, refs_ns, cache_ns = self.namespaces(para)
        seen = self.cache_seen.get(para)
        if seen is None:
            seen = self.cache_seen[para] = set()
        if node_hash in seen:
            cached = self.txn.get(cache_ns, node_hash)
            if cached is not None:
                return cached
        elif node_hash != EMPTY_ROOT:
            in_use = self.txn.get(refs_ns, node_hash) is not None
            cached = self.txn.get(cache_ns, node_hash) if in_use else None
            self._pay(0 if cached is None else len(cached))
            seen.add(node_hash)
            if cached is not None:
                self.stats.cache_hits += 1
                self.stats.cache_read_bytes += len(cached)
                return cached
        return self.relay_node(node_hash)

    # -- the block ---------------------------------------------------------------------------
    def run(self, subscriptions: Subscriptions) -> ProcessingResult:
        try:
            cursor_raw = self.read_state(st.CURSOR, st.VALUE_KEY)
        except _Exhausted:
            return ProcessingResult.INCOMPLETE
        cursor = None if cursor_raw is None else st.decode_cursor(cursor_raw)
        if subscriptions.weight.ref_time or subscriptions.weight.proof_size:
            if not self.meter.can_consume(subscriptions.weight.saturating_add(self.config.min_step)):
                return self._stop(cursor)
            self.meter.consume(subscriptions.weight)
        active: dict[int, list[bytes]] = {}
        merged = subscriptions.merged()
        para_keys = [st.para_key(para) for para in merged]
        for namespace in (st.DISABLED, st.ROOTS, st.PROGRESS):
            self.txn.prefetch(namespace, para_keys)  # one backend call per namespace (the Spark job's cost)
        known_publishers = sorted(self.txn.items(st.KNOWN))
        try:
            for raw_para in known_publishers:
                if int.from_bytes(raw_para, "big") not in merged:
                    # Unsubscribed entirely: forget the key set, so a later re-subscription delivers afresh.
                    self.read_state(st.KNOWN, raw_para)
                    self.txn.delete(st.KNOWN, raw_para)
            for para, keys in merged.items():
                if self.read_state(st.DISABLED, st.para_key(para)) is None:
                    active[para] = keys
            for para, keys in active.items():
                self._detect_change(para, keys)
        except _Exhausted:
            return self._stop(cursor)
        # Publisher by publisher: an unchanged child root skips the publisher without visiting its keys.
        segments = work_segments(active, self.ctx.relay_block_hash, self.config, cursor)
        roots: dict[int, bytes | None] = {}
        progress: dict[int, bytearray] = {}
        disabled: set[int] = set()
        for para, start, stop in segments:
            if para in disabled:
                continue
            keys = active[para]
            key = keys[start]
            self.current = (para, key)
            try:
                if para not in roots:
                    new_root = self._changed_root(para)
                    if new_root is not None:
                        bits = progress[para] = self._read_progress(para, new_root, len(keys))
                        pending = [k for i, k in enumerate(keys) if not bits[i >> 3] >> (i & 7) & 1]
                        self.txn.prefetch(st.keys_ns(para), pending)
                        self.txn.load(st.refs_ns(para))  # one scan: refcounts are small, and they say what is cached
                    roots[para] = new_root
                new_root = roots[para]
                if new_root is None:
                    continue
                bits = progress[para]
                for index in range(start, stop):
                    if bits[index >> 3] >> (index & 7) & 1:
                        continue
                    key = keys[index]
                    self.current = (para, key)
                    self._process_key(para, key, new_root)
                    bits[index >> 3] |= 1 << (index & 7)
            except _Exhausted:
                self._save_progress(active, roots, progress, disabled)
                return self._stop((para, key))
            except _DepthExceeded:
                disabled.add(para)
                self._disable(para)
        self._save_progress(active, roots, progress, disabled)
        self.current = None
        self.txn.set_value(st.CURSOR, None)
        return ProcessingResult.COMPLETE

    def _stop(self, cursor: WorkItem | None) -> ProcessingResult:
        self.current = cursor
        self.txn.set_value(st.CURSOR, None if cursor is None else st.encode_cursor(*cursor))
        return ProcessingResult.INCOMPLETE

    def _read_progress(self, para: int, new_root: bytes, count: int) -> bytearray:
        """Which keys (bit per index in ascending key order) were already processed at ``new_root``."""
        raw = self.read_state(st.PROGRESS, st.para_key(para))
        size = (count + 7) // 8
        if raw is None or raw[:32] != new_root or len(raw) != 32 + size:
            return bytearray(size)
        return bytearray(raw[32:])

    def _save_progress(
        self,
        active: Mapping[int, list[bytes]],
        roots: Mapping[int, bytes | None],
        progress: Mapping[int, bytearray],
        disabled: set[int],
    ) -> None:
        """PreviousPublishedDataRoots advances once every key of the publisher was processed at the new root
        (over one or several blocks); until then the progress bitmap records which keys are done."""
        for para, new_root in roots.items():
            if new_root is None or para in disabled:
                continue
            bits = progress[para]
            if all(bits[i >> 3] >> (i & 7) & 1 for i in range(len(active[para]))):
                self.txn.put(st.ROOTS, st.para_key(para), new_root)
                self.txn.delete(st.PROGRESS, st.para_key(para))
            else:
                self.txn.put(st.PROGRESS, st.para_key(para), new_root + bytes(bits))

    def _detect_change(self, para: int, keys: list[bytes]) -> None:
        """Compare the declared key set with the one last processed (by digest, 32 bytes per block).

        Added keys only: forget the stored root so the publisher is processed even if unchanged.
        A removed key: clear the publisher's cache and paths (the pub-sub spec, "Subscription change clears cache"),
        keeping what was delivered for the keys still subscribed. A publisher subscribed again after it was dropped
        entirely (its stale state still there): clear everything, so its current values are delivered afresh.
        """
        digest = blake2_256(st.encode_keys(keys))
        known = self.read_state(st.KNOWN, st.para_key(para))
        if known == digest:
            return
        self.txn.put(st.KNOWN, st.para_key(para), digest)
        stored = self.txn.items(st.keys_ns(para))
        if known is None and not stored:
            return
        wanted = set(keys)
        if known is None or any(key not in wanted for key in stored):
            keep = frozenset() if known is None else wanted
            clear_publisher_state(self.txn, para, keep_entries=keep, forget_known=False)
            self.pending.append(_Pending(para, None, (EventKind.PUBLISHER_CACHE_CLEARED, para, None, None, None)))
        else:
            self.txn.delete(st.ROOTS, st.para_key(para))
        self.txn.delete(st.PROGRESS, st.para_key(para))

    def _changed_root(self, para: int) -> bytes | None:
        """The publisher's current child root, or None when it equals PreviousPublishedDataRoots (skip)."""
        last: TriePathStep | None = None
        key = prefixed_child_storage_key(para)
        for last in walk_path(_RelayView(self), self.ctx.relay_root, key):
            pass
        new_root = EMPTY_ROOT
        if last is not None and last.holds_key and last.node is not None and last.node.value is not None:
            value = last.node.value
            if last.node.value_hashed:
                value = self.relay_node(value)
            if len(value) != HASH_LEN:
                raise CheatingCollatorError(
                    CheatingReason.MALFORMED_NODE,
                    f"the child root entry holds {len(value)} bytes, not 32",
                    relay_root=self.ctx.relay_root,
                    publisher=para,
                )
            new_root = value
        previous = self.read_state(st.ROOTS, st.para_key(para))
        if previous == new_root:
            self.stats.publishers_unchanged += 1
            return None
        return new_root

    def _process_key(self, para: int, key: bytes, new_root: bytes) -> None:
        keys_ns, refs_ns, cache_ns = self.namespaces(para)
        raw = self.read_state(keys_ns, key)
        state = None if raw is None else KeyState.decode(raw)
        if state is not None and state.root(EMPTY_ROOT) == new_root:
            return
        self.stats.keys_processed += 1
        old_path = () if state is None or not state.recorded else state.path
        last_entry = None if state is None else state.entry
        new_path: list[PathStep] = []
        fetched: dict[bytes, bytes] = {}
        holder = None
        unchanged = False
        if new_root != EMPTY_ROOT:
            compare = not self.config.deliver_all_on_root_change
            max_depth = self.config.max_trie_depth
            old_length = len(old_path)
            for step in walk_path(_ChildView(self, para), new_root, key, root=new_root):
                node_hash = step.node_hash
                if node_hash is None:
                    new_path.append(PathStep(blake2_256(step.encoded), step.depth, True))
                else:
                    new_path.append(PathStep(node_hash, step.depth, False))
                    fetched[node_hash] = step.encoded
                ref = step.next_ref
                node = step.node
                if step.ends_path or ref is None or node is None:
                    holder = step if step.holds_key else None
                    break
                index = step.index + 1
                if compare and index < old_length:
                    old = old_path[index]
                    if old.node_hash == (ref if len(ref) == HASH_LEN else blake2_256(ref)) and (
                        old.offset == step.depth + len(node.partial) + 1
                    ):
                        new_path.extend(old_path[index:])
                        unchanged = True
                        break
                if index >= max_depth:
                    raise _DepthExceeded
        old_ids = {step.node_hash for step in old_path if not step.inline}
        new_ids = {step.node_hash for step in new_path if not step.inline}
        left, joined = old_ids - new_ids, new_ids - old_ids
        refs = self._read_refs(refs_ns, left | joined)
        entry = last_entry
        if unchanged:
            self.stats.keys_unchanged += 1
        else:
            entry = self._deliver(para, key, new_root, holder, last_entry)
        self._update_cache(refs_ns, cache_ns, left, joined, fetched, refs)
        self.txn.put(keys_ns, key, KeyState(tuple(new_path), entry).encode())

    def _deliver(
        self, para: int, key: bytes, new_root: bytes, holder: TriePathStep | None, last: EntryDigest | None
    ) -> EntryDigest | None:
        """Compare the key's entry with the last delivered one; queue a SET or removal update if it changed (or,
        with ``deliver_all_on_root_change``, a SET of every key with data)."""
        now = self.ctx.relay_block_number
        node = None if holder is None else holder.node
        if node is None or node.value is None:
            if last is None:
                return None
            expired = last.ttl != 0 and now >= last.when_inserted + last.ttl
            kind = UpdateKind.EXPIRED if expired else UpdateKind.DELETED
            self._queue(para, key, new_root, kind, b"", TtlState.timed_out(), _NO_ENTRY)
            return None
        entry_hash = node.value if node.value_hashed else blake2_256(node.value)
        if last is not None and last.entry_hash == entry_hash and not self.config.deliver_all_on_root_change:
            return last
        raw = node.value
        if node.value_hashed:
            raw = self.relay_node(node.value)
            self.stats.value_nodes += 1
        try:
            entry = PublishedEntry.decode(raw)
        except (ScaleDecodeError, ValueError):
            return None  # not a PublishedEntry (the broadcaster never writes one): nothing to deliver
        ttl_state = TtlState.compute(entry.ttl, entry.when_inserted, now)
        self._queue(para, key, new_root, UpdateKind.SET, entry.value, ttl_state, entry_hash)
        return EntryDigest(entry_hash, entry.ttl, entry.when_inserted)

    def _queue(
        self, para: int, key: bytes, root: bytes, kind: UpdateKind, value: bytes, ttl: TtlState, entry_hash: bytes
    ) -> None:
        update = (key, kind, value, ttl, root, entry_hash)
        self.pending.append(_Pending(para, update, (EventKind.DATA_PROCESSED, para, key, len(value), None)))

    def _read_refs(self, refs_ns: str, touched: set[bytes]) -> dict[bytes, int]:
        """Read (and pay for) the refcounts of the nodes a path change touches (on the old path or the new one,
        not both), before anything is written."""
        refs: dict[bytes, int] = {}
        for node_hash in sorted(touched):
            raw = self.read_state(refs_ns, node_hash)
            refs[node_hash] = 0 if raw is None else _decode_count(raw)
        return refs

    def _update_cache(
        self,
        refs_ns: str,
        cache_ns: str,
        left: set[bytes],
        joined: set[bytes],
        bodies: Mapping[bytes, bytes],
        refs: Mapping[bytes, int],
    ) -> None:
        """Reference-count the key's path nodes (``left``: only on the old path; ``joined``: only on the new
        one): a node is evicted only when no subscribed path uses it."""
        txn = self.txn
        for node_hash in sorted(left):
            count = refs[node_hash]
            if count <= 1:
                txn.delete(refs_ns, node_hash)
                txn.delete(cache_ns, node_hash)
            else:
                txn.put(refs_ns, node_hash, encode_u32(count - 1))
        max_size = self.config.max_cached_node_size
        for node_hash in sorted(joined):
            count = refs[node_hash]
            txn.put(refs_ns, node_hash, encode_u32(count + 1))
            if count == 0:
                body = bodies.get(node_hash)
                if body is not None and len(body) <= max_size:
                    txn.put(cache_ns, node_hash, body)

    def _disable(self, para: int) -> None:
        """MaxTrieDepth exceeded: drop the publisher's deliveries of this block, forget its state, disable it."""
        self.pending = [item for item in self.pending if item.publisher != para or item.update is None]
        clear_publisher_state(self.txn, para, keep_entries=frozenset(), forget_known=True)
        self.txn.put(st.DISABLED, st.para_key(para), bytes((DisableReason.TRIE_DEPTH_EXCEEDED.value,)))
        self.pending.append(
            _Pending(para, None, (EventKind.PUBLISHER_DISABLED, para, None, None, "TrieDepthExceeded"))
        )

    def finish(self, result: ProcessingResult) -> tuple[tuple[Update, ...], tuple[PalletEvent, ...], PovRecord]:
        """Number the deliveries and events in order and build the PoV record."""
        updates: list[Update] = []
        events: list[PalletEvent] = []
        for item in self.pending:
            if item.update is not None:
                # Built here with its sequence number, not copied with dataclasses.replace (12,000 a run; see read_state).
                key, update_kind, value, ttl_state, root, entry_hash = item.update
                updates.append(Update(self.ctx.subscriber, self.ctx.relay_block_number, self.ctx.relay_block_hash,
                                      len(updates), item.publisher, key, update_kind, value, ttl_state, root,
                                      entry_hash))
            if item.event is not None:
                event_kind, publisher, event_key, size, reason = item.event
                events.append(
                    PalletEvent(self.ctx.subscriber, self.ctx.relay_block_number, len(events), event_kind, publisher,
                                event_key, size, reason)
                )
        consumed = self.meter.consumed
        cursor = self.current if result is ProcessingResult.INCOMPLETE else None
        pov = PovRecord(
            subscriber=self.ctx.subscriber,
            relay_block_number=self.ctx.relay_block_number,
            relay_block_hash=self.ctx.relay_block_hash,
            budget=self.ctx.budget,
            result=result,
            proof_bytes=self.stats.proof_bytes,
            proof_nodes=self.stats.proof_nodes,
            value_nodes=self.stats.value_nodes,
            cache_hits=self.stats.cache_hits,
            cache_read_bytes=self.stats.cache_read_bytes,
            state_read_bytes=self.stats.state_read_bytes,
            consumed_ref_time=consumed.ref_time,
            consumed_proof_size=consumed.proof_size,
            keys_processed=self.stats.keys_processed,
            keys_unchanged=self.stats.keys_unchanged,
            publishers_unchanged=self.stats.publishers_unchanged,
            deliveries=len(updates),
            cursor_publisher=None if cursor is None else cursor[0],
            cursor_key=None if cursor is None else cursor[1],
        )
        return tuple(updates), tuple(events), pov


def _decode_count(raw: bytes) -> int:
    """A stored refcount (``encode_u32``): by hand for its four bytes, as compiled code indexes bytes natively
    where ``int.from_bytes`` is a Python method call (about 60,000 a simulator run); other lengths as before."""
    if len(raw) == 4:
        return raw[0] | raw[1] << 8 | raw[2] << 16 | raw[3] << 24
    return int.from_bytes(raw, "little")


class _RelayView:
    """The walker's node source for the relay main trie: metered reads through the run."""

    __slots__ = ("run",)

    def __init__(self, run: _Run) -> None:
        self.run = run

    def get(self, node_hash: bytes) -> bytes | None:
        return self.run.relay_node(node_hash)


class _ChildView:
    """The walker's node source for one publisher's child trie: this block's reads, the cache, the relay."""

    __slots__ = ("para", "run")

    def __init__(self, run: _Run, para: int) -> None:
        self.run = run
        self.para = para

    def get(self, node_hash: bytes) -> bytes | None:
        return self.run.child_node(self.para, node_hash)


def clear_publisher_state(
    txn: StateTransaction, para: int, *, keep_entries: Collection[bytes] | None, forget_known: bool
) -> int:
    """Remove a publisher's cached nodes, refcounts, recorded paths, progress and stored root.

    The last delivered entry of each key in ``keep_entries`` (None: every key) is kept with its path cleared,
    so the next block re-reads full paths but delivers only what changed; other key states are removed.
    Returns how many entries changed (0: there was nothing to clear).
    """
    changed = 0
    for namespace in (st.cache_ns(para), st.refs_ns(para)):
        for key in sorted(txn.items(namespace)):
            txn.delete(namespace, key)
            changed += 1
    for key, raw in sorted(txn.items(st.keys_ns(para)).items()):
        state = KeyState.decode(raw)
        if (keep_entries is None or key in keep_entries) and state.entry is not None:
            if state.recorded:
                txn.put(st.keys_ns(para), key, state.cleared().encode())
                changed += 1
        else:
            txn.delete(st.keys_ns(para), key)
            changed += 1
    for namespace in (st.ROOTS, st.PROGRESS):
        if txn.get(namespace, st.para_key(para)) is not None:
            txn.delete(namespace, st.para_key(para))
            changed += 1
    if forget_known and txn.get(st.KNOWN, st.para_key(para)) is not None:
        txn.delete(st.KNOWN, st.para_key(para))
    return changed


def run_block(
    txn: StateTransaction,
    source: RelaySource,
    ctx: BlockContext,
    subscriptions: Subscriptions,
    config: SubscriberConfig,
) -> EngineResult:
    """Run one block's pub-sub proof processing over ``txn`` reading relay nodes from ``source``.

    Raises CheatingCollatorError (MissingNodeBelowLimit) when ``source`` lacks a node, MalformedNode when a
    node does not decode. The caller decides what to keep: Prune discards the writes, Verify commits them.
    """
    meter = WeightMeter(config.budget_weight(ctx.budget.pubsub))
    run = _Run(txn, source, ctx, config, meter)
    try:
        result = run.run(subscriptions)
    except _Missing as exc:
        para, key = run.current if run.current is not None else (None, None)
        raise CheatingCollatorError(
            CheatingReason.MISSING_NODE_BELOW_LIMIT,
            f"node 0x{exc.node_hash.hex()} is missing although {meter.remaining().proof_size} bytes of budget remain",
            relay_root=ctx.relay_root,
            node_hashes=(exc.node_hash,),
            publisher=para,
            key=key,
        ) from None
    except MalformedNodeError as exc:
        para, key = run.current if run.current is not None else (None, None)
        raise CheatingCollatorError(
            CheatingReason.MALFORMED_NODE,
            str(exc),
            relay_root=ctx.relay_root,
            publisher=para,
            key=key,
        ) from exc
    updates, events, pov = run.finish(result)
    return EngineResult(result, updates, events, pov, run.relay_nodes)

