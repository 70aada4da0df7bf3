"""The job's transformWithState processors: Spark's handles and rows, handed to ``streaming.operators``.

Apart from the operators so that unpickling a processor loads no protocol: Spark 4.2 does that at every query start
on the driver, in a fresh Python process that only calls ``init`` to learn the state variables (the pre-init
worker), and the protocol's modules (``streaming.operators`` and what it imports, ``ProtocolConfig``'s package
among them) were a large part of that worker's start (docs/benchmarks.md, "Measured code choices"). A
processor carries its config pickled and imports the operators with its first rows.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from pubsub_core.process import tune_garbage_collector
from state.spark import PAGE_KEY_SCHEMA, PAGE_VALUE_SCHEMA, PAGES_STATE_NAME

if TYPE_CHECKING:
    from pubsub_core.stages import ProtocolConfig
    from streaming.operators import Writer

__all__ = ["FusedOperator", "OUTPUT_SCHEMA", "RelayOperator", "StatefulProcessor", "SUBSCRIBER_PAGES_STATE_NAME",
           "SubscriberOperator"]
"""``StatefulProcessor`` is pyspark's base of a transformWithState processor, exported for the benchmarks' probes
(benchmarks/ reach Spark through this package)."""

OUTPUT_SCHEMA = "topic string, key string, records long"
"""What the operators yield once a batch's records are in Kafka (``streaming.operators.BatchSummary``): records per
topic, and a row per seal with its height as the key; the records themselves go from the worker to Kafka
(``streaming.record_writer``)."""


SUBSCRIBER_PAGES_STATE_NAME = "pubsub_subscriber_pages"
"""The fused operator's second MapState (``PAGE_KEY_SCHEMA``): its realm's subscribers' pages, each subscriber's
namespaces as ``<subscriber>/<namespace>`` (``streaming.operators.SubscriberPages``)."""


class _Processor:
    """What every processor has: the pages MapState, the protocol config (pickled until used), and the Kafka
    writer's configuration (``streaming.record_writer.writer_config``)."""

    def __init__(self, config: ProtocolConfig, writer_config: dict[str, str]) -> None:
        self._pickled_config = pickle.dumps(config)
        self._config: ProtocolConfig | None = None
        self.writer_config = writer_config

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_config": None}  # the config travels as its pickle only

    def config(self) -> ProtocolConfig:
        """The protocol config, unpickled (and the protocol imported) on first use, in the worker that runs it."""
        if self._config is None:
            self._config = pickle.loads(self._pickled_config)
        return self._config

    def writer(self) -> Writer:
        """This worker's Kafka writer (made on first use, kept across batches)."""
        from streaming.record_writer import record_writer

        return record_writer(self.writer_config)

    def init(self, handle: Any) -> None:
        tune_garbage_collector()  # in the Python worker that runs the stage
        self.pages = handle.getMapState(PAGES_STATE_NAME, PAGE_KEY_SCHEMA, PAGE_VALUE_SCHEMA)

    def close(self) -> None:
        """Nothing to release: the state handle belongs to Spark."""

    def __str__(self) -> str:
        return type(self).__name__  # never the seam key nor the Kafka password


class _SeamProcessor(_Processor):
    """A processor on one side of the seam (the split job): it also holds the seam's MAC key."""

    def __init__(self, config: ProtocolConfig, seam_key: bytes, writer_config: dict[str, str]) -> None:
        super().__init__(config, writer_config)
        self.seam_key = seam_key


class RelayOperator(_SeamProcessor, StatefulProcessor):
    """Stage R in transformWithStateInPandas, keyed by realm."""

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        from streaming.operators import relay_frames

        yield from relay_frames(key[0], rows, self.pages, self.config(), self.seam_key, self.writer())


class SubscriberOperator(_SeamProcessor, StatefulProcessor):
    """Stage S in transformWithStateInPandas, keyed by (realm, subscriber, lane): the lane only places the key
    (``streaming.lanes``)."""

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        from streaming.operators import subscriber_frames

        yield from subscriber_frames(key[0], key[1], rows, self.pages, self.config(), self.seam_key, self.writer())


class FusedOperator(_Processor, StatefulProcessor):
    """Both stages in transformWithStateInPandas, keyed by realm: Stage R's state in the pages MapState, as
    ``RelayOperator`` keeps it, and the realm's subscribers' in a second one."""

    def init(self, handle: Any) -> None:
        super().init(handle)
        self.subscriber_pages = handle.getMapState(SUBSCRIBER_PAGES_STATE_NAME, PAGE_KEY_SCHEMA, PAGE_VALUE_SCHEMA)

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
        from streaming.operators import fused_frames

        yield from fused_frames(key[0], rows, self.pages, self.subscriber_pages, self.config(), self.writer())
