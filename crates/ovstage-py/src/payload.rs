//! Write payloads from Python objects: numpy arrays read in place through
//! the numpy C API, the package's `DLTensor` descriptors, and any DLPack
//! producer (its managed tensor taken over through a capsule). Every host
//! tensor keeps its Python owner alive until the op drops it; CUDA memory
//! is staged to the host at enqueue, after the work the write's
//! `cuda_stream` and `cuda_event` name.

use std::sync::Arc;

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use ovstage::{DType, DTypeCode, Error, HostBytes, Tensor};
use ovstage_dlpack::import::CudaSync;
use ovstage_dlpack::{Managed, RowBound};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple};
use smallvec::SmallVec;

use crate::args::type_name;
use crate::capsule;

/// Bytes of a Python object's buffer, read in place; the object is kept
/// alive (and, by contract, unchanged) until this is dropped.
struct PyOwnedBytes {
    _owner: Py<PyAny>,
    ptr: *const u8,
    len: usize,
}

// SAFETY: the pointer is into memory owned by `_owner`, which this keeps
// alive; the bytes are only read, and the caller must not change them
// until the op completes (the contract's rule for every write payload).
// Dropping a `Py` without the GIL defers the decref to PyO3's pool.
unsafe impl Send for PyOwnedBytes {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for PyOwnedBytes {}

impl HostBytes for PyOwnedBytes {
    fn host_bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `len` bytes at `ptr` belong to `_owner`'s buffer (checked
        // when this was built) and stay valid while it lives.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

static ASCONTIGUOUS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The element type of a numpy dtype, or `ValueError`.
pub(crate) fn numpy_dtype(kind: u8, itemsize: usize) -> PyResult<DType> {
    let code = numpy_code(kind)
        .ok_or_else(|| PyValueError::new_err(format!("unsupported numpy dtype kind {:?}", kind as char)))?;
    Ok(DType::new(code, (itemsize * 8) as u8, 1))
}

/// The type code of a numpy dtype kind (`None`: not a number kind).
pub(crate) fn numpy_code(kind: u8) -> Option<DTypeCode> {
    match kind {
        b'f' => Some(DTypeCode::Float),
        b'i' => Some(DTypeCode::Int),
        b'u' => Some(DTypeCode::UInt),
        b'b' => Some(DTypeCode::Bool),
        _ => None,
    }
}

/// A numpy array (made C-contiguous and native-endian first when it is
/// not) as a tensor viewing its memory.
fn from_numpy<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Tensor> {
    from_array(py, obj.cast::<PyUntypedArray>()?.clone())
}

/// A stage tensor viewing a numpy array's buffer (a C-contiguous,
/// native-order copy first when it is neither). The dtype is looked up
/// once: each `dtype()` is a new reference.
fn from_array<'py>(py: Python<'py>, mut arr: Bound<'py, PyUntypedArray>) -> PyResult<Tensor> {
    let mut dt = arr.dtype();
    let native = dt.is_native_byteorder().unwrap_or(true);
    if !arr.is_c_contiguous() || !native {
        let f = ASCONTIGUOUS.import(py, "numpy", "ascontiguousarray")?;
        let target = if native { dt.into_any() } else { dt.call_method0("newbyteorder")? };
        arr = f.call1((arr, target))?.cast_into::<PyUntypedArray>()?;
        dt = arr.dtype();
    }
    let itemsize = dt.itemsize();
    let dtype = numpy_dtype(dt.kind(), itemsize)?;
    let shape: SmallVec<[u64; 4]> =
        if arr.ndim() == 0 { SmallVec::from_slice(&[1]) } else { arr.shape().iter().map(|d| *d as u64).collect() };
    let len = shape.iter().product::<u64>() as usize * itemsize;
    // SAFETY: `as_array_ptr` is the live array object; its `data` field is
    // the start of its (C-contiguous, checked above) buffer.
    let ptr = unsafe { (*arr.as_array_ptr()).fields.data } as *const u8;
    let bytes = PyOwnedBytes { _owner: arr.into_any().unbind(), ptr, len };
    Tensor::new(bytes, dtype, &shape).map_err(|e| crate::errors::to_py(&e))
}

/// A tensor from the package's `DLTensor` record (`make_dltensor`,
/// `DLTensor.from_dlpack`, `typed_tensor_to_write`): host memory read in
/// place, CUDA memory staged (see [`cuda_descriptor`]).
fn from_dltensor(obj: &Bound<'_, PyAny>, sync: CudaSync) -> Result<Tensor, Error> {
    let get = |name: &str| obj.getattr(name).map_err(|e| Error::invalid_argument(format!("DLTensor.{name}: {e}")));
    let ext_u64 = |v: Bound<'_, PyAny>, name: &str| {
        v.extract::<u64>().map_err(|_| Error::invalid_argument(format!("DLTensor.{name} must be an unsigned int")))
    };
    let device = get("device")?;
    let dev_type: i32 = device
        .getattr("device_type")
        .and_then(|d| d.extract::<i32>())
        .map_err(|_| Error::invalid_argument("DLTensor.device.device_type must be an int32"))?;
    let device_id: i32 = device
        .getattr("device_id")
        .and_then(|d| d.extract::<i32>())
        .map_err(|_| Error::invalid_argument("DLTensor.device.device_id must be an int32"))?;
    // The device is judged as a C client's DLTensor is: unknown types,
    // absent CUDA devices and managed memory without a driver get C's
    // statuses and messages.
    let dl_device =
        ovstage_abi::dlpack::DLDevice { device_type: ovstage_abi::dlpack::DLDeviceType(dev_type), device_id };
    let on_device = ovstage_dlpack::device::input_is_device_memory(dl_device, "tensors")?;
    if !on_device {
        ovstage_dlpack::import::refuse_host_sync(sync, "tensors")?;
    }
    let dtype = get("dtype")?;
    let code = ext_u64(dtype.getattr("code").map_err(|_| Error::invalid_argument("dtype.code"))?, "dtype.code")?;
    let bits = ext_u64(dtype.getattr("bits").map_err(|_| Error::invalid_argument("dtype.bits"))?, "dtype.bits")?;
    let lanes = ext_u64(dtype.getattr("lanes").map_err(|_| Error::invalid_argument("dtype.lanes"))?, "dtype.lanes")?;
    let code = u8::try_from(code)
        .ok()
        .and_then(DTypeCode::from_raw)
        .ok_or_else(|| Error::invalid_argument(format!("unsupported dtype code {code}")))?;
    let dt = DType::new(code, bits as u8, lanes as u16);
    let shape: Vec<u64> = get("shape_tuple")?
        .extract::<Vec<i64>>()
        .map_err(|_| Error::invalid_argument("DLTensor shape must be ints"))?
        .into_iter()
        .map(|d| u64::try_from(d).map_err(|_| Error::invalid_argument("negative DLTensor extent")))
        .collect::<Result<_, _>>()?;
    let data: u64 = match get("data")? {
        d if d.is_none() => 0,
        d => ext_u64(d, "data")?,
    };
    let offset = ext_u64(get("byte_offset")?, "byte_offset")?;
    // The record's own buffer size, when it knows it, bounds a compact
    // payload's bytes, in host or device memory alike.
    let element =
        dt.element_bytes().ok_or_else(|| Error::invalid_argument(format!("dtype {dt} has no whole-byte size")))?;
    let count = shape
        .iter()
        .try_fold(1u64, |a, d| a.checked_mul(*d))
        .ok_or_else(|| Error::invalid_argument("shape overflows"))?;
    let len = count.checked_mul(element as u64).ok_or_else(|| Error::invalid_argument("size overflows"))? as usize;
    if let Ok(nb) = obj.getattr("_nbytes")
        && let Ok(nb) = nb.extract::<u64>()
        && (len as u64).saturating_add(offset) > nb
    {
        return Err(Error::invalid_argument(format!("DLTensor describes {len} bytes but its buffer holds {nb}")));
    }
    if on_device {
        let strides: Option<Vec<i64>> = match get("strides")? {
            s if !s.is_truthy().unwrap_or(false) => None,
            s => Some(s.extract().map_err(|_| Error::invalid_argument("DLTensor strides must be ints"))?),
        };
        return cuda_descriptor(data, device_id, dt, &shape, strides, offset, sync);
    }
    let strides = get("strides")?;
    if strides.is_truthy().unwrap_or(false) {
        let s: Vec<i64> = strides.extract().map_err(|_| Error::invalid_argument("DLTensor strides must be ints"))?;
        if !ovstage_dlpack::import::row_major(shape.iter().copied(), &s) {
            return Err(Error::invalid_argument(
                "non-compact DLTensor strides are not supported in writes; pass a contiguous array",
            ));
        }
    }
    if data == 0 && len > 0 {
        return Err(Error::invalid_argument("DLTensor has no data"));
    }
    let shape = if shape.is_empty() { vec![1] } else { shape };
    let bytes = PyOwnedBytes { _owner: obj.clone().unbind(), ptr: (data + offset) as usize as *const u8, len };
    Tensor::new(bytes, dt, &shape)
}

