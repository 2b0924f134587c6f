"""DLPack helpers: descriptors, dtype mapping, and producers over group tensors."""

from __future__ import annotations

import math
import operator
from typing import Any, Optional, Sequence

import numpy as np

from . import _native

__all__ = [
    "DLDeviceType", "DLDataTypeCode", "DLDataType", "DLDevice", "DLTensor", "ManagedDLTensor",
    "make_dltensor", "numpy_to_dldatatype", "dltensor_to_numpy", "typed_tensor_to_write",
]


class DLDeviceType(int):
    """A DLPack device type: an ``int`` with ``.value`` and the ``kDL*`` constants."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17
    kDLTrn = 18

    @property
    def value(self) -> int:
        """The numeric device type."""
        return int(self)

    def __str__(self) -> str:
        return {1: "CPU", 2: "CUDA", 3: "CUDAHost", 13: "CUDAManaged"}.get(int(self), f"Device<{int(self)}>")

    def __repr__(self) -> str:
        return f"DLDeviceType({int(self)})"


class DLDataTypeCode(int):
    """A DLPack type code: an ``int`` with ``.value`` and the ``kDL*`` constants."""

    kDLInt = 0
    kDLUInt = 1
    kDLFloat = 2
    kDLOpaqueHandle = 3
    kDLBfloat = 4
    kDLComplex = 5
    kDLBool = 6

    @property
    def value(self) -> int:
        """The numeric type code."""
        return int(self)


def _field(value: Any, name: str, bits: int) -> int:
    if isinstance(value, float) or not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    v = operator.index(value)
    if not 0 <= v < (1 << bits):
        raise ValueError(f"{name} must fit in uint{bits}, got {v}")
    return v


class DLDataType:
    """A DLPack element type: ``code`` (uint8), ``bits`` (uint8), ``lanes`` (uint16)."""

    __slots__ = ("_code", "_bits", "_lanes")

    def __init__(self, code: int = 0, bits: int = 0, lanes: int = 0) -> None:
        self.code, self.bits, self.lanes = code, bits, lanes

    code = property(lambda self: self._code, lambda self, v: setattr(self, "_code", _field(v, "code", 8)),
                    doc="Type code (a DLDataTypeCode value).")
    bits = property(lambda self: self._bits, lambda self, v: setattr(self, "_bits", _field(v, "bits", 8)),
                    doc="Bits of one lane.")
    lanes = property(lambda self: self._lanes, lambda self, v: setattr(self, "_lanes", _field(v, "lanes", 16)),
                     doc="Lanes (tuple width).")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DLDataType):
            return NotImplemented
        return (self.code, self.bits, self.lanes) == (other.code, other.bits, other.lanes)

    def __hash__(self) -> int:
        return hash((self.code, self.bits, self.lanes))

    def __repr__(self) -> str:
        return f"DLDataType(code={self.code}, bits={self.bits}, lanes={self.lanes})"


class DLDevice:
    """A DLPack device: ``device_type`` (a :class:`DLDeviceType`) and ``device_id``."""

    __slots__ = ("device_type", "device_id")

    def __init__(self, device_type: int = 1, device_id: int = 0) -> None:
        self.device_type = DLDeviceType(int(device_type))
        self.device_id = int(device_id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DLDevice):
            return NotImplemented
        return (int(self.device_type), self.device_id) == (int(other.device_type), other.device_id)

    def __repr__(self) -> str:
        return f"DLDevice(device_type={int(self.device_type)}, device_id={self.device_id})"


class DLTensor:
    """A non-owning DLPack tensor descriptor; it keeps the memory's owner (``_keep``) alive."""

    _ovstage_dltensor = True

    def __init__(self, data: Optional[int], device: DLDevice, ndim: int, dtype: DLDataType, shape: Sequence[int],
                 strides: Optional[Sequence[int]] = None, byte_offset: int = 0, keep: Any = None,
                 nbytes: Optional[int] = None) -> None:
        self.data = data
        self.device = device
        self.ndim = int(ndim)
        self.dtype = dtype
        self.shape = list(shape)
        self.strides = list(strides) if strides else None
        self.byte_offset = int(byte_offset)
        self._keep = keep
        if nbytes is not None:
            self._nbytes = int(nbytes)

    @property
    def shape_tuple(self) -> tuple:
        """The ``ndim`` shape entries."""
        return tuple(self.shape[: self.ndim])

    @classmethod
    def _from_view(cls, data, shape, strides, dtype, device, keep) -> "DLTensor":
        return cls(data, DLDevice(*device), len(shape), DLDataType(*dtype), shape, strides, 0, keep)

    @classmethod
    def from_dlpack(cls, obj: Any, stream: Optional[int] = None) -> "DLTensor":
        """Ingests any ``__dlpack__`` producer without copying; the tensor keeps the producer alive."""
        if not hasattr(obj, "__dlpack__"):
            raise TypeError(f"{type(obj).__name__} has no __dlpack__")
        owner, data, shape, strides, dtype, device, offset = _native._dlpack_ingest(obj, stream)
        if not 1 <= dtype[2] <= 255:
            raise ValueError(f"producer lanes {dtype[2]} outside [1, 255]")
        t = cls(data, DLDevice(*device), len(shape), DLDataType(*dtype), shape, strides, offset, (owner, obj))
        return t

    def __repr__(self) -> str:
        return f"DLTensor(shape={self.shape_tuple}, dtype={self.dtype!r}, device={self.device!r})"


