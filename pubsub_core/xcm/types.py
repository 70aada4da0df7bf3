"""A message model for an XCM v5 subset, with a hand-written SCALE codec byte-identical to polkadot-sdk.

Supported: ``VersionedXcm::V5`` carrying WithdrawAsset (0), ReserveAssetDeposited (1), ReceiveTeleportedAsset (2),
TransferAsset (4), ClearOrigin (10), DepositAsset (13), BuyExecution (19), SetTopic (44) and the RFC-0160
``Publish { key, value, ttl }`` at index 52 (0x34). Assets are fungible only. Anything outside the subset
decodes to a typed ``XcmDecodeError``, never to a crash: upward messages arrive from untrusted parachains.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from pubsub_core.codec.scale import ScaleDecodeError, ScaleReader, encode_bytes, encode_compact, encode_u32
from pubsub_core.codec.types import KEY_LEN, U32_MAX
from pubsub_core.xcm.errors import XcmDecodeError

__all__ = [
    "AccountId32",
    "AccountIndex64",
    "AccountKey20",
    "Asset",
    "AssetFilter",
    "BuyExecution",
    "ClearOrigin",
    "DepositAsset",
    "GeneralIndex",
    "GeneralKey",
    "GlobalConsensus",
    "Instruction",
    "Junction",
    "Location",
    "MAX_INSTRUCTIONS_TO_DECODE",
    "MAX_ITEMS_IN_ASSETS",
    "MAX_PUBLISH_VALUE_LENGTH",
    "NetworkId",
    "OnlyChild",
    "PUBLISH_INDEX",
    "PalletInstance",
    "Parachain",
    "Publish",
    "ReceiveTeleportedAsset",
    "ReserveAssetDeposited",
    "SetTopic",
    "TransferAsset",
    "Weight",
    "WeightLimit",
    "WithdrawAsset",
    "Xcm",
    "decode_versioned_xcm",
    "encode_versioned_xcm",
]

XCM_VERSION = 5
PUBLISH_INDEX = 0x34
MAX_INSTRUCTIONS_TO_DECODE = 100
"""xcm v5 refuses to decode a message of more instructions."""
MAX_ITEMS_IN_ASSETS = 20
MAX_PUBLISH_VALUE_LENGTH = 1024
"""``xcm::v5::MaxPublishValueLength``: Publish values are a BoundedVec of this bound (the default of
``decode_versioned_xcm``'s ``max_value_length``; the relay's is ``RelayConfig.max_publish_value_length``)."""
MAX_JUNCTIONS = 8


@dataclass(frozen=True, slots=True)
class Weight:
    """Two-dimensional weight (ref time, proof size); encodes as two compact u64."""

    ref_time: int
    proof_size: int

    def __add__(self, other: Weight) -> Weight:
        return Weight(self.ref_time + other.ref_time, self.proof_size + other.proof_size)

    def all_gte(self, other: Weight) -> bool:
        return self.ref_time >= other.ref_time and self.proof_size >= other.proof_size

    def encode(self) -> bytes:
        return encode_compact(self.ref_time) + encode_compact(self.proof_size)


@dataclass(frozen=True, slots=True)
class NetworkId:
    """``NetworkId`` as its variant index and the raw bytes of its payload (we never interpret networks)."""

    index: int
    payload: bytes = b""

    def encode(self) -> bytes:
        return bytes((self.index,)) + self.payload


@dataclass(frozen=True, slots=True)
class Parachain:
    id: int

    def encode(self) -> bytes:
        return b"\x00" + encode_compact(self.id)


@dataclass(frozen=True, slots=True)
class AccountId32:
    id: bytes
    network: NetworkId | None = None

    def encode(self) -> bytes:
        return b"\x01" + _encode_network(self.network) + self.id


@dataclass(frozen=True, slots=True)
class AccountIndex64:
    index: int
    network: NetworkId | None = None

    def encode(self) -> bytes:
        return b"\x02" + _encode_network(self.network) + encode_compact(self.index)


@dataclass(frozen=True, slots=True)
class AccountKey20:
    key: bytes
    network: NetworkId | None = None

    def encode(self) -> bytes:
        return b"\x03" + _encode_network(self.network) + self.key


@dataclass(frozen=True, slots=True)
class PalletInstance:
    index: int

    def encode(self) -> bytes:
        return bytes((4, self.index))


@dataclass(frozen=True, slots=True)
class GeneralIndex:
    index: int

    def encode(self) -> bytes:
        return b"\x05" + encode_compact(self.index)


@dataclass(frozen=True, slots=True)
class GeneralKey:
    length: int
    data: bytes

    def encode(self) -> bytes:
        return bytes((6, self.length)) + self.data


@dataclass(frozen=True, slots=True)
class OnlyChild:
    def encode(self) -> bytes:
        return b"\x07"


@dataclass(frozen=True, slots=True)
class GlobalConsensus:
    network: NetworkId

    def encode(self) -> bytes:
        return b"\x09" + self.network.encode()


Junction = Union[
    Parachain, AccountId32, AccountIndex64, AccountKey20, PalletInstance, GeneralIndex, GeneralKey, OnlyChild,
    GlobalConsensus,
]


@dataclass(frozen=True, slots=True)
class Location:
    """``Location { parents, interior }``; ``interior`` is Here (empty) or X1..X8."""

    parents: int = 0
    interior: tuple[Junction, ...] = ()

    def __post_init__(self) -> None:
        if not 0 <= self.parents <= 255 or len(self.interior) > MAX_JUNCTIONS:
            raise ValueError(f"invalid location: {self.parents} parents, {len(self.interior)} junctions")

    @classmethod
    def parachain(cls, para_id: int) -> Location:
        """``(0, [Parachain(id)])``: a child parachain as the relay chain sees it."""
        return cls(0, (Parachain(para_id),))

    @classmethod
    def account(cls, account: bytes) -> Location:
        """``(0, [AccountId32 { network: None, id }])``: a relay-chain account."""
        return cls(0, (AccountId32(account),))

    def encode(self) -> bytes:
        return bytes((self.parents, len(self.interior))) + b"".join(j.encode() for j in self.interior)


@dataclass(frozen=True, slots=True)
class Asset:
    """A fungible ``Asset { id: AssetId(Location), fun: Fungible(amount) }``."""

    id: Location
    amount: int

    def encode(self) -> bytes:
        return self.id.encode() + b"\x00" + encode_compact(self.amount)


@dataclass(frozen=True, slots=True)
class AssetFilter:
    """``Definite(assets)`` when ``wild`` is None, else ``Wild(All)`` (wild == 0) or ``Wild(AllCounted(n))``."""

    assets: tuple[Asset, ...] = ()
    wild: int | None = None
    count: int = 0

    def encode(self) -> bytes:
        if self.wild is None:
            return b"\x00" + _encode_assets(self.assets)
        if self.wild == 0:
            return b"\x01\x00"
        return b"\x01\x02" + encode_compact(self.count)


@dataclass(frozen=True, slots=True)
class WeightLimit:
    """``Unlimited`` when ``limit`` is None, else ``Limited(limit)``."""

    limit: Weight | None = None

    def encode(self) -> bytes:
        return b"\x00" if self.limit is None else b"\x01" + self.limit.encode()


@dataclass(frozen=True, slots=True)
class WithdrawAsset:
    assets: tuple[Asset, ...]

    def encode(self) -> bytes:
        return b"\x00" + _encode_assets(self.assets)


@dataclass(frozen=True, slots=True)
class ReserveAssetDeposited:
    assets: tuple[Asset, ...]

    def encode(self) -> bytes:
        return b"\x01" + _encode_assets(self.assets)


@dataclass(frozen=True, slots=True)
class ReceiveTeleportedAsset:
    assets: tuple[Asset, ...]

    def encode(self) -> bytes:
        return b"\x02" + _encode_assets(self.assets)


@dataclass(frozen=True, slots=True)
class TransferAsset:
    assets: tuple[Asset, ...]
    beneficiary: Location

    def encode(self) -> bytes:
        return b"\x04" + _encode_assets(self.assets) + self.beneficiary.encode()


@dataclass(frozen=True, slots=True)
class ClearOrigin:
    def encode(self) -> bytes:
        return b"\x0a"


@dataclass(frozen=True, slots=True)
class DepositAsset:
    assets: AssetFilter
    beneficiary: Location

    def encode(self) -> bytes:
        return b"\x0d" + self.assets.encode() + self.beneficiary.encode()


@dataclass(frozen=True, slots=True)
class BuyExecution:
    fees: Asset
    weight_limit: WeightLimit

    def encode(self) -> bytes:
        return b"\x13" + self.fees.encode() + self.weight_limit.encode()


@dataclass(frozen=True, slots=True)
class SetTopic:
    topic: bytes

    def encode(self) -> bytes:
        return b"\x2c" + self.topic


@dataclass(frozen=True, slots=True)
class Publish:
    """RFC-0160 ``Publish { key: [u8; 32], value: BoundedVec<u8, MaxPublishValueLength>, ttl: u32 }`` (0 = infinite
    TTL). The value's bound is the receiver's: ``decode_versioned_xcm`` refuses a longer value."""

    key: bytes
    value: bytes
    ttl: int = 0

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(self, key: bytes, value: bytes, ttl: int = 0) -> None:
        if len(key) != KEY_LEN:
            raise ValueError(f"a Publish key is {KEY_LEN} bytes, got {len(key)}")
        if not 0 <= ttl <= U32_MAX:
            raise ValueError(f"ttl {ttl} does not fit in u32")
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "ttl", ttl)

    def encode(self) -> bytes:
        return bytes((PUBLISH_INDEX,)) + self.key + encode_bytes(self.value) + encode_u32(self.ttl)


Instruction = Union[
    WithdrawAsset, ReserveAssetDeposited, ReceiveTeleportedAsset, TransferAsset, ClearOrigin, DepositAsset,
    BuyExecution, SetTopic, Publish,
]


@dataclass(frozen=True, slots=True)
class Xcm:
    """An XCM v5 program: a sequence of instructions."""

    instructions: tuple[Instruction, ...]

    def encode(self) -> bytes:
        return encode_compact(len(self.instructions)) + b"".join(i.encode() for i in self.instructions)


def encode_versioned_xcm(message: Xcm) -> bytes:
    """``VersionedXcm::V5(message).encode()``: 0x05 ‖ the program."""
    return bytes((XCM_VERSION,)) + message.encode()


def _encode_network(network: NetworkId | None) -> bytes:
    return b"\x00" if network is None else b"\x01" + network.encode()


def _encode_assets(assets: tuple[Asset, ...]) -> bytes:
    return encode_compact(len(assets)) + b"".join(a.encode() for a in assets)


# -- decoding -------------------------------------------------------------------------------------------


class _Fail(Exception):
    """Internal: a structural failure with its message, turned into XcmDecodeError at the boundary."""


def _network(r: ScaleReader) -> NetworkId:
    index = r.u8()
    start = r.offset
    if index == 0:
        r.take(32)
    elif index == 1:
        r.take(8 + 32)
    elif index in (2, 3, 4, 5, 6, 8, 9, 10):
        pass
    elif index == 7:
        r.compact()
    else:
        raise _Fail(f"NetworkId variant {index} is not in XCM v5")
    return NetworkId(index, r.data[start : r.offset])


def _opt_network(r: ScaleReader) -> NetworkId | None:
    flag = r.u8()
    if flag == 0:
        return None
    if flag == 1:
        return _network(r)
    raise _Fail(f"Option tag {flag}")


def _junction(r: ScaleReader) -> Junction:
    index = r.u8()
    if index == 0:
        para = r.compact()
        if para > U32_MAX:
            raise _Fail(f"para id {para} does not fit in u32")
        return Parachain(para)
    if index == 1:
        network = _opt_network(r)
        return AccountId32(r.take(32), network)
    if index == 2:
        network = _opt_network(r)
        return AccountIndex64(r.compact(), network)
    if index == 3:
        network = _opt_network(r)
        return AccountKey20(r.take(20), network)
    if index == 4:
        return PalletInstance(r.u8())
    if index == 5:
        return GeneralIndex(r.compact())
    if index == 6:
        return GeneralKey(r.u8(), r.take(32))
    if index == 7:
        return OnlyChild()
    if index == 9:
        return GlobalConsensus(_network(r))
    raise _Fail(f"Junction variant {index} is outside the supported subset")


def _location(r: ScaleReader) -> Location:
    parents = r.u8()
    count = r.u8()
    if count > MAX_JUNCTIONS:
        raise _Fail(f"Junctions variant {count}")
    return Location(parents, tuple(_junction(r) for _ in range(count)))


def _asset(r: ScaleReader) -> Asset:
    location = _location(r)
    fun = r.u8()
    if fun != 0:
        raise _Fail("only fungible assets are supported")
    return Asset(location, r.compact())


def _assets(r: ScaleReader) -> tuple[Asset, ...]:
    """``Assets`` decode only sorted and deduplicated (``Assets::from_sorted_and_deduplicated``)."""
    count = r.compact()
    if count > MAX_ITEMS_IN_ASSETS:
        raise _Fail(f"{count} assets exceed the v5 bound of {MAX_ITEMS_IN_ASSETS}")
    assets = tuple(_asset(r) for _ in range(count))
    for first, second in zip(assets, assets[1:]):
        if _location_key(first.id) >= _location_key(second.id):
            raise _Fail("assets are not sorted and deduplicated")
    return assets


def _network_key(network: NetworkId | None) -> tuple[int, ...]:
    """The derived ``Ord`` of ``Option<NetworkId>``: None first, then by variant and fields."""
    if network is None:
        return (0,)
    payload = network.payload
    if network.index == 1:
        return (1, 1, int.from_bytes(payload[:8], "little"), *payload[8:])
    if network.index == 7:
        return (1, 7, ScaleReader(payload).compact())
    return (1, network.index, *payload)


def _junction_key(junction: Junction) -> tuple[object, ...]:
    """The derived ``Ord`` of a ``Junction``: by variant index, then fields in declaration order."""
    if isinstance(junction, Parachain):
        return (0, junction.id)
    if isinstance(junction, AccountId32):
        return (1, _network_key(junction.network), junction.id)
    if isinstance(junction, AccountIndex64):
        return (2, _network_key(junction.network), junction.index)
    if isinstance(junction, AccountKey20):
        return (3, _network_key(junction.network), junction.key)
    if isinstance(junction, PalletInstance):
        return (4, junction.index)
    if isinstance(junction, GeneralIndex):
        return (5, junction.index)
    if isinstance(junction, GeneralKey):
        return (6, junction.length, junction.data)
    if isinstance(junction, OnlyChild):
        return (7,)
    return (9, _network_key(junction.network))


def _location_key(location: Location) -> tuple[object, ...]:
    """The derived ``Ord`` of a fungible asset's ``AssetId(Location)``: parents, then ``Junctions`` variant
    (its length), then junction by junction. Two fungible assets with equal ids must have been merged."""
    return (location.parents, len(location.interior), tuple(_junction_key(j) for j in location.interior))


def _filter(r: ScaleReader) -> AssetFilter:
    kind = r.u8()
    if kind == 0:
        return AssetFilter(_assets(r))
    if kind == 1:
        wild = r.u8()
        if wild == 0:
            return AssetFilter(wild=0)
        if wild == 2:
            return AssetFilter(wild=2, count=r.compact())
        raise _Fail(f"WildAsset variant {wild} is outside the supported subset")
    raise _Fail(f"AssetFilter variant {kind}")


def _weight_limit(r: ScaleReader) -> WeightLimit:
    kind = r.u8()
    if kind == 0:
        return WeightLimit()
    if kind == 1:
        return WeightLimit(Weight(r.compact(), r.compact()))
    raise _Fail(f"WeightLimit variant {kind}")


def _instruction(r: ScaleReader, max_value_length: int) -> Instruction:
    index = r.u8()
    if index == 0:
        return WithdrawAsset(_assets(r))
    if index == 1:
        return ReserveAssetDeposited(_assets(r))
    if index == 2:
        return ReceiveTeleportedAsset(_assets(r))
    if index == 4:
        assets = _assets(r)
        return TransferAsset(assets, _location(r))
    if index == 10:
        return ClearOrigin()
    if index == 13:
        asset_filter = _filter(r)
        return DepositAsset(asset_filter, _location(r))
    if index == 19:
        fees = _asset(r)
        return BuyExecution(fees, _weight_limit(r))
    if index == 44:
        return SetTopic(r.take(32))
    if index == PUBLISH_INDEX:
        key = r.take(KEY_LEN)
        value = r.bytes_vec(max_value_length)
        return Publish(key, value, r.u32())
    raise _Fail(f"instruction {index} is outside the supported v5 subset")


def _publish_fast(data: bytes, start: int, max_value_length: int) -> tuple[Publish, int] | None:
    """A well-formed ``Publish`` at ``start`` (its index byte) with a value under 16 KiB: the instruction and the
    offset after it; None for anything else, which ``_instruction`` then decodes or refuses with its own error.

    Hand-written: slicing at computed offsets replaces the reader's five calls per Publish (every Publish
    instruction is decoded twice per run, by admission and by dispatch; (docs/benchmarks.md, "Measured code choices")).
    """
    offset = start + 1 + KEY_LEN
    if offset >= len(data) or data[start] != PUBLISH_INDEX:
        return None
    first = data[offset]
    if first & 0b11 == 0b00:
        length, offset = first >> 2, offset + 1
    elif first & 0b11 == 0b01 and offset + 2 <= len(data):
        length, offset = int.from_bytes(data[offset : offset + 2], "little") >> 2, offset + 2
        if length < 1 << 6:  # non-canonical: the reader's error
            return None
    else:
        return None
    end = offset + length
    if length > max_value_length or end + 4 > len(data):
        return None
    key = data[start + 1 : start + 1 + KEY_LEN]
    return Publish(key, data[offset:end], int.from_bytes(data[end : end + 4], "little")), end + 4


def decode_versioned_xcm(data: bytes, max_value_length: int = MAX_PUBLISH_VALUE_LENGTH) -> Xcm:
    """Decode a whole ``VersionedXcm`` (V5 only, no trailing bytes) or raise ``XcmDecodeError``; a ``Publish``
    value longer than ``max_value_length`` (``MaxPublishValueLength``) does not decode."""
    r = ScaleReader(data)
    try:
        version = r.u8()
        if version != XCM_VERSION:
            raise _Fail(f"VersionedXcm version {version} is not supported (only V5)")
        count = r.compact()
        if count > MAX_INSTRUCTIONS_TO_DECODE:
            raise _Fail(f"{count} instructions exceed the decode limit of {MAX_INSTRUCTIONS_TO_DECODE}")
        instructions: list[Instruction] = []
        for _ in range(count):
            fast = _publish_fast(data, r.offset, max_value_length)
            if fast is None:
                instructions.append(_instruction(r, max_value_length))
            else:
                instructions.append(fast[0])
                r.offset = fast[1]
        message = Xcm(tuple(instructions))
        r.finish()
    except (_Fail, ScaleDecodeError) as exc:
        raise XcmDecodeError(str(exc), data, r.offset) from exc
    return message
