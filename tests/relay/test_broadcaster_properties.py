"""Random call sequences against the broadcaster: its bookkeeping always matches its child-trie entries,
and a failing call writes nothing."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from pubsub_core.broadcaster import (
    CHILD_NAMESPACE,
    PUBLISHER_DEPOSIT,
    Balances,
    Broadcaster,
    BroadcasterConfig,
    split_child_data_key,
)
from pubsub_core.broadcaster.errors import BalancesError, BroadcasterError
from pubsub_core.codec.types import PublishedEntry
from state import StateTransaction
from tests.relay.helpers import ALICE, BOB, key, setup

PARAS = [1000, 1999, 2000, 2001, 3000]
CONFIG = BroadcasterConfig(max_stored_keys=4, max_total_storage_size=200, max_publishers=3, max_value_length=64,
                           max_ttl_scans_per_idle=3)

OPS = st.lists(
    st.tuples(
        st.sampled_from(["publish", "register", "force_register", "deregister", "force_deregister", "delete",
                         "force_delete", "delete_own", "cleanup", "idle", "offboard"]),
        st.sampled_from(PARAS),
        st.integers(0, 5),
        st.integers(0, 70),
        st.sampled_from([0, 0, 1, 3]),
    ),
    max_size=40,
)


def check_invariants(pallet: Broadcaster, txn: StateTransaction, endowed: int) -> None:
    entries: dict[int, dict[bytes, PublishedEntry]] = {}
    for raw_key, raw in txn.items(CHILD_NAMESPACE).items():
        para, k = split_child_data_key(raw_key)
        entries.setdefault(para, {})[k] = PublishedEntry.decode(raw)
    counted = 0
    for para in PARAS:
        stored = entries.get(para, {})
        assert pallet.published_keys(txn, para) == sorted(stored)
        assert pallet.total_storage_size(txn, para) == sum(32 + len(e.value) for e in stored.values())
        assert pallet.publisher_exists(txn, para) == bool(stored)
        assert len(stored) <= CONFIG.max_stored_keys
        assert pallet.total_storage_size(txn, para) <= CONFIG.max_total_storage_size
        for k, entry in stored.items():
            expected = None if entry.ttl == 0 else (entry.ttl, entry.when_inserted)
            assert pallet.ttl_data(txn, para, k) == expected
        registered = pallet.publisher_info(txn, para) is not None
        assert registered or not stored or CONFIG.is_system_para(para)
        counted += registered
    assert pallet.publisher_count(txn) == counted <= CONFIG.max_publishers
    finite = sum(1 for stored in entries.values() for entry in stored.values() if entry.ttl)
    assert len(txn.items("broadcaster.TtlData")) == finite
    # on_idle's index: per publisher its finite-TTL keys, and per twox64 bucket the publishers that have some.
    ttl_keys = {para: sorted(k for k, e in stored.items() if e.ttl) for para, stored in entries.items()}
    indexed = {int.from_bytes(raw[i + 8:i + 12], "little")
               for raw in txn.items("broadcaster.TtlIndex").values() for i in range(0, len(raw), 12)}
    assert indexed == {para for para, keys in ttl_keys.items() if keys}
    assert {int.from_bytes(p, "little") for p in txn.items("broadcaster.TtlKeys")} == indexed
    for para in indexed:
        listed = txn.get("broadcaster.TtlKeys", para.to_bytes(4, "little"))
        assert listed is not None and listed[1:] == b"".join(ttl_keys[para])
    total = sum(Balances.free(txn, a) + Balances.held(txn, a, PUBLISHER_DEPOSIT) for a in (ALICE, BOB))
    assert total <= endowed


@settings(max_examples=200)
@given(OPS)
@example([("publish", 1000, 1, 5, 3), ("idle", 1000, 5, 0, 0)])
@example([("publish", 1999, 1, 5, 1), ("force_delete", 1999, 1, 0, 0), ("publish", 1999, 2, 5, 0)])
@example([("register", 2000, 0, 0, 0), ("publish", 2000, 1, 64, 3), ("deregister", 2000, 0, 0, 0)])
def test_random_calls_keep_the_books_consistent(ops: list[tuple[str, int, int, int, int]]) -> None:
    pallet, txn = setup(CONFIG, endow=1_000)
    Broadcaster.set_para_manager(txn, 3000, BOB)
    now = 1
    for op, para, k, size, ttl in ops:
        manager = BOB if para == 3000 else ALICE
        before = txn.pending_changes()
        try:
            if op == "publish":
                pallet.publish_data(txn, para, key(str(k)), bytes([k]) * size, ttl, now)
            elif op == "register":
                pallet.register_publisher(txn, manager, para)
            elif op == "force_register":
                pallet.force_register_publisher(txn, manager, size, para)
            elif op == "deregister":
                pallet.deregister_publisher(txn, manager, para)
            elif op == "force_deregister":
                pallet.force_deregister_publisher(txn, para)
            elif op == "delete":
                pallet.delete_keys(txn, manager, para, [key(str(k)), key(str(k + 1))])
            elif op == "delete_own":
                pallet.delete_own_keys(txn, para, [key(str(k))])
            elif op == "force_delete":
                pallet.force_delete_keys(txn, para, [key(str(k))])
            elif op == "cleanup":
                pallet.cleanup_published_data(txn, manager, para)
            elif op == "idle":
                now += k
                pallet.on_idle(txn, now, 10**15)
            else:
                pallet.offboard(txn, [para])
        except (BroadcasterError, BalancesError):
            assert txn.pending_changes() == before
        check_invariants(pallet, txn, endowed=2_000)
