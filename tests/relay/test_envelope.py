"""Envelopes and admission: each check in the DeP2P pub-sub spec's order, and fuzzing that always ends in a typed
outcome."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pubsub_core.envelope import (
    Admission,
    AdmissionConfig,
    Envelope,
    EnvelopeDecodeError,
    KeyRegistry,
    Origin,
    RateCounter,
    Signer,
    Topic,
    Unauthenticated,
    Verdict,
    authenticate,
    penalty,
    verify_signature,
)
from pubsub_core.errors import PubSubError
from tests.relay.helpers import fresh_txn

COLLATOR = Signer(bytes([7]) * 32)
STRANGER = Signer(bytes([8]) * 32)
ALICE_KEY = Signer(bytes([9]) * 32)
ROOT_KEY = Signer(bytes([10]) * 32)
REGISTRY = KeyRegistry(
    para_keys={2000: frozenset({COLLATOR.public_key})},
    accounts=frozenset({ALICE_KEY.public_key}),
    root_keys=frozenset({ROOT_KEY.public_key}),
)
UPWARD = Topic("polkadot", "upward", "2000")
REASONS = {"Malformed", "BadSignature", "NotMember", "Duplicate", "MessageTooLarge", "RateLimited"}


def accept_all(envelope: Envelope, origin: Origin) -> None:
    return None


class Refusal(PubSubError):
    code = "BadFormat"


def refuse(envelope: Envelope, origin: Origin) -> None:
    raise Refusal("custom validation refused")


def admit(raw: bytes, admission: Admission | None = None, stream: str = "upward", origin: str = "2000",
          rate: RateCounter | None = None, txn: object = None) -> tuple[Verdict, str | None]:
    result = (admission or Admission(REGISTRY)).admit(
        txn or fresh_txn(), stream, origin, raw, rate or RateCounter(), accept_all  # type: ignore[arg-type]
    )
    return result.verdict, result.reason


def test_envelope_wire_form_follows_the_pubsub_message_field_order() -> None:
    envelope = COLLATOR.sign(UPWARD, 5, b"\x05\x00")
    raw = envelope.encode()
    assert raw[:32] == COLLATOR.public_key and raw[32:40] == (5).to_bytes(8, "little")
    assert raw[-64:] == envelope.signature
    assert Envelope.decode(raw) == envelope
    assert Envelope.from_json(envelope.to_json()) == envelope


def test_signing_is_deterministic() -> None:
    assert COLLATOR.sign(UPWARD, 1, b"x") == Signer(bytes([7]) * 32).sign(UPWARD, 1, b"x")


def test_accepts_a_member_envelope() -> None:
    assert admit(COLLATOR.sign(UPWARD, 1, b"x").encode()) == (Verdict.ACCEPT, None)


def test_rejects_bad_signature() -> None:
    envelope = COLLATOR.sign(UPWARD, 1, b"x")
    forged = Envelope(envelope.sender, 1, UPWARD, b"y", envelope.signature)
    assert admit(forged.encode()) == (Verdict.REJECT, "BadSignature")


def test_rejects_non_member_and_wrong_topic() -> None:
    assert admit(STRANGER.sign(UPWARD, 1, b"x").encode()) == (Verdict.REJECT, "NotMember")
    other_para = COLLATOR.sign(Topic("polkadot", "upward", "2001"), 1, b"x").encode()
    assert admit(other_para, origin="2001") == (Verdict.REJECT, "NotMember")
    assert admit(COLLATOR.sign(UPWARD, 1, b"x").encode(), origin="2001") == (Verdict.REJECT, "NotMember")
    kusama = COLLATOR.sign(Topic("kusama", "upward", "2000"), 1, b"x").encode()
    assert admit(kusama) == (Verdict.REJECT, "NotMember")


def test_account_and_root_membership() -> None:
    account = ALICE_KEY.public_key.hex()
    signed = ALICE_KEY.sign(Topic("polkadot", "extrinsics", account), 1, b"c").encode()
    assert admit(signed, stream="extrinsics", origin=account) == (Verdict.ACCEPT, None)
    root = ROOT_KEY.sign(Topic("polkadot", "extrinsics", "root"), 1, b"c").encode()
    assert admit(root, stream="extrinsics", origin="root") == (Verdict.ACCEPT, None)
    fake_root = ALICE_KEY.sign(Topic("polkadot", "extrinsics", "root"), 1, b"c").encode()
    assert admit(fake_root, stream="extrinsics", origin="root") == (Verdict.REJECT, "NotMember")


def test_ignores_duplicates_and_replays() -> None:
    txn = fresh_txn()
    first = COLLATOR.sign(UPWARD, 2, b"x").encode()
    assert admit(first, txn=txn) == (Verdict.ACCEPT, None)
    assert admit(first, txn=txn) == (Verdict.IGNORE, "Duplicate")
    assert admit(COLLATOR.sign(UPWARD, 1, b"older").encode(), txn=txn) == (Verdict.IGNORE, "Duplicate")
    assert admit(COLLATOR.sign(UPWARD, 3, b"newer").encode(), txn=txn) == (Verdict.ACCEPT, None)


def test_rejects_oversized_messages() -> None:
    fits = COLLATOR.sign(UPWARD, 1, bytes(100)).encode()
    admission = Admission(REGISTRY, AdmissionConfig(max_message_size=len(fits)))
    assert admit(fits, admission) == (Verdict.ACCEPT, None)
    assert admit(COLLATOR.sign(UPWARD, 2, bytes(101)).encode(), admission) == (Verdict.REJECT, "MessageTooLarge")


@pytest.mark.parametrize("refusal", ["MessageTooLarge", "RateLimited", "BadFormat"])
def test_a_seqno_refused_after_the_duplicate_check_is_spent(refusal: str) -> None:
    """The watermark is the seen-set of message ids (sender, seqno). An authentic envelope
    spends its seqno whatever steps 4 to 6 decide, so its replay is an ignored Duplicate, never a second
    refusal (or a later acceptance); the sender's retry, with its next seqno, is admitted."""
    big = COLLATOR.sign(UPWARD, 1, bytes(200)).encode()
    config = AdmissionConfig(max_message_size=len(big) - 1 if refusal == "MessageTooLarge" else 1 << 20,
                             max_messages_per_block=1)
    admission, txn = Admission(REGISTRY, config), fresh_txn()
    rate = RateCounter()
    if refusal == "RateLimited":
        assert admit(COLLATOR.sign(UPWARD, 0, b"first").encode(), admission, rate=rate, txn=txn)[0] is Verdict.ACCEPT
    validate = refuse if refusal == "BadFormat" else accept_all
    result = admission.admit(txn, "upward", "2000", big, rate, validate)
    assert (result.verdict, result.reason) == (Verdict.REJECT, refusal)
    replay = admission.admit(txn, "upward", "2000", big, RateCounter(), accept_all)
    assert (replay.verdict, replay.reason) == (Verdict.IGNORE, "Duplicate")
    retry = COLLATOR.sign(UPWARD, 2, b"small").encode()
    assert admit(retry, admission, rate=RateCounter(), txn=txn) == (Verdict.ACCEPT, None)


