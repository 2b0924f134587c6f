//! Argument checks shared by every call: integers through `__index__`
//! with the argument named in messages, timeouts, closed enums, handles.

use ovstage::Timeout;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString, PyTuple};

/// The type name of `obj`, for messages.
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".to_owned())
}

/// `obj` as a Python int (through `__index__`), or `TypeError` naming `name`.
fn index<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Bound<'py, PyInt>> {
    if let Ok(i) = obj.cast::<PyInt>() {
        return Ok(i.clone());
    }
    if obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyString>() || !obj.hasattr("__index__")? {
        return Err(PyTypeError::new_err(format!("{name} must be an int, got {}", type_name(obj))));
    }
    let v = obj.call_method0("__index__")?;
    v.cast_into::<PyInt>().map_err(|_| PyTypeError::new_err(format!("{name}.__index__ did not return an int")))
}

/// An unsigned integer argument of at most `bits` bits.
pub(crate) fn uint(obj: &Bound<'_, PyAny>, name: &str, bits: u32) -> PyResult<u64> {
    if obj.is_exact_instance_of::<PyInt>() {
        // The usual argument, an exact int, read without the `__index__`
        // protocol's new reference and error round trip (about 80
        // instructions of a write's enqueue, twice).
        // SAFETY: `obj` is a live int object and the GIL is held.
        let v = unsafe { pyo3::ffi::PyLong_AsUnsignedLongLong(obj.as_ptr()) };
        if v != u64::MAX {
            if bits >= 64 || v >> bits == 0 {
                return Ok(v);
            }
        } else {
            // u64::MAX itself, or an error (negative, too large): the
            // general path below tells which and words the message.
            // SAFETY: the GIL is held.
            unsafe { pyo3::ffi::PyErr_Clear() };
        }
    }
    let i = index(obj, name)?;
    match i.extract::<u64>() {
        Ok(v) if bits >= 64 || v >> bits == 0 => Ok(v),
        _ => {
            let negative = i.lt(0)?;
            Err(PyValueError::new_err(if negative {
                format!("{name} must not be negative, got {i}")
            } else {
                format!("{name} must fit in {bits} bits, got {i}")
            }))
        }
    }
}

/// A uint64 argument.
pub(crate) fn u64_arg(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    uint(obj, name, 64)
}

/// A uint32 argument.
pub(crate) fn u32_arg(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<u32> {
    Ok(uint(obj, name, 32)? as u32)
}

/// An int32 argument (open enums).
pub(crate) fn i32_arg(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<i32> {
    let i = index(obj, name)?;
    i.extract::<i32>().map_err(|_| PyValueError::new_err(format!("{name} must fit in int32, got {i}")))
}

/// A timeout in nanoseconds (`TIMEOUT_INFINITE` blocks).
pub(crate) fn timeout(obj: &Bound<'_, PyAny>) -> PyResult<Timeout> {
    Ok(Timeout::from_nanos(u64_arg(obj, "timeout")?))
}

/// A closed enum argument: its value must be one of `members` (name,
/// value), checked by value.
pub(crate) fn closed_enum(obj: &Bound<'_, PyAny>, name: &str, class: &str, members: &[(&str, u32)]) -> PyResult<u32> {
    let i = index(obj, name)?;
    let v = i.extract::<i64>().ok();
    if let Some(m) = members.iter().find(|m| Some(i64::from(m.1)) == v) {
        return Ok(m.1);
    }
    let list = members.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(", ");
    Err(PyValueError::new_err(format!("{name} must be a valid {class} ({list}), got {i}")))
}

/// `PrimMode` members.
pub(crate) const PRIM_MODES: &[(&str, u32)] = &[("UPSERT", 0), ("INSERT", 1)];
/// `AttributeMode` members.
pub(crate) const ATTRIBUTE_MODES: &[(&str, u32)] = &[("REJECT", 0), ("FORCE", 1)];
/// `Scope` members.
pub(crate) const SCOPES: &[(&str, u32)] = &[("ALL", 0), ("INCLUDE", 1), ("EXCLUDE", 2)];

/// A strict `bool` argument (`TypeError` for anything else, even `1`).
pub(crate) fn strict_bool(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<bool> {
    obj.cast::<PyBool>()
        .map(|b| b.is_true())
        .map_err(|_| PyTypeError::new_err(format!("{name} must be a bool, got {}", type_name(obj))))
}

/// A sequence argument as a list of items (`TypeError` for a `str` or a
/// non-iterable).
pub(crate) fn items<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!("{name} must be a sequence, not a str")));
    }
    // Lists and tuples, the usual case, without the iterator protocol.
    if let Ok(l) = obj.cast::<PyList>() {
        return Ok(l.iter().collect());
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return Ok(t.iter().collect());
    }
    let it = obj
        .try_iter()
        .map_err(|_| PyTypeError::new_err(format!("{name} must be a sequence, got {}", type_name(obj))))?;
    it.collect()
}

/// `uint` of one entry of the sequence argument `name`; the entry's name
/// for messages is only built on failure.
fn entry_uint(x: &Bound<'_, PyAny>, name: &str, bits: u32) -> PyResult<u64> {
    // Exact ints in range, the usual case, skip the general path.
    if x.is_exact_instance_of::<PyInt>()
        && let Ok(v) = x.extract::<u64>()
        && (bits >= 64 || v >> bits == 0)
    {
        return Ok(v);
    }
    uint(x, &format!("{name} entries"), bits)
}

/// Unsigned integers of a sequence (numpy integer arrays included).
pub(crate) fn uint_list(obj: &Bound<'_, PyAny>, name: &str, bits: u32) -> PyResult<Vec<u64>> {
    items(obj, name)?.iter().map(|x| entry_uint(x, name, bits)).collect()
}

/// Tokens of a sequence (`TypeError: {name} entries must be ints` for a `str`).
pub(crate) fn token_list(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<u64>> {
    items(obj, name)?
        .iter()
        .map(|x| {
            if x.is_instance_of::<PyString>() {
                Err(PyTypeError::new_err(format!("{name} entries must be ints")))
            } else {
                entry_uint(x, name, 64)
            }
        })
        .collect()
}

/// A `timeout=` argument (nanoseconds; checked like every uint64).
#[derive(Copy, Clone, Debug)]
pub(crate) struct TimeoutArg(pub(crate) Timeout);

impl TimeoutArg {
    /// The default: block until done.
    pub(crate) const INFINITE: TimeoutArg = TimeoutArg(Timeout::INFINITE);
}

impl<'a, 'py> FromPyObject<'a, 'py> for TimeoutArg {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        timeout(&obj.to_owned()).map(TimeoutArg)
    }
}

/// A closed enum argument that may be omitted (`None`: the first member).
pub(crate) fn closed_enum_opt(
    obj: Option<&Bound<'_, PyAny>>,
    name: &str,
    class: &str,
    members: &[(&str, u32)],
) -> PyResult<u32> {
    match obj {
        Some(o) => closed_enum(o, name, class, members),
        None => Ok(members[0].1),
    }
}
