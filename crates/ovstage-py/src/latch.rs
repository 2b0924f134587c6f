//! Test hook: a write payload whose bytes, read from any thread but the
//! one that built it, are withheld until the latch is opened, so tests can
//! observe a pending op (`TIMEOUT`, "stays waitable").

use std::sync::{Arc, Condvar, Mutex};
use std::thread::ThreadId;

use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use ovstage::{HostBytes, Tensor};
use pyo3::prelude::*;

use crate::errors::IntoPy;

struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

struct Held {
    gate: Arc<Gate>,
    maker: ThreadId,
    bytes: Vec<u8>,
}

impl HostBytes for Held {
    fn host_bytes(&self) -> &[u8] {
        if std::thread::current().id() != self.maker {
            let mut open = self.gate.open.lock().unwrap_or_else(|e| e.into_inner());
            while !*open {
                open = self.gate.cv.wait(open).unwrap_or_else(|e| e.into_inner());
            }
        }
        &self.bytes
    }

    /// Withheld until the latch opens: the write must run on a lane, not
    /// on the thread that enqueues it (see `ovstage`'s small writes).
    fn arriving(&self) -> bool {
        true
    }
}

/// Opens a pending test write.
#[pyclass(frozen, module = "ovstage._native")]
pub(crate) struct Latch {
    gate: Arc<Gate>,
}

impl Latch {
    /// A latch and a float/int payload copied from `array` that waits on it.
    pub(crate) fn tensor(py: Python<'_>, array: &Bound<'_, PyAny>) -> PyResult<(Latch, Tensor)> {
        let arr = py.import("numpy")?.getattr("ascontiguousarray")?.call1((array,))?;
        let arr = arr.cast::<PyUntypedArray>()?;
        let dtype = crate::payload::numpy_dtype(arr.dtype().kind(), arr.dtype().itemsize())?;
        let bytes: Vec<u8> = arr.call_method0("tobytes")?.extract()?;
        let shape: Vec<u64> = arr.shape().iter().map(|d| *d as u64).collect();
        let gate = Arc::new(Gate { open: Mutex::new(false), cv: Condvar::new() });
        let held = Held { gate: gate.clone(), maker: std::thread::current().id(), bytes };
        Ok((Latch { gate }, Tensor::new(held, dtype, &shape).py()?))
    }
}

use numpy::PyArrayDescrMethods;

#[pymethods]
impl Latch {
    /// Lets the held write run.
    fn open(&self) {
        *self.gate.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.gate.cv.notify_all();
    }
}

impl Drop for Latch {
    fn drop(&mut self) {
        *self.gate.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.gate.cv.notify_all();
    }
}
