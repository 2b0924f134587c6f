//! `ReadGroup` and `MapGroup`: zero-copy numpy views and DLPack exports of
//! a group's tensors. Every view's base owns the memory it shows (a read
//! group's pinned storage; a map group's buffer, detached from what is
//! committed when views outlive the commit), so no view ever reads freed
//! memory or changes published data.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use numpy::npyffi::{self, NPY_ARRAY_ALIGNED, NPY_ARRAY_WRITEABLE, NpyTypes, PY_ARRAY_API, npy_intp};
use ovstage::{AttributeMeta, DType, DTypeCode, DetachedBuffer, Device, PrimGroup};
use ovstage_abi::dlpack::{DLDataType, DLTensor};
use ovstage_dlpack::{Flags, ReadTensors};
use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyAny;

use crate::args;
use crate::capsule;
use crate::errors::invalid_handle;
use crate::handles::Map;
use crate::stage::Stage;
use crate::warn::resource_warning;

/// Owns a read group's pinned storage for numpy views and exports.
#[pyclass(frozen, module = "ovstage._native")]
pub(crate) struct ReadOwner(#[allow(dead_code)] Arc<ovstage::ReadGroup>);

/// Owns the device copy of a group read with a CUDA placement (and the
/// group) for descriptors and exports.
#[pyclass(frozen, module = "ovstage._native")]
pub(crate) struct PlacedOwner(#[allow(dead_code)] Arc<ReadTensors>);

/// Owns a map group's buffer for numpy views and exports.
#[pyclass(frozen, module = "ovstage._native")]
pub(crate) struct MapOwner(#[allow(dead_code)] Arc<MapShared>);

fn typenum(dtype: DType) -> PyResult<i32> {
    use npyffi::NPY_TYPES as T;
    let t = match (dtype.code, dtype.bits) {
        (DTypeCode::Float, 16) => T::NPY_HALF,
        (DTypeCode::Float, 32) => T::NPY_FLOAT,
        (DTypeCode::Float, 64) => T::NPY_DOUBLE,
        (DTypeCode::Int, 8) => T::NPY_BYTE,
        (DTypeCode::Int, 16) => T::NPY_SHORT,
        (DTypeCode::Int, 32) => T::NPY_INT,
        (DTypeCode::Int, 64) => T::NPY_LONG,
        (DTypeCode::UInt, 8) => T::NPY_UBYTE,
        (DTypeCode::UInt, 16) => T::NPY_USHORT,
        (DTypeCode::UInt, 32) => T::NPY_UINT,
        (DTypeCode::UInt, 64) => T::NPY_ULONG,
        (DTypeCode::Bool, 8) => T::NPY_BOOL,
        _ => return Err(PyValueError::new_err(format!("no numpy dtype for {dtype}"))),
    };
    Ok(t as i32)
}

/// A numpy array over `data` (shape and strides in elements) whose base is
/// `base`; writable only when `writable`.
fn numpy_view<'py>(
    py: Python<'py>,
    data: *mut u8,
    dtype: DType,
    shape: &[u64],
    strides: &[i64],
    writable: bool,
    base: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let item = (dtype.bits / 8) as i64;
    let mut dims: Vec<npy_intp> = shape.iter().map(|d| *d as npy_intp).collect();
    let mut st: Vec<npy_intp> = strides.iter().map(|s| (*s * item) as npy_intp).collect();
    let flags = if writable { NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE } else { NPY_ARRAY_ALIGNED };
    let data = if data.is_null() { std::ptr::NonNull::<u64>::dangling().as_ptr().cast() } else { data };
    // SAFETY: numpy's C API with the GIL held: the descriptor reference is
    // stolen by `PyArray_NewFromDescr`, the dims/strides arrays are read
    // during the call, and `data` stays valid while `base` lives, which
    // `PyArray_SetBaseObject` (stealing our new reference) makes the array
    // keep.
    unsafe {
        let descr = PY_ARRAY_API.PyArray_DescrFromType(py, typenum(dtype)?);
        if descr.is_null() {
            return Err(PyErr::fetch(py));
        }
        let arr = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            npyffi::get_type_object(py, NpyTypes::PyArray_Type),
            descr,
            dims.len() as i32,
            dims.as_mut_ptr(),
            st.as_mut_ptr(),
            data.cast::<c_void>(),
            flags,
            std::ptr::null_mut(),
        );
        if arr.is_null() {
            return Err(PyErr::fetch(py));
        }
        let arr = Bound::from_owned_ptr(py, arr);
        if PY_ARRAY_API.PyArray_SetBaseObject(py, arr.as_ptr().cast(), base.into_ptr()) != 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(arr)
    }
}

fn check_local(local: &Bound<'_, PyAny>, count: u32) -> PyResult<usize> {
    let i = args::u64_arg(local, "local").map_err(|e| {
        if e.is_instance_of::<PyValueError>(local.py()) {
            PyIndexError::new_err(format!("local out of range [0, {count})"))
        } else {
            e
        }
    })?;
    if i >= u64::from(count) {
        return Err(PyIndexError::new_err(format!("local {i} out of range [0, {count})")));
    }
    Ok(i as usize)
}

fn check_index(index: &Bound<'_, PyAny>, count: usize) -> PyResult<usize> {
    let i = args::u64_arg(index, "index").map_err(|e| {
        if e.is_instance_of::<PyValueError>(index.py()) {
            PyIndexError::new_err(format!("index out of range [0, {count})"))
        } else {
            e
        }
    })?;
    if i >= count as u64 {
        return Err(PyIndexError::new_err(format!("tensor index {i} out of range [0, {count})")));
    }
    Ok(i as usize)
}

static DLTENSOR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static MANAGED: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static META: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// A `DLTensor` record describing a view (it keeps `keep` alive).
fn dltensor<'py>(
    py: Python<'py>,
    data: usize,
    dtype: DType,
    shape: &[u64],
    strides: &[i64],
    device: Device,
    keep: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let dev = ovstage_dlpack::dl_device(device);
    DLTENSOR.import(py, "ovstage._dlpack", "DLTensor")?.getattr("_from_view")?.call1((
        data,
        shape.to_vec(),
        strides.to_vec(),
        (dtype.code as u8, dtype.bits, dtype.lanes),
        (dev.device_type.0, dev.device_id),
        keep,
    ))
}