_NP_TO_DL = {
    np.dtype(np.float16): (2, 16), np.dtype(np.float32): (2, 32), np.dtype(np.float64): (2, 64),
    np.dtype(np.int8): (0, 8), np.dtype(np.int16): (0, 16), np.dtype(np.int32): (0, 32), np.dtype(np.int64): (0, 64),
    np.dtype(np.uint8): (1, 8), np.dtype(np.uint16): (1, 16), np.dtype(np.uint32): (1, 32),
    np.dtype(np.uint64): (1, 64), np.dtype(np.bool_): (6, 8),
}
_DL_TO_NP = {v: k for k, v in _NP_TO_DL.items()}


def numpy_to_dldatatype(np_dtype: Any, lanes: int = 1) -> DLDataType:
    """The DLPack type of a numpy dtype (or scalar type, name, ``float``/``int``/``bool``) with ``lanes``."""
    if isinstance(lanes, bool) or not isinstance(lanes, int):
        raise TypeError("lanes must be an int")
    if not 1 <= lanes <= 255:
        raise ValueError(f"lanes must be in [1, 255], got {lanes}")
    if np_dtype is None:
        raise ValueError("unsupported dtype None")
    try:
        dt = np.dtype(np_dtype).newbyteorder("=")
    except TypeError as e:
        raise ValueError(f"unsupported dtype {np_dtype!r}") from e
    if dt not in _NP_TO_DL:
        raise ValueError(f"unsupported dtype {dt}")
    code, bits = _NP_TO_DL[dt]
    return DLDataType(code, bits, lanes)


def make_dltensor(array: Any, *, dtype: Optional[DLDataType] = None, shape: Optional[list] = None,
                  ndim: Optional[int] = None, strides: Optional[list] = None,
                  device_type: int = DLDeviceType.kDLCPU, device_id: int = 0) -> DLTensor:
    """Describes an array without copying it (the tensor keeps it alive); overrides describe multi-lane elements."""
    if not isinstance(array, np.ndarray) and hasattr(array, "__dlpack__"):
        src = DLTensor.from_dlpack(array)
        if dtype is None and shape is None and ndim is None and strides is None:
            return src
        if dtype is None:
            raise ValueError("a fold of a DLPack producer needs dtype")
        if not isinstance(dtype, DLDataType):
            raise TypeError("dtype must be a DLDataType")
        if (dtype.code, dtype.bits) != (src.dtype.code, src.dtype.bits) or src.strides and not _compact(src):
            raise ValueError("a fold must keep the source's code and bits over a compact source")
        dims = list(src.shape_tuple)
        lanes, k = src.dtype.lanes, len(dims)
        while lanes < dtype.lanes and k > 0:
            k -= 1
            lanes *= dims[k]
        if lanes != dtype.lanes:
            raise ValueError("dtype.lanes must be formed by whole trailing dimensions")
        folded = dims[:k] or [1]
        if shape is not None and list(shape) != folded or ndim is not None and ndim != len(folded):
            raise ValueError(f"shape/ndim must equal the folded view {folded}")
        if strides:
            raise ValueError("strides must be omitted for a fold")
        return DLTensor(src.data, src.device, len(folded), dtype, folded, None, src.byte_offset, src._keep)
    arr = np.ascontiguousarray(array)
    if arr.dtype.kind == "c" or arr.dtype.kind not in "fiub":
        raise ValueError(f"unsupported numpy dtype {arr.dtype}")
    dt = dtype if dtype is not None else numpy_to_dldatatype(arr.dtype)
    if not isinstance(dt, DLDataType):
        raise TypeError("dtype must be a DLDataType")
    if not 1 <= dt.lanes <= 255:
        raise ValueError(f"lanes must be in [1, 255], got {dt.lanes}")
    shp = list(shape) if shape is not None else list(arr.shape)
    nd = ndim if ndim is not None else len(shp)
    if nd > len(shp):
        raise ValueError("ndim exceeds len(shape)")
    if strides is not None and len(strides) < nd:
        raise ValueError("len(strides) is below ndim")
    return DLTensor(arr.ctypes.data if arr.size else 0, DLDevice(device_type, device_id), nd, dt, shp, strides, 0,
                    arr, nbytes=arr.nbytes)


def _compact(t: DLTensor) -> bool:
    expect = 1
    for d, s in zip(reversed(t.shape_tuple), reversed(t.strides or [])):
        if d > 1 and s != expect:
            return False
        expect *= d
    return True


