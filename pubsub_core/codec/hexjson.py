"""Bytes in JSON records: 0x-prefixed lowercase hex, parsed strictly."""

__all__ = ["hex_0x", "unhex_0x"]


def hex_0x(data: bytes) -> str:
    """Bytes as the 0x-prefixed hex the relay records use in JSON."""
    return "0x" + data.hex()


def unhex_0x(text: object) -> bytes:
    """Parse 0x-prefixed hex; ValueError on anything else."""
    value = str(text)
    if not value.startswith("0x"):
        raise ValueError(f"expected 0x-prefixed hex, got {value[:20]!r}")
    return bytes.fromhex(value[2:])
