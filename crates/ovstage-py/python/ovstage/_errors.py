"""Exceptions raised by ovstage."""

from __future__ import annotations

import operator

from ._enums import ErrorCode

__all__ = ["OvstageError", "OvxError"]


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"ERROR_{code}"


class OvstageError(RuntimeError):
    """A data-plane failure: ``code`` is an :class:`ErrorCode` value (a plain int), ``message`` says why."""

    def __init__(self, code, message: str = "") -> None:
        if isinstance(code, float) or not hasattr(code, "__index__"):
            raise TypeError(f"code must be an int, got {type(code).__name__}")
        code = int(operator.index(code))
        message = "" if message is None else str(message)
        text = _code_name(code) + (f": {message}" if message else "")
        super().__init__(text)
        self.code = code
        self.message = message


class OvxError(RuntimeError):
    """A path-dictionary failure; ``code`` is always 1 (``OVX_API_ERROR``) when raised by ovstage."""

    def __init__(self, code, message: str = "") -> None:
        if isinstance(code, float) or not hasattr(code, "__index__"):
            raise TypeError(f"code must be an int, got {type(code).__name__}")
        code = int(operator.index(code))
        message = "" if message is None else str(message)
        super().__init__(f"ovx error {code}" + (f": {message}" if message else ""))
        self.code = code
        self.message = message
