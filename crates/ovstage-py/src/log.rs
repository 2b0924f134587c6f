//! The Python side of the process-wide log stream (`ovstage`'s dispatcher,
//! shared with the C ABI): a Python callable as the callback. Deliveries
//! run on the dispatcher thread, which takes the GIL for each call; the
//! calls that wait for the dispatcher release the GIL, which the callback
//! needs.

use ovstage::{LogCallback, LogSeverity, Timeout};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::errors::to_py;

static SEVERITY: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Calls `callback(LogSeverity(severity), timestamp, message)`; an
/// exception is printed to `sys.stderr` with its traceback and suppressed
/// (nobody on this thread could handle it).
fn deliver(py: Python<'_>, callback: &Py<PyAny>, severity: LogSeverity, timestamp: f64, message: &str) {
    let r = SEVERITY
        .import(py, "ovstage._enums", "LogSeverity")
        .and_then(|cls| cls.call1((severity as i32,)))
        .and_then(|sev| callback.call1(py, (sev, timestamp, message)));
    if let Err(e) = r {
        // `display`, not `print`: a SystemExit raised by the callback must
        // not end the process from the dispatcher thread.
        e.display(py);
    }
}

/// Installs `callback` (a callable, or `None` to flush and disable) with
/// the threshold `severity` and `channel_filter`; validation of the Python
/// arguments is `ovstage._logging`'s.
#[pyfunction]
pub(crate) fn _set_log_callback(
    py: Python<'_>,
    callback: Option<Py<PyAny>>,
    severity: i32,
    channel_filter: String,
) -> PyResult<()> {
    let callback = callback.map(|cb| {
        Box::new(move |sev: LogSeverity, ts: f64, text: &str| Python::attach(|py| deliver(py, &cb, sev, ts, text)))
            as LogCallback
    });
    // Removing or replacing a callback may wait for a delivery in progress,
    // which needs the GIL.
    py.detach(|| ovstage::set_log_callback(callback, severity, &channel_filter)).map_err(|e| to_py(&e))
}

/// Waits up to `timeout` ns until messages emitted before the call were
/// delivered; `False` when the time ran out.
#[pyfunction]
pub(crate) fn _flush_log(py: Python<'_>, timeout: u64) -> bool {
    py.detach(|| ovstage::flush_log(Timeout::from_nanos(timeout)))
}

/// Emits a message into the log stream (tests use it to produce traffic
/// on a channel of their choosing).
#[pyfunction]
pub(crate) fn _log_message(severity: i32, channel: &str, message: &str) -> PyResult<()> {
    let severity = match severity {
        -2 => LogSeverity::Verbose,
        -1 => LogSeverity::Info,
        0 => LogSeverity::Warning,
        1 => LogSeverity::Error,
        other => return Err(pyo3::exceptions::PyValueError::new_err(format!("{other} is not a message severity"))),
    };
    ovstage::log_message(severity, channel, message);
    Ok(())
}
