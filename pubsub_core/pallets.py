"""The relay runtime's pallet indices: the first byte of an extrinsic's SCALE ``RuntimeCall``.

Pallet 0 is the broadcaster, pallet 1 the router, pallet 2 the subscriber. Their own module, below the relay
and the subscriber packages, because both encode and decode calls with them.
"""

from __future__ import annotations

__all__ = ["BROADCASTER", "ROUTER", "SUBSCRIBER"]

BROADCASTER = 0
ROUTER = 1
SUBSCRIBER = 2
