"""``PathDictionary`` (a wrapper over a Stage's dictionary) and ``PathList``."""

from __future__ import annotations

import threading
import warnings
import weakref
from typing import Any, Dict, List, Sequence

from ._errors import OvstageError, OvxError

__all__ = ["PathDictionary", "PathList"]

# Per Stage: {handle: [minted_held, added_count]} shared by every wrapper.
_BOOK: "weakref.WeakKeyDictionary[Any, Dict[int, list]]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _book(stage: Any) -> Dict[int, list]:
    with _LOCK:
        return _BOOK.setdefault(stage, {})


def _native_release(stage: Any, handle: int) -> None:
    stage._path_list_op("release", handle)


class PathList(int):
    """A path-list handle (an ``int``) owning the one reference its ``create_path_list*`` call minted."""

    def __new__(cls, handle: int, stage: Any = None) -> "PathList":
        obj = super().__new__(cls, handle)
        obj._stage = weakref.ref(stage) if stage is not None else None
        return obj

    def _entry(self):
        st = self._stage() if self._stage else None
        return st, (_book(st).get(int(self)) if st is not None else None)

    @property
    def released(self) -> bool:
        """Whether the owned reference was released."""
        _, e = self._entry()
        return e is None or not e[0]

    def release(self) -> None:
        """Releases the owned reference (``OvxError`` if already released or the Stage was destroyed)."""
        st, e = self._entry()
        if st is None or not st._alive:
            raise OvxError(1, "the Stage was destroyed")
        with _LOCK:
            if e is None or not e[0]:
                raise OvxError(1, f"path list {int(self)} was already released")
            e[0] = False
        try:
            _native_release(st, int(self))
        except OvxError:
            with _LOCK:
                e[0] = True
            raise

    def __enter__(self) -> "PathList":
        """Returns the list itself."""
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        """Releases the owned reference unless already released; never suppresses the exception."""
        if not self.released:
            try:
                self.release()
            except Exception:
                if exc_type is None:
                    raise
        return False

    def __str__(self) -> str:
        return str(int(self))

    def __format__(self, spec: str) -> str:
        return format(int(self), spec)

    def __repr__(self) -> str:
        return f"PathList({int(self)}, {'released' if self.released else 'owned'})"

    def __copy__(self) -> int:
        return int(self)

    def __deepcopy__(self, memo) -> int:
        return int(self)

    def __reduce__(self):
        return (int, (int(self),))

    def __del__(self) -> None:
        try:
            st, e = self._entry()
            if st is None or e is None or not e[0] or not st._alive:
                return
            e[0] = False
            _native_release(st, int(self))
        except Exception:
            return
        try:
            warnings.warn(f"PathList {int(self)} was not released", ResourceWarning, stacklevel=2)
        except Exception:
            import sys
            sys.stderr.write(f"ResourceWarning: PathList {int(self)} was not released\n")


class PathDictionary:
    """A wrapper over a Stage's path dictionary: tokens, prim paths and path lists."""

    def __init__(self, stage: Any) -> None:
        from ._stage import Stage
        if not isinstance(stage, Stage):
            raise TypeError("stage must be an ovstage.Stage")
        if not stage._alive:
            raise OvstageError(2, "PathDictionary called after Stage was destroyed")
        self._stage = stage

    def _s(self) -> Any:
        s = self._stage
        if s is None:
            raise OvxError(1, "the PathDictionary was destroyed")
        if not s._alive:
            raise OvxError(1, "the Stage was destroyed")
        return s

    def destroy(self) -> None:
        """Detaches the wrapper (the dictionary lives on with the Stage)."""
        self._stage = None

    def __enter__(self) -> "PathDictionary":
        """Returns the wrapper itself."""
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        """Destroys the wrapper (the dictionary lives on with the Stage)."""
        self.destroy()
        return False

    def intern_token(self, string: str) -> int:
        """The token for ``string``."""
        return self._s()._intern_token(string)

    def token_to_string(self, token: int) -> str:
        """The token's text (``""`` for an unknown token)."""
        return self._s()._token_to_string(token)

    def intern_path(self, path: str) -> int:
        """The prim-path handle of ``path`` (absolute; ``"/"`` is the root)."""
        return self._s()._intern_path(path)

    def path_to_string(self, primpath: int) -> str:
        """The text of a prim path."""
        return self._s()._path_to_string(primpath)

    def create_path_list(self, primpaths: Sequence[int]) -> PathList:
        """A new path list (owning one reference) of prim-path handles."""
        s = self._s()
        h = s._create_path_list(primpaths)
        return self._mint(s, h)

    def create_path_list_from_strings(self, paths: Sequence[str]) -> PathList:
        """A new path list (owning one reference) from path strings."""
        if isinstance(paths, str):
            raise TypeError("paths must be a sequence of str, not a str")
        s = self._s()
        h = s._create_path_list_from_strings(paths)
        return self._mint(s, h)

    @staticmethod
    def _mint(stage: Any, h: int) -> PathList:
        with _LOCK:
            _BOOK.setdefault(stage, {})[h] = [True, 0]
        return PathList(h, stage)

    def add_path_list_reference(self, path_list: int) -> None:
        """Adds one reference, owned by the caller."""
        s = self._s()
        s._path_list_op("add", path_list)
        with _LOCK:
            _BOOK.setdefault(s, {}).setdefault(int(path_list), [False, 0])[1] += 1

    def destroy_path_list(self, path_list: int) -> None:
        """Releases one reference (the minted one for a ``PathList``; an added one first for a plain int)."""
        if not isinstance(path_list, bool) and hasattr(path_list, "__index__") and int(path_list) == 0:
            return
        s = self._s()
        h = int(path_list)
        with _LOCK:
            e = _BOOK.setdefault(s, {}).get(h)
            if e is not None:
                if isinstance(path_list, PathList):
                    if e[0]:
                        e[0] = False
                    elif e[1] > 0:
                        e[1] -= 1
                    else:
                        raise OvxError(1, f"path list {h} holds no reference to release")
                elif e[1] > 0:
                    e[1] -= 1
                elif e[0]:
                    e[0] = False
        s._path_list_op("release", path_list)

    def path_list_count(self, path_list: int) -> int:
        """Number of paths in the list."""
        return self._s()._path_list_op("count", path_list)

    def get_paths(self, path_list: int) -> List[int]:
        """The prim-path handles of the list, in order."""
        return self._s()._path_list_op("paths", path_list)

    def get_path_strings(self, path_list: int) -> List[str]:
        """The path strings of the list, in order."""
        return self._s()._path_list_op("strings", path_list)