fn meta_obj<'py>(py: Python<'py>, m: AttributeMeta) -> PyResult<Bound<'py, PyAny>> {
    META.import(py, "ovstage._values", "AttributeMeta")?.call1((m.write_floor.get(), m.layout_generation))
}

/// A group's prim run.
fn prim_index(prims: &PrimGroup, local: &Bound<'_, PyAny>) -> PyResult<u32> {
    Ok(prims.list_index(check_local(local, prims.count)?))
}

// ---- Read groups

/// A fetched read group: one attribute over a run of the read's prims.
/// Views from `array()`/`dlpack()` stay valid after `release()`.
#[pyclass(frozen, weakref, module = "ovstage")]
pub(crate) struct ReadGroup {
    stage: Py<Stage>,
    group: RwLock<Option<Arc<ovstage::ReadGroup>>>,
    released: AtomicBool,
    prims: PrimGroup,
    attribute: u64,
    ordinal: u64,
    is_delete: bool,
    is_array: bool,
    semantic: u32,
    tensor_count: usize,
    data_map: Option<Arc<[u32]>>,
    meta: AttributeMeta,
    /// The group's values copied to a CUDA device, for a read placed there
    /// (what its descriptors and exports point at).
    placed: Option<Arc<ReadTensors>>,
}

impl ReadGroup {
    /// Wraps a fetched group.
    pub(crate) fn new(stage: Py<Stage>, mut g: ovstage::ReadGroup) -> ReadGroup {
        // This binding installs no group preparer: what a group carries was
        // made by a placed read's finisher (the device copy).
        let placed = g.take_prepared().map(|p| {
            let mut copy = g.clone();
            copy.set_prepared(p);
            Arc::new(ReadTensors::new(copy))
        });
        let data = g.data();
        ReadGroup {
            stage,
            prims: g.prims().clone(),
            attribute: g.attribute().get(),
            ordinal: g.ordinal().get(),
            is_delete: g.is_delete(),
            is_array: g.is_array(),
            semantic: g.semantic() as u32,
            tensor_count: data.map_or(0, |d| d.tensor_count()),
            data_map: data.and_then(|d| d.index_map().map(Arc::from)),
            meta: g.meta(),
            placed,
            released: AtomicBool::new(false),
            group: RwLock::new(Some(Arc::new(g))),
        }
    }