def test_a_lower_seqno_never_seen_is_ignored_as_out_of_order() -> None:
    """The documented cost of a watermark over a seen-set: a sender that goes back (a seqno below its highest,
    never used) is ignored like a replay. On a Kafka topic a genuine sender's envelopes keep their order, so only
    a sender that rewinds its counter gets here, and nothing it sent before is ever admitted twice."""
    txn = fresh_txn()
    assert admit(COLLATOR.sign(UPWARD, 5, b"x").encode(), txn=txn) == (Verdict.ACCEPT, None)
    assert admit(COLLATOR.sign(UPWARD, 4, b"never seen").encode(), txn=txn) == (Verdict.IGNORE, "Duplicate")


def test_rate_limit_counts_per_block_and_origin() -> None:
    admission = Admission(REGISTRY, AdmissionConfig(max_messages_per_block=2))
    txn, rate = fresh_txn(), RateCounter()
    verdicts = [admit(COLLATOR.sign(UPWARD, n, b"x").encode(), admission, rate=rate, txn=txn) for n in (1, 2, 3)]
    assert verdicts == [(Verdict.ACCEPT, None), (Verdict.ACCEPT, None), (Verdict.REJECT, "RateLimited")]
    assert admit(COLLATOR.sign(UPWARD, 4, b"x").encode(), admission, rate=RateCounter(), txn=txn)[0] is Verdict.ACCEPT


