"""Independent checks of a simulation: they recompute what should have happened from the input log alone
(decoding envelopes, XCM and calls themselves) and compare it with the outputs.

The relay's ``MessageExecuted`` events say which upward message ran in which block (a queueing router decides
that); everything else -- values, TTL expiry, subscriptions, which records exist -- comes from the log.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pubsub_core.codec.hexjson import unhex_0x
from pubsub_core.envelope import Envelope
from pubsub_core.hashing import blake2_256
from pubsub_core.relay import BlockHeader, InputRecord
from pubsub_core.subscriber import SetSubscriptions, decode_subscriber_call
from pubsub_core.xcm import Publish, decode_versioned_xcm

State = dict[tuple[int, bytes], bytes]
"""(publisher, key) -> value."""


@dataclass
class Parsed:
    """The input log, parsed naively: valid input records by id (the copy not refused at ingest, if given the
    refused log ids) with the log ids of every copy, and block headers (None when a ``blocks`` record carries
    no valid header)."""

    records: dict[str, InputRecord] = field(default_factory=dict)
    log_ids: dict[str, list[str]] = field(default_factory=dict)
    blocks: list[tuple[str, BlockHeader | None]] = field(default_factory=list)
    lines: int = 0
    ingest_only: list[str] = field(default_factory=list)
    genesis: list[str] = field(default_factory=list)


def _header(record: InputRecord) -> BlockHeader | None:
    try:
        return BlockHeader.decode(Envelope.decode(record.value).data)
    except Exception:
        return None


def parse_log(lines: list[str], refused: frozenset[str] | set[str] = frozenset()) -> Parsed:
    """``refused``: output ids of ``rejected`` records; a copy refused at ingest is not the record's value."""
    parsed = Parsed()
    offsets: Counter[str] = Counter()
    for number, line in enumerate(lines, 1):
        if not line.strip(" \t\r\n"):
            continue
        parsed.lines += 1
        try:
            entry = json.loads(line)
            topic = entry["topic"]
            if not isinstance(topic, str):
                raise ValueError(topic)
        except (ValueError, KeyError, TypeError):
            parsed.ingest_only.append(f"line-{number}")
            continue
        stream = topic.rpartition(".")[2]
        if stream not in ("genesis", "upward", "horizontal", "extrinsics", "blocks"):
            parsed.ingest_only.append(f"line-{number}")  # a stream we do not read: never routed, named by its line
            continue
        log_id = f"{topic}@{offsets[topic]}"
        offsets[topic] += 1
        if stream == "genesis":
            parsed.genesis.append(log_id)
            continue
        try:
            if stream not in ("upward", "horizontal", "extrinsics", "blocks"):
                raise ValueError(stream)
            record = InputRecord.from_json(entry["value"])
            if record.stream != stream or record.origin != entry.get("key"):
                raise ValueError("key mismatch")
        except (ValueError, KeyError, TypeError):
            parsed.ingest_only.append(log_id)
            continue
        if stream == "blocks":
            parsed.blocks.append((log_id, _header(record)))
            continue
        parsed.log_ids.setdefault(record.record_id, []).append(log_id)
        if f"ingest/{log_id}" not in refused:
            parsed.records.setdefault(record.record_id, record)
    return parsed


