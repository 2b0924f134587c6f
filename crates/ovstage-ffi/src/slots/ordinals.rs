//! Write-floor advances and ordinal queries.

use ovstage_types::{Error, OrdinalQueryHandle, Result, Scope, Timeout};
use stage::FloorScope;

use super::{enqueue_slot, handle_slot, in_call, sync_slot};
use crate::abi::api_types::{
    ovstage_api_status_t, ovstage_context_t, ovstage_enqueue_result_t, ovstage_ordinal_query_handle_t,
    ovstage_ordinal_t, ovstage_timeout_ns_t, ovstage_write_floor_desc_t,
};
use crate::abi::ovx_string::ovx_string_or_token_t;
use crate::strings;

/// `advance_write_floor`.
pub(super) unsafe extern "C" fn advance_write_floor(
    ctx: *mut ovstage_context_t,
    desc: *const ovstage_write_floor_desc_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "advance_write_floor";
    // SAFETY: the contract's preconditions on `ctx` and `desc`.
    unsafe {
        enqueue_slot(ctx, CALL, |c| {
            strings::non_null(desc, format_args!("{CALL}: desc"))?;
            let d = &*desc;
            let attrs = strings::tokens(d.attributes, d.attribute_count, format_args!("{CALL}: desc->attributes"))?;
            let scope = match Scope::from_raw(d.scope.0) {
                Some(Scope::All) => FloorScope::All,
                Some(Scope::Include) => FloorScope::Include(attrs.into_vec()),
                Some(Scope::Exclude) => FloorScope::Exclude(attrs.into_vec()),
                None => {
                    return Err(Error::invalid_argument(format!(
                        "{CALL}: scope {} is not ALL (0), INCLUDE (1) or EXCLUDE (2)",
                        d.scope.0
                    )));
                }
            };
            c.stage.advance_write_floor(d.ordinal, scope).map_err(in_call(CALL))
        })
    }
}

/// `get_oldest_preserved_ordinal`.
pub(super) unsafe extern "C" fn get_oldest_preserved_ordinal(
    ctx: *mut ovstage_context_t,
    out: *mut ovstage_ordinal_query_handle_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "get_oldest_preserved_ordinal";
    // SAFETY: the contract's preconditions on `ctx` and `out`.
    unsafe {
        handle_slot(ctx, CALL, out, |c| {
            let e = c.stage.get_oldest_preserved_ordinal().map_err(in_call(CALL))?;
            Ok((e.handle.get(), e.op))
        })
    }
}

/// `get_attribute_write_floor` (an empty attribute is the global floor).
pub(super) unsafe extern "C" fn get_attribute_write_floor(
    ctx: *mut ovstage_context_t,
    attribute: ovx_string_or_token_t,
    out: *mut ovstage_ordinal_query_handle_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "get_attribute_write_floor";
    // SAFETY: the contract's preconditions on `ctx`, `attribute` and `out`.
    unsafe {
        handle_slot(ctx, CALL, out, |c| {
            let name = strings::text(attribute.string, format_args!("{CALL}: attribute"))?;
            let attr = if attribute.token == 0 && name.is_empty() {
                None
            } else {
                Some(strings::attribute(attribute, format_args!("{CALL}: attribute"))?)
            };
            let e = c.stage.get_attribute_write_floor(attr).map_err(in_call(CALL))?;
            Ok((e.handle.get(), e.op))
        })
    }
}

fn ordinal_handle(raw: u64, call: &str) -> Result<OrdinalQueryHandle> {
    OrdinalQueryHandle::from_raw(raw).ok_or_else(|| {
        Error::invalid_handle(format!(
            "{call}: the handle is 0 (OVSTAGE_INVALID_ORDINAL_QUERY_HANDLE), which a rejected enqueue leaves behind"
        ))
    })
}

/// `fetch_ordinal`.
pub(super) unsafe extern "C" fn fetch_ordinal(
    ctx: *mut ovstage_context_t,
    handle: ovstage_ordinal_query_handle_t,
    timeout: ovstage_timeout_ns_t,
    out: *mut ovstage_ordinal_t,
) -> ovstage_api_status_t {
    const CALL: &str = "fetch_ordinal";
    // SAFETY: the contract's preconditions on `ctx` and `out`.
    unsafe {
        sync_slot(ctx, CALL, |c| {
            strings::non_null(out, format_args!("{CALL}: out_ordinal"))?;
            let h = ordinal_handle(handle, CALL)?;
            let v = c.stage.fetch_ordinal(h, Timeout::from_nanos(timeout)).map_err(in_call(CALL))?;
            out.write(v.get());
            Ok(())
        })
    }
}

/// `release_ordinal_query`.
pub(super) unsafe extern "C" fn release_ordinal_query(
    ctx: *mut ovstage_context_t,
    handle: ovstage_ordinal_query_handle_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "release_ordinal_query";
    // SAFETY: the contract's precondition on `ctx`.
    unsafe {
        enqueue_slot(ctx, CALL, |c| c.stage.release_ordinal_query(ordinal_handle(handle, CALL)?).map_err(in_call(CALL)))
    }
}
