"""The shared state contract suite, run inside transformWithState against SparkStateBackend on real MapState.

Each contract test (tests/state/test_state_contract.py, every `test_*(backend)` function) runs in
handleInputRows for its own grouping key, on a fresh SparkStateBackend over that key's MapState; the processor
emits "ok" or the traceback. A second micro-batch then checks that state written in one batch is read in the
next, and a third measures the JVM round trips of a large batched write.
"""

from __future__ import annotations

import inspect
import json
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from state import StateTransaction
from state.spark import PAGE_KEY_SCHEMA, PAGE_VALUE_SCHEMA, PAGES_STATE_NAME, SparkStateBackend, decode_page, encode_page
from tests.state import test_state_contract as contract

pytestmark = pytest.mark.spark

CONTRACT_TESTS = sorted(
    name for name, fn in vars(contract).items()
    if name.startswith("test_") and callable(fn) and list(inspect.signature(fn).parameters) == ["backend"]
)


ADAPTIVE = "adaptive:"
"""Prefix of a scenario run on an adaptive-page backend (``single_page_bytes``)."""


class ContractProcessor(StatefulProcessor):
    """Runs the scenario named by the grouping key against the key's own SparkStateBackend."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.pages = handle.getMapState(PAGES_STATE_NAME, PAGE_KEY_SCHEMA, PAGE_VALUE_SCHEMA)

    def handleInputRows(self, key: Any, rows: Iterator[Row], timerValues: Any) -> Iterator[Row]:
        name = key[0]
        list(rows)
        if name.startswith(ADAPTIVE):  # the same scenario on one-page namespaces split past 64 bytes
            backend = SparkStateBackend(self.pages, default_pages=16, page_directory=True, single_page_bytes=64)
        else:
            backend = SparkStateBackend(self.pages, pages={"big": 4})
        try:
            detail = self._run(name.removeprefix(ADAPTIVE), backend)
            yield Row(name=name, result="ok", detail=detail)
        except BaseException:  # the traceback is the test's failure message
            yield Row(name=name, result="failed", detail=traceback.format_exc())

    def _run(self, name: str, backend: SparkStateBackend) -> str:
        if name.startswith("test_"):
            getattr(contract, name)(backend)
            return ""
            txn = StateTransaction(backend)
            txn.put("ns", b"kept", b"across batches")
            txn.set_value("single", b"v")
            txn.commit()
            return ""
            return ""
        if name == "big-batch":
            txn = StateTransaction(backend)
            for i in range(2000):
                txn.put("big", i.to_bytes(4, "big"), bytes(64))
            txn.commit()
            reader = StateTransaction(SparkStateBackend(self.pages, pages={"big": 4}))
            values = reader.items("big")
            assert len(values) == 2000
            return json.dumps({"jvm_calls": backend.jvm_calls})
        raise AssertionError(f"unknown scenario {name}")

    def close(self) -> None:
        """Nothing to release."""


class PersistenceProcessor(StatefulProcessor):
    """Batch 1 writes for key "p"; batch 2 reads it back through a fresh backend and transaction."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.pages = handle.getMapState(PAGES_STATE_NAME, PAGE_KEY_SCHEMA, PAGE_VALUE_SCHEMA)

    def handleInputRows(self, key: Any, rows: Iterator[Row], timerValues: Any) -> Iterator[Row]:
        phases = sorted(row.phase for row in rows)
        txn = StateTransaction(SparkStateBackend(self.pages))
        seen = txn.get("ns", b"a")
        txn.put("ns", b"a", (seen or b"") + b"+")
        txn.commit()
        yield Row(name=key[0], result=",".join(phases), detail=(seen or b"").decode())

    def close(self) -> None:
        """Nothing to release."""


def _run_stream(spark: SparkSession, source: Path, checkpoint: Path, processor: StatefulProcessor) -> list[Row]:
    """Run the processor over the JSON files in `source` until they are all processed; return its output rows."""
    df = spark.readStream.schema("name string, phase string").json(str(source))
    out = df.groupBy("name").transformWithState(processor, "name string, result string, detail string", "Update", "None")
    collected: list[Row] = []
    query = (
        out.writeStream.foreachBatch(lambda batch, _batch_id: collected.extend(batch.collect()))
        .outputMode("update").option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    )
    try:
        query.awaitTermination(timeout=300)
        assert query.exception() is None
    finally:
        query.stop()
    return collected


def test_the_state_contract_holds_on_spark_map_state(spark: SparkSession, tmp_path: Path) -> None:
    assert CONTRACT_TESTS, "the contract suite was not found"
    source = tmp_path / "in"
    source.mkdir()
    names = [*CONTRACT_TESTS, *(ADAPTIVE + name for name in CONTRACT_TESTS), "big-batch"]
    (source / "0.json").write_text("".join(json.dumps({"name": n, "phase": "1"}) + "\n" for n in names))
    rows = _run_stream(spark, source, tmp_path / "ckpt", ContractProcessor())
    results = {row.name: row for row in rows}
    assert sorted(results) == sorted(names)
    failures = {name: row.detail for name, row in results.items() if row.result != "ok"}
    assert not failures, "\n\n".join(f"{name}:\n{detail}" for name, detail in failures.items())
    # 2000 entries in 4 pages: 4 page reads + 4 page writes, not thousands of JVM round trips.
    assert json.loads(results["big-batch"].detail) == {"jvm_calls": 8}


def test_state_written_in_one_micro_batch_is_read_in_the_next(spark: SparkSession, tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    checkpoint = tmp_path / "ckpt"
    (source / "0.json").write_text(json.dumps({"name": "p", "phase": "1"}) + "\n")
    first = _run_stream(spark, source, checkpoint, PersistenceProcessor())
    (source / "1.json").write_text(json.dumps({"name": "p", "phase": "2"}) + "\n")
    second = _run_stream(spark, source, checkpoint, PersistenceProcessor())
    assert [(r.result, r.detail) for r in first] == [("1", "")]
    assert [(r.result, r.detail) for r in second] == [("2", "+")]


def test_pages_encode_deterministically_and_round_trip() -> None:
    entries = {b"b": b"2", b"a": b"", b"": b"empty key"}
    assert encode_page(entries) == encode_page(dict(reversed(list(entries.items()))))
    assert decode_page(encode_page(entries)) == entries
    assert decode_page(encode_page({})) == {}


def test_a_truncated_page_is_a_typed_error() -> None:
    from state.spark import CorruptPageError

    data = encode_page({b"key": b"value"})
    with pytest.raises(CorruptPageError) as caught:
        decode_page(data[:-2], "ns", 3)
    assert caught.value.namespace == "ns" and caught.value.page == 3
