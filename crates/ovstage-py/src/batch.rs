//! `WriteBatch` (an extension of ours, not in the published API): many
//! small per-prim sets gathered natively and submitted as one
//! `write_attributes` op over one path-list query.
//!
//! A set runs in two phases. The first reads the Python arguments (it may
//! run Python code: `__index__`, numpy) without the batch's lock; the
//! second, under the lock, runs no Python code, so a thread holding the
//! lock never waits for the GIL (no deadlock with a thread holding the GIL
//! and waiting for the lock). Each attribute is a dense column of rows
//! indexed by the batch's prim order plus a bitset of the prims set;
//! `submit` hands the rows to the write as they are (no copy).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use ovstage::{AttrRef, AttributeWrite, DType, DTypeCode, Error, PrimMode, PrimPath, Selection, Token, WriteData};
use ovstage_types::idhash::IdBuild;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyAny, PyBool, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::args::{self, type_name};
use crate::errors::{invalid_handle, ovx_error};
use crate::op::Operation;
use crate::stage::Stage;

/// One value lane read from Python, before conversion to the column's type.
#[derive(Clone, Copy, Debug)]
enum Num {
    F(f64),
    I(i64),
    U(u64),
    B(bool),
}

/// An element type a batch column can hold (one lane).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Elem {
    code: DTypeCode,
    bits: u8,
}

impl Elem {
    const F64: Elem = Elem { code: DTypeCode::Float, bits: 64 };
    const I64: Elem = Elem { code: DTypeCode::Int, bits: 64 };
    const U64: Elem = Elem { code: DTypeCode::UInt, bits: 64 };
    const BOOL: Elem = Elem { code: DTypeCode::Bool, bits: 8 };

    /// From a numpy dtype's kind and item size (`None`: not a number kind
    /// ours reads).
    fn from_numpy(kind: u8, itemsize: usize) -> Option<Elem> {
        let code = crate::payload::numpy_code(kind)?;
        let ok = match code {
            DTypeCode::Float => matches!(itemsize, 2 | 4 | 8),
            DTypeCode::Bool => itemsize == 1,
            _ => matches!(itemsize, 1 | 2 | 4 | 8),
        };
        ok.then_some(Elem { code, bits: (itemsize * 8) as u8 })
    }

    fn bytes(self) -> usize {
        usize::from(self.bits / 8)
    }

    fn dtype(self, lanes: u16) -> DType {
        DType::new(self.code, self.bits, lanes)
    }

    /// numpy's name of the type.
    fn name(self) -> String {
        match self.code {
            DTypeCode::Float => format!("float{}", self.bits),
            DTypeCode::Int => format!("int{}", self.bits),
            DTypeCode::UInt => format!("uint{}", self.bits),
            DTypeCode::Bool => "bool".to_owned(),
            _ => format!("{:?}{}", self.code, self.bits),
        }
    }
}

/// Reads one number of element type `e` at `p`.
///
/// # Safety
/// `p` must point to `e.bytes()` readable bytes.
unsafe fn read_num(e: Elem, p: *const u8) -> Num {
    // SAFETY: the caller guarantees `e.bytes()` readable bytes at `p`;
    // unaligned reads, as numpy data may be unaligned.
    unsafe {
        match (e.code, e.bits) {
            (DTypeCode::Float, 16) => Num::F(ovstage_types::f16_to_f64(p.cast::<u16>().read_unaligned())),
            (DTypeCode::Float, 32) => Num::F(f64::from(p.cast::<f32>().read_unaligned())),
            (DTypeCode::Float, _) => Num::F(p.cast::<f64>().read_unaligned()),
            (DTypeCode::Int, 8) => Num::I(i64::from(p.cast::<i8>().read_unaligned())),
            (DTypeCode::Int, 16) => Num::I(i64::from(p.cast::<i16>().read_unaligned())),
            (DTypeCode::Int, 32) => Num::I(i64::from(p.cast::<i32>().read_unaligned())),
            (DTypeCode::Int, _) => Num::I(p.cast::<i64>().read_unaligned()),
            (DTypeCode::UInt, 8) => Num::U(u64::from(p.read())),
            (DTypeCode::UInt, 16) => Num::U(u64::from(p.cast::<u16>().read_unaligned())),
            (DTypeCode::UInt, 32) => Num::U(u64::from(p.cast::<u32>().read_unaligned())),
            (DTypeCode::UInt, _) => Num::U(p.cast::<u64>().read_unaligned()),
            _ => Num::B(p.read() != 0),
        }
    }
}

