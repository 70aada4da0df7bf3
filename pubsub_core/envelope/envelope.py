"""Signed envelopes: the DeP2P pub-sub spec's PubSub message ``{From, SeqNo, Topic, Data, Signature}`` at our Kafka
edge.

Wire form (SCALE): ``from[32] ‖ seqno u64 ‖ realm str ‖ stream str ‖ origin str ‖ data Vec<u8> ‖ signature[64]``,
the DeP2P message's field order. The signature is ed25519 (RFC 8032) by ``from`` over ``SIGNING_DOMAIN`` followed by
every field before the signature, so an envelope cannot be replayed into another realm, stream or origin.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nacl.exceptions import CryptoError
from nacl.signing import VerifyKey

from pubsub_core.codec.hexjson import unhex_0x
from pubsub_core.codec.scale import ScaleDecodeError, ScaleReader, encode_bytes, encode_u64
from pubsub_core.envelope.errors import EnvelopeDecodeError

__all__ = ["Envelope", "SIGNING_DOMAIN", "SignatureCheck", "Signer", "Topic", "verify_ed25519", "verify_signature"]

SIGNING_DOMAIN = b"rfc0160/envelope/v1"
MAX_TOPIC_PART = 256
"""Realm, stream and origin names are short; longer ones are malformed rather than merely large."""


@dataclass(frozen=True, slots=True)
class Topic:
    """Where an envelope belongs: the realm (relay chain), the stream (Kafka topic suffix) and the origin
    (the Kafka key: a para id, ``root``, ``para:<id>`` or an account in hex)."""

    realm: str
    stream: str
    origin: str

    def encode(self) -> bytes:
        return b"".join(encode_bytes(part.encode()) for part in (self.realm, self.stream, self.origin))

    def to_json(self) -> dict[str, str]:
        return {"realm": self.realm, "stream": self.stream, "origin": self.origin}


@dataclass(frozen=True, slots=True)
class Envelope:
    """A signed message from ``sender`` (a 32-byte ed25519 public key), numbered ``seqno`` per sender."""

    sender: bytes
    seqno: int
    topic: Topic
    data: bytes
    signature: bytes

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(self, sender: bytes, seqno: int, topic: Topic, data: bytes, signature: bytes) -> None:
        object.__setattr__(self, "sender", sender)
        object.__setattr__(self, "seqno", seqno)
        object.__setattr__(self, "topic", topic)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "signature", signature)
        self.__post_init__()

    def __post_init__(self) -> None:
        if len(self.sender) != 32 or len(self.signature) != 64 or not 0 <= self.seqno < 1 << 64:
            raise ValueError("an envelope needs a 32-byte sender, a u64 seqno and a 64-byte signature")

    def signing_payload(self) -> bytes:
        """The bytes the signature covers."""
        return SIGNING_DOMAIN + self.sender + encode_u64(self.seqno) + self.topic.encode() + encode_bytes(self.data)

    def encode(self) -> bytes:
        """The wire form (what a Kafka record's value holds)."""
        return self.signing_payload()[len(SIGNING_DOMAIN) :] + self.signature

    @classmethod
    def decode(cls, raw: bytes) -> Envelope:
        """Parse the wire form, whole; raise ``EnvelopeDecodeError`` on anything else."""
        reader = ScaleReader(raw)
        try:
            sender = reader.take(32)
            seqno = reader.u64()
            parts = [reader.bytes_vec(MAX_TOPIC_PART).decode("utf-8") for _ in range(3)]
            data = reader.bytes_vec()
            signature = reader.take(64)
            reader.finish()
        except (ScaleDecodeError, UnicodeDecodeError) as exc:
            raise EnvelopeDecodeError(str(exc), raw, reader.offset) from exc
        return cls(sender, seqno, Topic(*parts), data, signature)

    def to_json(self) -> dict[str, object]:
        return {
            "from": "0x" + self.sender.hex(),
            "seqno": self.seqno,
            "topic": self.topic.to_json(),
            "data": "0x" + self.data.hex(),
            "signature": "0x" + self.signature.hex(),
        }

    @classmethod
    def from_json(cls, body: dict[str, object]) -> Envelope:
        """Inverse of ``to_json``; raise ``EnvelopeDecodeError`` on a malformed object."""
        try:
            topic = body["topic"]
            if not isinstance(topic, dict):
                raise TypeError("topic is not an object")
            return cls(
                unhex_0x(body["from"]),
                int(str(body["seqno"])),
                Topic(str(topic["realm"]), str(topic["stream"]), str(topic["origin"])),
                unhex_0x(body["data"]),
                unhex_0x(body["signature"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EnvelopeDecodeError(f"bad JSON envelope: {exc}", repr(body).encode(), 0) from exc


SignatureCheck = Callable[[Envelope], bool]
"""What admission asks of an envelope's signature: ``verify_signature``, or anything that answers exactly as it
does (a test's counting check)."""


def verify_signature(envelope: Envelope) -> bool:
    """Whether ``signature`` is ``sender``'s ed25519 signature of the signing payload (never raises)."""
    return verify_ed25519(envelope.sender, envelope.signing_payload(), envelope.signature)


def verify_ed25519(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """RFC 8032 Ed25519 verification of ``signature`` over ``message`` by ``public_key`` (never raises).

    libsodium (PyNaCl) verifies; pycryptodome still signs. libsodium rather than pycryptodome's
    ``eddsa.new(key, "rfc8032").verify``: several times faster per envelope (docs/benchmarks.md, "Measured code
    choices"). Both agree on every RFC 8032 Ed25519 test
    vector (tests/relay/test_signature_vectors.py). libsodium is the stricter: it refuses small-order public
    keys and R points and checks the cofactorless equation, so a "signature" that anyone can make for a
    small-order key, which pycryptodome accepts, is refused.
    """
    try:
        VerifyKey(public_key).verify(message, signature)
    except (CryptoError, ValueError):
        return False
    return True


class Signer:
    """An ed25519 key from a 32-byte seed (tests and producers use fixed seeds), signing envelopes."""

    def __init__(self, seed: bytes) -> None:
        # Imported here, not with the module: only producers and tests sign, and pycryptodome's import (its cffi
        # declarations parsed at load) would slow every job worker's start
        # (docs/benchmarks.md, "Measured code choices").
        from Crypto.Signature import eddsa

        if len(seed) != 32:
            raise ValueError(f"an ed25519 seed is 32 bytes, got {len(seed)}")
        key = eddsa.import_private_key(seed)
        self._scheme = eddsa.new(key, "rfc8032")  # stateless between messages: one per key
        self.public_key: bytes = key.public_key().export_key(format="raw")

    def __repr__(self) -> str:
        return f"Signer(public_key=0x{self.public_key.hex()})"

    def sign(self, topic: Topic, seqno: int, data: bytes) -> Envelope:
        unsigned = Envelope(self.public_key, seqno, topic, data, bytes(64))
        signature = self._scheme.sign(unsigned.signing_payload())
        return Envelope(self.public_key, seqno, topic, data, signature)
