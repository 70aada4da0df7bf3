"""The job's operators without Spark: Kafka as lists, the state store as MemoryBackends, any batching.

Stage R's rows go to a seam "topic" whose records are then cut into batches (and replayed, as the
at-least-once sink does after a crash) before Stage S reads them. Whatever the batching, the outputs must
be the simulator's records, byte for byte, as a multiset (Kafka only orders within a partition).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

from pubsub_core.simulator import Simulator
from pubsub_core.stages import LineParser, OutputRecord, ProtocolConfig
from pubsub_core.stages.edge import ID_HEADER, ConsumerRecord, ProducerRecord
from pubsub_core.stages.seam import decode_view
from state import MemoryBackend
from streaming.operators import fused_rows, relay_rows, seam_last, seam_record, subscriber_rows

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KEY = b"k" * 32
CONFIG = ProtocolConfig()


def _record(topic: str, key: bytes, value: bytes, record_id: str) -> ProducerRecord:
    return ProducerRecord(topic, key, value, ((ID_HEADER, record_id.encode()),))


def _line(row: ProducerRecord) -> str:
    return json.dumps({"id": row.id, "key": (row.key or b"").decode(), "topic": row.topic, "value": json.loads(row.value)},
                      sort_keys=True, separators=(",", ":"))


def expected(lines: list[bytes]) -> Counter[str]:
    simulator = Simulator(CONFIG)
    out: list[OutputRecord] = []
    for line in lines:
        out += simulator.feed_line(line.decode())
    return Counter(r.to_line() for r in out)


def kafka_inputs(lines: list[bytes]) -> tuple[list[ConsumerRecord], list[str]]:
    """What `pubsub produce` writes: routed records at their offsets, and the rejections of the others."""
    router = LineParser(CONFIG.default_realm)
    rows, refused = [], []
    for line in lines:
        if not line.strip():
            continue
        routed = router.route(line.decode())
        if isinstance(routed, OutputRecord):
            refused.append(routed.to_line())
        else:
            record, offset = routed
            rows.append(ConsumerRecord(record.topic, 0, offset, record.key, record.value))
    return rows, refused


def batches(rows: list[ConsumerRecord], size: int | None, rng: random.Random) -> list[list[ConsumerRecord]]:
    """Rows cut into micro-batches as maxOffsetsPerTrigger would, each batch shuffled (groups are unordered)."""
    ordered = sorted(rows, key=lambda r: (r.offset, r.topic))
    cut = [ordered] if size is None else [ordered[i:i + size] for i in range(0, len(ordered), size)]
    for batch in cut:
        rng.shuffle(batch)
    return cut


def run_pipeline(lines: list[bytes], size: int | None, seed: int, replay: bool = False) -> tuple[Counter[str], list[ProducerRecord]]:
    rng = random.Random(seed)
    rows, refused = kafka_inputs(lines)
    relay_backends: dict[str, MemoryBackend] = {}
    out: list[str] = list(refused)
    seam: list[ProducerRecord] = []
    for batch in batches(rows, size, rng):
        by_realm: dict[str, list[ConsumerRecord]] = {}
        for row in batch:
            by_realm.setdefault(row.topic.rpartition(".")[0], []).append(row)
        for realm, group in sorted(by_realm.items()):
            produced = relay_rows(realm, group, relay_backends.setdefault(realm, MemoryBackend()), CONFIG, KEY)
            out += [_line(r) for r in produced if not r.topic.endswith(".relay-views")]
            seam += [r for r in produced if r.topic.endswith(".relay-views")]
    views = [ConsumerRecord(r.topic, 0, i, r.key, r.value) for i, r in enumerate(seam)]
    if replay:  # the sink wrote some views twice: copies at later offsets
        views += [ConsumerRecord(v.topic, 0, len(views) + i, v.key, v.value) for i, v in enumerate(rng.sample(views, len(views) // 3))]
    subscriber_backends: dict[tuple[str, str], MemoryBackend] = {}
    for batch in batches(views, None if size is None else size * 2, rng):
        groups: dict[tuple[str, str], list[ConsumerRecord]] = {}
        for row in batch:
            groups.setdefault((row.topic.rpartition(".")[0], (row.key or b"").decode()), []).append(row)
        for (realm, subscriber), group in sorted(groups.items()):
            backend = subscriber_backends.setdefault((realm, subscriber), MemoryBackend())
            out += [_line(r) for r in subscriber_rows(realm, subscriber, group, backend, CONFIG, KEY)]
    return Counter(out), seam


def settled(lines: Counter[str]) -> Counter[str]:
    """Less the health records of blocks declared stalled (``Stalled``, ``Resumed``): the simulator's Stage R writes
    them, the job's driver declares them from how far each batch read its topics (docs/pipeline.md, "Health
    records"); the operators never write them."""
    return Counter({line: n for line, n in lines.items()
                    if not ('.health"' in line and ('"kind":"Stalled"' in line or '"kind":"Resumed"' in line))})