def test_custom_validation_runs_last_and_its_error_is_the_reason() -> None:
    result = Admission(REGISTRY).admit(fresh_txn(), "upward", "2000", COLLATOR.sign(UPWARD, 1, b"x").encode(),
                                       RateCounter(), refuse)
    assert (result.verdict, result.reason) == (Verdict.REJECT, "BadFormat")


def test_check_order_signature_before_membership_before_duplicate() -> None:
    txn = fresh_txn()
    stranger_forged = STRANGER.sign(UPWARD, 1, b"x")
    broken = Envelope(stranger_forged.sender, 1, UPWARD, b"z", stranger_forged.signature).encode()
    assert admit(broken, txn=txn)[1] == "BadSignature"
    assert admit(stranger_forged.encode(), txn=txn)[1] == "NotMember"
    assert admit(stranger_forged.encode(), txn=txn)[1] == "NotMember"


def test_malformed_origin_and_json() -> None:
    assert admit(COLLATOR.sign(UPWARD, 1, b"x").encode(), origin="02000") == (Verdict.REJECT, "Malformed")
    upper = ALICE_KEY.public_key.hex().upper()
    signed = ALICE_KEY.sign(Topic("polkadot", "extrinsics", upper), 1, b"c").encode()
    assert admit(signed, stream="extrinsics", origin=upper) == (Verdict.REJECT, "Malformed")
    with pytest.raises(EnvelopeDecodeError):
        Envelope.from_json({"from": "zz"})


GOOD = COLLATOR.sign(UPWARD, 9, b"\x05\x04" + bytes(40)).encode()


@given(st.binary(max_size=400))
@example(b"")
@example(GOOD[:-1])
def test_random_bytes_end_in_a_typed_rejection(raw: bytes) -> None:
    verdict, reason = admit(raw)
    assert verdict is Verdict.REJECT and reason in REASONS


@given(st.integers(0, len(GOOD) - 1))
def test_truncation_ends_in_a_typed_rejection(cut: int) -> None:
    assert admit(GOOD[:cut]) == (Verdict.REJECT, "Malformed")


