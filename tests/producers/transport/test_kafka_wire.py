"""The pure parts of the Kafka edge: the output wire format, event-log routing, topic configs and client limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from producers.transport.kafka_io import route_event_log
from pubsub_core.stages.edge import ConsumerRecord, ProducerRecord, output_line, to_kafka
from producers.transport.topics import (
    TopicError,
    TopicKind,
    consumer_config,
    producer_config,
    realm_is_valid,
    realm_topic_specs,
    record_fits,
    topic_config,
)
from pubsub_core.simulator import Simulator
from pubsub_core.stages import LineParser, OutputRecord, ProtocolConfig
from pubsub_core.stages.limits import MAX_INPUT_BYTES, MAX_MESSAGE_BYTES, RECORD_OVERHEAD

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


class FakeSettings:
    def kafka_client_config(self) -> dict[str, str]:
        return {"bootstrap.servers": "127.0.0.1:9"}


def consumed(record: ProducerRecord) -> ConsumerRecord:
    """What a consumer gets back for a produced record."""
    return ConsumerRecord(record.topic, 0, 0, record.key, record.value, record.headers)


def test_an_output_record_survives_the_wire_byte_for_byte() -> None:
    outputs = _simulate((EXAMPLES / "minimal.jsonl").read_text().splitlines())
    assert len(outputs) > 10
    for output in outputs:
        wire = to_kafka(output)
        assert wire.key == output.key.encode() and wire.headers == (("id", output.id.encode()),)
        assert output_line(consumed(wire)) == output.to_line()


def test_a_record_without_id_header_or_json_value_is_printed_not_refused() -> None:
    bare = ConsumerRecord("r.updates", 0, 3, None, b"not json", ())
    assert json.loads(output_line(bare)) == {"id": None, "key": None, "topic": "r.updates", "value": "not json"}
    binary = ConsumerRecord("r.updates", 1, 4, b"\xff", None, (("other", b"x"), ("id", b"a")))
    assert json.loads(output_line(binary)) == {"id": "a", "key": "\ufffd", "topic": "r.updates", "value": None}
    raw = json.loads(binary.to_json())
    assert (raw["partition"], raw["offset"], raw["id"]) == (1, 4, "a")


def test_routing_numbers_lines_per_topic_and_skips_blank_lines() -> None:
    lines = [b'{"topic":"r.upward","key":"1","value":{"a":1}}\n', b"\n", b"  \r\n",
             b'{"topic":"r.blocks","key":"author","value":"{\\"b\\": 2}"}\r\n',
             b'{"topic":"r.upward","key":"2","value":{"a":2}}']
    routed = list(route_event_log(lines, LineParser("r")))
    assert routed == [
        (ProducerRecord("r.upward", b"1", b'{"a":1}'), 0),
        (ProducerRecord("r.blocks", b"author", b'{"b": 2}'), 0),
        (ProducerRecord("r.upward", b"2", b'{"a":2}'), 1),
    ]


def test_unroutable_lines_give_the_simulators_rejections() -> None:
    lines = ['{"topic": "r.upward", ', '{"key": "k", "value": 1}', '{"topic": "r.nope", "key": "k", "value": 1}',
             '[1, 2]', '{"topic": "r.nope", "key": 5, "value": 1}']  # the last: a key must be text
    got = [item for item in route_event_log([line.encode() for line in lines], LineParser("r"))
           if isinstance(item, OutputRecord)]
    simulator = Simulator(ProtocolConfig(default_realm="r"))
    expected = [o for line in lines for o in simulator.feed_line(line) if o.id.startswith("ingest/")]
    assert [o.to_line() for o in got] == [o.to_line() for o in expected]
    assert [o.id for o in got] == [f"ingest/line-{n}" for n in range(1, 6)]  # the file's line numbers


def test_a_line_that_is_not_utf8_is_refused_and_named_by_its_line_number() -> None:
    lines = [b"not json", b"\n", b'{"topic":"r.upward","key":"\xff","value":"a"}', b"[]"]
    got = list(route_event_log(lines, LineParser("r")))
    rejected = [item for item in got if isinstance(item, OutputRecord)]
    assert len(rejected) == len(got) == 3
    assert [o.id for o in rejected] == ["ingest/line-1", "ingest/line-3", "ingest/line-4"]  # the blank line 2 counts
    assert rejected[1].topic == "r.rejected" and rejected[1].value["reason"] == "MalformedJson"
    assert "not UTF-8" in str(rejected[1].value["detail"])


def test_input_topics_keep_everything_and_have_one_partition() -> None:
    specs = {spec.name: spec for spec in realm_topic_specs("r", partitions=3)}
    assert list(specs) == ["r.genesis", "r.upward", "r.horizontal", "r.extrinsics", "r.blocks", "r.author-state",
                           "r.updates", "r.events", "r.rejected", "r.pov", "r.seals", "r.health", "r.relay-views"]
    for name in ("r.genesis", "r.blocks"):
        assert specs[name].partitions == 1 and specs[name].config["retention.ms"] == "-1"
    assert specs["r.updates"].partitions == 3 and "retention.ms" not in specs["r.updates"].config
    state = specs.pop("r.author-state")
    assert state.partitions == 1 and state.config["cleanup.policy"] == "compact"
    for spec in specs.values():
        assert spec.config["max.message.bytes"] == str(MAX_MESSAGE_BYTES)
        assert spec.config["compression.type"] == "producer" and spec.config["cleanup.policy"] == "delete"
    assert topic_config(TopicKind.SEAM, 1234)["max.message.bytes"] == "1234"
    assert [s.name for s in realm_topic_specs("r", outputs=False, seam=False)] == [*list(specs)[:5], "r.author-state"]
    with pytest.raises(TopicError, match="partitions"):
        realm_topic_specs("r", partitions=0)


def test_the_ceiling_leaves_room_for_a_capped_record_and_its_json() -> None:
    assert MAX_MESSAGE_BYTES >= 2 * MAX_INPUT_BYTES
    limit = 10_000
    assert record_fits(b"k", b"v" * (limit - RECORD_OVERHEAD - 1), (), limit)
    assert not record_fits(b"k", b"v" * (limit - RECORD_OVERHEAD), (), limit)
    assert not record_fits(None, b"v" * (limit - RECORD_OVERHEAD - 3), (("id", b"xx"),), limit)


def test_clients_are_configured_for_records_up_to_the_ceiling() -> None:
    producer = producer_config(FakeSettings())
    assert producer["message.max.bytes"] == str(MAX_MESSAGE_BYTES)
    assert (producer["enable.idempotence"], producer["acks"], producer["compression.type"]) == ("true", "all", "zstd")
    consumer = consumer_config(FakeSettings(), "g")
    assert int(consumer["max.partition.fetch.bytes"]) > MAX_MESSAGE_BYTES
    assert int(consumer["fetch.max.bytes"]) >= int(consumer["max.partition.fetch.bytes"])
    assert int(consumer["receive.message.max.bytes"]) >= int(consumer["fetch.max.bytes"]) + 512
    assert consumer["bootstrap.servers"] == "127.0.0.1:9" and consumer["enable.auto.commit"] == "false"


def test_a_realm_must_name_legal_kafka_topics() -> None:
    assert realm_is_valid("polkadot") and realm_is_valid("a.b-c_d")
    assert not realm_is_valid("bad realm") and not realm_is_valid("r/x") and not realm_is_valid("x" * 240)


def _simulate(lines: list[str]) -> list[OutputRecord]:
    simulator = Simulator()
    outputs = [o for line in lines for o in simulator.feed_line(line)]
    return outputs + simulator.finish()
