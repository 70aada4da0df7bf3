"""The relay block state machine: end-to-end scenarios over signed records, roots, order and outcomes."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pubsub_core.broadcaster import Broadcaster, BroadcasterConfig
from pubsub_core.codec.scale import encode_bytes, encode_u32
from pubsub_core.codec.types import PublishedEntry
from pubsub_core.relay import (
    BlockHeader,
    BlockOrderError,
    BlockResult,
    BlockSeal,
    BroadcasterCall,
    CallKind,
    EventRecord,
    InputRecord,
    ManifestMismatch,
    RecordOutcome,
    RelayBlock,
    RelayConfig,
    Status,
    canonical_json,
)
from pubsub_core.trie import prefixed_child_storage_key, trie_root
from pubsub_core.xcm import Publish, Xcm
from pubsub_core.xcm.types import (
    Asset,
    AssetFilter,
    BuyExecution,
    DepositAsset,
    Location,
    TransferAsset,
    WeightLimit,
    WithdrawAsset,
)
from state import StateTransaction
from tests.relay.chain import COLLATORS, MANAGER, OTHER, ROOT, Chain, fresh_machine, registry, run
from tests.relay.helpers import key


def events_of(result: BlockResult) -> list[dict[str, object]]:
    return [json.loads(e.body) for e in result.events]


def outcome_map(result: BlockResult) -> dict[str, tuple[str, str | None]]:
    return {o.record_id: (o.status.value, o.reason) for o in result.outcomes}


def register(chain: Chain, para: int = 2000) -> InputRecord:
    return chain.call(MANAGER, BroadcasterCall(CallKind.REGISTER_PUBLISHER, para).encode())


def test_paid_execution_from_a_parachain_end_to_end() -> None:
    chain = Chain()
    chain.upward(2000, Xcm((
        WithdrawAsset((Asset(Location(), 100),)),
        BuyExecution(Asset(Location(), 100), WeightLimit()),
        DepositAsset(AssetFilter(wild=0), Location.account(OTHER.public_key)),
    )))
    executed = events_of(run([chain.produce()])[0])[-1]
    assert (executed["event"], executed["outcome"], executed["error"]) == ("MessageExecuted", "Complete", "")


def test_register_then_publish_through_upward_xcm() -> None:
    chain = Chain()
    reg = register(chain)
    pub = chain.upward(2000, Xcm((Publish(bytes(32), b"\x01\x02\x03", 0),)))
    result = run([chain.produce()])[0]
    assert outcome_map(result) == {reg.record_id: ("applied", None), pub.record_id: ("applied", None)}
    names = [e["event"] for e in events_of(result)]
    assert names == ["PublisherRegistered", "DataPublished", "MessageExecuted"]
    expected_child = trie_root([(bytes(32), PublishedEntry(b"\x01\x02\x03", 0, 1).encode())])
    assert result.seal.child_roots == ((2000, expected_child),)
    assert result.seal.relay_root == trie_root([(prefixed_child_storage_key(2000), expected_child)])


def test_system_parachain_publishes_without_registration_end_to_end() -> None:
    chain = Chain()
    chain.upward(1000, Xcm((Publish(key("k"), b"v", 0),)))
    result = run([chain.produce()])[0]
    assert [e["event"] for e in events_of(result)] == ["DataPublished", "MessageExecuted"]
    assert result.seal.child_roots[0][0] == 1000


def test_publish_fails_for_unregistered_public_parachain_end_to_end() -> None:
    chain = Chain()
    record = chain.upward(3000, Xcm((Publish(key("k"), b"v", 0),)))
    result = run([chain.produce()])[0]
    assert outcome_map(result)[record.record_id] == ("applied", None)
    executed = events_of(result)[-1]
    assert (executed["event"], executed["outcome"], executed["error"]) == ("MessageExecuted", "Incomplete", "NotRegistered")
    assert result.seal.child_roots == ()


def test_barrier_rejections_are_record_rejections() -> None:
    chain = Chain()
    too_many = chain.upward(2000, Xcm(tuple(Publish(key(str(i)), b"v", 0) for i in range(17))))
    mixed = chain.upward(2000, Xcm((Publish(key("k"), b"v", 0), TransferAsset((Asset(Location(), 1),), Location.parachain(1)))))
    garbage = chain.signed(COLLATORS[2000], "upward", "2000", b"\x05\x01\xff")
    result = run([chain.produce()])[0]
    outcomes = outcome_map(result)
    assert outcomes[too_many.record_id] == ("rejected", "StackLimitReached")
    assert outcomes[mixed.record_id] == ("rejected", "BadFormat")
    assert outcomes[garbage.record_id] == ("rejected", "Malformed")


def test_publish_origin_filter_is_configurable() -> None:
    from pubsub_core.relay import RelayConfig
    from pubsub_core.xcm import Equals
    from tests.relay.chain import registry

    chain = Chain()
    allowed = chain.upward(1000, Xcm((Publish(key("k"), b"v", 0),)))
    refused = chain.upward(2000, Xcm((Publish(key("k"), b"v", 0),)))
    config = RelayConfig(registry=registry(), publish_origins=Equals(Location.parachain(1000)))
    outcomes = outcome_map(run([chain.produce()], config)[0])
    assert outcomes[allowed.record_id] == ("applied", None)
    assert outcomes[refused.record_id] == ("rejected", "Unsupported")


def test_force_calls_need_root_and_signed_calls_need_an_account() -> None:
    chain = Chain()
    signed_force = chain.call(MANAGER, BroadcasterCall(CallKind.FORCE_DEREGISTER_PUBLISHER, 2000).encode())
    root_register = chain.call(ROOT, BroadcasterCall(CallKind.REGISTER_PUBLISHER, 2000).encode(), root=True)
    root_force = chain.call(ROOT, BroadcasterCall(CallKind.FORCE_REGISTER_PUBLISHER, 2001, OTHER.public_key, 0).encode(), root=True)
    unknown = chain.call(MANAGER, b"\x00\x63")
    result = run([chain.produce()])[0]
    outcomes = outcome_map(result)
    assert outcomes[signed_force.record_id] == ("rejected", "BadOrigin")
    assert outcomes[root_register.record_id] == ("rejected", "BadOrigin")
    assert outcomes[root_force.record_id] == ("applied", None)
    assert outcomes[unknown.record_id] == ("rejected", "Malformed")


def test_pallet_errors_become_typed_rejections() -> None:
    chain = Chain()
    first = register(chain)
    again = register(chain)
    squat = chain.call(OTHER, BroadcasterCall(CallKind.REGISTER_PUBLISHER, 2001).encode())
    result = run([chain.produce()])[0]
    outcomes = outcome_map(result)
    assert outcomes[first.record_id] == ("applied", None)
    assert outcomes[again.record_id] == ("rejected", "AlreadyRegistered")
    assert outcomes[squat.record_id] == ("rejected", "NotAuthorized")


def test_ttl_expiry_happens_in_on_idle_and_empties_the_child_trie() -> None:
    chain = Chain()
    register(chain)
    chain.upward(2000, Xcm((Publish(key("k"), b"v", 2),)))
    blocks = [chain.produce(), chain.produce(), chain.produce()]
    results = run(blocks)
    assert results[1].seal.child_roots == ()
    assert [e["event"] for e in events_of(results[2])] == ["KeyExpired"]
    assert results[2].seal.child_roots == ((2000, None),)
    assert results[2].seal.relay_root == trie_root([])


def test_deregistration_wipes_child_trie_and_returns_deposit() -> None:
    machine, backend = fresh_machine()
    chain = Chain()
    register(chain)
    chain.upward(2000, Xcm((Publish(key("a"), b"1", 0), Publish(key("b"), b"2", 0))))
    first = machine.apply_block(backend, chain.produce())
    assert first.seal.child_roots[0][1] is not None
    chain.call(MANAGER, BroadcasterCall(CallKind.DEREGISTER_PUBLISHER, 2000).encode())
    second = machine.apply_block(backend, chain.produce())
    assert [e["event"] for e in events_of(second)] == ["DataCleanedUp", "PublisherDeregistered"]
    assert second.seal.child_roots == ((2000, None),)
    txn = StateTransaction(backend)
    assert Broadcaster.publisher_info(txn, 2000) is None


def test_parachain_self_deletion_end_to_end() -> None:
    """The pub-sub spec, "Parachain self-deletion": system para 1000 (unregistered, so without a manager) deletes its
    own keys with its para origin; another para's origin may not, and an account is not its manager."""
    chain = Chain()
    chain.upward(1000, Xcm(tuple(Publish(key(name), b"v", 0) for name in "ABC")))
    first = chain.produce()
    own = chain.signed(COLLATORS[1000], "extrinsics", "para:1000",
                       BroadcasterCall(CallKind.DELETE_KEYS, 1000, keys=(key("A"), key("B"))).encode())
    foreign = chain.signed(COLLATORS[2000], "extrinsics", "para:2000",
                           BroadcasterCall(CallKind.DELETE_KEYS, 1000, keys=(key("C"),)).encode())
    account = chain.call(MANAGER, BroadcasterCall(CallKind.DELETE_KEYS, 1000, keys=(key("C"),)).encode())
    results = run([first, chain.produce()])
    outcomes = outcome_map(results[1])
    assert outcomes[own.record_id] == ("applied", None)
    assert outcomes[foreign.record_id] == ("rejected", "BadOrigin")
    assert outcomes[account.record_id] == ("rejected", "NotRegistered")
    assert [e for e in events_of(results[1]) if e["event"] == "KeysDeleted"] == [
        {"pallet": "Broadcaster", "event": "KeysDeleted", "publisher": 1000, "count": 2}
    ]


