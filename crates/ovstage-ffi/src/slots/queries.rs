//! Queries: filter queries, path-list queries, their results and release.

use ovstage_types::{Error, FilterOp, PathList, QueryHandle, Result, Timeout};
use stage::Predicate;

use super::{enqueue_slot, handle_slot, in_call, sync_slot};
use crate::abi::api_types::{
    ovstage_api_status_t, ovstage_context_t, ovstage_enqueue_result_t, ovstage_filter_t, ovstage_query_handle_t,
    ovstage_query_result_t, ovstage_timeout_ns_t,
};
use crate::abi::ovx_string::ovx_token_t;
use crate::abi::ovx_types::ovx_primpath_list_t;
use crate::results::HeldQueryResult;
use crate::strings::{self, Arg};

/// A field of `filter->predicates[index]`, named in messages.
#[derive(Copy, Clone)]
struct PredicateArg {
    index: usize,
    field: &'static str,
}

impl std::fmt::Display for PredicateArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "query: filter->predicates[{}].{}", self.index, self.field)
    }
}

pub(super) fn query_handle(raw: u64, call: &str) -> Result<QueryHandle> {
    QueryHandle::from_raw(raw).ok_or_else(|| {
        // 0 is never a handle: a bad argument (as the reference reports it),
        // not a stale handle.
        Error::invalid_argument(format!(
            "{call}: the handle is 0 (OVSTAGE_INVALID_QUERY_HANDLE), which a rejected enqueue leaves behind"
        ))
    })
}

/// `query`.
pub(super) unsafe extern "C" fn query(
    ctx: *mut ovstage_context_t,
    filter: *const ovstage_filter_t,
    attrs: *const ovx_token_t,
    attr_count: usize,
    out: *mut ovstage_query_handle_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "query";
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        handle_slot(ctx, CALL, out, |c| {
            // Inline: a filter is usually a predicate or two.
            let mut predicates: smallvec::SmallVec<[Predicate<'_>; 2]> = smallvec::SmallVec::new();
            if !filter.is_null() {
                let f = &*filter;
                let preds = strings::slice(f.predicates, f.count, Arg(CALL, "filter->predicates"))?;
                for (i, p) in preds.iter().enumerate() {
                    let what = |field| PredicateArg { index: i, field };
                    let attribute = strings::attribute(p.attribute, what("attribute"))?;
                    let op = FilterOp::from_raw(p.op.0).ok_or_else(|| {
                        // As the reference: an operator it does not know is
                        // one it does not support.
                        Error::not_supported(format!("{}: {} is not a filter operator (0-7)", what("op"), p.op.0))
                    })?;
                    let values = strings::texts(p.values, p.value_count, what("values"))?;
                    predicates.push(Predicate::new(attribute, op, values));
                }
            }
            let attrs = strings::tokens(attrs, attr_count, Arg(CALL, "attrs"))?;
            let e = c.stage.query(&predicates, &attrs).map_err(in_call(CALL))?;
            Ok((e.handle.get(), e.op))
        })
    }
}

/// `query_from_path_list`.
pub(super) unsafe extern "C" fn query_from_path_list(
    ctx: *mut ovstage_context_t,
    list: ovx_primpath_list_t,
    out: *mut ovstage_query_handle_t,
) -> ovstage_api_status_t {
    const CALL: &str = "query_from_path_list";
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        sync_slot(ctx, CALL, |c| {
            strings::non_null(out, Arg(CALL, "out_handle"))?;
            out.write(0);
            let list = PathList::from_raw(list)
                .ok_or_else(|| Error::invalid_argument(format!("{CALL}: 0 is OVX_INVALID_PRIMPATH_LIST")))?;
            let q = c.stage.query_from_path_list(list).map_err(in_call(CALL))?;
            out.write(q.get());
            Ok(())
        })
    }
}

/// `fetch_query_result`.
pub(super) unsafe extern "C" fn fetch_query_result(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
    timeout: ovstage_timeout_ns_t,
    out: *mut ovstage_query_result_t,
) -> ovstage_api_status_t {
    const CALL: &str = "fetch_query_result";
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        sync_slot(ctx, CALL, |c| {
            strings::non_null(out, Arg(CALL, "out_result"))?;
            let q = query_handle(handle, CALL)?;
            let mut result = c.stage.fetch_query_result(q, Timeout::from_nanos(timeout)).map_err(in_call(CALL))?;
            // Collected in place: the C array reuses the result's list.
            let attributes: Box<[u64]> = std::mem::take(&mut result.attributes).into_iter().map(|t| t.get()).collect();
            let view = c.results.query_results.insert_view(HeldQueryResult { result, attributes }, |id, held| {
                ovstage_query_result_t {
                    query_result_id: id,
                    attributes: if held.attributes.is_empty() { std::ptr::null() } else { held.attributes.as_ptr() },
                    attribute_count: held.attributes.len(),
                    all_handle: held.result.handle.get(),
                    total_prim_count: held.result.total_prim_count,
                }
            });
            out.write(view);
            Ok(())
        })
    }
}

/// `release_query_result`.
pub(super) unsafe extern "C" fn release_query_result(
    ctx: *mut ovstage_context_t,
    result: *const ovstage_query_result_t,
) -> ovstage_api_status_t {
    const CALL: &str = "release_query_result";
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        sync_slot(ctx, CALL, |c| {
            strings::non_null(result, Arg(CALL, "result"))?;
            let id = (*result).query_result_id;
            let held = c.results.query_results.remove(id).ok_or_else(|| {
                Error::invalid_handle(format!("{CALL}: query result {id:#x} is unknown or already released"))
            })?;
            c.stage.release_query_result(held.result);
            Ok(())
        })
    }
}

/// `release_query`.
pub(super) unsafe extern "C" fn release_query(
    ctx: *mut ovstage_context_t,
    handle: ovstage_query_handle_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "release_query";
    // SAFETY: the contract's precondition on `ctx`.
    unsafe { enqueue_slot(ctx, CALL, |c| c.stage.release_query(query_handle(handle, CALL)?).map_err(in_call(CALL))) }
}
