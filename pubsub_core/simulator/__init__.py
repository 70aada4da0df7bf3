"""The whole protocol over an event log, in one process: Stage R (relay chain) and Stage S (subscribers).

``simulate(lines, config)`` yields output records (updates, pallet events, rejections, PoV metering, block
seals) for JSON-lines input; ``RelayStage`` and ``SubscriberStage`` are the two stages the Spark job keys by
realm and by realm + subscriber, with ``RelayView`` between them. See docs/simulator.md.
"""

from pubsub_core.simulator.calls import (
    ClearPublisherCache,
    EnablePublisher,
    SetSubscriptions,
    SubscriberCall,
    decode_subscriber_call,
)
from pubsub_core.simulator.config import ConfigError, SimulatorConfig
from pubsub_core.simulator.errors import IngestError, SimulatorError, SubscriberCallError
from pubsub_core.simulator.records import (
    GenesisRecord,
    LogRecord,
    OutputRecord,
    RelayView,
    SimOutcome,
    SubscriberCallFailed,
)
from pubsub_core.simulator.relay_stage import RelayStage, RelayStep
from pubsub_core.simulator.simulator import Simulator, simulate
from pubsub_core.simulator.subscriber_stage import SubscriberStage

__all__ = [
    "ClearPublisherCache",
    "ConfigError",
    "EnablePublisher",
    "GenesisRecord",
    "IngestError",
    "LogRecord",
    "OutputRecord",
    "RelayStage",
    "RelayStep",
    "RelayView",
    "SetSubscriptions",
    "SimOutcome",
    "SimulatorConfig",
    "Simulator",
    "SimulatorError",
    "SubscriberCall",
    "SubscriberCallError",
    "SubscriberCallFailed",
    "SubscriberStage",
    "decode_subscriber_call",
    "simulate",
]
