"""Whatever the bytes of a line or a Kafka record, it ends as exactly one typed rejection with a short
detail; the run goes on and nothing else changes. A generated suite of hostile lines goes through
``pubsub simulate`` (the log read as bytes), garbage through the simulator, values through ``ingest_record``."""

from __future__ import annotations

import json
import random
from functools import cache
from typing import Any
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cli.main import main
from producers.workload import WorkloadSpec, generate, minimal_example, signer
from pubsub_core.envelope import Topic
from pubsub_core.relay import InputRecord, canonical_json
from pubsub_core.simulator import Simulator, simulate
from pubsub_core.stages import GenesisRecord, LineParser, LogRecord, OutputRecord, decode_record, ingest_record
from pubsub_core.stages.ingest import is_blank
from pubsub_core.stages.limits import MAX_INPUT_BYTES
from pubsub_core.stages.records import DETAIL_LIMIT

SPEC = WorkloadSpec(seed=9, blocks=4, bad_records=0, quiet_blocks=1)
REASONS = {"MalformedJson", "MalformedRecord", "UnknownTopic", "KeyMismatch", "RecordTooLarge", "Malformed",
           "BadSignature", "NotMember", "Duplicate", "NoGenesis", "GenesisTooLate", "UntrustedGenesis"}


@cache
def clean_log() -> tuple[str, ...]:
    return tuple(line for chunk in generate(SPEC) for line in chunk)


def upward(position: object = 0, value: object = "0x00", origin: object = "2000", **extra: object) -> bytes:
    """An ``upward`` line for para 2000 whose record fields are whatever the caller says."""
    record = {"stream": "upward", "origin": origin, "position": position, "value": value, **extra}
    return json.dumps({"topic": "polkadot.upward", "key": "2000", "value": record}).encode()


def hostile_lines(rng: random.Random) -> list[bytes]:
    """Lines that must each end as one rejection, whatever else the log holds: not UTF-8, not JSON, nested too
    deep, too large, numbers that fit nothing, wrong types, bad genesis records, forged and foreign envelopes.
    The first is a well-formed genesis that is not the realm's."""
    genuine = [InputRecord.from_json(json.loads(line)["value"]) for line in clean_log()
               if '"topic":"polkadot.upward"' in line]
    genesis = json.loads(clean_log()[0])["value"]
    lines = [
        b"\xff\xfe\x00 not utf-8", b'{"topic": "polkadot.upward", "key": "\xc3\x28", "value": {}}', b"\x00" * 64,
        b"[" * 200_000, b"{" * 50 + b"}" * 50, b'"just a string"', b"17", b"null", b"{}", b'{"topic": 5, "value": 1}',
        b'{"topic": "polkadot.upward", "key": 2000, "value": {}}', b'{"topic": "polkadot.upward", "key": {}, "value": 1}',
        b'{"topic": "polkadot.upward", "key": "2000"}', b'{"topic": "polkadot.upward", "key": "2000", "value": {}} x',
        b'{"topic": "polkadot.upward", "key": "2000", "value": ' + b"[" * 40 + b"]" * 40 + b"}",
        b'{"topic": "polkadot.upward", "key": "2000", "value": "' + b"[" * 5000 + b'"}',
        b'{"topic": "polkadot.upward", "key": "2000", "value": "not json"}',
        b'{"topic": "polkadot.upward", "key": "\\ud800", "value": {}}',
        b'{"topic": "polkadot.upward", "key": "2000", "value": "\\udfff"}',
        b'{"topic": "polkadot.upward", "key": "2000", "value": {"position": NaN}}',
        b"x" * (MAX_INPUT_BYTES + 10), b"{" + b" " * (2 << 20) + b"!",
        upward(value="0x" + "ab" * (1 << 20)), upward(value="0x" + "a" * (2 << 20)),
        upward(10**30), upward(-1), upward(1.5), upward(True), upward("7"), upward(None), upward([0]),
        b'{"topic": "polkadot.upward", "key": "2000", "value": {"stream": "upward", "origin": "2000", "position": 1e400, "value": "0x00"}}',
        b'{"topic": "polkadot.upward", "key": "2000", "value": {"stream": "upward", "origin": "2000", "position": ' + b"9" * 5000 + b', "value": "0x00"}}',
        upward(value=7), upward(value="zz"), upward(value="0xz"), upward(origin=2000), upward(origin="2001"),
        upward(extra_field=1), upward(value="0x"), upward(value="0x" + "00" * 200),
        b'{"topic": "polkadot/upward", "key": "2000", "value": {}}', b'{"topic": "", "key": "2000", "value": {}}',
        json.dumps({"topic": "a" * 300 + ".upward", "key": "2000", "value": {}}).encode(),
        json.dumps({"topic": "polkadot.upward", "key": "k" * 100_000, "value": {}}).encode(),
        json.dumps({"topic": "polkadot.blocks", "key": "author", "value": {"stream": "blocks", "origin": "author",
                                                                         "position": 0, "value": "0x00"}}).encode(),
        json.dumps({"topic": "kusama.upward", "key": "2000", "value": genuine[0].to_json()}).encode(),
    ]
    bad: Any
    for bad in ({"registry": []}, {"registry": {"para_keys": {"-1": []}}}, {"registry": {"para_keys": {"7": "0x00"}}},
                {"registry": {"author_keys": ["0x00"]}}, {"registry": {"colour": []}}, {"endowments": {"0x00": 1}},
                {"endowments": {"0x" + "11" * 32: -1}}, {"endowments": {"0x" + "11" * 32: 1.5}},
                {"endowments": {"0x" + "11" * 32: 1 << 130}}, {"endowments": {"0x" + "11" * 32: True}},
                {"para_managers": {"1e3": "0x" + "11" * 32}}, {"para_managers": {"7": 7}}, {"extra": 1}):
        lines.append(json.dumps({"topic": "polkadot.genesis", "key": "polkadot", "value": {**genesis, **bad}}).encode())
    for record in rng.sample(genuine, 6):
        flipped = bytearray(record.value)
        flipped[rng.randrange(80, len(flipped))] ^= 1 << rng.randrange(8)
        lines.append(canonical_json({"topic": "polkadot.upward", "key": record.origin, "value": {
            **record.to_json(), "value": "0x" + flipped.hex()}}).encode())
        stranger = signer("stranger").sign(Topic("polkadot", "upward", record.origin), 1, b"\x05\x00").encode()
        lines.append(canonical_json({"topic": "polkadot.upward", "key": record.origin, "value": {
            **record.to_json(), "value": "0x" + stranger.hex()}}).encode())
        line = clean_log()[rng.randrange(len(clean_log()))].encode()
        lines.append(line[: rng.randrange(1, len(line) - 1)])
    foreign = {**genesis, "registry": {"author_keys": ["0x" + "22" * 32]}}
    return [json.dumps({"topic": "polkadot.genesis", "key": "polkadot", "value": foreign}).encode(), *lines]


