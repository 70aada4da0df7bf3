"""UMP: check_upward_messages, enact_upward_messages, process_pending_upward_messages."""

from __future__ import annotations

import pytest

from pubsub_core.errors import PubSubError
from pubsub_core.hashing import blake2_256
from pubsub_core.router import DispatchResult, RouterStorage, check_invariants
from pubsub_core.router.errors import (
    TooManyUpwardMessages,
    UpwardMessageTooLarge,
    UpwardQueueCountExceeded,
    UpwardQueueSizeExceeded,
)
from pubsub_core.router.ump import check_upward_messages, enact_upward_messages, process_pending_upward_messages
from state import StateTransaction
from tests.router.helpers import SMALL, Recorder, new_txn


def test_check_upward_messages_rejects_too_many_messages() -> None:
    with pytest.raises(TooManyUpwardMessages) as info:
        check_upward_messages(new_txn(), SMALL, 1000, (b"a",) * 4)
    assert (info.value.para, info.value.count, info.value.limit) == (1000, 4, 3)


def test_check_upward_messages_accepts_the_maximum_count() -> None:
    check_upward_messages(new_txn(), SMALL, 1000, (b"a",) * 3)


def test_check_upward_messages_rejects_an_oversized_message() -> None:
    with pytest.raises(UpwardMessageTooLarge) as info:
        check_upward_messages(new_txn(), SMALL, 1000, (b"ok", b"x" * 9))
    assert (info.value.index, info.value.size, info.value.limit) == (1, 9, 8)


def test_check_upward_messages_accepts_a_message_at_the_size_limit() -> None:
    check_upward_messages(new_txn(), SMALL, 1000, (b"x" * 8,))


def test_check_upward_messages_rejects_when_the_queue_count_is_full() -> None:
    txn = new_txn()
    enact_upward_messages(txn, 1000, (b"a", b"b", b"c"))
    check_upward_messages(txn, SMALL, 1000, (b"d", b"e"))
    with pytest.raises(UpwardQueueCountExceeded) as info:
        check_upward_messages(txn, SMALL, 1000, (b"d", b"e", b"f"))
    assert (info.value.queued, info.value.incoming, info.value.limit) == (3, 3, 5)


def test_check_upward_messages_rejects_when_the_queue_size_is_full() -> None:
    txn = new_txn()
    enact_upward_messages(txn, 1000, (b"x" * 8, b"x" * 8))
    check_upward_messages(txn, SMALL, 1000, (b"x" * 4,))
    with pytest.raises(UpwardQueueSizeExceeded) as info:
        check_upward_messages(txn, SMALL, 1000, (b"x" * 5,))
    assert (info.value.queued_bytes, info.value.incoming_bytes, info.value.limit) == (16, 5, 20)


def test_enact_upward_messages_appends_counts_and_marks_needs_dispatch_sorted() -> None:
    txn = new_txn()
    enact_upward_messages(txn, 1002, (b"a",))
    enact_upward_messages(txn, 1000, (b"bb", b"ccc"))
    enact_upward_messages(txn, 1002, (b"dddd",))
    storage = RouterStorage(txn)
    assert storage.relay_dispatch_queue(1002) == [b"a", b"dddd"]
    assert storage.relay_dispatch_queue_size(1002) == (2, 5)
    assert storage.relay_dispatch_queue_size(1000) == (2, 5)
    assert storage.needs_dispatch() == [1000, 1002]
    assert check_invariants(txn, SMALL) == []


def test_enact_upward_messages_with_no_messages_writes_nothing() -> None:
    txn = new_txn()
    enact_upward_messages(txn, 1000, ())
    assert txn.pending_changes() == {}


def _fill(txn: StateTransaction, queues: dict[int, int]) -> None:
    for para, count in queues.items():
        enact_upward_messages(txn, para, tuple(f"{para}-{i}".encode() for i in range(count)))


