//! Map sessions: writable groups filled in place and committed.

use ovstage_types::{AttributeMode, DType, DTypeCode, Error, MapHandle, Result, Semantic, Status, Timeout};
use stage::MapDesc;

use super::queries::query_handle;
use super::writes::prim_mode;
use super::{enqueue_slot, handle_slot, in_call, placed, with_context};
use crate::abi::api_types::{
    ovstage_api_status_t, ovstage_context_t, ovstage_cuda_sync_t, ovstage_enqueue_result_t, ovstage_map_desc_t,
    ovstage_map_group_t, ovstage_map_handle_t, ovstage_ordinal_t, ovstage_query_handle_t, ovstage_timeout_ns_t,
};
use crate::abi::placement::ovstage_placement_t;
use crate::error::{c_status, report};
use crate::results::HeldMapGroup;
use crate::results::PlacedMap;
use crate::strings;
use ovstage_dlpack::placement::Target;

fn map_handle(raw: u64, call: &str) -> Result<MapHandle> {
    MapHandle::from_raw(raw).ok_or_else(|| {
        // 0 is never a handle: a bad argument (as the reference reports it),
        // not a stale handle.
        Error::invalid_argument(format!(
            "{call}: the handle is 0 (OVSTAGE_INVALID_MAP_HANDLE), which a rejected enqueue leaves behind"
        ))
    })
}

/// `write_done_sync` is for sessions mapped on a CUDA device; host sessions
/// have no device work to wait for.
fn commit_sync(session: Option<PlacedMap>, sync: ovstage_cuda_sync_t, call: &str) -> Result<()> {
    let on_device = session.is_some_and(|s| matches!(s.placement.target, Target::Cuda(_)));
    if !on_device && (sync.stream != 0 || sync.wait_event != 0) {
        return Err(Error::invalid_argument(format!(
            "{call}: write_done_sync must be zero for a session mapped on the host (stream {}, event {})",
            sync.stream, sync.wait_event
        )));
    }
    Ok(())
}

/// `map_attribute`.
pub(super) unsafe extern "C" fn map_attribute(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    desc: *const ovstage_map_desc_t,
    ordinal: ovstage_ordinal_t,
    element_sizes: *const usize,
    element_count: usize,
    out: *mut ovstage_map_handle_t,
) -> ovstage_enqueue_result_t {
    // SAFETY: forwarded; no placement is the unplaced call.
    unsafe {
        map_attribute_placed(
            ctx,
            handle,
            desc,
            ordinal,
            element_sizes,
            element_count,
            std::ptr::null(),
            out,
            "map_attribute",
        )
    }
}

/// `map_attribute`, or `map_attribute_on_device` with `placement` (NULL:
/// none).
///
/// # Safety
/// The contract's preconditions on the pointers.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn map_attribute_placed(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    desc: *const ovstage_map_desc_t,
    ordinal: ovstage_ordinal_t,
    element_sizes: *const usize,
    element_count: usize,
    placement: *const ovstage_placement_t,
    out: *mut ovstage_map_handle_t,
    call: &'static str,
) -> ovstage_enqueue_result_t {
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        handle_slot(ctx, call, out, |c| {
            let placed = placed::placement(placement, call)?;
            placed.check_map(!element_sizes.is_null(), call)?;
            let record = placed.map_record(call)?;
            strings::non_null(desc, format_args!("{call}: desc"))?;
            let d = &*desc;
            let q = query_handle(handle, call)?;
            let attribute = strings::attribute(d.attribute, format_args!("{call}: desc->attribute"))?;
            let dtype = if (d.dtype.code, d.dtype.bits, d.dtype.lanes) == (0, 0, 0) {
                None
            } else {
                let code = DTypeCode::from_raw(d.dtype.code).ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "{call}: desc->dtype.code {} is not a DLPack type code",
                        d.dtype.code
                    ))
                })?;
                Some(DType::new(code, d.dtype.bits, d.dtype.lanes))
            };
            // A map session accepts a semantic value the contract does not
            // name, as the published library does (it declares no role);
            // writes refuse one, as there too.
            let semantic = Semantic::from_raw(d.semantic.0).unwrap_or(Semantic::None);
            let attribute_mode = AttributeMode::from_raw(d.attribute_mode.0).ok_or_else(|| {
                Error::invalid_argument(format!(
                    "{call}: desc->attribute_mode {} is not REJECT or FORCE",
                    d.attribute_mode.0
                ))
            })?;
            let desc = MapDesc { attribute, dtype, semantic, prim_mode: prim_mode(d.prim_mode, call)?, attribute_mode };
            let sizes = if element_sizes.is_null() {
                if element_count != 0 {
                    return Err(Error::invalid_argument(format!(
                        "{call}: element_sizes is NULL but element_count is {element_count}"
                    )));
                }
                None
            } else {
                let s = strings::slice(element_sizes, element_count, format_args!("{call}: element_sizes"))?;
                let mut sizes = Vec::new();
                sizes.try_reserve_exact(s.len()).map_err(|_| {
                    Error::new(
                        Status::OutOfMemory,
                        format!("{call}: could not allocate a copy of element_sizes ({} entries)", s.len()),
                    )
                })?;
                sizes.extend(s.iter().map(|n| *n as u64));
                Some(sizes)
            };
            let e = c.stage.map_attribute(q, desc, ordinal, sizes.as_deref()).map_err(in_call(call))?;
            if !placed.is_unplaced() {
                c.results.map_placements.insert(e.handle, PlacedMap { placement: placed, record });
            }
            Ok((e.handle.get(), e.op))
        })
    }
}

