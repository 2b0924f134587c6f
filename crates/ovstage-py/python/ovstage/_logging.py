"""Process-wide log callback (``set_log_callback``, ``flush_log``).

The stream is the native library's (the same dispatcher the C ABI uses):
messages are delivered one at a time, in order, on a dispatcher thread that
takes the GIL for each call.
"""

from __future__ import annotations

import atexit
import operator
import threading
from typing import Any, Callable, Optional

from . import _native
from ._enums import LogSeverity

_registered = threading.Lock()
_atexit = [False]


def _shutdown() -> None:
    # Deliver what is queued and stop the dispatcher before the interpreter
    # finalizes: it could not take the GIL afterwards.
    _native._set_log_callback(None, int(LogSeverity.WARNING), "")


def set_log_callback(callback: Optional[Callable[[LogSeverity, float, str], Any]], severity: Any = None,
                     channel_filter: Optional[str] = None) -> None:
    """Installs a process-wide log callback ``callback(severity, timestamp, message)``.

    ``severity`` (default ``LogSeverity.WARNING``) is the threshold for
    channels ``channel_filter`` does not name; ``channel_filter`` is a
    comma-separated list of ``<channel>=<level>`` entries (levels
    ``verbose|debug|info|warn|warning|error|fatal|none``). ``timestamp`` is
    wall-clock seconds since the epoch. Delivery is asynchronous and
    serialized on a dispatcher thread; an exception raised by the callback is
    printed to ``sys.stderr`` with its traceback and suppressed.
    ``callback=None`` flushes pending messages and disables delivery.
    Raises ``ValueError`` for a severity that is not a ``LogSeverity`` value
    and ``OvstageError(INVALID_ARGUMENT)`` for a malformed filter.
    """
    sev = LogSeverity.WARNING if severity is None else severity
    try:
        if isinstance(sev, float):
            raise TypeError
        sev = LogSeverity(operator.index(sev))
    except (TypeError, ValueError):
        raise ValueError(f"severity must be a LogSeverity value, got {severity!r}") from None
    if channel_filter is not None and not isinstance(channel_filter, str):
        raise TypeError(f"channel_filter must be a str or None, got {type(channel_filter).__name__}")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
    if callback is not None:
        with _registered:
            if not _atexit[0]:
                atexit.register(_shutdown)
                _atexit[0] = True
    _native._set_log_callback(callback, int(sev), channel_filter or "")


def flush_log(timeout: int = (1 << 64) - 1) -> bool:
    """Blocks until messages emitted before the call were delivered.

    Returns ``True`` when drained (also when no callback is installed),
    ``False`` when ``timeout`` (nanoseconds) expired first. Releases the GIL
    while waiting, since the callback needs it.
    """
    if isinstance(timeout, float) or not hasattr(timeout, "__index__"):
        raise TypeError(f"timeout must be an int, got {type(timeout).__name__}")
    t = operator.index(timeout)
    if not 0 <= t < 1 << 64:
        raise ValueError(f"timeout must be in [0, 2**64), got {t}")
    return _native._flush_log(t)