def raw_publish(value: bytes) -> bytes:
    """A versioned XCM with one Publish of ``value``, whatever its length."""
    return b"\x05\x04\x34" + key("k") + encode_bytes(value) + encode_u32(0)


@pytest.mark.parametrize(("max_value_length", "xcm_bound"), [(None, None), (2048, 4096)])
def test_value_size_limit(max_value_length: int | None, xcm_bound: int | None) -> None:
    """The pub-sub spec, "Value size limit", through XCM: above MaxValueLength the pallet's ValueTooLarge (the message
    executes Incomplete), above XCM's MaxPublishValueLength the decoder's Malformed (a record rejection). With the
    defaults (992 and 1024) and with the scenario's MaxValueLength of 2048 (the XCM bound raised to 4096)."""
    config = RelayConfig(registry=registry())
    if max_value_length is not None and xcm_bound is not None:
        broadcaster = BroadcasterConfig(max_value_length=max_value_length, max_total_storage_size=2 * xcm_bound)
        config = RelayConfig(registry=registry(), broadcaster=broadcaster, max_publish_value_length=xcm_bound)
    limit, bound = config.broadcaster.max_value_length, config.max_publish_value_length
    chain = Chain(config)
    at_limit = chain.signed(COLLATORS[1000], "upward", "1000", raw_publish(bytes(limit)))
    too_large = chain.signed(COLLATORS[1000], "upward", "1000", raw_publish(bytes(limit + 1)))
    at_bound = chain.signed(COLLATORS[1000], "upward", "1000", raw_publish(bytes(bound)))
    malformed = chain.signed(COLLATORS[1000], "upward", "1000", raw_publish(bytes(bound + 1)))
    result = run([chain.produce()], config)[0]
    outcomes = outcome_map(result)
    assert [outcomes[r.record_id] for r in (at_limit, too_large, at_bound)] == [("applied", None)] * 3
    assert outcomes[malformed.record_id] == ("rejected", "Malformed")
    executed = [(e["outcome"], e["error"]) for e in events_of(result) if e["event"] == "MessageExecuted"]
    assert executed == [("Complete", ""), ("Incomplete", "ValueTooLarge"), ("Incomplete", "ValueTooLarge")]


