//! Handle objects: `Query`, `Read`, `Map`, `OrdinalQuery`, `Hierarchy`.
//! Each holds its runtime handle and reserving `Operation`; `wait()`
//! returns the object itself; `release()` (`unmap()` for `Map`) marks it
//! released at once (atomically: of two concurrent releases one fails).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::prelude::*;
use pyo3::types::PyAny;

use crate::args;
use crate::errors::invalid_handle;
use crate::groups::MapGroup;
use crate::op::Operation;
use crate::stage::Stage;
use crate::warn::resource_warning;

/// What every handle object holds.
pub(crate) struct Core {
    pub(crate) stage: Py<Stage>,
    pub(crate) handle: u64,
    pub(crate) op: Option<Py<Operation>>,
    pub(crate) released: AtomicBool,
    /// Objects kept alive with the handle (a path-list query's `PathList`).
    pub(crate) _keep: Option<Py<PyAny>>,
}

impl Core {
    pub(crate) fn new(stage: Py<Stage>, handle: u64, op: Option<Py<Operation>>, keep: Option<Py<PyAny>>) -> Core {
        Core { stage, handle, op, released: AtomicBool::new(false), _keep: keep }
    }

    /// The handle for a call, `INVALID_HANDLE` once released.
    pub(crate) fn live(&self, what: &str) -> PyResult<u64> {
        if self.released.load(Ordering::Acquire) {
            return Err(invalid_handle(format!("{what} {} was released", self.handle)));
        }
        Ok(self.handle)
    }

    /// Marks released; `INVALID_HANDLE` if it already was.
    pub(crate) fn mark_released(&self, what: &str) -> PyResult<u64> {
        if self.released.swap(true, Ordering::AcqRel) {
            return Err(invalid_handle(format!("{what} {} was already released", self.handle)));
        }
        Ok(self.handle)
    }

    /// Undoes `mark_released` (the runtime refused the release).
    pub(crate) fn unmark(&self) {
        self.released.store(false, Ordering::Release);
    }

    fn wait(&self, py: Python<'_>, timeout: args::TimeoutArg) -> PyResult<()> {
        let t = timeout.0;
        match &self.op {
            Some(op) => op.get().wait_inner(py, t),
            None => Ok(()),
        }
    }

    fn needs_finalizing(&mut self) -> bool {
        !*self.released.get_mut() && self.handle != 0 && self.stage.get().is_alive()
    }
}

fn exit_with(exc_type: Option<&Bound<'_, PyAny>>, r: PyResult<()>) -> PyResult<bool> {
    match exc_type {
        Some(t) if !t.is_none() => Ok(false),
        _ => r.map(|()| false),
    }
}

macro_rules! handle_class {
    ($name:ident, $what:literal, $release:ident) => {
        #[pymethods]
        impl $name {
            /// The runtime handle (0 when the reserving enqueue was rejected).
            #[getter]
            fn handle(&self) -> u64 {
                self.core.handle
            }
            /// The reserving operation (`None` for a path-list query).
            #[getter]
            fn op(&self, py: Python<'_>) -> Option<Py<Operation>> {
                self.core.op.as_ref().map(|o| o.clone_ref(py))
            }
            /// Waits for the reserving op and returns this object.
            #[pyo3(signature = (timeout = args::TimeoutArg::INFINITE))]
            #[pyo3(text_signature = "($self, timeout=ovstage.TIMEOUT_INFINITE)")]
            fn wait<'py>(slf: &Bound<'py, Self>, timeout: args::TimeoutArg) -> PyResult<Bound<'py, Self>> {
                slf.get().core.wait(slf.py(), timeout)?;
                Ok(slf.clone())
            }
            /// The runtime handle.
            fn __int__(&self) -> u64 {
                self.core.handle
            }
            fn __index__(&self) -> u64 {
                self.core.handle
            }
            /// Returns the handle object itself.
            fn __enter__(slf: Py<Self>) -> Py<Self> {
                slf
            }
            /// Releases the handle (unmaps a `Map`) and waits for it, unless already
            /// released or rejected; errors are swallowed while an exception propagates.
            #[pyo3(signature = (exc_type = None, exc = None, tb = None))]
            fn __exit__(
                slf: &Bound<'_, Self>,
                exc_type: Option<&Bound<'_, PyAny>>,
                exc: Option<&Bound<'_, PyAny>>,
                tb: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<bool> {
                let _ = (exc, tb);
                let me = slf.get();
                if me.core.released.load(Ordering::Acquire) || me.core.handle == 0 {
                    return Ok(false);
                }
                let py = slf.py();
                let r = (|| {
                    let op = Stage::$release(me.core.stage.bind(py), slf.as_any())?;
                    op.get().wait_inner(py, ovstage::Timeout::INFINITE)
                })();
                exit_with(exc_type, r)
            }
            fn __repr__(&self) -> String {
                format!("{}(handle={})", $what, self.core.handle)
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                if self.core.needs_finalizing() {
                    Python::attach(|py| {
                        let stage = self.core.stage.bind(py);
                        let _ = stage.get().finalize_handle($what, self.core.handle);
                    });
                    resource_warning(&format!("{} {} was not released", $what, self.core.handle));
                }
            }
        }
    };
}

