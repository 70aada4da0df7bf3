"""The whole protocol over an event log, in one process: a thin driver of the two stages in
``pubsub_core.stages`` (Stage R per realm, Stage S per realm + subscriber).

``simulate(lines, config)`` yields output records (updates, pallet events, rejections, PoV metering, block
seals) for JSON-lines input. See docs/simulator.md.
"""

from pubsub_core.simulator.simulator import Simulator, simulate

__all__ = ["Simulator", "simulate"]
