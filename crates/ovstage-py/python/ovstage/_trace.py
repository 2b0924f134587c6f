"""The op timeline (an extension of ours, not in the published API)."""

import os
from typing import Optional, Union

from . import _native


def start_trace(path: Union[str, "os.PathLike[str]"]) -> None:
    """Starts the op timeline (an extension of ours, not in the published
    API): every op of every stage in the process is recorded into a Chrome
    trace (JSON; opens in Perfetto) written to ``path`` by :func:`stop_trace`.

    Each op shows where it was enqueued, where and how long it ran (named by
    its call, with its ordinal and payload bytes) and, if it failed, why.
    The file is created now. Raises ``OvstageError`` (``INVALID_ARGUMENT``)
    for an unwritable path or while a trace is already being recorded.
    Setting ``OVSTAGE_TRACE=path.json`` in the environment records from the
    first stage to the last one destroyed instead.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    _native._trace_start(os.fspath(path))


def stop_trace() -> Optional[str]:
    """Stops the op timeline (an extension of ours) and writes its file;
    returns its path, or ``None`` when no trace was being recorded."""
    return _native._trace_stop()