def dltensor_to_numpy(tensor: DLTensor, *, readonly: bool = False) -> np.ndarray:
    """A zero-copy flat numpy view of a CPU tensor (``prod(shape) * lanes`` elements)."""
    if int(tensor.device.device_type) not in (1, 3, 13):
        raise NotImplementedError("dltensor_to_numpy needs a tensor in CPU memory")
    key = (tensor.dtype.code, tensor.dtype.bits)
    if key not in _DL_TO_NP:
        raise ValueError(f"unsupported dtype {tensor.dtype!r}")
    npdt = _DL_TO_NP[key]
    n = math.prod(tensor.shape_tuple) * max(tensor.dtype.lanes, 1)
    nbytes = getattr(tensor, "_nbytes", None)
    if nbytes is not None and n * npdt.itemsize > nbytes:
        raise ValueError("the description is larger than the buffer")
    if n == 0:
        return np.empty(0, npdt)
    keep = tensor._keep
    if isinstance(keep, np.ndarray) and keep.ctypes.data == tensor.data and keep.flags.c_contiguous:
        out = keep.reshape(-1).view(npdt)[:n]
    else:
        if tensor.strides and not _compact(tensor):
            it = npdt.itemsize * max(tensor.dtype.lanes, 1)
            view = np.lib.stride_tricks.as_strided(
                np.frombuffer(_Buf(tensor.data + tensor.byte_offset, _span(tensor) * it, keep), npdt),
                shape=tensor.shape_tuple, strides=[s * it for s in tensor.strides])
            out = view.reshape(-1)
        else:
            out = np.frombuffer(_Buf(tensor.data + tensor.byte_offset, n * npdt.itemsize, keep), npdt)
    if readonly:
        out = out.view()
        out.flags.writeable = False
    return out


def _span(t: DLTensor) -> int:
    return 1 + sum((d - 1) * s for d, s in zip(t.shape_tuple, t.strides or []))


class _Buf:
    """A buffer over raw memory (for numpy), keeping its owner alive."""

    def __init__(self, ptr: int, size: int, keep: Any) -> None:
        self._keep = keep
        self.__array_interface__ = {"data": (ptr, False), "shape": (size,), "typestr": "|u1", "version": 3}

    def __buffer__(self, flags):  # pragma: no cover - numpy uses the interface
        return memoryview(np.asarray(self))


def typed_tensor_to_write(source: DLTensor) -> DLTensor:
    """Converts a read or map tensor (scalar lanes, rank 1-3) into the write form: rank 1, components in lanes."""
    shp = source.shape_tuple
    if not 1 <= len(shp) <= 3 or source.dtype.lanes != 1:
        raise ValueError("typed_tensor_to_write needs a rank 1-3 tensor with scalar lanes")
    comps = math.prod(shp[1:])
    if comps > 255:
        raise ValueError("more than 255 components")
    if source.strides and not _compact(source):
        raise ValueError("non-compact component axes")
    dt = DLDataType(source.dtype.code, source.dtype.bits, comps)
    return DLTensor(source.data, source.device, 1, dt, [shp[0]], [1], source.byte_offset, (source, source._keep))


class ManagedDLTensor:
    """A DLPack producer over a tensor; exports of group tensors own the group's memory."""

    def __init__(self, dl_tensor: DLTensor, manager_ctx: Any, deleter_callback: Any = None,
                 readonly: bool = True) -> None:
        self.raw_dltensor = dl_tensor
        self._ctx = manager_ctx
        self._deleter = deleter_callback
        self._readonly = bool(readonly)

    shape = property(lambda self: self.raw_dltensor.shape_tuple, doc="Shape of the tensor.")
    ndim = property(lambda self: self.raw_dltensor.ndim, doc="Number of dimensions.")
    dtype = property(lambda self: self.raw_dltensor.dtype, doc="Element type.")
    data = property(lambda self: self.raw_dltensor.data, doc="Address of the data.")
    device = property(lambda self: self.raw_dltensor.device, doc="Device of the data.")

    def numpy(self) -> np.ndarray:
        """``np.from_dlpack(self)`` (CPU only)."""
        return np.from_dlpack(self)

    def __dlpack_device__(self) -> tuple:
        d = self.raw_dltensor.device
        return (int(d.device_type), int(d.device_id))

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None):
        if hasattr(self._ctx, "__dlpack__"):
            return self._ctx.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)
        if copy:
            raise BufferError("copy=True is not supported")
        if dl_device is not None:
            if not isinstance(dl_device, tuple) or len(dl_device) != 2:
                raise TypeError("dl_device must be a (device_type, device_id) tuple")
            if tuple(dl_device) != self.__dlpack_device__():
                raise BufferError("cannot export to another device")
        t = self.raw_dltensor
        shape, strides = list(t.shape_tuple), t.strides
        if t.dtype.lanes > 1:
            shape, strides = shape + [t.dtype.lanes], ([s * t.dtype.lanes for s in strides] + [1]) if strides else None
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return _native._export_view(t.data + t.byte_offset, shape, strides, (t.dtype.code, t.dtype.bits, 1),
                                    self.__dlpack_device__(), (t, self._ctx), self._readonly, versioned)

    def __repr__(self) -> str:
        return f"ManagedDLTensor(shape={self.shape}, dtype={self.dtype!r}, device={self.device!r})"
