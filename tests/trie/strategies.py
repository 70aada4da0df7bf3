"""Hypothesis strategies for trie tests: keys crowded onto few prefixes, values around the V1 threshold."""

from __future__ import annotations

from hypothesis import strategies as st

# Few distinct bytes so keys share prefixes, nest (one key a prefix of another) and split branches often.
key_bytes = st.sampled_from([0x00, 0x01, 0x10, 0x11, 0x1F, 0xF0, 0xFF])
keys = st.one_of(
    st.binary(min_size=0, max_size=0),
    st.lists(key_bytes, min_size=1, max_size=4).map(bytes),
    st.binary(min_size=32, max_size=32),
)
# 32 bytes stays inline under V1, 33 becomes a value node; long values make nodes hash instead of inline.
values = st.one_of(
    st.sampled_from([b"", b"\x01", b"v" * 31, b"w" * 32, b"x" * 33, b"y" * 70]),
    st.binary(max_size=40),
)
changes = st.dictionaries(keys, st.one_of(st.none(), values), min_size=1, max_size=12)
batches = st.lists(changes, min_size=1, max_size=5)
entries = st.dictionaries(keys, values, min_size=0, max_size=20)
