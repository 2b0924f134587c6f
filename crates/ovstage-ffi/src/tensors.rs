//! DLPack inputs of writes: validation (device, dtype, ndim, shape,
//! strides, byte offset) and conversion into stage tensors without copying
//! compact payloads.
//!
//! Ownership of `DLManagedTensorVersioned` inputs passes to the library at
//! call entry: every unique pointer is wrapped in a [`Managed`] owner before
//! anything is validated, so its deleter runs exactly once, when the last
//! tensor reading it is dropped or at once when the call is rejected.

use std::collections::HashSet;
use std::sync::Arc;

use ovstage_types::{AttributeMode, DType, DTypeCode, Error, Result, Semantic};
use stage::{HostBytes, Selection, Tensor, WriteData};

use crate::abi::api_types::ovstage_write_data_t;
use crate::abi::dlpack::{DLManagedTensorVersioned, DLTensor};
use crate::strings;

/// Device types whose memory the host can read.
const HOST_DEVICES: [i32; 3] = [1 /* kDLCPU */, 3 /* kDLCUDAHost */, 13 /* kDLCUDAManaged */];
const CUDA: i32 = 2;
/// More dimensions than any attribute payload has.
const MAX_NDIM: i32 = 16;

/// Owner of a managed tensor handed to the library: calls its deleter once
/// when dropped.
pub(crate) struct Managed(*mut DLManagedTensorVersioned);

// SAFETY: ownership of the managed tensor passed to us; DLPack lets the
// consumer call the deleter from any thread, and its payload is only read.
unsafe impl Send for Managed {}
// SAFETY: shared access only reads the tensor's descriptor and payload.
unsafe impl Sync for Managed {}

impl Managed {
    fn tensor(&self) -> &DLTensor {
        // SAFETY: the pointer was non-NULL when wrapped and stays valid
        // until our deleter call in `drop`.
        unsafe { &(*self.0).dl_tensor }
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        // SAFETY: valid until its deleter runs, which happens only here.
        if let Some(deleter) = unsafe { (*self.0).deleter } {
            // SAFETY: DLPack's contract: the consumer calls the deleter once
            // with the tensor itself.
            unsafe { deleter(self.0) };
        }
    }
}

/// Takes ownership of every managed tensor of the given write payloads
/// (one owner per distinct pointer). NULL entries, and a pointer listed
/// twice, are errors reported after every other tensor has been taken over
/// (so each is still released exactly once).
///
/// # Safety
/// Each payload's `managed_tensors`, when not NULL, has `tensor_count`
/// readable entries.
pub(crate) unsafe fn take_managed(payloads: &[&ovstage_write_data_t], call: &str) -> Result<Vec<Vec<Arc<Managed>>>> {
    let mut seen: HashSet<usize> = HashSet::new();
    let mut owners: std::collections::HashMap<usize, Arc<Managed>> = std::collections::HashMap::new();
    let mut problem: Option<Error> = None;
    let mut per_payload = Vec::with_capacity(payloads.len());
    for (w, data) in payloads.iter().enumerate() {
        let mut taken = Vec::new();
        if !data.managed_tensors.is_null() {
            // SAFETY: `tensor_count` readable entries, per the caller.
            let ptrs = unsafe { std::slice::from_raw_parts(data.managed_tensors, data.tensor_count as usize) };
            for (i, p) in ptrs.iter().enumerate() {
                if p.is_null() {
                    problem.get_or_insert_with(|| {
                        Error::invalid_argument(format!("{call}: write {w}: managed_tensors[{i}] is NULL"))
                    });
                    continue;
                }
                let key = *p as usize;
                if !seen.insert(key) {
                    problem.get_or_insert_with(|| {
                        Error::invalid_argument(format!(
                            "{call}: write {w}: managed_tensors[{i}] is a DLManagedTensorVersioned already given in this call"
                        ))
                    });
                    continue;
                }
                let owner = owners.entry(key).or_insert_with(|| Arc::new(Managed(p.cast_mut()))).clone();
                taken.push(owner);
            }
        }
        per_payload.push(taken);
    }
    match problem {
        Some(e) => Err(e),
        None => Ok(per_payload),
    }
}

/// The payload bytes of an input tensor, read in place.
struct Payload {
    ptr: *const u8,
    len: usize,
    /// The managed tensor the bytes belong to (kept alive with them); `None`
    /// for a client-managed tensor.
    _owner: Option<Arc<Managed>>,
}

// SAFETY: a managed payload stays valid until its owner's deleter runs,
// which cannot happen while this holds the owner. A client-managed payload
// stays valid and unchanged until its op completes (the contract), and the
// stage reads a write's payload only while the op runs (it copies what it
// keeps). Either way the bytes are only read.
unsafe impl Send for Payload {}
// SAFETY: as above.
unsafe impl Sync for Payload {}

