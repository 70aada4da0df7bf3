"""``Simulator.fork``: a fork and its origin, fed the same lines, give the same outputs, and neither sees the
other's lines (the fuzzer forks one prepared simulator per input)."""

from __future__ import annotations

from producers.workload import WorkloadSpec, generate
from pubsub_core.simulator import Simulator
from pubsub_core.stages import OutputRecord

SPEC = WorkloadSpec(seed=7, blocks=12, publishers=3, system_publishers=1, subscribers=3, keys=8, subscribed_keys=10,
                    update_rate=0.6, bad_records=0.05)


def log() -> list[str]:
    return [line for chunk in generate(SPEC) for line in chunk]


def run(simulator: Simulator, lines: list[str]) -> list[str]:
    out: list[OutputRecord] = []
    for line in lines:
        out += simulator.feed_line(line)
    return [record.to_line() for record in out + simulator.finish()]


def test_a_fork_continues_exactly_as_its_origin_would() -> None:
    lines = log()
    half = len(lines) // 2
    whole = run(Simulator(), lines)
    origin = Simulator()
    head = [record.to_line() for line in lines[:half] for record in origin.feed_line(line)]
    fork = origin.fork()
    assert head + run(fork, lines[half:]) == whole
    assert head + run(origin, lines[half:]) == whole


def test_what_a_fork_is_fed_never_reaches_its_origin() -> None:
    lines = log()
    half = len(lines) // 2
    origin = Simulator()
    for line in lines[:half]:
        origin.feed_line(line)
    fork = origin.fork()
    for line in lines[half:]:  # the fork runs ahead, to the end of the log
        fork.feed_line(line)
    reference = Simulator()
    for line in lines[:half]:
        reference.feed_line(line)
    assert run(origin, lines[half:]) == run(reference, lines[half:])
