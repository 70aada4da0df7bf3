"""Stage S's stored state, declared in one place: the namespaces of one subscriber's store and the format's
version history (``SUBSCRIBER_STATE``).

The store holds the subscriber pallet's state (``pubsub_core.subscriber.storage``: ``subscriber.*``, with a
keys, cache and refs namespace per publisher followed), the views Stage S applied and those waiting for their
predecessor (``LAST_VIEW``, ``VIEW_DIGESTS``, ``PARKED_VIEWS``) and its mirror of the relay nodes the views sent
(``RELAY_MIRROR`` and its counters). Versions: 1 is release 0.1.0's (no marker); 2 is the same layout with its
version in ``stage.Format``. A change to any of these namespaces, keys or values is a new version with its
migration in ``SUBSCRIBER_STATE``.
"""

from __future__ import annotations

from typing import Final

from state import StateTransaction
from state.formats import StoredFormat

from pubsub_core.release import RELEASE
from pubsub_core.subscriber import storage

__all__ = ["LAST_VIEW", "NAMESPACES", "PARKED_VIEWS", "RELAY_MIRROR", "RELAY_MIRROR_COUNT", "RELAY_MIRROR_MARK",
           "SUBSCRIBER_STATE", "VIEW_DIGESTS"]

FORMAT: Final = "stage.Format"
"""Value: the format version and the release that wrote it (``state.formats.Version``)."""
LAST_VIEW: Final = "stage.LastView"  # value: u64 BE block number of the last view applied
VIEW_DIGESTS: Final = "stage.ViewDigests"  # u64 BE block number -> 32-byte digest of the view's seam layout
PARKED_VIEWS: Final = "stage.ParkedViews"  # u64 BE predecessor + 1 (0: none) -> digest ‖ view JSON
RELAY_MIRROR: Final = "stage.RelayMirror"  # 32-byte Blake2-256 -> relay node
RELAY_MIRROR_COUNT: Final = "stage.RelayMirrorCount"  # value: u64 BE, nodes in the mirror
RELAY_MIRROR_MARK: Final = "stage.RelayMirrorMark"  # value: u64 BE, nodes after the last collection or full view

NAMESPACES: Final = (LAST_VIEW, VIEW_DIGESTS, PARKED_VIEWS, RELAY_MIRROR, RELAY_MIRROR_COUNT, RELAY_MIRROR_MARK,
                     storage.ROOTS, storage.DISABLED, storage.CURSOR, storage.KNOWN, storage.PROGRESS,
                     storage.DECLARED)
"""The fixed namespaces (besides the per-publisher ``storage.keys_ns``, ``cache_ns`` and ``refs_ns``)."""


def _v1_to_v2(txn: StateTransaction) -> None:
    """Version 1 (release 0.1.0) to 2: the layout is unchanged; only the marker is new (written by the caller)."""


SUBSCRIBER_STATE: Final = StoredFormat("Stage S state", 2, RELEASE, FORMAT, {1: _v1_to_v2})
"""Stage S's state format: ``SubscriberStage`` opens its backend with it (migrates an older one, refuses a newer)."""
