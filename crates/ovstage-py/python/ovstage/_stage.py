"""``Stage``: the native core plus process configuration, lifecycle and blocking wrappers."""

from __future__ import annotations

import threading
from typing import Any, List, Optional, Sequence

from . import _native
from ._enums import ErrorCode, HierarchyComputationModel, OrdinalAdmissionPolicy
from ._errors import OvstageError
from ._values import CloneResult, HierarchyComputationModelDesc, HierarchyResult, StageConfig

__all__ = ["Stage", "Operation", "CloneOperation"]

TIMEOUT_INFINITE = (1 << 64) - 1
Operation = _native.Operation

# Process configuration: (model, policy) entries as given, counted per live configured Stage.
_PROC_LOCK = threading.Lock()
_PROC = {"count": 0, "model": None, "policy": None, "config": None}


def _member(enum_cls, value, name):
    if value is None:
        return None
    if isinstance(value, float) or not hasattr(value, "__index__"):
        raise ValueError(f"{name} must be a {enum_cls.__name__} value, got {value!r}")
    try:
        return enum_cls(int(value))
    except ValueError:
        raise ValueError(f"{name} must be a {enum_cls.__name__} value, got {value!r}") from None


class CloneOperation(Operation):
    """The operation of ``Stage.clone_async``: ``result()`` gives the clone's report."""

    def __new__(cls, stage, status, op_id, message=""):
        self = super().__new__(cls, stage, status, op_id)
        self._message = message
        self._report = None
        self._failure = None
        return self

    def error_message(self) -> str:
        """The rejection message, or the op's failure text while tracked."""
        return self._message if self.status else super().error_message()

    def wait(self, timeout: int = TIMEOUT_INFINITE) -> "CloneOperation":
        """Waits, captures the clone's report, consumes the op; remembers a failure."""
        if self.status:
            raise OvstageError(self.status, self._message)
        stage = self._stage_ref
        try:
            report = stage.fetch_clone_result(self.op_id, timeout) if self.op_id else None
        except OvstageError as e:
            if e.code == ErrorCode.TIMEOUT:
                raise
            report = None
        try:
            super().wait(timeout)
        except OvstageError as e:
            if e.code != ErrorCode.TIMEOUT and e.code != ErrorCode.INVALID_HANDLE:
                self._failure = e
            raise
        self._report = report
        return self

    def result(self, timeout: int = TIMEOUT_INFINITE) -> CloneResult:
        """The clone's report (waits if needed; re-raises a remembered failure)."""
        if self._failure is not None:
            raise self._failure
        if self._report is None:
            self.wait(timeout)
        return self._report


