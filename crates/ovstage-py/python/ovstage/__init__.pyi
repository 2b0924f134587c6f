# Type stubs of the `ovstage` package (the public names of spec section 2.1).
import enum
import os
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native, gates as gates, instancing as instancing, population as population
from ._native import (Hierarchy as Hierarchy, Map as Map, MapGroup as MapGroup, Operation as Operation,
                      OrdinalQuery as OrdinalQuery, Query as Query, Read as Read, ReadGroup as ReadGroup,
                      WriteBatch as WriteBatch)

__all__: List[str]
__version__: str

TIMEOUT_INFINITE: int
OVSTAGE_TIMEOUT_INFINITE: int
OVX_API_SUCCESS: int
OVX_API_ERROR: int

# ---- enumerations (spec section 3)

class ErrorCode(enum.IntEnum):
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
    HAS = 0
    IN = 1
    CONTAINS = 2
    PREFIX = 3
    LT = 4
    LE = 5
    GT = 6
    GE = 7

class PrimMode(enum.IntEnum):
    UPSERT = 0
    INSERT = 1

class AttributeMode(enum.IntEnum):
    REJECT = 0
    FORCE = 1

class AttributeSemantic(enum.IntEnum):
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
    PARENT = 0
    CHILDREN = 1
    SIBLINGS = 2

class HierarchyComputationModel(enum.IntEnum):
    INVALID = 0
    CPU_INCREMENTAL = 1
    GPU_INCREMENTAL = 2
    GPU_GLOBAL = 3
    RUNTIME_DEFAULT = 4
    DEFAULT_CPU = 1
    DEFAULT_GPU = 3

class Scope(enum.IntEnum):
    ALL = 0
    INCLUDE = 1
    EXCLUDE = 2

class OrdinalAdmissionPolicy(enum.IntEnum):
    DEFAULT = 0
    FLOOR_ONLY = 1
    NONDECREASING = 2
    STRICTLY_INCREASING = 3

class LogSeverity(enum.IntEnum):
    VERBOSE = -2
    INFO = -1
    WARNING = 0
    ERROR = 1
    NONE = 3

class PopulationDomain(enum.IntFlag):
    NONE = 0
    RENDERING = 1
    PHYSICS = 2
    ALL = 3

# ---- errors (spec section 4)

class OvstageError(RuntimeError):
    code: int
    message: str
    def __init__(self, code: int, message: str = "") -> None: ...

class OvxError(RuntimeError):
    code: int
    message: str
    def __init__(self, code: int, message: str = "") -> None: ...

# ---- operations and the Stage (spec sections 5, 6)

class CloneOperation(Operation):
    def __new__(cls, stage: Any, status: int, op_id: int, message: str = "") -> CloneOperation: ...
    def error_message(self) -> str: ...
    def wait(self, timeout: int = TIMEOUT_INFINITE) -> CloneOperation: ...
    def result(self, timeout: int = TIMEOUT_INFINITE) -> CloneResult: ...

class Stage(_native.Stage):
    def __init__(self, name: Optional[str] = None, config: Optional[StageConfig] = None) -> None: ...
    @property
    def config(self) -> StageConfig: ...
    @staticmethod
    def get_version() -> tuple: ...
    def destroy(self) -> None: ...
    def __enter__(self) -> Stage: ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool: ...
    def clone_async(self, source_path: str, target_paths: Sequence[str], ordinal: int) -> CloneOperation: ...
    def clone(self, source_path: str, target_paths: Sequence[str], ordinal: int) -> CloneResult: ...
    def get_hierarchy(self, path_list: int, ordinal: int, relation: int) -> HierarchyResult: ...
    def get_hierarchy_computation_models(self) -> List[HierarchyComputationModelDesc]: ...
    def compute_hierarchy(self, input_ordinal: int, output_ordinal: int,
                          model: int = HierarchyComputationModel.DEFAULT_CPU) -> None: ...
    def get_path_dictionary(self) -> Any: ...

# ---- value classes (spec sections 8.5, 9.5, 10)

# OrdinalRange and WriteDesc are native (see _native.pyi).
from ._native import OrdinalRange as OrdinalRange, WriteDesc as WriteDesc

@dataclass
class Predicate:
    attribute: Union[int, str]
    op: FilterOp
    values: Sequence[str] = ()

class Filter:
    predicates: List[Predicate]
    def __init__(self, predicates: Sequence[Predicate]) -> None: ...

@dataclass
class StageConfig:
    runtime_default_hierarchy_computation_model: Optional[HierarchyComputationModel] = None
    runtime_default_ordinal_admission_policy: Optional[OrdinalAdmissionPolicy] = None

@dataclass(frozen=True)
class Placement:
    device_type: int = 0
    device_id: int = 0
    stream: int = 0
    availability_event: int = 0
    @classmethod
    def from_dlpack_device(cls, obj: Any, *, stream: int = 0, availability_event: int = 0) -> Placement: ...

@dataclass
class QueryResult:
    attributes: List[int]
    total_prim_count: int
    all_handle: int

@dataclass(frozen=True)
class CloneResult:
    prims_cloned: int
    target_count: int
    source_prim_count: int
    ordinal: int

@dataclass
class HierarchyItem:
    status: int
    paths: Tuple[str, ...]
    @property
    def ok(self) -> bool: ...

@dataclass
class HierarchyResult:
    ordinal: int
    items: List[HierarchyItem]
    @property
    def input_count(self) -> int: ...
    def item_paths(self, index: int) -> Tuple[str, ...]: ...

