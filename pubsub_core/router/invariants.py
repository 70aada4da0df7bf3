"""Every storage invariant the Router Module states (plus the ones the Router adds), checked over a whole state.

``check_invariants`` reads all Router namespaces and returns a list of violations, empty when the state is
consistent; the property tests call it after every block.
"""

from __future__ import annotations

from collections import Counter

from pubsub_core.router.config import RouterConfig
from pubsub_core.router.records import HrmpChannelId
from pubsub_core.router.storage import (
    NS_DOWNWARD_MESSAGE_QUEUE_HEADS,
    NS_DOWNWARD_MESSAGE_QUEUES,
    NS_HRMP_ACCEPTED_CHANNEL_REQUEST_COUNT,
    NS_HRMP_CHANNEL_CONTENTS,
    NS_HRMP_CHANNEL_DIGESTS,
    NS_HRMP_CHANNELS,
    NS_HRMP_CLOSE_CHANNEL_REQUESTS,
    NS_HRMP_EGRESS_CHANNELS_INDEX,
    NS_HRMP_INGRESS_CHANNELS_INDEX,
    NS_HRMP_OPEN_CHANNEL_REQUEST_COUNT,
    NS_HRMP_OPEN_CHANNEL_REQUESTS,
    NS_RELAY_DISPATCH_QUEUE_SIZE,
    NS_RELAY_DISPATCH_QUEUES,
    RouterStorage,
)
from state import StateTransaction

__all__ = ["check_invariants"]


def _strictly_ascending(items: list[int]) -> bool:
    return all(a < b for a, b in zip(items, items[1:]))


def _check_ump(storage: RouterStorage, config: RouterConfig | None) -> list[str]:
    violations: list[str] = []
    needs = storage.needs_dispatch()
    queue_keys = storage.para_keys(NS_RELAY_DISPATCH_QUEUES)
    size_keys = storage.para_keys(NS_RELAY_DISPATCH_QUEUE_SIZE)
    if not _strictly_ascending(needs):
        violations.append(f"NeedsDispatch {needs} is not strictly ascending.")
    if sorted(needs) != queue_keys:
        violations.append(f"NeedsDispatch {needs} differs from the RelayDispatchQueues keys {queue_keys}.")
    if size_keys != queue_keys:
        violations.append(f"RelayDispatchQueueSize keys {size_keys} differ from RelayDispatchQueues keys {queue_keys}.")
    for para in queue_keys:
        queue = storage.relay_dispatch_queue(para)
        expected = (len(queue), sum(len(message) for message in queue))
        actual = storage.relay_dispatch_queue_size(para)
        if actual != expected:
            violations.append(f"RelayDispatchQueueSize of para {para} is {actual}, its queue holds {expected}.")
        if config is not None and (
            expected[0] > config.max_upward_queue_count or expected[1] > config.max_upward_queue_size
        ):
            violations.append(f"The upward queue of para {para} holds {expected}, beyond its capacity.")
    start = storage.next_dispatch_round_start_with()
    if start is not None and start not in needs:
        violations.append(f"NextDispatchRoundStartWith {start} is not in NeedsDispatch {needs}.")
    return violations


def _check_dmp(storage: RouterStorage) -> list[str]:
    violations: list[str] = []
    heads = set(storage.para_keys(NS_DOWNWARD_MESSAGE_QUEUE_HEADS))
    for para in storage.para_keys(NS_DOWNWARD_MESSAGE_QUEUES):
        queue = storage.downward_message_queue(para)
        if any(a.sent_at > b.sent_at for a, b in zip(queue, queue[1:])):
            violations.append(f"The downward queue of para {para} is not ordered by sent_at.")
        if para not in heads:
            violations.append(f"Para {para} has a downward queue but no MQC head.")
    return violations


def _check_requests(storage: RouterStorage) -> list[str]:
    violations: list[str] = []
    open_list = storage.open_requests_list()
    open_set = storage.channel_keys(NS_HRMP_OPEN_CHANNEL_REQUESTS)
    if len(set(open_list)) != len(open_list) or sorted(open_list) != open_set:
        violations.append(f"HrmpOpenChannelRequestsList {open_list} differs from HrmpOpenChannelRequests {open_set}.")
    requested = Counter(channel.sender for channel in open_set)
    accepted: Counter[int] = Counter()
    for channel in open_set:
        request = storage.open_request(channel)
        if request is not None and request.confirmed:
            accepted[channel.recipient] += 1
        if storage.channel(channel) is not None:
            violations.append(f"Channel {channel} is both open and requested.")
    for para in sorted(set(requested) | set(storage.para_keys(NS_HRMP_OPEN_CHANNEL_REQUEST_COUNT))):
        if storage.open_request_count(para) != requested[para]:
            violations.append(
                f"HrmpOpenChannelRequestCount of para {para} is {storage.open_request_count(para)}, "
                f"but it has {requested[para]} open requests."
            )
    for para in sorted(set(accepted) | set(storage.para_keys(NS_HRMP_ACCEPTED_CHANNEL_REQUEST_COUNT))):
        if storage.accepted_request_count(para) != accepted[para]:
            violations.append(
                f"HrmpAcceptedChannelRequestCount of para {para} is {storage.accepted_request_count(para)}, "
                f"but it accepted {accepted[para]} requests."
            )
    close_list = storage.close_requests_list()
    close_set = storage.channel_keys(NS_HRMP_CLOSE_CHANNEL_REQUESTS)
    if len(set(close_list)) != len(close_list) or sorted(close_list) != close_set:
        violations.append(f"HrmpCloseChannelRequestsList {close_list} differs from HrmpCloseChannelRequests {close_set}.")
    return violations


