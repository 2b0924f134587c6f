//! Write payloads (`ovstage_write_data_t`, the C contract's struct) turned
//! into the stage's `WriteData`: which tensors are given, the selection
//! (index map, mask, count) and the payload's enums. The tensors themselves
//! are validated, gathered and owned by `ovstage_dlpack::import`.

use std::sync::Arc;

use std::fmt::Display;

use smallvec::SmallVec;

use ovstage_dlpack::import::{self, CudaSync, Inputs, Managed, RowBound, Takeover};
use ovstage_types::{AttributeMode, Error, Result, Semantic, Status};
use stage::{Selection, WriteData};

use crate::abi::api_types::ovstage_write_data_t;

/// Takes ownership of every managed tensor of the given write payloads
/// (one owner per distinct pointer). NULL entries, and a pointer listed
/// twice, are errors reported after every other tensor has been taken over
/// (so each is still released exactly once).
///
/// # Safety
/// Each payload's `managed_tensors`, when not NULL, has `tensor_count`
/// readable entries.
pub(crate) unsafe fn take_managed(
    payloads: &[&ovstage_write_data_t],
    call: &str,
) -> Result<SmallVec<[Vec<Arc<Managed>>; 1]>> {
    // The usual payload has no managed tensors: nothing to take over (and
    // no takeover state, whose hash set seeds itself from a thread-local).
    if payloads.iter().all(|d| d.managed_tensors.is_null()) {
        return Ok(payloads.iter().map(|_| Vec::new()).collect());
    }
    let mut takeover = Takeover::new();
    let mut per_payload = SmallVec::with_capacity(payloads.len());
    for (w, data) in payloads.iter().enumerate() {
        if data.managed_tensors.is_null() {
            per_payload.push(Vec::new());
            continue;
        }
        // SAFETY: `tensor_count` readable entries, per the caller.
        let ptrs = unsafe { std::slice::from_raw_parts(data.managed_tensors, data.tensor_count as usize) };
        // SAFETY: the contract passes ownership of managed tensors at entry.
        per_payload.push(unsafe { takeover.take(ptrs, format_args!("{call}: write {w}")) });
    }
    takeover.finish().map(|()| per_payload)
}

/// Converts a write payload (whose managed tensors were taken over into
/// `managed`) into the stage's `WriteData`. `prims` tells the number of
/// prims of the write's query when it is already known (asked only for a
/// strided payload): it bounds how many rows of it are gathered.
///
/// # Safety
/// The payload's arrays are readable as the contract requires.
pub(crate) unsafe fn write_data(
    d: &ovstage_write_data_t,
    managed: Vec<Arc<Managed>>,
    prims: &dyn Fn() -> Option<usize>,
    what: &dyn Display,
) -> Result<WriteData> {
    let n = d.tensor_count as usize;
    let inputs = match (d.tensors.is_null(), d.managed_tensors.is_null()) {
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
        _ if n == 0 => return Err(Error::invalid_argument(format!("{what}: tensor_count is 0"))),
        // SAFETY: `n` readable descriptors, per the caller.
        (false, true) => Inputs::Client(unsafe { std::slice::from_raw_parts(d.tensors, n) }),
        (true, false) => Inputs::Managed(&managed),
    };
    // Honoured by each CUDA tensor's copy at enqueue; refused on host ones.
    let sync = CudaSync { stream: d.cuda_sync.stream, wait_event: d.cuda_sync.wait_event };
    let semantic = Semantic::from_raw(d.semantic.0)
        .ok_or_else(|| Error::invalid_argument(format!("{what}: semantic {} is not a contract value", d.semantic.0)))?;
    let mode = AttributeMode::from_raw(d.attribute_mode.0).ok_or_else(|| {
        Error::invalid_argument(format!("{what}: attribute_mode {} is not REJECT (0) or FORCE (1)", d.attribute_mode.0))
    })?;
    // SAFETY: forwarded.
    let selection = unsafe { selection(d, what) }?;
    // Which rows of a fixed-size payload the write can use.
    let bound = || match &selection {
        _ if d.is_array.get() => RowBound::Any,
        Selection::IndexMap(map) => RowBound::Used(map.iter().max().map_or(0, |m| u64::from(*m) + 1)),
        _ => prims().map_or(RowBound::Any, |p| RowBound::Prims(p as u64)),
    };
    // Per-row arrays are described in one vector; everything else is one
    // tensor per input.
    let data = if d.is_array.get() && n > 1 {
        let owners = if let Inputs::Managed(_) = inputs { managed.clone() } else { Vec::new() };
        // SAFETY: forwarded.
        WriteData::array_row_set(unsafe { import::array_rows(inputs, owners, sync, what) }?)
    } else {
        // SAFETY: forwarded.
        let mut tensors = unsafe { import::tensors(inputs, &bound, sync, what) }?;
        if d.is_array.get() {
            WriteData::array_packed(tensors.pop().expect("one"))
        } else if tensors.len() != 1 {
            return Err(Error::invalid_argument(format!(
                "{what}: a fixed-size write (is_array false) takes exactly one tensor, not {}",
                tensors.len()
            )));
        } else {
            WriteData::fixed(tensors.pop().expect("one"))
        }
    };
    drop(managed);
    Ok(data.with_semantic(semantic).with_selection(selection).with_attribute_mode(mode))
}
/// The prims a payload addresses: an index map, a mask, a leading count
/// or all. The arrays are copied into buffers allocated fallibly.
///
/// # Safety
/// `index_map` has `count` readable entries and `mask` `ceil(count / 64)`
/// words, when not NULL.
unsafe fn selection(d: &ovstage_write_data_t, what: &dyn Display) -> Result<Selection> {
    Ok(match (d.index_map.is_null(), d.mask.is_null()) {
        (false, false) => {
            return Err(Error::invalid_argument(format!("{what}: index_map and mask are mutually exclusive")));
        }
        (false, true) => {
            if d.count == 0 {
                return Err(Error::invalid_argument(format!("{what}: index_map needs a non-zero count")));
            }
            // SAFETY: `count` entries, per the caller.
            let map = unsafe { std::slice::from_raw_parts(d.index_map, d.count as usize) };
            Selection::IndexMap(copy_of(map, "index_map", what)?)
        }
        (true, false) => {
            if d.count == 0 {
                return Err(Error::invalid_argument(format!("{what}: mask needs a non-zero count")));
            }
            let words = (d.count as usize).div_ceil(64);
            // SAFETY: `ceil(count / 64)` words, per the caller.
            let bits = unsafe { std::slice::from_raw_parts(d.mask, words) };
            Selection::Mask { count: d.count, bits: copy_of(bits, "mask", what)? }
        }
        (true, true) if d.count == 0 => Selection::All,
        (true, true) => Selection::Leading(d.count),
    })
}

/// A copy of a client array, allocated fallibly.
fn copy_of<T: Copy>(src: &[T], name: &str, what: &dyn Display) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(src.len()).map_err(|_| {
        Error::new(Status::OutOfMemory, format!("{what}: could not allocate a copy of {name} ({} entries)", src.len()))
    })?;
    out.extend_from_slice(src);
    Ok(out)
}
