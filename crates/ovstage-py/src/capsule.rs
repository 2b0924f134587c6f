//! DLPack capsules: taking over a producer's managed tensor (`__dlpack__`
//! of any object) and handing out ours (versioned with the read-only flag
//! when asked for DLPack 1.x, legacy otherwise).

use std::ffi::{CStr, c_void};
use std::sync::Arc;

use ovstage_abi::dlpack::{DLManagedTensor, DLManagedTensorVersioned};
use ovstage_dlpack::{ExportedLegacy, ExportedVersioned, Managed};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

const VERSIONED: &CStr = c"dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";

/// Takes over the managed tensor of `obj.__dlpack__()` (asking for DLPack
/// 1.x, falling back to the legacy form for older producers).
pub(crate) fn ingest(obj: &Bound<'_, PyAny>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<Managed>> {
    let py = obj.py();
    if !obj.hasattr("__dlpack__")? {
        return Err(PyTypeError::new_err("object has no __dlpack__"));
    }
    let kw = PyDict::new(py);
    kw.set_item("max_version", (1, 3))?;
    if let Some(s) = stream {
        kw.set_item("stream", s)?;
    }
    let cap = match obj.call_method("__dlpack__", (), Some(&kw)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<PyTypeError>(py) => match stream {
            Some(s) => obj.call_method1("__dlpack__", (s,))?,
            None => obj.call_method0("__dlpack__")?,
        },
        Err(e) => return Err(e),
    };
    // SAFETY: `cap` is a live object; the capsule API checks its type and
    // name, and a capsule we take over is renamed so its destructor leaves
    // the managed tensor to us (the DLPack protocol's hand-over).
    unsafe {
        let p = cap.as_ptr();
        if ffi::PyCapsule_IsValid(p, VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(p, VERSIONED.as_ptr()).cast::<DLManagedTensorVersioned>();
            if ffi::PyCapsule_SetName(p, USED_VERSIONED.as_ptr()) != 0 {
                return Err(PyErr::fetch(py));
            }
            let managed = Managed::from_versioned(m).ok_or_else(|| PyValueError::new_err("NULL managed tensor"))?;
            return Ok(Arc::new(managed));
        }
        if ffi::PyCapsule_IsValid(p, LEGACY.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(p, LEGACY.as_ptr()).cast::<DLManagedTensor>();
            if ffi::PyCapsule_SetName(p, USED_LEGACY.as_ptr()) != 0 {
                return Err(PyErr::fetch(py));
            }
            let managed = Managed::from_legacy(m).ok_or_else(|| PyValueError::new_err("NULL managed tensor"))?;
            return Ok(Arc::new(managed));
        }
    }
    Err(PyTypeError::new_err("__dlpack__ did not return a DLPack capsule"))
}

unsafe extern "C" fn versioned_destructor(cap: *mut ffi::PyObject) {
    // SAFETY: called by Python with our capsule; an unconsumed one (still
    // named `dltensor_versioned`) owns its managed tensor, whose deleter
    // we run exactly once. A consumed one belongs to the consumer.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, VERSIONED.as_ptr()).cast::<DLManagedTensorVersioned>();
            if let Some(d) = m.as_ref().and_then(|m| m.deleter) {
                d(m);
            }
        }
    }
}

unsafe extern "C" fn legacy_destructor(cap: *mut ffi::PyObject) {
    // SAFETY: as for `versioned_destructor`, for the legacy form.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, LEGACY.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, LEGACY.as_ptr()).cast::<DLManagedTensor>();
            if let Some(d) = m.as_ref().and_then(|m| m.deleter) {
                d(m);
            }
        }
    }
}

/// A `dltensor_versioned` capsule owning `t`.
pub(crate) fn versioned(py: Python<'_>, t: ExportedVersioned) -> PyResult<Py<PyAny>> {
    let raw = t.into_raw();
    // SAFETY: `raw` is a valid managed tensor we own; the capsule takes
    // ownership (its destructor frees it unless a consumer took it over).
    let cap = unsafe { ffi::PyCapsule_New(raw.cast::<c_void>(), VERSIONED.as_ptr(), Some(versioned_destructor)) };
    if cap.is_null() {
        // SAFETY: the capsule was not created: we still own `raw`.
        unsafe {
            if let Some(d) = (*raw).deleter {
                d(raw);
            }
        }
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `cap` is a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, cap) }.unbind())
}

/// A `dltensor` (legacy) capsule owning `t`.
pub(crate) fn legacy(py: Python<'_>, t: ExportedLegacy) -> PyResult<Py<PyAny>> {
    let raw = t.into_raw();
    // SAFETY: as for `versioned`.
    let cap = unsafe { ffi::PyCapsule_New(raw.cast::<c_void>(), LEGACY.as_ptr(), Some(legacy_destructor)) };
    if cap.is_null() {
        // SAFETY: as for `versioned`.
        unsafe {
            if let Some(d) = (*raw).deleter {
                d(raw);
            }
        }
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `cap` is a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, cap) }.unbind())
}

/// The checks of `__dlpack__(stream, max_version, dl_device, copy)`: whether
/// the consumer takes a versioned capsule. `BufferError` for `copy=True`
/// or another device; `TypeError` for a malformed `dl_device`.
pub(crate) fn request(
    max_version: Option<&Bound<'_, PyAny>>,
    dl_device: Option<&Bound<'_, PyAny>>,
    copy: Option<&Bound<'_, PyAny>>,
    device: (i32, i32),
) -> PyResult<bool> {
    if let Some(c) = copy
        && !c.is_none()
        && c.is_truthy()?
    {
        {
            return Err(PyBufferError::new_err("copy=True is not supported: ovstage exports are zero-copy"));
        }
    }
    if let Some(d) = dl_device
        && !d.is_none()
    {
        {
            let t = d
                .cast::<PyTuple>()
                .map_err(|_| PyTypeError::new_err("dl_device must be a (device_type, device_id) tuple"))?;
            let pair: (i32, i32) =
                t.extract().map_err(|_| PyTypeError::new_err("dl_device must be a tuple of two ints"))?;
            if pair != device {
                return Err(PyBufferError::new_err(format!(
                    "cannot export to device {pair:?}: the tensor is on {device:?}"
                )));
            }
        }
    }
    Ok(match max_version {
        Some(v) if !v.is_none() => v.extract::<(u32, u32)>().map(|(major, _)| major >= 1).unwrap_or(false),
        _ => false,
    })
}
