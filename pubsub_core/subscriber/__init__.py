"""The subscriber half of RFC-0160: subscriptions, collator-side Prune, runtime-side Verify, budget and metering.

Per relay block a driver (simulator or Spark job) calls ``pubsub_budget`` for the budget, ``collate`` on the
collator side for the proof, then ``process_relay_proof`` on the runtime side for the outcome. See
docs/subscriber.md.
"""

from pubsub_core.codec.types import SubscribedKey, TtlKind, TtlState
from pubsub_core.subscriber.budget import Budget, pubsub_budget
from pubsub_core.subscriber.calls import (
    AdminCall,
    ClearPublisherCache,
    EnablePublisher,
    GovernanceCall,
    SetSubscriptions,
    SubscriberCall,
    check_subscription_limits,
    decode_subscriber_call,
    subscriber_of,
)
from pubsub_core.subscriber.block import AppliedBlock, NodesByHash, process_relay_state
from pubsub_core.subscriber.collator import collate, prune
from pubsub_core.subscriber.config import AdminOrigin, SubscriberConfig
from pubsub_core.subscriber.engine import (
    EMPTY_ROOT,
    BlockContext,
    DisableReason,
    RelaySource,
    Subscriptions,
    child_storage_key,
    prefixed_child_storage_key,
)
from pubsub_core.subscriber.errors import (
    CheatingCollatorError,
    CheatingReason,
    NoCachedNodesError,
    PublisherNotDisabledError,
    RelayStateError,
    SubscriberCallError,
    SubscriberConfigError,
    SubscriberError,
    SubscriptionError,
)
from pubsub_core.subscriber.meter import Weight, WeightMeter
from pubsub_core.subscriber.pallet import (
    RelayStorageKey,
    cached_nodes,
    clear_publisher_cache,
    declared_subscriptions,
    disabled_publishers,
    enable_publisher,
    previous_root,
    processing_cursor,
    relay_keys,
    set_subscriptions,
    subscribed_key,
)
from pubsub_core.subscriber.runtime import SubscriptionHandler, process_relay_proof
from pubsub_core.subscriber.types import (
    BlockOutcome,
    EventKind,
    PalletEvent,
    PovRecord,
    ProcessingResult,
    RelayProof,
    Update,
    UpdateKind,
)

__all__ = [
    "AdminCall",
    "AdminOrigin",
    "AppliedBlock",
    "ClearPublisherCache",
    "EnablePublisher",
    "GovernanceCall",
    "SetSubscriptions",
    "SubscriberCall",
    "SubscriberCallError",
    "check_subscription_limits",
    "decode_subscriber_call",
    "subscriber_of",
    "EMPTY_ROOT",
    "BlockContext",
    "BlockOutcome",
    "Budget",
    "CheatingCollatorError",
    "CheatingReason",
    "DisableReason",
    "EventKind",
    "NoCachedNodesError",
    "NodesByHash",
    "PalletEvent",
    "PovRecord",
    "ProcessingResult",
    "PublisherNotDisabledError",
    "RelayProof",
    "RelaySource",
    "RelayStateError",
    "RelayStorageKey",
    "SubscribedKey",
    "SubscriberConfig",
    "SubscriberConfigError",
    "SubscriberError",
    "SubscriptionError",
    "SubscriptionHandler",
    "Subscriptions",
    "TtlKind",
    "TtlState",
    "Update",
    "UpdateKind",
    "Weight",
    "WeightMeter",
    "cached_nodes",
    "child_storage_key",
    "clear_publisher_cache",
    "collate",
    "declared_subscriptions",
    "disabled_publishers",
    "enable_publisher",
    "prefixed_child_storage_key",
    "previous_root",
    "process_relay_proof",
    "process_relay_state",
    "processing_cursor",
    "prune",
    "pubsub_budget",
    "relay_keys",
    "set_subscriptions",
    "subscribed_key",
]
