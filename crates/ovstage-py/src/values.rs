//! The value classes the hot calls take as arguments, `OrdinalRange` and
//! `WriteDesc`, native so that building one and handing it to
//! `read_attributes`/`write_attributes` costs no Python-level attribute
//! lookups. They keep the published dataclasses' behaviour: constructor
//! signature, mutable fields holding whatever was assigned (validated when
//! used), value equality, `repr`, unhashable, picklable.

use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyAny, PyTuple};

use crate::args;

/// `==` of two field lists, compared as tuples as a dataclass does (so a
/// field holding the same array object on both sides compares equal).
fn fields_eq(a: &[&Py<PyAny>], b: &[&Py<PyAny>], py: Python<'_>) -> PyResult<bool> {
    let a = PyTuple::new(py, a.iter().map(|x| x.clone_ref(py)))?;
    let b = PyTuple::new(py, b.iter().map(|x| x.clone_ref(py)))?;
    a.eq(b)
}

/// What `==` and `!=` return for field equality `eq` (other comparisons
/// are not defined: `NotImplemented`).
fn equality_result(op: CompareOp, eq: bool, py: Python<'_>) -> PyResult<Py<PyAny>> {
    match op {
        CompareOp::Eq => Ok(eq.into_pyobject(py)?.to_owned().into_any().unbind()),
        CompareOp::Ne => Ok((!eq).into_pyobject(py)?.to_owned().into_any().unbind()),
        _ => Ok(py.NotImplemented()),
    }
}

/// `Name(field=repr, ...)`.
fn repr_of(py: Python<'_>, class: &str, fields: &[(&str, &Py<PyAny>)]) -> PyResult<String> {
    let parts = fields.iter().map(|(n, v)| Ok(format!("{n}={}", v.bind(py).repr()?))).collect::<PyResult<Vec<_>>>()?;
    Ok(format!("{class}({})", parts.join(", ")))
}

/// What a read returns: a snapshot at `end_ordinal` (`start_ordinal is
/// None`) or the changes in `[start_ordinal, end_ordinal]`.
#[pyclass(module = "ovstage", name = "OrdinalRange")]
pub(crate) struct OrdinalRange {
    /// The snapshot ordinal, or the last ordinal of a change range.
    #[pyo3(get, set)]
    pub(crate) end_ordinal: Py<PyAny>,
    /// `None` for a snapshot; the first ordinal of a change range.
    #[pyo3(get, set)]
    pub(crate) start_ordinal: Py<PyAny>,
}

#[pymethods]
impl OrdinalRange {
    #[new]
    #[pyo3(signature = (end_ordinal, start_ordinal = None))]
    fn new(py: Python<'_>, end_ordinal: Py<PyAny>, start_ordinal: Option<Py<PyAny>>) -> Self {
        OrdinalRange { end_ordinal, start_ordinal: start_ordinal.unwrap_or_else(|| py.None()) }
    }

    /// The values as of `end_ordinal` (`2**64 - 1`: the current sealed values).
    #[classmethod]
    fn latest(cls: &Bound<'_, pyo3::types::PyType>, end_ordinal: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let e = args::u64_arg(end_ordinal, "end_ordinal")?;
        let py = cls.py();
        Ok(cls.call1((e, py.None()))?.unbind())
    }

    /// The cells changed in `[start_ordinal, end_ordinal]` (both ends included).
    #[classmethod]
    fn between(
        cls: &Bound<'_, pyo3::types::PyType>,
        start_ordinal: &Bound<'_, PyAny>,
        end_ordinal: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let s = args::u64_arg(start_ordinal, "start_ordinal")?;
        let e = args::u64_arg(end_ordinal, "end_ordinal")?;
        if s > e {
            return Err(pyo3::exceptions::PyValueError::new_err(format!("start_ordinal {s} is above end_ordinal {e}")));
        }
        Ok(cls.call1((e, s))?.unbind())
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let Ok(o) = other.cast::<OrdinalRange>() else { return Ok(py.NotImplemented()) };
        let o = o.borrow();
        let eq = fields_eq(&[&self.end_ordinal, &self.start_ordinal], &[&o.end_ordinal, &o.start_ordinal], py)?;
        equality_result(op, eq, py)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr_of(py, "OrdinalRange", &[("end_ordinal", &self.end_ordinal), ("start_ordinal", &self.start_ordinal)])
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let me = slf.borrow();
        let py = slf.py();
        let fields = PyTuple::new(py, [me.end_ordinal.clone_ref(py), me.start_ordinal.clone_ref(py)])?;
        PyTuple::new(py, [slf.get_type().into_any(), fields.into_any()])
    }

    /// Value objects compare by fields and are mutable: not hashable.
    #[classattr]
    #[allow(non_upper_case_globals)]
    const __hash__: Option<()> = None;
}