def test_relay_config_keeps_max_value_length_below_the_xcm_bound() -> None:
    with pytest.raises(ValueError, match="below XCM's MaxPublishValueLength"):
        RelayConfig(broadcaster=BroadcasterConfig(max_value_length=1024))
    RelayConfig(broadcaster=BroadcasterConfig(max_value_length=2048), max_publish_value_length=2049)


def test_duplicate_envelope_is_ignored() -> None:
    chain = Chain()
    record = chain.upward(1000, Xcm((Publish(key("k"), b"v", 0),)))
    replay = chain.raw("upward", "1000", record.value)
    result = run([chain.produce()])[0]
    assert outcome_map(result)[replay.record_id] == ("ignored", "Duplicate")


def test_subscriber_calls_are_forwarded_and_malformed_router_input_is_rejected() -> None:
    chain = Chain()
    forwarded = chain.call(MANAGER, b"\x02\x01\xe8\x03\x00\x00")
    routed = chain.call(MANAGER, b"\x01\x00")
    horizontal = chain.signed(COLLATORS[2000], "horizontal", "2000", b"hrmp")
    result = run([chain.produce()])[0]
    outcomes = outcome_map(result)
    assert outcomes[forwarded.record_id] == ("applied", None)
    assert [f.call for f in result.forwarded] == [b"\x02\x01\xe8\x03\x00\x00"]
    assert outcomes[routed.record_id] == ("rejected", "MalformedRouterInput")
    assert outcomes[horizontal.record_id] == ("rejected", "MalformedRouterInput")


