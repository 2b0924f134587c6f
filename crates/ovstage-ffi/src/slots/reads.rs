//! Reads: enqueue, fetch groups, release groups and handles.

use ovstage_dlpack::ReadTensors;
use ovstage_types::{Error, OrdinalRange, ReadHandle, Result, Status, Timeout};

use super::queries::query_handle;
use super::{enqueue_slot, handle_slot, in_call, placed, with_context};
use crate::abi::api_types::{
    ovstage_api_status_t, ovstage_context_t, ovstage_enqueue_result_t, ovstage_ordinal_range_t, ovstage_query_handle_t,
    ovstage_read_group_t, ovstage_read_handle_t, ovstage_timeout_ns_t,
};
use crate::abi::ovx_string::ovx_token_t;
use crate::abi::placement::ovstage_placement_t;
use crate::error::{c_status, report};
use crate::results::HeldGroup;
use crate::strings::{self, Arg};

fn read_handle(raw: u64, call: &str) -> Result<ReadHandle> {
    ReadHandle::from_raw(raw).ok_or_else(|| {
        // 0 is never a handle: a bad argument (as the reference reports it),
        // not a stale handle.
        Error::invalid_argument(format!(
            "{call}: the handle is 0 (OVSTAGE_INVALID_READ_HANDLE), which a rejected enqueue leaves behind"
        ))
    })
}

/// The stage's range for a C range.
pub(crate) fn range(r: &ovstage_ordinal_range_t, call: &str) -> Result<OrdinalRange> {
    if r.has_start_ordinal.get() {
        OrdinalRange::changes(r.start_ordinal, r.end_ordinal).map_err(|e| e.prefixed(call))
    } else {
        Ok(OrdinalRange::snapshot(r.end_ordinal))
    }
}

/// `read_attributes`.
pub(super) unsafe extern "C" fn read_attributes(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    attrs: *const ovx_token_t,
    attr_count: usize,
    r: ovstage_ordinal_range_t,
    out: *mut ovstage_read_handle_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "read_attributes";
    // The placed slot's body without a placement, spelled out: the hot read
    // path keeps its constant call name and no placement checks.
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        handle_slot(ctx, CALL, out, |c| {
            let q = query_handle(handle, CALL)?;
            let attrs = strings::tokens(attrs, attr_count, Arg(CALL, "attrs"))?;
            let e = c.stage.read_attributes(q, &attrs, range(&r, CALL)?).map_err(in_call(CALL))?;
            Ok((e.handle.get(), e.op))
        })
    }
}

/// `read_attributes`, or `read_attributes_on_device` with `placement`
/// (NULL: none).
///
/// # Safety
/// The contract's preconditions on the pointers.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn read_attributes_placed(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    attrs: *const ovx_token_t,
    attr_count: usize,
    r: ovstage_ordinal_range_t,
    placement: *const ovstage_placement_t,
    out: *mut ovstage_read_handle_t,
    call: &'static str,
) -> ovstage_enqueue_result_t {
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        handle_slot(ctx, call, out, |c| {
            let placed = placed::placement(placement, call)?;
            let q = query_handle(handle, call)?;
            let attrs = strings::tokens(attrs, attr_count, Arg(call, "attrs"))?;
            let range = range(&r, call)?;
            let e = if placed.is_unplaced() {
                c.stage.read_attributes(q, &attrs, range)
            } else {
                let on = placed.read_record(call)?;
                // SAFETY: the placement's handles are the caller's, live
                // until the read has run, per the contract.
                let finish = placed.read_finisher(on, call);
                c.stage.read_attributes_finishing(q, &attrs, range, finish)
            };
            let e = e.map_err(in_call(call))?;
            Ok((e.handle.get(), e.op))
        })
    }
}

/// `fetch_read_next`: END_OF_ITERATION after the last group.
pub(super) unsafe extern "C" fn fetch_read_next(
    ctx: *mut ovstage_context_t,
    handle: ovstage_read_handle_t,
    timeout: ovstage_timeout_ns_t,
    out: *mut ovstage_read_group_t,
) -> ovstage_api_status_t {
    const CALL: &str = "fetch_read_next";
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        with_context(ctx, CALL, |c| {
            let r = match strings::non_null(out, Arg(CALL, "out_group")).and_then(|()| read_handle(handle, CALL)) {
                Ok(r) => r,
                Err(e) => return report(&e),
            };
            // The group goes into its holder's box in one copy (a group is
            // a few hundred bytes), its descriptor beside it.
            match ReadTensors::fetch(&c.stage, r, Timeout::from_nanos(timeout)) {
                Ok(Some(held)) => {
                    let view = c.results.groups.insert_view(HeldGroup::new(held), |id, held| held.view(id));
                    out.write(view);
                    c_status(Status::Ok)
                }
                Ok(None) => c_status(Status::EndOfIteration),
                Err(e) => report(&in_call(CALL)(e)),
            }
        })
    }
}

/// `release_group`.
pub(super) unsafe extern "C" fn release_group(
    ctx: *mut ovstage_context_t,
    group: *const ovstage_read_group_t,
) -> ovstage_api_status_t {
    const CALL: &str = "release_group";
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        super::sync_slot(ctx, CALL, |c| {
            strings::non_null(group, Arg(CALL, "group"))?;
            let id = (*group).read_group_id;
            // Dropping the held group releases its pin on storage (what
            // `Stage::release_group` does), without moving it out first.
            match c.results.groups.remove(id) {
                Some(held) => drop(held),
                None => {
                    return Err(Error::invalid_handle(format!(
                        "{CALL}: read group {id:#x} is unknown or already released"
                    )));
                }
            }
            Ok(())
        })
    }
}

/// `release_read`.
pub(super) unsafe extern "C" fn release_read(
    ctx: *mut ovstage_context_t,
    handle: ovstage_read_handle_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "release_read";
    // SAFETY: the contract's precondition on `ctx`.
    unsafe { enqueue_slot(ctx, CALL, |c| c.stage.release_read(read_handle(handle, CALL)?).map_err(in_call(CALL))) }
}