def _check_channels(storage: RouterStorage) -> list[str]:
    violations: list[str] = []
    channels = storage.channel_keys(NS_HRMP_CHANNELS)
    channel_set = set(channels)
    from_ingress: set[HrmpChannelId] = set()
    for para in storage.para_keys(NS_HRMP_INGRESS_CHANNELS_INDEX):
        senders = storage.ingress_index(para)
        if not _strictly_ascending(senders):
            violations.append(f"The ingress index of para {para} {senders} is not strictly ascending.")
        from_ingress.update(HrmpChannelId(sender, para) for sender in senders)
    from_egress: set[HrmpChannelId] = set()
    for para in storage.para_keys(NS_HRMP_EGRESS_CHANNELS_INDEX):
        recipients = storage.egress_index(para)
        if not _strictly_ascending(recipients):
            violations.append(f"The egress index of para {para} {recipients} is not strictly ascending.")
        from_egress.update(HrmpChannelId(para, recipient) for recipient in recipients)
    if from_ingress != channel_set:
        violations.append(f"The ingress indexes name {sorted(from_ingress)}, the channels are {channels}.")
    if from_egress != channel_set:
        violations.append(f"The egress indexes name {sorted(from_egress)}, the channels are {channels}.")
    for channel_id in storage.channel_keys(NS_HRMP_CHANNEL_CONTENTS):
        if channel_id not in channel_set:
            violations.append(f"Channel {channel_id} has contents but does not exist.")
    for channel_id in channels:
        channel = storage.channel(channel_id)
        if channel is None:
            continue
        contents = storage.channel_contents(channel_id)
        used = (len(contents), sum(len(message.data) for message in contents))
        if (channel.used_places, channel.used_bytes) != used:
            violations.append(
                f"Channel {channel_id} counts ({channel.used_places}, {channel.used_bytes}) but holds {used}."
            )
        if channel.used_places > channel.limit_used_places or channel.used_bytes > channel.limit_used_bytes:
            violations.append(f"Channel {channel_id} is over its limits: {channel}.")
        if any(len(message.data) > channel.limit_message_size for message in contents):
            violations.append(f"Channel {channel_id} holds a message above its message size limit.")
        if any(a.sent_at > b.sent_at for a, b in zip(contents, contents[1:])):
            violations.append(f"The contents of channel {channel_id} are not ordered by sent_at.")
    return violations


def _check_digests(storage: RouterStorage) -> list[str]:
    violations: list[str] = []
    digest_paras = storage.para_keys(NS_HRMP_CHANNEL_DIGESTS)
    announced: set[tuple[int, int, int]] = set()
    for para in digest_paras:
        digests = storage.channel_digests(para)
        blocks = [block for block, _ in digests]
        if not _strictly_ascending(blocks):
            violations.append(f"The digest blocks of para {para} {blocks} are not strictly ascending.")
        watermark = storage.watermark(para)
        if watermark is not None and blocks and blocks[0] <= watermark:
            violations.append(f"Para {para} keeps a digest at block {blocks[0]}, at or below its watermark {watermark}.")
        for block, senders in digests:
            if not senders:
                violations.append(f"The digest of para {para} at block {block} is empty.")
            if len(set(senders)) != len(senders):
                violations.append(f"The digest of para {para} at block {block} repeats a sender: {senders}.")
            announced.update((para, block, sender) for sender in senders)
    for channel_id in storage.channel_keys(NS_HRMP_CHANNEL_CONTENTS):
        watermark = storage.watermark(channel_id.recipient)
        for message in storage.channel_contents(channel_id):
            if (channel_id.recipient, message.sent_at, channel_id.sender) not in announced:
                violations.append(f"A message of channel {channel_id} at block {message.sent_at} has no digest.")
            if watermark is not None and message.sent_at <= watermark:
                violations.append(f"Channel {channel_id} keeps a message at or below the watermark {watermark}.")
    return violations


def check_invariants(txn: StateTransaction, config: RouterConfig | None = None) -> list[str]:
    """All violated Router invariants, as sentences (empty when the state is consistent).

    With ``config``, also checks that upward queues respect their capacity.
    """
    storage = RouterStorage(txn)
    outgoing = storage.outgoing_paras()
    violations = []
    if not _strictly_ascending(outgoing):
        violations.append(f"OutgoingParas {outgoing} is not strictly ascending.")
    violations.extend(_check_ump(storage, config))
    violations.extend(_check_dmp(storage))
    violations.extend(_check_requests(storage))
    violations.extend(_check_channels(storage))
    violations.extend(_check_digests(storage))
    return violations