/// Double to IEEE half, rounding to nearest even (as numpy converts).
fn f64_to_f16(x: f64) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 48) & 0x8000) as u16;
    let exp = ((b >> 52) & 0x7ff) as i32;
    let man = b & 0x000f_ffff_ffff_ffff;
    if exp == 0x7ff {
        return sign | 0x7c00 | if man != 0 { 0x200 | ((man >> 42) as u16 & 0x3ff) } else { 0 };
    }
    let e = exp - 1023 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    let round = |m: u64, shift: u32| {
        let kept = m >> shift;
        let rem = m & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        if rem > half || (rem == half && kept & 1 == 1) { kept + 1 } else { kept }
    };
    if e <= 0 {
        // A half subnormal (or zero): the value is m * 2^(e - 43) units of 2^-24.
        if e < -10 {
            return sign;
        }
        return sign | round(man | (1u64 << 52), (43 - e) as u32) as u16;
    }
    // A carry out of the mantissa moves into the exponent (up to infinity).
    sign | round(((e as u64) << 52) | man, 42) as u16
}

/// Why a value does not convert (the message names the attribute and prim
/// once known).
enum Bad {
    Type(String),
    Value(String),
}

/// `n` as one lane of `e`, in the first `e.bytes()` bytes of a word.
#[inline]
fn encode(e: Elem, n: Num) -> Result<[u8; 8], Bad> {
    let mut w = [0u8; 8];
    let mut out = Wordbuf(&mut w, 0);
    store(e, n, &mut out)?;
    Ok(w)
}

/// A word being filled.
struct Wordbuf<'a>(&'a mut [u8; 8], usize);

impl Wordbuf<'_> {
    #[inline]
    fn extend_from_slice(&mut self, b: &[u8]) {
        self.0[self.1..self.1 + b.len()].copy_from_slice(b);
        self.1 += b.len();
    }
    #[inline]
    fn push(&mut self, b: u8) {
        self.0[self.1] = b;
        self.1 += 1;
    }
}

/// Stores `n` as one lane of `e` (numpy's "same_kind" casting: bool to
/// anything, integers to integers and floats, floats to floats; integers
/// must fit).
#[inline]
fn store(e: Elem, n: Num, out: &mut Wordbuf<'_>) -> Result<(), Bad> {
    let int_range = |v: i128| -> Result<i128, Bad> {
        let (lo, hi): (i128, i128) = match (e.code, e.bits) {
            (DTypeCode::Int, b) => (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1),
            (_, b) => (0, (1i128 << b) - 1),
        };
        if v < lo || v > hi {
            return Err(Bad::Value(format!("{v} is out of range for {}", e.name())));
        }
        Ok(v)
    };
    match e.code {
        DTypeCode::Float => {
            let f = match n {
                Num::F(f) => f,
                Num::I(i) => i as f64,
                Num::U(u) => u as f64,
                Num::B(b) => f64::from(u8::from(b)),
            };
            match e.bits {
                16 => out.extend_from_slice(&f64_to_f16(f).to_ne_bytes()),
                32 => out.extend_from_slice(&(f as f32).to_ne_bytes()),
                _ => out.extend_from_slice(&f.to_ne_bytes()),
            }
        }
        DTypeCode::Int | DTypeCode::UInt => {
            let v = match n {
                Num::I(i) => int_range(i128::from(i))?,
                Num::U(u) => int_range(i128::from(u))?,
                Num::B(b) => i128::from(u8::from(b)),
                Num::F(f) => {
                    return Err(Bad::Type(format!(
                        "a float ({f}) does not convert to {} (floats convert only to float attributes)",
                        e.name()
                    )));
                }
            };
            // Two's complement little pieces of the value, native order.
            let bytes = (v as i64).to_ne_bytes();
            let width = e.bytes();
            if cfg!(target_endian = "little") {
                out.extend_from_slice(&bytes[..width]);
            } else {
                out.extend_from_slice(&bytes[8 - width..]);
            }
        }
        _ => match n {
            Num::B(b) => out.push(u8::from(b)),
            _ => {
                return Err(Bad::Type(format!(
                    "{} does not convert to bool (a bool attribute takes bools only)",
                    match n {
                        Num::F(f) => format!("a float ({f})"),
                        Num::I(i) => format!("an int ({i})"),
                        Num::U(u) => format!("an int ({u})"),
                        Num::B(_) => unreachable!(),
                    }
                )));
            }
        },
    }
    Ok(())
}

static NP_GENERIC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static NP_DTYPE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static NP_ASARRAY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// A numpy dtype's element type, or `TypeError`.
fn descr_elem(d: &Bound<'_, PyArrayDescr>) -> Result<Elem, Bad> {
    let kind = d.kind();
    let size = d.itemsize();
    let e = Elem::from_numpy(kind, size).ok_or_else(|| {
        Bad::Type(format!(
            "numpy dtype {} is not a number type a batch holds",
            d.str().map(|s| s.to_string()).unwrap_or_default()
        ))
    })?;
    if size > 1 && !d.is_native_byteorder().unwrap_or(true) {
        return Err(Bad::Type("non-native byte order is not supported; use .astype(native dtype)".to_owned()));
    }
    Ok(e)
}

