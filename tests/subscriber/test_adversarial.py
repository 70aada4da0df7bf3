"""Each adversarial collator mode on a fixed workload: rejected with its typed reason, state untouched."""

from __future__ import annotations

import pytest

from pubsub_core.subscriber import CheatingCollatorError, process_relay_proof

from tests.support.adversarial import EXPECTED_REASON, AdversaryMode, corrupt
from tests.subscriber.harness import Harness, entry, key, subs_of


@pytest.mark.parametrize("mode", list(AdversaryMode), ids=lambda m: m.value)
def test_adversarial_collator_is_rejected(mode: AdversaryMode) -> None:
    h = Harness()
    keys = [key(f"k{i}") for i in range(30)]
    h.publish(1000, {k: entry(k * 3) for k in keys})
    subs = subs_of({1000: keys[:10]})
    h.block(subs)
    h.publish(1000, {keys[1]: entry(b"changed" * 10), keys[2]: entry(b"tiny")})
    ctx = h.context()
    honest = h.collate(subs, ctx)
    bad = corrupt(mode, honest, h.proofs[-1])
    assert bad is not None and bad != honest
    before = {ns: h.backend.scan(ns) for ns in h.backend.namespaces()}
    with pytest.raises(CheatingCollatorError) as caught:
        process_relay_proof(h.txn(), bad, ctx, subs, h.config)
    assert caught.value.reason is EXPECTED_REASON[mode]
    assert str(caught.value).startswith("cheating collator (")
    assert {ns: h.backend.scan(ns) for ns in h.backend.namespaces()} == before
    # The honest proof for the same block is accepted.
    outcome = process_relay_proof(h.txn(), honest, ctx, subs, h.config)
    assert sorted(u.key for u in outcome.updates) == sorted(keys[1:3])