/// A `DLTensor` record describing CUDA memory: checked and staged to the
/// host by the same code as a C client's `kDLCUDA` tensor (after the work
/// `sync` names), so both bindings answer alike. The staged copy owns its
/// bytes: the device memory is not read after this returns.
fn cuda_descriptor(
    data: u64,
    device_id: i32,
    dtype: DType,
    shape: &[u64],
    strides: Option<Vec<i64>>,
    byte_offset: u64,
    sync: CudaSync,
) -> Result<Tensor, Error> {
    use ovstage_abi::dlpack::{DLDataType, DLDevice, DLDeviceType, DLTensor};
    let mut extents: Vec<i64> = shape
        .iter()
        .map(|d| i64::try_from(*d).map_err(|_| Error::invalid_argument("DLTensor extent exceeds int64")))
        .collect::<Result<_, _>>()?;
    let mut strides = strides;
    if strides.as_ref().is_some_and(|s| s.len() != extents.len()) {
        return Err(Error::invalid_argument("DLTensor strides must have one entry per dimension"));
    }
    let ndim = i32::try_from(extents.len()).map_err(|_| Error::invalid_argument("DLTensor has too many dimensions"))?;
    let (code, bits, lanes) = (dtype.code as u8, dtype.bits, dtype.lanes);
    let t = DLTensor {
        data: data as usize as *mut std::ffi::c_void,
        device: DLDevice { device_type: DLDeviceType(ovstage_dlpack::device::CUDA), device_id },
        ndim,
        dtype: DLDataType { code, bits, lanes },
        shape: extents.as_mut_ptr(),
        strides: strides.as_mut().map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset,
    };
    // SAFETY: `shape` and `strides` point at `ndim` live entries each (or
    // strides is NULL); the client vouches that the device range is
    // readable and that `sync`'s stream and event are live, as a C client
    // does. The result owns a host copy, so nothing here outlives the call.
    unsafe { ovstage_dlpack::import::tensor(&t, None, &|| RowBound::Any, sync, "tensors") }
}