def outputs_by_topic(outputs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for output in outputs:
        grouped.setdefault(str(output["topic"]).rpartition(".")[2], []).append(output)
    return grouped


def check_outcomes(lines: list[str], outputs: list[dict[str, Any]]) -> None:
    """Every input line ends in exactly one outcome: applied (in a sealed block and not refused there), or one
    record on ``rejected``; every block line is sealed or rejected, or is a void order that took effect (its
    ``Voided`` health record); a voided position has one ``Voided`` outcome and no record of the log applied
    there; ``rejected`` holds nothing else."""
    parsed = parse_log(lines)
    topics = outputs_by_topic(outputs)
    rejected = {str(o["id"]): o["value"] for o in topics.get("rejected", [])}
    assert len(rejected) == len(topics.get("rejected", [])), "an id repeats on rejected"
    voided = {str(v["record"]) for i, v in rejected.items()
              if i.startswith("outcome/") and v["reason"] == "Voided"}
    refused = Counter(str(v["record"]) for i, v in rejected.items()
                      if i.startswith("outcome/") and str(v["record"]) not in voided)
    void_orders = {str(o["value"]["void_record"]) for o in topics.get("health", [])
                   if o["value"]["kind"] == "Voided"}
    seals = {int(o["value"]["number"]): o["value"] for o in topics.get("seals", [])}
    accounted = {f"outcome/{record_id}" for record_id in voided}
    sealed: dict[int, BlockHeader] = {}
    for log_id, header in parsed.blocks:
        if f"block/{log_id}" in rejected:
            accounted.add(f"block/{log_id}")
            continue
        if log_id in void_orders:  # a void order that took effect (a ``Voided`` health record)
            continue
        assert header is not None and header.number in seals and header.number not in sealed, log_id
        sealed[header.number] = header
    assert sorted(sealed) == sorted(seals)
    included: dict[str, int] = {}
    last: dict[tuple[str, str], int] = {}
    for number in sorted(sealed):
        refused_here = 0
        for stream, origin, upto in sealed[number].manifest:
            for position in range(last.get((stream, origin), -1) + 1, upto + 1):
                record_id = f"{stream}/{origin}/{position}"
                assert record_id not in included
                included[record_id] = number
                refused_here += refused[record_id]
            last[(stream, origin)] = max(last.get((stream, origin), -1), upto)
        seal = seals[number]
        filled = sum(1 for record_id, n in included.items() if n == number and record_id not in voided)
        assert seal["applied"] == filled - refused_here
        assert seal["rejected"] + seal["ignored"] == refused_here
    refused_genesis = {f"ingest/{log_id}" for log_id in parsed.genesis} & set(rejected)
    assert len(parsed.genesis) - len(refused_genesis) <= 1, "a realm took two genesis records"
    accounted |= refused_genesis
    for log_id in parsed.ingest_only:
        assert f"ingest/{log_id}" in rejected, f"line {log_id} has no outcome"
        accounted.add(f"ingest/{log_id}")
    for record_id, log_ids in parsed.log_ids.items():
        first = [log_id for log_id in log_ids if f"ingest/{log_id}" not in rejected]
        accounted |= {f"ingest/{log_id}" for log_id in log_ids if log_id not in first}
        if not first:  # every copy was refused on arrival: nothing holds the position, unless it was voided
            assert (record_id not in included or record_id in voided) and not refused[record_id], record_id
            continue
        assert len(first) == 1, f"{record_id}: copies without an ingest outcome: {first}"
        assert refused[record_id] <= 1 if record_id in included else refused[record_id] == 1, record_id
        if refused[record_id]:
            accounted.add(f"outcome/{record_id}")
    assert accounted == set(rejected), f"unexplained rejections: {sorted(set(rejected) - accounted)[:5]}"


def _publishes(record: InputRecord) -> tuple[int, bytes, list[Publish]] | None:
    try:
        envelope = Envelope.decode(record.value)
        message = decode_versioned_xcm(envelope.data)
    except Exception:
        return None
    return int(record.origin), blake2_256(envelope.data), [i for i in message.instructions if isinstance(i, Publish)]


def expected_states(lines: list[str], outputs: list[dict[str, Any]]) -> dict[int, State]:
    """The publishers' state after each sealed block, replayed from the log's Publish instructions in the order
    the relay executed the messages, with TTL expiry computed here (and checked against the KeyExpired events)."""
    parsed = parse_log(lines, {str(o["id"]) for o in outputs_by_topic(outputs).get("rejected", [])})
    messages: dict[tuple[int, bytes], list[Publish]] = {}
    for record in parsed.records.values():
        if record.stream == "upward" and (found := _publishes(record)) is not None:
            messages[(found[0], found[1])] = found[2]
    state: dict[tuple[int, bytes], tuple[bytes, int, int]] = {}
    states: dict[int, State] = {}
    expired_events: dict[int, set[tuple[int, bytes]]] = {}
    for output in outputs:
        topic = str(output["topic"]).rpartition(".")[2]
        value = output["value"]
        assert isinstance(value, dict)
        if topic == "events" and output["key"] == "relay":
            event = value["event"]
            block = int(value["block"])
            if event["event"] == "MessageExecuted":
                publishes = messages.get((event["para"], bytes.fromhex(event["message_hash"][2:])), [])
                ran = {"Complete": len(publishes), "Incomplete": event["index"], "Error": 0}[event["outcome"]]
                for publish in publishes[:ran]:
                    state[(event["para"], publish.key)] = (publish.value, publish.ttl, block)
            elif event["event"] == "KeyExpired":
                expired_events.setdefault(block, set()).add((event["publisher"], bytes.fromhex(event["key"][2:])))
            elif event["event"] == "DataCleanedUp":
                state = {k: v for k, v in state.items() if k[0] != event["para_id"]}
            assert event["event"] not in ("KeysDeleted", "KeysForcedDeleted"), "the replay does not model deletes"
        elif topic == "seals":
            block = int(value["number"])
            due = {k for k, (_, ttl, when) in state.items() if ttl and block >= when + ttl}
            assert due == expired_events.get(block, set()), f"block {block}: expiry differs from the TTLs"
            for k in due:
                del state[k]
            states[block] = {k: v for k, (v, _, _) in state.items()}
    return states


def subscriptions_in_force(lines: list[str], outputs: list[dict[str, Any]]) -> dict[int, dict[int, dict[int, set[bytes]]]]:
    """Per subscriber, per block: the keys it follows while processing that block (declared in earlier blocks)."""
    topics = outputs_by_topic(outputs)
    refused = {str(o["value"]["record"]) for o in topics.get("rejected", [])}
    rejected_ids = {str(o["id"]) for o in topics.get("rejected", [])}
    parsed = parse_log(lines, rejected_ids)
    failed = {str(o["value"]["record"]) for o in topics.get("events", []) if o["value"].get("kind") == "CallFailed"}
    seals = sorted(int(o["value"]["number"]) for o in topics.get("seals", []))
    headers = {h.number: h for log_id, h in parsed.blocks
               if h is not None and h.number in seals and f"block/{log_id}" not in rejected_ids}
    declared: dict[int, dict[int, set[bytes]]] = {}
    in_force: dict[int, dict[int, dict[int, set[bytes]]]] = {}
    last: dict[tuple[str, str], int] = {}
    for number in seals:
        changes = []
        for stream, origin, upto in headers[number].manifest:
            for position in range(last.get((stream, origin), -1) + 1, upto + 1):
                record_id = f"{stream}/{origin}/{position}"
                if stream != "extrinsics" or not origin.startswith("para:") or record_id in refused | failed:
                    continue
                data = Envelope.decode(parsed.records[record_id].value).data
                if data[:1] == b"\x02":
                    call = decode_subscriber_call(data)
                    if isinstance(call, SetSubscriptions):
                        changes.append((int(origin[5:]), {p: set(keys) for p, keys in call.subscriptions}))
            last[(stream, origin)] = max(last.get((stream, origin), -1), upto)
        for subscriber, mapping in declared.items():
            in_force.setdefault(subscriber, {})[number] = mapping
        for subscriber, mapping in changes:
            declared[subscriber] = mapping
    return in_force


def check_subscribers(lines: list[str], outputs: list[dict[str, Any]]) -> int:
    """Convergence, no stale value, no double delivery, budget: after every block a subscriber completes, its
    delivered values equal the publishers' state for the keys it follows. Returns the comparisons made."""
    states = expected_states(lines, outputs)
    in_force = subscriptions_in_force(lines, outputs)
    delivered: dict[int, State] = {}
    seen: set[tuple[int, int, str, str, str]] = set()
    compared = 0
    for output in outputs:
        topic = str(output["topic"]).rpartition(".")[2]
        value = output["value"]
        assert isinstance(value, dict)
        if topic == "updates":
            subscriber, publisher, key = value["subscriber"], value["publisher"], unhex_0x(value["key"])
            delivery = (subscriber, publisher, value["key"], value["value"], value["child_root"])
            if value["kind"] == "set":
                # A set value at a root is delivered once: an entry carries its insertion block, so a root
                # never comes back with the same entry.
                assert delivery not in seen, f"delivered twice: {delivery}"
                seen.add(delivery)
            else:
                # Removals all happen at whatever root remains (often the empty trie's): once per removal.
                assert (publisher, key) in delivered.get(subscriber, {}), f"removal of a key not held: {delivery}"
            if value["kind"] == "set":
                delivered.setdefault(subscriber, {})[(publisher, key)] = unhex_0x(value["value"])
            else:
                delivered.setdefault(subscriber, {}).pop((publisher, key), None)
        elif topic == "pov":
            budget = value["budget"]["pubsub"]
            assert value["proof_bytes"] <= budget and value["consumed_proof_size"] <= budget, value
            subscriber, number = value["subscriber"], value["relay_block_number"]
            if value["result"] != "complete":
                continue
            follows = in_force.get(subscriber, {}).get(number, {})
            wanted = {(p, k) for p, keys in follows.items() for k in keys}
            expected = {pk: v for pk, v in states[number].items() if pk in wanted}
            got = {pk: v for pk, v in delivered.get(subscriber, {}).items() if pk in wanted}
            assert got == expected, f"subscriber {subscriber} after block {number}: {got} != {expected}"
            compared += 1
    return compared

