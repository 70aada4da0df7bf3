"""The protocol's two streaming stages, shared by the one-process simulator and the Spark job.

``RelayStage`` (Stage R, keyed by realm) buffers input records until a block includes them, applies blocks in
order and emits one ``RelayView`` per subscriber per block; ``SubscriberStage`` (Stage S, keyed by realm and
subscriber) applies each view once, in order. Both keep everything in their ``state`` backend. See
docs/simulator.md and docs/pipeline.md.
"""

from pubsub_core.stages.config import ConfigError, ProtocolConfig
from pubsub_core.stages.edge import ConsumerRecord, ProducerRecord
from pubsub_core.stages.errors import IngestError, StageError
from pubsub_core.stages.ingest import LineParser, decode_record, ingest_record
from pubsub_core.stages.records import (
    GenesisRecord,
    LogRecord,
    OutputRecord,
    RelayView,
    SubscriberCallFailed,
    decode_value,
    split_topic,
)
from pubsub_core.stages.relay_stage import RelayStage, RelayStep
from pubsub_core.stages.subscriber_stage import SubscriberStage

__all__ = [
    "ConfigError",
    "ConsumerRecord",
    "GenesisRecord",
    "IngestError",
    "LineParser",
    "LogRecord",
    "OutputRecord",
    "RelayStage",
    "RelayStep",
    "RelayView",
    "ProducerRecord",
    "ProtocolConfig",
    "StageError",
    "SubscriberCallFailed",
    "SubscriberStage",
    "decode_record",
    "decode_value",
    "ingest_record",
    "split_topic",
]
