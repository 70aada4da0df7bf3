"""Property tests: random operation sequences over the Router, with every invariant checked after every step.

The state machine drives candidates, downward messages, signed HRMP calls, upward dispatch, offboarding and
session changes over paras 1000..1004, commits a block at a time to the backend, and checks after every
step: check_invariants, deposit accounting against the ledger, and MQC heads recomputed from a log of
every message ever appended.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from hypothesis import event, given, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from pubsub_core.router import (
    CandidateCommitments,
    DispatchResult,
    HrmpChannelId,
    OutboundHrmpMessage,
    RouterError,
    RouterStorage,
    check_invariants,
    mqc_extend,
)
from pubsub_core.router.records import ZERO_HASH
from pubsub_core.router.storage import NS_HRMP_CHANNELS, NS_HRMP_OPEN_CHANNEL_REQUESTS
from pubsub_core.router.ump import enact_upward_messages, process_pending_upward_messages
from state import MemoryBackend, StateTransaction
from tests.router.helpers import SMALL, make_router

PARAS = list(range(1000, 1005))
FUNDS = 450
para_ids = st.sampled_from(PARAS)
payloads = st.binary(min_size=0, max_size=9)


class RouterMachine(RuleBasedStateMachine):
    """Random blocks over the Router, checked against its invariants and a message log."""

    @initialize()
    def setup(self) -> None:
        self.router, self.registry, self.ledger, self.recorder = make_router()
        self.registry.parathreads.add(1004)
        self.backend = MemoryBackend()
        self.txn = StateTransaction(self.backend)
        self.block = 1
        for para in PARAS:
            self.ledger.set(self.txn, para, FUNDS, 0)
        self.dmp_log: dict[int, list[tuple[int, bytes]]] = {}
        self.hrmp_log: dict[HrmpChannelId, list[tuple[int, bytes]]] = {}
        self.upward: dict[int, list[bytes]] = {para: [] for para in PARAS}

    def _storage(self) -> RouterStorage:
        return RouterStorage(self.txn)

    def _attempt(self, action: Callable[[], object]) -> bool:
        """Run a call that may be rejected; a rejected call must leave the state untouched."""
        before = self.txn.pending_changes()
        try:
            action()
        except RouterError as exc:
            assert self.txn.pending_changes() == before
            event("rejected", payload=type(exc).__name__)
            return False
        return True

    # -- operations ------------------------------------------------------------------------------
    @rule(para=para_ids, message=payloads)
    def queue_downward(self, para: int, message: bytes) -> None:
        if self._attempt(lambda: self.router.queue_downward_message(self.txn, para, message, self.block)):
            self.dmp_log.setdefault(para, []).append((self.block, message))

    @rule(
        para=para_ids,
        upward=st.lists(payloads, max_size=4),
        horizontal=st.lists(st.tuples(st.integers(0, 5), payloads), max_size=4),
        processed=st.integers(0, 3),
        watermark_pick=st.integers(0, 5),
        wellformed=st.sampled_from([True, True, True, False]),
    )
    def candidate(
        self,
        para: int,
        upward: list[bytes],
        horizontal: list[tuple[int, bytes]],
        processed: int,
        watermark_pick: int,
        wellformed: bool,
    ) -> None:
        """A candidate of ``para``; when ``wellformed``, its fields are drawn from what acceptance allows."""
        storage = self._storage()
        relay_parent = self.block - 1
        queue_length = len(storage.downward_message_queue(para))
        watermark = storage.watermark(para)
        digest_blocks = [block for block, _ in storage.channel_digests(para) if block <= relay_parent]
        if wellformed:
            upward = self._fitting_upward(para, upward)
            horizontal_messages = self._fitting_horizontal(para, horizontal)
            processed = min(max(processed, 1), queue_length)
            choices = [relay_parent, *[b for b in digest_blocks if watermark is None or b > watermark]]
        else:
            horizontal_messages = [OutboundHrmpMessage(PARAS[pick % len(PARAS)], data) for pick, data in horizontal]
            choices = [relay_parent, *digest_blocks, relay_parent + 1, max(relay_parent - 1, 0)]
        commitments = CandidateCommitments(
            upward_messages=tuple(upward),
            horizontal_messages=tuple(horizontal_messages),
            processed_downward_messages=processed,
            hrmp_watermark=choices[watermark_pick % len(choices)],
        )
        accepted = self._attempt(
            lambda: self.router.accept_candidate(self.txn, para, commitments, relay_parent=relay_parent, now=self.block)
        )
        if accepted:
            for message in commitments.horizontal_messages:
                self.hrmp_log[HrmpChannelId(para, message.recipient)].append((self.block, message.data))
            self.upward[para].extend(commitments.upward_messages)
        event("candidate", payload=f"{'wellformed' if wellformed else 'random'} {'accepted' if accepted else 'rejected'}")
        if accepted and commitments.horizontal_messages:
            event("candidate sent horizontal messages")
        if accepted and commitments.processed_downward_messages:
            event("candidate processed downward messages")

    def _fitting_upward(self, para: int, upward: list[bytes]) -> list[bytes]:
        """The longest prefix of ``upward`` (messages cut to the size limit) that acceptance allows."""
        count, size = self._storage().relay_dispatch_queue_size(para)
        fitting: list[bytes] = []
        for message in upward[: SMALL.max_upward_message_num_per_candidate]:
            message = message[: SMALL.max_upward_message_size]
            if count + 1 > SMALL.max_upward_queue_count or size + len(message) > SMALL.max_upward_queue_size:
                break
            fitting.append(message)
            count, size = count + 1, size + len(message)
        return fitting

    def _fitting_horizontal(self, para: int, horizontal: list[tuple[int, bytes]]) -> list[OutboundHrmpMessage]:
        """Messages over ``para``'s open channels, cut and dropped so each channel keeps room for them."""
        storage = self._storage()
        egress = storage.egress_index(para)
        if not egress:
            return []
        room: dict[int, tuple[int, int, int]] = {}
        for recipient in egress:
            channel = storage.channel(HrmpChannelId(para, recipient))
            assert channel is not None
            room[recipient] = (
                channel.limit_used_places - channel.used_places,
                channel.limit_used_bytes - channel.used_bytes,
                channel.limit_message_size,
            )
        fitting: list[OutboundHrmpMessage] = []
        for pick, data in horizontal[: SMALL.hrmp_max_message_num_per_candidate]:
            recipient = egress[pick % len(egress)]
            places, free_bytes, max_size = room[recipient]
            data = data[: min(max_size, free_bytes)]
            if places > 0:
                fitting.append(OutboundHrmpMessage(recipient, data))
                room[recipient] = (places - 1, free_bytes - len(data), max_size)
        return fitting

    @rule(sender=para_ids, recipient=para_ids, places=st.integers(1, 3), size=st.integers(1, 8))
    def request_and_accept(self, sender: int, recipient: int, places: int, size: int) -> None:
        """Both halves of the channel handshake in one step, so channels open often."""
        if self._attempt(lambda: self.router.hrmp_init_open_channel(self.txn, sender, recipient, places, size)):
            self._attempt(lambda: self.router.hrmp_accept_open_channel(self.txn, recipient, sender))

    @rule(origin=para_ids, recipient=para_ids, places=st.integers(0, 4), size=st.integers(0, 9))
    def init_open(self, origin: int, recipient: int, places: int, size: int) -> None:
        self._attempt(lambda: self.router.hrmp_init_open_channel(self.txn, origin, recipient, places, size))

    @rule(origin=para_ids, sender=para_ids)
    def accept_open(self, origin: int, sender: int) -> None:
        self._attempt(lambda: self.router.hrmp_accept_open_channel(self.txn, origin, sender))

    @rule(origin=para_ids, sender=para_ids, recipient=para_ids)
    def close(self, origin: int, sender: int, recipient: int) -> None:
        self._attempt(lambda: self.router.hrmp_close_channel(self.txn, origin, HrmpChannelId(sender, recipient)))

    @rule(weight=st.integers(0, 40))
    def dispatch_upward(self, weight: int) -> None:
        self.recorder.weight = weight
        self.router.process_pending_upward_messages(self.txn)
        for para, message in self.recorder.calls:
            assert self.upward[para].pop(0) == message, "upward messages leave their queue in FIFO order"
        event("upward dispatched", payload=str(min(len(self.recorder.calls), 3)))
        self.recorder.calls.clear()

    @rule(para=para_ids)
    def offboard(self, para: int) -> None:
        self.router.schedule_para_cleanup(self.txn, para)

    @rule(para=para_ids)
    def onboard(self, para: int) -> None:
        if para not in self._storage().outgoing_paras():
            self.registry.valid.add(para)

    @rule()
    def session_change(self) -> None:
        outgoing = self._storage().outgoing_paras()
        self.registry.valid.difference_update(outgoing)
        self.router.on_session_change(self.txn)
        for para in outgoing:
            self.dmp_log.pop(para, None)
        storage = self._storage()
        channels = set(storage.channel_keys(NS_HRMP_CHANNELS))
        self.hrmp_log = {c: log for c, log in self.hrmp_log.items() if c in channels}
        for channel in channels:
            self.hrmp_log.setdefault(channel, [])
        for para in outgoing:
            self.upward[para] = []
        event("session change", payload=f"{len(channels)} channels")

    @rule()
    def end_block(self) -> None:
        self.txn.commit()
        self.txn = StateTransaction(self.backend)
        self.block += 1

    # -- checks ----------------------------------------------------------------------------------
    @invariant()
    def router_invariants_hold(self) -> None:
        assert check_invariants(self.txn) == []

    @invariant()
    def deposits_match_reservations(self) -> None:
        storage = self._storage()
        held: Counter[int] = Counter()
        for channel_id in storage.channel_keys(NS_HRMP_CHANNELS):
            channel = storage.channel(channel_id)
            assert channel is not None
            held[channel_id.sender] += channel.sender_deposit
            held[channel_id.recipient] += channel.recipient_deposit
        for channel_id in storage.channel_keys(NS_HRMP_OPEN_CHANNEL_REQUESTS):
            request = storage.open_request(channel_id)
            assert request is not None
            held[channel_id.sender] += request.sender_deposit
            if request.confirmed:
                held[channel_id.recipient] += request.recipient_deposit
        for para in PARAS:
            free, reserved = self.ledger.read(self.txn, para)
            assert reserved == held[para]
            assert free + reserved == FUNDS

    @invariant()
    def mqc_heads_match_the_message_logs(self) -> None:
        storage = self._storage()
        for para, log in self.dmp_log.items():
            head = ZERO_HASH
            for sent_at, message in log:
                head = mqc_extend(head, sent_at, message)
            assert storage.downward_message_queue_head(para) == head
            queue = storage.downward_message_queue(para)
            assert [(m.sent_at, m.msg) for m in queue] == log[len(log) - len(queue) :]
        for channel_id, log in self.hrmp_log.items():
            channel = storage.channel(channel_id)
            assert channel is not None
            head = ZERO_HASH
            for sent_at, data in log:
                head = mqc_extend(head, sent_at, data)
            assert channel.mqc_head == head

    @invariant()
    def upward_queues_hold_exactly_the_undispatched_messages(self) -> None:
        storage = self._storage()
        for para in PARAS:
            assert storage.relay_dispatch_queue(para) == self.upward[para]