def pinned_config(path: Path) -> Path:
    digest = GenesisRecord.from_json(json.loads(clean_log()[0])["value"]).digest()
    path.write_text(json.dumps({"trusted_genesis": {"polkadot": "0x" + digest.hex()}}))
    return path


def refusals(outputs: list[str]) -> tuple[list[str], list[dict[str, object]]]:
    """(the other outputs, the values of the refusals on arrival)."""
    kept, refused = [], []
    for line in outputs:
        body = json.loads(line)
        if str(body["id"]).startswith(("ingest/", "block/")):
            assert len(body["value"]["detail"]) <= DETAIL_LIMIT and len(body["key"]) <= DETAIL_LIMIT, line[:300]
            refused.append(body["value"])
        else:
            kept.append(line)
    return kept, refused


def test_every_hostile_line_is_one_typed_rejection_through_pubsub_simulate(tmp_path: Path) -> None:
    rng = random.Random(15)
    hostile = hostile_lines(rng)
    assert not any(b"\n" in line or is_blank(line) for line in hostile)
    log = [line.encode() for line in clean_log()]
    for line in hostile[1:]:
        log.insert(rng.randint(0, len(log)), line)
    log.insert(0, hostile[0])  # a foreign genesis before the realm's own
    (tmp_path / "events.jsonl").write_bytes(b"\n".join(log) + b"\n")
    (tmp_path / "clean.jsonl").write_bytes("\n".join(clean_log()).encode() + b"\n")
    config = str(pinned_config(tmp_path / "config.json"))
    for name in ("events", "clean"):
        assert main(["simulate", str(tmp_path / f"{name}.jsonl"), "-o", str(tmp_path / f"{name}.out"), "--quiet",
                     "--protocol-config", config]) == 0
    kept, refused = refusals((tmp_path / "events.out").read_text().splitlines())
    clean, none = refusals((tmp_path / "clean.out").read_text().splitlines())
    assert kept == clean and not none
    assert len(refused) == len(hostile)
    assert {str(value["reason"]) for value in refused} <= REASONS
    assert {"RecordTooLarge", "MalformedJson", "MalformedRecord", "UntrustedGenesis", "BadSignature", "NotMember",
            "NoGenesis", "UnknownTopic", "KeyMismatch", "Malformed"} <= {str(value["reason"]) for value in refused}


