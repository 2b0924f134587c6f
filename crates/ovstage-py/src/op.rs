//! `Operation` and `CloneOperation`: the result of every enqueue.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use ovstage::{OpId, Status, WaitError};
use pyo3::prelude::*;
use pyo3::types::PyAny;

use crate::args;
use crate::errors::{invalid_handle, ovstage_error, to_py};
use crate::stage::Stage;

/// The result of an enqueue: the enqueue status and the op id. `wait()`
/// waits for the op, consumes it and returns the operation.
#[pyclass(subclass, frozen, weakref, module = "ovstage")]
pub(crate) struct Operation {
    stage: Option<Py<Stage>>,
    /// The enqueue status (0 when accepted).
    status: u32,
    /// The op id (0 when rejected).
    op_id: u64,
    message: String,
    consumed: AtomicBool,
    keepalive: Mutex<Option<Py<PyAny>>>,
}

impl Operation {
    /// An accepted op.
    pub(crate) fn accepted(stage: &Py<Stage>, op: OpId, py: Python<'_>) -> Operation {
        Operation::raw(Some(stage.clone_ref(py)), 0, op.get(), String::new(), None)
    }

    /// A rejected enqueue.
    pub(crate) fn rejected(stage: &Py<Stage>, e: &ovstage::Error, py: Python<'_>) -> Operation {
        // (Ordinal conflicts are not enqueue errors: the core fails the op
        // when it runs, OP_FAILED at wait, as the published package does.)
        Operation::raw(Some(stage.clone_ref(py)), e.status() as u32, 0, e.message().to_owned(), None)
    }

    /// From an enqueue's result.
    pub(crate) fn from_result(stage: &Py<Stage>, r: ovstage::Result<OpId>, py: Python<'_>) -> Operation {
        match r {
            Ok(op) => Operation::accepted(stage, op, py),
            Err(e) => Operation::rejected(stage, &e, py),
        }
    }

    /// The Python object, left out of the cycle collector's lists. PyO3
    /// makes every class a GC type, but an `Operation` reports no
    /// references (it has no `__traverse__`), so tracking it could never
    /// break a cycle; it only made every young-generation collection visit
    /// the operations a loop holds. Only this exact
    /// class is untracked: a Python subclass's instances keep their
    /// `__dict__` visible to the collector.
    pub(crate) fn into_object(self, py: Python<'_>) -> PyResult<Bound<'_, Operation>> {
        let object = Bound::new(py, self)?;
        // SAFETY: a live object of a GC type (PyO3 gives every class
        // `Py_TPFLAGS_HAVE_GC`), just created, with the GIL held; its
        // deallocation untracks again, which is allowed for an untracked
        // object.
        unsafe { pyo3::ffi::PyObject_GC_UnTrack(object.as_ptr().cast()) };
        Ok(object)
    }

    fn raw(stage: Option<Py<Stage>>, status: u32, op_id: u64, message: String, keep: Option<Py<PyAny>>) -> Operation {
        Operation { stage, status, op_id, message, consumed: AtomicBool::new(false), keepalive: Mutex::new(keep) }
    }

    /// The op id, when accepted.
    pub(crate) fn op(&self) -> Option<OpId> {
        if self.status == 0 { OpId::from_raw(self.op_id) } else { None }
    }

    /// The enqueue rejection's status and message, when rejected.
    pub(crate) fn rejection(&self) -> Option<(u32, String)> {
        (self.status != 0).then(|| (self.status, self.message.clone()))
    }

    /// Waits as `wait()` does, without returning the object.
    pub(crate) fn wait_inner(&self, py: Python<'_>, timeout: ovstage::Timeout) -> PyResult<()> {
        if self.status != 0 {
            return Err(ovstage_error(self.status, self.message.clone()));
        }
        if self.consumed.load(Ordering::Acquire) {
            return Err(invalid_handle(format!("op {} was already waited (consumed)", self.op_id)));
        }
        let op = OpId::from_raw(self.op_id).ok_or_else(|| invalid_handle("the operation has no op id"))?;
        let stage = match &self.stage {
            Some(s) => s.get().stage("Operation.wait")?,
            None => return Err(invalid_handle("the operation belongs to no Stage")),
        };
        let outcome = py.detach(|| stage.wait(op, timeout));
        match outcome {
            Err(WaitError::Timeout { lowest_pending }) => Err(ovstage_error(
                Status::Timeout as u32,
                format!("op {op} is still pending (lowest pending op in its chain: {lowest_pending})"),
            )),
            Err(WaitError::Failed { ops }) => {
                let msg =
                    stage.op_error(ops[0]).map(|e| e.message().to_owned()).unwrap_or_else(|| format!("op {op} failed"));
                if !self.consumed.swap(true, Ordering::AcqRel) {
                    let _ = stage.release_op(op);
                    self.drop_keepalive(py);
                }
                Err(ovstage_error(Status::OpFailed as u32, msg))
            }
            Err(WaitError::Unknown(e)) => Err(if self.consumed.load(Ordering::Acquire) {
                invalid_handle(e.message().to_owned())
            } else {
                to_py(&e)
            }),
            Ok(()) => {
                if self.consumed.swap(true, Ordering::AcqRel) {
                    return Err(invalid_handle(format!("op {op} was already waited (consumed)")));
                }
                let _ = stage.release_op(op);
                self.drop_keepalive(py);
                Ok(())
            }
        }
    }

    fn drop_keepalive(&self, _py: Python<'_>) {
        let k = self.keepalive.lock().map(|mut k| k.take()).unwrap_or(None);
        drop(k);
    }
}

#[pymethods]
impl Operation {
    /// `Operation(stage, status, op_id, keepalive=None)`: rarely built by hand.
    #[new]
    #[pyo3(signature = (stage, status, op_id, keepalive = None))]
    fn py_new(
        stage: &Bound<'_, PyAny>,
        status: &Bound<'_, PyAny>,
        op_id: &Bound<'_, PyAny>,
        keepalive: Option<Py<PyAny>>,
    ) -> PyResult<Operation> {
        let status = args::u32_arg(status, "status")?;
        let op_id = args::u64_arg(op_id, "op_id")?;
        let stage = stage.cast::<Stage>().ok().map(|s| s.clone().unbind());
        Ok(Operation::raw(stage, status, op_id, String::new(), keepalive))
    }

