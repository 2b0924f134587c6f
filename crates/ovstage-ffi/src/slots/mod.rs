//! The instance's 28-slot function table and the path dictionary's 12.
//!
//! Each slot finds its context, runs under the panic guard and turns the
//! stage's `Result` into the contract's status, recording the message of a
//! failure as the thread's last error.

use ovstage_types::{Error, Result, Status};

use crate::abi::api::ovstage_vtable_t;
use crate::abi::api_types::{ovstage_api_status_t, ovstage_context_t, ovstage_enqueue_result_t};
use crate::error::{Failure, c_status, guard, report};
use crate::instance::{self, Context};

mod diagnostics;
pub(crate) mod dictionary;
mod maps;
mod ops;
mod ordinals;
mod placed;
mod queries;
mod reads;
mod writes;

/// The data-plane function table every instance shares.
pub(crate) static VTABLE: ovstage_vtable_t = ovstage_vtable_t {
    wait_op: Some(ops::wait_op),
    release_op: Some(ops::release_op),
    advance_write_floor: Some(ordinals::advance_write_floor),
    get_oldest_preserved_ordinal: Some(ordinals::get_oldest_preserved_ordinal),
    get_attribute_write_floor: Some(ordinals::get_attribute_write_floor),
    fetch_ordinal: Some(ordinals::fetch_ordinal),
    release_ordinal_query: Some(ordinals::release_ordinal_query),
    query: Some(queries::query),
    query_from_path_list: Some(queries::query_from_path_list),
    fetch_query_result: Some(queries::fetch_query_result),
    release_query_result: Some(queries::release_query_result),
    release_query: Some(queries::release_query),
    read_attributes: Some(reads::read_attributes),
    fetch_read_next: Some(reads::fetch_read_next),
    release_group: Some(reads::release_group),
    release_read: Some(reads::release_read),
    write_attribute: Some(writes::write_attribute),
    map_attribute: Some(maps::map_attribute),
    fetch_map_next: Some(maps::fetch_map_next),
    unmap_group: Some(maps::unmap_group),
    unmap_attribute: Some(maps::unmap_attribute),
    delete_attributes: Some(writes::delete_attributes),
    get_version: Some(diagnostics::get_version),
    get_error_string: Some(diagnostics::get_error_string),
    get_last_op_error: Some(ops::get_last_op_error),
    get_path_dictionary: Some(diagnostics::get_path_dictionary),
    write_attributes: Some(writes::write_attributes),
    query_extension: Some(diagnostics::query_extension),
};

/// Runs slot `call` with its context: NULL or destroyed contexts are
/// reported, panics become INTERNAL.
///
/// # Safety
/// `ctx` is NULL or the context of a live instance.
unsafe fn with_context<R: Failure>(ctx: *mut ovstage_context_t, call: &str, body: impl FnOnce(&Context) -> R) -> R {
    guard(call, || {
        // SAFETY: forwarded.
        match unsafe { instance::context(ctx, call) } {
            Ok(c) => body(c),
            Err(e) => {
                report(&e);
                R::failure(e.status())
            }
        }
    })
}

/// A synchronous slot: its outcome as a status.
///
/// # Safety
/// As for [`with_context`].
unsafe fn sync_slot(
    ctx: *mut ovstage_context_t,
    call: &str,
    body: impl FnOnce(&Context) -> Result<()>,
) -> ovstage_api_status_t {
    // SAFETY: forwarded.
    unsafe {
        with_context(ctx, call, |c| match body(c) {
            Ok(()) => c_status(Status::Ok),
            Err(e) => report(&e),
        })
    }
}

/// An enqueueing slot: its op as an enqueue result.
///
/// # Safety
/// As for [`with_context`].
unsafe fn enqueue_slot(
    ctx: *mut ovstage_context_t,
    call: &str,
    body: impl FnOnce(&Context) -> Result<ovstage_types::OpId>,
) -> ovstage_enqueue_result_t {
    // SAFETY: forwarded.
    unsafe { with_context(ctx, call, |c| crate::error::enqueue_result(body(c))) }
}

/// Prefixes a stage error with the slot's name unless it already names a
/// call.
fn in_call(call: &str) -> impl Fn(Error) -> Error + '_ {
    move |e| if e.message().starts_with(call) { e } else { e.prefixed(call) }
}

/// An enqueue that reserves a handle: `*out` is set to 0 first (so a
/// rejected call leaves the invalid handle) and to the handle when the op
/// is accepted. A NULL `out` is rejected before anything is enqueued.
///
/// # Safety
/// As for [`with_context`]; `out` is NULL or writable.
unsafe fn handle_slot(
    ctx: *mut ovstage_context_t,
    call: &str,
    out: *mut u64,
    body: impl FnOnce(&Context) -> Result<(u64, ovstage_types::OpId)>,
) -> ovstage_enqueue_result_t {
    // SAFETY: forwarded.
    unsafe {
        enqueue_slot(ctx, call, |c| {
            crate::strings::non_null(out, crate::strings::Arg(call, "the handle output pointer"))?;
            // SAFETY: checked non-NULL; writable per the contract.
            out.write(0);
            let (handle, op) = body(c)?;
            out.write(handle);
            Ok(op)
        })
    }
}
