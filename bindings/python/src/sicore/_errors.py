"""Status codes of the C ABI and the exceptions that carry them."""

from __future__ import annotations

import enum

__all__ = [
    "DecodeError",
    "InternalError",
    "InvalidArgumentError",
    "RejectedError",
    "SicoreError",
    "Status",
    "StoppedError",
    "WouldDeadlockError",
    "error_for_status",
]


class Status(enum.IntEnum):
    """The ``sicore_status`` codes returned by every fallible library call."""

    OK = 0
    """Success."""
    INVALID_ARGUMENT = 1
    """A null pointer, bad UTF-8, or a missing required field."""
    DECODE_ERROR = 2
    """The bytes are not a valid encoding of the expected message."""
    REJECTED = 3
    """Understood and refused: bad configuration, unknown rmID, ..."""
    STOPPED = 4
    """The scheduler is shutting down or shut down."""
    WOULD_DEADLOCK = 5
    """A synchronous call made from inside a callback."""
    INTERNAL = 6
    """A bug in the library: a panic was caught at the boundary."""


class SicoreError(Exception):
    """Base class of every error raised by the binding.

    ``status`` is the library's :class:`Status` (or the raw integer when the
    library returned a code this binding does not know) and ``message`` the
    library's explanation.
    """

    default_status: Status | None = None

    def __init__(self, message: str, status: Status | int | None = None) -> None:
        """Create an error with the library's ``message`` and ``status``."""
        if status is None:
            status = self.default_status if self.default_status is not None else Status.INTERNAL
        self.status: Status | int = status
        self.message: str = message
        name = status.name if isinstance(status, Status) else str(status)
        super().__init__(f"{message} (status {name})")


class InvalidArgumentError(SicoreError):
    """The library refused an argument: null pointer, bad UTF-8, missing field."""

    default_status = Status.INVALID_ARGUMENT


class DecodeError(SicoreError):
    """The bytes given to the library are not a valid encoding of the message."""

    default_status = Status.DECODE_ERROR


class RejectedError(SicoreError):
    """The request was understood and refused (bad configuration, unknown rmID, ...)."""

    default_status = Status.REJECTED


class StoppedError(SicoreError):
    """The scheduler is shutting down, shut down, or was closed by this binding."""

    default_status = Status.STOPPED


class WouldDeadlockError(SicoreError):
    """A synchronous call (or ``close()``) was made from inside a callback."""

    default_status = Status.WOULD_DEADLOCK


class InternalError(SicoreError):
    """A bug in the library (a caught panic) or an unknown status code."""

    default_status = Status.INTERNAL


_BY_STATUS: dict[int, type[SicoreError]] = {
    Status.INVALID_ARGUMENT: InvalidArgumentError,
    Status.DECODE_ERROR: DecodeError,
    Status.REJECTED: RejectedError,
    Status.STOPPED: StoppedError,
    Status.WOULD_DEADLOCK: WouldDeadlockError,
    Status.INTERNAL: InternalError,
}


def error_for_status(status: int, message: str) -> SicoreError:
    """Build the exception matching a non-zero status code of the library."""
    cls = _BY_STATUS.get(status, InternalError)
    try:
        code: Status | int = Status(status)
    except ValueError:
        code = status
        message = f"unknown status code {status}: {message}"
    return cls(message, code)
