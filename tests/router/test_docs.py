"""docs/router.md's example runs, and the router's budget inputs agree with the subscriber's budget."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, strategies as st

from pubsub_core.router import into_abridged
from pubsub_core.subscriber.budget import pubsub_budget
from pubsub_core.subscriber.config import SubscriberConfig

DOC = Path(__file__).resolve().parents[2] / "docs" / "router.md"


def test_docs_router_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert blocks, "docs/router.md has no python example"
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})


@given(
    dmq=st.lists(st.integers(0, 300), max_size=6),
    hrmp=st.lists(st.integers(0, 300), max_size=6),
    limit=st.integers(0, 800),
)
def test_into_abridged_agrees_with_the_subscriber_budget(dmq: list[int], hrmp: list[int], limit: int) -> None:
    budget = pubsub_budget(10**7, dmq, hrmp, SubscriberConfig(messages_collection_size_limit=limit))
    downward = into_abridged(dmq, limit)
    horizontal = into_abridged(hrmp, downward.remaining_limit + limit)
    assert (budget.dmq_taken, budget.dmq_bytes) == (downward.full_count, downward.full_bytes)
    assert (budget.hrmp_taken, budget.hrmp_bytes) == (horizontal.full_count, horizontal.full_bytes)
