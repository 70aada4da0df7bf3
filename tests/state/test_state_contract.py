"""One contract suite for every state backend (the Spark backend joins the parametrization when it lands)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from state import MemoryBackend, StateBackend, StateTransaction, TransactionClosedError

BACKENDS: dict[str, Callable[[], StateBackend]] = {"memory": MemoryBackend}


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