def test_block_must_extend_the_head_and_match_its_manifest() -> None:
    chain = Chain()
    machine, backend = fresh_machine()
    machine.apply_block(backend, chain.produce())
    skipped = chain.produce()
    skipped = chain.produce()
    with pytest.raises(BlockOrderError):
        machine.apply_block(backend, skipped)
    chain2 = Chain()
    chain2.upward(1000, Xcm((Publish(key("k"), b"v", 0),)))
    block = chain2.produce()
    machine2, backend2 = fresh_machine()
    writes_before = backend2.stats.write_calls
    with pytest.raises(ManifestMismatch):
        machine2.apply_block(backend2, RelayBlock(block.header, ()))
    assert backend2.stats.write_calls == writes_before
    machine2.apply_block(backend2, block)
    with pytest.raises(BlockOrderError):
        machine2.apply_block(backend2, block)


def test_child_trie_key_derivation() -> None:
    assert prefixed_child_storage_key(1000).hex() == (
        "3a6368696c645f73746f726167653a64656661756c743a" + "707562737562e8030000"
    )


def test_genesis_json_round_trip() -> None:
    from pubsub_core.relay import Genesis
    from tests.relay.chain import genesis

    assert Genesis.from_json(json.loads(canonical_json(genesis().to_json()))) == genesis()


def test_records_json_round_trip() -> None:
    chain = Chain()
    register(chain)
    chain.upward(2000, Xcm((Publish(key("k"), b"v", 0),)))
    block = chain.produce()
    assert RelayBlock.from_json(json.loads(canonical_json(block.to_json()))) == block
    result = run([block])[0]
    assert BlockResult.from_json(json.loads(canonical_json(result.to_json()))) == result
    assert BlockSeal.from_json(result.seal.to_json()) == result.seal
    assert all(RecordOutcome.from_json(o.to_json()) == o for o in result.outcomes)
    assert all(EventRecord.from_json(e.to_json()) == e for e in result.events)
    assert BlockHeader.from_json(block.header.to_json()) == block.header


# -- properties -------------------------------------------------------------------------------------
ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["publish", "publish_ttl", "register", "deregister", "delete", "garbage", "replay", "paid",
                         "unpaid", "next_block"]),
        st.sampled_from([1000, 2000, 2001, 3000]),
        st.integers(0, 5),
    ),
    max_size=25,
)


TYPICAL = [("register", 2000, 0), ("publish", 2000, 3), ("publish_ttl", 1000, 2), ("replay", 1000, 0),
           ("garbage", 2001, 4), ("paid", 2000, 5), ("unpaid", 3000, 0), ("next_block", 0, 0),
           ("delete", 2000, 3), ("publish", 3000, 1), ("next_block", 0, 0), ("next_block", 0, 0),
           ("deregister", 2000, 0), ("publish", 2000, 1)]