/// A Python scalar as a number: `Ok(None)` when `v` is not a scalar.
fn scalar(v: &Bound<'_, PyAny>) -> PyResult<Result<Option<(Num, Elem)>, Bad>> {
    let py = v.py();
    if let Ok(f) = v.cast_exact::<PyFloat>() {
        return Ok(Ok(Some((Num::F(f.value()), Elem::F64))));
    }
    if let Ok(b) = v.cast_exact::<PyBool>() {
        return Ok(Ok(Some((Num::B(b.is_true()), Elem::BOOL))));
    }
    if v.is_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>() {
        return Ok(int_num(v));
    }
    let generic = NP_GENERIC.import(py, "numpy", "generic")?;
    if v.is_instance(generic)? {
        let d = v.getattr(pyo3::intern!(py, "dtype"))?.cast_into::<PyArrayDescr>()?;
        let e = match descr_elem(&d) {
            Ok(e) => e,
            Err(b) => return Ok(Err(b)),
        };
        let mut buf = [0u8; 16];
        // SAFETY: `v` is a numpy scalar whose dtype (checked above) is a
        // number of at most 8 bytes; ScalarAsCtype copies its value into
        // the 16-byte buffer.
        unsafe { numpy::npyffi::PY_ARRAY_API.PyArray_ScalarAsCtype(py, v.as_ptr(), buf.as_mut_ptr().cast()) };
        // SAFETY: `buf` holds `e.bytes()` (at most 8) bytes.
        return Ok(Ok(Some((unsafe { read_num(e, buf.as_ptr()) }, e))));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(Ok(Some((Num::F(v.extract::<f64>()?), Elem::F64))));
    }
    Ok(Ok(None))
}

/// A Python int as a number (int64, else uint64, else out of range).
fn int_num(v: &Bound<'_, PyAny>) -> Result<Option<(Num, Elem)>, Bad> {
    if let Ok(i) = v.extract::<i64>() {
        return Ok(Some((Num::I(i), Elem::I64)));
    }
    if let Ok(u) = v.extract::<u64>() {
        return Ok(Some((Num::U(u), Elem::U64)));
    }
    Err(Bad::Value(format!(
        "{} is out of range for int64 and uint64",
        v.str().map(|s| s.to_string()).unwrap_or_default()
    )))
}

/// A value read from Python: its lanes and the element type it has by
/// numpy's conventions (used when it is an attribute's first set).
enum Parsed {
    One(Num, Elem),
    Row(Vec<Num>, Elem),
}

impl Parsed {
    fn lanes(&self) -> usize {
        match self {
            Parsed::One(..) => 1,
            Parsed::Row(v, _) => v.len(),
        }
    }
    fn natural(&self) -> Elem {
        match self {
            Parsed::One(_, e) | Parsed::Row(_, e) => *e,
        }
    }
}

/// Reads a 0-d or 1-d numpy array.
fn from_array(a: &Bound<'_, PyUntypedArray>) -> Result<Parsed, Bad> {
    let e = descr_elem(&a.dtype())?;
    // SAFETY: `as_array_ptr` is the live array object; `data` is the
    // start of its first element.
    let p = unsafe { (*a.as_array_ptr()).fields.data } as *const u8;
    match a.ndim() {
        // SAFETY: a 0-d array holds one element at its data pointer.
        0 => Ok(Parsed::One(unsafe { read_num(e, p) }, e)),
        1 => {
            let n = a.shape()[0];
            let stride = a.strides()[0];
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                // SAFETY: element i < shape[0] lies at data + i * stride
                // inside the array, which `a` keeps alive.
                out.push(unsafe { read_num(e, p.offset(i as isize * stride)) });
            }
            Ok(Parsed::Row(out, e))
        }
        d => Err(Bad::Value(format!(
            "a value must be a scalar or a 1-D row, got a {d}-D array (use .ravel() for a matrix)"
        ))),
    }
}