@pytest.mark.parametrize("name", ["minimal.jsonl", "small.jsonl", "tight.jsonl", "stalled.jsonl"])
@pytest.mark.parametrize("size", [1, 7, None])
def test_operators_equal_the_simulator_whatever_the_batching(name: str, size: int | None) -> None:
    lines = (EXAMPLES / name).read_bytes().splitlines()
    got, _ = run_pipeline(lines, size, seed=len(name) + (size or 0))
    assert got == settled(got) == settled(expected(lines))


def run_fused(lines: list[bytes], size: int | None, seed: int) -> Counter[str]:
    """The fused operator over the same batching: both stages in one call per realm and batch."""
    rng = random.Random(seed)
    rows, refused = kafka_inputs(lines)
    relay_backends: dict[str, MemoryBackend] = {}
    subscriber_backends: dict[tuple[str, int], MemoryBackend] = {}
    out: list[str] = list(refused)
    for batch in batches(rows, size, rng):
        by_realm: dict[str, list[ConsumerRecord]] = {}
        for row in batch:
            by_realm.setdefault(row.topic.rpartition(".")[0], []).append(row)
        for realm, group in sorted(by_realm.items()):
            def backend_of(subscriber: int, realm: str = realm) -> MemoryBackend:
                return subscriber_backends.setdefault((realm, subscriber), MemoryBackend())

            produced = fused_rows(realm, group, relay_backends.setdefault(realm, MemoryBackend()), CONFIG, backend_of)
            out += [_line(r) for r in produced]
    return Counter(out)


@pytest.mark.parametrize("name", ["minimal.jsonl", "small.jsonl", "tight.jsonl", "stalled.jsonl"])
@pytest.mark.parametrize("size", [1, 7, None])
def test_the_fused_operator_equals_the_simulator_whatever_the_batching(name: str, size: int | None) -> None:
    """Stage S inside Stage R's call: the same records as the simulator's, and no seam record."""
    lines = (EXAMPLES / name).read_bytes().splitlines()
    got = run_fused(lines, size, seed=len(name) + (size or 0))
    assert not [line for line in got if "relay-views" in line]
    assert got == settled(got) == settled(expected(lines))


def test_replayed_views_are_applied_once() -> None:
    lines = (EXAMPLES / "small.jsonl").read_bytes().splitlines()
    got, _ = run_pipeline(lines, 5, seed=3, replay=True)
    assert settled(got) == settled(expected(lines))


def _views(lines: list[bytes]) -> list[ConsumerRecord]:
    _, seam = run_pipeline(lines, None, seed=0)
    return [ConsumerRecord(r.topic, 0, i, r.key, r.value) for i, r in enumerate(seam)]


def test_a_forged_view_is_rejected_and_changes_nothing() -> None:
    lines = (EXAMPLES / "minimal.jsonl").read_bytes().splitlines()
    views = _views(lines)
    genuine = subscriber_rows("polkadot", "3000", views, MemoryBackend(), CONFIG, KEY)
    value = bytearray(views[-1].value or b"")
    value[-1] ^= 1  # a cheating seam writer without the key: the MAC no longer matches
    forged = ConsumerRecord(views[0].topic, 0, 99, b"3000", bytes(value))
    wrong_key = ConsumerRecord(views[0].topic, 0, 100, b"3000", seam_record_with(views[1], b"x" * 32))
    out = subscriber_rows("polkadot", "3000", [forged, wrong_key, *views], MemoryBackend(), CONFIG, KEY)
    rejected = [json.loads(r.value) for r in out if r.topic == "polkadot.rejected"]
    assert [r["reason"] for r in rejected] == ["ForgedView", "ForgedView"]
    assert [r for r in out if r.topic != "polkadot.rejected"] == genuine


def seam_record_with(view_row: ConsumerRecord, key: bytes) -> bytes:
    view, _ = decode_view(view_row.value or b"", KEY)
    return seam_record(view, key).value


