"""The whole protocol over an event log, in one process: lines in, output records out, block by block.

``simulate(lines, config)`` parses each line (a bad line becomes a rejection, never an exception), routes it
to its realm's Stage R, and runs Stage S for every relay view a block produced. Output order: a line's own
refusal where the line is read; then per block: Stage R's records (rejections, relay events, refused
subscriber calls, the seal), then per subscriber ascending its updates, events and PoV record; at the end of
the input, what never got included. Pure: no files, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from state import MemoryBackend, StateBackend

from pubsub_core.stages.config import ProtocolConfig
from pubsub_core.stages.ingest import LineParser, ingest_record
from pubsub_core.stages.records import LogRecord, OutputRecord
from pubsub_core.stages.relay_stage import RelayStage, RelayStep
from pubsub_core.stages.subscriber_stage import SubscriberStage

__all__ = ["Simulator", "simulate"]


class Simulator:
    """Per-realm Stage R and per-(realm, subscriber) Stage S, fed one line at a time.

    With ``relay_proofs``, each relay view also goes out (topic ``<realm>.relay-proofs``) just before the
    outputs of the subscriber it is for: the records that travel between the two stages in the Spark job.
    """

    def __init__(self, config: ProtocolConfig | None = None, relay_proofs: bool = False) -> None:
        self.config = config or ProtocolConfig()
        self.relay_proofs = relay_proofs
        self.relays: dict[str, RelayStage] = {}
        self.subscribers: dict[tuple[str, int], SubscriberStage] = {}
        self.router = LineParser(self.config.default_realm)

    def fork(self) -> Simulator:
        """An independent simulator in this one's state: fed the same lines, both give the same outputs. Its stages
        are built afresh over copies of the stages' state, as the Spark job builds them every micro-batch (all
        state lives in the backends), so a fork costs a copy of the state, not of every object holding it."""
        twin = Simulator(self.config, self.relay_proofs)
        twin.router.offsets = dict(self.router.offsets)
        for realm, relay in self.relays.items():
            twin.relays[realm] = RelayStage(realm, self.config, _memory(relay.backend).copy())
        for (realm, subscriber), stage in self.subscribers.items():
            twin.subscribers[(realm, subscriber)] = SubscriberStage(
                realm, subscriber, self.config.subscriber, _memory(stage.backend).copy())
        return twin

    def feed_line(self, line: str | bytes) -> list[OutputRecord]:
        """One event-log line, as text or as the bytes read from a file (its line break, if any, is dropped;
        blank lines are skipped); returns the outputs it caused, in order. Whatever the line holds (not UTF-8,
        not JSON, too large), it ends in outputs, never an exception. The line goes through the same edge as a
        produced Kafka record would."""
        routed = self.router.feed(line)
        if routed is None:
            return []
        if isinstance(routed, OutputRecord):
            return [routed]
        record, offset = routed
        parsed = ingest_record(record.topic, record.key, record.value, offset, self.config.default_realm)
        return [parsed] if isinstance(parsed, OutputRecord) else self.feed(parsed)

    def feed(self, record: LogRecord) -> list[OutputRecord]:
        """One parsed record; returns the outputs it caused, in order."""
        relay = self.relays.get(record.realm)
        if relay is None:
            relay = self.relays[record.realm] = RelayStage(record.realm, self.config)
        immediate, steps = relay.feed(record)
        out = list(immediate)
        for step in steps:
            out += self.run_step(record.realm, step)
        return out

    def run_step(self, realm: str, step: RelayStep) -> list[OutputRecord]:
        """Stage R's records of one block, then each subscriber's Stage S on its view."""
        out = list(step.outputs)
        for view in step.views:
            stage = self.subscribers.get((realm, view.subscriber))
            if stage is None:
                stage = self.subscribers[(realm, view.subscriber)] = SubscriberStage(
                    realm, view.subscriber, self.config.subscriber)
            if self.relay_proofs:
                out.append(OutputRecord(f"{realm}.relay-proofs", str(view.subscriber),
                                        f"view/{view.subscriber}/{view.number}", view.to_json()))
            out += stage.step(view)
        return out

    def finish(self) -> list[OutputRecord]:
        """End of input: every realm's never-included records and never-completed blocks, realms ascending."""
        out: list[OutputRecord] = []
        for realm in sorted(self.relays):
            out += self.relays[realm].finish()
        return out


def _memory(backend: StateBackend) -> MemoryBackend:
    if not isinstance(backend, MemoryBackend):
        raise TypeError(f"a simulator's stages keep their state in a MemoryBackend, not {type(backend).__name__}")
    return backend


def simulate(
    lines: Iterable[str | bytes], config: ProtocolConfig | None = None, relay_proofs: bool = False
) -> Iterator[OutputRecord]:
    """Run an event log (JSON lines) and yield the output records in their documented order."""
    simulator = Simulator(config, relay_proofs)
    for line in lines:
        yield from simulator.feed_line(line)
    yield from simulator.finish()