/// Reads `value` (`Err(PyErr)` only for errors raised by Python code it ran).
fn parse(value: &Bound<'_, PyAny>) -> PyResult<Result<Parsed, Bad>> {
    if let Some((n, e)) = match scalar(value)? {
        Ok(s) => s,
        Err(b) => return Ok(Err(b)),
    } {
        return Ok(Ok(Parsed::One(n, e)));
    }
    if let Ok(a) = value.cast::<PyUntypedArray>() {
        return Ok(from_array(a));
    }
    let items: Option<Vec<Bound<'_, PyAny>>> = if let Ok(l) = value.cast::<PyList>() {
        Some(l.iter().collect())
    } else if let Ok(t) = value.cast::<PyTuple>() {
        Some(t.iter().collect())
    } else {
        None
    };
    if let Some(items) = items {
        let mut nums = Vec::with_capacity(items.len());
        let mut elems: Vec<Elem> = Vec::with_capacity(items.len());
        for it in &items {
            match scalar(it)? {
                Ok(Some((n, e))) => {
                    nums.push(n);
                    elems.push(e);
                }
                Ok(None) => {
                    return Ok(Err(Bad::Type(format!(
                        "a row's items must be numbers, got {} (a value is a scalar or a 1-D row)",
                        type_name(it)
                    ))));
                }
                Err(b) => return Ok(Err(b)),
            }
        }
        return Ok(Ok(Parsed::Row(nums, row_type(&elems))));
    }
    if value.is_instance_of::<PyString>() || value.is_instance_of::<pyo3::types::PyBytes>() {
        return Ok(Err(Bad::Type(format!("a value must be a number or a row of numbers, got {}", type_name(value)))));
    }
    // Anything else numpy reads (array-likes, DLPack producers, ...).
    let arr = NP_ASARRAY.import(value.py(), "numpy", "asarray")?.call1((value,))?;
    match arr.cast::<PyUntypedArray>() {
        Ok(a) => Ok(from_array(a)),
        Err(_) => Ok(Err(Bad::Type(format!("a value must be a number or a row of numbers, got {}", type_name(value))))),
    }
}

/// The element type of a list or tuple (as numpy reads one): the items'
/// common type when they all have one; else float64 when any is a float;
/// else uint64 when an int needs it; else int64.
fn row_type(elems: &[Elem]) -> Elem {
    let Some(first) = elems.first() else { return Elem::F64 };
    if elems.iter().all(|e| e == first) {
        *first
    } else if elems.iter().any(|e| e.code == DTypeCode::Float) {
        Elem::F64
    } else if elems.contains(&Elem::U64) {
        Elem::U64
    } else {
        Elem::I64
    }
}

/// A `dtype=` argument as an element type.
fn dtype_arg(d: &Bound<'_, PyAny>) -> PyResult<Elem> {
    let py = d.py();
    let descr = NP_DTYPE.import(py, "numpy", "dtype")?.call1((d,))?.cast_into::<PyArrayDescr>()?;
    match descr_elem(&descr) {
        Ok(e) => Ok(e),
        Err(Bad::Type(m)) | Err(Bad::Value(m)) => Err(PyTypeError::new_err(format!("WriteBatch.set: dtype: {m}"))),
    }
}

/// A prim argument, resolved.
fn prim_arg(stage: &ovstage::Stage, prim: &Bound<'_, PyAny>) -> PyResult<PrimPath> {
    // The hot case first: an exact int (a type-pointer compare).
    if let Some(p) = exact_u64(prim).and_then(PrimPath::from_raw)
        && stage.paths().contains_path(p)
    {
        return Ok(p);
    }
    if let Ok(s) = prim.cast::<PyString>() {
        let text = s.to_str()?;
        // As `PathDictionary.intern_path`.
        if !text.starts_with('/') {
            return Err(ovx_error(format!("intern_path: {text:?} is not an absolute path")));
        }
        return stage.paths().intern_path(text).map_err(|e| ovx_error(e.message().to_owned()));
    }
    if prim.is_instance_of::<PyFloat>() {
        return Err(PyTypeError::new_err(format!(
            "WriteBatch.set: prim must be a path handle (int) or a path string, got {}",
            type_name(prim)
        )));
    }
    let raw = match prim.cast_exact::<PyInt>().ok().and_then(|i| i.extract::<u64>().ok()) {
        Some(v) => v,
        None => args::u64_arg(prim, "prim").map_err(|e| {
            if e.is_instance_of::<PyTypeError>(prim.py()) {
                PyTypeError::new_err(format!(
                    "WriteBatch.set: prim must be a path handle (int) or a path string, got {}",
                    type_name(prim)
                ))
            } else {
                e
            }
        })?,
    };
    match PrimPath::from_raw(raw) {
        Some(p) if stage.paths().contains_path(p) => Ok(p),
        _ => Err(PyValueError::new_err(format!(
            "WriteBatch.set: prim path handle {raw} is not from this Stage's dictionary"
        ))),
    }
}

/// An attribute argument, read (a name is resolved under the lock).
enum AttrArg<'a, 'py> {
    Token(Token),
    Name(&'a Bound<'py, PyString>),
}