/// One payload item: a tensor (or why the enqueue rejects it), or a
/// DLPack producer's tensor taken over, to be imported with the others.
enum Item {
    Tensor(Result<Tensor, Error>),
    Managed(Arc<Managed>),
}

/// One payload item as a tensor. `Err(PyErr)` for bad Python arguments;
/// `Ok(Err)` for payloads the enqueue rejects.
fn item(py: Python<'_>, obj: &Bound<'_, PyAny>, sync: CudaSync) -> PyResult<Result<Tensor, Error>> {
    Ok(match classify(py, obj, sync)? {
        Item::Tensor(t) => t,
        Item::Managed(m) => managed_tensor(m, sync),
    })
}

/// [`item`], a DLPack producer's tensor left to import.
fn classify(py: Python<'_>, obj: &Bound<'_, PyAny>, sync: CudaSync) -> PyResult<Item> {
    if let Ok(arr) = obj.cast::<PyUntypedArray>() {
        if let Err(e) = ovstage_dlpack::import::refuse_host_sync(sync, "tensors") {
            return Ok(Item::Tensor(Err(e)));
        }
        return match from_array(py, arr.clone()) {
            Ok(t) => Ok(Item::Tensor(Ok(t))),
            Err(e) if e.is_instance_of::<PyValueError>(py) || e.is_instance_of::<PyTypeError>(py) => Err(e),
            Err(e) => Ok(Item::Tensor(Err(Error::invalid_argument(e.to_string())))),
        };
    }
    if obj.hasattr("_ovstage_dltensor")? {
        return Ok(Item::Tensor(from_dltensor(obj, sync)));
    }
    if obj.hasattr("__dlpack__")? {
        // The DLPack protocol: a consumer names the stream it will use, and
        // the producer makes its work visible there. Only a CUDA producer
        // is asked (a host one refuses a stream); the others are refused
        // by the import check when `sync` is set.
        // Asked only when a stream is given: most writes name none, and
        // need no extra call into the producer.
        let on_cuda = || -> PyResult<bool> {
            Ok(obj.hasattr("__dlpack_device__")?
                && obj.call_method0("__dlpack_device__")?.get_item(0)?.extract::<i64>().ok()
                    == Some(i64::from(ovstage_dlpack::device::CUDA)))
        };
        let stream = if sync.stream != 0 && on_cuda()? { Some(sync.stream.into_pyobject(py)?) } else { None };
        return Ok(Item::Managed(capsule::ingest(obj, stream.as_ref().map(|s| s.as_any()))?));
    }
    if let Err(e) = ovstage_dlpack::import::refuse_host_sync(sync, "tensors") {
        return Ok(Item::Tensor(Err(e)));
    }
    let arr = ASCONTIGUOUS.import(py, "numpy", "ascontiguousarray")?.call1((obj,))?;
    if !arr.is_instance_of::<PyUntypedArray>() {
        return Err(PyTypeError::new_err(format!("tensors items must be arrays, got {}", type_name(obj))));
    }
    from_numpy(py, &arr).map(|t| Item::Tensor(Ok(t)))
}

