"""ovstage: an asynchronous, ordinal-keyed, zero-copy store of simulation data.

A native (Rust, PyO3) drop-in for the published ``ovstage`` Python API. Every
data-plane call enqueues an op and returns at once; waits release the GIL;
read and map groups hand out numpy views of the store's memory.
"""

from __future__ import annotations

import sys as _sys

from . import _native
from ._dlpack import (DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLTensor, ManagedDLTensor,
                      dltensor_to_numpy, make_dltensor, numpy_to_dldatatype, typed_tensor_to_write)
from ._enums import (AttributeMode, AttributeSemantic, ErrorCode, FilterOp, HierarchyComputationModel,
                     HierarchyRelation, LogSeverity, OrdinalAdmissionPolicy, PopulationDomain, PrimMode, Scope)
from ._errors import OvstageError, OvxError
from ._logging import flush_log, set_log_callback
from ._paths import PathDictionary, PathList
from ._stage import CloneOperation, Operation, Stage
from ._trace import start_trace, stop_trace
from ._values import (AttributeMeta, BuildInfo, CloneResult, Filter, HierarchyComputationModelDesc, HierarchyItem,
                      HierarchyResult, OrdinalRange, Placement, Predicate, QueryResult, StageConfig, WriteDesc)
from . import gates, instancing, population

Query = _native.Query
Read = _native.Read
Map = _native.Map
OrdinalQuery = _native.OrdinalQuery
Hierarchy = _native.Hierarchy
ReadGroup = _native.ReadGroup
MapGroup = _native.MapGroup
# An extension of ours (not in the published API): batched small writes,
# from ``Stage.write_batch``.
WriteBatch = _native.WriteBatch

TIMEOUT_INFINITE = (1 << 64) - 1
OVSTAGE_TIMEOUT_INFINITE = TIMEOUT_INFINITE
OVX_API_SUCCESS = 0
OVX_API_ERROR = 1

try:
    from importlib.metadata import version as _version

    __version__ = _version("ovstage")
except Exception:  # pragma: no cover - not installed as a distribution
    __version__ = "0.3.0.post1"


def library_version() -> tuple:
    """The contract version implemented: ``(0, 3, 0)``."""
    return (0, 3, 0)


def get_build_info() -> BuildInfo:
    """Build information of this library (``build_string`` starts with ``0.3.0+``)."""
    return BuildInfo(72, 0, f"0.3.0+main.0.unknown.ovstage-rs-{__version__}", "main", "unknown",
                     f"ovstage-rs-{__version__}")


__all__ = [
    "Stage", "StageConfig", "Query", "Read", "Map", "OrdinalQuery", "Hierarchy", "PathDictionary", "PathList",
    "OvstageError", "OvxError", "ErrorCode", "FilterOp", "PrimMode", "AttributeMode", "AttributeSemantic",
    "HierarchyRelation", "HierarchyComputationModel", "Scope", "OrdinalAdmissionPolicy", "LogSeverity",
    "PopulationDomain", "Placement", "OrdinalRange", "Predicate", "Filter", "Operation", "CloneOperation",
    "WriteDesc", "ReadGroup", "MapGroup", "AttributeMeta", "QueryResult", "CloneResult", "HierarchyItem",
    "HierarchyResult", "HierarchyComputationModelDesc", "DLTensor", "DLDataType", "DLDevice", "DLDeviceType",
    "DLDataTypeCode", "ManagedDLTensor", "make_dltensor", "numpy_to_dldatatype", "dltensor_to_numpy",
    "typed_tensor_to_write", "instancing", "population", "BuildInfo", "get_build_info", "library_version",
    "set_log_callback", "flush_log", "TIMEOUT_INFINITE", "OVSTAGE_TIMEOUT_INFINITE", "OVX_API_SUCCESS",
    "OVX_API_ERROR", "__version__",
    # Extensions of ours, not in the published API (spec section 2.1).
    "WriteBatch", "start_trace", "stop_trace",
]

_ = _sys
