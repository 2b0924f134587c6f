//! The native `Stage`: every data-plane call of the Python API. The Python
//! `ovstage.Stage` subclasses it (process configuration, `config`,
//! lifecycle sugar). Enqueue rejections come back as an `Operation` with a
//! status (or a handle object with `handle == 0`), never as an exception;
//! bad Python arguments raise `TypeError`/`ValueError` before anything is
//! submitted; every wait and fetch releases the GIL.

use std::sync::{Arc, Mutex, RwLock};

use ovstage::{
    AdmissionPolicy, AttrRef, AttributeMode, AttributeWrite, DType, DTypeCode, Error, FilterOp, FloorScope,
    HierarchyHandle, HierarchyRelation, MapDesc, MapHandle, OpId, OrdinalQueryHandle, OrdinalRange, PathList,
    Predicate, PrimMode, PrimPath, QueryHandle, ReadHandle, Selection, Semantic, Status, Timeout, Token, WaitError,
    WriteData,
};
use ovstage_abi::dlpack::{DLDevice, DLDeviceType};
use ovstage_dlpack::import::CudaSync;
use ovstage_dlpack::placement::{PlacedMap, Placement, Target};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyAny, PyList, PyString, PyTuple};

use crate::args::{self, type_name};
use crate::errors::{IntoPy, invalid_handle, ovstage_error, ovx_error, to_py};
use crate::groups::{MapGroup, ReadGroup};
use crate::handles::{Core, Hierarchy, Map, OrdinalQuery, Query, Read};
use crate::op::Operation;
use crate::payload;

/// An ovstage instance (native part of `ovstage.Stage`).
#[pyclass(subclass, frozen, module = "ovstage._native", name = "Stage")]
pub(crate) struct Stage {
    inner: RwLock<Option<Arc<ovstage::Stage>>>,
    /// Ops whose `Operation` was dropped unwaited: released once done.
    orphans: Mutex<Orphans>,
}

/// Unwaited ops, swept when the list has doubled since the last sweep, so
/// a drop costs O(1) amortized even while thousands of them are pending.
#[derive(Default)]
struct Orphans {
    ops: Vec<OpId>,
    sweep_at: usize,
}

/// The smallest list worth sweeping.
const ORPHAN_SWEEP_MIN: usize = 256;

static RESULT_CLASSES: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn values_mod(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    RESULT_CLASSES
        .get_or_try_init(py, || Ok::<_, PyErr>(py.import("ovstage._values")?.into_any().unbind()))
        .map(|m| m.bind(py))
}

impl Stage {
    /// The live stage, or `INVALID_HANDLE` after `destroy()`.
    pub(crate) fn stage(&self, call: &str) -> PyResult<Arc<ovstage::Stage>> {
        match self.inner.read() {
            Ok(g) => g.clone().ok_or_else(|| invalid_handle(format!("{call} called after Stage was destroyed"))),
            Err(_) => Err(invalid_handle(format!("{call}: the Stage is unusable"))),
        }
    }

    /// Whether the stage was not destroyed.
    pub(crate) fn is_alive(&self) -> bool {
        self.inner.read().map(|g| g.is_some()).unwrap_or(false)
    }

    /// Remembers an unwaited op; completed ones are released in batches.
    pub(crate) fn orphan(&self, op: OpId) {
        let Ok(mut list) = self.orphans.lock() else { return };
        list.ops.push(op);
        if list.ops.len() >= list.sweep_at.max(ORPHAN_SWEEP_MIN) {
            self.sweep(&mut list);
        }
    }

    /// Releases the unwaited ops that have completed.
    fn sweep(&self, list: &mut Orphans) {
        let Ok(stage) = self.stage("orphan") else {
            list.ops.clear();
            return;
        };
        list.ops.retain(|op| match stage.wait(*op, Timeout::POLL) {
            Err(WaitError::Timeout { .. }) => true,
            _ => {
                let _ = stage.release_op(*op);
                false
            }
        });
        list.sweep_at = list.ops.len() * 2;
    }

    /// Releases a handle from a finalizer.
    pub(crate) fn finalize_handle(&self, what: &str, handle: u64) -> ovstage::Result<()> {
        let Ok(stage) = self.stage("finalizer") else { return Ok(()) };
        let op = match what {
            "Query" => QueryHandle::from_raw(handle).map(|h| stage.release_query(h)),
            "Read" => ReadHandle::from_raw(handle).map(|h| stage.release_read(h)),
            "Map" => MapHandle::from_raw(handle).map(|h| stage.unmap_attribute(h, Vec::new())),
            "OrdinalQuery" => OrdinalQueryHandle::from_raw(handle).map(|h| stage.release_ordinal_query(h)),
            "Hierarchy" => HierarchyHandle::from_raw(handle).map(|h| stage.release_hierarchy(h)),
            _ => None,
        };
        if let Some(Ok(op)) = op {
            self.orphan(op);
        }
        Ok(())
    }
}

/// A handle argument: the handle object (checked not released) or its raw int.
fn handle_of<T>(obj: &Bound<'_, PyAny>, name: &str, core: impl Fn(&T) -> &Core) -> PyResult<u64>
where
    T: pyo3::PyClass<Frozen = pyo3::pyclass::boolean_struct::True> + Sync,
{
    if let Ok(h) = obj.cast::<T>() {
        return core(h.get()).live(name);
    }
    args::u64_arg(obj, name)
}

fn query_arg(obj: &Bound<'_, PyAny>) -> PyResult<u64> {
    handle_of::<Query>(obj, "query", |q| &q.core)
}

fn raw_query(h: u64) -> Result<QueryHandle, Error> {
    QueryHandle::from_raw(h).ok_or_else(|| Error::invalid_argument("query handle 0 is not a query"))
}

/// An attribute given as a token or a name.
enum Attr {
    Token(u64),
    Name(String),
}

impl Attr {
    fn from(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Attr> {
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(Attr::Name(s.to_str()?.to_owned()));
        }
        Ok(Attr::Token(args::u64_arg(obj, name)?))
    }
    fn as_ref(&self) -> Result<AttrRef<'_>, Error> {
        match self {
            Attr::Token(t) => Token::from_raw(*t)
                .map(AttrRef::Token)
                .ok_or_else(|| Error::invalid_argument("attribute token 0 is invalid")),
            Attr::Name(n) => Ok(AttrRef::Name(n)),
        }
    }
}

fn tokens(list: &[u64], name: &str) -> Result<Vec<AttrRef<'static>>, Error> {
    list.iter()
        .map(|t| {
            Token::from_raw(*t)
                .map(AttrRef::Token)
                .ok_or_else(|| Error::invalid_argument(format!("{name}: token 0 is invalid")))
        })
        .collect()
}

/// One write's payload, checked and built (or rejected).
struct WriteArgs {
    attr: Attr,
    data: Result<WriteData, Error>,
}

