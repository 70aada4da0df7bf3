"""One contract suite for every state backend: memory, and the Spark page backend over a dict-backed MapState
(paged, with the page directory, with deferred writes, small namespaces bundled). tests/integration/test_spark_state_backend.py runs the
Spark backend inside a real transformWithState."""

from __future__ import annotations

from collections.abc import Callable, Collection

import pytest

from state import MemoryBackend, StateBackend, StateTransaction, TransactionClosedError
from state.interface import Changes
from state.spark import SparkStateBackend, decode_page


class DictMapState:
    """MapState's three calls over a dict, counting them (what each costs on Spark is one JVM round trip)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[object, ...], tuple[object, ...]] = {}
        self.calls = 0

    def getValue(self, key: tuple[object, ...]) -> tuple[object, ...] | None:
        self.calls += 1
        return self.entries.get(key)

    def updateValue(self, key: tuple[object, ...], value: tuple[object, ...]) -> None:
        self.calls += 1
        self.entries[key] = value

    def removeKey(self, key: tuple[object, ...]) -> None:
        self.calls += 1
        self.entries.pop(key, None)


BACKENDS: dict[str, Callable[[], StateBackend]] = {
    "memory": MemoryBackend,
    "spark-pages": lambda: SparkStateBackend(DictMapState(), default_pages=4, page_directory=True),
    "spark-deferred": lambda: SparkStateBackend(DictMapState(), default_pages=16, defer_writes=True,
                                                page_directory=True),
    "spark-adaptive": lambda: SparkStateBackend(DictMapState(), default_pages=16, page_directory=True,
                                                single_page_bytes=64),
    "spark-bundled": lambda: SparkStateBackend(DictMapState(), default_pages=16, page_directory=True,
                                               single_page_bytes=64, bundle_bytes=200),
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> StateBackend:
    return BACKENDS[request.param]()


def test_committed_writes_are_read_back_by_a_new_transaction(backend: StateBackend) -> None:
    txn = StateTransaction(backend)
    txn.put("ns", b"a", b"1")
    txn.set_value("single", b"v")
    assert txn.commit() == 2
    fresh = StateTransaction(backend)
    assert fresh.get("ns", b"a") == b"1"
    assert fresh.get_value("single") == b"v"
    assert fresh.get("ns", b"missing") is None


def test_a_batch_of_reads_is_one_backend_call(backend: StateBackend) -> None:
    txn = StateTransaction(backend)
    for i in range(50):
        txn.put("ns", bytes([i]), b"x")
    txn.commit()
    before = backend.stats.read_calls
    reader = StateTransaction(backend)
    reader.prefetch("ns", [bytes([i]) for i in range(100)])
    values = [reader.get("ns", bytes([i])) for i in range(100)]
    assert backend.stats.read_calls - before == 1
    assert values.count(b"x") == 50 and values.count(None) == 50


class RecordingBackend:
    """A backend wrapper keeping the keys of each read_many call (as lists, in the order they were asked)."""

    def __init__(self, inner: StateBackend) -> None:
        self.inner = inner
        self.stats = inner.stats
        self.reads: list[list[bytes]] = []

    def read_many(self, namespace: str, keys: Collection[bytes]) -> dict[bytes, bytes]:
        self.reads.append(list(keys))
        return self.inner.read_many(namespace, keys)

    def scan(self, namespace: str) -> dict[bytes, bytes]:
        return self.inner.scan(namespace)

    def write_many(self, changes: Changes) -> None:
        self.inner.write_many(changes)


def test_prefetch_asks_once_for_each_key_not_yet_loaded_in_first_seen_order(backend: StateBackend) -> None:
    txn = StateTransaction(backend)
    txn.put("ns", b"a", b"1")
    txn.put("ns", b"c", b"3")
    txn.commit()
    recording = RecordingBackend(backend)
    reader = StateTransaction(recording)
    assert reader.get("ns", b"c") == b"3"
    reader.prefetch("ns", (key for key in [b"b", b"a", b"c", b"b", b"d", b"a"]))  # one pass over a generator
    assert recording.reads == [[b"c"], [b"b", b"a", b"d"]]
    reader.prefetch("ns", [b"a", b"b", b"d"])  # found and absent keys are both remembered: no call
    assert [reader.get("ns", key) for key in [b"a", b"b", b"c", b"d"]] == [b"1", None, b"3", None]
    assert len(recording.reads) == 2


def test_read_many_returns_only_stored_keys_and_counts_their_bytes(backend: StateBackend) -> None:
    backend.write_many({"ns": {b"a": b"12", b"b": b"345"}})
    before = backend.stats.bytes_read
    assert backend.read_many("ns", [b"a", b"x", b"b"]) == {b"a": b"12", b"b": b"345"}
    assert backend.read_many("ns", [b"x"]) == {}
    assert backend.read_many("empty", [b"a"]) == {}
    if isinstance(backend, MemoryBackend):
        assert backend.stats.bytes_read - before == 5


def test_memory_backend_counts_the_bytes_of_the_values_it_stores() -> None:
    backend = MemoryBackend()
    backend.write_many({"a": {b"k": b"12", b"gone": None}, "b": {b"k": b"345", b"j": b""}})
    backend.write_many({"a": {b"k": None}})  # deletes write no bytes
    assert backend.stats.bytes_written == 5
    assert backend.stats.write_calls == 2
    assert backend.namespaces() == ["b"]


def test_a_failed_atomic_section_leaves_no_write(backend: StateBackend) -> None:
    txn = StateTransaction(backend)
    txn.put("ns", b"kept", b"1")
    with pytest.raises(ValueError):
        with txn.atomic():
            txn.put("ns", b"dropped", b"2")
            txn.delete("ns", b"kept")
            raise ValueError("the call failed")
    assert txn.get("ns", b"kept") == b"1"
    assert txn.get("ns", b"dropped") is None
    txn.commit()
    assert StateTransaction(backend).items("ns") == {b"kept": b"1"}


def test_nested_atomic_sections_merge_on_success(backend: StateBackend) -> None:
    txn = StateTransaction(backend)
    with txn.atomic():
        txn.put("ns", b"outer", b"1")
        with txn.atomic():
            txn.put("ns", b"inner", b"2")
    txn.commit()
    assert StateTransaction(backend).items("ns") == {b"outer": b"1", b"inner": b"2"}


def test_items_merge_stored_entries_with_uncommitted_changes(backend: StateBackend) -> None:
    seed = StateTransaction(backend)
    seed.put("ns", b"a", b"1")
    seed.put("ns", b"b", b"2")
    seed.commit()
    txn = StateTransaction(backend)
    txn.delete("ns", b"a")
    txn.put("ns", b"c", b"3")
    assert txn.items("ns") == {b"b": b"2", b"c": b"3"}


def test_deletes_reach_the_backend(backend: StateBackend) -> None:
    seed = StateTransaction(backend)
    seed.put("ns", b"a", b"1")
    seed.commit()
    txn = StateTransaction(backend)
    txn.delete("ns", b"a")
    txn.commit()
    assert StateTransaction(backend).get("ns", b"a") is None


def test_unchanged_rewrites_are_not_written(backend: StateBackend) -> None:
    seed = StateTransaction(backend)
    seed.put("ns", b"a", b"1")
    seed.commit()
    writes = backend.stats.write_calls
    txn = StateTransaction(backend)
    assert txn.get("ns", b"a") == b"1"
    txn.put("ns", b"a", b"1")
    assert txn.commit() == 0
    assert backend.stats.write_calls == writes


def test_a_closed_transaction_refuses_use(backend: StateBackend) -> None:
    txn = StateTransaction(backend)
    txn.commit()
    with pytest.raises(TransactionClosedError):
        txn.put("ns", b"a", b"1")


def test_the_page_directory_spares_the_calls_for_pages_that_do_not_exist() -> None:
    mapstate = DictMapState()
    writer = SparkStateBackend(mapstate, default_pages=16, defer_writes=True, page_directory=True)
    txn = StateTransaction(writer)
    txn.put("small", b"k", b"v")
    txn.commit()
    writer.flush()
    assert mapstate.calls == 3  # the directory (absent), the page, the directory again
    for directory, expected_calls in ((True, 2), (False, 10 * 16 + 1)):
        mapstate.calls = 0
        reader = StateTransaction(SparkStateBackend(mapstate, default_pages=16, page_directory=directory))
        for n in range(10):
            reader.items(f"absent{n}")
        assert reader.get("small", b"k") == b"v"
        assert mapstate.calls == expected_calls


def test_a_page_emptied_leaves_the_directory_and_the_store() -> None:
    mapstate = DictMapState()
    backend = SparkStateBackend(mapstate, default_pages=2, page_directory=True)
    txn = StateTransaction(backend)
    txn.put("ns", b"a", b"1")
    txn.commit()
    txn = StateTransaction(backend)
    txn.delete("ns", b"a")
    txn.commit()
    assert mapstate.entries == {}
    assert StateTransaction(SparkStateBackend(mapstate, default_pages=2, page_directory=True)).items("ns") == {}


def _adaptive(mapstate: DictMapState, limit: int = 200) -> SparkStateBackend:
    return SparkStateBackend(mapstate, default_pages=16, defer_writes=True, page_directory=True,
                             single_page_bytes=limit)


def _write(backend: SparkStateBackend, namespace: str, entries: dict[bytes, bytes]) -> None:
    txn = StateTransaction(backend)
    for key, value in entries.items():
        txn.put(namespace, key, value)
    txn.commit()
    backend.flush()


def test_a_small_namespace_is_one_page_read_and_written_with_one_call_each() -> None:
    mapstate = DictMapState()
    entries = {bytes([n]): b"v" for n in range(10)}
    _write(_adaptive(mapstate), "small", entries)
    assert sorted(key for key in mapstate.entries if key[0] == "small") == [("small", 0)]
    mapstate.calls = 0
    backend = _adaptive(mapstate)
    assert StateTransaction(backend).get_many("small", list(entries)) == entries
    assert mapstate.calls == 2  # the directory, the one page
    fixed_reader = SparkStateBackend(mapstate, default_pages=16, page_directory=True)
    assert StateTransaction(fixed_reader).items("small") == entries  # any reader with the directory agrees


def test_a_namespace_that_outgrows_its_page_is_split_and_reads_back_whole() -> None:
    mapstate = DictMapState()
    entries = {n.to_bytes(2, "big"): b"x" * 20 for n in range(40)}  # about 1 KB: past the 200-byte limit
    _write(_adaptive(mapstate), "grown", dict(list(entries.items())[:3]))
    assert [key for key in mapstate.entries if key[0] == "grown"] == [("grown", 0)]
    _write(_adaptive(mapstate), "grown", entries)
    pages = {key[1] for key in mapstate.entries if key[0] == "grown"}
    assert len(pages) > 1 and pages <= set(range(16))
    assert StateTransaction(_adaptive(mapstate)).items("grown") == entries
    assert StateTransaction(SparkStateBackend(mapstate, default_pages=16, page_directory=True)).items("grown") == entries
    split = _adaptive(mapstate)
    assert split.page_count("grown") == 16 and split.page_count("new") == 1


def test_a_namespace_stored_before_keeps_its_pages() -> None:
    """State written without single_page_bytes (every namespace on 16 pages) stays readable and keeps its layout."""
    mapstate = DictMapState()
    entries = {bytes([n]): b"v" for n in range(30)}
    _write(SparkStateBackend(mapstate, default_pages=16, defer_writes=True, page_directory=True), "old", entries)
    before = {key for key in mapstate.entries if key[0] == "old"}
    assert len(before) > 1
    backend = _adaptive(mapstate)
    assert StateTransaction(backend).items("old") == entries
    _write(backend, "old", {b"\x00": b"changed"})
    _write(backend, "fresh", {b"k": b"v"})
    assert {key for key in mapstate.entries if key[0] == "old"} == before
    assert StateTransaction(_adaptive(mapstate)).items("old") == {**entries, b"\x00": b"changed"}
    assert [key for key in mapstate.entries if key[0] == "fresh"] == [("fresh", 0)]


def test_single_page_bytes_needs_the_directory() -> None:
    with pytest.raises(ValueError, match="directory"):
        SparkStateBackend(DictMapState(), default_pages=16, single_page_bytes=100)


@pytest.mark.parametrize("entries", [{}, {b"": b""}, {b"k": b"v" * 300, bytes(range(40)): b""}])
def test_the_split_rule_measures_a_page_as_it_is_encoded(entries: dict[bytes, bytes]) -> None:
    from state.spark import _encoded_size, encode_page

    assert _encoded_size(entries) == len(encode_page(entries))


def _bundled(mapstate: DictMapState, limit: int = 200, bundle: int = 600) -> SparkStateBackend:
    return SparkStateBackend(mapstate, default_pages=16, defer_writes=True, page_directory=True,
                             single_page_bytes=limit, bundle_bytes=bundle)


def _bundle_keys(mapstate: DictMapState) -> list[tuple[object, ...]]:
    return sorted(key for key in mapstate.entries if key[0] == "pubsub.bundle")


def _read_all(backend: SparkStateBackend, namespaces: list[str]) -> dict[str, dict[bytes, bytes]]:
    txn = StateTransaction(backend)
    return {namespace: txn.items(namespace) for namespace in namespaces}


def test_small_namespaces_share_a_bundle_read_and_written_with_one_call_each() -> None:
    mapstate = DictMapState()
    written = {f"ns{n}": {bytes([n, k]): b"v" for k in range(3)} for n in range(8)}  # 8 x 45 bytes: one bundle
    backend = _bundled(mapstate)
    txn = StateTransaction(backend)
    for namespace, entries in written.items():
        for key, value in entries.items():
            txn.put(namespace, key, value)
    txn.commit()
    backend.flush()
    assert _bundle_keys(mapstate) == [("pubsub.bundle", -1)]
    assert all(key[0] in ("pubsub.bundle", "pubsub.directory") for key in mapstate.entries)
    mapstate.calls = 0
    assert _read_all(_bundled(mapstate), list(written)) == written
    assert mapstate.calls == 2  # the directory, the bundle
    fixed_reader = SparkStateBackend(mapstate, default_pages=16, page_directory=True)
    assert _read_all(fixed_reader, list(written)) == written  # any reader with the directory agrees


def test_a_full_bundle_moves_members_to_another_and_every_bundle_stays_within_its_size() -> None:
    mapstate = DictMapState()
    written: dict[str, dict[bytes, bytes]] = {}
    for round_ in range(6):  # namespaces grow a little each batch, new ones appear
        backend = _bundled(mapstate, bundle=300)
        txn = StateTransaction(backend)
        for n in range(round_ + 4):
            key, value = bytes([round_]), bytes([n]) * 10
            txn.put(f"ns{n}", key, value)
            written.setdefault(f"ns{n}", {})[key] = value
        txn.commit()
        backend.flush()
    bundles = _bundle_keys(mapstate)
    assert len(bundles) > 1
    for bundle in bundles:
        data = mapstate.entries[bundle][0]
        assert isinstance(data, bytes)
        assert len(data) <= 300 or len(decode_page(data)) == 1
    assert _read_all(_bundled(mapstate), list(written)) == written


def test_a_bundled_namespace_that_outgrows_its_page_leaves_the_bundle_for_its_own_pages() -> None:
    mapstate = DictMapState()
    _write(_bundled(mapstate), "small", {b"k": b"v"})
    _write(_bundled(mapstate), "grown", {b"a": b"1"})
    grown = {n.to_bytes(2, "big"): b"x" * 20 for n in range(40)}  # about 1 KB: past the 200-byte page limit
    _write(_bundled(mapstate), "grown", grown)
    pages = {key[1] for key in mapstate.entries if key[0] == "grown"}
    assert len(pages) > 1 and pages <= set(range(16))
    (bundle,) = _bundle_keys(mapstate)
    members = decode_page(mapstate.entries[bundle][0])  # type: ignore[arg-type]
    assert set(members) == {b"small"}
    assert _read_all(_bundled(mapstate), ["small", "grown"]) == {"small": {b"k": b"v"}, "grown": {b"a": b"1", **grown}}


def test_a_one_page_namespace_stored_before_bundles_moves_into_one_when_written() -> None:
    mapstate = DictMapState()
    _write(_adaptive(mapstate), "moved", {b"k": b"v"})
    _write(_adaptive(mapstate), "kept", {b"k": b"v"})
    assert ("moved", 0) in mapstate.entries and ("kept", 0) in mapstate.entries
    _write(_bundled(mapstate), "moved", {b"k2": b"v2"})
    assert ("moved", 0) not in mapstate.entries and ("kept", 0) in mapstate.entries
    assert len(_bundle_keys(mapstate)) == 1
    assert _read_all(_bundled(mapstate), ["moved", "kept"]) == {"moved": {b"k": b"v", b"k2": b"v2"},
                                                               "kept": {b"k": b"v"}}


def test_a_backend_without_bundles_keeps_bundled_namespaces_in_their_bundle() -> None:
    mapstate = DictMapState()
    backend = _bundled(mapstate)
    for n in range(3):
        _write(backend, f"ns{n}", {b"k": b"v"})
    _write(_adaptive(mapstate), "ns1", {b"k": b"changed"})
    _write(_adaptive(mapstate), "new", {b"k": b"v"})
    assert _bundle_keys(mapstate) == [("pubsub.bundle", -1)] and ("new", 0) in mapstate.entries
    assert _read_all(_bundled(mapstate), ["ns0", "ns1", "ns2", "new"]) == {
        "ns0": {b"k": b"v"}, "ns1": {b"k": b"changed"}, "ns2": {b"k": b"v"}, "new": {b"k": b"v"}}


def test_a_bundle_emptied_leaves_the_store_and_the_directory() -> None:
    mapstate = DictMapState()
    _write(_bundled(mapstate), "a", {b"k": b"v"})
    _write(_bundled(mapstate), "b", {b"k": b"v"})
    backend = _bundled(mapstate)
    txn = StateTransaction(backend)
    txn.delete("a", b"k")
    txn.commit()
    backend.flush()
    assert _read_all(_bundled(mapstate), ["a", "b"]) == {"a": {}, "b": {b"k": b"v"}}
    backend = _bundled(mapstate)
    txn = StateTransaction(backend)
    txn.delete("b", b"k")
    txn.commit()
    backend.flush()
    assert mapstate.entries == {}


def test_the_same_writes_lay_out_the_same_bytes() -> None:
    stores = [DictMapState(), DictMapState()]
    for mapstate in stores:
        for round_ in range(5):
            backend = _bundled(mapstate, bundle=250)
            txn = StateTransaction(backend)
            for n in reversed(range(round_ + 3)):
                txn.put(f"ns{n}", bytes([round_]), bytes([n]) * (5 + n))
            txn.commit()
            backend.flush()
    assert stores[0].entries == stores[1].entries


def test_bundle_bytes_needs_single_page_bytes() -> None:
    with pytest.raises(ValueError, match="single_page_bytes"):
        SparkStateBackend(DictMapState(), default_pages=16, page_directory=True, bundle_bytes=100)
