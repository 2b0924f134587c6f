//! `ResourceWarning` from finalizers (printed to stderr when warnings are
//! escalated to errors, never raised from a destructor).

use pyo3::exceptions::PyResourceWarning;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// Issues a `ResourceWarning` with `message`.
pub(crate) fn resource_warning(message: &str) {
    Python::attach(|py| {
        let Ok(text) = std::ffi::CString::new(message) else { return };
        let cat = py.get_type::<PyResourceWarning>();
        let cat: &Bound<'_, PyType> = &cat;
        if PyErr::warn(py, cat.as_any(), &text, 1).is_err() {
            // Warnings are escalated: report on stderr instead of raising
            // from a finalizer.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("ResourceWarning: {message}");
            }
        }
    });
}
