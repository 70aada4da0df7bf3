"""SCALE encoding, written by hand (tests check it against a scalecodec registry, tests/support/scale_registry.py)."""

from pubsub_core.codec.scale import (
    ScaleDecodeError,
    ScaleReader,
    decode_compact,
    encode_bytes,
    encode_compact,
    encode_u8,
    encode_u16,
    encode_u32,
    encode_u64,
    encode_u128,
)
from pubsub_core.codec.twox import twox64, twox64_concat, twox128
from pubsub_core.codec.types import KEY_LEN, PublishedEntry, PublisherInfo, SubscribedKey, TtlKind, TtlState

__all__ = [
    "KEY_LEN",
    "PublishedEntry",
    "PublisherInfo",
    "SubscribedKey",
    "TtlKind",
    "TtlState",
    "twox64",
    "twox64_concat",
    "twox128",
    "ScaleDecodeError",
    "ScaleReader",
    "decode_compact",
    "encode_bytes",
    "encode_compact",
    "encode_u8",
    "encode_u16",
    "encode_u32",
    "encode_u64",
    "encode_u128",
]