    /// What exports of this group point at: the device copy of a placed
    /// read, else the group's own storage.
    fn source(&self, g: Arc<ovstage::ReadGroup>) -> Source {
        self.placed.as_ref().map_or(Source::Read(g), |p| Source::Placed(p.clone()))
    }

    fn live(&self, call: &str) -> PyResult<Arc<ovstage::ReadGroup>> {
        let g = self.group.read().map_err(|_| invalid_handle("poisoned"))?;
        g.clone().ok_or_else(|| invalid_handle(format!("ReadGroup.{call}: the group was released")))
    }

    /// Releases the group (`INVALID_HANDLE` when already released or after
    /// the Stage was destroyed).
    pub(crate) fn release_inner(&self) -> PyResult<()> {
        self.stage.get().stage("release_group")?;
        if self.released.swap(true, Ordering::AcqRel) {
            return Err(invalid_handle("release_group: the group was already released"));
        }
        let g = self.group.write().map(|mut g| g.take()).unwrap_or(None);
        drop(g);
        Ok(())
    }

    fn view<'py>(
        &self,
        py: Python<'py>,
        i: &Bound<'py, PyAny>,
        call: &str,
    ) -> PyResult<(Arc<ovstage::ReadGroup>, usize)> {
        let g = self.live(call)?;
        let i = check_index(i, self.tensor_count)?;
        let _ = py;
        Ok((g, i))
    }
}