static ENUMS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// A member of one of the package's enums (`ovstage._enums`).
fn enum_member(py: Python<'_>, class: &str, member: &str) -> PyResult<Py<PyAny>> {
    let m = ENUMS.get_or_try_init(py, || Ok::<_, PyErr>(py.import("ovstage._enums")?.into_any().unbind()))?;
    Ok(m.bind(py).getattr(class)?.getattr(member)?.unbind())
}

/// One entry of `Stage.write_attributes`: validated like
/// `write_attribute`'s arguments when submitted.
#[pyclass(module = "ovstage", name = "WriteDesc")]
pub(crate) struct WriteDesc {
    /// The attribute: a token or a name.
    #[pyo3(get, set)]
    pub(crate) attribute: Py<PyAny>,
    /// The payload (any form `write_attribute` accepts).
    #[pyo3(get, set)]
    pub(crate) tensors: Py<PyAny>,
    /// Whether the attribute holds arrays.
    #[pyo3(get, set)]
    pub(crate) is_array: Py<PyAny>,
    /// Optional index map.
    #[pyo3(get, set)]
    pub(crate) index_map: Py<PyAny>,
    /// Optional mask words.
    #[pyo3(get, set)]
    pub(crate) mask: Py<PyAny>,
    /// Optional element count.
    #[pyo3(get, set)]
    pub(crate) count: Py<PyAny>,
    /// CUDA event the copy of a CUDA payload waits for (0: none; set with a
    /// host payload: `NOT_SUPPORTED`).
    #[pyo3(get, set)]
    pub(crate) cuda_event: Py<PyAny>,
    /// CUDA stream whose queued work the copy of a CUDA payload follows (0:
    /// none; set with a host payload: `NOT_SUPPORTED`).
    #[pyo3(get, set)]
    pub(crate) cuda_stream: Py<PyAny>,
    /// The attribute's semantic.
    #[pyo3(get, set)]
    pub(crate) semantic: Py<PyAny>,
    /// REJECT or FORCE.
    #[pyo3(get, set)]
    pub(crate) attribute_mode: Py<PyAny>,
}

impl WriteDesc {
    fn fields(&self) -> [(&'static str, &Py<PyAny>); 10] {
        [
            ("attribute", &self.attribute),
            ("tensors", &self.tensors),
            ("is_array", &self.is_array),
            ("index_map", &self.index_map),
            ("mask", &self.mask),
            ("count", &self.count),
            ("cuda_event", &self.cuda_event),
            ("cuda_stream", &self.cuda_stream),
            ("semantic", &self.semantic),
            ("attribute_mode", &self.attribute_mode),
        ]
    }
}

#[pymethods]
impl WriteDesc {
    #[new]
    #[pyo3(signature = (
        attribute, tensors, is_array, index_map = None, mask = None, count = None, cuda_event = None,
        cuda_stream = None, semantic = None, attribute_mode = None
    ), text_signature = "(attribute, tensors, is_array, index_map=None, mask=None, count=None, cuda_event=None, cuda_stream=None, semantic=AttributeSemantic.NONE, attribute_mode=AttributeMode.REJECT)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        attribute: Py<PyAny>,
        tensors: Py<PyAny>,
        is_array: Py<PyAny>,
        index_map: Option<Py<PyAny>>,
        mask: Option<Py<PyAny>>,
        count: Option<Py<PyAny>>,
        cuda_event: Option<Py<PyAny>>,
        cuda_stream: Option<Py<PyAny>>,
        semantic: Option<Py<PyAny>>,
        attribute_mode: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let none = |o: Option<Py<PyAny>>| o.unwrap_or_else(|| py.None());
        let semantic = match semantic {
            Some(s) => s,
            None => enum_member(py, "AttributeSemantic", "NONE")?,
        };
        let attribute_mode = match attribute_mode {
            Some(m) => m,
            None => enum_member(py, "AttributeMode", "REJECT")?,
        };
        Ok(WriteDesc {
            attribute,
            tensors,
            is_array,
            index_map: none(index_map),
            mask: none(mask),
            count: none(count),
            cuda_event: none(cuda_event),
            cuda_stream: none(cuda_stream),
            semantic,
            attribute_mode,
        })
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let Ok(o) = other.cast::<WriteDesc>() else { return Ok(py.NotImplemented()) };
        let o = o.borrow();
        let (a, b) = (self.fields().map(|f| f.1), o.fields().map(|f| f.1));
        equality_result(op, fields_eq(&a, &b, py)?, py)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr_of(py, "WriteDesc", &self.fields())
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let me = slf.borrow();
        let py = slf.py();
        let fields = PyTuple::new(py, me.fields().map(|f| f.1.clone_ref(py)))?;
        PyTuple::new(py, [slf.get_type().into_any(), fields.into_any()])
    }

    /// Value objects compare by fields and are mutable: not hashable.
    #[classattr]
    #[allow(non_upper_case_globals)]
    const __hash__: Option<()> = None;
}