/// `fetch_map_next`: END_OF_ITERATION after the last group.
pub(super) unsafe extern "C" fn fetch_map_next(
    ctx: *mut ovstage_context_t,
    handle: ovstage_map_handle_t,
    timeout: ovstage_timeout_ns_t,
    out: *mut ovstage_map_group_t,
) -> ovstage_api_status_t {
    const CALL: &str = "fetch_map_next";
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        with_context(ctx, CALL, |c| {
            let fetched = (|| {
                strings::non_null(out, format_args!("{CALL}: out_group"))?;
                let m = map_handle(handle, CALL)?;
                Ok((m, c.stage.fetch_map_next(m, Timeout::from_nanos(timeout)).map_err(in_call(CALL))?))
            })();
            match fetched {
                Ok((m, Some(group))) => match placed::map_group(c, m, group, CALL) {
                    Ok(held) => {
                        out.write(c.results.hold_map_group(held));
                        c_status(Status::Ok)
                    }
                    Err(e) => report(&e),
                },
                Ok((_, None)) => c_status(Status::EndOfIteration),
                Err(e) => report(&e),
            }
        })
    }
}

/// `unmap_group`.
pub(super) unsafe extern "C" fn unmap_group(
    ctx: *mut ovstage_context_t,
    handle: ovstage_map_handle_t,
    group: *const ovstage_map_group_t,
    sync: ovstage_cuda_sync_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "unmap_group";
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        enqueue_slot(ctx, CALL, |c| {
            let m = map_handle(handle, CALL)?;
            strings::non_null(group, format_args!("{CALL}: group"))?;
            let session = c.results.map_placements.get(m);
            commit_sync(session, sync, CALL)?;
            let mut g = c.results.take_map_group(m, (*group).data.tensors as usize)?;
            if let Err(e) = placed::bring_back(session, std::slice::from_mut(&mut g), sync, CALL) {
                c.results.hold_map_group(g);
                return Err(e);
            }
            let op = c.stage.unmap_group(m, g.into_group()).map_err(in_call(CALL))?;
            placed::after_commit(c, op, session, CALL)
        })
    }
}

/// `unmap_attribute`: commits every group not committed yet and ends the
/// session.
pub(super) unsafe extern "C" fn unmap_attribute(
    ctx: *mut ovstage_context_t,
    handle: ovstage_map_handle_t,
    sync: ovstage_cuda_sync_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "unmap_attribute";
    // SAFETY: the contract's precondition on `ctx`.
    unsafe {
        enqueue_slot(ctx, CALL, |c| {
            let m = map_handle(handle, CALL)?;
            let session = c.results.map_placements.get(m);
            commit_sync(session, sync, CALL)?;
            let mut groups = c.results.take_map_groups(m);
            if let Err(e) = placed::bring_back(session, &mut groups, sync, CALL) {
                for g in groups {
                    c.results.hold_map_group(g);
                }
                return Err(e);
            }
            let groups: Vec<_> = groups.into_iter().map(HeldMapGroup::into_group).collect();
            let op = c.stage.unmap_attribute(m, groups).map_err(in_call(CALL))?;
            c.results.map_placements.remove(m);
            placed::after_commit(c, op, session, CALL)
        })
    }
}