/// An exact `int` in uint64 range, without raising (the value is read
/// with one C call; the error a negative or huge one sets is cleared).
fn exact_u64(obj: &Bound<'_, PyAny>) -> Option<u64> {
    if !obj.is_exact_instance_of::<PyInt>() {
        return None;
    }
    // SAFETY: `obj` is a live int; the call only reads it. On failure it
    // returns -1 with an exception set, which is taken (cleared) here.
    let v = unsafe { pyo3::ffi::PyLong_AsUnsignedLongLong(obj.as_ptr()) };
    if v == u64::MAX && PyErr::take(obj.py()).is_some() {
        return None;
    }
    Some(v)
}

fn attr_arg<'a, 'py>(stage: &ovstage::Stage, attribute: &'a Bound<'py, PyAny>) -> PyResult<AttrArg<'a, 'py>> {
    if let Some(t) = exact_u64(attribute).and_then(Token::from_raw)
        && stage.paths().is_token(t)
    {
        return Ok(AttrArg::Token(t));
    }
    if let Ok(s) = attribute.cast::<PyString>() {
        return Ok(AttrArg::Name(s));
    }
    if attribute.is_instance_of::<PyFloat>() {
        return Err(PyTypeError::new_err("attribute must be an int, got float"));
    }
    let raw = match attribute.cast_exact::<PyInt>().ok().and_then(|i| i.extract::<u64>().ok()) {
        Some(v) => v,
        None => args::u64_arg(attribute, "attribute")?,
    };
    match Token::from_raw(raw) {
        Some(t) if stage.paths().is_token(t) => Ok(AttrArg::Token(t)),
        _ => Err(PyValueError::new_err(format!(
            "WriteBatch.set: attribute token {raw} is not from this Stage's dictionary"
        ))),
    }
}

/// One attribute's gathered values.
struct Column {
    token: Token,
    elem: Elem,
    lanes: u16,
    /// Bytes of one row (all lanes).
    row: usize,
    /// Row `i` belongs to the batch's prim `i` (zeros where not set).
    data: Vec<u8>,
    /// Bit `i`: prim `i` was set.
    bits: Vec<u64>,
    /// Number of bits set.
    count: usize,
}

/// The gathered sets.
#[derive(Default)]
struct State {
    /// Submitted or discarded: no more sets.
    spent: bool,
    operation: Option<Py<Operation>>,
    /// The union of the prims, in first-set order.
    prims: Vec<PrimPath>,
    index: HashMap<u64, u32, IdBuild>,
    columns: Vec<Column>,
    /// Name objects seen (kept alive, so their identity stays theirs) and
    /// their column; a miss looks the name up.
    names: Vec<(Py<PyString>, usize)>,
    /// The column of the last set (most loops set one attribute at a time).
    last: usize,
    /// The prim index after the last set's.
    cursor: usize,
    /// Converted bytes of the value being set.
    scratch: Vec<u8>,
    /// Pending (prim, attribute) values.
    pending: usize,
}

/// Names kept for identity look-ups.
const NAME_CACHE: usize = 64;

/// Gathers many small per-prim sets and submits them as one write op.
///
/// An extension of ours, not in the published API: build it with
/// `Stage.write_batch(ordinal, prim_mode=PrimMode.UPSERT)`, call
/// `set(prim, attribute, value)` any number of times, then `submit()` (or
/// use it as a context manager, which submits on a clean exit and discards
/// the batch on an exception). Fixed-size attributes only (`is_array=False`).
/// Thread-safe: several threads may set into one batch.
#[pyclass(frozen, module = "ovstage", name = "WriteBatch")]
pub(crate) struct WriteBatch {
    stage: Py<Stage>,
    /// The engine, not kept alive by the batch (`Stage.destroy()` frees it).
    engine: Weak<ovstage::Stage>,
    ordinal: u64,
    mode: PrimMode,
    state: Mutex<State>,
}