impl HostBytes for Payload {
    fn host_bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `len` readable bytes at `ptr` (checked non-NULL when built)
        // while the payload is alive; see the `Send` impl.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A validated host tensor descriptor: where its first element is, its
/// element type and shape, and whether its elements are packed.
struct Checked {
    first: *const u8,
    dtype: DType,
    shape: Vec<u64>,
    /// Strides in elements when they are not the compact row-major ones.
    gather: Option<Vec<i64>>,
    bytes: usize,
}

/// Checks a tensor descriptor; `what` names it in errors.
///
/// # Safety
/// `t.shape` and `t.strides`, when not NULL, have `t.ndim` readable entries.
unsafe fn check(t: &DLTensor, what: &str) -> Result<Checked> {
    let device = t.device.device_type.0;
    if device == CUDA {
        return Err(Error::not_supported(format!(
            "{what}: CUDA device memory needs the CUDA backend, which this build of ovstage does not include"
        )));
    }
    if !HOST_DEVICES.contains(&device) {
        return Err(Error::not_supported(format!(
            "{what}: device type {device} is not supported (host memory: kDLCPU, kDLCUDAHost or kDLCUDAManaged)"
        )));
    }
    let code = DTypeCode::from_raw(t.dtype.code).ok_or_else(|| {
        Error::invalid_argument(format!("{what}: dtype code {} is not a DLPack type code", t.dtype.code))
    })?;
    let dtype = DType::new(code, t.dtype.bits, t.dtype.lanes);
    let element = dtype.element_bytes().ok_or_else(|| {
        Error::invalid_argument(format!(
            "{what}: dtype {{code {}, bits {}, lanes {}}} has no whole-byte element size",
            t.dtype.code, t.dtype.bits, t.dtype.lanes
        ))
    })?;
    if !(0..=MAX_NDIM).contains(&t.ndim) {
        return Err(Error::invalid_argument(format!("{what}: ndim {} is not between 0 and {MAX_NDIM}", t.ndim)));
    }
    let ndim = t.ndim as usize;
    // SAFETY: `ndim` entries when not NULL, per the caller.
    let shape = unsafe { strings::slice(t.shape.cast_const(), ndim, format!("{what}: shape")) }?;
    if let Some((i, d)) = shape.iter().enumerate().find(|(_, d)| **d < 0) {
        return Err(Error::invalid_argument(format!("{what}: shape[{i}] is negative ({d})")));
    }
    let shape: Vec<u64> = shape.iter().map(|d| *d as u64).collect();
    let count = shape.iter().try_fold(1u64, |acc, d| acc.checked_mul(*d));
    let bytes = count
        .and_then(|c| c.checked_mul(element as u64))
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| Error::invalid_argument(format!("{what}: shape {shape:?} is too large")))?;
    let gather = if t.strides.is_null() || bytes == 0 {
        None
    } else {
        // SAFETY: `ndim` entries, per the caller.
        let strides = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
        let mut expect = 1i64;
        let mut compact = true;
        for i in (0..ndim).rev() {
            if shape[i] > 1 && strides[i] != expect {
                compact = false;
            }
            expect = expect.saturating_mul(shape[i] as i64);
        }
        (!compact).then(|| strides.to_vec())
    };
    if t.data.is_null() && bytes > 0 {
        return Err(Error::invalid_argument(format!("{what}: data is NULL but the tensor holds {bytes} bytes")));
    }
    let first = (t.data as *const u8).wrapping_add(t.byte_offset as usize);
    Ok(Checked { first, dtype, shape, gather, bytes })
}

