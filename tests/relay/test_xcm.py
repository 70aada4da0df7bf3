"""XCM: v5 encodings against the reference vectors, every AllowPublishFrom scenario, the chain and the executor."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pubsub_core.broadcaster import Balances, DataPublished, NotRegistered, TotalStorageSizeExceeded
from pubsub_core.xcm import (
    AllowPublishFrom,
    AllowTopLevelPaidExecutionFrom,
    BarrierChain,
    BarrierRefused,
    BarrierRejected,
    Equals,
    Everything,
    ExecutorConfig,
    Location,
    OnlyParachains,
    ProcessMessageError,
    Publish,
    Weight,
    Xcm,
    XcmDecodeError,
    XcmErrorCode,
    XcmExecutor,
    decode_versioned_xcm,
    encode_versioned_xcm,
    sovereign_account,
)
from pubsub_core.xcm.types import (
    AccountId32,
    Parachain,
    Asset,
    AssetFilter,
    BuyExecution,
    ClearOrigin,
    DepositAsset,
    SetTopic,
    TransferAsset,
    WeightLimit,
    WithdrawAsset,
)

from tests.relay.helpers import ALICE, BOB, key, setup
from tests.support.scale_registry import scale_decode, scale_encode

PARA_2000 = Location.parachain(2000)
NATIVE = Location()
NO_WEIGHT = Weight(0, 0)


def publishes(count: int) -> Xcm:
    return Xcm(tuple(Publish(key(f"k{i}"), f"v{i}".encode(), 0) for i in range(count)))


def refusal(barrier: AllowPublishFrom | AllowTopLevelPaidExecutionFrom, origin: Location, message: Xcm) -> ProcessMessageError:
    with pytest.raises(BarrierRefused) as raised:
        barrier.should_execute(origin, message, NO_WEIGHT)
    return raised.value.error


# -- encodings ---------------------------------------------------------------------------------------
def test_publish_instruction_matches_reference_vector() -> None:
    message = Xcm((Publish(key("key"), b"value", 0),))
    expected = "34447f0b47ade868b5ba625ee132e0b70814231c780f362e883bb3fda138e1476f1476616c756500000000"
    assert message.instructions[0].encode().hex() == expected
    assert encode_versioned_xcm(message).hex() == "0504" + expected
    assert decode_versioned_xcm(bytes.fromhex("0504" + expected)) == message


def test_withdraw_and_buy_execution_match_the_pr_9994_sample() -> None:
    sample = "050c000400000002286bee1300000002286bee003404143078313233143078313233"
    head = "0508" + sample[4:-28]
    message = decode_versioned_xcm(bytes.fromhex(head))
    assert message == Xcm((WithdrawAsset((Asset(NATIVE, 10**9),)), BuyExecution(Asset(NATIVE, 10**9), WeightLimit())))
    assert encode_versioned_xcm(message).hex() == head
    with pytest.raises(XcmDecodeError):
        decode_versioned_xcm(bytes.fromhex(sample))  # its Publish is the obsolete multi-item shape


@given(st.binary(min_size=32, max_size=32), st.binary(max_size=1024), st.integers(0, 2**32 - 1))
def test_publish_equals_registry_encoding(k: bytes, value: bytes, ttl: int) -> None:
    body = scale_encode("PublishInstruction", {"key": "0x" + k.hex(), "value": "0x" + value.hex(), "ttl": ttl})
    assert Publish(k, value, ttl).encode() == b"\x34" + body


def test_every_supported_instruction_round_trips() -> None:
    message = Xcm(
        (
            WithdrawAsset((Asset(NATIVE, 5),)),
            ClearOrigin(),
            BuyExecution(Asset(NATIVE, 5), WeightLimit(Weight(10**12, 65536))),
            TransferAsset((Asset(NATIVE, 1),), Location.account(ALICE)),
            DepositAsset(AssetFilter(wild=0), Location.account(BOB)),
            DepositAsset(AssetFilter(wild=2, count=1), PARA_2000),
            DepositAsset(AssetFilter((Asset(NATIVE, 3),)), Location(1, (AccountId32(BOB),))),
            SetTopic(bytes(range(32))),
            Publish(key("x"), b"", 7),
        )
    )
    assert decode_versioned_xcm(encode_versioned_xcm(message)) == message


@pytest.mark.parametrize(
    "hex_",
    [
        "",  # nothing
        "0400",  # VersionedXcm::V4
        "0504",  # one instruction declared, none present
        "050434" + "00" * 31,  # Publish with a truncated key
        "05040a00",  # a trailing byte
        "05080a",  # two declared, one present
        "0504ff",  # no such instruction
        "050406",  # Transact: outside the subset
        "059501" + "0a" * 101,  # 101 instructions: over the decode limit
    ],
)
def test_malformed_xcm_is_a_typed_decode_error(hex_: str) -> None:
    with pytest.raises(XcmDecodeError):
        decode_versioned_xcm(bytes.fromhex(hex_))


def test_publish_value_over_1024_bytes_does_not_decode() -> None:
    data = b"\x05\x04\x34" + bytes(32) + bytes.fromhex("05100000") + bytes(1025) + bytes(4)
    with pytest.raises(XcmDecodeError):
        decode_versioned_xcm(data)


@given(st.binary(max_size=200))
def test_random_bytes_decode_or_raise_a_typed_error(data: bytes) -> None:
    try:
        message = decode_versioned_xcm(data)
    except XcmDecodeError:
        return
    assert encode_versioned_xcm(message) == data


# -- Requirement: AllowPublishFrom Barrier ----------------------------------------------------------
def test_barrier_allows_single_publish_instruction() -> None:
    chain = BarrierChain([AllowPublishFrom(Everything(), 16)])
    passed = chain.check(PARA_2000, publishes(1), NO_WEIGHT)
    assert passed.free and passed.barrier == "AllowPublishFrom"


def test_barrier_allows_multiple_publish_instructions_within_limit() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    executor = XcmExecutor(BarrierChain([AllowPublishFrom(Everything(), 16)]), pallet)
    outcome = executor.execute(txn, PARA_2000, publishes(3), now=1)
    assert outcome.free and outcome.complete
    assert outcome.events == (DataPublished(2000, 1),) * 3
    assert len(pallet.published_keys(txn, 2000)) == 3


def test_barrier_rejects_too_many_publish_instructions() -> None:
    assert refusal(AllowPublishFrom(Everything(), 4), PARA_2000, publishes(5)) is ProcessMessageError.STACK_LIMIT_REACHED


def test_barrier_allows_exactly_max_publish_instructions() -> None:
    assert BarrierChain([AllowPublishFrom(Everything(), 4)]).check(PARA_2000, publishes(4), NO_WEIGHT).free


def test_barrier_rejects_publish_mixed_with_other_instructions() -> None:
    message = Xcm((Publish(key("k"), b"v", 0), DepositAsset(AssetFilter(wild=0), Location.account(ALICE))))
    assert refusal(AllowPublishFrom(Everything(), 16), PARA_2000, message) is ProcessMessageError.BAD_FORMAT
    with pytest.raises(BarrierRejected) as raised:
        BarrierChain([AllowPublishFrom(), AllowTopLevelPaidExecutionFrom()]).check(PARA_2000, message, NO_WEIGHT)
    assert raised.value.error is ProcessMessageError.BAD_FORMAT
    assert [name for name, _ in raised.value.errors] == ["AllowPublishFrom", "AllowTopLevelPaidExecutionFrom"]


def test_barrier_rejects_non_publish_messages() -> None:
    message = Xcm((TransferAsset((Asset(NATIVE, 1),), Location.account(ALICE)),))
    assert refusal(AllowPublishFrom(Everything(), 16), PARA_2000, message) is ProcessMessageError.BAD_FORMAT


def test_barrier_filters_by_origin() -> None:
    barrier = AllowPublishFrom(Equals(Location.parachain(1000)), 16)
    assert refusal(barrier, PARA_2000, publishes(1)) is ProcessMessageError.UNSUPPORTED
    barrier.should_execute(Location.parachain(1000), publishes(1), NO_WEIGHT)


def test_barrier_combined_with_other_barriers() -> None:
    class Exploding:
        name = "Exploding"
        free = False

        def should_execute(self, origin: Location, message: Xcm, max_weight: Weight) -> None:
            raise AssertionError("a later barrier was evaluated")

    chain = BarrierChain([AllowPublishFrom(Everything(), 16), AllowTopLevelPaidExecutionFrom(), Exploding()])
    passed = chain.check(PARA_2000, publishes(1), NO_WEIGHT)
    assert (passed.barrier, passed.free) == ("AllowPublishFrom", True)


def test_barrier_rejects_empty_message() -> None:
    assert refusal(AllowPublishFrom(), PARA_2000, Xcm(())) is ProcessMessageError.BAD_FORMAT


def test_barrier_checks_origin_before_count_and_shape() -> None:
    barrier = AllowPublishFrom(OnlyParachains(), 1)
    assert refusal(barrier, Location(1, ()), Xcm(())) is ProcessMessageError.UNSUPPORTED
    assert refusal(barrier, PARA_2000, Xcm((ClearOrigin(), ClearOrigin()))) is ProcessMessageError.STACK_LIMIT_REACHED
    assert refusal(barrier, PARA_2000, Xcm((ClearOrigin(),))) is ProcessMessageError.BAD_FORMAT


def test_barrier_allows_system_and_non_parent_origins_under_everything() -> None:
    for origin in (Location.parachain(1000), Location.parachain(3000), Location(1, ())):
        AllowPublishFrom().should_execute(origin, publishes(1), NO_WEIGHT)


def test_paid_execution_barrier_shapes() -> None:
    paid = AllowTopLevelPaidExecutionFrom()
    buy = BuyExecution(Asset(NATIVE, 10), WeightLimit(Weight(5, 0)))
    ok = Xcm((WithdrawAsset((Asset(NATIVE, 10),)), ClearOrigin(), buy))
    paid.should_execute(PARA_2000, ok, Weight(5, 0))
    assert refusal(paid, PARA_2000, Xcm((buy,))) is ProcessMessageError.BAD_FORMAT
    with pytest.raises(BarrierRefused) as raised:
        paid.should_execute(PARA_2000, ok, Weight(6, 0))
    assert raised.value.error is ProcessMessageError.OVERWEIGHT


# -- executor --------------------------------------------------------------------------------------
def free_and_paid_executor(config: ExecutorConfig | None = None) -> tuple[XcmExecutor, object, object]:
    pallet, txn = setup()
    chain = BarrierChain([AllowPublishFrom(Everything(), 16), AllowTopLevelPaidExecutionFrom(Everything())])
    return XcmExecutor(chain, pallet, config), pallet, txn


def test_executor_maps_pallet_error_and_keeps_it() -> None:
    executor, _, txn = free_and_paid_executor()
    outcome = executor.execute(txn, Location.parachain(3000), publishes(1), now=1)  # type: ignore[arg-type]
    assert outcome.error is not None and outcome.error.code is XcmErrorCode.PUBLISH_FAILED
    assert isinstance(outcome.error.cause, NotRegistered) and outcome.error.reason_code == "NotRegistered"


def test_executor_incomplete_keeps_earlier_instructions() -> None:
    pallet, txn = setup()
    pallet.register_publisher(txn, ALICE, 2000)
    executor = XcmExecutor(BarrierChain([AllowPublishFrom()]), pallet)
    message = Xcm((Publish(key("a"), bytes(990), 0), Publish(key("b"), bytes(990), 0), Publish(key("c"), b"", 0)))
    outcome = executor.execute(txn, PARA_2000, message, now=1)
    assert outcome.error is not None and outcome.error.index == 2
    assert isinstance(outcome.error.cause, TotalStorageSizeExceeded)
    assert outcome.events == (DataPublished(2000, 1),) * 2
    assert len(pallet.published_keys(txn, 2000)) == 2


def test_publish_from_non_parachain_has_no_permission() -> None:
    executor, _, txn = free_and_paid_executor()
    outcome = executor.execute(txn, Location(1, ()), publishes(1), now=1)  # type: ignore[arg-type]
    assert outcome.error is not None and outcome.error.code is XcmErrorCode.NO_PERMISSION


def test_paid_execution_charges_fees_and_deposits_the_rest() -> None:
    executor, _, txn = free_and_paid_executor()
    Balances.mint(txn, sovereign_account(2000), 1_000)  # type: ignore[arg-type]
    message = Xcm(
        (
            WithdrawAsset((Asset(NATIVE, 100),)),
            BuyExecution(Asset(NATIVE, 100), WeightLimit()),
            DepositAsset(AssetFilter(wild=0), Location.account(BOB)),
        )
    )
    outcome = executor.execute(txn, PARA_2000, message, now=1)  # type: ignore[arg-type]
    assert outcome.complete and not outcome.free and outcome.barrier == "AllowTopLevelPaidExecutionFrom"
    assert Balances.free(txn, sovereign_account(2000)) == 900  # type: ignore[arg-type]
    assert Balances.free(txn, BOB) == 10_000 + 100 - 3  # type: ignore[arg-type]


def test_paid_execution_too_expensive_and_insufficient_funds() -> None:
    executor, _, txn = free_and_paid_executor()
    Balances.mint(txn, sovereign_account(2000), 1)  # type: ignore[arg-type]
    cheap = Xcm((WithdrawAsset((Asset(NATIVE, 1),)), BuyExecution(Asset(NATIVE, 1), WeightLimit())))
    outcome = executor.execute(txn, PARA_2000, cheap, now=1)  # type: ignore[arg-type]
    assert outcome.error is not None and outcome.error.code is XcmErrorCode.TOO_EXPENSIVE
    rich = Xcm((WithdrawAsset((Asset(NATIVE, 50),)), BuyExecution(Asset(NATIVE, 50), WeightLimit())))
    outcome = executor.execute(txn, PARA_2000, rich, now=1)  # type: ignore[arg-type]
    assert outcome.error is not None and outcome.error.code is XcmErrorCode.FAILED_TO_TRANSACT_ASSET
    assert outcome.error.index == 0


def test_publish_after_clear_origin_is_bad_origin() -> None:
    executor, _, txn = free_and_paid_executor()
    Balances.mint(txn, sovereign_account(1000), 100)  # type: ignore[arg-type]
    message = Xcm(
        (WithdrawAsset((Asset(NATIVE, 50),)), ClearOrigin(), BuyExecution(Asset(NATIVE, 50), WeightLimit()),
         Publish(key("k"), b"v", 0))
    )
    outcome = executor.execute(txn, Location.parachain(1000), message, now=1)  # type: ignore[arg-type]
    assert outcome.error is not None and outcome.error.code is XcmErrorCode.BAD_ORIGIN and outcome.error.index == 3


def test_assets_must_be_sorted_and_deduplicated() -> None:
    relay, para = Asset(Location(), 1), Asset(Location.parachain(1000), 1)
    sorted_ok = Xcm((WithdrawAsset((relay, para)),))
    assert decode_versioned_xcm(encode_versioned_xcm(sorted_ok)) == sorted_ok
    for bad in ((para, relay), (relay, Asset(Location(), 2))):
        with pytest.raises(XcmDecodeError):
            decode_versioned_xcm(encode_versioned_xcm(Xcm((WithdrawAsset(bad),))))


def test_network_ids_of_v5_decode() -> None:
    from pubsub_core.xcm.types import GlobalConsensus, NetworkId

    for network in (NetworkId(2), NetworkId(4), NetworkId(7, b"\x04"), NetworkId(0, bytes(32))):
        message = Xcm((TransferAsset((Asset(NATIVE, 1),), Location(1, (GlobalConsensus(network),))),))
        assert decode_versioned_xcm(encode_versioned_xcm(message)) == message
    with pytest.raises(XcmDecodeError):
        decode_versioned_xcm(bytes.fromhex("0504040400000004010109" + "0b"))


# -- the scalecodec registry as a second opinion on the v5 layout -------------------------------------
LOCATIONS = st.builds(
    lambda parents, paras: Location(parents, tuple(Parachain(p) for p in paras)),
    st.integers(0, 2),
    st.lists(st.integers(0, 2**32 - 1), max_size=3),
) | st.builds(lambda account: Location.account(account), st.binary(min_size=32, max_size=32))
ASSETS = st.builds(lambda amount: (Asset(NATIVE, amount),), st.integers(0, 2**128 - 1)) | st.just(())
INSTRUCTIONS = st.one_of(
    st.builds(WithdrawAsset, ASSETS),
    st.builds(TransferAsset, ASSETS, LOCATIONS),
    st.just(ClearOrigin()),
    st.builds(DepositAsset, st.sampled_from([AssetFilter(wild=0), AssetFilter(wild=2, count=3), AssetFilter()]),
              LOCATIONS),
    st.builds(BuyExecution, st.builds(Asset, st.just(NATIVE), st.integers(0, 2**64)),
              st.sampled_from([WeightLimit(), WeightLimit(Weight(2**40, 7))])),
    st.builds(SetTopic, st.binary(min_size=32, max_size=32)),
    st.builds(Publish, st.binary(min_size=32, max_size=32), st.binary(max_size=64), st.integers(0, 2**32 - 1)),
)


@given(st.lists(INSTRUCTIONS, max_size=6))
def test_versioned_xcm_layout_agrees_with_the_registry(instructions: list[object]) -> None:
    data = encode_versioned_xcm(Xcm(tuple(instructions)))  # type: ignore[arg-type]
    decoded = scale_decode("VersionedXcm", data)
    assert scale_encode("VersionedXcm", decoded) == data
    assert len(decoded["V5"]) == len(instructions)
