"""xxHash64 and Substrate's Twox storage hashers (twox64, twox128, Twox64Concat), in pure Python.

Needed for storage-key order: ``TtlData`` is scanned in hashed-key order, as ``on_idle`` does upstream.
"""

from __future__ import annotations

__all__ = ["twox64", "twox64_concat", "twox128", "xxh64"]

_M = (1 << 64) - 1
_P1 = 11400714785074694791
_P2 = 14029467366897019727
_P3 = 1609587929392839161
_P4 = 9650029242287828579
_P5 = 2870177450012600261


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _M
    return (_rotl(acc, 31) * _P1) & _M


def _merge(acc: int, val: int) -> int:
    acc ^= _round(0, val)
    return (acc * _P1 + _P4) & _M


def xxh64(data: bytes, seed: int = 0) -> int:
    """The 64-bit xxHash of ``data`` with ``seed``."""
    n = len(data)
    i = 0
    if n >= 32:
        v1 = (seed + _P1 + _P2) & _M
        v2 = (seed + _P2) & _M
        v3 = seed & _M
        v4 = (seed - _P1) & _M
        while i + 32 <= n:
            v1 = _round(v1, int.from_bytes(data[i : i + 8], "little"))
            v2 = _round(v2, int.from_bytes(data[i + 8 : i + 16], "little"))
            v3 = _round(v3, int.from_bytes(data[i + 16 : i + 24], "little"))
            v4 = _round(v4, int.from_bytes(data[i + 24 : i + 32], "little"))
            i += 32
        acc = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
        for v in (v1, v2, v3, v4):
            acc = _merge(acc, v)
    else:
        acc = (seed + _P5) & _M
    acc = (acc + n) & _M
    while i + 8 <= n:
        acc ^= _round(0, int.from_bytes(data[i : i + 8], "little"))
        acc = (_rotl(acc, 27) * _P1 + _P4) & _M
        i += 8
    if i + 4 <= n:
        acc ^= (int.from_bytes(data[i : i + 4], "little") * _P1) & _M
        acc = (_rotl(acc, 23) * _P2 + _P3) & _M
        i += 4
    while i < n:
        acc ^= (data[i] * _P5) & _M
        acc = (_rotl(acc, 11) * _P1) & _M
        i += 1
    acc ^= acc >> 33
    acc = (acc * _P2) & _M
    acc ^= acc >> 29
    acc = (acc * _P3) & _M
    acc ^= acc >> 32
    return acc


def twox64(data: bytes) -> bytes:
    """``sp_core::twox_64``: xxh64 with seed 0, little-endian."""
    return xxh64(data, 0).to_bytes(8, "little")


def twox128(data: bytes) -> bytes:
    """``sp_core::twox_128``: xxh64 seeds 0 and 1, concatenated little-endian."""
    return xxh64(data, 0).to_bytes(8, "little") + xxh64(data, 1).to_bytes(8, "little")


def twox64_concat(data: bytes) -> bytes:
    """The ``Twox64Concat`` storage hasher: twox64(data) ‖ data."""
    return twox64(data) + data
