"""Value classes of the API: plain records owning nothing."""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple, Union

from ._enums import AttributeMode, AttributeSemantic, FilterOp, HierarchyComputationModel, OrdinalAdmissionPolicy
# Native: the hot calls take them as arguments (see src/values.rs).
from ._native import OrdinalRange, WriteDesc

__all__ = [
    "OrdinalRange", "Predicate", "Filter", "WriteDesc", "StageConfig", "Placement", "QueryResult", "CloneResult",
    "HierarchyItem", "HierarchyResult", "HierarchyComputationModelDesc", "BuildInfo", "AttributeMeta",
]

_U64 = (1 << 64) - 1


def _u64(value: Any, name: str) -> int:
    if isinstance(value, float) or isinstance(value, str) or not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    v = operator.index(value)
    if v < 0 or v > _U64:
        raise ValueError(f"{name} must be in [0, 2**64), got {v}")
    return v


@dataclass
class Predicate:
    """One filter predicate: ``attribute`` (name or token) ``op`` ``values``."""

    attribute: Union[int, str]
    op: FilterOp
    values: Sequence[str] = ()

    def __post_init__(self) -> None:
        self.values = tuple(str(v) for v in self.values)


class Filter:
    """The conjunction (AND) of its predicates; ``Filter([])`` matches every prim."""

    def __init__(self, predicates: Sequence[Predicate]) -> None:
        self.predicates = list(predicates)

    def __repr__(self) -> str:
        return f"Filter({self.predicates!r})"


@dataclass
class StageConfig:
    """Process-wide configuration entries given to ``Stage(config=...)`` (``None``: not given)."""

    runtime_default_hierarchy_computation_model: Optional[HierarchyComputationModel] = None
    runtime_default_ordinal_admission_policy: Optional[OrdinalAdmissionPolicy] = None


@dataclass(frozen=True)
class Placement:
    """Which device copy a write produces, a map commits to, or a read points at (host only in this build)."""

    device_type: int = 0
    device_id: int = 0
    stream: int = 0
    availability_event: int = 0

    def __post_init__(self) -> None:
        dt = operator.index(self.device_type) if not isinstance(self.device_type, float) else None
        if dt is None:
            raise TypeError("device_type must be an int")
        if dt not in (0, 1, 2, 13):
            raise ValueError(f"device_type must be 0, 1, 2 or 13, got {dt}")
        if isinstance(self.device_id, float) or not hasattr(self.device_id, "__index__"):
            raise TypeError("device_id must be an int")
        if not 0 <= operator.index(self.device_id) < 2**31:
            raise ValueError("device_id must be a non-negative int32")
        _u64(self.stream, "stream")
        _u64(self.availability_event, "availability_event")

    @classmethod
    def from_dlpack_device(cls, obj: Any, *, stream: int = 0, availability_event: int = 0) -> "Placement":
        """The placement of an object with ``__dlpack_device__()`` or a ``(device_type, device_id)`` tuple."""
        if hasattr(obj, "__dlpack_device__"):
            dev = obj.__dlpack_device__()
        elif isinstance(obj, tuple) and len(obj) == 2:
            dev = obj
        else:
            raise TypeError("from_dlpack_device needs an object with __dlpack_device__ or a (device_type, device_id) tuple")
        return cls(int(dev[0]), int(dev[1]), stream, availability_event)


@dataclass
class QueryResult:
    """A copied query result: attribute tokens, prim count, and the query's own handle."""

    attributes: List[int]
    total_prim_count: int
    all_handle: int


@dataclass(frozen=True)
class CloneResult:
    """What a finished clone did."""

    prims_cloned: int
    target_count: int
    source_prim_count: int
    ordinal: int


@dataclass
class HierarchyItem:
    """The relatives of one input path (``status`` 3 when no prim exists there)."""

    status: int
    paths: Tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Whether ``status == 0``."""
        return self.status == 0


@dataclass
class HierarchyResult:
    """One :class:`HierarchyItem` per input path, in list order."""

    ordinal: int
    items: List[HierarchyItem]

    @property
    def input_count(self) -> int:
        """Number of input paths."""
        return len(self.items)

    def item_paths(self, index: int) -> Tuple[str, ...]:
        """The paths of item ``index``."""
        return self.items[index].paths


@dataclass
class HierarchyComputationModelDesc:
    """A world-matrix computation model the library runs."""

    model_id: int
    name: str
    description: str


@dataclass(frozen=True)
class BuildInfo:
    """Build information of the library."""

    struct_size: int
    build_number: int
    build_string: str
    git_branch: str
    git_hash: str
    build_location: str


class AttributeMeta:
    """Attribute metadata of a group: its effective write floor and layout generation."""

    __slots__ = ("attribute_write_floor_ordinal", "layout_generation")

    def __init__(self, attribute_write_floor_ordinal: int, layout_generation: int) -> None:
        object.__setattr__(self, "attribute_write_floor_ordinal", attribute_write_floor_ordinal)
        object.__setattr__(self, "layout_generation", layout_generation)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("AttributeMeta is read-only")

    def __repr__(self) -> str:
        return (f"AttributeMeta(attribute_write_floor_ordinal={self.attribute_write_floor_ordinal}, "
                f"layout_generation={self.layout_generation})")


_ = (dataclasses, field)
