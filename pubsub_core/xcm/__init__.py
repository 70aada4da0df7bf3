"""XCM for RFC-0160: a v5 message subset with ``Publish`` (0x34), barriers, and an executor."""

from pubsub_core.xcm.barriers import (
    AllowPublishFrom,
    AllowTopLevelPaidExecutionFrom,
    Barrier,
    BarrierChain,
    BarrierPass,
    Equals,
    Everything,
    OnlyParachains,
    OriginFilter,
)
from pubsub_core.xcm.errors import (
    BarrierRefused,
    BarrierRejected,
    ExecutionError,
    ProcessMessageError,
    XcmDecodeError,
    XcmError,
    XcmErrorCode,
)
from pubsub_core.xcm.executor import ExecutorConfig, XcmExecutor, XcmOutcome, location_to_account, sovereign_account
from pubsub_core.xcm.types import Location, Publish, Weight, Xcm, decode_versioned_xcm, encode_versioned_xcm

__all__ = [
    "AllowPublishFrom",
    "AllowTopLevelPaidExecutionFrom",
    "Barrier",
    "BarrierChain",
    "BarrierPass",
    "BarrierRefused",
    "BarrierRejected",
    "Equals",
    "Everything",
    "ExecutionError",
    "ExecutorConfig",
    "Location",
    "OnlyParachains",
    "OriginFilter",
    "ProcessMessageError",
    "Publish",
    "Weight",
    "XcmDecodeError",
    "XcmError",
    "XcmErrorCode",
    "XcmExecutor",
    "XcmOutcome",
    "Xcm",
    "decode_versioned_xcm",
    "encode_versioned_xcm",
    "location_to_account",
    "sovereign_account",
]