/// A query handle: the prims a read, write, map or delete addresses.
#[pyclass(frozen, weakref, module = "ovstage")]
pub(crate) struct Query {
    pub(crate) core: Core,
}
handle_class!(Query, "Query", release_query_obj);

#[pymethods]
impl Query {
    /// The query's result (`Stage.fetch_query_result(self, timeout)`).
    #[pyo3(signature = (timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, timeout=ovstage.TIMEOUT_INFINITE)")]
    fn result<'py>(slf: &Bound<'py, Self>, timeout: args::TimeoutArg) -> PyResult<Bound<'py, PyAny>> {
        Stage::fetch_query_result(slf.get().core.stage.bind(slf.py()), slf.as_any(), timeout)
    }
    /// Enqueues the release (`Stage.release_query(self)`).
    fn release<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Operation>> {
        Stage::release_query_obj(slf.get().core.stage.bind(slf.py()), slf.as_any())
    }
}

/// A read handle: fetch its groups with `fetch_next()` / `groups()`.
#[pyclass(frozen, weakref, module = "ovstage")]
pub(crate) struct Read {
    pub(crate) core: Core,
}
handle_class!(Read, "Read", release_read_obj);

#[pymethods]
impl Read {
    /// The next group, or `None` once every group was fetched.
    #[pyo3(signature = (timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, timeout=ovstage.TIMEOUT_INFINITE)")]
    fn fetch_next<'py>(slf: &Bound<'py, Self>, timeout: args::TimeoutArg) -> PyResult<Py<PyAny>> {
        Stage::fetch_read_next(slf.get().core.stage.bind(slf.py()), slf.as_any(), timeout)
    }
    /// Iterates the groups (fetching until `None`); the caller releases each.
    #[pyo3(signature = (timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, timeout=ovstage.TIMEOUT_INFINITE)")]
    fn groups(slf: &Bound<'_, Self>, timeout: args::TimeoutArg) -> PyResult<GroupIter> {
        Ok(GroupIter {
            source: slf.clone().into_any().unbind(),
            timeout: timeout.0.as_nanos(),
            done: AtomicBool::new(false),
        })
    }
    /// Enqueues the release (`Stage.release_read(self)`).
    fn release<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Operation>> {
        Stage::release_read_obj(slf.get().core.stage.bind(slf.py()), slf.as_any())
    }
}

/// An iterator over a read's or map's groups.
#[pyclass(frozen, module = "ovstage._native")]
pub(crate) struct GroupIter {
    source: Py<PyAny>,
    timeout: u64,
    done: AtomicBool,
}

#[pymethods]
impl GroupIter {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if self.done.load(Ordering::Acquire) {
            return Ok(None);
        }
        let g = self.source.bind(py).call_method1("fetch_next", (self.timeout,))?;
        if g.is_none() {
            self.done.store(true, Ordering::Release);
            return Ok(None);
        }
        Ok(Some(g.unbind()))
    }
}

