"""Where a grouping key's time goes inside an operator call: the spans the job logs per batch.

An operator call (one grouping key of one micro-batch in a Python worker) measures, on the worker's clock, when it
began and how long it spent reading its rows from Spark, in state reads, in the protocol, writing records, writing
its state pages and waiting for Kafka to acknowledge its records. The spans ride with the batch's summary to the
driver (``streaming.operators.BatchSummary``, never a Kafka record), which logs them with Spark's own per-batch
phases (``streaming.job``, ``batch_log``); ``benchmarks/latency_budget.py`` lays a block's way out of them. No span
enters a record: the outputs stay a function of the inputs.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["OperatorSpans", "SpanClock", "TimedState"]


@dataclass(frozen=True)
class OperatorSpans:
    """One operator call: ``start`` and ``end`` in ms since the epoch (the worker's wall clock, which on one host
    is Kafka's and Spark's too), the rest in ms spent; ``state_read`` is the part of ``protocol`` spent in state
    reads, ``state_write`` the state pages written at the end."""

    stage: str
    group: str
    """The grouping key: the realm (Stage R) or ``realm/subscriber`` (Stage S)."""
    pid: int
    """The worker's process id: calls of one batch with the same pid ran one after the other."""
    start: float
    rows: float
    """Reading the key's input rows (Arrow frames to records)."""
    protocol: float
    state_read: float
    write: float
    """Handing records to the Kafka producer."""
    state_write: float
    deliver: float
    """Waiting for Kafka to acknowledge every record of the call."""
    end: float

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> OperatorSpans:
        body = json.loads(text)
        return cls(**{name: body[name] for name in cls.__dataclass_fields__})


class TimedState:
    """A pages MapState that adds the time spent in its calls to ``seconds`` (the state server's round trips); with
    ``shared``, to that one's count (an operator call with two MapStates counts both in one span)."""

    def __init__(self, pages: Any, shared: TimedState | None = None) -> None:
        self._pages = pages
        self._total: list[float] = shared._total if shared is not None else [0.0]

    @property
    def seconds(self) -> float:
        return self._total[0]

    def getValue(self, key: tuple[Any, ...], /) -> tuple[Any, ...] | None:  # noqa: N802 - pyspark's name
        began = time.perf_counter()
        try:
            value: tuple[Any, ...] | None = self._pages.getValue(key)
            return value
        finally:
            self._total[0] += time.perf_counter() - began

    def updateValue(self, key: tuple[Any, ...], value: tuple[Any, ...], /) -> None:  # noqa: N802
        began = time.perf_counter()
        try:
            self._pages.updateValue(key, value)
        finally:
            self._total[0] += time.perf_counter() - began

    def removeKey(self, key: tuple[Any, ...], /) -> None:  # noqa: N802
        began = time.perf_counter()
        try:
            self._pages.removeKey(key)
        finally:
            self._total[0] += time.perf_counter() - began


class SpanClock:
    """Accumulates an operator call's spans as it runs (``add``), then makes its ``OperatorSpans``."""

    def __init__(self, stage: str, group: str, state: TimedState) -> None:
        self.stage = stage
        self.group = group
        self.state = state
        self.start = time.time()
        self._mark = time.perf_counter()
        self.spent: dict[str, float] = {}

    def add(self, name: str) -> None:
        """Charge the time since the last mark to ``name``."""
        now = time.perf_counter()
        self.spent[name] = self.spent.get(name, 0.0) + now - self._mark
        self._mark = now

    def done(self, state_read: float) -> OperatorSpans:
        """The spans, ``state_read`` seconds of the protocol's being state reads."""
        ms = {name: round(seconds * 1000, 3) for name, seconds in self.spent.items()}
        return OperatorSpans(self.stage, self.group, os.getpid(), round(self.start * 1000, 3), ms.get("rows", 0.0),
                             ms.get("protocol", 0.0), round(state_read * 1000, 3), ms.get("write", 0.0),
                             ms.get("state_write", 0.0), ms.get("deliver", 0.0), round(time.time() * 1000, 3))