#[allow(clippy::too_many_arguments)]
fn write_args(
    py: Python<'_>,
    attribute: &Bound<'_, PyAny>,
    tensors: &Bound<'_, PyAny>,
    is_array: &Bound<'_, PyAny>,
    semantic: Option<&Bound<'_, PyAny>>,
    attribute_mode: Option<&Bound<'_, PyAny>>,
    index_map: Option<&Bound<'_, PyAny>>,
    mask: Option<&Bound<'_, PyAny>>,
    count: Option<&Bound<'_, PyAny>>,
    cuda_event: Option<&Bound<'_, PyAny>>,
    cuda_stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<WriteArgs> {
    if attribute.is_instance_of::<pyo3::types::PyFloat>() {
        return Err(PyTypeError::new_err("attribute must be an int, got float"));
    }
    let attr = Attr::from(attribute, "attribute")?;
    let is_array = args::strict_bool(is_array, "is_array")?;
    let semantic = match semantic {
        Some(s) => args::i32_arg(s, "semantic")?,
        None => 0,
    };
    let mode = args::closed_enum_opt(attribute_mode, "attribute_mode", "AttributeMode", args::ATTRIBUTE_MODES)?;
    fn opt<'a, 'py>(o: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
        o.filter(|x| !x.is_none())
    }
    let (index_map, mask, count) = (opt(index_map), opt(mask), opt(count));
    let address = |o: Option<&Bound<'_, PyAny>>, n: &str| -> PyResult<usize> {
        let v = opt(o).map(|o| args::u64_arg(o, n)).transpose()?.unwrap_or(0);
        usize::try_from(v).map_err(|_| PyValueError::new_err(format!("{n} {v} is not an address on this machine")))
    };
    let sync =
        CudaSync { stream: address(cuda_stream, "cuda_stream")?, wait_event: address(cuda_event, "cuda_event")? };
    if index_map.is_some() && mask.is_some() {
        return Err(PyValueError::new_err("index_map and mask are mutually exclusive"));
    }
    let count = match count {
        Some(c) => {
            let c = args::u32_arg(c, "count")?;
            if c == 0 {
                return Err(PyValueError::new_err("count must be at least 1"));
            }
            Some(c)
        }
        None => None,
    };
    let selection = if let Some(m) = index_map {
        let map: Vec<u32> = args::uint_list(m, "index_map", 32)?.into_iter().map(|v| v as u32).collect();
        if map.is_empty() {
            return Err(PyValueError::new_err("index_map must not be empty"));
        }
        match count {
            Some(c) if c as usize > map.len() => {
                return Err(PyValueError::new_err(format!("count {c} exceeds len(index_map) {}", map.len())));
            }
            Some(c) => Selection::IndexMap(map[..c as usize].to_vec()),
            None => Selection::IndexMap(map),
        }
    } else if let Some(m) = mask {
        let Some(c) = count else { return Err(PyValueError::new_err("mask requires count")) };
        let bits = args::uint_list(m, "mask", 64)?;
        if bits.len() < (c as usize).div_ceil(64) {
            return Err(PyValueError::new_err(format!(
                "mask needs at least {} words for count {c}",
                (c as usize).div_ceil(64)
            )));
        }
        Selection::Mask { count: c, bits }
    } else if let Some(c) = count {
        Selection::Leading(c)
    } else {
        Selection::All
    };
    let packed_nd = is_array
        && tensors.is_instance_of::<numpy::PyUntypedArray>()
        && tensors.cast::<numpy::PyUntypedArray>().map(|a| numpy::PyUntypedArrayMethods::ndim(a) > 1).unwrap_or(false);
    let flat;
    let tensors = if packed_nd {
        // A packed array payload is rows of scalar elements: (2, 2) over two prims is [1, 2] and [3, 4].
        flat = tensors.call_method1("reshape", (-1,))?;
        &flat
    } else {
        tensors
    };
    let data = match payload::tensors(py, tensors, sync)? {
        Err(e) => Err(e),
        Ok(mut ts) => {
            let semantic = u32::try_from(semantic).ok().and_then(Semantic::from_raw).unwrap_or(Semantic::None);
            let data = if is_array {
                if tensors.is_instance_of::<PyList>() || tensors.is_instance_of::<PyTuple>() {
                    Ok(WriteData::array_rows(ts.into_vec()))
                } else {
                    Ok(WriteData::array_packed(ts.swap_remove(0)))
                }
            } else if ts.len() != 1 {
                Err(Error::invalid_argument(format!(
                    "fixed-size attributes require tensor_count == 1, got {} tensors",
                    ts.len()
                )))
            } else {
                Ok(WriteData::fixed(ts.swap_remove(0)))
            };
            let am = AttributeMode::from_raw(mode).unwrap_or(AttributeMode::Reject);
            data.map(|d| d.with_semantic(semantic).with_selection(selection).with_attribute_mode(am))
        }
    };
    Ok(WriteArgs { attr, data })
}

/// A call's `placement=` argument, checked: `TypeError` for anything that
/// is not a `Placement` (or `None`); the placement's own errors (a CUDA
/// device this machine lacks, ...) are the call's, reported as its op.
fn placement_arg(placement: Option<&Bound<'_, PyAny>>, call: &str) -> PyResult<Result<Placement, Error>> {
    let Some(p) = placement.filter(|p| !p.is_none()) else { return Ok(Ok(Placement::NONE)) };
    let not_placement = || PyTypeError::new_err(format!("placement must be a Placement or None, got {}", type_name(p)));
    let field = |name: &str| p.getattr(name).map_err(|_| not_placement());
    let (device_type, device_id) = (field("device_type")?, field("device_id")?);
    let (stream, event) = (field("stream")?, field("availability_event")?);
    let device = DLDevice {
        device_type: DLDeviceType(args::i32_arg(&device_type, "placement.device_type")?),
        device_id: args::i32_arg(&device_id, "placement.device_id")?,
    };
    let stream = args::u64_arg(&stream, "placement.stream")? as usize;
    let event = args::u64_arg(&event, "placement.availability_event")? as usize;
    Ok(Placement::parse(device, stream, event, call))
}

/// A map session's placement, checked, and kept with the session when it
/// has one (a CUDA device, or an availability event each commit records).
fn map_session(p: &Placement, is_array: bool) -> Result<Option<PlacedMap>, Error> {
    const CALL: &str = "map_attribute";
    p.check_map(is_array, CALL)?;
    if p.is_unplaced() {
        return Ok(None);
    }
    Ok(Some(PlacedMap { placement: *p, record: p.map_record(CALL)? }))
}

/// A commit's `cuda_stream`/`cuda_event` (a session on a device waits for
/// them before copying its values back).
fn commit_sync(cuda_event: Option<&Bound<'_, PyAny>>, cuda_stream: Option<&Bound<'_, PyAny>>) -> PyResult<CudaSync> {
    let arg = |o: Option<&Bound<'_, PyAny>>, n: &str| match o.filter(|o| !o.is_none()) {
        Some(o) => args::u64_arg(o, n).map(|v| v as usize),
        None => Ok(0),
    };
    Ok(CudaSync { stream: arg(cuda_stream, "cuda_stream")?, wait_event: arg(cuda_event, "cuda_event")? })
}

/// Records a placed session's event for the commit `op`.
fn after_commit(stage: &ovstage::Stage, op: OpId, session: Option<PlacedMap>, call: &str) -> Result<OpId, Error> {
    match session {
        // SAFETY: the placement's handles are the caller's live ones.
        Some(s) => unsafe { s.placement.after_write(stage, op, s.record, call) },
        None => Ok(op),
    }
}

/// Distinct CUDA devices of a write's payload objects (`__dlpack_device__`
/// producers and `DLTensor` descriptors): where a placement naming no
/// device records its event.
fn cuda_devices(payloads: &[Bound<'_, PyAny>]) -> Vec<u32> {
    let mut devices = Vec::new();
    let mut note = |device: Option<(i32, i32)>| {
        if let Some((ovstage_dlpack::device::CUDA, id)) = device
            && let Ok(n) = u32::try_from(id)
            && !devices.contains(&n)
        {
            devices.push(n);
        }
    };
    for payload in payloads {
        let items: Vec<Bound<'_, PyAny>> = match payload.cast::<pyo3::types::PyList>() {
            Ok(list) => list.iter().collect(),
            Err(_) => match payload.cast::<pyo3::types::PyTuple>() {
                Ok(t) => t.iter().collect(),
                Err(_) => vec![payload.clone()],
            },
        };
        for t in items {
            let device = if t.hasattr("__dlpack_device__").unwrap_or(false) {
                t.call_method0("__dlpack_device__").and_then(|d| d.extract::<(i32, i32)>()).ok()
            } else {
                let get = |n: &str| t.getattr(n).and_then(|v| v.extract::<i32>()).ok();
                get("device_type").zip(get("device_id"))
            };
            note(device);
        }
    }
    devices
}

