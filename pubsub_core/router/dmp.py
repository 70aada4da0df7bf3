"""Downward Message Passing: queueing with MQC heads, the processed-count check, and pruning.

Invariants: no stored queue is empty; every queued message's ``sent_at`` is non-decreasing along the
queue; a para with a queue has a head (a head outlives its pruned messages, as the chain covers them all).
"""

from __future__ import annotations

from pubsub_core.router.config import RouterConfig
from pubsub_core.router.errors import (
    DownwardMessagesNotProcessed,
    DownwardMessageTooLarge,
    DownwardMessageUnroutable,
    ProcessedDownwardMessagesExceedQueue,
)
from pubsub_core.router.events import DownwardMessageQueued
from pubsub_core.router.interfaces import ParaRegistry
from pubsub_core.router.records import ZERO_HASH, InboundDownwardMessage, mqc_extend
from pubsub_core.router.storage import RouterStorage
from state import StateTransaction

__all__ = ["check_processed_downward_messages", "prune_dmq", "queue_downward_message"]


def queue_downward_message(
    txn: StateTransaction, config: RouterConfig, paras: ParaRegistry, para: int, message: bytes, now: int
) -> DownwardMessageQueued:
    """Append ``message`` to ``para``'s downward queue at relay block ``now`` and extend its MQC head.

    Besides the Router Module's size check, the destination must be a valid para (Polkadot's ``Unroutable``), so no
    queue is kept for a para that will never prune it.
    """
    if len(message) > config.max_downward_message_size:
        raise DownwardMessageTooLarge(para, len(message), config.max_downward_message_size)
    if not paras.is_valid_para(txn, para):
        raise DownwardMessageUnroutable(para)
    storage = RouterStorage(txn)
    inbound = InboundDownwardMessage(now, message)
    head = mqc_extend(storage.downward_message_queue_head(para) or ZERO_HASH, now, message)
    queue = storage.downward_message_queue(para)
    queue.append(inbound)
    with txn.atomic():
        storage.set_downward_message_queue_head(para, head)
        storage.set_downward_message_queue(para, queue)
    return DownwardMessageQueued(para, now, len(message), head)


def check_processed_downward_messages(txn: StateTransaction, para: int, processed: int) -> None:
    """Acceptance: the candidate processed no more than the queue holds, and at least one if any is queued."""
    queue_length = len(RouterStorage(txn).downward_message_queue(para))
    if processed > queue_length:
        raise ProcessedDownwardMessagesExceedQueue(para, processed, queue_length)
    if queue_length > 0 and processed == 0:
        raise DownwardMessagesNotProcessed(para, queue_length)


def prune_dmq(txn: StateTransaction, para: int, processed: int) -> None:
    """Enactment: remove the first ``processed`` messages from the para's downward queue."""
    if processed == 0:
        return
    storage = RouterStorage(txn)
    storage.set_downward_message_queue(para, storage.downward_message_queue(para)[processed:])