@dataclass
class HierarchyComputationModelDesc:
    model_id: int
    name: str
    description: str

@dataclass(frozen=True)
class BuildInfo:
    struct_size: int
    build_number: int
    build_string: str
    git_branch: str
    git_hash: str
    build_location: str

class AttributeMeta:
    attribute_write_floor_ordinal: int
    layout_generation: int
    def __init__(self, attribute_write_floor_ordinal: int, layout_generation: int) -> None: ...

# ---- path dictionary (spec section 11)

class PathList(int):
    def __new__(cls, handle: int, stage: Any = None) -> PathList: ...
    @property
    def released(self) -> bool: ...
    def release(self) -> None: ...
    def __enter__(self) -> PathList: ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool: ...

class PathDictionary:
    def __init__(self, stage: Stage) -> None: ...
    def __enter__(self) -> PathDictionary: ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool: ...
    def destroy(self) -> None: ...
    def intern_token(self, string: str) -> int: ...
    def token_to_string(self, token: int) -> str: ...
    def intern_path(self, path: str) -> int: ...
    def path_to_string(self, primpath: int) -> str: ...
    def create_path_list(self, primpaths: Sequence[int]) -> PathList: ...
    def create_path_list_from_strings(self, paths: Sequence[str]) -> PathList: ...
    def add_path_list_reference(self, path_list: int) -> None: ...
    def destroy_path_list(self, path_list: int) -> None: ...
    def path_list_count(self, path_list: int) -> int: ...
    def get_paths(self, path_list: int) -> List[int]: ...
    def get_path_strings(self, path_list: int) -> List[str]: ...

# ---- DLPack helpers (spec section 12)

class DLDeviceType(int):
    kDLCPU: ClassVar[int]
    kDLCUDA: ClassVar[int]
    kDLCUDAHost: ClassVar[int]
    kDLOpenCL: ClassVar[int]
    kDLVulkan: ClassVar[int]
    kDLMetal: ClassVar[int]
    kDLVPI: ClassVar[int]
    kDLROCM: ClassVar[int]
    kDLROCMHost: ClassVar[int]
    kDLExtDev: ClassVar[int]
    kDLCUDAManaged: ClassVar[int]
    kDLOneAPI: ClassVar[int]
    kDLWebGPU: ClassVar[int]
    kDLHexagon: ClassVar[int]
    kDLMAIA: ClassVar[int]
    kDLTrn: ClassVar[int]
    @property
    def value(self) -> int: ...

class DLDataTypeCode(int):
    kDLInt: ClassVar[int]
    kDLUInt: ClassVar[int]
    kDLFloat: ClassVar[int]
    kDLOpaqueHandle: ClassVar[int]
    kDLBfloat: ClassVar[int]
    kDLComplex: ClassVar[int]
    kDLBool: ClassVar[int]
    @property
    def value(self) -> int: ...

class DLDataType:
    code: int
    bits: int
    lanes: int
    def __init__(self, code: int = 0, bits: int = 0, lanes: int = 0) -> None: ...

class DLDevice:
    device_type: DLDeviceType
    device_id: int
    def __init__(self, device_type: int = 1, device_id: int = 0) -> None: ...

class DLTensor:
    data: Optional[int]
    device: DLDevice
    ndim: int
    dtype: DLDataType
    shape: Sequence[int]
    strides: Optional[Sequence[int]]
    byte_offset: int
    def __init__(self, data: Optional[int], device: DLDevice, ndim: int, dtype: DLDataType, shape: Sequence[int],
                 strides: Optional[Sequence[int]] = None, byte_offset: int = 0, keep: Any = None,
                 nbytes: Optional[int] = None) -> None: ...
    @property
    def shape_tuple(self) -> tuple: ...
    @classmethod
    def from_dlpack(cls, obj: Any, stream: Optional[int] = None) -> DLTensor: ...

class ManagedDLTensor:
    raw_dltensor: DLTensor
    def __init__(self, dl_tensor: DLTensor, manager_ctx: Any, deleter_callback: Any = None,
                 readonly: bool = True) -> None: ...
    @property
    def shape(self) -> tuple: ...
    @property
    def ndim(self) -> int: ...
    @property
    def dtype(self) -> DLDataType: ...
    @property
    def data(self) -> int: ...
    @property
    def device(self) -> DLDevice: ...
    def numpy(self) -> np.ndarray: ...
    def __dlpack_device__(self) -> tuple: ...
    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any: ...

def make_dltensor(array: Any, *, dtype: Optional[DLDataType] = None, shape: Optional[list] = None,
                  ndim: Optional[int] = None, strides: Optional[list] = None,
                  device_type: int = DLDeviceType.kDLCPU, device_id: int = 0) -> DLTensor: ...
def numpy_to_dldatatype(np_dtype: Any, lanes: int = 1) -> DLDataType: ...
def dltensor_to_numpy(tensor: DLTensor, *, readonly: bool = False) -> np.ndarray: ...
def typed_tensor_to_write(source: DLTensor) -> DLTensor: ...

# ---- logging, build information, versions (spec section 13)

def set_log_callback(callback: Optional[Callable[[LogSeverity, float, str], Any]], severity: Any = None,
                     channel_filter: Optional[str] = None) -> None: ...
def flush_log(timeout: int = TIMEOUT_INFINITE) -> bool: ...
def get_build_info() -> BuildInfo: ...

# ---- the op timeline (an extension of ours, not in the published API)

def start_trace(path: Union[str, os.PathLike[str]]) -> None: ...
def stop_trace() -> Optional[str]: ...
def library_version() -> tuple: ...
