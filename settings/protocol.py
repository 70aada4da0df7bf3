"""The protocol settings file: the JSON ``pubsub simulate --protocol-config`` and the job read."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from pubsub_core.stages import ProtocolConfig
from pubsub_core.stages.config import Seam

__all__ = ["load_protocol_config"]


def load_protocol_config(path: Path | None, seam: str | None = None) -> ProtocolConfig:
    """The protocol settings file (the same JSON `pubsub simulate --protocol-config` reads), or the defaults; ``seam``
    (``delta`` or ``full``) overrides the file's."""
    config = ProtocolConfig() if path is None else ProtocolConfig.from_json(json.loads(path.read_text()))
    return config if seam is None else replace(config, seam=Seam(seam))
