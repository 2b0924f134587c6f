//! `ovstage._native`: the native core of the `ovstage` Python package, a
//! PyO3 (abi3, CPython 3.10+) binding of the `ovstage` Rust API. The pure
//! Python layer (`python/ovstage`) re-exports it with the enums, value
//! classes, DLPack helpers and submodules of the published API.
//!
//! `unsafe` is confined to numpy views (`groups`), buffer ownership of
//! write payloads (`payload`), DLPack capsules (`capsule`) and reads of
//! numpy values (`batch`); each block says why it is sound.

mod args;
mod batch;
mod capsule;
mod errors;
mod groups;
mod handles;
mod latch;
mod log;
mod op;
mod payload;
mod stage;
mod trace;
mod values;
mod warn;

/// The extension's Rust allocations use mimalloc (as polars' Python package
/// does): ops allocate on the caller's thread and free on a lane, which
/// glibc's malloc serialises on its arena locks, and mimalloc's paths are
/// shorter (callgrind: 8% fewer instructions per `write_attribute` call).
/// Built without transparent huge pages, so a write to fresh memory never
/// clears a 2 MiB page. The C library keeps the system allocator: on the
/// published benchmark suite mimalloc made no measurable difference there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use pyo3::prelude::*;

/// Ingests any `__dlpack__` producer; returns `(owner, data, shape, strides,
/// (code, bits, lanes), (device_type, device_id), byte_offset)` where
/// `owner` keeps the managed tensor alive.
#[pyfunction]
#[pyo3(signature = (obj, stream = None))]
#[allow(clippy::type_complexity)]
fn _dlpack_ingest(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Py<ManagedOwner>, u64, Vec<i64>, Option<Vec<i64>>, (u8, u8, u16), (i32, i32), u64)> {
    let m = capsule::ingest(obj, stream.filter(|s| !s.is_none()))?;
    let t = m.tensor();
    let ndim = usize::try_from(t.ndim).unwrap_or(0);
    // SAFETY: a valid managed tensor has `ndim` shape entries and, when
    // non-NULL, `ndim` strides; `m` keeps them alive during the reads.
    let (shape, strides) = unsafe {
        let shape = if ndim == 0 { vec![] } else { std::slice::from_raw_parts(t.shape, ndim).to_vec() };
        let strides = if t.strides.is_null() || ndim == 0 {
            None
        } else {
            Some(std::slice::from_raw_parts(t.strides, ndim).to_vec())
        };
        (shape, strides)
    };
    let out = (
        t.data as u64,
        shape,
        strides,
        (t.dtype.code, t.dtype.bits, t.dtype.lanes),
        (t.device.device_type.0, t.device.device_id),
        t.byte_offset,
    );
    Ok((Py::new(py, ManagedOwner(m))?, out.0, out.1, out.2, out.3, out.4, out.5))
}

/// Keeps an ingested managed tensor alive (its deleter runs when this is
/// dropped).
#[pyclass(frozen, module = "ovstage._native")]
struct ManagedOwner(#[allow(dead_code)] std::sync::Arc<ovstage_dlpack::Managed>);

/// Exports memory described by a `DLTensor` record as a capsule kept alive
/// by `owner` (for `ManagedDLTensor` over caller tensors).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _export_view(
    py: Python<'_>,
    data: u64,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    dtype: (u8, u8, u16),
    device: (i32, i32),
    owner: Py<PyAny>,
    readonly: bool,
    versioned: bool,
) -> PyResult<Py<PyAny>> {
    use ovstage_abi::dlpack::{DLDataType, DLDevice, DLDeviceType, DLTensor};
    let mut shape = shape;
    let mut strides = strides;
    let view = DLTensor {
        data: data as usize as *mut std::ffi::c_void,
        device: DLDevice { device_type: DLDeviceType(device.0), device_id: device.1 },
        ndim: shape.len() as i32,
        dtype: DLDataType { code: dtype.0, bits: dtype.1, lanes: dtype.2 },
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut().map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: 0,
    };
    let flags = if readonly { ovstage_dlpack::Flags::READ_ONLY } else { ovstage_dlpack::Flags::empty() };
    if versioned {
        // SAFETY: the record's memory belongs to `owner` (a numpy array, a
        // managed tensor or a group), which the export keeps alive; shape
        // and strides are copied.
        let t = unsafe { ovstage_dlpack::export::versioned_from_view(&view, flags, owner) };
        capsule::versioned(py, t)
    } else {
        // SAFETY: as above.
        let t = unsafe { ovstage_dlpack::export::legacy_from_view(&view, owner) };
        capsule::legacy(py, t)
    }
}

/// The `ovstage._native` module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<stage::Stage>()?;
    m.add_class::<op::Operation>()?;
    m.add_class::<handles::Query>()?;
    m.add_class::<handles::Read>()?;
    m.add_class::<handles::Map>()?;
    m.add_class::<handles::OrdinalQuery>()?;
    m.add_class::<handles::Hierarchy>()?;
    m.add_class::<groups::ReadGroup>()?;
    m.add_class::<groups::MapGroup>()?;
    m.add_class::<values::OrdinalRange>()?;
    m.add_class::<values::WriteDesc>()?;
    m.add_class::<batch::WriteBatch>()?;
    m.add_function(wrap_pyfunction!(_dlpack_ingest, m)?)?;
    m.add_function(wrap_pyfunction!(_export_view, m)?)?;
    m.add_function(wrap_pyfunction!(log::_set_log_callback, m)?)?;
    m.add_function(wrap_pyfunction!(log::_flush_log, m)?)?;
    m.add_function(wrap_pyfunction!(log::_log_message, m)?)?;
    m.add_function(wrap_pyfunction!(trace::_trace_start, m)?)?;
    m.add_function(wrap_pyfunction!(trace::_trace_stop, m)?)?;
    Ok(())
}
