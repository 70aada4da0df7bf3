"""StateTransaction's single write overlay with an undo log against a naive reference: the stack of
per-section write layers it replaced, merged bottom to top on every read. Random programs of reads, writes and
nested atomic sections (some failing) must give the same reads, the same pending changes (key order included:
commit writes them in that order), the same backend calls and the same stored state."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from state import MemoryBackend, StateTransaction, TransactionClosedError


class LayeredReference:
    """The pre-overlay transaction, written for clarity: one dict of writes per open section."""

    def __init__(self, backend: MemoryBackend) -> None:
        self.backend = backend
        self.loaded: dict[str, dict[bytes, bytes | None]] = {}
        self.layers: list[dict[str, dict[bytes, bytes | None]]] = [{}]

    def get(self, namespace: str, key: bytes) -> bytes | None:
        for layer in reversed(self.layers):
            if key in layer.get(namespace, {}):
                return layer[namespace][key]
        loaded = self.loaded.setdefault(namespace, {})
        if key not in loaded:
            loaded[key] = self.backend.read_many(namespace, [key]).get(key)
        return loaded[key]

    def write(self, namespace: str, key: bytes, value: bytes | None) -> None:
        self.layers[-1].setdefault(namespace, {})[key] = value

    def enter(self) -> None:
        self.layers.append({})

    def leave(self, failed: bool) -> None:
        top = self.layers.pop()
        if not failed:
            for namespace, entries in top.items():
                self.layers[-1].setdefault(namespace, {}).update(entries)

    def pending_changes(self) -> dict[str, dict[bytes, bytes | None]]:
        merged: dict[str, dict[bytes, bytes | None]] = {}
        for layer in self.layers:
            for namespace, entries in layer.items():
                merged.setdefault(namespace, {}).update(entries)
        for namespace, entries in merged.items():
            loaded = self.loaded.get(namespace, {})
            for key in [k for k, v in entries.items() if k in loaded and loaded[k] == v]:
                del entries[key]
        return {ns: entries for ns, entries in merged.items() if entries}


@dataclass(frozen=True)
class Write:
    namespace: str
    key: bytes
    value: bytes | None


@dataclass(frozen=True)
class Read:
    namespace: str
    key: bytes


@dataclass(frozen=True)
class Section:
    body: tuple[Write | Read | Section, ...]
    fails: bool


class SectionFailed(Exception):
    """Raised at the end of a section the program marks as failing."""


NAMESPACES = st.sampled_from(["a", "b", "c"])
KEYS = st.sampled_from([b"1", b"2", b"3", b""])
VALUES = st.sampled_from([b"x", b"y", None])
LEAVES = st.one_of(st.builds(Write, NAMESPACES, KEYS, VALUES), st.builds(Read, NAMESPACES, KEYS))
OPS = st.recursive(LEAVES, lambda inner: st.builds(Section, st.lists(inner, max_size=6).map(tuple), st.booleans()),
                   max_leaves=30)
SEED = {"a": {b"1": b"x", b"2": b"y"}, "b": {b"": b"x"}}


def _run(ops: Iterable[Write | Read | Section], txn: StateTransaction, ref: LayeredReference,
         pending: list[object]) -> None:
    for op in ops:
        if isinstance(op, Write):
            if op.value is None:
                txn.delete(op.namespace, op.key)
            else:
                txn.put(op.namespace, op.key, op.value)
            ref.write(op.namespace, op.key, op.value)
        elif isinstance(op, Read):
            assert txn.get(op.namespace, op.key) == ref.get(op.namespace, op.key)
        else:
            ref.enter()
            try:
                with txn.atomic():
                    _run(op.body, txn, ref, pending)
                    if op.fails:
                        raise SectionFailed
            except SectionFailed:
                pass
            ref.leave(op.fails)
        pending.append(_ordered(txn.pending_changes()))
        assert pending[-1] == _ordered(ref.pending_changes())
        for namespace in ("a", "b", "c", "unwritten"):
            assert list(txn.pending_changes_in(namespace).items()) == list(
                ref.pending_changes().get(namespace, {}).items())


def _ordered(changes: dict[str, dict[bytes, bytes | None]]) -> list[tuple[str, list[tuple[bytes, bytes | None]]]]:
    return [(ns, list(entries.items())) for ns, entries in changes.items()]


def _seeded() -> MemoryBackend:
    backend = MemoryBackend()
    backend.write_many(SEED)
    return backend


@settings(max_examples=300, deadline=None)
@given(st.lists(OPS, max_size=12))
@example([Section((Write("a", b"1", b"y"), Section((Write("a", b"1", None), Write("c", b"2", b"x")), True)), False)])
@example([Write("a", b"3", b"x"), Section((Write("a", b"3", None), Write("a", b"2", b"x")), True),
          Write("a", b"2", b"y"), Read("a", b"3")])
def test_the_overlay_behaves_like_the_stack_of_layers(ops: list[Write | Read | Section]) -> None:
    backend, reference_backend = _seeded(), _seeded()
    txn, ref = StateTransaction(backend), LayeredReference(reference_backend)
    _run(ops, txn, ref, [])
    assert backend.stats.read_calls == reference_backend.stats.read_calls
    written = txn.commit()
    assert written == sum(len(entries) for entries in ref.pending_changes().values())
    reference_backend.write_many(ref.pending_changes())
    for namespace in ("a", "b", "c"):
        assert StateTransaction(backend).items(namespace) == StateTransaction(reference_backend).items(namespace)


def test_a_failed_inner_section_keeps_the_outer_sections_writes_around_it() -> None:
    txn = StateTransaction(_seeded())
    with txn.atomic():
        txn.put("a", b"1", b"outer-before")
        with pytest.raises(SectionFailed):
            with txn.atomic():
                txn.put("a", b"1", b"inner")
                txn.delete("a", b"2")
                txn.put("new", b"k", b"inner")
                raise SectionFailed
        txn.put("a", b"3", b"outer-after")
    assert txn.get("a", b"1") == b"outer-before"
    assert txn.get("a", b"2") == b"y"
    assert txn.get("new", b"k") is None
    assert txn.pending_changes() == {"a": {b"1": b"outer-before", b"3": b"outer-after"}}


def test_an_outer_failure_discards_the_inner_sections_that_succeeded() -> None:
    txn = StateTransaction(_seeded())
    txn.put("a", b"1", b"kept")
    with pytest.raises(SectionFailed):
        with txn.atomic():
            with txn.atomic():
                txn.put("a", b"1", b"inner")
                txn.put("b", b"9", b"inner")
            assert txn.get("a", b"1") == b"inner"
            raise SectionFailed
    assert txn.get("a", b"1") == b"kept"
    assert txn.get("b", b"9") is None
    assert txn.pending_changes() == {"a": {b"1": b"kept"}}


def test_a_section_that_succeeded_is_not_undone_by_a_later_failing_one() -> None:
    txn = StateTransaction(_seeded())
    with txn.atomic():
        txn.put("a", b"3", b"first")
    with pytest.raises(SectionFailed):
        with txn.atomic():
            txn.put("a", b"3", b"second")
            raise SectionFailed
    assert txn.get("a", b"3") == b"first"


def test_a_missing_key_costs_one_backend_read_once() -> None:
    backend = _seeded()
    txn = StateTransaction(backend)
    assert txn.get("a", b"9") is None
    assert txn.get("a", b"9") is None
    assert txn.get("a", b"1") == b"x"
    assert backend.stats.read_calls == 2
    txn.items("b")
    assert txn.get("b", b"9") is None  # a scanned namespace is complete: no read
    assert backend.stats.read_calls == 2


def test_loading_a_namespace_scans_it_once_and_answers_every_read_of_it() -> None:
    backend = _seeded()
    txn = StateTransaction(backend)
    txn.put("a", b"3", b"written")
    txn.load("a")
    txn.load("a")
    assert backend.stats.scan_calls == 1 and backend.stats.read_calls == 0
    assert [txn.get("a", key) for key in (b"1", b"2", b"3", b"9")] == [b"x", b"y", b"written", None]
    assert backend.stats.read_calls == 0
    assert txn.items("a") == {b"1": b"x", b"2": b"y", b"3": b"written"} and backend.stats.scan_calls == 1


@pytest.mark.parametrize("end", ["commit", "rollback"])
def test_every_call_of_a_closed_transaction_is_refused(end: str) -> None:
    txn = StateTransaction(_seeded())
    getattr(txn, end)()
    calls = [lambda: txn.get("a", b"1"), lambda: txn.put("a", b"1", b"v"), lambda: txn.delete("a", b"1"),
             lambda: txn.set_value("a", b"v"), lambda: txn.prefetch("a", [b"1"]), lambda: txn.items("a"), lambda: txn.load("a"),
             lambda: txn.atomic().__enter__(), txn.commit, txn.rollback]
    for call in calls:
        with pytest.raises(TransactionClosedError, match="committed" if end == "commit" else "rolled back"):
            call()


def test_commit_inside_an_atomic_section_is_refused() -> None:
    txn = StateTransaction(_seeded())
    with txn.atomic():
        with pytest.raises(RuntimeError):
            txn.commit()
    txn.put("a", b"1", b"z")
    assert txn.commit() == 1


def test_get_many_sees_what_get_sees_with_one_backend_call() -> None:
    backend = _seeded()
    txn = StateTransaction(backend)
    txn.put("a", b"3", b"written")
    txn.delete("a", b"1")
    keys = [b"1", b"2", b"3", b"", b"2"]
    assert txn.get_many("a", keys) == {b"2": b"y", b"3": b"written"}
    assert backend.stats.read_calls == 1
    assert txn.get_many("a", keys) == {k: v for k in keys if (v := txn.get("a", k)) is not None}
    assert backend.stats.read_calls == 1
    txn.items("b")
    assert txn.get_many("b", [b"", b"z"]) == {b"": b"x"}
    assert backend.stats.read_calls == 1
