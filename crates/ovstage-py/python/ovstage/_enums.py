"""The contract's enumerations (values fixed by the C contract)."""

from __future__ import annotations

import enum

__all__ = [
    "ErrorCode", "FilterOp", "PrimMode", "AttributeMode", "AttributeSemantic", "HierarchyRelation",
    "HierarchyComputationModel", "Scope", "OrdinalAdmissionPolicy", "LogSeverity", "PopulationDomain",
]


class ErrorCode(enum.IntEnum):
    """Status codes carried by :class:`OvstageError` and ``Operation.status``."""

    OK = 0
    INVALID_ARGUMENT = 1
    INVALID_HANDLE = 2
    NOT_FOUND = 3
    PRIM_NOT_FOUND = 4
    WRITE_FLOOR_VIOLATION = 5
    NOT_SUPPORTED = 6
    QUEUE_FULL = 7
    END_OF_ITERATION = 8
    OUT_OF_MEMORY = 9
    LAYOUT_CHANGED = 10
    TIMEOUT = 11
    OP_FAILED = 12
    OUT_OF_RANGE = 13
    INTERNAL = 99


class FilterOp(enum.IntEnum):
    """Operator of a filter :class:`Predicate`."""

    HAS = 0
    IN = 1
    CONTAINS = 2
    PREFIX = 3
    LT = 4
    LE = 5
    GT = 6
    GE = 7


class PrimMode(enum.IntEnum):
    """Whether a write may create prims (UPSERT) or must create them (INSERT)."""

    UPSERT = 0
    INSERT = 1


class AttributeMode(enum.IntEnum):
    """What a schema mismatch does: REJECT fails; FORCE replaces the target prims' schema."""

    REJECT = 0
    FORCE = 1


class AttributeSemantic(enum.IntEnum):
    """The role recorded on an attribute column."""

    NONE = 0
    ASSET_PATH_ID = 1
    TOKEN_ID = 2
    PATH_EXPRESSION_STRING = 3
    RELATIONSHIP_PATH_ID = 4
    POINT = 5
    VECTOR = 6
    NORMAL = 7
    COLOR = 8
    QUATERNION = 9
    MATRIX = 10
    TEXTURE_COORDINATE = 11
    CONNECTION_PATH_ID = 12
    STRING = 13
    TIME_CODE = 14
    FRAME = 15


class HierarchyRelation(enum.IntEnum):
    """Which relatives ``Stage.get_hierarchy`` reports."""

    PARENT = 0
    CHILDREN = 1
    SIBLINGS = 2


class HierarchyComputationModel(enum.IntEnum):
    """World-transform computation models (recorded only: this library computes none)."""

    INVALID = 0
    CPU_INCREMENTAL = 1
    GPU_INCREMENTAL = 2
    GPU_GLOBAL = 3
    RUNTIME_DEFAULT = 4
    DEFAULT_CPU = 1
    DEFAULT_GPU = 3


class Scope(enum.IntEnum):
    """Which attributes a write-floor advance affects."""

    ALL = 0
    INCLUDE = 1
    EXCLUDE = 2


class OrdinalAdmissionPolicy(enum.IntEnum):
    """How writes at ordinals below already committed changes are admitted."""

    DEFAULT = 0
    FLOOR_ONLY = 1
    NONDECREASING = 2
    STRICTLY_INCREASING = 3


class LogSeverity(enum.IntEnum):
    """Log message severities (NONE only as a threshold)."""

    VERBOSE = -2
    INFO = -1
    WARNING = 0
    ERROR = 1
    NONE = 3


class PopulationDomain(enum.IntFlag):
    """USD population domains (population is not supported by this library)."""

    NONE = 0
    RENDERING = 1
    PHYSICS = 2
    ALL = 3