/// Copies a strided tensor's elements into row-major order.
///
/// # Safety
/// Every element the shape and strides address is readable.
unsafe fn gather(c: &Checked, strides: &[i64]) -> Result<Vec<u8>> {
    let element = c.dtype.element_bytes().expect("checked");
    let mut out = Vec::with_capacity(c.bytes);
    let ndim = c.shape.len();
    let mut index = vec![0u64; ndim];
    for _ in 0..c.bytes / element {
        let offset: i64 = index.iter().zip(strides).map(|(i, s)| *i as i64 * s).sum();
        let at = c.first.wrapping_offset(offset as isize * element as isize);
        // SAFETY: the element at `index` is readable per the caller.
        out.extend_from_slice(unsafe { std::slice::from_raw_parts(at, element) });
        for d in (0..ndim).rev() {
            index[d] += 1;
            if index[d] < c.shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Ok(out)
}

/// A stage tensor over an input tensor, zero-copy when compact (strided
/// payloads are gathered now). `owner` is the managed tensor `t` belongs to.
///
/// # Safety
/// The tensor's descriptor and payload are valid as the contract requires
/// (client tensors until their op completes; managed ones while `owner`
/// lives).
unsafe fn tensor(t: &DLTensor, owner: Option<&Arc<Managed>>, what: &str) -> Result<Tensor> {
    // SAFETY: forwarded.
    let c = unsafe { check(t, what) }?;
    match &c.gather {
        // SAFETY: forwarded.
        Some(strides) => Tensor::new(unsafe { gather(&c, strides) }?, c.dtype, &c.shape),
        None => Tensor::new(Payload { ptr: c.first, len: c.bytes, _owner: owner.cloned() }, c.dtype, &c.shape),
    }
}

/// Converts a write payload (whose managed tensors were taken over into
/// `managed`) into the stage's `WriteData`.
///
/// # Safety
/// The payload's arrays are readable as the contract requires.
pub(crate) unsafe fn write_data(d: &ovstage_write_data_t, managed: Vec<Arc<Managed>>, what: &str) -> Result<WriteData> {
    let n = d.tensor_count as usize;
    let tensors: Vec<Tensor> = match (d.tensors.is_null(), d.managed_tensors.is_null()) {
        (false, false) => {
            return Err(Error::invalid_argument(format!(
                "{what}: both tensors and managed_tensors are given; exactly one must be"
            )));
        }
        (true, true) => {
            return Err(Error::invalid_argument(format!(
                "{what}: neither tensors nor managed_tensors is given; exactly one must be"
            )));
        }
        (false, true) => {
            if n == 0 {
                return Err(Error::invalid_argument(format!("{what}: tensor_count is 0")));
            }
            // SAFETY: `n` readable descriptors, per the caller.
            let descs = unsafe { std::slice::from_raw_parts(d.tensors, n) };
            descs
                .iter()
                .enumerate()
                // SAFETY: forwarded.
                .map(|(i, t)| unsafe { tensor(t, None, &format!("{what}: tensors[{i}]")) })
                .collect::<Result<_>>()?
        }
        (true, false) => {
            if n == 0 {
                return Err(Error::invalid_argument(format!("{what}: tensor_count is 0")));
            }
            managed
                .iter()
                .enumerate()
                // SAFETY: a managed tensor is valid until its deleter runs,
                // which `m` delays.
                .map(|(i, m)| unsafe { tensor(m.tensor(), Some(m), &format!("{what}: managed_tensors[{i}]")) })
                .collect::<Result<_>>()?
        }
    };
    if d.cuda_sync.stream != 0 || d.cuda_sync.wait_event != 0 {
        return Err(Error::not_supported(format!(
            "{what}: cuda_sync is set, but CUDA synchronization needs the CUDA backend, which this build does not include"
        )));
    }
    let semantic = Semantic::from_raw(d.semantic.0)
        .ok_or_else(|| Error::invalid_argument(format!("{what}: semantic {} is not a contract value", d.semantic.0)))?;
    let mode = AttributeMode::from_raw(d.attribute_mode.0).ok_or_else(|| {
        Error::invalid_argument(format!("{what}: attribute_mode {} is not REJECT (0) or FORCE (1)", d.attribute_mode.0))
    })?;
    let selection = match (d.index_map.is_null(), d.mask.is_null()) {
        (false, false) => {
            return Err(Error::invalid_argument(format!("{what}: index_map and mask are mutually exclusive")));
        }
        (false, true) => {
            if d.count == 0 {
                return Err(Error::invalid_argument(format!("{what}: index_map needs a non-zero count")));
            }
            // SAFETY: `count` entries, per the caller.
            Selection::IndexMap(unsafe { std::slice::from_raw_parts(d.index_map, d.count as usize) }.to_vec())
        }
        (true, false) => {
            if d.count == 0 {
                return Err(Error::invalid_argument(format!("{what}: mask needs a non-zero count")));
            }
            let words = (d.count as usize).div_ceil(64);
            // SAFETY: `ceil(count / 64)` words, per the caller.
            Selection::Mask { count: d.count, bits: unsafe { std::slice::from_raw_parts(d.mask, words) }.to_vec() }
        }
        (true, true) if d.count == 0 => Selection::All,
        (true, true) => Selection::Leading(d.count),
    };
    let data = if d.is_array.get() {
        if tensors.len() == 1 {
            WriteData::array_packed(tensors.into_iter().next().expect("one"))
        } else {
            WriteData::array_rows(tensors)
        }
    } else {
        if tensors.len() != 1 {
            return Err(Error::invalid_argument(format!(
                "{what}: a fixed-size write (is_array false) takes exactly one tensor, not {}",
                tensors.len()
            )));
        }
        WriteData::fixed(tensors.into_iter().next().expect("one"))
    };
    Ok(data.with_semantic(semantic).with_selection(selection).with_attribute_mode(mode))
}
