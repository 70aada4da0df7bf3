"""TTL expiry under a small idle weight: whatever the spread of keys over publishers (TtlIndex buckets) and
expiry blocks, repeated on_idle runs delete every expired key exactly once, never a live one, each run within
its weight; through the pallet, through the relay block machine, and through the simulator."""

from __future__ import annotations

import json
from math import ceil

from hypothesis import example, given, settings
from hypothesis import strategies as st

from producers.workload import WorkloadSpec, generate
from pubsub_core.broadcaster import CHILD_NAMESPACE, BroadcasterConfig, KeyExpired, split_child_data_key
from pubsub_core.envelope import Envelope, KeyRegistry, Signer
from pubsub_core.hashing import blake2_256
from pubsub_core.relay import RelayConfig
from pubsub_core.simulator import simulate
from pubsub_core.stages import ProtocolConfig
from pubsub_core.xcm import Publish, Xcm, decode_versioned_xcm, encode_versioned_xcm
from state import StateTransaction
from tests.relay.chain import MANAGER, OTHER, ROOT, Chain, fresh_machine
from tests.relay.helpers import key, setup
from tests.simulator.properties import check_outcomes, parse_log

CONFIG = BroadcasterConfig()
BASE, PER_KEY = CONFIG.idle_base_weight, CONFIG.idle_per_key_weight

Entries = dict[tuple[int, bytes], tuple[int, int]]
"""(publisher, key) -> (ttl, when_inserted) of the entries with a finite TTL: what should still be expired."""

# A step: blocks to advance, then publishes (para, key index, ttl; ttl 0 = infinite) at that block.
STEPS = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.lists(st.tuples(st.integers(0, 1999), st.integers(0, 4), st.integers(0, 5)), max_size=6),
    ),
    min_size=1,
    max_size=10,
)


def idle_weights() -> st.SearchStrategy[int]:
    """Weights from one entry's charge to a few, plus change that pays for no further entry."""
    return st.builds(lambda n, extra: BASE + n * PER_KEY + extra, st.integers(1, 6), st.integers(0, PER_KEY - 1))


def expire(entries: Entries, publisher: int, k: bytes, now: int) -> None:
    """Check one KeyExpired against the model (it names a finite entry whose TTL ran out at ``now``) and apply it;
    a second removal of the same entry, or the removal of a live one, fails here."""
    assert (publisher, k) in entries, f"{publisher}: key expired twice or never had a TTL"
    ttl, when = entries.pop((publisher, k))
    assert now >= when + ttl, f"{publisher}: a live key (ttl {ttl} from {when}) was expired at {now}"


def publish(entries: Entries, para: int, k: bytes, ttl: int, now: int) -> None:
    """Apply one publish to the model: a finite TTL (re)starts the entry's clock, 0 makes it never expire."""
    if ttl:
        entries[(para, k)] = (ttl, now)
    else:
        entries.pop((para, k), None)


@settings(max_examples=150, deadline=None)
@given(STEPS, idle_weights(), st.sampled_from([1, 2, 3, 500]))
@example([(0, [(1000, 0, 1)])], BASE + 7 * PER_KEY, 500)  # para 1000 sits in bucket 182, behind empty buckets
@example([(0, [(1000, 0, 1), (1, 0, 1), (1999, 1, 1), (1000, 2, 0)])], BASE + PER_KEY, 500)
def test_repeated_on_idle_deletes_every_expired_key_once_within_its_weight(
    steps: list[tuple[int, list[tuple[int, int, int]]]], weight: int, max_scans: int
) -> None:
    pallet, txn = setup(BroadcasterConfig(max_ttl_scans_per_idle=max_scans))
    budget = min(max_scans, (weight - BASE) // PER_KEY)
    entries: Entries = {}
    last_ttl: dict[tuple[int, bytes], int] = {}

    def idle(now: int) -> None:
        had_entries = bool(entries)
        result = pallet.on_idle(txn, now, weight)
        assert result.consumed_weight <= weight
        scanned, rest = divmod(result.consumed_weight - BASE, PER_KEY)
        assert rest == 0 and scanned <= budget
        # Progress: a run that pays for an entry scans one whenever there is one.
        assert scanned >= 1 or not had_entries
        for event in result.events:
            assert isinstance(event, KeyExpired)
            expire(entries, event.publisher, event.key, now)

    now = 1
    for advance, publishes in steps:
        now += advance
        for para, index, ttl in publishes:
            k = key(str(index))
            pallet.publish_data(txn, para, k, b"v", ttl, now)
            publish(entries, para, k, ttl, now)
            last_ttl[(para, k)] = ttl
        idle(now)
    now = max([now] + [when + ttl for ttl, when in entries.values()])
    # Each run scans min(budget, entries left) entries on from the cursor, wrapping: these runs reach them all.
    for _ in range(ceil(len(entries) / budget)):
        idle(now)
    assert entries == {}, "expired keys left behind"
    assert txn.items("broadcaster.TtlData") == {}
    assert {split_child_data_key(raw) for raw in txn.items(CHILD_NAMESPACE)} == {
        entry for entry, ttl in last_ttl.items() if ttl == 0
    }


# -- through the relay block machine -----------------------------------------------------------------
PARAS = (1000, 1001, 1002, 1500, 1777, 1999)
SIGNERS = {para: Signer(blake2_256(b"idle-collator" + para.to_bytes(4, "little"))) for para in PARAS}


def relay_config(idle_weight: int) -> RelayConfig:
    registry = KeyRegistry(
        para_keys={para: frozenset({signer.public_key}) for para, signer in SIGNERS.items()},
        accounts=frozenset({MANAGER.public_key, OTHER.public_key}),
        root_keys=frozenset({ROOT.public_key}),
    )
    return RelayConfig(registry=registry, idle_weight=idle_weight)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.tuples(st.sampled_from(PARAS), st.integers(0, 4), st.integers(0, 4)), max_size=5),
             min_size=1, max_size=8),
    idle_weights(),
)
def test_relay_blocks_with_a_small_idle_weight_expire_every_key_once(
    blocks: list[list[tuple[int, int, int]]], idle_weight: int
) -> None:
    config = relay_config(idle_weight)
    machine, backend = fresh_machine(config)
    chain = Chain()
    sent: dict[bytes, tuple[Publish, ...]] = {}
    entries: Entries = {}
    last_ttl: dict[tuple[int, bytes], int] = {}

    def produce() -> None:
        result = machine.apply_block(backend, chain.produce())
        for record in result.events:
            event = json.loads(record.body)
            if event["event"] == "MessageExecuted":
                assert event["outcome"] == "Complete"
                for instruction in sent[bytes.fromhex(event["message_hash"][2:])]:
                    publish(entries, event["para"], instruction.key, instruction.ttl, record.block)
                    last_ttl[(event["para"], instruction.key)] = instruction.ttl
            elif event["event"] == "KeyExpired":
                expire(entries, event["publisher"], bytes.fromhex(event["key"][2:]), record.block)

    for publishes in blocks:
        by_para: dict[int, list[Publish]] = {}
        for para, index, ttl in publishes:
            by_para.setdefault(para, []).append(Publish(key(str(index)), b"v", ttl))
        for para, instructions in by_para.items():
            data = encode_versioned_xcm(Xcm(tuple(instructions)))
            sent[blake2_256(data)] = tuple(instructions)
            chain.signed(SIGNERS[para], "upward", str(para), data)
        produce()
    # Every TTL is due within 4 blocks; then one block per entry scans at least that entry.
    for _ in range(4 + len(entries) + 1):
        produce()
    assert entries == {}, "expired keys left behind"
    txn = StateTransaction(backend)
    assert {split_child_data_key(raw) for raw in txn.items(CHILD_NAMESPACE)} == {
        entry for entry, ttl in last_ttl.items() if ttl == 0
    }


