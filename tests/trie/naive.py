"""A deliberately simple, from-scratch trie root: the reference the engine is checked against.

It shares no code with pubsub_core.trie: nibbles are lists of ints, the codec is transcribed from
Substrate's (polkadot-sdk ``substrate/primitives/trie/src/node_header.rs`` and ``node_codec.rs``) field by field, and
nothing is incremental.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

Hasher = Callable[[bytes], bytes]


def nibbles_of(key: bytes) -> tuple[int, ...]:
    out: list[int] = []
    for byte in key:
        out += [byte >> 4, byte & 15]
    return tuple(out)


def compact(n: int) -> bytes:
    if n < 64:
        return bytes([n << 2])
    if n < 1 << 14:
        return ((n << 2) | 1).to_bytes(2, "little")
    return ((n << 2) | 2).to_bytes(4, "little")


def header(first_bits: int, prefix_len: int, count: int) -> bytes:
    """``first_bits`` is the kind prefix already shifted into the top of the byte."""
    most = (1 << (8 - prefix_len)) - 1
    if count < most:
        return bytes([first_bits | count])
    out = [first_bits | most]
    rest = count - most
    while rest >= 255:
        out.append(255)
        rest -= 255
    out.append(rest)
    return bytes(out)


def pack(nibbles: tuple[int, ...]) -> bytes:
    if len(nibbles) % 2:
        nibbles = (0,) + nibbles
    return bytes(nibbles[i] * 16 + nibbles[i + 1] for i in range(0, len(nibbles), 2))


def encode_subtree(entries: dict[tuple[int, ...], bytes], hasher: Hasher, threshold: int | None) -> bytes:
    keys = list(entries)
    prefix: tuple[int, ...] = ()
    shortest = min(len(k) for k in keys)
    for i in range(shortest):
        if all(k[i] == keys[0][i] for k in keys):
            prefix += (keys[0][i],)
        else:
            break
    rest = {k[len(prefix) :]: v for k, v in entries.items()}
    value = rest.pop((), None)
    hashed = value is not None and threshold is not None and len(value) >= threshold
    value_part = b""
    if value is not None:
        value_part = hasher(value) if hashed else compact(len(value)) + value
    if not rest:
        assert value is not None
        kind = (0b001 << 5, 3) if hashed else (0b01 << 6, 2)
        return header(kind[0], kind[1], len(prefix)) + pack(prefix) + value_part
    bitmap = 0
    children = b""
    for nibble in range(16):
        group = {k[1:]: v for k, v in rest.items() if k[0] == nibble}
        if not group:
            continue
        bitmap |= 1 << nibble
        child = encode_subtree(group, hasher, threshold)
        children += compact(len(child)) + child if len(child) < 32 else compact(32) + hasher(child)
    if value is None:
        kind = (0b10 << 6, 2)
    elif hashed:
        kind = (0b0001 << 4, 4)
    else:
        kind = (0b11 << 6, 2)
    return header(kind[0], kind[1], len(prefix)) + pack(prefix) + bitmap.to_bytes(2, "little") + value_part + children


def naive_root(entries: Mapping[bytes, bytes], hasher: Hasher, threshold: int | None) -> bytes:
    """blake2/keccak root of ``entries`` with values of ``threshold`` bytes or more hashed (None: never)."""
    if not entries:
        return hasher(b"\x00")
    return hasher(encode_subtree({nibbles_of(k): v for k, v in entries.items()}, hasher, threshold))
