//! Turning ovstage errors into the package's Python exceptions
//! (`ovstage._errors.OvstageError` and `OvxError`).

use ovstage::{Error, Status};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static OVSTAGE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static OVX_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn class<'py>(py: Python<'py>, cell: &'static PyOnceLock<Py<PyType>>, name: &str) -> PyResult<&'py Bound<'py, PyType>> {
    cell.import(py, "ovstage._errors", name)
}

/// `OvstageError(code, message)`.
pub(crate) fn ovstage_error(code: u32, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| match class(py, &OVSTAGE_ERROR, "OvstageError") {
        Ok(cls) => match cls.call1((code, message)) {
            Ok(e) => PyErr::from_value(e),
            Err(e) => e,
        },
        Err(e) => e,
    })
}

/// `OvxError(1, message)`.
pub(crate) fn ovx_error(message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| match class(py, &OVX_ERROR, "OvxError") {
        Ok(cls) => match cls.call1((1u32, message)) {
            Ok(e) => PyErr::from_value(e),
            Err(e) => e,
        },
        Err(e) => e,
    })
}

/// An ovstage error as `OvstageError`.
pub(crate) fn to_py(e: &Error) -> PyErr {
    ovstage_error(e.status() as u32, e.message())
}

/// `INVALID_HANDLE` with `message`.
pub(crate) fn invalid_handle(message: impl Into<String>) -> PyErr {
    ovstage_error(Status::InvalidHandle as u32, message)
}

/// Results of ovstage calls as Python results.
pub(crate) trait IntoPy<T> {
    /// `Err` becomes `OvstageError`.
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for ovstage::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(|e| to_py(&e))
    }
}