def test_a_differing_replay_of_an_applied_view_is_a_typed_rejection() -> None:
    lines = (EXAMPLES / "minimal.jsonl").read_bytes().splitlines()
    views = _views(lines)
    first, _ = decode_view(views[0].value or b"", KEY)
    changed = seam_record(dataclasses.replace(first, max_pov_size=1), KEY)
    backend = MemoryBackend()
    subscriber_rows("polkadot", "3000", views, backend, CONFIG, KEY)
    out = subscriber_rows("polkadot", "3000", [ConsumerRecord(views[0].topic, 0, 50, b"3000", changed.value)],
                          backend, CONFIG, KEY)
    assert [json.loads(r.value)["reason"] for r in out] == ["ViewConflict"]


def test_views_out_of_order_wait_for_their_predecessor() -> None:
    lines = (EXAMPLES / "minimal.jsonl").read_bytes().splitlines()
    views = _views(lines)
    in_order = subscriber_rows("polkadot", "3000", views, MemoryBackend(), CONFIG, KEY)
    backend = MemoryBackend()
    late_first = subscriber_rows("polkadot", "3000", views[1:], backend, CONFIG, KEY)
    assert late_first == []
    assert subscriber_rows("polkadot", "3000", views[:1], backend, CONFIG, KEY) == in_order


def test_an_output_over_the_ceiling_becomes_a_rejection(monkeypatch: pytest.MonkeyPatch) -> None:
    import streaming.operators as operators

    monkeypatch.setattr(operators, "MAX_OUTPUT_BYTES", 500)
    lines = (EXAMPLES / "minimal.jsonl").read_bytes().splitlines()
    rows, _ = kafka_inputs(lines)
    out = relay_rows("polkadot", rows, MemoryBackend(), CONFIG, KEY)
    too_large = [json.loads(r.value) for r in out if (r.id or "").startswith("too-large/")]
    assert too_large and all(r["reason"] == "RecordTooLarge" for r in too_large)
    assert all(len(r.value) <= 500 for r in out)


class Pages(dict[tuple[object, ...], tuple[bytes]]):
    """A MapState over a dict (pyspark's method names)."""

    def getValue(self, key: tuple[object, ...]) -> tuple[bytes] | None:  # noqa: N802 (pyspark's name)
        return self.get(key)

    def updateValue(self, key: tuple[object, ...], value: tuple[bytes]) -> None:  # noqa: N802
        self[key] = value

    def removeKey(self, key: tuple[object, ...]) -> None:  # noqa: N802
        self.pop(key, None)


def test_a_key_lands_on_its_namespace_s_stable_page_whatever_was_asked_before() -> None:
    """page_of is memoised per backend: the memo must still tell namespaces (and their page counts) apart."""
    import hashlib

    from state.spark import SparkStateBackend, decode_page

    pages = Pages()
    backend = SparkStateBackend(pages, pages={"wide": 16, "narrow": 3}, default_pages=1)
    keys = [bytes([i]) * (i % 5 + 1) for i in range(40)]
    for namespace in ("wide", "narrow", "one", "wide"):
        backend.read_many(namespace, keys)
        backend.write_many({namespace: {key: b"v" for key in keys}})
    for namespace, count in (("wide", 16), ("narrow", 3), ("one", 1)):
        for key in keys:
            page = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") % count
            assert key in decode_page(pages[(namespace, page)][0], namespace, page)


def test_stage_r_hands_each_block_s_views_out_as_soon_as_the_block_is_applied() -> None:
    """relay_chunks ends a chunk with each block's views (its other records go to Kafka while the next block is
    worked on; ``seam_last`` holds the views), chunks stay bounded, and the chunks together are relay_rows' output."""
    from streaming.operators import CHUNK_ROWS, relay_chunks, seam_record

    lines = (EXAMPLES / "busy.jsonl").read_bytes().splitlines()
    rows, _ = kafka_inputs(lines)
    chunks = list(relay_chunks("polkadot", rows, MemoryBackend(), CONFIG, lambda view: [seam_record(view, KEY)]))
    with_views = [chunk for chunk in chunks if any(r.topic.endswith(".relay-views") for r in chunk)]
    seals = sum(1 for chunk in chunks for r in chunk if r.topic.endswith(".seals"))
    assert seals > 10 and len(with_views) >= seals * 3 // 4  # a chunk per block with views (some have none)
    assert all(chunk[-1].topic.endswith(".relay-views") for chunk in with_views)
    assert all(len(chunk) <= CHUNK_ROWS + 200 for chunk in chunks)
    flat = [r for chunk in chunks for r in chunk]
    assert flat == relay_rows("polkadot", rows, MemoryBackend(), CONFIG, KEY)


