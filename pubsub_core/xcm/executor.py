"""An XCM executor for our v5 subset: barrier chain first, then instruction by instruction.

Each instruction applies atomically (its state writes and holding changes are kept only if it succeeds);
a failing instruction stops the program with ``ExecutionError``, and the instructions before it stay
applied, as XCM's ``Outcome::Incomplete``. ``Publish`` is routed to the broadcaster through the
``ParachainBroadcastAdapter`` logic (origin must be ``(0, [Parachain(id)])``); unlike the reference adapter,
the pallet's error is kept as the ``ExecutionError``'s cause instead of being flattened to ``PublishFailed``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from state import StateTransaction

from pubsub_core.broadcaster.balances import Balances
from pubsub_core.broadcaster.errors import BalancesError
from pubsub_core.broadcaster.events import BroadcasterEvent
from pubsub_core.broadcaster.pallet import Broadcaster
from pubsub_core.codec.scale import encode_u32
from pubsub_core.xcm.barriers import BarrierChain, OnlyParachains
from pubsub_core.xcm.errors import ExecutionError, XcmErrorCode
from pubsub_core.xcm.types import (
    AccountId32,
    Asset,
    BuyExecution,
    ClearOrigin,
    DepositAsset,
    Instruction,
    Location,
    Parachain,
    Publish,
    ReceiveTeleportedAsset,
    ReserveAssetDeposited,
    SetTopic,
    TransferAsset,
    Weight,
    WithdrawAsset,
    Xcm,
)

__all__ = ["ExecutorConfig", "XcmExecutor", "XcmOutcome", "location_to_account", "sovereign_account"]


@dataclass(frozen=True)
class ExecutorConfig:
    """Weights and fees. ``publish_weight`` is Westend's ``publish`` weight for one item (10M + 5M ref time).

    The native asset (``Location(0, Here)`` as the relay sees it) is the only transactable asset; a fee
    costs ``ref_time // weight_per_fee_unit`` units and is burned.
    """

    instruction_weight: Weight = Weight(1_000_000, 0)
    publish_weight: Weight = Weight(15_000_000, 0)
    weight_per_fee_unit: int = 1_000_000
    native_asset: Location = Location()

    def __post_init__(self) -> None:
        if self.weight_per_fee_unit < 1:
            raise ValueError("ExecutorConfig.weight_per_fee_unit must be at least 1")

    def weigh(self, message: Xcm) -> Weight:
        """The message's weight: ``publish_weight`` per Publish, ``instruction_weight`` per other instruction.
        Counted, then multiplied: one ``Weight`` per instruction cost an addition each (docs/benchmarks.md, "Measured
        code choices")."""
        publishes = sum(1 for instruction in message.instructions if isinstance(instruction, Publish))
        others = len(message.instructions) - publishes
        publish, other = self.publish_weight, self.instruction_weight
        return Weight(publishes * publish.ref_time + others * other.ref_time,
                      publishes * publish.proof_size + others * other.proof_size)

    def fee(self, weight: Weight) -> int:
        return -(-weight.ref_time // self.weight_per_fee_unit)


def sovereign_account(para_id: int) -> bytes:
    """A child para's account on the relay: ``b"para" ‖ u32_le(id)`` zero-padded to 32 bytes."""
    return (b"para" + encode_u32(para_id)).ljust(32, b"\x00")


def location_to_account(location: Location) -> bytes | None:
    """``LocationToAccountId``: a relay account or a child para's sovereign account; None otherwise."""
    if location.parents != 0 or len(location.interior) != 1:
        return None
    junction = location.interior[0]
    if isinstance(junction, AccountId32) and junction.network is None:
        return junction.id
    if isinstance(junction, Parachain):
        return sovereign_account(junction.id)
    return None


@dataclass(frozen=True)
class XcmOutcome:
    """The result of executing one message: which barrier let it in, weight used, pallet events, and the
    error that stopped it (None when complete). ``trapped`` counts native units left in holding (burned)."""

    barrier: str
    free: bool
    used_weight: Weight
    events: tuple[BroadcasterEvent, ...]
    error: ExecutionError | None = None
    trapped: int = 0

    # Explicit, not generated: compiled (setup.py), it is native code; the dataclass's own stays interpreted.
    def __init__(
        self, barrier: str, free: bool, used_weight: Weight, events: tuple[BroadcasterEvent, ...],
        error: ExecutionError | None = None, trapped: int = 0,
    ) -> None:
        object.__setattr__(self, "barrier", barrier)
        object.__setattr__(self, "free", free)
        object.__setattr__(self, "used_weight", used_weight)
        object.__setattr__(self, "events", events)
        object.__setattr__(self, "error", error)
        object.__setattr__(self, "trapped", trapped)

    @property
    def complete(self) -> bool:
        return self.error is None


@dataclass
class _Machine:
    """Mutable per-message executor state: origin and holding register."""

    origin: Location | None
    holding: int = 0
    events: list[BroadcasterEvent] = field(default_factory=list)


class XcmExecutor:
    """Runs messages from an origin against the broadcaster and the balances ledger."""

    def __init__(self, barriers: BarrierChain, broadcaster: Broadcaster, config: ExecutorConfig | None = None) -> None:
        self.barriers = barriers
        self.broadcaster = broadcaster
        self.config = config or ExecutorConfig()
        self.publish_origins = OnlyParachains()

    def execute(self, txn: StateTransaction, origin: Location, message: Xcm, now: int) -> XcmOutcome:
        """Check the barriers (raises ``BarrierRejected``), then execute; never raises for instruction failures."""
        max_weight = self.config.weigh(message)
        allowed = self.barriers.check(origin, message, max_weight)
        machine = _Machine(origin)
        used = Weight(0, 0)
        error: ExecutionError | None = None
        instructions = message.instructions
        index = 0
        while index < len(instructions):
            instruction = instructions[index]
            if isinstance(instruction, Publish):
                # A run of consecutive Publish instructions goes to the broadcaster as one batch: same events,
                # weight and state as one instruction at a time (publish_many stops where one would have).
                end = index + 1
                while end < len(instructions) and isinstance(instructions[end], Publish):
                    end += 1
                done, error = self._publish_run(txn, machine, index, instructions[index:end], now)
                weighed = done + (error is not None)
                publish = self.config.publish_weight
                used = used + Weight(weighed * publish.ref_time, weighed * publish.proof_size)
                if error is not None:
                    break
                index = end
                continue
            used = used + self.config.instruction_weight
            before = (machine.origin, machine.holding, len(machine.events))
            try:
                with txn.atomic():
                    self._apply(txn, machine, index, instruction, max_weight, now)
            except ExecutionError as failure:
                machine.origin, machine.holding = before[0], before[1]
                del machine.events[before[2] :]
                error = failure
                break
            index += 1
        return XcmOutcome(allowed.barrier, allowed.free, used, tuple(machine.events), error, machine.holding)

    def _publish_run(
        self, txn: StateTransaction, machine: _Machine, index: int, run: Sequence[Instruction], now: int
    ) -> tuple[int, ExecutionError | None]:
        """Publish consecutive ``Publish`` instructions (the first at ``index``) from the machine's origin: how
        many were published, and the error of the one that failed (None: all were)."""
        try:
            para_id = self._publisher(machine, index)
        except ExecutionError as refused:
            return 0, refused
        items = [instruction for instruction in run if isinstance(instruction, Publish)]
        batch = self.broadcaster.publish_many(txn, para_id, items, now)
        machine.events += batch.events
        if batch.error is None:
            return batch.applied, None
        failure = ExecutionError(XcmErrorCode.PUBLISH_FAILED, index + batch.applied, cause=batch.error)
        failure.__cause__ = batch.error
        return batch.applied, failure

    def _apply(
        self, txn: StateTransaction, machine: _Machine, index: int, instruction: Instruction, max_weight: Weight,
        now: int,
    ) -> None:
        if isinstance(instruction, WithdrawAsset):
            account = self._origin_account(machine, index)
            for asset in instruction.assets:
                self._native(asset, index)
                with _transacting(index):
                    Balances.withdraw(txn, account, asset.amount)
                machine.holding += asset.amount
        elif isinstance(instruction, ReserveAssetDeposited):
            raise ExecutionError(XcmErrorCode.UNTRUSTED_RESERVE_LOCATION, index)
        elif isinstance(instruction, ReceiveTeleportedAsset):
            raise ExecutionError(XcmErrorCode.UNTRUSTED_TELEPORT_LOCATION, index)
        elif isinstance(instruction, TransferAsset):
            source = self._origin_account(machine, index)
            dest = self._account(instruction.beneficiary, index)
            for asset in instruction.assets:
                self._native(asset, index)
                with _transacting(index):
                    Balances.transfer(txn, source, dest, asset.amount)
        elif isinstance(instruction, ClearOrigin):
            machine.origin = None
        elif isinstance(instruction, DepositAsset):
            dest = self._account(instruction.beneficiary, index)
            if instruction.assets.wild is None:
                for asset in instruction.assets.assets:
                    self._native(asset, index)
                amount = min(sum(a.amount for a in instruction.assets.assets), machine.holding)
            else:
                amount = machine.holding
            machine.holding -= amount
            if amount:
                Balances.mint(txn, dest, amount)
        elif isinstance(instruction, BuyExecution):
            self._buy_execution(machine, index, instruction, max_weight)
        elif isinstance(instruction, SetTopic):
            pass

    def _publisher(self, machine: _Machine, index: int) -> int:
        """The para a ``Publish`` at ``index`` publishes for: the origin must be a child parachain."""
        if machine.origin is None:
            raise ExecutionError(XcmErrorCode.BAD_ORIGIN, index, detail="Publish needs an origin")
        junction = machine.origin.interior[0] if machine.origin.interior else None
        if not self.publish_origins.contains(machine.origin) or not isinstance(junction, Parachain):
            raise ExecutionError(XcmErrorCode.NO_PERMISSION, index, detail="only child parachains publish")
        return junction.id

    def _buy_execution(self, machine: _Machine, index: int, instruction: BuyExecution, max_weight: Weight) -> None:
        self._native(instruction.fees, index)
        if instruction.fees.amount > machine.holding:
            raise ExecutionError(XcmErrorCode.NOT_HOLDING_FEES, index, detail=f"holding has {machine.holding}")
        fee = self.config.fee(max_weight)
        if instruction.fees.amount < fee:
            raise ExecutionError(XcmErrorCode.TOO_EXPENSIVE, index, detail=f"fee is {fee}, offered {instruction.fees.amount}")
        machine.holding -= fee

    def _native(self, asset: Asset, index: int) -> None:
        if asset.id != self.config.native_asset:
            raise ExecutionError(XcmErrorCode.ASSET_NOT_FOUND, index, detail=f"only the native asset, not {asset.id}")

    def _origin_account(self, machine: _Machine, index: int) -> bytes:
        if machine.origin is None:
            raise ExecutionError(XcmErrorCode.BAD_ORIGIN, index, detail="the origin was cleared")
        return self._account(machine.origin, index)

    @staticmethod
    def _account(location: Location, index: int) -> bytes:
        account = location_to_account(location)
        if account is None:
            raise ExecutionError(XcmErrorCode.FAILED_TO_TRANSACT_ASSET, index, detail=f"no account for {location}")
        return account


@contextmanager
def _transacting(index: int) -> Iterator[None]:
    """Turn a ledger failure into the asset transactor's XCM error, keeping the ledger error as cause."""
    try:
        yield
    except BalancesError as exc:
        raise ExecutionError(XcmErrorCode.FAILED_TO_TRANSACT_ASSET, index, cause=exc) from exc
