"""Test gates of the published library's own suite: not available here (methods raise ``RuntimeError``)."""

from __future__ import annotations

import contextlib


def available() -> bool:
    """Whether gates are available: ``False``."""
    return False


class _Gate:
    """A gate without hooks: every method raises ``RuntimeError``."""

    def _no(self, *args, **kwargs):
        raise RuntimeError("ovstage gates are not available in this library")

    enable = wait_until_entered = release = reset = fail_next = entered_count = _no


query_gate = _Gate()
write_gate = _Gate()


@contextlib.contextmanager
def scoped_query_gate():
    """Raises ``RuntimeError``: gates are not available."""
    raise RuntimeError("ovstage gates are not available in this library")
    yield  # pragma: no cover


@contextlib.contextmanager
def scoped_write_gate():
    """Raises ``RuntimeError``: gates are not available."""
    raise RuntimeError("ovstage gates are not available in this library")
    yield  # pragma: no cover