/// The write's record place ([`Placement::write_record`]), asking the
/// payload objects for their devices only when it needs them.
fn write_record(
    placed: &Placement,
    payloads: &[Bound<'_, PyAny>],
    call: &str,
) -> Result<Option<ovstage_backend_cuda::placement::RecordOn>, Error> {
    let sources = if placed.availability_event != 0 && placed.target == Target::Unspecified {
        cuda_devices(payloads)
    } else {
        Vec::new()
    };
    placed.write_record(&sources, call)
}

fn ordinal_range(obj: &Bound<'_, PyAny>) -> PyResult<OrdinalRange> {
    let py = obj.py();
    let (end, start) = match obj.cast::<crate::values::OrdinalRange>() {
        Ok(r) => {
            let r = r.borrow();
            (r.end_ordinal.bind(py).clone(), r.start_ordinal.bind(py).clone())
        }
        // Any object with the two fields (duck typing, as the reference).
        Err(_) => (
            obj.getattr("end_ordinal").map_err(|_| PyTypeError::new_err("ordinal_range must be an OrdinalRange"))?,
            obj.getattr("start_ordinal")?,
        ),
    };
    let end = args::u64_arg(&end, "end_ordinal")?;
    if start.is_none() {
        return Ok(OrdinalRange::snapshot(end));
    }
    let start = args::u64_arg(&start, "start_ordinal")?;
    if start > end {
        return Err(PyValueError::new_err(format!("start_ordinal {start} is above end_ordinal {end}")));
    }
    OrdinalRange::changes(start, end).map_err(|e| PyValueError::new_err(e.message().to_owned()))
}

fn path_text(stage: &ovstage::Stage, p: PrimPath) -> String {
    stage.paths().path_text(p).map(|s| s.to_string()).unwrap_or_default()
}

#[pymethods]
impl Stage {
    #[new]
    #[pyo3(signature = (name = None, config = None, *, _admission = 0, _lanes = 0))]
    fn py_new(
        name: Option<&Bound<'_, PyAny>>,
        config: Option<&Bound<'_, PyAny>>,
        _admission: u32,
        _lanes: usize,
    ) -> PyResult<Stage> {
        let _ = config;
        let name = match name {
            None => "ovstage".to_owned(),
            Some(n) if n.is_none() => "ovstage".to_owned(),
            Some(n) => n
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err(format!("name must be a str or None, got {}", type_name(n))))?
                .to_str()?
                .to_owned(),
        };
        let mut cfg = ovstage::StageConfig::default();
        if let Some(p) = AdmissionPolicy::from_raw(_admission) {
            cfg = cfg.with_admission(p);
        }
        if _lanes > 0 {
            cfg = cfg.with_lanes(_lanes);
        }
        Ok(Stage {
            inner: RwLock::new(Some(Arc::new(ovstage::Stage::with_config(name, cfg)))),
            orphans: Mutex::new(Orphans::default()),
        })
    }

    /// Drains outstanding work and frees the instance (idempotent).
    fn _destroy(&self, py: Python<'_>) {
        let s = self.inner.write().map(|mut g| g.take()).unwrap_or(None);
        if let Ok(mut o) = self.orphans.lock() {
            o.ops.clear();
        }
        py.detach(move || drop(s));
    }

    /// Whether the Stage was not destroyed.
    #[getter]
    fn _alive(&self) -> bool {
        self.is_alive()
    }

    /// `(tracked_ops, handles, versions, prims)` of the engine (tests).
    fn _stats(&self) -> PyResult<(usize, usize, usize, usize)> {
        // What the stage holds for the client: unwaited ops that have
        // completed are released first (a sweep otherwise waits for the
        // list of them to double, however long ago they completed).
        if let Ok(mut list) = self.orphans.lock() {
            self.sweep(&mut list);
        }
        let s = self.stage("_stats")?.stats();
        Ok((s.tracked_ops, s.handles, s.versions, s.prims))
    }

    // ---- ops

    /// `(code, error_op_ids, lowest_pending_op_id)` of waiting for `op_id`; never raises for runtime outcomes.
    #[pyo3(signature = (op_id, timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, op_id, timeout=ovstage.TIMEOUT_INFINITE)")]
    fn wait_op(
        &self,
        py: Python<'_>,
        op_id: &Bound<'_, PyAny>,
        timeout: args::TimeoutArg,
    ) -> PyResult<(u32, Vec<u64>, u64)> {
        let id = args::u64_arg(op_id, "op_id")?;
        let t = timeout.0;
        let stage = self.stage("wait_op")?;
        let Some(op) = OpId::from_raw(id) else { return Ok((Status::InvalidArgument as u32, vec![], 0)) };
        Ok(match py.detach(|| stage.wait(op, t)) {
            Ok(()) => (0, vec![], 0),
            Err(WaitError::Timeout { lowest_pending }) => (Status::Timeout as u32, vec![], lowest_pending.get()),
            Err(WaitError::Failed { ops }) => (Status::OpFailed as u32, ops.iter().map(|o| o.get()).collect(), 0),
            Err(WaitError::Unknown(_)) => (Status::InvalidArgument as u32, vec![], 0),
        })
    }

    /// Just the code of `wait_op`.
    #[pyo3(signature = (op_id, timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, op_id, timeout=ovstage.TIMEOUT_INFINITE)")]
    fn wait_op_raw(&self, py: Python<'_>, op_id: &Bound<'_, PyAny>, timeout: args::TimeoutArg) -> PyResult<u32> {
        Ok(self.wait_op(py, op_id, timeout)?.0)
    }

    /// Releases an op's tracking: 0, or the raw status.
    fn release_op(&self, op_id: &Bound<'_, PyAny>) -> PyResult<u32> {
        let id = args::u64_arg(op_id, "op_id")?;
        let stage = self.stage("release_op")?;
        let Some(op) = OpId::from_raw(id) else { return Ok(Status::InvalidArgument as u32) };
        if let Err(WaitError::Timeout { .. }) = stage.wait(op, Timeout::POLL) {
            return Ok(Status::OpFailed as u32);
        }
        Ok(match stage.release_op(op) {
            Ok(()) => 0,
            Err(e) if e.status() == Status::InvalidArgument => Status::InvalidHandle as u32,
            Err(e) => e.status() as u32,
        })
    }

    // ---- queries

    /// Enqueues a filter query (conjunction of `filter`'s predicates; `attrs` scopes the reported attributes).
    #[pyo3(signature = (filter = None, attrs = None))]
    fn query<'py>(
        slf: &Bound<'py, Self>,
        filter: Option<&Bound<'py, PyAny>>,
        attrs: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Query>> {
        let py = slf.py();
        let stage = slf.get().stage("query")?;
        let attrs = match attrs.filter(|a| !a.is_none()) {
            Some(a) => args::token_list(a, "attrs")?,
            None => vec![],
        };
        let mut preds: Vec<(Attr, u32, Vec<String>)> = Vec::new();
        if let Some(f) = filter.filter(|f| !f.is_none()) {
            let list = f.getattr("predicates").map_err(|_| PyTypeError::new_err("filter must be a Filter or None"))?;
            for p in list.try_iter()? {
                let p = p?;
                let attr = Attr::from(&p.getattr("attribute")?, "Predicate.attribute")?;
                let op = args::closed_enum(
                    &p.getattr("op")?,
                    "Predicate.op",
                    "FilterOp",
                    &[
                        ("HAS", 0),
                        ("IN", 1),
                        ("CONTAINS", 2),
                        ("PREFIX", 3),
                        ("LT", 4),
                        ("LE", 5),
                        ("GT", 6),
                        ("GE", 7),
                    ],
                )?;
                let values: Vec<String> = p
                    .getattr("values")?
                    .try_iter()?
                    .map(|v| v.and_then(|v| Ok(v.str()?.to_string())))
                    .collect::<PyResult<_>>()?;
                preds.push((attr, op, values));
            }
        }
        let r = (|| {
            let predicates = preds
                .iter()
                .map(|(a, op, v)| {
                    Ok(Predicate::new(a.as_ref()?, FilterOp::from_raw(*op).expect("checked"), v.iter().cloned()))
                })
                .collect::<Result<Vec<_>, Error>>()?;
            let attrs = tokens(&attrs, "attrs")?;
            stage.query(&predicates, &attrs)
        })();
        let me: Py<Stage> = slf.clone().unbind();
        let (handle, op) = match r {
            Ok(e) => (e.handle.get(), Operation::accepted(&me, e.op, py)),
            Err(e) => (0, Operation::rejected(&me, &e, py)),
        };
        Bound::new(py, Query { core: Core::new(me, handle, Some(Py::new(py, op)?), None) })
    }

    /// A query over a path list (synchronous; its prims need not exist yet).
    fn query_from_path_list<'py>(slf: &Bound<'py, Self>, path_list: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Query>> {
        let py = slf.py();
        let id = args::u64_arg(path_list, "path_list")?;
        let stage = slf.get().stage("query_from_path_list")?;
        if let Ok(true) = path_list.getattr("released").and_then(|r| r.is_truthy()) {
            return Err(invalid_handle(format!("query_from_path_list: path list {id} was released")));
        }
        let list = PathList::from_raw(id).ok_or_else(|| {
            ovstage_error(Status::InvalidArgument as u32, "query_from_path_list: path list 0 is invalid")
        })?;
        let h = stage.query_from_path_list(list).map_err(|e| {
            if e.status() == Status::InvalidArgument && stage.paths().path_list_len(list).is_err() {
                invalid_handle(e.message().to_owned())
            } else {
                to_py(&e)
            }
        })?;
        Bound::new(py, Query { core: Core::new(slf.clone().unbind(), h.get(), None, Some(path_list.clone().unbind())) })
    }

    /// The query's result (waits up to `timeout`).
    #[pyo3(signature = (query, timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, query, timeout=ovstage.TIMEOUT_INFINITE)")]
    pub(crate) fn fetch_query_result<'py>(
        slf: &Bound<'py, Self>,
        query: &Bound<'py, PyAny>,
        timeout: args::TimeoutArg,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let t = timeout.0;
        let h = query_arg(query)?;
        let stage = slf.get().stage("fetch_query_result")?;
        let q = QueryHandle::from_raw(h).ok_or_else(|| {
            ovstage_error(
                Status::InvalidArgument as u32,
                "fetch_query_result: the query was rejected at enqueue (handle 0)",
            )
        })?;
        let r = py.detach(|| stage.fetch_query_result(q, t)).py()?;
        let attrs: Vec<u64> = r.attributes.iter().map(|t| t.get()).collect();
        values_mod(py)?.getattr("QueryResult")?.call1((attrs, r.total_prim_count, r.handle.get()))
    }

    /// Enqueues the release of a query.
    #[pyo3(name = "release_query")]
    pub(crate) fn release_query_obj<'py>(
        slf: &Bound<'py, Self>,
        query: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Operation>> {
        release_with(
            slf,
            query,
            "release_query",
            |q: &Query| &q.core,
            |s, h| match QueryHandle::from_raw(h) {
                Some(q) => s.release_query(q),
                None => Err(Error::invalid_argument("release_query: handle 0")),
            },
        )
    }

    // ---- reads

    /// Enqueues a read of `attrs` (tokens) over the query's prims.
    #[pyo3(signature = (query, attrs, ordinal_range, *, placement = None))]
    fn read_attributes<'py>(
        slf: &Bound<'py, Self>,
        query: &Bound<'py, PyAny>,
        attrs: &Bound<'py, PyAny>,
        ordinal_range: &Bound<'py, PyAny>,
        placement: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Read>> {
        let py = slf.py();
        let q = query_arg(query)?;
        let attrs = args::token_list(attrs, "attrs")?;
        let range = self::ordinal_range(ordinal_range)?;
        const CALL: &str = "read_attributes";
        let placed = placement_arg(placement, CALL)?;
        let stage = slf.get().stage(CALL)?;
        let r = placed.and_then(|p| {
            let (q, attrs) = (raw_query(q)?, tokens(&attrs, "attrs")?);
            if p.is_unplaced() {
                return stage.read_attributes(q, &attrs, range);
            }
            let on = p.read_record(CALL)?;
            // SAFETY: the placement's stream and event are the caller's
            // live handles until the read has run (the API's contract).
            let finish = unsafe { p.read_finisher(on, CALL) };
            stage.read_attributes_finishing(q, &attrs, range, finish)
        });
        let me: Py<Stage> = slf.clone().unbind();
        let (handle, op) = match r {
            Ok(e) => (e.handle.get(), Operation::accepted(&me, e.op, py)),
            Err(e) => (0, Operation::rejected(&me, &e, py)),
        };
        Bound::new(py, Read { core: Core::new(me, handle, Some(Py::new(py, op)?), None) })
    }

    /// The next group of a read, or `None` at the end.
    #[pyo3(signature = (read, timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, read, timeout=ovstage.TIMEOUT_INFINITE)")]
    pub(crate) fn fetch_read_next<'py>(
        slf: &Bound<'py, Self>,
        read: &Bound<'py, PyAny>,
        timeout: args::TimeoutArg,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let t = timeout.0;
        let h = handle_of::<Read>(read, "read", |r| &r.core)?;
        let stage = slf.get().stage("fetch_read_next")?;
        let r = ReadHandle::from_raw(h).ok_or_else(|| {
            ovstage_error(
                Status::InvalidArgument as u32,
                "fetch_read_next: the read was rejected at enqueue (handle 0)",
            )
        })?;
        match py.detach(|| stage.fetch_read_next(r, t)) {
            Ok(Some(g)) => Ok(Py::new(py, ReadGroup::new(slf.clone().unbind(), g))?.into_any()),
            Ok(None) => Ok(py.None()),
            Err(e) if matches!(e.status(), Status::Timeout | Status::InvalidHandle) => Err(to_py(&e)),
            Err(e) => Err(ovstage_error(Status::InvalidArgument as u32, e.message().to_owned())),
        }
    }

    /// Releases a fetched read group.
    fn release_group(&self, group: &Bound<'_, PyAny>) -> PyResult<()> {
        let g = group
            .cast::<ReadGroup>()
            .map_err(|_| PyTypeError::new_err(format!("group must be a ReadGroup, got {}", type_name(group))))?;
        self.stage("release_group")?;
        g.get().release_inner()
    }

    /// Enqueues the release of a read handle.
    #[pyo3(name = "release_read")]
    pub(crate) fn release_read_obj<'py>(
        slf: &Bound<'py, Self>,
        read: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Operation>> {
        release_with(
            slf,
            read,
            "release_read",
            |r: &Read| &r.core,
            |s, h| match ReadHandle::from_raw(h) {
                Some(r) => s.release_read(r),
                None => Err(Error::invalid_argument("release_read: handle 0")),
            },
        )
    }

    // ---- writes

    /// Enqueues a write of one attribute column over the query's prims at `ordinal`.
    #[pyo3(signature = (query, attribute, ordinal, tensors, *, is_array, prim_mode = None, semantic = None, attribute_mode = None,
                        index_map = None, mask = None, count = None, cuda_event = None, cuda_stream = None, placement = None))]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(
        text_signature = "($self, query, attribute, ordinal, tensors, *, is_array, prim_mode=ovstage.PrimMode.UPSERT, semantic=0, attribute_mode=ovstage.AttributeMode.REJECT, index_map=None, mask=None, count=None, cuda_event=None, cuda_stream=None, placement=None)"
    )]
    fn write_attribute<'py>(
        slf: &Bound<'py, Self>,
        query: &Bound<'py, PyAny>,
        attribute: &Bound<'py, PyAny>,
        ordinal: &Bound<'py, PyAny>,
        tensors: &Bound<'py, PyAny>,
        is_array: &Bound<'py, PyAny>,
        prim_mode: Option<&Bound<'py, PyAny>>,
        semantic: Option<&Bound<'py, PyAny>>,
        attribute_mode: Option<&Bound<'py, PyAny>>,
        index_map: Option<&Bound<'py, PyAny>>,
        mask: Option<&Bound<'py, PyAny>>,
        count: Option<&Bound<'py, PyAny>>,
        cuda_event: Option<&Bound<'py, PyAny>>,
        cuda_stream: Option<&Bound<'py, PyAny>>,
        placement: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Operation>> {
        let py = slf.py();
        let q = query_arg(query)?;
        let ordinal = args::u64_arg(ordinal, "ordinal")?;
        let mode = args::closed_enum_opt(prim_mode, "prim_mode", "PrimMode", args::PRIM_MODES)?;
        let w = write_args(
            py,
            attribute,
            tensors,
            is_array,
            semantic,
            attribute_mode,
            index_map,
            mask,
            count,
            cuda_event,
            cuda_stream,
        )?;
        const CALL: &str = "write_attribute";
        let placed = placement_arg(placement, CALL)?;
        let stage = slf.get().stage(CALL)?;
        let r = placed.and_then(|p| {
            let record = write_record(&p, std::slice::from_ref(tensors), CALL)?;
            let data = w.data?;
            let op = stage.write_attribute(
                raw_query(q)?,
                w.attr.as_ref()?,
                ordinal,
                data,
                PrimMode::from_raw(mode).expect("checked"),
            )?;
            // SAFETY: the placement's handles are the caller's live ones.
            unsafe { p.after_write(&stage, op, record, CALL) }
        });
        Operation::from_result(&slf.clone().unbind(), r, py).into_object(py)
    }

    /// Enqueues one op writing several attributes (`WriteDesc`s) at `ordinal`.
    #[pyo3(signature = (query, writes, ordinal, *, prim_mode = None, placement = None))]
    #[pyo3(text_signature = "($self, query, writes, ordinal, *, prim_mode=ovstage.PrimMode.UPSERT, placement=None)")]
    fn write_attributes<'py>(
        slf: &Bound<'py, Self>,
        query: &Bound<'py, PyAny>,
        writes: &Bound<'py, PyAny>,
        ordinal: &Bound<'py, PyAny>,
        prim_mode: Option<&Bound<'py, PyAny>>,
        placement: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Operation>> {
        let py = slf.py();
        let q = query_arg(query)?;
        let ordinal = args::u64_arg(ordinal, "ordinal")?;
        let mode = args::closed_enum_opt(prim_mode, "prim_mode", "PrimMode", args::PRIM_MODES)?;
        let items = args::items(writes, "writes")?;
        let mut entries = Vec::with_capacity(items.len());
        let mut payloads = Vec::with_capacity(items.len());
        for w in items {
            let Ok(d) = w.cast::<crate::values::WriteDesc>() else {
                return Err(PyTypeError::new_err(format!("writes entries must be WriteDesc, got {}", type_name(&w))));
            };
            let d = d.borrow();
            let b = |f: &Py<PyAny>| f.bind(py).clone();
            payloads.push(b(&d.tensors));
            entries.push(write_args(
                py,
                &b(&d.attribute),
                &b(&d.tensors),
                &b(&d.is_array),
                Some(&b(&d.semantic)),
                Some(&b(&d.attribute_mode)),
                Some(&b(&d.index_map)),
                Some(&b(&d.mask)),
                Some(&b(&d.count)),
                Some(&b(&d.cuda_event)),
                Some(&b(&d.cuda_stream)),
            )?);
        }
        const CALL: &str = "write_attributes";
        let placed = placement_arg(placement, CALL)?;
        let stage = slf.get().stage(CALL)?;
        let r = placed.and_then(|p| {
            let record = write_record(&p, &payloads, CALL)?;
            let mut list = Vec::with_capacity(entries.len());
            for e in &mut entries {
                let data = std::mem::replace(&mut e.data, Err(Error::internal("taken")))?;
                list.push(AttributeWrite { attribute: e.attr.as_ref()?, data });
            }
            let op =
                stage.write_attributes(raw_query(q)?, list, ordinal, PrimMode::from_raw(mode).expect("checked"))?;
            // SAFETY: the placement's handles are the caller's live ones.
            unsafe { p.after_write(&stage, op, record, CALL) }
        });
        Operation::from_result(&slf.clone().unbind(), r, py).into_object(py)
    }

    /// Enqueues a delete of `attributes` (names or tokens; empty: the prims themselves).
    fn delete_attributes<'py>(
        slf: &Bound<'py, Self>,
        query: &Bound<'py, PyAny>,
        attributes: &Bound<'py, PyAny>,
        ordinal: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Operation>> {
        let py = slf.py();
        let q = query_arg(query)?;
        let attrs = args::items(attributes, "attributes")?
            .iter()
            .map(|a| Attr::from(a, "attributes entries"))
            .collect::<PyResult<Vec<_>>>()?;
        let ordinal = args::u64_arg(ordinal, "ordinal")?;
        let stage = slf.get().stage("delete_attributes")?;
        let r = (|| {
            let refs = attrs.iter().map(Attr::as_ref).collect::<Result<Vec<_>, _>>()?;
            stage.delete_attributes(raw_query(q)?, &refs, ordinal)
        })();
        Operation::from_result(&slf.clone().unbind(), r, py).into_object(py)
    }

    // ---- maps

    /// Enqueues a map session of one attribute over the query's prims at `ordinal`.
    #[pyo3(signature = (query, attribute, ordinal, *, prim_mode = None, dtype = None, semantic = None, element_sizes = None,
                        attribute_mode = None, placement = None))]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(
        text_signature = "($self, query, attribute, ordinal, *, prim_mode=ovstage.PrimMode.UPSERT, dtype=None, semantic=0, element_sizes=None, attribute_mode=ovstage.AttributeMode.REJECT, placement=None)"
    )]
    fn map_attribute<'py>(
        slf: &Bound<'py, Self>,
        query: &Bound<'py, PyAny>,
        attribute: &Bound<'py, PyAny>,
        ordinal: &Bound<'py, PyAny>,
        prim_mode: Option<&Bound<'py, PyAny>>,
        dtype: Option<&Bound<'py, PyAny>>,
        semantic: Option<&Bound<'py, PyAny>>,
        element_sizes: Option<&Bound<'py, PyAny>>,
        attribute_mode: Option<&Bound<'py, PyAny>>,
        placement: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Map>> {
        let py = slf.py();
        let q = query_arg(query)?;
        let attr = Attr::from(attribute, "attribute")?;
        let ordinal = args::u64_arg(ordinal, "ordinal")?;
        let mode = args::closed_enum_opt(prim_mode, "prim_mode", "PrimMode", args::PRIM_MODES)?;
        let am = args::closed_enum_opt(attribute_mode, "attribute_mode", "AttributeMode", args::ATTRIBUTE_MODES)?;
        let semantic = match semantic {
            Some(s) => args::i32_arg(s, "semantic")?,
            None => 0,
        };
        let dtype = match dtype.filter(|d| !d.is_none()) {
            Some(d) => {
                let code = args::u32_arg(
                    &d.getattr("code").map_err(|_| PyTypeError::new_err("dtype must be a DLDataType"))?,
                    "dtype.code",
                )?;
                let bits = args::u32_arg(&d.getattr("bits")?, "dtype.bits")?;
                let lanes = args::u32_arg(&d.getattr("lanes")?, "dtype.lanes")?;
                Some((code, bits, lanes))
            }
            None => None,
        };
        let sizes = match element_sizes.filter(|e| !e.is_none()) {
            Some(e) => Some(args::uint_list(e, "element_sizes", 64)?),
            None => None,
        };
        let placed = placement_arg(placement, "map_attribute")?;
        let session = placed.and_then(|p| map_session(&p, sizes.is_some()));
        let stage = slf.get().stage("map_attribute")?;
        let r = session.clone().and_then(|_| {
            let dtype = match dtype {
                Some((c, b, l)) => Some(DType::new(
                    u8::try_from(c)
                        .ok()
                        .and_then(DTypeCode::from_raw)
                        .ok_or_else(|| Error::invalid_argument(format!("map_attribute: unsupported dtype code {c}")))?,
                    u8::try_from(b).map_err(|_| Error::invalid_argument("dtype.bits"))?,
                    u16::try_from(l).map_err(|_| Error::invalid_argument("dtype.lanes"))?,
                )),
                None => None,
            };
            let desc = MapDesc {
                attribute: attr.as_ref()?,
                dtype,
                semantic: u32::try_from(semantic).ok().and_then(Semantic::from_raw).unwrap_or(Semantic::None),
                prim_mode: PrimMode::from_raw(mode).expect("checked"),
                attribute_mode: AttributeMode::from_raw(am).expect("checked"),
            };
            if desc.dtype.is_none() && desc.attribute_mode == AttributeMode::Reject {
                // Adopting the existing schema needs the attribute to exist.
                let exists = match desc.attribute {
                    AttrRef::Token(t) => stage.paths().token_text(t).is_ok(),
                    AttrRef::Name(n) => stage.paths().lookup_token(n).is_some(),
                };
                if !exists {
                    return Err(Error::not_supported("map_attribute: dtype is required to create an attribute"));
                }
            }
            stage.map_attribute(raw_query(q)?, desc, ordinal, sizes.as_deref())
        });
        let me: Py<Stage> = slf.clone().unbind();
        let r = r.map_err(|e| {
            if e.status() == Status::InvalidArgument && e.message().contains("dtype") && dtype.is_none() {
                Error::not_supported(e.message().to_owned())
            } else {
                e
            }
        });
        let (handle, op) = match r {
            Ok(e) => (e.handle.get(), Operation::accepted(&me, e.op, py)),
            Err(e) => (0, Operation::rejected(&me, &e, py)),
        };
        let placed = if handle == 0 { None } else { session.ok().flatten() };
        Bound::new(
            py,
            Map { core: Core::new(me, handle, Some(Py::new(py, op)?), None), fetched: Mutex::new(Vec::new()), placed },
        )
    }

    /// The next group of a map session, or `None` at the end.
    #[pyo3(signature = (mapping, timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, mapping, timeout=ovstage.TIMEOUT_INFINITE)")]
    pub(crate) fn fetch_map_next<'py>(
        slf: &Bound<'py, Self>,
        mapping: &Bound<'py, PyAny>,
        timeout: args::TimeoutArg,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let t = timeout.0;
        let m = mapping.cast::<Map>().map_err(|_| PyTypeError::new_err("mapping must be a Map"))?;
        let h = m.get().core.live("Map")?;
        let stage = slf.get().stage("fetch_map_next")?;
        let mh = MapHandle::from_raw(h).ok_or_else(|| {
            ovstage_error(Status::InvalidArgument as u32, "fetch_map_next: the map was rejected at enqueue (handle 0)")
        })?;
        match py.detach(|| stage.fetch_map_next(mh, t)) {
            Ok(Some(g)) => {
                let (me, map) = (slf.clone().unbind(), m.clone().unbind());
                let group = match m.get().placed.and_then(|p| p.device().map(|n| (n, p.placement.stream))) {
                    // SAFETY: the placement's stream is the caller's live
                    // handle (the API's contract).
                    Some((n, stream)) => match unsafe { MapGroup::on_device(me, map, g, n, stream) } {
                        Ok(group) => group,
                        Err(refused) => {
                            let (e, g) = *refused;
                            // Kept as a host group: the session's commit
                            // still finds it, unchanged.
                            let kept = Py::new(py, MapGroup::new(slf.clone().unbind(), m.clone().unbind(), g))?;
                            if let Ok(mut f) = m.get().fetched.lock() {
                                f.push(kept);
                            }
                            return Err(to_py(&e));
                        }
                    },
                    None => MapGroup::new(me, map, g),
                };
                let g = Py::new(py, group)?;
                if let Ok(mut f) = m.get().fetched.lock() {
                    f.push(g.clone_ref(py));
                }
                Ok(g.into_any())
            }
            Ok(None) => Ok(py.None()),
            Err(e) if matches!(e.status(), Status::Timeout | Status::InvalidHandle) => Err(to_py(&e)),
            Err(e) => Err(ovstage_error(Status::InvalidArgument as u32, e.message().to_owned())),
        }
    }

    /// Commits one map group.
    #[pyo3(signature = (mapping, group, cuda_event = None, cuda_stream = None))]
    pub(crate) fn unmap_group<'py>(
        slf: &Bound<'py, Self>,
        mapping: &Bound<'py, PyAny>,
        group: &Bound<'py, PyAny>,
        cuda_event: Option<&Bound<'py, PyAny>>,
        cuda_stream: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Operation>> {
        let py = slf.py();
        let sync = commit_sync(cuda_event, cuda_stream)?;
        let m = mapping.cast::<Map>().map_err(|_| PyTypeError::new_err("mapping must be a Map"))?;
        let g = group
            .cast::<MapGroup>()
            .map_err(|_| PyTypeError::new_err(format!("group must be a MapGroup, got {}", type_name(group))))?;
        let h = m.get().core.live("Map")?;
        if !g.get().map().is(m) {
            return Err(PyValueError::new_err("the group belongs to another map session"));
        }
        let stage = slf.get().stage("unmap_group")?;
        let mh =
            MapHandle::from_raw(h).ok_or_else(|| invalid_handle("unmap_group: the map was rejected at enqueue"))?;
        if let Err(e) = g.get().bring_back(sync) {
            return Operation::from_result(&slf.clone().unbind(), Err(e), py).into_object(py);
        }
        let Some(inner) = g.get().take_for_commit() else {
            return Err(invalid_handle("unmap_group: the group was already unmapped"));
        };
        let r = stage.unmap_group(mh, inner).and_then(|op| after_commit(&stage, op, m.get().placed, "unmap_group"));
        if let Ok(mut f) = m.get().fetched.lock() {
            f.retain(|x| !x.is(g));
        }
        Operation::from_result(&slf.clone().unbind(), r, py).into_object(py)
    }

    /// Commits everything not committed yet and ends the session.
    #[pyo3(signature = (mapping, cuda_event = None, cuda_stream = None))]
    pub(crate) fn unmap_attribute<'py>(
        slf: &Bound<'py, Self>,
        mapping: &Bound<'py, PyAny>,
        cuda_event: Option<&Bound<'py, PyAny>>,
        cuda_stream: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Operation>> {
        let sync = commit_sync(cuda_event, cuda_stream)?;
        Stage::unmap_session(slf, mapping, sync)
    }

    // ---- floors

    /// Enqueues a write-floor advance to `ordinal` in `scope`.
    #[pyo3(signature = (ordinal, scope = None, attributes = None))]
    #[pyo3(text_signature = "($self, ordinal, scope=ovstage.Scope.ALL, attributes=None)")]
    fn advance_write_floor<'py>(
        slf: &Bound<'py, Self>,
        ordinal: &Bound<'py, PyAny>,
        scope: Option<&Bound<'py, PyAny>>,
        attributes: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Operation>> {
        let py = slf.py();
        let ordinal = args::u64_arg(ordinal, "ordinal")?;
        let scope = args::closed_enum_opt(scope, "scope", "Scope", args::SCOPES)?;
        let attrs = match attributes.filter(|a| !a.is_none()) {
            Some(a) => args::token_list(a, "attributes")?,
            None => vec![],
        };
        let stage = slf.get().stage("advance_write_floor")?;
        let r = (|| {
            let refs = tokens(&attrs, "attributes")?;
            let scope = match scope {
                0 => FloorScope::All,
                1 => FloorScope::Include(refs),
                _ => FloorScope::Exclude(refs),
            };
            stage.advance_write_floor(ordinal, scope)
        })();
        Operation::from_result(&slf.clone().unbind(), r, py).into_object(py)
    }

    /// Queries an attribute's effective write floor (`None`: the global floor).
    #[pyo3(signature = (attribute = None))]
    fn get_attribute_write_floor<'py>(
        slf: &Bound<'py, Self>,
        attribute: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, OrdinalQuery>> {
        let attr = match attribute.filter(|a| !a.is_none()) {
            Some(a) if a.is_instance_of::<pyo3::types::PyFloat>() => {
                return Err(PyTypeError::new_err("attribute must be an int, got float"));
            }
            Some(a) => Some(Attr::from(a, "attribute")?),
            None => None,
        };
        let stage = slf.get().stage("get_attribute_write_floor")?;
        let r = (|| {
            let a = match &attr {
                Some(a) => Some(a.as_ref()?),
                None => None,
            };
            stage.get_attribute_write_floor(a)
        })();
        ordinal_query(slf, r.map(|e| (e.handle.get(), e.op)))
    }

    /// Queries the oldest preserved ordinal (the retention frontier).
    fn get_oldest_preserved_ordinal<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, OrdinalQuery>> {
        let stage = slf.get().stage("get_oldest_preserved_ordinal")?;
        ordinal_query(slf, stage.get_oldest_preserved_ordinal().map(|e| (e.handle.get(), e.op)))
    }

    /// The ordinal of an ordinal query (waits up to `timeout`).
    #[pyo3(signature = (ordinal_query, timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, ordinal_query, timeout=ovstage.TIMEOUT_INFINITE)")]
    pub(crate) fn fetch_ordinal(
        slf: &Bound<'_, Self>,
        ordinal_query: &Bound<'_, PyAny>,
        timeout: args::TimeoutArg,
    ) -> PyResult<u64> {
        let py = slf.py();
        let t = timeout.0;
        let h = handle_of::<OrdinalQuery>(ordinal_query, "ordinal_query", |q| &q.core)?;
        let stage = slf.get().stage("fetch_ordinal")?;
        let q = OrdinalQueryHandle::from_raw(h)
            .ok_or_else(|| ovstage_error(Status::InvalidArgument as u32, "fetch_ordinal: handle 0"))?;
        Ok(py.detach(|| stage.fetch_ordinal(q, t)).py()?.get())
    }

    /// Enqueues the release of an ordinal query.
    #[pyo3(name = "release_ordinal_query")]
    pub(crate) fn release_ordinal_query_obj<'py>(
        slf: &Bound<'py, Self>,
        ordinal_query: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Operation>> {
        release_with(
            slf,
            ordinal_query,
            "release_ordinal_query",
            |q: &OrdinalQuery| &q.core,
            |s, h| match OrdinalQueryHandle::from_raw(h) {
                Some(q) => s.release_ordinal_query(q),
                None => Err(Error::invalid_argument("release_ordinal_query: handle 0")),
            },
        )
    }

    // ---- clone

    /// Enqueues a clone of the subtree at `source_path` to each target path.
    fn _clone_async<'py>(
        slf: &Bound<'py, Self>,
        source_path: &Bound<'py, PyAny>,
        target_paths: &Bound<'py, PyAny>,
        ordinal: &Bound<'py, PyAny>,
        op_class: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let src: String = source_path
            .cast::<PyString>()
            .map_err(|_| PyTypeError::new_err("source_path must be a str"))?
            .to_str()?
            .to_owned();
        let targets: Vec<String> = args::items(target_paths, "target_paths")?
            .iter()
            .map(|t| {
                t.cast::<PyString>()
                    .map_err(|_| PyTypeError::new_err("target_paths entries must be str"))
                    .and_then(|s| Ok(s.to_str()?.to_owned()))
            })
            .collect::<PyResult<_>>()?;
        let ordinal = args::u64_arg(ordinal, "ordinal")?;
        let stage = slf.get().stage("clone")?;
        let r = (|| {
            let s = stage.paths().intern_path(&src)?;
            let t = stage.paths().intern_paths(&targets)?;
            stage.clone_subtree(s, &t, ordinal)
        })();
        let (status, op_id, msg) = match r {
            Ok(op) => (0u32, op.get(), String::new()),
            Err(e) => (e.status() as u32, 0, e.message().to_owned()),
        };
        op_class.call1((slf, status, op_id, msg))
    }

    /// The report of a clone op (while it is tracked).
    #[pyo3(signature = (op_or_id, timeout = args::TimeoutArg::INFINITE))]
    #[pyo3(text_signature = "($self, op_or_id, timeout=ovstage.TIMEOUT_INFINITE)")]
    fn fetch_clone_result<'py>(
        slf: &Bound<'py, Self>,
        op_or_id: &Bound<'py, PyAny>,
        timeout: args::TimeoutArg,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let t = timeout.0;
        let id = match op_or_id.cast::<Operation>() {
            Ok(o) => o.get().op().map(|o| o.get()).unwrap_or(0),
            Err(_) => args::u64_arg(op_or_id, "op_id")?,
        };
        let stage = slf.get().stage("fetch_clone_result")?;
        let op = OpId::from_raw(id)
            .ok_or_else(|| ovstage_error(Status::InvalidArgument as u32, "fetch_clone_result: op id 0"))?;
        let r = py.detach(|| stage.fetch_clone_result(op, t)).py()?;
        values_mod(py)?.getattr("CloneResult")?.call1((
            r.prims_cloned,
            r.target_count,
            r.source_prim_count,
            r.ordinal.get(),
        ))
    }

    // ---- hierarchy

    /// Enqueues a hierarchy lookup for each path of the list.
    fn get_hierarchy_async<'py>(
        slf: &Bound<'py, Self>,
        path_list: &Bound<'py, PyAny>,
        ordinal: &Bound<'py, PyAny>,
        relation: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Hierarchy>> {
        let py = slf.py();
        let list = args::u64_arg(path_list, "path_list")?;
        let ordinal = args::u64_arg(ordinal, "ordinal")?;
        let relation = args::i32_arg(relation, "relation")?;
        let stage = slf.get().stage("get_hierarchy")?;
        let r = (|| {
            let rel = u32::try_from(relation).ok().and_then(HierarchyRelation::from_raw).ok_or_else(|| {
                Error::invalid_argument(format!(
                    "get_hierarchy: relation {relation} is not PARENT, CHILDREN or SIBLINGS"
                ))
            })?;
            let l = PathList::from_raw(list).ok_or_else(|| Error::invalid_argument("get_hierarchy: path list 0"))?;
            stage.get_hierarchy(l, ordinal, rel)
        })();
        let me: Py<Stage> = slf.clone().unbind();
        let (handle, op) = match r {
            Ok(e) => (e.handle.get(), Operation::accepted(&me, e.op, py)),
            Err(e) => (0, Operation::rejected(&me, &e, py)),
        };
        Bound::new(py, Hierarchy { core: Core::new(me, handle, Some(Py::new(py, op)?), None) })
    }

    /// The result of a hierarchy lookup (waits).
    pub(crate) fn fetch_hierarchy_result<'py>(
        slf: &Bound<'py, Self>,
        hierarchy: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let h = handle_of::<Hierarchy>(hierarchy, "hierarchy", |h| &h.core)?;
        let stage = slf.get().stage("fetch_hierarchy_result")?;
        let hh = HierarchyHandle::from_raw(h)
            .ok_or_else(|| ovstage_error(Status::InvalidArgument as u32, "fetch_hierarchy_result: handle 0"))?;
        let r = py.detach(|| stage.fetch_hierarchy_result(hh, Timeout::INFINITE)).py()?;
        let m = values_mod(py)?;
        let item_cls = m.getattr("HierarchyItem")?;
        let items = r
            .items
            .iter()
            .map(|it| {
                let paths: Vec<String> = it.paths.iter().map(|p| path_text(&stage, *p)).collect();
                item_cls.call1((it.status as u32, PyTuple::new(py, paths)?))
            })
            .collect::<PyResult<Vec<_>>>()?;
        m.getattr("HierarchyResult")?.call1((r.ordinal.get(), items))
    }

    /// Enqueues the release of a hierarchy handle.
    #[pyo3(name = "release_hierarchy")]
    pub(crate) fn release_hierarchy_obj<'py>(
        slf: &Bound<'py, Self>,
        hierarchy: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Operation>> {
        release_with(
            slf,
            hierarchy,
            "release_hierarchy",
            |h: &Hierarchy| &h.core,
            |s, h| match HierarchyHandle::from_raw(h) {
                Some(h) => s.release_hierarchy(h),
                None => Err(Error::invalid_argument("release_hierarchy: handle 0")),
            },
        )
    }

    /// World matrices from local ones along the hierarchy (an op): CPU
    /// models on the CPU; the GPU models too where the process has a CUDA
    /// device (the op fails without one, as the published library's).
    #[pyo3(signature = (input_ordinal, output_ordinal, model = None))]
    #[pyo3(
        text_signature = "($self, input_ordinal, output_ordinal, model=ovstage.HierarchyComputationModel.DEFAULT_CPU)"
    )]
    fn compute_hierarchy_async<'py>(
        slf: &Bound<'py, Self>,
        input_ordinal: &Bound<'py, PyAny>,
        output_ordinal: &Bound<'py, PyAny>,
        model: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Operation>> {
        let py = slf.py();
        let input = args::u64_arg(input_ordinal, "input_ordinal")?;
        let out = args::u64_arg(output_ordinal, "output_ordinal")?;
        let model = match model.filter(|m| !m.is_none()) {
            Some(m) => args::i32_arg(m, "model")?,
            None => 1,
        };
        let stage = slf.get().stage("compute_hierarchy")?;
        let cuda_device = || ovstage_backend_cuda::probe_device(0).map(|_| ()).map_err(|e| e.to_string());
        let r = ovstage::ComputationModel::from_id(i64::from(model), cuda_device)
            .map_err(|e| e.prefixed("compute_hierarchy"))
            .and_then(|m| stage.compute_hierarchy_with(m, input, out));
        Operation::from_result(&slf.clone().unbind(), r, py).into_object(py)
    }

    /// The hierarchy computation models, as `(model_id, name, description)`.
    #[staticmethod]
    fn _hierarchy_computation_models() -> Vec<(u32, &'static str, &'static str)> {
        ovstage::COMPUTATION_MODELS.to_vec()
    }

    // ---- path dictionary (raising OvxError)

    fn _intern_token(&self, s: &Bound<'_, PyAny>) -> PyResult<u64> {
        let s = s
            .cast::<PyString>()
            .map_err(|_| PyTypeError::new_err(format!("string must be a str, got {}", type_name(s))))?;
        let stage = self.stage("intern_token").map_err(|_| ovx_error("the Stage was destroyed"))?;
        stage.paths().intern_token(s.to_str()?).map(|t| t.get()).map_err(|e| ovx_error(e.message().to_owned()))
    }
    fn _token_to_string(&self, t: &Bound<'_, PyAny>) -> PyResult<String> {
        let t = args::u64_arg(t, "token")?;
        let stage = self.stage("token_to_string").map_err(|_| ovx_error("the Stage was destroyed"))?;
        Ok(Token::from_raw(t).and_then(|t| stage.paths().token_text(t).ok()).map(|s| s.to_string()).unwrap_or_default())
    }
    fn _intern_path(&self, s: &Bound<'_, PyAny>) -> PyResult<u64> {
        let s = s
            .cast::<PyString>()
            .map_err(|_| PyTypeError::new_err(format!("path must be a str, got {}", type_name(s))))?;
        let stage = self.stage("intern_path").map_err(|_| ovx_error("the Stage was destroyed"))?;
        if !s.to_str()?.starts_with('/') {
            return Err(ovx_error(format!("intern_path: {:?} is not an absolute path", s.to_str()?)));
        }
        stage.paths().intern_path(s.to_str()?).map(|p| p.get()).map_err(|e| ovx_error(e.message().to_owned()))
    }
    fn _path_to_string(&self, p: &Bound<'_, PyAny>) -> PyResult<String> {
        let p = args::u64_arg(p, "primpath")?;
        let stage = self.stage("path_to_string").map_err(|_| ovx_error("the Stage was destroyed"))?;
        let p = PrimPath::from_raw(p).ok_or_else(|| ovx_error("prim path 0 is invalid"))?;
        stage.paths().path_text(p).map(|s| s.to_string()).map_err(|e| ovx_error(e.message().to_owned()))
    }
    fn _create_path_list(&self, paths: &Bound<'_, PyAny>) -> PyResult<u64> {
        let ids = args::uint_list(paths, "primpaths", 64)?;
        let stage = self.stage("create_path_list").map_err(|_| ovx_error("the Stage was destroyed"))?;
        let ps = ids
            .iter()
            .map(|p| PrimPath::from_raw(*p).ok_or_else(|| ovx_error("prim path 0 is invalid")))
            .collect::<PyResult<Vec<_>>>()?;
        stage.paths().create_path_list(&ps).map(|l| l.get()).map_err(|e| ovx_error(e.message().to_owned()))
    }
    fn _create_path_list_from_strings(&self, paths: &Bound<'_, PyAny>) -> PyResult<u64> {
        let strs: Vec<String> = args::items(paths, "paths")?
            .iter()
            .map(|p| {
                p.cast::<PyString>()
                    .map_err(|_| PyTypeError::new_err(format!("paths entries must be str, got {}", type_name(p))))
                    .and_then(|s| Ok(s.to_str()?.to_owned()))
            })
            .collect::<PyResult<_>>()?;
        let stage = self.stage("create_path_list_from_strings").map_err(|_| ovx_error("the Stage was destroyed"))?;
        if let Some(p) = strs.iter().find(|p| !p.starts_with('/')) {
            return Err(ovx_error(format!("create_path_list_from_strings: {p:?} is not an absolute path")));
        }
        stage
            .paths()
            .create_path_list_from_strings(&strs)
            .map(|l| l.get())
            .map_err(|e| ovx_error(e.message().to_owned()))
    }
    fn _path_list_op(&self, op: &str, list: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = list.py();
        let id = args::u64_arg(list, "path_list")?;
        let stage = self.stage(op).map_err(|_| ovx_error("the Stage was destroyed"))?;
        let l = PathList::from_raw(id).ok_or_else(|| ovx_error("path list 0 is invalid"))?;
        let d = stage.paths();
        let e = |e: Error| ovx_error(e.message().to_owned());
        Ok(match op {
            "add" => {
                d.add_path_list_reference(l).map_err(e)?;
                py.None()
            }
            "release" => {
                d.release_path_list_reference(l).map_err(e)?;
                py.None()
            }
            "count" => d.path_list_len(l).map_err(e)?.into_pyobject(py)?.into_any().unbind(),
            "paths" => d
                .path_list_paths(l)
                .map_err(e)?
                .iter()
                .map(|p| p.get())
                .collect::<Vec<_>>()
                .into_pyobject(py)?
                .into_any()
                .unbind(),
            "strings" => {
                let ps = d.path_list_paths(l).map_err(e)?;
                let v = ps
                    .iter()
                    .map(|p| d.path_text(*p).map(|s| s.to_string()))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(e)?;
                v.into_pyobject(py)?.into_any().unbind()
            }
            _ => return Err(PyValueError::new_err("unknown path-list op")),
        })
    }

    // ---- test hooks

    /// Test hook: enqueues a write whose execution blocks until the returned
    /// latch is opened (`latch.open()`), to observe a pending op.
    fn _pending_write<'py>(
        slf: &Bound<'py, Self>,
        query: &Bound<'py, PyAny>,
        attribute: &Bound<'py, PyAny>,
        ordinal: &Bound<'py, PyAny>,
        array: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, Operation>, Bound<'py, crate::latch::Latch>)> {
        let py = slf.py();
        let q = query_arg(query)?;
        let attr = Attr::from(attribute, "attribute")?;
        let ordinal = args::u64_arg(ordinal, "ordinal")?;
        let (latch, tensor) = crate::latch::Latch::tensor(py, array)?;
        let stage = slf.get().stage("_pending_write")?;
        let r = stage.write_attribute(
            raw_query(q).py()?,
            attr.as_ref().py()?,
            ordinal,
            WriteData::fixed(tensor),
            PrimMode::Upsert,
        );
        Ok((Operation::from_result(&slf.clone().unbind(), r, py).into_object(py)?, Bound::new(py, latch)?))
    }
}