#[pymethods]
impl ReadGroup {
    /// Token of the attribute.
    #[getter]
    fn attribute(&self) -> u64 {
        self.attribute
    }
    /// Informational ordinal of the group's data.
    #[getter]
    fn ordinal(&self) -> u64 {
        self.ordinal
    }
    /// Whether this is a tombstone group (deleted cells, no tensors).
    #[getter]
    fn is_delete(&self) -> bool {
        self.is_delete
    }
    /// Whether rows are arrays (one tensor per prim).
    #[getter]
    fn is_array(&self) -> bool {
        self.is_array
    }
    /// The recorded semantic (`AttributeSemantic`).
    #[getter]
    fn semantic<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let cls = py.import("ovstage._enums")?.getattr("AttributeSemantic")?;
        cls.call1((self.semantic,)).or_else(|_| Ok(self.semantic.into_pyobject(py)?.into_any()))
    }
    /// Whether the group was released.
    #[getter]
    fn released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }
    /// Handle of the path list the prims come from (borrowed; never release it).
    #[getter]
    fn prim_list(&self) -> u64 {
        self.prims.list.get()
    }
    /// First list position when there is no prim index map.
    #[getter]
    fn prim_offset(&self) -> u32 {
        self.prims.offset
    }
    /// Number of prims in the group.
    #[getter]
    fn prim_count(&self) -> u32 {
        self.prims.count
    }
    /// Whether prim positions come from an index map.
    #[getter]
    fn has_prim_index_map(&self) -> bool {
        self.prims.index_map.is_some()
    }
    /// Number of tensors (1 for fixed-size values, one per prim for arrays, 0 for tombstones).
    #[getter]
    fn tensor_count(&self) -> usize {
        self.tensor_count
    }
    /// Number of logical data elements (0 for tombstones).
    #[getter]
    fn data_count(&self) -> u32 {
        if self.is_delete { 0 } else { self.prims.count }
    }
    /// Whether tensor rows are addressed through an index map.
    #[getter]
    fn has_data_index_map(&self) -> bool {
        self.data_map.is_some()
    }
    /// Attribute metadata when the group was produced.
    #[getter]
    fn meta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        meta_obj(py, self.meta)
    }
    /// List position of the group's `local`-th prim.
    fn prim_index(&self, local: &Bound<'_, PyAny>) -> PyResult<u32> {
        self.live("prim_index")?;
        prim_index(&self.prims, local)
    }
    /// Tensor row holding the `local`-th element.
    fn data_row_index(&self, local: &Bound<'_, PyAny>) -> PyResult<u32> {
        self.live("data_row_index")?;
        let i = check_local(local, self.prims.count)?;
        Ok(self.data_map.as_ref().map_or(i as u32, |m| m[i]))
    }
    /// Zero-copy, read-only numpy view of tensor `index`.
    fn array<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let (g, i) = self.view(py, index, "array")?;
        if let Some(p) = &self.placed {
            return Err(PyNotImplementedError::new_err(format!(
                "array() needs a tensor in CPU memory, and this group was read onto {}; use dlpack()",
                p.device()
            )));
        }
        let data = g.data().ok_or_else(|| PyIndexError::new_err("a tombstone group has no tensors"))?;
        let t = data.tensor(i);
        if !t.device().is_host() {
            return Err(PyNotImplementedError::new_err("array() needs a tensor in CPU memory; use dlpack()"));
        }
        let (ptr, dtype) = (t.bytes().as_ptr().cast_mut(), t.dtype());
        let (shape, strides) = (t.shape().to_vec(), t.strides().to_vec());
        let owner = Bound::new(py, ReadOwner(g.clone()))?.into_any();
        numpy_view(py, ptr, dtype, &shape, &strides, false, owner)
    }
    /// The raw descriptor of tensor `index` (borrows the group's storage, which it keeps alive).
    fn tensor<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let (g, i) = self.view(py, index, "tensor")?;
        if let Some(p) = &self.placed {
            let t = &p.tensors()[i];
            let ndim = t.ndim as usize;
            // SAFETY: the descriptor's shape and strides have `ndim`
            // entries, owned by `p`.
            let (shape, strides) =
                unsafe { (std::slice::from_raw_parts(t.shape, ndim), std::slice::from_raw_parts(t.strides, ndim)) };
            let shape: Vec<u64> = shape.iter().map(|d| *d as u64).collect();
            let dtype =
                g.data().map(|d| d.dtype()).ok_or_else(|| PyIndexError::new_err("a tombstone group has no tensors"))?;
            let owner = Bound::new(py, PlacedOwner(p.clone()))?.into_any();
            return dltensor(py, t.data as usize, dtype, &shape, strides, p.device(), owner);
        }
        let data = g.data().ok_or_else(|| PyIndexError::new_err("a tombstone group has no tensors"))?;
        let t = data.tensor(i);
        let (ptr, dtype, dev) = (t.bytes().as_ptr() as usize, t.dtype(), t.device());
        let (shape, strides) = (t.shape().to_vec(), t.strides().to_vec());
        let owner = Bound::new(py, ReadOwner(g.clone()))?.into_any();
        dltensor(py, ptr, dtype, &shape, &strides, dev, owner)
    }
    /// A DLPack producer for tensor `index`; read data is always exported
    /// read-only (`readonly` is accepted and ignored).
    #[pyo3(signature = (index, *, readonly = true))]
    fn dlpack<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>, readonly: bool) -> PyResult<Bound<'py, PyAny>> {
        let _ = readonly;
        let t = self.tensor(py, index)?;
        let (g, i) = self.view(py, index, "dlpack")?;
        let ctx = Bound::new(py, GroupExport { source: self.source(g), index: i })?;
        MANAGED.import(py, "ovstage._dlpack", "ManagedDLTensor")?.call1((t, ctx, py.None(), true))
    }
    /// DLPack export of tensor 0 (versioned and read-only for DLPack 1.x consumers).
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = stream;
        let g = self.live("__dlpack__")?;
        if self.tensor_count == 0 {
            return Err(pyo3::exceptions::PyBufferError::new_err("a tombstone group has no tensor to export"));
        }
        GroupExport { source: self.source(g), index: 0 }.export(py, max_version, dl_device, copy)
    }
    /// `(device_type, device_id)` of the group's tensors.
    fn __dlpack_device__(&self) -> PyResult<(i32, i32)> {
        let g = self.live("__dlpack_device__")?;
        Ok(self.source(g).device())
    }
    /// Releases the group (`Stage.release_group(self)`).
    fn release(&self) -> PyResult<()> {
        self.release_inner()
    }
    /// Returns the group itself.
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    /// Releases the group unless already released; errors are swallowed
    /// while an exception propagates.
    #[pyo3(signature = (exc_type = None, exc = None, tb = None))]
    fn __exit__(
        &self,
        exc_type: Option<&Bound<'_, PyAny>>,
        exc: Option<&Bound<'_, PyAny>>,
        tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let _ = (exc, tb);
        if self.released.load(Ordering::Acquire) {
            return Ok(false);
        }
        let r = self.release_inner();
        match exc_type {
            Some(t) if !t.is_none() => Ok(false),
            _ => r.map(|()| false),
        }
    }
    fn __repr__(&self) -> String {
        format!(
            "ReadGroup(attribute={}, prim_count={}, tensor_count={}, is_delete={}, released={})",
            self.attribute,
            self.prims.count,
            self.tensor_count,
            self.is_delete,
            self.released.load(Ordering::Relaxed)
        )
    }
}