RouterMachine.TestCase.settings = settings(RouterMachine.TestCase.settings, stateful_step_count=60)
TestRouterMachine = RouterMachine.TestCase


# -- weighted dispatch -------------------------------------------------------------------------------
@settings(max_examples=200)
@given(
    queues=st.dictionaries(st.sampled_from(PARAS), st.integers(1, 6), min_size=1),
    weights=st.lists(st.integers(0, 25), min_size=1, max_size=8),
    step=st.integers(0, 60),
)
def test_process_pending_upward_messages_resumes_where_it_stopped_and_visits_paras_fairly(
    queues: dict[int, int], weights: list[int], step: int
) -> None:
    config = replace(
        SMALL, max_upward_queue_count=10, max_upward_queue_size=100, preferred_dispatchable_upward_messages_step_weight=step
    )
    txn = StateTransaction(MemoryBackend())
    for para in sorted(queues):
        enact_upward_messages(txn, para, tuple(f"{para}:{i}".encode() for i in range(queues[para])))
    order: list[int] = []
    calls = 0
    while RouterStorage(txn).needs_dispatch():
        expected_start = RouterStorage(txn).next_dispatch_round_start_with()
        needs_before = RouterStorage(txn).needs_dispatch()
        cost = weights[calls % len(weights)]
        log: list[tuple[int, bytes]] = []

        def dispatch(para: int, message: bytes) -> DispatchResult:
            log.append((para, message))
            return DispatchResult(cost)

        process_pending_upward_messages(txn, config, dispatch)
        calls += 1
        assert log, "every call with pending messages dispatches at least one"
        assert log[0][0] == (expected_start if expected_start is not None else needs_before[0])
        total = cost * len(log)
        assert total - cost < step or len(log) == 1, "the round stops as soon as the step weight is reached"
        assert total >= step or not RouterStorage(txn).needs_dispatch()
        assert check_invariants(txn, config) == []
        order.extend(para for para, _ in log)
    assert Counter(order) == Counter(queues)
    seen: Counter[int] = Counter()
    for para in order:
        seen[para] += 1
        active = [p for p in queues if seen[p] < queues[p]]
        assert max((seen[p] for p in active), default=0) - min((seen[p] for p in active), default=0) <= 1, (
            f"round robin: paras still holding messages were served unevenly after {seen}"
        )
