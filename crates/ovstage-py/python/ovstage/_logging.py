"""Process-wide log callback (``set_log_callback``, ``flush_log``)."""

from __future__ import annotations

import operator
from typing import Any, Callable, Optional

from ._enums import LogSeverity
from ._errors import OvstageError

_LEVELS = {"verbose", "debug", "info", "warn", "warning", "error", "fatal", "none"}
_state = {"callback": None, "severity": LogSeverity.WARNING, "filter": {}}


def set_log_callback(callback: Optional[Callable[[LogSeverity, float, str], Any]], severity: Any = None,
                     channel_filter: Optional[str] = None) -> None:
    """Installs a process-wide log callback ``callback(severity, timestamp, message)`` (``None`` disables).

    This library currently emits no log messages through it; the threshold and
    channel filter are validated and recorded.
    """
    sev = LogSeverity.WARNING if severity is None else severity
    try:
        sev = LogSeverity(operator.index(sev))
    except (TypeError, ValueError):
        raise ValueError(f"severity must be a LogSeverity value, got {severity!r}") from None
    parsed = {}
    if channel_filter:
        for entry in channel_filter.split(","):
            name, sep, level = entry.strip().partition("=")
            if not sep or not name or level.strip().lower() not in _LEVELS:
                raise OvstageError(1, f"malformed channel filter entry {entry!r}")
            parsed[name] = level.strip().lower()
    _state.update(callback=callback, severity=sev, filter=parsed)


def flush_log(timeout: int = (1 << 64) - 1) -> bool:
    """Blocks until messages emitted before the call were delivered; ``True`` when drained."""
    if isinstance(timeout, float) or not hasattr(timeout, "__index__"):
        raise TypeError(f"timeout must be an int, got {type(timeout).__name__}")
    t = operator.index(timeout)
    if not 0 <= t < 1 << 64:
        raise ValueError(f"timeout must be in [0, 2**64), got {t}")
    return True