impl WriteBatch {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic under the lock leaves the batch as it was before the set
        // that panicked (every change is made after the last check).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn spent_error(&self, call: &str, st: &State) -> PyErr {
        let what = match &st.operation {
            Some(op) => format!("was already submitted (op {})", op.get().op().map_or(0, |o| o.get())),
            None => "was discarded".to_owned(),
        };
        invalid_handle(format!("WriteBatch.{call}: the batch {what}"))
    }

    fn engine(&self) -> PyResult<Arc<ovstage::Stage>> {
        self.engine.upgrade().ok_or_else(|| invalid_handle("WriteBatch: the Stage was destroyed"))
    }

    fn describe(&self, engine: &ovstage::Stage, prim: PrimPath, token: Token) -> String {
        let d = engine.paths();
        let a = d.token_text(token).map_or_else(|_| token.to_string(), |t| t.to_string());
        let p = d.path_text(prim).map_or_else(|_| prim.to_string(), |t| t.to_string());
        format!("attribute {a:?} of prim {p}")
    }

    /// Enqueues the gathered writes; `Ok(None)` when nothing was set.
    fn submit_inner(&self, py: Python<'_>) -> PyResult<Option<Py<Operation>>> {
        let engine = self.stage.get().stage("WriteBatch.submit")?;
        let mut st = self.lock();
        if st.spent {
            return Err(self.spent_error("submit", &st));
        }
        if st.pending == 0 {
            return Ok(None);
        }
        let n = st.prims.len();
        let count =
            u32::try_from(n).map_err(|_| PyValueError::new_err("WriteBatch.submit: more than 2**32 - 1 prims"))?;
        let prims = std::mem::take(&mut st.prims);
        let columns = std::mem::take(&mut st.columns);
        let names = std::mem::take(&mut st.names);
        st.index = HashMap::default();
        st.pending = 0;
        st.cursor = 0;
        st.spent = true;
        drop(st);
        drop(names);
        let stage = &engine;
        let r = (|| {
            let list = stage.paths().create_path_list(&prims)?;
            let query = stage.query_from_path_list(list);
            // The query holds its own reference to the list.
            let _ = stage.paths().release_path_list_reference(list);
            let query = query?;
            let mut writes = Vec::with_capacity(columns.len());
            let mut err = None;
            for mut c in columns {
                c.data.resize(n * c.row, 0);
                // One word per 64 prims of the union (later prims' bits are 0).
                c.bits.resize(n.div_ceil(64), 0);
                let selection = if c.count == n {
                    Selection::All
                } else {
                    Selection::Mask { count, bits: std::mem::take(&mut c.bits) }
                };
                match ovstage::Tensor::new(c.data, c.elem.dtype(c.lanes), &[n as u64]) {
                    Ok(t) => writes.push(AttributeWrite {
                        attribute: AttrRef::Token(c.token),
                        data: WriteData::fixed(t).with_selection(selection),
                    }),
                    Err(e) => err = Some(e),
                }
            }
            let r = match err {
                Some(e) => Err(e),
                None => stage.write_attributes(query, writes, self.ordinal, self.mode),
            };
            // Ordered after the write (its user); nothing waits for it.
            match stage.release_query(query) {
                Ok(op) => self.stage.get().orphan(op),
                Err(e) => return Err(Error::internal(format!("WriteBatch.submit: release_query: {}", e.message()))),
            }
            r
        })();
        let op = Operation::from_result(&self.stage, r, py).into_object(py)?.unbind();
        self.lock().operation = Some(op.clone_ref(py));
        Ok(Some(op))
    }
}