/// A managed (DLPack producer's) tensor as a stage tensor, zero-copy when
/// compact. A CUDA tensor is copied to the host after the work `sync`
/// names; without a `cuda_stream`, after the legacy default stream's:
/// `__dlpack__()` asked without a stream makes the producer's work visible
/// there (the DLPack protocol), so the copy sees it.
pub(crate) fn managed_tensor(managed: Arc<Managed>, sync: CudaSync) -> Result<Tensor, Error> {
    let sync = producer_sync(std::slice::from_ref(&managed), sync);
    // SAFETY: the managed tensor is valid while `managed` lives; the stage
    // tensor holds a clone of it.
    unsafe { ovstage_dlpack::import::tensor(managed.tensor(), Some(&managed), &|| RowBound::Any, sync, "tensors") }
}

/// The sync DLPack producers' CUDA tensors are copied after: `sync`, or
/// the legacy default stream when it names no stream (see
/// [`managed_tensor`]).
fn producer_sync(managed: &[Arc<Managed>], sync: CudaSync) -> CudaSync {
    let cuda = managed.iter().any(|m| m.tensor().device.device_type.0 == ovstage_dlpack::device::CUDA);
    if cuda && sync.stream == 0 { CudaSync { stream: CudaSync::LEGACY_STREAM, ..sync } } else { sync }
}

/// The `tensors=` argument as a list of tensors (one inline: the usual
/// single array allocates no list): one item, or a list or tuple of items.
/// `ValueError` when empty.
/// `sync`: the write's `cuda_stream` and `cuda_event` (0: none).
pub(crate) fn tensors(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    sync: CudaSync,
) -> PyResult<Result<SmallVec<[Tensor; 1]>, Error>> {
    if !(obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>()) {
        return Ok(item(py, obj, sync)?.map(|t| smallvec::smallvec![t]));
    }
    let list: Vec<Bound<'_, PyAny>> = obj.try_iter()?.collect::<PyResult<_>>()?;
    if list.is_empty() {
        return Err(PyValueError::new_err("tensors must not be empty"));
    }
    // DLPack producers' tensors are imported together, so that CUDA ones
    // are staged as one batch (one capture, one synchronisation).
    let mut out: SmallVec<[Option<Tensor>; 1]> = SmallVec::with_capacity(list.len());
    let mut managed: Vec<(usize, Arc<Managed>)> = Vec::new();
    for (i, x) in list.iter().enumerate() {
        match classify(py, x, sync)? {
            Item::Tensor(Ok(t)) => out.push(Some(t)),
            Item::Tensor(Err(e)) => return Ok(Err(e)),
            Item::Managed(m) => {
                out.push(None);
                managed.push((i, m));
            }
        }
    }
    if !managed.is_empty() {
        let owners: Vec<Arc<Managed>> = managed.iter().map(|(_, m)| m.clone()).collect();
        let sync = producer_sync(&owners, sync);
        let inputs = ovstage_dlpack::import::Inputs::Managed(&owners);
        // SAFETY: the managed tensors are valid while `owners` live; each
        // stage tensor holds a clone of its own.
        let imported = unsafe { ovstage_dlpack::import::tensors(inputs, &|| RowBound::Any, sync, &"tensors") };
        match imported {
            Ok(ts) => managed.iter().zip(ts).for_each(|((i, _), t)| out[*i] = Some(t)),
            Err(e) => return Ok(Err(e)),
        }
    }
    Ok(Ok(out.into_iter().map(|t| t.expect("every item imported")).collect()))
}