impl Drop for ReadGroup {
    fn drop(&mut self) {
        if !*self.released.get_mut() && self.stage.get().is_alive() {
            resource_warning(&format!("ReadGroup of attribute {} was not released", self.attribute));
        }
    }
}

// ---- Map groups

/// A map group's state shared by its Python object, its views and exports.
pub(crate) struct MapShared {
    group: Mutex<Option<ovstage::MapGroup>>,
    detached: Mutex<Option<DetachedBuffer>>,
    /// Each tensor's start address, shape and compact strides.
    tensors: Vec<(usize, Vec<u64>, Vec<i64>)>,
    dtype: DType,
    device: Device,
    /// A session mapped on a CUDA device: the copy of the buffer the
    /// tensors point into (views and exports keep it), copied back into the
    /// group's buffer before the commit.
    device_copy: Option<ovstage_backend_cuda::placement::DeviceCopy>,
}

/// A writable staging buffer of a map session; fill `array(i)` in place,
/// then commit with `Map.unmap_group(g)` or `Map.unmap()`.
#[pyclass(frozen, weakref, module = "ovstage")]
pub(crate) struct MapGroup {
    stage: Py<Stage>,
    map: Py<Map>,
    shared: Arc<MapShared>,
    prims: PrimGroup,
    meta: AttributeMeta,
}

fn strides_of(shape: &[u64]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1] as i64;
    }
    s
}

impl MapGroup {
    /// Wraps a fetched map group.
    pub(crate) fn new(stage: Py<Stage>, map: Py<Map>, g: ovstage::MapGroup) -> MapGroup {
        MapGroup::wrap(stage, map, g, None)
    }

    /// Wraps a fetched group of a session mapped on CUDA device `n`: its
    /// tensors are a copy of the buffer there, ready when this returns. A
    /// failure gives the group back.
    ///
    /// # Safety
    /// `stream` is 0, 1, 2 or a live `CUstream` of that device's primary
    /// context.
    pub(crate) unsafe fn on_device(
        stage: Py<Stage>,
        map: Py<Map>,
        mut g: ovstage::MapGroup,
        n: u32,
        stream: usize,
    ) -> Result<MapGroup, Box<(ovstage::Error, ovstage::MapGroup)>> {
        // SAFETY: forwarded.
        match unsafe { ovstage_dlpack::export::map_group_on_device(&mut g, n, stream) } {
            Ok(copy) => Ok(MapGroup::wrap(stage, map, g, Some(copy))),
            Err(e) => {
                let status =
                    if e.is_out_of_memory() { ovstage::Status::OutOfMemory } else { ovstage::Status::OpFailed };
                let message = format!(
                    "fetch_map_next: staging the map group on CUDA device {n} failed ({e}); the group stays mapped on \
                     the host, unchanged, and is committed with the session"
                );
                Err(Box::new((ovstage::Error::new(status, message), g)))
            }
        }
    }