    /// The enqueue status: 0 when accepted, else the rejection's `ErrorCode`.
    #[getter(status)]
    fn get_status(&self) -> u32 {
        self.status
    }

    /// The op id (0 when the enqueue was rejected).
    #[getter(op_id)]
    fn get_op_id(&self) -> u64 {
        self.op_id
    }

    /// Whether the enqueue was accepted (`status == 0`).
    #[getter]
    fn ok(&self) -> bool {
        self.status == 0
    }

    /// The rejection's message, or the op's failure text while it is
    /// tracked; `""` when there is none.
    fn error_message(&self) -> String {
        if self.status != 0 {
            return self.message.clone();
        }
        if self.consumed.load(Ordering::Acquire) {
            return String::new();
        }
        let (Some(stage), Some(op)) = (&self.stage, OpId::from_raw(self.op_id)) else { return String::new() };
        match stage.get().stage("error_message") {
            Ok(s) => s.op_error(op).map(|e| e.message().to_owned()).unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// Waits up to `timeout` ns for the op, consumes it and returns the
    /// operation. Raises `OvstageError` (TIMEOUT leaves it waitable).
    #[pyo3(signature = (timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, timeout=ovstage.TIMEOUT_INFINITE)")]
    fn wait<'py>(slf: &Bound<'py, Self>, timeout: args::TimeoutArg) -> PyResult<Bound<'py, Self>> {
        let t = timeout.0;
        slf.get().wait_inner(slf.py(), t)?;
        Ok(slf.clone())
    }

    fn __repr__(&self) -> String {
        format!("Operation(status={}, op_id={})", self.status, self.op_id)
    }
}

impl Drop for Operation {
    fn drop(&mut self) {
        if self.status != 0 || self.op_id == 0 || *self.consumed.get_mut() {
            return;
        }
        if let (Some(stage), Some(op)) = (&self.stage, OpId::from_raw(self.op_id)) {
            stage.get().orphan(op);
        }
    }
}
