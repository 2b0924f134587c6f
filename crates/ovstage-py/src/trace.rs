//! The op timeline from Python (an extension of ours): thin wrappers of
//! `ovstage::trace`, re-exported as `ovstage.start_trace` / `stop_trace`.

use std::path::PathBuf;

use pyo3::prelude::*;

use crate::errors::to_py;

/// Starts recording every op of the process into a Chrome trace at `path`.
#[pyfunction]
pub(crate) fn _trace_start(path: PathBuf) -> PyResult<()> {
    ovstage::trace::start(&path).map_err(|e| to_py(&e))
}

/// Stops recording and writes the trace; its path, or `None` when no
/// trace was being recorded.
#[pyfunction]
pub(crate) fn _trace_stop(py: Python<'_>) -> PyResult<Option<String>> {
    py.detach(ovstage::trace::stop).map(|p| p.map(|p| p.display().to_string())).map_err(|e| to_py(&e))
}