    /// The group with its tensors over its buffer, or over `copy` (part `i`
    /// is tensor `i`) for a session on a device.
    fn wrap(
        stage: Py<Stage>,
        map: Py<Map>,
        mut g: ovstage::MapGroup,
        copy: Option<ovstage_backend_cuda::placement::DeviceCopy>,
    ) -> MapGroup {
        let tensors = (0..g.tensor_count())
            .map(|i| {
                let shape = g.shape(i).to_vec();
                let ptr = match &copy {
                    Some(c) => c.part(i) as usize,
                    None => g.tensor_bytes_mut(i).as_mut_ptr() as usize,
                };
                let strides = strides_of(&shape);
                (ptr, shape, strides)
            })
            .collect();
        MapGroup {
            stage,
            map,
            prims: g.prims().clone(),
            meta: g.meta(),
            shared: Arc::new(MapShared {
                dtype: g.dtype(),
                device: copy.as_ref().map_or_else(|| g.device(), |c| Device::Cuda(c.ordinal())),
                tensors,
                group: Mutex::new(Some(g)),
                detached: Mutex::new(None),
                device_copy: copy,
            }),
        }
    }

    /// The group for committing (`None` when already committed). When
    /// views or exports of its buffer are alive, the buffer is detached
    /// first: they keep the original, the copy is committed.
    pub(crate) fn take_for_commit(&self) -> Option<ovstage::MapGroup> {
        let mut slot = self.shared.group.lock().ok()?;
        let mut g = slot.take()?;
        // A device session's views point into the device copy, which they
        // keep: the buffer itself is not theirs.
        if self.shared.device_copy.is_none() && Arc::strong_count(&self.shared) > 1 {
            let d = g.detach_buffer();
            if let Ok(mut keep) = self.shared.detached.lock() {
                *keep = Some(d);
            }
        }
        Some(g)
    }

    /// For a session mapped on a device: copies the client's values back
    /// from the device copy into the buffer, after waiting on the host for
    /// `sync` (the commit's `cuda_stream`/`cuda_event`). Nothing for a host
    /// group; `Ok` also when the group was already committed (the commit
    /// reports that).
    pub(crate) fn bring_back(&self, sync: ovstage_backend_cuda::staging::CudaSync) -> Result<(), ovstage::Error> {
        let Some(copy) = &self.shared.device_copy else { return Ok(()) };
        let n = copy.ordinal();
        let failed = |what: &str, e: ovstage_backend_cuda::staging::StageError| {
            ovstage::Error::new(
                ovstage::Status::OpFailed,
                format!("unmap: {what} on CUDA device {n} failed: {e}; nothing was committed"),
            )
        };
        // SAFETY: the commit's stream and event are the caller's live
        // handles (the API's contract).
        unsafe {
            ovstage_backend_cuda::placement::wait_host(sync, ovstage_backend_cuda::placement::RecordOn::Device(n))
        }
        .map_err(|e| failed("waiting for the commit's cuda_stream/cuda_event", e))?;
        let mut slot = self.shared.group.lock().map_err(|_| ovstage::Error::internal("poisoned"))?;
        if let Some(g) = slot.as_mut() {
            ovstage_dlpack::export::download_map_group(copy, g)
                .map_err(|e| failed("copying the mapped values back", e))?;
        }
        Ok(())
    }

    /// The owning session.
    pub(crate) fn map(&self) -> &Py<Map> {
        &self.map
    }

    fn live(&self, call: &str) -> PyResult<Arc<MapShared>> {
        let slot = self.shared.group.lock().map_err(|_| invalid_handle("poisoned"))?;
        if slot.is_none() {
            return Err(invalid_handle(format!("MapGroup.{call}: the group was unmapped")));
        }
        if self.map.get().is_unmapped() {
            return Err(invalid_handle(format!("MapGroup.{call}: the map session was unmapped")));
        }
        Ok(self.shared.clone())
    }
}