def test_an_oversized_line_is_refused_without_being_read_whole(tmp_path: Path) -> None:
    """The CLI reads at most the cap (and a byte) of a line; the rest is skipped, and the next line is read."""
    lines = minimal_example()
    big = b'{"topic": "polkadot.upward", "value": "' + b"a" * (3 * MAX_INPUT_BYTES) + b'"}'
    (tmp_path / "events.jsonl").write_bytes(big + b"\n" + "\n".join(lines).encode() + b"\n")
    assert main(["simulate", str(tmp_path / "events.jsonl"), "-o", str(tmp_path / "out"), "--quiet"]) == 0
    kept, refused = refusals((tmp_path / "out").read_text().splitlines())
    assert [value["reason"] for value in refused] == ["RecordTooLarge"]
    assert kept == [record.to_line() for record in simulate(lines)]


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 7), st.binary(max_size=60).map(lambda b: b.replace(b"\n", b" "))),
                max_size=6))
def test_garbage_bytes_never_stop_a_run_nor_change_the_blocks(garbage: list[tuple[int, bytes]]) -> None:
    lines: list[str | bytes] = list(minimal_example())
    baseline = [o.to_line() for o in simulate(lines)]
    for where, raw in garbage:
        lines.insert(min(where, len(lines)), raw)
    simulator = Simulator()
    outputs = [o.to_line() for line in lines for o in simulator.feed_line(line)] + [
        o.to_line() for o in simulator.finish()]
    kept, refused = refusals(outputs)
    assert kept == baseline
    first = lines[0]  # a byte order mark at the start of line 1 is dropped: a line of only that is blank
    bom_only = isinstance(first, bytes) and not is_blank(first) and is_blank(first.removeprefix(b"\xef\xbb\xbf"))
    assert len(refused) == sum(not is_blank(raw) for _, raw in garbage) - bom_only


def test_kafka_records_take_the_same_edge() -> None:
    """``ingest_record`` (what the job calls per Kafka record) ends every hostile value in a record or one
    rejection; the size cap is the same as for a line."""
    for line in hostile_lines(random.Random(1)):
        try:
            value = json.dumps(json.loads(line)["value"]).encode()
        except (ValueError, KeyError, TypeError, RecursionError):
            value = line
        for topic in ("polkadot.upward", "polkadot.genesis", "polkadot.blocks"):
            outcome = ingest_record(topic, b"2000", value, 0, "polkadot")
            assert isinstance(outcome, (LogRecord, OutputRecord))
            if isinstance(outcome, OutputRecord):
                assert outcome.value["reason"] in REASONS and len(str(outcome.value["detail"])) <= DETAIL_LIMIT
    too_large = ingest_record("polkadot.upward", b"2000", b"7" * (MAX_INPUT_BYTES + 1), 3, "polkadot")
    assert isinstance(too_large, OutputRecord) and too_large.value["reason"] == "RecordTooLarge"
    small = ingest_record("polkadot.upward", b"2000", b"[[[[7]]]]", 3, "polkadot", max_record_bytes=4)
    assert isinstance(small, OutputRecord) and small.value["reason"] == "RecordTooLarge"
    value = json.dumps(json.loads(upward(3, "0x01"))["value"]).encode()
    record = decode_record("polkadot.upward", b"2000", value, 4)
    assert record.value == InputRecord("upward", "2000", 3, b"\x01")


def test_nesting_is_capped_before_parsing_and_brackets_in_strings_do_not_count() -> None:
    router = LineParser("polkadot")
    deep = router.route(b'{"topic": "polkadot.upward", "key": "2000", "value": ' + b"[" * 33 + b"]" * 33 + b"}")
    assert isinstance(deep, OutputRecord) and "nests deeper" in str(deep.value["detail"])
    quoted = json.dumps({"topic": "polkadot.upward", "key": "2000", "value": {"x": '\\"' + "[{" * 100}})
    routed = router.route(quoted)
    assert not isinstance(routed, OutputRecord)
    outcome = ingest_record(routed[0].topic, routed[0].key, routed[0].value, routed[1], "polkadot")
    assert isinstance(outcome, OutputRecord) and outcome.value["reason"] == "MalformedRecord"
    assert "nests" not in str(outcome.value["detail"])


@given(st.lists(st.sampled_from(["[", "{\"k\":"]), min_size=25, max_size=40), st.sampled_from(["1", '"]]}}\\"[{"']))
def test_the_nesting_cap_counts_exactly_the_levels_of_the_line(openers: list[str], leaf: str) -> None:
    """The line's own object is a level: a value nested 31 deep passes, 32 deep is refused (any mix of arrays,
    objects, and strings holding brackets and escaped quotes)."""
    closers = "".join("]" if opener == "[" else "}" for opener in reversed(openers))
    value = "".join(openers) + leaf + closers
    assert json.loads(value) is not None
    routed = LineParser("polkadot").route('{"topic": "polkadot.upward", "key": "2000", "value": ' + value + "}")
    refused = isinstance(routed, OutputRecord) and "nests deeper" in str(routed.value["detail"])
    assert refused == (len(openers) > 31)