impl Stage {
    /// `Map.unmap()`: commits fetched groups not committed yet (and the
    /// unfetched ones) and ends the session.
    pub(crate) fn unmap_obj<'py>(
        slf: &Bound<'py, Self>,
        mapping: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Operation>> {
        Stage::unmap_session(slf, mapping, CudaSync::NONE)
    }

    /// Ends a map session, committing its uncommitted groups after `sync`
    /// (for a session on a device).
    fn unmap_session<'py>(
        slf: &Bound<'py, Self>,
        mapping: &Bound<'py, PyAny>,
        sync: CudaSync,
    ) -> PyResult<Bound<'py, Operation>> {
        let py = slf.py();
        let m = mapping.cast::<Map>().map_err(|_| PyTypeError::new_err("mapping must be a Map"))?;
        let stage = slf.get().stage("unmap_attribute")?;
        let core = &m.get().core;
        let h = core.mark_released("Map")?;
        let Some(mh) = MapHandle::from_raw(h) else {
            core.unmark();
            return Err(invalid_handle("unmap_attribute: the map was rejected at enqueue (handle 0)"));
        };
        let groups: Vec<Py<MapGroup>> = m.get().fetched.lock().map(|mut f| std::mem::take(&mut *f)).unwrap_or_default();
        if let Some(e) = groups.iter().find_map(|g| g.get().bring_back(sync).err()) {
            if let Ok(mut f) = m.get().fetched.lock() {
                f.extend(groups);
            }
            core.unmark();
            return Operation::from_result(&slf.clone().unbind(), Err(e), py).into_object(py);
        }
        let inner: Vec<ovstage::MapGroup> = groups.iter().filter_map(|g| g.get().take_for_commit()).collect();
        let r =
            stage.unmap_attribute(mh, inner).and_then(|op| after_commit(&stage, op, m.get().placed, "unmap_attribute"));
        if r.is_err() {
            core.unmark();
        }
        Operation::from_result(&slf.clone().unbind(), r, py).into_object(py)
    }
}

