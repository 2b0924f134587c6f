"""Instancing lookups: not supported by this library (``available()`` is ``False``)."""

from __future__ import annotations

from typing import Any, List

from ._errors import OvstageError

__all__ = ["available", "get_instance_roots", "get_prototype_root", "get_prototype_roots"]

_NS = "instancing lookups are not part of this library (ovstage-rs has no USD instancing)"


def available() -> bool:
    """Whether instancing lookups are available: ``False``."""
    return False


def get_instance_roots(stage: Any, prototype_root: str) -> List[str]:
    """Not supported: raises ``OvstageError(NOT_SUPPORTED)``."""
    raise OvstageError(6, _NS)


def get_prototype_root(stage: Any, instance_root: str) -> str:
    """Not supported: raises ``OvstageError(NOT_SUPPORTED)``."""
    raise OvstageError(6, _NS)


def get_prototype_roots(stage: Any) -> List[str]:
    """Not supported: raises ``OvstageError(NOT_SUPPORTED)``."""
    raise OvstageError(6, _NS)
