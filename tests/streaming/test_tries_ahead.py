"""Stage R's trie steps made a block behind it by a forked helper (``streaming.tries_ahead``), without Spark.

What must hold whatever the helper does: the records come out as the same bytes in the same order, and the batch
leaves the same state, as when Stage R runs every trie step itself; a helper that runs, dies or never starts only
changes which process did the work.
"""

from __future__ import annotations

import os
import pytest

from producers.workload import WorkloadSpec, generate
from state.spark import SparkStateBackend
from streaming import tries_ahead as ahead
from streaming.operators import KafkaRow, OutRow, page_backend, relay_chunks
from tests.streaming.test_operators import CONFIG, KEY, Pages, kafka_inputs

REALM = CONFIG.default_realm
SPEC = WorkloadSpec(seed=7, blocks=24, publishers=6, system_publishers=2, subscribers=3, keys=8, subscribed_keys=12,
                    update_rate=0.5, bad_records=0.02)


@pytest.fixture(scope="module")
def rows() -> list[KafkaRow]:
    lines = [line.encode() for block in generate(SPEC) for line in block]
    found, _ = kafka_inputs(lines)
    return found


class ParentOnlyPages(Pages):
    """A MapState only the process that made it may read, as on Spark (the helper has no JVM connection): a helper
    that reads a page it was not given fails, and the test sees the failure."""

    def __init__(self) -> None:
        super().__init__()
        self.owner = os.getpid()

    def getValue(self, key: tuple[object, ...]) -> tuple[bytes] | None:  # noqa: N802 (pyspark's name)
        if os.getpid() != self.owner:
            raise RuntimeError(f"a MapState read of {key} from process {os.getpid()}")
        return super().getValue(key)


def _run(rows: list[KafkaRow], cut: int, ahead_of: bool, kill_at: int | None = None) -> tuple[list[OutRow], Pages,
                                                                                              list[str]]:
    """The rows through Stage R in batches of ``cut``: the records, the MapState left, and the helpers' failures."""
    pages = ParentOnlyPages()
    out: list[OutRow] = []
    failures: list[str] = []
    for start in range(0, len(rows), cut):
        batch = rows[start:start + cut]
        backend = page_backend(pages)
        if not ahead_of:
            out += [row for chunk in relay_chunks(REALM, batch, backend, CONFIG, KEY) for row in chunk]
        else:
            helper = ahead.TriesAhead.start(backend, REALM, CONFIG.seam)
            assert helper is not None
            steps = ahead.TrieSteps(backend, REALM, CONFIG.seam, helper)
            try:
                for chunk in relay_chunks(REALM, batch, backend, CONFIG, KEY, tries=steps):
                    out += chunk
                    if kill_at is not None and steps.answered >= kill_at and steps.helper is not None:
                        os.kill(steps.helper.pid, 9)
            finally:
                steps.close()
            if steps.failure is not None:
                failures.append(str(steps.failure))
        backend.flush()
    return out, pages, failures


@pytest.mark.parametrize("cut", [10_000, 97])
def test_records_and_state_are_those_of_stage_r_alone(rows: list[KafkaRow], cut: int) -> None:
    alone, alone_pages, _ = _run(rows, cut, ahead_of=False)
    helped, helped_pages, failures = _run(rows, cut, ahead_of=True)
    assert failures == []  # also: the helper read no page it was not given before the fork
    topics = {row.topic.rpartition(".")[2] for row in alone}
    assert {"relay-views", "seals", "events"} <= topics
    assert helped == alone
    assert helped_pages == alone_pages


def test_a_helper_killed_mid_batch_changes_nothing(rows: list[KafkaRow]) -> None:
    alone, alone_pages, _ = _run(rows, 10_000, ahead_of=False)
    helped, helped_pages, failures = _run(rows, 10_000, ahead_of=True, kill_at=5)
    assert len(failures) == 1 and failures[0].startswith("the helper")
    assert helped == alone
    assert helped_pages == alone_pages


def test_small_batches_and_the_switch_keep_the_steps_in_place(rows: list[KafkaRow],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    backend: SparkStateBackend = page_backend(Pages())
    with ahead.trie_steps(backend, REALM, CONFIG.seam, ahead.MIN_ROWS - 1) as steps:
        assert steps is None
    monkeypatch.setenv(ahead.ENV, "0")
    with ahead.trie_steps(backend, REALM, CONFIG.seam, 10 * ahead.MIN_ROWS) as steps:
        assert steps is None


def test_a_large_batch_gets_a_helper_that_is_reaped(rows: list[KafkaRow]) -> None:
    if not ahead.enabled():
        pytest.skip("one core here: the helper is never started")  # CI and this machine have two
    backend = page_backend(Pages())
    with ahead.trie_steps(backend, REALM, CONFIG.seam, ahead.MIN_ROWS) as steps:
        assert steps is not None and steps.helper is not None
        pid = steps.helper.pid
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)