fn ordinal_query<'py>(slf: &Bound<'py, Stage>, r: ovstage::Result<(u64, OpId)>) -> PyResult<Bound<'py, OrdinalQuery>> {
    let py = slf.py();
    let me: Py<Stage> = slf.clone().unbind();
    let (handle, op) = match r {
        Ok((h, op)) => (h, Operation::accepted(&me, op, py)),
        Err(e) => (0, Operation::rejected(&me, &e, py)),
    };
    Bound::new(py, OrdinalQuery { core: Core::new(me, handle, Some(Py::new(py, op)?), None) })
}

/// A release through a handle object (marked released at once, unmarked
/// when the runtime refuses) or a raw handle.
fn release_with<'py, T>(
    slf: &Bound<'py, Stage>,
    obj: &Bound<'py, PyAny>,
    call: &str,
    core: impl Fn(&T) -> &Core,
    release: impl FnOnce(&ovstage::Stage, u64) -> ovstage::Result<OpId>,
) -> PyResult<Bound<'py, Operation>>
where
    T: pyo3::PyClass<Frozen = pyo3::pyclass::boolean_struct::True> + Sync,
{
    let py = slf.py();
    let stage = slf.get().stage(call)?;
    let me: Py<Stage> = slf.clone().unbind();
    if let Ok(h) = obj.cast::<T>() {
        let c = core(h.get());
        let handle = c.mark_released(call)?;
        let r = release(&stage, handle);
        if r.is_err() {
            c.unmark();
        }
        return Operation::from_result(&me, r, py).into_object(py);
    }
    let handle = args::u64_arg(obj, call)?;
    Operation::from_result(&me, release(&stage, handle), py).into_object(py)
}
