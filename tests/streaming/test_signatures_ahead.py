"""Stage R's signature checks made ahead by a forked helper (``streaming.signatures_ahead``), without Spark.

What must hold whatever the helper does: every answer is ``verify_signature``'s, so Stage R's outputs are the
same bytes; a helper that runs, dies or never starts only changes who verified.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
from collections.abc import Iterator

import pytest

from producers.workload import WorkloadSpec, generate
from pubsub_core.envelope import Envelope, verify_signature
from pubsub_core.relay import InputRecord
from pubsub_core.stages import LogRecord, ingest_record
from state import MemoryBackend
from streaming import signatures_ahead as ahead
from streaming.operators import KafkaRow, relay_rows
from tests.streaming.test_operators import CONFIG, KEY, kafka_inputs

REALM = CONFIG.default_realm
SPEC = WorkloadSpec(seed=11, blocks=12, publishers=6, system_publishers=2, subscribers=3, keys=8, subscribed_keys=12,
                    update_rate=0.5, bad_records=0.02)


def _envelope_of(row: KafkaRow) -> Envelope | None:
    parsed = ingest_record(row.topic, row.key, row.value, row.offset, REALM)
    if not isinstance(parsed, LogRecord) or not isinstance(parsed.value, InputRecord):
        return None
    return Envelope.decode(parsed.value.value)


def _forged(row: KafkaRow) -> KafkaRow:
    """The row with its envelope's signature changed in one bit: well formed, signed by no one."""
    body = json.loads(row.value or b"")
    envelope = Envelope.decode(bytes.fromhex(body["value"].removeprefix("0x")))
    signature = bytes([envelope.signature[0] ^ 1]) + envelope.signature[1:]
    body["value"] = "0x" + dataclasses.replace(envelope, signature=signature).encode().hex()
    return dataclasses.replace(row, value=json.dumps(body).encode())


@pytest.fixture(scope="module")
def rows() -> list[KafkaRow]:
    """A small workload's rows in Stage R's order, with forged signatures among them."""
    lines = [line.encode() for block in generate(SPEC) for line in block]
    found, _ = kafka_inputs(lines)
    signed = [i for i, row in enumerate(found) if _envelope_of(row) is not None]
    for i in signed[5::40]:
        found[i] = _forged(found[i])
    return found


def _finished(helper: ahead.SignaturesAhead, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not helper.finished and time.monotonic() < deadline:
        helper._receive()
        time.sleep(0.01)
    assert helper.finished, "the helper did not finish"


class Counting:
    """``verify_signature``, counting the envelopes it was asked about."""

    def __init__(self) -> None:
        self.asked: list[Envelope] = []

    def __call__(self, envelope: Envelope) -> bool:
        self.asked.append(envelope)
        return verify_signature(envelope)


def test_the_workload_has_good_and_forged_signatures(rows: list[KafkaRow]) -> None:
    answers = [verify_signature(e) for row in rows if (e := _envelope_of(row)) is not None]
    assert answers.count(False) >= 3 and answers.count(True) > 100


def test_a_finished_helper_answers_every_valid_envelope_and_no_forged_one(rows: list[KafkaRow]) -> None:
    fallback = Counting()
    helper = ahead.SignaturesAhead.start(rows, REALM, fallback)
    assert helper is not None
    try:
        _finished(helper)
        envelopes = [e for row in rows if (e := _envelope_of(row)) is not None]
        assert [helper.check(e) for e in envelopes] == [verify_signature(e) for e in envelopes]
        forged = [e for e in envelopes if not verify_signature(e)]
        assert fallback.asked == forged  # only what the helper could not vouch for was verified in place
        assert len(helper.verified) == len(envelopes) - len(forged)
    finally:
        helper.close()


def test_a_killed_helper_leaves_every_answer_to_the_check_in_place(rows: list[KafkaRow]) -> None:
    fallback = Counting()
    helper = ahead.SignaturesAhead.start(rows, REALM, fallback)
    assert helper is not None
    os.kill(helper.pid, signal.SIGKILL)
    try:
        envelopes = [e for row in rows if (e := _envelope_of(row)) is not None]
        assert [helper.check(e) for e in envelopes] == [verify_signature(e) for e in envelopes]
        _finished(helper)  # its pipe closed when it died
    finally:
        helper.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(helper.pid, 0)  # reaped by close


def test_stage_r_outputs_are_the_same_bytes_with_the_helper(rows: list[KafkaRow], monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    in_place = relay_rows(REALM, rows, MemoryBackend(), CONFIG, KEY)
    monkeypatch.setattr(ahead, "MIN_ROWS", 1)
    monkeypatch.setattr(ahead, "enabled", lambda: True)
    with ahead.signatures_ahead(rows, REALM) as check:
        assert check is not verify_signature
        made_ahead = relay_rows(REALM, rows, MemoryBackend(), CONFIG, KEY, check)
    assert made_ahead == in_place
    assert any(b'"BadSignature"' in row.value for row in made_ahead)


def _check_for(rows: list[KafkaRow]) -> Iterator[object]:
    with ahead.signatures_ahead(rows, REALM) as check:
        yield check


def test_small_batches_one_core_and_the_switch_verify_in_place(rows: list[KafkaRow],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(rows) < ahead.MIN_ROWS
    assert next(_check_for(rows)) is verify_signature
    monkeypatch.setattr(ahead, "MIN_ROWS", 1)
    monkeypatch.setenv(ahead.ENV, "0")
    assert next(_check_for(rows)) is verify_signature
    monkeypatch.delenv(ahead.ENV)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert next(_check_for(rows)) is verify_signature
    monkeypatch.delattr(os, "sched_getaffinity")  # as on macOS: all the machine's cores
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert ahead.usable_cores() == 1 and next(_check_for(rows)) is verify_signature
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert ahead.usable_cores() == 8 and ahead.enabled()


def test_a_digest_names_one_signed_envelope(rows: list[KafkaRow]) -> None:
    envelopes = [e for row in rows if (e := _envelope_of(row)) is not None]
    digests = {ahead.envelope_digest(e) for e in envelopes}
    assert len(digests) == len({e.encode() for e in envelopes})  # one per distinct envelope
    assert all(len(d) == ahead.DIGEST_BYTES for d in digests)
    envelope = envelopes[0]
    assert ahead.envelope_digest(dataclasses.replace(envelope, seqno=envelope.seqno + 1)) not in digests
