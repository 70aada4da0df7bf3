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

__all__ = ["KeyRegistry", "Origin", "OriginKind", "PARA_STREAMS"]

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

    @classmethod
    def parse(cls, stream: str, text: str) -> Origin:
        """Parse a Kafka key of ``stream``; raise ``InvalidOrigin`` otherwise."""
        try:
            if stream == "blocks":
                if text == "author":
                    return cls(OriginKind.AUTHOR)
                raise ValueError("blocks come from the author")
            if stream in PARA_STREAMS:
                return cls(OriginKind.PARA, _para(text))
            if text == "root":
                return cls(OriginKind.ROOT)
            if text.startswith("para:"):
                return cls(OriginKind.PARA, _para(text[5:]))
            if len(text) == 64 and text == text.lower():
                return cls(OriginKind.ACCOUNT, account=bytes.fromhex(text))
        except ValueError as exc:
            raise InvalidOrigin(stream, text) from exc
        raise InvalidOrigin(stream, text)

    def sort_key(self) -> tuple[int, int, bytes]:
        """Deterministic order within a stream: root, then paras by id, then accounts by bytes."""
        rank = {OriginKind.AUTHOR: 0, OriginKind.ROOT: 0, OriginKind.PARA: 1, OriginKind.ACCOUNT: 2}[self.kind]
        return rank, self.para_id, self.account


def _para(text: str) -> int:
    if not text.isdigit() or (len(text) > 1 and text[0] == "0"):
        raise ValueError(f"not a canonical para id: {text!r}")
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
    def from_json(cls, body: dict[str, object]) -> KeyRegistry:
        para_keys = body.get("para_keys", {})
        if not isinstance(para_keys, dict):
            raise ValueError("para_keys must be an object")
        return cls(
            {int(p): frozenset(_unhex(k) for k in keys) for p, keys in para_keys.items()},
            frozenset(_unhex(a) for a in _list(body.get("accounts", []))),
            frozenset(_unhex(k) for k in _list(body.get("root_keys", []))),
            frozenset(_unhex(k) for k in _list(body.get("author_keys", []))),
        )


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise ValueError("expected a list")
    return value


def _unhex(value: object) -> bytes:
    text = str(value)
    return bytes.fromhex(text[2:] if text.startswith("0x") else text)