# -- through the simulator ---------------------------------------------------------------------------
@st.composite
def ttl_workloads(draw: st.DrawFn) -> WorkloadSpec:
    return WorkloadSpec(
        seed=draw(st.integers(0, 2**32 - 1)),
        blocks=draw(st.integers(2, 8)),
        publishers=draw(st.integers(0, 2)),
        system_publishers=draw(st.integers(1, 3)),
        subscribers=1,
        keys=draw(st.integers(1, 8)),
        subscribed_keys=2,
        value_min=1,
        value_max=16,
        update_rate=draw(st.floats(0.2, 1.0)),
        ttl_mix=draw(st.sampled_from([((1, 1.0),), ((0, 0.3), (1, 0.3), (3, 0.4)), ((2, 0.5), (5, 0.5))])),
        bad_records=draw(st.floats(0.0, 0.3)),
        dmp_rate=0.0,
        quiet_blocks=5 + 5 * 8 + 1,  # the longest TTL, then a block per entry (at most 5 publishers x 8 keys)
    )


def _executed_publishes(lines: list[str], outputs: list[dict[str, object]]) -> dict[tuple[int, bytes], list[Publish]]:
    """The log's upward messages by (para, message hash): what a ``MessageExecuted`` event refers to."""
    refused = {str(o["id"]) for o in outputs if str(o["topic"]).endswith(".rejected")}
    messages: dict[tuple[int, bytes], list[Publish]] = {}
    for record in parse_log(lines, refused).records.values():
        if record.stream != "upward":
            continue
        try:
            data = Envelope.decode(record.value).data
            message = decode_versioned_xcm(data)
        except Exception:
            continue
        publishes = [instruction for instruction in message.instructions if isinstance(instruction, Publish)]
        messages[(int(record.origin), blake2_256(data))] = publishes
    return messages


@settings(max_examples=15, deadline=None)
@given(ttl_workloads(), st.integers(1, 2))
def test_simulator_with_a_small_idle_weight_reports_every_expiry_once(spec: WorkloadSpec, per_block: int) -> None:
    lines = [line for chunk in generate(spec) for line in chunk]
    config = ProtocolConfig(idle_weight=BASE + per_block * PER_KEY)
    outputs = [json.loads(record.to_line()) for record in simulate(lines, config)]
    check_outcomes(lines, outputs)
    messages = _executed_publishes(lines, outputs)
    entries: Entries = {}
    for output in outputs:
        value = output["value"]
        if output["topic"] != f"{spec.realm}.events" or output["key"] != "relay" or not isinstance(value, dict):
            continue
        event, block = value["event"], int(value["block"])
        if event["event"] == "MessageExecuted":
            ran = {"Complete": None, "Incomplete": event["index"], "Error": 0}[event["outcome"]]
            for instruction in messages.get((event["para"], bytes.fromhex(event["message_hash"][2:])), [])[:ran]:
                publish(entries, event["para"], instruction.key, instruction.ttl, block)
        elif event["event"] == "KeyExpired":
            expire(entries, event["publisher"], bytes.fromhex(event["key"][2:]), block)
        elif event["event"] == "DataCleanedUp":
            entries = {k: v for k, v in entries.items() if k[0] != event["para_id"]}
        assert event["event"] not in ("KeysDeleted", "KeysForcedDeleted"), "the model does not replay deletes"
    assert entries == {}, "expired keys left behind"