def test_process_pending_upward_messages_round_robins_one_message_per_para() -> None:
    txn, recorder = new_txn(), Recorder(weight=0)
    _fill(txn, {1000: 2, 1001: 1, 1002: 3})
    process_pending_upward_messages(txn, SMALL, recorder)
    assert [para for para, _ in recorder.calls] == [1000, 1001, 1002, 1000, 1002, 1002]
    assert [message for _, message in recorder.calls][:3] == [b"1000-0", b"1001-0", b"1002-0"]
    storage = RouterStorage(txn)
    assert storage.needs_dispatch() == []
    assert storage.next_dispatch_round_start_with() is None
    assert storage.relay_dispatch_queue_size(1002) == (0, 0)
    assert check_invariants(txn, SMALL) == []


def test_process_pending_upward_messages_stops_at_the_step_weight_and_resumes_with_the_next_para() -> None:
    txn, recorder = new_txn(), Recorder(weight=10)  # step weight 30: three messages per round
    _fill(txn, {1000: 3, 1001: 3, 1002: 3, 1003: 3})
    events = process_pending_upward_messages(txn, SMALL, recorder)
    assert [e.para for e in events] == [1000, 1001, 1002]
    assert RouterStorage(txn).next_dispatch_round_start_with() == 1003
    assert check_invariants(txn, SMALL) == []
    process_pending_upward_messages(txn, SMALL, recorder)
    assert [para for para, _ in recorder.calls[3:]] == [1003, 1000, 1001]
    assert RouterStorage(txn).next_dispatch_round_start_with() == 1002
    assert [message for para, message in recorder.calls if para == 1000] == [b"1000-0", b"1000-1"]


def test_process_pending_upward_messages_serves_every_para_when_one_message_exceeds_the_step() -> None:
    txn, recorder = new_txn(), Recorder(weight=1000)
    _fill(txn, {1000: 3, 1001: 3, 1002: 3})
    for _ in range(6):
        process_pending_upward_messages(txn, SMALL, recorder)
    assert [para for para, _ in recorder.calls] == [1000, 1001, 1002, 1000, 1001, 1002]


def test_process_pending_upward_messages_resumes_after_the_start_para_left_the_queue() -> None:
    txn, recorder = new_txn(), Recorder(weight=10)
    _fill(txn, {1000: 1, 1001: 1, 1002: 1, 1003: 2})
    process_pending_upward_messages(txn, SMALL, recorder)  # 1000, 1001, 1002 emptied; next is 1003
    assert RouterStorage(txn).next_dispatch_round_start_with() == 1003
    assert RouterStorage(txn).needs_dispatch() == [1003]
    process_pending_upward_messages(txn, SMALL, recorder)
    assert [para for para, _ in recorder.calls] == [1000, 1001, 1002, 1003, 1003]
    assert RouterStorage(txn).next_dispatch_round_start_with() is None


def test_process_pending_upward_messages_with_empty_queues_dispatches_nothing() -> None:
    txn, recorder = new_txn(), Recorder()
    assert process_pending_upward_messages(txn, SMALL, recorder) == []
    assert recorder.calls == []


def test_process_pending_upward_messages_continues_after_a_failed_dispatch() -> None:
    txn = new_txn()
    _fill(txn, {1000: 1, 1001: 1})

    def failing(para: int, message: bytes) -> DispatchResult:
        return DispatchResult(5, success=para != 1000, error="barrier" if para == 1000 else None)

    events = process_pending_upward_messages(txn, SMALL, failing)
    assert [(e.para, e.success, e.error) for e in events] == [(1000, False, "barrier"), (1001, True, None)]
    assert events[0].message_hash == blake2_256(b"1000-0")
    assert RouterStorage(txn).needs_dispatch() == []


def test_process_pending_upward_messages_consumes_a_raising_message_and_discards_its_writes() -> None:
    txn = new_txn()
    _fill(txn, {1000: 1, 1001: 1})

    def raising(para: int, message: bytes) -> DispatchResult:
        txn.put("test.executor", message, b"written")
        if para == 1000:
            raise PubSubError("malformed XCM")
        return DispatchResult(1)

    events = process_pending_upward_messages(txn, SMALL, raising)
    assert [(e.para, e.success) for e in events] == [(1000, False), (1001, True)]
    assert events[0].error == "PubSubError: malformed XCM"
    assert txn.get("test.executor", b"1000-0") is None
    assert txn.get("test.executor", b"1001-0") == b"written"
    assert check_invariants(txn, SMALL) == []
