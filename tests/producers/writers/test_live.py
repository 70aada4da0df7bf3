"""Pure parts of live operation: pacing math, the live source through the simulator, the resume rule, the
follow dedup window and row format, and export's line form and ordering."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from producers.readers.export import export_line, interleave
from producers.readers.follow import SeenWindow, short_hex, short_value, update_row
from producers.writers.author import AuthorLimits, Inclusion
from producers.writers.author_state import AuthorSnapshot
from pubsub_core.stages.edge import ConsumerRecord
from producers.writers.live import (LiveRateError, LiveSource, LiveSpec, Pacer, Pacing, ResumePoint, resume_point,
                            snapshot_resume_point)
from producers.workload import WorkloadSpec, signer
from pubsub_core.envelope import Topic
from pubsub_core.relay import InputRecord, canonical_json
from pubsub_core.simulator import Simulator


def test_pacing_packs_publishes_only_when_the_per_para_cap_needs_it() -> None:
    assert Pacing.plan(4.0, publishers=3, keys=6) == Pacing(1, 0.25)  # 3 paras x 8 / 6 s = 4 messages/s
    assert Pacing.plan(10.0, publishers=3, keys=6) == Pacing(3, 0.3)
    assert Pacing.plan(24.0, publishers=3, keys=6) == Pacing(6, 0.25)
    with pytest.raises(LiveRateError) as raised:
        Pacing.plan(25.0, publishers=3, keys=6)
    assert raised.value.limit == 24.0 and raised.value.items_per_message == 6
    assert Pacing.plan(60.0, publishers=1, keys=50, block_time=2.0) == Pacing(15, 0.25)  # 4 messages/s
    with pytest.raises(LiveRateError):
        Pacing.plan(65.0, publishers=1, keys=50, block_time=2.0)  # 16 publishes per message at most


def test_the_pacer_keeps_a_steady_schedule_and_never_bursts_to_catch_up() -> None:
    pacer = Pacer(0.5, start=10.0)
    assert pacer.delay(10.0) == 0.0
    pacer.sent(10.0)
    assert pacer.delay(10.2) == pytest.approx(0.3)
    pacer.sent(10.5)  # on time: due at 11.0
    assert pacer.delay(10.5) == pytest.approx(0.5)
    pacer.sent(13.0)  # 2 s late: the schedule restarts from now instead of sending 4 at once
    assert pacer.due == 13.0 and pacer.delay(13.0) == 0.0


def test_live_records_with_blocks_give_updates_and_no_rejection() -> None:
    source = LiveSource(LiveSpec(WorkloadSpec(seed=3), rate=10.0))
    lines, counts = source.setup()
    assert counts == Counter({"genesis": 1, "registrations": 2, "subscriptions": 2})
    publishes = Counter[str]()
    for _ in range(4):
        for _ in range(12):  # 4 messages per para per block: within the cap of 8
            line, items = source.next_message()
            lines.append(line)
            publishes[json.loads(line)["key"]] += items
        source.log.block()
        lines += source.log.lines
        source.log.lines = []
    assert publishes == {"1000": 48, "2000": 48, "2001": 48}
    simulator = Simulator()
    outputs = [o for line in lines for o in simulator.feed_line(line)] + simulator.finish()
    kinds = Counter(o.topic.rpartition(".")[2] for o in outputs)
    assert kinds["rejected"] == 0 and kinds["seals"] == 4 and kinds["updates"] > 0


def _consumed(topic: str, origin: str, record: InputRecord, offset: int, timestamp: int | None = None) -> ConsumerRecord:
    return ConsumerRecord(topic, 0, offset, origin.encode(), canonical_json(record.to_json()).encode(),
                          timestamp=timestamp)


def test_resume_follows_stage_r_so_forgeries_and_replays_do_not_move_it() -> None:
    source = LiveSource(LiveSpec(WorkloadSpec(seed=4, publishers=0, subscribers=0), rate=1.0))
    source.setup()
    genuine = [source.log.publish(1000, source.cast.collators[1000], [(bytes(32), b"v", 0)]) for _ in range(3)]
    forged = signer("intruder").sign(Topic("polkadot", "upward", "1000"), 99, b"x").encode()
    topic = "polkadot.upward"
    records = [_consumed(topic, "1000", r, i) for i, r in enumerate(genuine)]
    records.append(_consumed(topic, "1000", InputRecord("upward", "1000", 50, forged), 3))
    records.append(_consumed(topic, "1000", InputRecord("upward", "1000", 60, genuine[2].value), 4))
    records.append(_consumed(topic, "1000", InputRecord("upward", "1000", 70, b"\x00"), 5))
    point = resume_point(records, "polkadot", source.genesis.registry, source.origins)
    key = source.cast.collators[1000].public_key
    assert point.positions == {("upward", "1000"): 3}
    assert point.seqnos == {("upward", "1000", key): 3}

    resumed = LiveSource(LiveSpec(WorkloadSpec(seed=4, publishers=0, subscribers=0), rate=1.0),
                         ResumePoint(source.genesis, point.positions, point.seqnos))
    assert resumed.setup() == ([], Counter())  # the genesis is there, nothing else to set up
    record = json.loads(resumed.next_message()[0])["value"]
    assert record["position"] == 3


def test_the_seen_window_drops_copies_and_forgets_the_oldest() -> None:
    window = SeenWindow(capacity=2)
    assert [window.add(x) for x in (b"a", b"b", b"a")] == [True, True, False]
    assert window.add(b"c") and len(window) == 2
    assert window.add(b"a")  # forgotten: "a" was the oldest when "c" came
    with pytest.raises(ValueError):
        SeenWindow(0)


def test_an_update_row_is_short_and_readable() -> None:
    value = {"subscriber": 3000, "relay_block_number": 7, "publisher": 1000, "key": "d4bd7bc16ef21ab0" * 4,
             "value": b"42".hex(), "kind": "set"}
    assert update_row(value) == ("3000", "7", "1000", "d4bd7bc1…", "'42'", "set")
    assert short_value("00ff" * 20) == "00ff00ff00ff00ff… (40 B)"
    assert short_value("") == "-" and short_value("0x3432") == "'42'" and short_hex("0x" + "ab" * 32) == "abababab…"


def test_export_lines_keep_the_bytes_produce_will_send() -> None:
    def line(value: bytes | None, key: bytes | None = b"2000") -> tuple[dict[str, object], bool]:
        text, lossy = export_line(ConsumerRecord("r.upward", 0, 0, key, value))
        return json.loads(text), lossy

    assert line(b'{"a":1}') == ({"topic": "r.upward", "key": "2000", "value": {"a": 1}}, False)
    assert line(b'{"a": 1}')[0]["value"] == '{"a": 1}'  # not canonical: kept as its text
    assert line(b'"abc"')[0]["value"] == '"abc"'  # a JSON string would be sent without its quotes
    assert line(b"not json")[0]["value"] == "not json"
    assert line(b"\xff")[1] and line(None)[1]
    assert line(b"{}", key=None)[0]["key"] is None


def test_export_interleaves_by_timestamp_then_topic_then_offset_and_keeps_each_topic_in_order() -> None:
    def rec(stream: str, offset: int, timestamp: int) -> ConsumerRecord:
        return ConsumerRecord(f"r.{stream}", 0, offset, None, b"{}", timestamp=timestamp)

    blocks = [rec("blocks", 0, 5), rec("blocks", 1, 5)]
    upward = [rec("upward", 0, 5), rec("upward", 1, 9), rec("upward", 2, 1)]  # a late clock on offset 2
    genesis = [rec("genesis", 0, 7)]
    merged = [(r.topic, r.offset) for r in interleave([blocks, upward, genesis])]
    assert merged == [("r.upward", 0), ("r.blocks", 0), ("r.blocks", 1), ("r.genesis", 0), ("r.upward", 1),
                      ("r.upward", 2)]


@pytest.mark.parametrize("cut", [0, 2, 5, 9, 14, 17])
def test_resuming_from_the_authors_snapshot_gives_the_point_a_whole_history_gives(cut: int) -> None:
    """The records up to ``cut`` are in the author's snapshot (its pure Inclusion fed them, a block included what it
    could), the rest scanned after it: the resume point equals ``resume_point`` over every record, forgeries, a
    replay and a position conflict included."""
    source = LiveSource(LiveSpec(WorkloadSpec(seed=4, publishers=0, subscribers=0), rate=1.0))
    source.setup()
    key = source.cast.collators[1000]
    topic = "polkadot.upward"
    records: list[ConsumerRecord] = []
    for i in range(6):
        genuine = source.log.publish(1000, key, [(bytes([i]) * 32, b"v", 0)])
        records.append(_consumed(topic, "1000", genuine, len(records)))
        forged = signer("intruder").sign(Topic("polkadot", "upward", "1000"), 99, b"x").encode()
        records.append(_consumed(topic, "1000", InputRecord("upward", "1000", genuine.position + 1, forged),
                                 len(records)))
        if i % 2:
            replay = InputRecord("upward", "1000", genuine.position + 1, genuine.value)
            records.append(_consumed(topic, "1000", replay, len(records)))
    clash = key.sign(Topic("polkadot", "upward", "1000"), 40, b"y").encode()
    records.append(_consumed(topic, "1000", InputRecord("upward", "1000", 1, clash), len(records)))
    registry = source.genesis.registry
    inclusion = Inclusion("polkadot", registry)
    for record in records[:cut]:
        inclusion.arrive(record.topic, record.key, record.value, record.offset)
    inclusion.mark_included({(s, o): p for s, o, p in inclusion.plan(AuthorLimits(max_records=2)).manifest})
    snapshot = AuthorSnapshot(1, bytes(32), 0, {}, dict(inclusion.included), dict(inclusion.received),
                              {slot: dict(p) for slot, p in inclusion.buffered.items()}, {"upward": cut})
    start = snapshot_resume_point(snapshot, source.origins)
    resumed = resume_point(records[cut:], "polkadot", registry, source.origins, start)
    whole = resume_point(records, "polkadot", registry, source.origins)
    assert whole.positions == {("upward", "1000"): 6} and whole.seqnos == {("upward", "1000", key.public_key): 40}
    assert (resumed.positions, resumed.seqnos) == (whole.positions, whole.seqnos)
