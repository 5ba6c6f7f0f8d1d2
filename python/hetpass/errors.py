"""Exceptions raised by hetpass: one class per absl status code.

Every error of the C++ library arrives as a subclass of :class:`Error` that also derives from
the matching built-in exception, so ``except ValueError`` catches an invalid argument and
``except hetpass.errors.InvalidArgumentError`` catches only hetpass's. ``code`` is the status
code's name (``"INVALID_ARGUMENT"``) and ``message`` the C++ message, which names the op, value
and location.
"""

from __future__ import annotations


class Error(Exception):
    """A hetpass error: ``code`` (absl status code name) and ``message``."""

    code = "UNKNOWN"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class InvalidArgumentError(Error, ValueError):
    code = "INVALID_ARGUMENT"


class NotFoundError(Error, LookupError):
    code = "NOT_FOUND"


class UnimplementedError(Error, NotImplementedError):
    code = "UNIMPLEMENTED"


class FailedPreconditionError(Error, RuntimeError):
    code = "FAILED_PRECONDITION"


class ResourceExhaustedError(Error, MemoryError):
    code = "RESOURCE_EXHAUSTED"


class OutOfRangeError(Error, IndexError):
    code = "OUT_OF_RANGE"


class DeadlineExceededError(Error, TimeoutError):
    code = "DEADLINE_EXCEEDED"


class PermissionDeniedError(Error, PermissionError):
    code = "PERMISSION_DENIED"


class AlreadyExistsError(Error, RuntimeError):
    code = "ALREADY_EXISTS"


class UnavailableError(Error, RuntimeError):
    code = "UNAVAILABLE"


class InternalError(Error, RuntimeError):
    code = "INTERNAL"


class UnknownError(Error, RuntimeError):
    code = "UNKNOWN"


_BY_CODE = {
    cls.code: cls
    for cls in (
        InvalidArgumentError,
        NotFoundError,
        UnimplementedError,
        FailedPreconditionError,
        ResourceExhaustedError,
        OutOfRangeError,
        DeadlineExceededError,
        PermissionDeniedError,
        AlreadyExistsError,
        UnavailableError,
        InternalError,
        UnknownError,
    )
}


def from_status(code: str, message: str) -> Error:
    """The exception for an absl status: its class by code, RuntimeError-derived otherwise."""
    cls = _BY_CODE.get(code)
    if cls is None:  # CANCELLED, ABORTED, DATA_LOSS, UNAUTHENTICATED
        return UnknownError(message, code)
    return cls(message)
