"""Errors of the XCM package: undecodable messages, barrier rejections, and execution failures."""

from __future__ import annotations

from enum import Enum

from pubsub_core.errors import PubSubError

__all__ = [
    "BarrierRefused",
    "BarrierRejected",
    "ExecutionError",
    "ProcessMessageError",
    "XcmDecodeError",
    "XcmError",
    "XcmErrorCode",
]


class ProcessMessageError(Enum):
    """``ProcessMessageError``: why a barrier refused a message."""

    BAD_FORMAT = "BadFormat"
    CORRUPT = "Corrupt"
    UNSUPPORTED = "Unsupported"
    OVERWEIGHT = "Overweight"
    YIELD = "Yield"
    STACK_LIMIT_REACHED = "StackLimitReached"


class XcmErrorCode(Enum):
    """The subset of XCM v5 ``Error`` our executor can raise, plus ``PublishFailed`` (RFC-0160)."""

    OVERFLOW = "Overflow"
    BAD_ORIGIN = "BadOrigin"
    NO_PERMISSION = "NoPermission"
    ASSET_NOT_FOUND = "AssetNotFound"
    FAILED_TO_TRANSACT_ASSET = "FailedToTransactAsset"
    NOT_WITHDRAWABLE = "NotWithdrawable"
    UNTRUSTED_RESERVE_LOCATION = "UntrustedReserveLocation"
    UNTRUSTED_TELEPORT_LOCATION = "UntrustedTeleportLocation"
    NOT_HOLDING_FEES = "NotHoldingFees"
    TOO_EXPENSIVE = "TooExpensive"
    WEIGHT_LIMIT_REACHED = "WeightLimitReached"
    BARRIER = "Barrier"
    PUBLISH_FAILED = "PublishFailed"


class XcmError(PubSubError):
    """Base class for XCM errors."""


class XcmDecodeError(XcmError):
    """Bytes that are not a ``VersionedXcm`` of our v5 subset; carries the bytes and the offset."""

    def __init__(self, message: str, data: bytes, offset: int) -> None:
        super().__init__(f"undecodable XCM: {message} (at offset {offset} of {len(data)} bytes)")
        self.message = message
        self.data = data
        self.offset = offset

    @property
    def reason_code(self) -> str:
        """Undecodable input is ``Malformed`` (an admission reason)."""
        return "Malformed"


class BarrierRefused(XcmError):
    """One barrier's refusal, with its ``ProcessMessageError``; a ``BarrierChain`` collects them into
    ``BarrierRejected``."""

    def __init__(self, error: ProcessMessageError) -> None:
        super().__init__(f"the barrier refused the message: {error.value}")
        self.error = error


class BarrierRejected(XcmError):
    """No barrier of the chain allowed the message; ``errors`` holds each barrier's (name, error) in order.

    ``error`` is the first barrier's error: the chain starts with ``AllowPublishFrom``, the barrier a
    publisher means to pass, so its refusal is the most useful reason to report.
    """

    def __init__(self, errors: tuple[tuple[str, ProcessMessageError], ...]) -> None:
        detail = ", ".join(f"{name}: {error.value}" for name, error in errors)
        super().__init__(f"no barrier allowed the message ({detail})")
        self.errors = errors
        self.error = errors[0][1]

    @property
    def reason_code(self) -> str:
        return self.error.value


class ExecutionError(XcmError):
    """An instruction failed: the XCM error code, the instruction's index, and the pallet error behind it if any."""

    def __init__(self, code: XcmErrorCode, index: int, cause: PubSubError | None = None, detail: str = "") -> None:
        text = f"instruction {index} failed with {code.value}"
        if cause is not None:
            text += f": {cause}"
        elif detail:
            text += f": {detail}"
        super().__init__(text)
        self.code = code
        self.index = index
        self.cause = cause
        self.detail = detail

    @property
    def reason_code(self) -> str:
        """The most specific name: the pallet error's code when one caused it, else the XCM error code."""
        if self.cause is not None:
            code = getattr(self.cause, "code", None)
            return code if isinstance(code, str) else type(self.cause).__name__
        return self.code.value
