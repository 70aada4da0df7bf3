"""DMP: queue_downward_message (with MQC heads), check_processed_downward_messages, prune_dmq."""

from __future__ import annotations

import pytest

from pubsub_core.codec.scale import encode_bytes, encode_u32
from pubsub_core.hashing import blake2_256
from pubsub_core.router import InboundDownwardMessage, RouterStorage, check_invariants, mqc_extend
from pubsub_core.router.dmp import check_processed_downward_messages, prune_dmq, queue_downward_message
from pubsub_core.router.errors import (
    DownwardMessagesNotProcessed,
    DownwardMessageTooLarge,
    DownwardMessageUnroutable,
    ProcessedDownwardMessagesExceedQueue,
)
from pubsub_core.router.records import ZERO_HASH
from tests.router.helpers import SMALL, Registry, new_txn


def test_mqc_extend_hashes_the_scale_encoded_link() -> None:
    head = mqc_extend(ZERO_HASH, 7, b"hello")
    expected = blake2_256(bytes(32) + encode_u32(7) + blake2_256(encode_bytes(b"hello")))
    assert head == expected
    assert head != blake2_256(bytes(32) + encode_u32(7) + blake2_256(b"hello"))


def test_queue_downward_message_rejects_an_oversized_message() -> None:
    with pytest.raises(DownwardMessageTooLarge) as info:
        queue_downward_message(new_txn(), SMALL, Registry(), 1000, b"x" * 9, 1)
    assert (info.value.para, info.value.size, info.value.limit) == (1000, 9, 8)


def test_queue_downward_message_rejects_an_unknown_para() -> None:
    txn = new_txn()
    with pytest.raises(DownwardMessageUnroutable) as info:
        queue_downward_message(txn, SMALL, Registry(), 42, b"x", 1)
    assert info.value.para == 42
    assert txn.pending_changes() == {}


def test_queue_downward_message_appends_with_sent_at_and_chains_the_head() -> None:
    txn = new_txn()
    first = queue_downward_message(txn, SMALL, Registry(), 1000, b"a", 3)
    second = queue_downward_message(txn, SMALL, Registry(), 1000, b"bb", 5)
    storage = RouterStorage(txn)
    assert storage.downward_message_queue(1000) == [InboundDownwardMessage(3, b"a"), InboundDownwardMessage(5, b"bb")]
    assert first.mqc_head == mqc_extend(ZERO_HASH, 3, b"a")
    assert second.mqc_head == mqc_extend(first.mqc_head, 5, b"bb")
    assert storage.downward_message_queue_head(1000) == second.mqc_head
    assert check_invariants(txn) == []


def test_queue_downward_message_head_survives_pruning() -> None:
    txn = new_txn()
    event = queue_downward_message(txn, SMALL, Registry(), 1000, b"a", 3)
    prune_dmq(txn, 1000, 1)
    storage = RouterStorage(txn)
    assert storage.downward_message_queue(1000) == []
    assert storage.downward_message_queue_head(1000) == event.mqc_head


def test_check_processed_downward_messages_rejects_more_than_queued() -> None:
    txn = new_txn()
    queue_downward_message(txn, SMALL, Registry(), 1000, b"a", 1)
    with pytest.raises(ProcessedDownwardMessagesExceedQueue) as info:
        check_processed_downward_messages(txn, 1000, 2)
    assert (info.value.processed, info.value.queue_length) == (2, 1)


def test_check_processed_downward_messages_rejects_zero_with_a_non_empty_queue() -> None:
    txn = new_txn()
    queue_downward_message(txn, SMALL, Registry(), 1000, b"a", 1)
    with pytest.raises(DownwardMessagesNotProcessed) as info:
        check_processed_downward_messages(txn, 1000, 0)
    assert info.value.queue_length == 1


def test_check_processed_downward_messages_accepts_zero_with_an_empty_queue() -> None:
    check_processed_downward_messages(new_txn(), 1000, 0)


def test_check_processed_downward_messages_accepts_the_whole_queue() -> None:
    txn = new_txn()
    for block in (1, 2):
        queue_downward_message(txn, SMALL, Registry(), 1000, b"a", block)
    check_processed_downward_messages(txn, 1000, 2)


def test_prune_dmq_removes_the_first_processed_messages() -> None:
    txn = new_txn()
    for block, message in ((1, b"a"), (2, b"b"), (3, b"c")):
        queue_downward_message(txn, SMALL, Registry(), 1000, message, block)
    prune_dmq(txn, 1000, 2)
    assert RouterStorage(txn).downward_message_queue(1000) == [InboundDownwardMessage(3, b"c")]