#[pymethods]
impl WriteBatch {
    /// Sets `attribute` of `prim` to `value` in the batch (nothing is
    /// enqueued until `submit`).
    ///
    /// `prim`: a path handle (int) or a path string (interned; a malformed
    /// one raises `OvxError` as `PathDictionary.intern_path` does).
    /// `attribute`: a token (int) or a name. `value`: a Python float, int
    /// or bool, a numpy scalar, or a 1-D row (list, tuple, numpy array) of
    /// several lanes. The attribute's first set fixes its element type
    /// (numpy's: float64, int64, bool, or the numpy value's dtype; `dtype=`
    /// overrides it, and on a later set must name that type) and lane
    /// count; later values are converted with
    /// numpy's same-kind rule (bool to anything, ints to ints and floats,
    /// floats to floats; ints must fit). Another lane count or an
    /// unconvertible value raises `ValueError`/`TypeError` naming the
    /// attribute and the prim and leaves the batch unchanged. The same
    /// (prim, attribute) set again replaces the earlier value.
    #[pyo3(signature = (prim, attribute, value, *, dtype = None))]
    fn set(
        &self,
        prim: &Bound<'_, PyAny>,
        attribute: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        // Phase 1: read the arguments (may run Python code), no lock held.
        let engine = &self.engine()?;
        let p = prim_arg(engine, prim)?;
        let a = attr_arg(engine, attribute)?;
        let want = match dtype.filter(|d| !d.is_none()) {
            Some(d) => Some(dtype_arg(d)?),
            None => None,
        };
        // The hot case (a Python float) skips the general reader.
        let parsed = match value.cast_exact::<PyFloat>() {
            Ok(f) => Ok(Parsed::One(Num::F(f.value()), Elem::F64)),
            Err(_) => parse(value)?,
        };
        // Phase 2: under the lock, no Python code.
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.spent {
            return Err(self.spent_error("set", st));
        }
        let col = match a {
            AttrArg::Token(t) => if st.columns.get(st.last).is_some_and(|c| c.token == t) {
                Some(st.last)
            } else {
                st.columns.iter().position(|c| c.token == t)
            }
            .ok_or(t),
            AttrArg::Name(s) => match st.names.iter().find(|(o, _)| o.as_ptr() == s.as_ptr()) {
                Some((_, i)) => Ok(*i),
                None => {
                    let text = s.to_str()?;
                    let t = engine.paths().intern_token(text).map_err(|e| {
                        PyValueError::new_err(format!("WriteBatch.set: attribute {text:?}: {}", e.message()))
                    })?;
                    match st.columns.iter().position(|c| c.token == t) {
                        Some(i) => {
                            if st.names.len() < NAME_CACHE {
                                st.names.push((s.clone().unbind(), i));
                            }
                            Ok(i)
                        }
                        None => Err(t),
                    }
                }
            },
        };
        let parsed = match parsed {
            Ok(v) => v,
            Err(b) => {
                let t = match col {
                    Ok(i) => st.columns[i].token,
                    Err(t) => t,
                };
                return Err(bad(b, &self.describe(engine, p, t)));
            }
        };
        // The column's type: fixed, or this first set's.
        let (token, elem, lanes) = match col {
            Ok(i) => {
                let c = &st.columns[i];
                if let Some(w) = want.filter(|w| *w != c.elem) {
                    return Err(PyValueError::new_err(format!(
                        "WriteBatch.set: {}: dtype={} differs from the attribute's {} (fixed by its first set)",
                        self.describe(engine, p, c.token),
                        w.name(),
                        c.elem.name()
                    )));
                }
                if parsed.lanes() != usize::from(c.lanes) {
                    return Err(PyValueError::new_err(format!(
                        "WriteBatch.set: {}: {} lanes given, the attribute has {} (fixed by its first set)",
                        self.describe(engine, p, c.token),
                        parsed.lanes(),
                        c.lanes
                    )));
                }
                (c.token, c.elem, c.lanes)
            }
            Err(t) => {
                let e = want.unwrap_or_else(|| parsed.natural());
                let lanes = parsed.lanes();
                let Some(lanes) = u16::try_from(lanes).ok().filter(|l| *l > 0) else {
                    return Err(PyValueError::new_err(format!(
                        "WriteBatch.set: {}: a row must have 1 to 65535 lanes, got {lanes}",
                        self.describe(engine, p, t)
                    )));
                };
                if !e.dtype(1).is_storable() {
                    return Err(PyTypeError::new_err(format!(
                        "WriteBatch.set: {}: {} is not a storable element type (storable: {})",
                        self.describe(engine, p, t),
                        e.name(),
                        DType::STORABLE
                    )));
                }
                (t, e, lanes)
            }
        };
        // Convert (a scalar into a word, a row into the scratch buffer).
        let mut word = [0u8; 8];
        let mut scratch = std::mem::take(&mut st.scratch);
        scratch.clear();
        let converted = match &parsed {
            Parsed::One(n, _) => encode(elem, *n).map(|w| word = w),
            Parsed::Row(v, _) => {
                v.iter().try_for_each(|n| encode(elem, *n).map(|w| scratch.extend_from_slice(&w[..elem.bytes()])))
            }
        };
        if let Err(b) = converted {
            st.scratch = scratch;
            return Err(bad(b, &self.describe(engine, p, token)));
        }
        // Every check passed: record. Loops that set several attributes
        // over the same prims in the same order find the prim at the cursor
        // without hashing.
        let idx = match st.prims.get(st.cursor) {
            Some(q) if *q == p => st.cursor,
            _ => {
                let next = st.prims.len();
                let i = *st.index.entry(p.get()).or_insert(next as u32) as usize;
                if i == next {
                    st.prims.push(p);
                }
                i
            }
        };
        st.cursor = idx + 1;
        let ci = match col {
            Ok(i) => i,
            Err(t) => {
                st.columns.push(Column {
                    token: t,
                    elem,
                    lanes,
                    row: elem.bytes() * usize::from(lanes),
                    data: Vec::new(),
                    bits: Vec::new(),
                    count: 0,
                });
                if let AttrArg::Name(s) = a
                    && st.names.len() < NAME_CACHE
                {
                    st.names.push((s.clone().unbind(), st.columns.len() - 1));
                }
                st.columns.len() - 1
            }
        };
        st.last = ci;
        let c = &mut st.columns[ci];
        let at = idx * c.row;
        if c.data.len() < at + c.row {
            // Doubling, so a batch grows its rows O(log n) times.
            let want = (at + c.row).max(c.data.len() * 2).max(64 * c.row);
            c.data.resize(want, 0);
        }
        let (w, bit) = (idx / 64, 1u64 << (idx % 64));
        if c.bits.len() <= w {
            let want = (w + 1).max(c.bits.len() * 2);
            c.bits.resize(want, 0);
        }
        let dst = &mut c.data[at..at + c.row];
        match (&parsed, dst.len()) {
            (Parsed::One(..), 8) => dst.copy_from_slice(&word),
            (Parsed::One(..), 4) => dst.copy_from_slice(&word[..4]),
            (Parsed::One(..), n) => dst.copy_from_slice(&word[..n]),
            _ => dst.copy_from_slice(&scratch),
        }
        let fresh = c.bits[w] & bit == 0;
        c.bits[w] |= bit;
        if fresh {
            c.count += 1;
            st.pending += 1;
        }
        st.scratch = scratch;
        Ok(())
    }