def test_the_spark_adapters_carry_rows_in_unchanged_and_a_summary_out() -> None:
    """Input DataFrames -> ConsumerRecord (nulls, bytes, ints); what a stage wrote -> its summary DataFrame
    (OUTPUT_SCHEMA): records per topic, a row per seal with its height."""
    import pandas as pd

    from streaming.operators import BatchSummary, _kafka_rows

    frame = pd.DataFrame({"realm": ["r", "r"], "topic": ["r.blocks", "r.calls"], "partition": [1, 0],
                          "offset": [7, 2**40], "key": [None, b"k"], "value": [b"v", None]})
    assert _kafka_rows(iter([frame, frame.iloc[:1]])) == [
        ConsumerRecord("r.blocks", 1, 7, None, b"v"), ConsumerRecord("r.calls", 0, 2**40, b"k", None),
        ConsumerRecord("r.blocks", 1, 7, None, b"v")]
    summary = BatchSummary()
    summary.add([_record("r.events", b"5", b'{"a":1}', "id/5"), _record("r.seals", b"12", b"{}", "s/12")])
    summary.add([_record("r.events", b"6", b"{}", "id/6"), _record("r.relay-views", b"6", b"{}", "v"),
                 _record("r.seals", b"13", b"{}", "s/13")])
    out = summary.frame()
    assert out.to_dict("records") == [
        {"topic": "r.events", "key": None, "records": 2}, {"topic": "r.relay-views", "key": None, "records": 1},
        {"topic": "r.seals", "key": "12", "records": 1}, {"topic": "r.seals", "key": "13", "records": 1}]
    assert str(out["records"].dtype) == "int64"


class ListWriter:
    """Records kept in memory in write order, deliveries counted (the Kafka writer's contract, without Kafka)."""

    def __init__(self) -> None:
        self.records: list[ProducerRecord] = []
        self.flushes: list[int] = []

    def write(self, records: Iterable[ProducerRecord]) -> None:
        self.records += records

    def flush(self) -> None:
        self.flushes.append(len(self.records))


def test_a_stage_writes_every_record_before_it_hands_spark_the_summary() -> None:
    """``relay_frames`` writes each chunk as it is made, delivers all before its one summary frame, and the
    records written are ``relay_rows``' (same order, id carried)."""
    from streaming.operators import _frames, page_backend, relay_chunks, seam_record
    from streaming.spans import OperatorSpans, SpanClock, TimedState

    rows, _ = kafka_inputs((EXAMPLES / "busy.jsonl").read_bytes().splitlines())
    writer = ListWriter()
    pages = Pages()
    state = TimedState(pages)
    backend = page_backend(state)
    clock = SpanClock("relay", "polkadot", state)
    chunks = relay_chunks("polkadot", rows, backend, CONFIG, lambda view: [seam_record(view, KEY)])
    frames = _frames("relay", "polkadot", chunks, backend.flush, writer, clock)
    summaries = list(frames)
    expected = relay_rows("polkadot", rows, MemoryBackend(), CONFIG, KEY)
    assert writer.records == expected
    assert writer.flushes == [len(expected)]
    assert pages  # the state pages were written before the summary
    assert len(summaries) == 1
    frame = summaries[0]
    counted = frame[frame["topic"] != "polkadot.spans"].groupby("topic")["records"].sum().to_dict()
    assert counted == {t: sum(1 for r in expected if r.topic == t) for t in {r.topic for r in expected}}
    spans = OperatorSpans.from_json(frame[frame["topic"] == "polkadot.spans"]["key"].item())
    assert (spans.stage, spans.group, spans.pid) == ("relay", "polkadot", os.getpid())
    assert spans.start <= spans.end
    assert spans.protocol > 0 and spans.state_write > 0 and spans.state_read > 0


