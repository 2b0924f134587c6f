//! Op tracking: `wait_op`, `release_op`, `get_last_op_error`.
//!
//! What `wait_op` reports lives in thread-local storage until the thread's
//! next `wait_op`: the failed op ids and the messages handed out for them.

use std::cell::RefCell;
use std::ffi::CString;

use ovstage_types::{Error, OpId, Status, Timeout};
use stage::WaitError;

use super::{sync_slot, with_context};
use crate::abi::api_types::{
    ovstage_api_status_t, ovstage_context_t, ovstage_op_id_t, ovstage_op_wait_result_t, ovstage_timeout_ns_t,
};
use crate::abi::ovx_string::ovx_string_t;
use crate::error::{self, c_status, report};
use crate::strings;

#[derive(Default)]
struct WaitReport {
    /// Failed op ids the last wait observed.
    failed: Vec<u64>,
    /// Messages handed out since: (context, op id, text).
    messages: Vec<(usize, u64, CString)>,
}

thread_local! {
    static WAIT_REPORT: RefCell<WaitReport> = RefCell::new(WaitReport::default());
}

fn op_id(raw: u64, call: &str) -> Result<OpId, Error> {
    OpId::from_raw(raw).ok_or_else(|| Error::invalid_argument(format!("{call}: op id 0 is OVSTAGE_INVALID_OP_ID")))
}

/// `wait_op`.
pub(super) unsafe extern "C" fn wait_op(
    ctx: *mut ovstage_context_t,
    op: ovstage_op_id_t,
    timeout: ovstage_timeout_ns_t,
    out: *mut ovstage_op_wait_result_t,
) -> ovstage_api_status_t {
    const CALL: &str = "wait_op";
    // SAFETY: the contract's precondition on `ctx`.
    unsafe {
        with_context(ctx, CALL, |c| {
            if out.is_null() {
                return report(&Error::invalid_argument(format!("{CALL}: out_wait_result is NULL")));
            }
            let op = match op_id(op, CALL) {
                Ok(op) => op,
                Err(e) => return report(&e),
            };
            let outcome = c.stage.wait(op, Timeout::from_nanos(timeout));
            WAIT_REPORT.with(|r| {
                let mut r = r.borrow_mut();
                r.messages.clear();
                r.failed.clear();
                let mut result = ovstage_op_wait_result_t {
                    error_op_ids: std::ptr::null(),
                    error_op_id_count: 0,
                    lowest_pending_op_id: 0,
                };
                let status = match outcome {
                    Ok(()) => c_status(Status::Ok),
                    Err(WaitError::Timeout { lowest_pending }) => {
                        result.lowest_pending_op_id = lowest_pending.get();
                        c_status(Status::Timeout)
                    }
                    Err(WaitError::Failed { ops }) => {
                        r.failed.extend(ops.iter().map(|o| o.get()));
                        result.error_op_ids = r.failed.as_ptr();
                        result.error_op_id_count = r.failed.len();
                        let why =
                            c.stage.op_error(ops[0]).map_or_else(|| format!("{} failed", ops[0]), |e| e.to_string());
                        error::fail(Status::OpFailed, &format!("{CALL}: {op} failed: {why}"))
                    }
                    Err(WaitError::Unknown(e)) => report(&e),
                };
                // SAFETY: checked non-NULL; writable per the contract.
                out.write(result);
                status
            })
        })
    }
}

/// `release_op`.
pub(super) unsafe extern "C" fn release_op(ctx: *mut ovstage_context_t, op: ovstage_op_id_t) -> ovstage_api_status_t {
    const CALL: &str = "release_op";
    // SAFETY: the contract's precondition on `ctx`.
    unsafe { sync_slot(ctx, CALL, |c| c.stage.release_op(op_id(op, CALL)?)) }
}

/// `get_last_op_error`: the failure message of a tracked op, kept until the
/// thread's next `wait_op`.
pub(super) unsafe extern "C" fn get_last_op_error(ctx: *mut ovstage_context_t, op: ovstage_op_id_t) -> ovx_string_t {
    // SAFETY: the contract's precondition on `ctx`.
    unsafe {
        with_context(ctx, "get_last_op_error", |c| {
            let Some(id) = OpId::from_raw(op) else { return ovx_string_t::NONE };
            let key = (c as *const _ as usize, op);
            WAIT_REPORT.with(|r| {
                let mut r = r.borrow_mut();
                if let Some((_, _, text)) = r.messages.iter().find(|(k, o, _)| (*k, *o) == key) {
                    return strings::view(text);
                }
                match c.stage.op_error(id) {
                    Some(e) => {
                        r.messages.push((key.0, key.1, strings::c_string(&e.to_string())));
                        strings::view(&r.messages.last().expect("pushed").2)
                    }
                    None => ovx_string_t::NONE,
                }
            })
        })
    }
}
