"""Origins and the key registry: which ed25519 keys may speak for which para, account or governance.

Origins are the Kafka keys of the input streams: on ``blocks`` ``"author"`` (the block author); on ``upward``
and ``horizontal`` a para id (``"2000"``); on
``extrinsics`` ``"root"`` (governance), ``"para:<id>"`` (a para's own calls) or a 64-digit lowercase hex
account id. Each origin has exactly one spelling, so the seqno watermark of an origin cannot be split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from pubsub_core.envelope.errors import InvalidOrigin

__all__ = ["KeyRegistry", "Origin", "OriginKind", "PARA_STREAMS", "hex32", "para_id"]

PARA_STREAMS = frozenset({"upward", "horizontal"})
"""Streams keyed by a para id."""


class OriginKind(Enum):
    AUTHOR = "author"
    ROOT = "root"
    PARA = "para"
    ACCOUNT = "account"


@dataclass(frozen=True, slots=True, order=True)
class Origin:
    """Who a record speaks for: governance, a para, or a 32-byte account."""

    kind: OriginKind
    para_id: int = 0
    account: bytes = b""

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(self, kind: OriginKind, para_id: int = 0, account: bytes = b"") -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "para_id", para_id)
        object.__setattr__(self, "account", account)

    @classmethod
    def parse(cls, stream: str, text: str) -> Origin:
        """Parse a Kafka key of ``stream``; raise ``InvalidOrigin`` otherwise."""
        try:
            if stream == "blocks":
                if text == "author":
                    return cls(OriginKind.AUTHOR)
                raise ValueError("blocks come from the author")
            if stream in PARA_STREAMS:
                return cls(OriginKind.PARA, para_id(text))
            if text == "root":
                return cls(OriginKind.ROOT)
            if text.startswith("para:"):
                return cls(OriginKind.PARA, para_id(text[5:]))
            if len(text) == 64 and text == text.lower():
                return cls(OriginKind.ACCOUNT, account=bytes.fromhex(text))
        except ValueError as exc:
            raise InvalidOrigin(stream, text) from exc
        raise InvalidOrigin(stream, text)

    def sort_key(self) -> tuple[int, int, bytes]:
        """Deterministic order within a stream: root, then paras by id, then accounts by bytes."""
        # Compared by identity: a dict keyed by members hashed each one in enum.py's interpreted __hash__ (five
        # calls per key, about 32,000 a simulator run).
        kind = self.kind
        rank = 1 if kind is OriginKind.PARA else 2 if kind is OriginKind.ACCOUNT else 0
        return rank, self.para_id, self.account


def para_id(text: str) -> int:
    """A para id written as a canonical decimal u32 (no sign, no leading zero); ``ValueError`` otherwise."""
    if len(text) > 10 or not text.isascii() or not text.isdigit() or (len(text) > 1 and text[0] == "0"):
        raise ValueError(f"not a canonical para id: {text[:20]!r}")
    value = int(text)
    if value >= 1 << 32:
        raise ValueError(f"para id {value} does not fit in u32")
    return value


@dataclass(frozen=True)
class KeyRegistry:
    """Realm membership: collator keys per para, known accounts (who sign with their own key), root keys,
    and the block author's keys."""

    para_keys: dict[int, frozenset[bytes]] = field(default_factory=dict)
    accounts: frozenset[bytes] = frozenset()
    root_keys: frozenset[bytes] = frozenset()
    author_keys: frozenset[bytes] = frozenset()

    def is_member(self, origin: Origin, key: bytes) -> bool:
        """Whether ``key`` may sign for ``origin``."""
        if origin.kind is OriginKind.AUTHOR:
            return key in self.author_keys
        if origin.kind is OriginKind.ROOT:
            return key in self.root_keys
        if origin.kind is OriginKind.PARA:
            return key in self.para_keys.get(origin.para_id, frozenset())
        return key == origin.account and key in self.accounts

    def to_json(self) -> dict[str, object]:
        return {
            "para_keys": {str(p): sorted("0x" + k.hex() for k in keys) for p, keys in sorted(self.para_keys.items())},
            "accounts": sorted("0x" + a.hex() for a in self.accounts),
            "root_keys": sorted("0x" + k.hex() for k in self.root_keys),
            "author_keys": sorted("0x" + k.hex() for k in self.author_keys),
        }

    @classmethod
    def from_json(cls, body: object) -> KeyRegistry:
        """Inverse of ``to_json``, strict: every key is ``0x`` and 64 hex digits, para ids are canonical u32
        decimals, no other field; ``ValueError`` otherwise (never another exception, whatever the JSON)."""
        if not isinstance(body, dict):
            raise ValueError("a key registry is a JSON object")
        unknown = sorted(set(body) - _REGISTRY_FIELDS)
        if unknown:
            raise ValueError(f"unknown key registry fields {unknown[:3]}")
        para_keys = body.get("para_keys", {})
        if not isinstance(para_keys, dict):
            raise ValueError("para_keys must be an object")
        return cls(
            {para_id(str(p)): _keys(keys) for p, keys in para_keys.items()},
            _keys(body.get("accounts", [])),
            _keys(body.get("root_keys", [])),
            _keys(body.get("author_keys", [])),
        )


_REGISTRY_FIELDS = frozenset({"para_keys", "accounts", "root_keys", "author_keys"})


def _keys(value: object) -> frozenset[bytes]:
    if not isinstance(value, list):
        raise ValueError("expected a list of keys")
    return frozenset(hex32(item) for item in value)


def hex32(value: object) -> bytes:
    """32 bytes (a key, an account, a digest) written as ``0x`` and 64 hex digits; ``ValueError`` otherwise."""
    if not isinstance(value, str) or len(value) != 66 or not value.startswith("0x"):
        raise ValueError(f"expected 0x and 64 hex digits, got {str(value)[:80]!r}")
    return bytes.fromhex(value[2:])