def test_the_fused_frames_keep_each_subscriber_s_pages_apart_from_the_realm_s() -> None:
    """``fused_frames`` writes ``fused_rows``' records; the realm's pages are Stage R's alone (the same as the split
    job's relay pages), and each subscriber's store lives under its own ``<subscriber>/`` namespaces."""
    from streaming.operators import fused_frames, relay_frames
    import pandas as pd

    lines = (EXAMPLES / "small.jsonl").read_bytes().splitlines()
    rows, _ = kafka_inputs(lines)
    frame = pd.DataFrame({"topic": [r.topic for r in rows], "partition": [r.partition for r in rows],
                          "offset": [r.offset for r in rows], "key": [r.key for r in rows],
                          "value": [r.value for r in rows]})
    writer, pages, subscriber_pages = ListWriter(), Pages(), Pages()
    summary = list(fused_frames("polkadot", iter([frame]), pages, subscriber_pages, CONFIG, writer))
    subscribers: dict[int, MemoryBackend] = {}
    assert writer.records == fused_rows("polkadot", rows, MemoryBackend(), CONFIG,
                                        lambda n: subscribers.setdefault(n, MemoryBackend()))
    assert summary[0]["records"].sum() > 0
    relay_pages = Pages()
    list(relay_frames("polkadot", iter([frame]), relay_pages, CONFIG, KEY, ListWriter()))
    assert pages == relay_pages
    owners = {str(namespace).partition("/")[0] for namespace, _ in subscriber_pages}
    assert owners == {str(n) for n in subscribers} and len(owners) >= 2


def test_timed_state_passes_every_call_through_and_counts_its_time() -> None:
    """The pages the backend sees through ``TimedState`` are the MapState's own: same values, same writes."""
    from streaming.spans import TimedState

    pages = Pages()
    timed = TimedState(pages)
    timed.updateValue(("a", 1), (b"x",))
    timed.updateValue(("b", 2), (b"y",))
    timed.removeKey(("b", 2))
    assert timed.getValue(("a", 1)) == (b"x",) and timed.getValue(("b", 2)) is None
    assert pages == {("a", 1): (b"x",)}
    assert timed.seconds > 0


def test_stage_r_takes_a_batch_s_genesis_first_and_its_blocks_last() -> None:
    """Any topic order gives the same outputs; this one spares work: nothing is held for a genesis that is
    in the same batch, and a block finds the records of the batch already buffered."""
    from streaming.operators import feed_order

    names = ["blocks", "upward", "genesis", "extrinsics", "horizontal"]
    rows = [ConsumerRecord(f"polkadot.{name}", partition, offset, None, b"")
            for name in names for partition in (1, 0) for offset in (5, 2)]
    random.Random(7).shuffle(rows)
    ordered = sorted(rows, key=feed_order)
    assert [row.topic.rpartition(".")[2] for row in ordered][::4] == [
        "genesis", "upward", "horizontal", "extrinsics", "blocks"]
    assert [(row.partition, row.offset) for row in ordered[:4]] == [(0, 2), (0, 5), (1, 2), (1, 5)]


def test_the_operators_module_loads_no_signing_library() -> None:
    """Every Python worker of the job, and the driver's pre-init worker at each query start, imports this module;
    pycryptodome (signing only: producers and tests) cost each of them 45-60 ms to load."""
    import subprocess
    import sys

    code = "import sys, streaming.operators; print(sorted({m.split('.')[0] for m in sys.modules} & {'Crypto'}))"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == "[]"


def _rows(*topics: str) -> list[ProducerRecord]:
    return [_record(topic, b"k", bytes(10 * (i + 1)), f"id/{i}") for i, topic in enumerate(topics)]


def test_seam_records_wait_for_the_end_of_the_batch_in_their_order() -> None:
    first = _rows("polkadot.events", "polkadot.relay-views", "polkadot.seals", "polkadot.relay-views")
    second = _rows("polkadot.relay-views", "polkadot.events")
    out = list(seam_last([first, second]))
    views = [r for r in first + second if r.topic == "polkadot.relay-views"]
    assert out == [[first[0], first[2]], [second[1]], views]


def test_seam_records_go_out_once_they_pass_the_hold() -> None:
    chunks = [_rows("polkadot.relay-views", "polkadot.events"), _rows("polkadot.relay-views", "polkadot.relay-views"),
              _rows("polkadot.relay-views")]
    out = list(seam_last(chunks, hold_bytes=25))
    # 10 bytes held after the first chunk; the second brings 10 + 20 more, past 25: all 40 go out with it
    assert out == [[chunks[0][1]], [chunks[0][0], *chunks[1]], chunks[2]]
    assert sorted(str(r.id) for chunk in out for r in chunk) == sorted(str(r.id) for chunk in chunks for r in chunk)