#[pymethods]
impl MapGroup {
    /// Handle of the path list the prims come from (borrowed).
    #[getter]
    fn prim_list(&self) -> u64 {
        self.prims.list.get()
    }
    /// First list position when there is no prim index map.
    #[getter]
    fn prim_offset(&self) -> u32 {
        self.prims.offset
    }
    /// Number of prims in the group.
    #[getter]
    fn prim_count(&self) -> u32 {
        self.prims.count
    }
    /// Whether prim positions come from an index map.
    #[getter]
    fn has_prim_index_map(&self) -> bool {
        self.prims.index_map.is_some()
    }
    /// Number of tensors (1 for fixed-size sessions, one per prim for arrays).
    #[getter]
    fn tensor_count(&self) -> usize {
        self.shared.tensors.len()
    }
    /// Number of logical data elements.
    #[getter]
    fn data_count(&self) -> u32 {
        self.prims.count
    }
    /// Map groups have no data index map.
    #[getter]
    fn has_data_index_map(&self) -> bool {
        false
    }
    /// Attribute metadata when the session was set up.
    #[getter]
    fn meta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        meta_obj(py, self.meta)
    }
    /// List position of the group's `local`-th prim.
    fn prim_index(&self, local: &Bound<'_, PyAny>) -> PyResult<u32> {
        self.live("prim_index")?;
        prim_index(&self.prims, local)
    }
    /// Tensor row of the `local`-th element (`local` itself).
    fn data_row_index(&self, local: &Bound<'_, PyAny>) -> PyResult<u32> {
        self.live("data_row_index")?;
        Ok(check_local(local, self.prims.count)? as u32)
    }
    /// Zero-copy, writable numpy view of tensor `index`.
    fn array<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let shared = self.live("array")?;
        let i = check_index(index, shared.tensors.len())?;
        if !shared.device.is_host() {
            return Err(PyNotImplementedError::new_err("array() needs a tensor in CPU memory; use dlpack()"));
        }
        let (ptr, shape, strides) = &shared.tensors[i];
        let dtype = shared.dtype;
        let (ptr, shape, strides) = (*ptr as *mut u8, shape.clone(), strides.clone());
        let owner = Bound::new(py, MapOwner(shared))?.into_any();
        numpy_view(py, ptr, dtype, &shape, &strides, true, owner)
    }
    /// The raw descriptor of tensor `index`.
    fn tensor<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let shared = self.live("tensor")?;
        let i = check_index(index, shared.tensors.len())?;
        let (ptr, shape, strides) = shared.tensors[i].clone();
        let (dtype, dev) = (shared.dtype, shared.device);
        let owner = Bound::new(py, MapOwner(shared))?.into_any();
        dltensor(py, ptr, dtype, &shape, &strides, dev, owner)
    }
    /// A writable DLPack producer for tensor `index`.
    #[pyo3(signature = (index, *, readonly = false))]
    fn dlpack<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>, readonly: bool) -> PyResult<Bound<'py, PyAny>> {
        let t = self.tensor(py, index)?;
        let shared = self.live("dlpack")?;
        let i = check_index(index, shared.tensors.len())?;
        let ctx = Bound::new(py, GroupExport { source: Source::Map(shared, readonly), index: i })?;
        MANAGED.import(py, "ovstage._dlpack", "ManagedDLTensor")?.call1((t, ctx, py.None(), readonly))
    }
    /// DLPack export of tensor 0 (writable).
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = stream;
        let shared = self.live("__dlpack__")?;
        if shared.tensors.is_empty() {
            return Err(pyo3::exceptions::PyBufferError::new_err("the group has no tensor to export"));
        }
        GroupExport { source: Source::Map(shared, false), index: 0 }.export(py, max_version, dl_device, copy)
    }
    /// `(device_type, device_id)` of the group's tensors.
    fn __dlpack_device__(&self) -> (i32, i32) {
        Source::Map(self.shared.clone(), false).device()
    }
    fn __repr__(&self) -> String {
        format!("MapGroup(prim_count={}, tensor_count={})", self.prims.count, self.shared.tensors.len())
    }
}