/// A map session: writable groups committed by `unmap_group` / `unmap`.
#[pyclass(frozen, weakref, module = "ovstage")]
pub(crate) struct Map {
    pub(crate) core: Core,
    /// Groups fetched and not yet committed.
    pub(crate) fetched: Mutex<Vec<Py<MapGroup>>>,
    /// The session's placement (a CUDA device, or an availability event),
    /// when it has one.
    pub(crate) placed: Option<ovstage_dlpack::placement::PlacedMap>,
}
handle_class!(Map, "Map", unmap_obj);

impl Map {
    /// Whether `unmap()` was accepted.
    pub(crate) fn is_unmapped(&self) -> bool {
        self.core.released.load(Ordering::Acquire)
    }
}

#[pymethods]
impl Map {
    /// The next group, or `None` once every group was fetched.
    #[pyo3(signature = (timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, timeout=ovstage.TIMEOUT_INFINITE)")]
    fn fetch_next<'py>(slf: &Bound<'py, Self>, timeout: args::TimeoutArg) -> PyResult<Py<PyAny>> {
        Stage::fetch_map_next(slf.get().core.stage.bind(slf.py()), slf.as_any(), timeout)
    }
    /// Iterates the groups.
    #[pyo3(signature = (timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, timeout=ovstage.TIMEOUT_INFINITE)")]
    fn groups(slf: &Bound<'_, Self>, timeout: args::TimeoutArg) -> PyResult<GroupIter> {
        Ok(GroupIter {
            source: slf.clone().into_any().unbind(),
            timeout: timeout.0.as_nanos(),
            done: AtomicBool::new(false),
        })
    }
    /// Commits one group.
    #[pyo3(signature = (group, cuda_event = None, cuda_stream = None))]
    fn unmap_group<'py>(
        slf: &Bound<'py, Self>,
        group: &Bound<'py, PyAny>,
        cuda_event: Option<&Bound<'py, PyAny>>,
        cuda_stream: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Operation>> {
        Stage::unmap_group(slf.get().core.stage.bind(slf.py()), slf.as_any(), group, cuda_event, cuda_stream)
    }
    /// Commits everything not yet committed and ends the session.
    #[pyo3(signature = (cuda_event = None, cuda_stream = None))]
    fn unmap<'py>(
        slf: &Bound<'py, Self>,
        cuda_event: Option<&Bound<'py, PyAny>>,
        cuda_stream: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Operation>> {
        Stage::unmap_attribute(slf.get().core.stage.bind(slf.py()), slf.as_any(), cuda_event, cuda_stream)
    }
}

/// An ordinal query (write floor or oldest preserved ordinal).
#[pyclass(frozen, weakref, module = "ovstage")]
pub(crate) struct OrdinalQuery {
    pub(crate) core: Core,
}
handle_class!(OrdinalQuery, "OrdinalQuery", release_ordinal_query_obj);

#[pymethods]
impl OrdinalQuery {
    /// The ordinal (waits up to `timeout`).
    #[pyo3(signature = (timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, timeout=ovstage.TIMEOUT_INFINITE)")]
    fn fetch(slf: &Bound<'_, Self>, timeout: args::TimeoutArg) -> PyResult<u64> {
        Stage::fetch_ordinal(slf.get().core.stage.bind(slf.py()), slf.as_any(), timeout)
    }
    /// Enqueues the release.
    fn release<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Operation>> {
        Stage::release_ordinal_query_obj(slf.get().core.stage.bind(slf.py()), slf.as_any())
    }
}

/// A hierarchy lookup handle.
#[pyclass(frozen, weakref, module = "ovstage")]
pub(crate) struct Hierarchy {
    pub(crate) core: Core,
}
handle_class!(Hierarchy, "Hierarchy", release_hierarchy_obj);

#[pymethods]
impl Hierarchy {
    /// The lookup's result (waits).
    fn result<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Stage::fetch_hierarchy_result(slf.get().core.stage.bind(slf.py()), slf.as_any())
    }
    /// Enqueues the release.
    fn release<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Operation>> {
        Stage::release_hierarchy_obj(slf.get().core.stage.bind(slf.py()), slf.as_any())
    }
}
