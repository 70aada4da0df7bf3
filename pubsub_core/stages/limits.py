"""Every size limit of a record at the Kafka edge, in one table: what each bounds, and why it is that size.

The protocol's own bounds (an envelope's ``AdmissionConfig.max_message_size``, a Publish value's
``MAX_PUBLISH_VALUE_LENGTH``) sit far below these: these keep any bytes, hostile or not, from costing more than a
bounded amount of work or memory before the protocol sees them, and keep every record a topic must take within
what Kafka takes.
"""

from __future__ import annotations

__all__ = ["FETCH_BYTES", "MAX_INPUT_BYTES", "MAX_MESSAGE_BYTES", "MAX_OUTPUT_BYTES", "MiB", "RECORD_OVERHEAD",
           "WRITER_REQUEST_BYTES"]

MiB = 1 << 20

MAX_INPUT_BYTES = 8 * MiB
"""An event-log line, and an input record's key or value, at most (``LineParser``, ``decode_record``): checked
before anything parses it, a larger one becomes a ``RecordTooLarge`` rejection. An envelope is at most
``AdmissionConfig.max_message_size`` (1 MiB), twice that in hex, so 8 MiB leaves room."""

MAX_MESSAGE_BYTES = 16 * MiB
"""Kafka's ceiling: every topic's ``max.message.bytes`` and the producers' ``message.max.bytes``. An input record
may be ``MAX_INPUT_BYTES`` plus its JSON envelope; outputs and views carry such values too."""

RECORD_OVERHEAD = 1024
"""Bytes reserved under a topic's ``max.message.bytes`` for the batch and record headers Kafka adds."""

MAX_OUTPUT_BYTES = MAX_MESSAGE_BYTES - MiB
"""An output or seam record's value at most, as the job's stages write it: a larger one is replaced by a
``RecordTooLarge`` rejection. A MiB under ``MAX_MESSAGE_BYTES`` leaves room for its key, headers and Kafka's
framing, so every record a stage writes is one a topic takes."""

WRITER_REQUEST_BYTES = 2 * MAX_MESSAGE_BYTES
"""The job's writers' ``message.max.bytes``: a produce request carries several of the largest records."""

FETCH_BYTES = 4 * MAX_MESSAGE_BYTES
"""What the job's Kafka source fetches per partition and per request: several of the largest records."""
