"""The subscriber's outputs written out as JSON text by hand equal the canonical JSON of their dicts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pubsub_core.codec.types import TtlKind, TtlState
from pubsub_core.relay import canonical_json
from pubsub_core.subscriber.types import EventKind, PalletEvent, Update, UpdateKind

u32 = st.integers(0, 2**32 - 1)
u64 = st.integers(0, 2**64 - 1)
ttl_states = st.one_of(st.just(TtlState(TtlKind.INFINITE)), st.just(TtlState(TtlKind.TIMED_OUT)),
                       st.builds(TtlState, st.just(TtlKind.VALID_FOR), st.integers(1, 2**32 - 1)))


@given(subscriber=u32, number=u64, block_hash=st.binary(min_size=32, max_size=32), seq=u32, publisher=u32,
       key=st.binary(min_size=32, max_size=32), kind=st.sampled_from(list(UpdateKind)), value=st.binary(max_size=80),
       ttl=ttl_states, child_root=st.binary(min_size=32, max_size=32), entry_hash=st.binary(min_size=32, max_size=32))
def test_an_update_s_text_is_its_canonical_json(
    subscriber: int, number: int, block_hash: bytes, seq: int, publisher: int, key: bytes, kind: UpdateKind,
    value: bytes, ttl: TtlState, child_root: bytes, entry_hash: bytes,
) -> None:
    update = Update(subscriber, number, block_hash, seq, publisher, key, kind, value, ttl, child_root, entry_hash)
    assert update.json_text() == canonical_json(update.to_json())


@given(subscriber=u32, number=u64, index=u32, kind=st.sampled_from(list(EventKind)), publisher=u32,
       key=st.none() | st.binary(min_size=32, max_size=32), size=st.none() | u32,
       reason=st.none() | st.text(max_size=20))
def test_a_pallet_event_s_text_is_its_canonical_json(
    subscriber: int, number: int, index: int, kind: EventKind, publisher: int, key: bytes | None, size: int | None,
    reason: str | None,
) -> None:
    event = PalletEvent(subscriber, number, index, kind, publisher, key, size, reason)
    assert event.json_text() == canonical_json(event.to_json())