def build(actions: list[tuple[str, int, int]]) -> list[RelayBlock]:
    chain = Chain()
    last: InputRecord | None = None
    blocks: list[RelayBlock] = []
    for action, para, n in actions:
        if action == "next_block":
            blocks.append(chain.produce())
        elif action == "publish":
            last = chain.upward(para, Xcm((Publish(key(str(n)), bytes([n]) * n, 0),)))
        elif action == "publish_ttl":
            last = chain.upward(para, Xcm((Publish(key(str(n)), b"t", n),)))
        elif action == "register":
            last = chain.call(MANAGER if para != 3000 else OTHER, BroadcasterCall(CallKind.REGISTER_PUBLISHER, para).encode())
        elif action == "deregister":
            last = chain.call(MANAGER, BroadcasterCall(CallKind.DEREGISTER_PUBLISHER, para).encode())
        elif action == "delete":
            last = chain.call(MANAGER, BroadcasterCall(CallKind.DELETE_KEYS, para, keys=(key(str(n)),)).encode())
        elif action == "garbage":
            last = chain.raw("upward", str(para), bytes([n]) * (n * 7))
        elif action == "replay" and last is not None:
            chain.raw(last.stream, last.origin, last.value)
        elif action == "paid":
            last = chain.upward(para, Xcm((
                WithdrawAsset((Asset(Location(), 10 * n),)),
                BuyExecution(Asset(Location(), 10 * n), WeightLimit()),
                DepositAsset(AssetFilter(wild=0), Location.account(OTHER.public_key)),
            )))
        elif action == "unpaid":
            last = chain.upward(para, Xcm((DepositAsset(AssetFilter(wild=0), Location.parachain(para)),)))
    blocks.append(chain.produce())
    return blocks


@settings(max_examples=25)
@given(ACTIONS)
@example(TYPICAL)
def test_block_application_is_deterministic(actions: list[tuple[str, int, int]]) -> None:
    blocks = build(actions)
    first = [canonical_json(r.to_json()) for r in run(blocks)]
    second = [canonical_json(r.to_json()) for r in run(blocks, restart=True)]
    assert first == second


@settings(max_examples=25)
@given(ACTIONS)
@example(TYPICAL)
def test_every_input_record_gets_exactly_one_outcome(actions: list[tuple[str, int, int]]) -> None:
    blocks = build(actions)
    for block, result in zip(blocks, run(blocks)):
        ids = [o.record_id for o in result.outcomes]
        assert sorted(ids) == sorted(r.record_id for r in block.records)
        assert len(ids) == len(set(ids))
        assert all((o.status is Status.APPLIED) == (o.reason is None) for o in result.outcomes)
        assert result.seal.applied + result.seal.ignored + result.seal.rejected == len(block.records)


@settings(max_examples=15)
@given(ACTIONS)
@example(TYPICAL)
def test_relay_root_commits_to_every_child_root(actions: list[tuple[str, int, int]]) -> None:
    blocks = build(actions)
    machine, backend = fresh_machine()
    for block in blocks:
        result = machine.apply_block(backend, block)
    txn = StateTransaction(backend)
    entries: dict[int, list[tuple[bytes, bytes]]] = {}
    for para in (1000, 2000, 2001, 3000):
        for k, _ in Broadcaster.get_all_published_data(txn, para):
            raw = Broadcaster.published_entry(txn, para, k)
            assert raw is not None
            entries.setdefault(para, []).append((k, raw.encode()))
    expected = trie_root([(prefixed_child_storage_key(p), trie_root(items)) for p, items in entries.items()])
    assert result.seal.relay_root == expected


# -- signed block headers ----------------------------------------------------------------------------
def test_headers_arrive_signed_by_the_author() -> None:
    from pubsub_core.envelope import KeyRegistry, Signer, Topic
    from pubsub_core.relay import RelayConfig, RelayMachine
    from state import MemoryBackend
    from tests.relay.chain import registry

    author, impostor = Signer(bytes([30]) * 32), Signer(bytes([31]) * 32)
    base = registry()
    keys = KeyRegistry(base.para_keys, base.accounts, base.root_keys, frozenset({author.public_key}))
    machine, backend = RelayMachine(RelayConfig(registry=keys)), MemoryBackend()
    header = Chain().produce().header
    topic = Topic("polkadot", "blocks", "author")
    good = InputRecord("blocks", "author", 0, author.sign(topic, 1, header.encode()).encode())
    assert machine.admit_header(backend, good) == header
    assert BlockHeader.decode(header.encode()) == header
    replay = InputRecord("blocks", "author", 1, good.value)
    forged = InputRecord("blocks", "author", 2, impostor.sign(topic, 2, header.encode()).encode())
    garbage = InputRecord("blocks", "author", 3, author.sign(topic, 3, b"\x01\x02").encode())
    wrong_origin = InputRecord("blocks", "someone", 4, author.sign(Topic("polkadot", "blocks", "someone"), 1, header.encode()).encode())
    outcomes = [machine.admit_header(backend, r) for r in (replay, forged, garbage, wrong_origin)]
    assert [(o.status, o.reason) for o in outcomes if isinstance(o, RecordOutcome)] == [
        (Status.IGNORED, "Duplicate"), (Status.REJECTED, "NotMember"), (Status.REJECTED, "Malformed"),
        (Status.REJECTED, "Malformed"),
    ]