    /// Enqueues the batch: one path-list query over the union of the prims
    /// set (in first-set order), one `write_attributes` at the batch's
    /// ordinal with one entry per attribute (masked to the prims it was set
    /// on), then the query's release; waits for nothing. Returns the write's
    /// `Operation` (an enqueue rejection is its `status`, raised by `wait()`,
    /// as `write_attributes` reports it). The batch is spent afterwards.
    /// Raises `ValueError` when nothing was set (the batch stays usable).
    fn submit(&self, py: Python<'_>) -> PyResult<Py<Operation>> {
        match self.submit_inner(py)? {
            Some(op) => Ok(op),
            None => Err(PyValueError::new_err("WriteBatch.submit: nothing was set (an empty batch writes nothing)")),
        }
    }

    /// The write's `Operation` once submitted, else `None`.
    #[getter]
    fn operation(&self, py: Python<'_>) -> Option<Py<Operation>> {
        self.lock().operation.as_ref().map(|o| o.clone_ref(py))
    }

    /// The ordinal the batch writes at.
    #[getter]
    fn ordinal(&self) -> u64 {
        self.ordinal
    }

    /// Whether the batch was submitted or discarded (no more sets).
    #[getter]
    fn spent(&self) -> bool {
        self.lock().spent
    }

    /// Number of prims set so far (the union over the attributes).
    #[getter]
    fn prim_count(&self) -> usize {
        self.lock().prims.len()
    }

    /// Number of pending (prim, attribute) values.
    fn __len__(&self) -> usize {
        self.lock().pending
    }

    /// Returns the batch itself.
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// On a clean exit submits the batch (nothing when nothing was set; the
    /// op is then `operation`, and an enqueue rejection raises its
    /// `OvstageError` here, as `wait()` would); on an exception discards it.
    /// Never suppresses the exception.
    #[pyo3(signature = (exc_type, exc, tb))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        exc: &Bound<'_, PyAny>,
        tb: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let _ = (exc, tb);
        if !exc_type.is_none() {
            let mut st = self.lock();
            if !st.spent {
                let old = std::mem::take(&mut *st);
                st.spent = true;
                drop(st);
                drop(old);
            }
            return Ok(false);
        }
        if self.lock().spent {
            return Ok(false);
        }
        if let Some(op) = self.submit_inner(py)? {
            if let Some((status, message)) = op.get().rejection() {
                return Err(crate::errors::ovstage_error(status, message));
            }
        } else {
            self.lock().spent = true;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let st = self.lock();
        let state = if st.operation.is_some() {
            "submitted"
        } else if st.spent {
            "discarded"
        } else {
            "open"
        };
        format!("WriteBatch(ordinal={}, pending={}, prims={}, {state})", self.ordinal, st.pending, st.prims.len())
    }
}

fn bad(b: Bad, what: &str) -> PyErr {
    match b {
        Bad::Type(m) => PyTypeError::new_err(format!("WriteBatch.set: {what}: {m}")),
        Bad::Value(m) => PyValueError::new_err(format!("WriteBatch.set: {what}: {m}")),
    }
}

#[pymethods]
impl Stage {
    /// A `WriteBatch` writing at `ordinal` (an extension of ours): gathers
    /// per-prim sets natively and submits them as one write op.
    #[pyo3(signature = (ordinal, *, prim_mode = None))]
    #[pyo3(text_signature = "($self, ordinal, *, prim_mode=ovstage.PrimMode.UPSERT)")]
    fn write_batch(
        slf: &Bound<'_, Self>,
        ordinal: &Bound<'_, PyAny>,
        prim_mode: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<WriteBatch> {
        let ordinal = args::u64_arg(ordinal, "ordinal")?;
        let mode = args::closed_enum_opt(prim_mode, "prim_mode", "PrimMode", args::PRIM_MODES)?;
        let engine = slf.get().stage("write_batch")?;
        Ok(WriteBatch {
            stage: slf.clone().unbind(),
            engine: Arc::downgrade(&engine),
            ordinal,
            mode: PrimMode::from_raw(mode).expect("checked"),
            state: Mutex::new(State::default()),
        })
    }
}