class Stage(_native.Stage):
    """An ovstage instance: prims, attribute columns, ordinals and floors. A context manager (exit destroys)."""

    def __new__(cls, name: Optional[str] = None, config: Optional[StageConfig] = None):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {type(name).__name__}")
        if config is not None and not isinstance(config, StageConfig):
            raise TypeError("config must be a StageConfig or None")
        model = policy = None
        if config is not None:
            model = _member(HierarchyComputationModel, config.runtime_default_hierarchy_computation_model,
                            "runtime_default_hierarchy_computation_model")
            if model == HierarchyComputationModel.INVALID:
                raise ValueError("runtime_default_hierarchy_computation_model must be CPU_INCREMENTAL, "
                                 "GPU_INCREMENTAL, GPU_GLOBAL or RUNTIME_DEFAULT")
            policy = _member(OrdinalAdmissionPolicy, config.runtime_default_ordinal_admission_policy,
                             "runtime_default_ordinal_admission_policy")
        with _PROC_LOCK:
            if config is not None:
                cm = None if model in (None, HierarchyComputationModel.RUNTIME_DEFAULT) else model
                cp = None if policy in (None, OrdinalAdmissionPolicy.DEFAULT) else policy
                if _PROC["count"] > 0:
                    if (cm is not None and _PROC["model"] not in (None, cm)) or \
                       (cp is not None and _PROC["policy"] not in (None, cp)):
                        raise OvstageError(ErrorCode.INVALID_ARGUMENT,
                                           "Stage config conflicts with the live process configuration")
                else:
                    _PROC["model"], _PROC["policy"], _PROC["config"] = cm, cp, config
                _PROC["model"] = _PROC["model"] or cm
                _PROC["policy"] = _PROC["policy"] or cp
                _PROC["count"] += 1
            active = _PROC["policy"] if _PROC["count"] > 0 else None
            proc_config = _PROC["config"] if _PROC["count"] > 0 else None
        effective = int(active) if active is not None else int(OrdinalAdmissionPolicy.NONDECREASING)
        self = super().__new__(cls, name, None, _admission=effective)
        self._configured = config is not None
        self._config = config if config is not None else proc_config
        return self

    def __init__(self, name: Optional[str] = None, config: Optional[StageConfig] = None) -> None:
        pass

    @property
    def config(self) -> StageConfig:
        """A copy of the process configuration entries as given."""
        if not self._alive:
            raise OvstageError(ErrorCode.INVALID_HANDLE, "config called after Stage was destroyed")
        c = self._config
        if c is None:
            return StageConfig()
        return StageConfig(c.runtime_default_hierarchy_computation_model, c.runtime_default_ordinal_admission_policy)

    @staticmethod
    def get_version() -> tuple:
        """The contract version implemented: ``(0, 3, 0)``."""
        return (0, 3, 0)

    def destroy(self) -> None:
        """Drains outstanding work and frees the instance (idempotent; live handles die with it)."""
        if not self._alive:
            return
        self._destroy()
        if getattr(self, "_configured", False):
            with _PROC_LOCK:
                _PROC["count"] -= 1
                if _PROC["count"] == 0:
                    _PROC["model"] = _PROC["policy"] = _PROC["config"] = None

    def __enter__(self) -> "Stage":
        """Returns the Stage itself."""
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        """Destroys the Stage; never suppresses the exception."""
        self.destroy()
        return False

    def __del__(self) -> None:
        try:
            self.destroy()
        except Exception:
            pass

    def clone_async(self, source_path: str, target_paths: Sequence[str], ordinal: int) -> CloneOperation:
        """Enqueues a clone of the subtree at ``source_path`` to each target path at ``ordinal``."""
        op = self._clone_async(source_path, target_paths, ordinal, CloneOperation)
        op._stage_ref = self
        return op

    def clone(self, source_path: str, target_paths: Sequence[str], ordinal: int) -> CloneResult:
        """Clones and waits: ``clone_async(...).wait().result()``."""
        return self.clone_async(source_path, target_paths, ordinal).wait().result()

    def get_hierarchy(self, path_list: int, ordinal: int, relation: int) -> HierarchyResult:
        """The parent, children or siblings of each path of the list (blocking)."""
        h = self.get_hierarchy_async(path_list, ordinal, relation)
        h.wait()
        try:
            return h.result()
        finally:
            h.release()

    def get_hierarchy_computation_models(self) -> List[HierarchyComputationModelDesc]:
        """World-matrix computation models: the four the contract names (the
        GPU ones run where the process has a CUDA device)."""
        if not self._alive:
            raise OvstageError(ErrorCode.INVALID_HANDLE, "get_hierarchy_computation_models called after Stage was destroyed")
        return [HierarchyComputationModelDesc(model_id, name, description)
                for model_id, name, description in _native.Stage._hierarchy_computation_models()]

    def compute_hierarchy(self, input_ordinal: int, output_ordinal: int,
                          model: int = HierarchyComputationModel.DEFAULT_CPU) -> None:
        """World matrices from local ones along the hierarchy, inputs as of
        ``input_ordinal``, changed rows recorded at ``output_ordinal``; waits."""
        self.compute_hierarchy_async(input_ordinal, output_ordinal, model).wait()

    def get_path_dictionary(self) -> Any:
        """An opaque token of the Stage's dictionary; use ``PathDictionary(stage)``."""
        if not self._alive:
            raise OvstageError(ErrorCode.INVALID_HANDLE, "get_path_dictionary called after Stage was destroyed")
        return self