@given(st.binary(max_size=200))
def test_random_header_bytes_decode_or_raise_a_typed_error(data: bytes) -> None:
    from pubsub_core.relay import HeaderDecodeError

    try:
        header = BlockHeader.decode(data)
    except HeaderDecodeError:
        return
    assert header.encode() == data


# -- the RoutingPort -----------------------------------------------------------------------------------
def test_router_seam_acceptance_dispatch_and_session_change() -> None:
    from dataclasses import dataclass, field

    from pubsub_core.errors import PubSubError
    from pubsub_core.relay import DispatchReport, RelayConfig, RelayMachine, SessionChange
    from state import MemoryBackend
    from tests.relay.chain import genesis, registry

    class Refused(PubSubError):
        code = "UpwardQueueCountExceeded"

    @dataclass
    class Scripted:
        """Refuses para 3000's batches, defers dispatch by one block, offboards 2000 at a session change."""

        log: list[str] = field(default_factory=list)

        def receive_upward(self, txn, para, messages, now):  # type: ignore[no-untyped-def]
            if para == 3000:
                txn.put("scripted.Touched", b"x", b"1")
                raise Refused("queue full")
            queued = txn.get("scripted.Queue", b"") or b""
            txn.put("scripted.Queue", b"", queued + b"".join(para.to_bytes(4, "little") + len(m).to_bytes(4, "little") + m for m in messages))
            return ()

        def dispatch_upward(self, txn, now, dispatch):  # type: ignore[no-untyped-def]
            if now % 2:
                return ()
            queued, reports = txn.get("scripted.Queue", b"") or b"", []
            while queued:
                para, size = int.from_bytes(queued[:4], "little"), int.from_bytes(queued[4:8], "little")
                reports.append(dispatch(txn, para, queued[8 : 8 + size]))
                queued = queued[8 + size :]
            txn.delete("scripted.Queue", b"")
            assert all(isinstance(r, DispatchReport) for r in reports)
            return ()

        def receive_horizontal(self, txn, sender, payload, now):  # type: ignore[no-untyped-def]
            return ()

        def handle_call(self, txn, origin, call, now):  # type: ignore[no-untyped-def]
            return ()

        def on_session_change(self, txn, session_index, now):  # type: ignore[no-untyped-def]
            return SessionChange(outgoing=(2000,))

    machine = RelayMachine(RelayConfig(registry=registry()), router_factory=Scripted)
    backend = MemoryBackend()
    machine.initialize(backend, genesis())
    chain = Chain()
    register(chain)
    published = chain.upward(2000, Xcm((Publish(key("k"), b"v", 0),)))
    refused = chain.upward(3000, Xcm((Publish(key("k"), b"v", 0),)))
    first = machine.apply_block(backend, chain.produce())
    assert outcome_map(first)[published.record_id] == ("applied", None)
    assert outcome_map(first)[refused.record_id] == ("rejected", "UpwardQueueCountExceeded")
    assert [e["event"] for e in events_of(first)] == ["PublisherRegistered"]
    assert "scripted.Touched" not in backend.namespaces()
    second = machine.apply_block(backend, chain.produce())
    assert [e["event"] for e in events_of(second)] == ["DataPublished", "MessageExecuted"]
    chain.session = 1
    third = machine.apply_block(backend, chain.produce())
    assert [e["event"] for e in events_of(third)] == ["DataCleanedUp", "PublisherDeregistered"]
    assert third.seal.child_roots == ((2000, None),)
