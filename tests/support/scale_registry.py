"""A scalecodec type registry for the pub-sub types: the declarative definition of their SCALE layouts.

The protocol uses the hand-written codecs (``pubsub_core.codec.types``, ``xcm.types``, ``broadcaster.events``):
profiled on this machine, encoding a ``PublishedEntry`` takes about 120 us through scalecodec against 5 us by
hand (every publish writes one and every on_idle scan reads one), and scalecodec's decoder raises untyped
errors on hostile bytes, where upward messages need typed ones. The registry stays the independent second opinion:
the tests encode every type through both and require identical bytes.
"""

from __future__ import annotations

from typing import Any

from scalecodec.base import RuntimeConfigurationObject, ScaleBytes  # type: ignore[import-untyped]
from scalecodec.type_registry import load_type_registry_preset  # type: ignore[import-untyped]

__all__ = ["PUBSUB_TYPES", "scale_decode", "scale_encode"]

_INSTRUCTIONS = {
    0: ("WithdrawAsset", "Vec<XcmAsset>"),
    1: ("ReserveAssetDeposited", "Vec<XcmAsset>"),
    2: ("ReceiveTeleportedAsset", "Vec<XcmAsset>"),
    4: ("TransferAsset", "XcmTransferAsset"),
    10: ("ClearOrigin", "Null"),
    13: ("DepositAsset", "XcmDepositAsset"),
    19: ("BuyExecution", "XcmBuyExecution"),
    44: ("SetTopic", "[u8; 32]"),
    52: ("Publish", "PublishInstruction"),
}
"""Our XCM v5 subset by instruction index; the other indices up to Publish (0x34) are placeholders."""

_XCM_TYPES: dict[str, Any] = {
    "XcmNetworkId": {
        "type": "enum",
        "type_mapping": [
            ["ByGenesis", "[u8; 32]"], ["ByFork", "(u64, [u8; 32])"], ["Polkadot", "Null"], ["Kusama", "Null"],
            ["Westend", "Null"], ["Rococo", "Null"], ["Wococo", "Null"], ["Ethereum", "Compact<u64>"],
            ["BitcoinCore", "Null"], ["BitcoinCash", "Null"], ["PolkadotBulletin", "Null"],
        ],
    },
    "XcmJunction": {
        "type": "enum",
        "type_mapping": [
            ["Parachain", "Compact<u32>"], ["AccountId32", "(Option<XcmNetworkId>, [u8; 32])"],
            ["AccountIndex64", "(Option<XcmNetworkId>, Compact<u64>)"],
            ["AccountKey20", "(Option<XcmNetworkId>, [u8; 20])"], ["PalletInstance", "u8"],
            ["GeneralIndex", "Compact<u128>"], ["GeneralKey", "(u8, [u8; 32])"], ["OnlyChild", "Null"],
            ["Plurality", "Null"], ["GlobalConsensus", "XcmNetworkId"],
        ],
    },
    "XcmJunctions": {
        "type": "enum",
        "type_mapping": [["Here", "Null"]] + [[f"X{n}", f"[XcmJunction; {n}]"] for n in range(1, 9)],
    },
    "XcmLocation": {"type": "struct", "type_mapping": [["parents", "u8"], ["interior", "XcmJunctions"]]},
    "XcmFungibility": {"type": "enum", "type_mapping": [["Fungible", "Compact<u128>"]]},
    "XcmAsset": {"type": "struct", "type_mapping": [["id", "XcmLocation"], ["fun", "XcmFungibility"]]},
    "XcmWildAsset": {"type": "enum", "type_mapping": [["All", "Null"], ["AllOf", "Null"], ["AllCounted", "Compact<u32>"]]},
    "XcmAssetFilter": {"type": "enum", "type_mapping": [["Definite", "Vec<XcmAsset>"], ["Wild", "XcmWildAsset"]]},
    "XcmWeight": {"type": "struct", "type_mapping": [["ref_time", "Compact<u64>"], ["proof_size", "Compact<u64>"]]},
    "XcmWeightLimit": {"type": "enum", "type_mapping": [["Unlimited", "Null"], ["Limited", "XcmWeight"]]},
    "XcmTransferAsset": {"type": "struct", "type_mapping": [["assets", "Vec<XcmAsset>"], ["beneficiary", "XcmLocation"]]},
    "XcmDepositAsset": {"type": "struct", "type_mapping": [["assets", "XcmAssetFilter"], ["beneficiary", "XcmLocation"]]},
    "XcmBuyExecution": {"type": "struct", "type_mapping": [["fees", "XcmAsset"], ["weight_limit", "XcmWeightLimit"]]},
    "XcmInstruction": {
        "type": "enum",
        "type_mapping": [list(_INSTRUCTIONS.get(i, (f"Unsupported{i}", "Null"))) for i in range(53)],
    },
    "VersionedXcm": {
        "type": "enum",
        "type_mapping": [[f"V{v}", "Null"] for v in range(5)] + [["V5", "Vec<XcmInstruction>"]],
    },
}

PUBSUB_TYPES: dict[str, Any] = {
    "types": {
        **_XCM_TYPES,
        "PublishedEntry": {
            "type": "struct",
            "type_mapping": [["value", "Bytes"], ["ttl", "u32"], ["when_inserted", "u32"]],
        },
        "PublishedEntryU64": {
            "type": "struct",
            "type_mapping": [["value", "Bytes"], ["ttl", "u32"], ["when_inserted", "u64"]],
        },
        "TtlState": {"type": "enum", "type_mapping": [["Infinite", "Null"], ["ValidFor", "u32"], ["TimedOut", "Null"]]},
        "SubscribedKey": "[u8; 32]",
        "PublisherInfo": {"type": "struct", "type_mapping": [["manager", "[u8; 32]"], ["deposit", "u128"]]},
        "PublishInstruction": {
            "type": "struct",
            "type_mapping": [["key", "[u8; 32]"], ["value", "Bytes"], ["ttl", "u32"]],
        },
        "BroadcasterEvent": {
            "type": "enum",
            "type_mapping": [
                ["DataPublished", "(u32, u32)"],
                ["PublisherRegistered", "(u32, [u8; 32])"],
                ["PublisherDeregistered", "u32"],
                ["DataCleanedUp", "u32"],
                ["KeyExpired", "(u32, [u8; 32])"],
                ["KeysDeleted", "(u32, u32)"],
                ["KeysForcedDeleted", "(u32, u32)"],
            ],
        },
    }
}


def _runtime() -> RuntimeConfigurationObject:
    runtime = RuntimeConfigurationObject()
    runtime.update_type_registry(load_type_registry_preset("legacy"))
    runtime.update_type_registry(PUBSUB_TYPES)
    return runtime


_RUNTIME = _runtime()


def scale_encode(type_name: str, value: Any) -> bytes:
    """Encode ``value`` (scalecodec's JSON-like form: hex strings for bytes) as ``type_name``."""
    encoded = _RUNTIME.create_scale_object(type_name).encode(value)
    return bytes(encoded.data)


def scale_decode(type_name: str, data: bytes) -> Any:
    """Decode ``data`` as ``type_name`` into scalecodec's JSON-like form."""
    obj = _RUNTIME.create_scale_object(type_name, data=ScaleBytes(data))
    return obj.decode()
