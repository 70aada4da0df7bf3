"""Errors of the broadcaster pallet and its balances ledger; each carries the offending data.

``code`` is the variant name and ``index`` the SCALE index of the reference code's pallet ``Error`` enum (its
``broadcaster/mod.rs`` order; where the pub-sub spec names an error differently, the spec's name sits at the
code's index; docs/design.md, "Sources").
"""

from __future__ import annotations

from pubsub_core.errors import PubSubError

__all__ = [
    "AlreadyRegistered",
    "BalancesError",
    "BroadcasterError",
    "ERROR_INDEX",
    "InsufficientBalance",
    "NoDataToCleanup",
    "NoKeysToDelete",
    "NotAuthorized",
    "NotRegistered",
    "TooManyKeys",
    "TooManyPublishers",
    "TotalStorageSizeExceeded",
    "ValueTooLarge",
]

ERROR_INDEX: dict[str, int] = {
    "TooManyPublishItems": 0,
    "ValueTooLarge": 1,
    "TooManyKeys": 2,
    "TotalStorageSizeExceeded": 3,
    "TooManyPublishers": 4,
    "NotRegistered": 5,
    "AlreadyRegistered": 6,
    "PublishNotAuthorized": 7,
    "NotAuthorized": 8,
    "MustCleanupDataFirst": 9,
    "NoDataToCleanup": 10,
    "EmptyPublish": 11,
    "NoKeysToDelete": 12,
}
"""Every index of the pallet's ``Error`` enum. Indices 0, 7, 9 and 11 exist upstream but are never raised here:
0 and 11 belong to the multi-item publish, 7 is replaced by the spec's ``NotRegistered``, 9 by one-step
deregistration (docs/decisions.md)."""


class BroadcasterError(PubSubError):
    """Base class of the pallet's errors; ``para_id`` is the publisher concerned."""

    code = "BroadcasterError"

    def __init__(self, para_id: int, message: str) -> None:
        super().__init__(f"{self.code}: {message}")
        self.para_id = para_id

    @property
    def index(self) -> int:
        """The SCALE index of this error in the pallet's ``Error`` enum."""
        return ERROR_INDEX[self.code]

    def encode(self) -> bytes:
        """The pallet error's SCALE encoding (its variant index; every variant is fieldless)."""
        return bytes((self.index,))


class ValueTooLarge(BroadcasterError):
    code = "ValueTooLarge"

    def __init__(self, para_id: int, length: int, limit: int) -> None:
        super().__init__(para_id, f"para {para_id} published a {length}-byte value; the limit is {limit} bytes")
        self.length = length
        self.limit = limit


class TooManyKeys(BroadcasterError):
    code = "TooManyKeys"

    def __init__(self, para_id: int, key: bytes, limit: int) -> None:
        super().__init__(para_id, f"para {para_id} already stores {limit} keys; new key 0x{key.hex()} refused")
        self.key = key
        self.limit = limit


class TotalStorageSizeExceeded(BroadcasterError):
    code = "TotalStorageSizeExceeded"

    def __init__(self, para_id: int, new_total: int, limit: int) -> None:
        super().__init__(para_id, f"para {para_id} would store {new_total} bytes; the limit is {limit}")
        self.new_total = new_total
        self.limit = limit


class TooManyPublishers(BroadcasterError):
    code = "TooManyPublishers"

    def __init__(self, para_id: int, limit: int) -> None:
        super().__init__(para_id, f"para {para_id} refused: {limit} publishers already exist")
        self.limit = limit


class NotRegistered(BroadcasterError):
    code = "NotRegistered"

    def __init__(self, para_id: int) -> None:
        super().__init__(para_id, f"para {para_id} is not a registered publisher")


class AlreadyRegistered(BroadcasterError):
    code = "AlreadyRegistered"

    def __init__(self, para_id: int) -> None:
        super().__init__(para_id, f"para {para_id} is already registered")


class NotAuthorized(BroadcasterError):
    code = "NotAuthorized"

    def __init__(self, para_id: int, who: bytes, reason: str) -> None:
        super().__init__(para_id, f"account 0x{who.hex()} may not act for para {para_id}: {reason}")
        self.who = who
        self.reason = reason


class NoDataToCleanup(BroadcasterError):
    code = "NoDataToCleanup"

    def __init__(self, para_id: int) -> None:
        super().__init__(para_id, f"para {para_id} has no published data")


class NoKeysToDelete(BroadcasterError):
    code = "NoKeysToDelete"

    def __init__(self, para_id: int, keys: tuple[bytes, ...]) -> None:
        super().__init__(para_id, f"none of the {len(keys)} keys is published by para {para_id}")
        self.keys = keys


class BalancesError(PubSubError):
    """Base class of the balances ledger's errors."""

    code = "BalancesError"


class InsufficientBalance(BalancesError):
    """An account cannot cover a hold, transfer or withdrawal."""

    code = "InsufficientBalance"

    def __init__(self, account: bytes, needed: int, available: int) -> None:
        super().__init__(f"account 0x{account.hex()} has {available} free, needs {needed}")
        self.account = account
        self.needed = needed
        self.available = available
