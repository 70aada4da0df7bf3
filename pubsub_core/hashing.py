"""Hash functions of the relay chain (Blake2-256 for the trie and for SubscribedKey::from_data)."""

from hashlib import blake2b

__all__ = ["blake2_256"]


def blake2_256(data: bytes) -> bytes:
    """Blake2b with a 32-byte digest, as sp_core::hashing::blake2_256."""
    return blake2b(data, digest_size=32).digest()