impl MapGroup {
    /// The Stage the group belongs to.
    #[allow(dead_code)]
    pub(crate) fn stage(&self) -> &Py<Stage> {
        &self.stage
    }
}

// ---- DLPack exports

enum Source {
    Read(Arc<ovstage::ReadGroup>),
    /// A placed read's device copy.
    Placed(Arc<ReadTensors>),
    Map(Arc<MapShared>, bool),
}

impl Source {
    fn device(&self) -> (i32, i32) {
        let d = match self {
            Source::Read(g) => g.data().map_or(Device::Host, |d| d.device()),
            Source::Placed(p) => p.device(),
            Source::Map(m, _) => m.device,
        };
        let d = ovstage_dlpack::dl_device(d);
        (d.device_type.0, d.device_id)
    }
}

/// The DLPack producer behind `ManagedDLTensor` for group tensors: each
/// capsule it hands out owns the group's memory.
#[pyclass(frozen, module = "ovstage._native")]
pub(crate) struct GroupExport {
    source: Source,
    index: usize,
}

impl GroupExport {
    fn export(
        &self,
        py: Python<'_>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let versioned = capsule::request(max_version, dl_device, copy, self.source.device())?;
        let err = |e: ovstage::Error| crate::errors::to_py(&e);
        match &self.source {
            Source::Read(g) => {
                if versioned {
                    capsule::versioned(py, ovstage_dlpack::export::read_group_versioned(g, self.index).map_err(err)?)
                } else {
                    capsule::legacy(py, ovstage_dlpack::export::read_group_legacy(g, self.index).map_err(err)?)
                }
            }
            Source::Placed(p) => {
                let view = &p.tensors()[self.index];
                if versioned {
                    // SAFETY: `view` is tensor `index` of the device copy
                    // `p` owns; the export holds `p`, so it stays valid.
                    let t = unsafe { ovstage_dlpack::export::versioned_from_view(view, Flags::READ_ONLY, p.clone()) };
                    capsule::versioned(py, t)
                } else {
                    // SAFETY: as above.
                    let t = unsafe { ovstage_dlpack::export::legacy_from_view(view, p.clone()) };
                    capsule::legacy(py, t)
                }
            }
            Source::Map(m, readonly) => {
                let (ptr, shape, strides) = &m.tensors[self.index];
                let mut shape: Vec<i64> = shape.iter().map(|d| *d as i64).collect();
                let mut strides = strides.clone();
                let dt = m.dtype;
                let view = DLTensor {
                    data: *ptr as *mut c_void,
                    device: ovstage_dlpack::dl_device(m.device),
                    ndim: shape.len() as i32,
                    dtype: DLDataType { code: dt.code as u8, bits: dt.bits, lanes: 1 },
                    shape: shape.as_mut_ptr(),
                    strides: strides.as_mut_ptr(),
                    byte_offset: 0,
                };
                let flags = if *readonly { Flags::READ_ONLY } else { Flags::empty() };
                if versioned {
                    // SAFETY: `view` describes tensor `index` of the buffer
                    // `m` owns (its shape and strides are copied); the
                    // export holds `m`, so the memory stays valid.
                    let t = unsafe { ovstage_dlpack::export::versioned_from_view(&view, flags, m.clone()) };
                    capsule::versioned(py, t)
                } else {
                    // SAFETY: as above.
                    let t = unsafe { ovstage_dlpack::export::legacy_from_view(&view, m.clone()) };
                    capsule::legacy(py, t)
                }
            }
        }
    }
}

#[pymethods]
impl GroupExport {
    /// A DLPack capsule of the tensor.
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = stream;
        self.export(py, max_version, dl_device, copy)
    }
    /// `(device_type, device_id)`.
    fn __dlpack_device__(&self) -> (i32, i32) {
        self.source.device()
    }
}