@given(st.integers(0, len(GOOD) * 8 - 1))
def test_bit_flips_end_in_a_typed_rejection(bit: int) -> None:
    flipped = bytearray(GOOD)
    flipped[bit // 8] ^= 1 << (bit % 8)
    verdict, reason = admit(bytes(flipped))
    assert verdict is Verdict.REJECT and reason in {"Malformed", "BadSignature", "NotMember"}


@given(st.lists(st.integers(1, 6), min_size=1, max_size=8))
def test_replays_are_ignored_exactly_once_admitted(seqnos: list[int]) -> None:
    txn = fresh_txn()
    best = 0
    for seqno in seqnos:
        verdict, reason = admit(COLLATOR.sign(UPWARD, seqno, b"m").encode(), txn=txn)
        if seqno > best:
            assert verdict is Verdict.ACCEPT
            best = seqno
        else:
            assert (verdict, reason) == (Verdict.IGNORE, "Duplicate")


def test_key_registry_json_round_trip() -> None:
    assert KeyRegistry.from_json(REGISTRY.to_json()) == REGISTRY


@pytest.mark.parametrize("raw, origin, reason", [
    (b"\x00" * 10, "2000", "Malformed"),
    (COLLATOR.sign(UPWARD, 1, b"x").encode(), "02000", "Malformed"),
    (Envelope(COLLATOR.public_key, 1, UPWARD, b"y", COLLATOR.sign(UPWARD, 1, b"x").signature).encode(), "2000",
     "BadSignature"),
    (STRANGER.sign(UPWARD, 1, b"x").encode(), "2000", "NotMember"),
    (COLLATOR.sign(Topic("kusama", "upward", "2000"), 1, b"x").encode(), "2000", "NotMember"),
])
def test_authenticate_is_admissions_stateless_steps(raw: bytes, origin: str, reason: str) -> None:
    with pytest.raises(Unauthenticated) as refused:
        authenticate(REGISTRY, "polkadot", "upward", origin, raw)
    assert refused.value.reason_code == reason
    assert admit(raw, origin=origin) == (Verdict.REJECT, reason)
    passed = authenticate(REGISTRY, "polkadot", "upward", "2000", GOOD)
    assert passed.envelope == Envelope.decode(GOOD) and passed.origin == Origin.parse("upward", "2000")


def test_a_record_authenticated_on_arrival_is_not_verified_again() -> None:
    calls: list[Envelope] = []

    def counting(envelope: Envelope) -> bool:
        calls.append(envelope)
        return verify_signature(envelope)

    admission = Admission(REGISTRY, check_signature=counting)
    admission.authenticate("upward", "2000", GOOD)
    assert admit(GOOD, admission) == (Verdict.ACCEPT, None)
    assert len(calls) == 1
    assert admit(GOOD, admission)[0] is Verdict.ACCEPT and len(calls) == 2  # remembered once, then verified


def test_admission_answers_as_its_signature_check_does() -> None:
    """The check admission is given decides ``BadSignature``: a check that refuses everything refuses a good
    envelope, and one that accepts everything still leaves the other checks to refuse a wrong topic."""
    assert admit(GOOD, Admission(REGISTRY, check_signature=lambda envelope: False)) == (Verdict.REJECT, "BadSignature")
    with pytest.raises(Unauthenticated) as refused:
        authenticate(REGISTRY, "polkadot", "horizontal", "2000", GOOD, check_signature=lambda envelope: True)
    assert refused.value.reason_code == "NotMember"


@pytest.mark.parametrize("body", [
    [], {"para_keys": []}, {"para_keys": {"-1": []}}, {"para_keys": {"07": []}}, {"para_keys": {"7": "0x00"}},
    {"accounts": ["0x00"]}, {"root_keys": [7]}, {"author_keys": "0x" + "11" * 32}, {"colour": []},
    {"para_keys": {"1" * 5000: []}},
])
def test_key_registry_json_is_strict(body: object) -> None:
    with pytest.raises(ValueError):
        KeyRegistry.from_json(body)


PEER = Signer(bytes([11]) * 32)
TWO_PARAS = KeyRegistry(para_keys={2000: frozenset({COLLATOR.public_key}), 2001: frozenset({PEER.public_key})})
PENALTIES = AdmissionConfig(max_messages_per_block=5, throttled_messages_per_block=1, penalty_per_rejection=10,
                            penalty_threshold=30, max_penalty=50, penalty_decay_per_block=1)


class Sender:
    """One para's collator sending numbered envelopes on ``upward`` through one admission and transaction."""

    def __init__(self, admission: Admission, txn: object, key: Signer, para: int) -> None:
        self.admission, self.txn, self.key, self.para, self.seqno = admission, txn, key, para, 0

    def send(self, count: int, rate: RateCounter, validate: object = accept_all) -> list[str]:
        """Reasons per envelope ("ok" when accepted)."""
        out = []
        for _ in range(count):
            self.seqno += 1
            raw = self.key.sign(Topic("polkadot", "upward", str(self.para)), self.seqno, b"m").encode()
            result = self.admission.admit(self.txn, "upward", str(self.para), raw, rate, validate)  # type: ignore[arg-type]
            out.append(result.reason or "ok")
        return out

    def points(self, block: int) -> int:
        return penalty(self.txn, PENALTIES, "upward", str(self.para), block)  # type: ignore[arg-type]


def test_a_flooding_origin_is_throttled_a_well_behaved_one_never_and_penalties_decay() -> None:
    """Rejections at steps 4-6 penalise the authenticated (stream, origin); at the threshold its
    quota drops to the throttled one, whose excess is refused as Throttled (and penalised); points decay one per
    relay block until the origin has its full quota again. A para sending within its quota is never touched."""
    admission, txn = Admission(TWO_PARAS, PENALTIES), fresh_txn()
    flooder, polite = Sender(admission, txn, COLLATOR, 2000), Sender(admission, txn, PEER, 2001)
    rate = RateCounter(block=1)
    assert flooder.send(9, rate) == ["ok"] * 5 + ["RateLimited"] * 3 + ["Throttled"]  # throttled at 30 points
    assert polite.send(5, rate) == ["ok"] * 5
    assert (flooder.points(1), polite.points(1)) == (40, 0)
    rate = RateCounter(block=2)
    assert flooder.send(3, rate) == ["ok", "Throttled", "Throttled"]
    assert polite.send(5, rate) == ["ok"] * 5
    assert flooder.points(2) == 50  # 39 + 2 x 10, capped at max_penalty
    assert flooder.points(21) == 31 and flooder.send(2, RateCounter(block=21)) == ["ok", "Throttled"]
    assert flooder.points(21) == 41
    assert flooder.points(32) == 30 and flooder.points(33) == 29
    assert flooder.send(5, RateCounter(block=33)) == ["ok"] * 5  # decayed below the threshold: full quota
    assert polite.points(33) == 0


def test_custom_validation_and_size_rejections_penalise_like_flooding() -> None:
    admission, txn = Admission(TWO_PARAS, PENALTIES), fresh_txn()
    sender = Sender(admission, txn, COLLATOR, 2000)
    assert sender.send(3, RateCounter(block=1), refuse) == ["BadFormat"] * 3
    assert sender.points(1) == 30
    assert sender.send(2, RateCounter(block=1)) == ["ok", "Throttled"]


def test_forgeries_replays_and_headers_never_cost_the_genuine_origin_anything() -> None:
    """Only an authenticated envelope with a new seqno can be penalised: forged, foreign and stranger envelopes
    fail before (steps 1-2), replays are IGNOREd, and header admission (no block in its context) keeps no score."""
    admission, txn = Admission(TWO_PARAS, PENALTIES), fresh_txn()
    genuine = COLLATOR.sign(UPWARD, 1, b"m").encode()
    flipped = bytearray(genuine)
    flipped[-1] ^= 1
    hostile = [bytes(flipped), STRANGER.sign(UPWARD, 2, b"m").encode(), PEER.sign(UPWARD, 3, b"m").encode(),
               COLLATOR.sign(Topic("kusama", "upward", "2000"), 4, b"m").encode(), b"garbage"]
    rate = RateCounter(block=1)
    assert admission.admit(txn, "upward", "2000", genuine, rate, accept_all).verdict is Verdict.ACCEPT
    for _ in range(20):
        for raw in [*hostile, genuine]:
            result = admission.admit(txn, "upward", "2000", raw, rate, refuse)
            assert result.verdict is not Verdict.ACCEPT and result.reason != "BadFormat"
    for seqno in range(5, 10):
        admission.admit(txn, "upward", "2000", COLLATOR.sign(UPWARD, seqno, b"m").encode(),
                            RateCounter(), refuse)
    assert penalty(txn, PENALTIES, "upward", "2000", 1) == 0
    after = admission.admit(txn, "upward", "2000", COLLATOR.sign(UPWARD, 100, b"m").encode(), rate, accept_all)
    assert after.verdict is Verdict.ACCEPT


@pytest.mark.parametrize("bad", [{"penalty_threshold": 0}, {"penalty_threshold": 300}, {"penalty_decay_per_block": 0},
                                 {"penalty_per_rejection": -1}, {"throttled_messages_per_block": -1}])
def test_penalty_settings_are_validated(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        AdmissionConfig(**bad)  # type: ignore[arg-type]
