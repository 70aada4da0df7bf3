"""The transformWithState processors as Spark ships them: pickled on the driver, unpickled in a fresh worker."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from pyspark import cloudpickle

from pubsub_core.stages import ProtocolConfig
from pubsub_core.stages.config import Seam
from streaming.processors import RelayOperator, SubscriberOperator

UNPICKLE = """
import pickle, sys
processor = pickle.loads(open(sys.argv[1], "rb").read())
loaded = sorted(m for m in sys.modules
                if m.startswith(("pubsub_core.stages", "pubsub_core.relay", "streaming.operators", "confluent_kafka")))
print(loaded)
config = processor.config()
print(repr(config), processor.seam_key.hex())
"""


def test_a_processor_unpickles_without_the_protocol_and_keeps_its_config(tmp_path: Path) -> None:
    """What the driver's pre-init worker does at each query start (unpickle, ``init``) loads no protocol module
    and no Kafka client; the config and seam key arrive intact and the protocol loads when the config is first
    used. Neither the seam key nor the Kafka password shows in a processor's text."""
    config = dataclasses.replace(ProtocolConfig(), seam=Seam("full"))
    kafka = {"bootstrap.servers": "127.0.0.1:9", "sasl.password": "hunter2"}
    for processor in (RelayOperator(config, b"\x01" * 32, kafka), SubscriberOperator(config, b"\x02" * 32, kafka)):
        processor.config()  # a used config is not what travels: the pickle is
        path = tmp_path / "processor.pickle"
        path.write_bytes(cloudpickle.dumps(processor))
        shown = subprocess.run([sys.executable, "-c", UNPICKLE, str(path)], capture_output=True, text=True,
                               check=True).stdout.splitlines()
        assert shown[0] == "[]"
        assert shown[1] == f"{config!r} {processor.seam_key.hex()}"
        assert str(processor) == type(processor).__name__ and processor.seam_key.hex() not in str(processor)
        assert "hunter2" not in repr(processor) and processor.writer_config == kafka
