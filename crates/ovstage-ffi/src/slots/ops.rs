//! Op tracking: `wait_op`, `release_op`, `get_last_op_error`.
//!
//! What `wait_op` reports lives in thread-local storage until the thread's
//! next `wait_op`: the failed op ids and the messages handed out for them.

use std::cell::RefCell;
use std::ffi::CString;
use std::sync::atomic::{AtomicUsize, Ordering};

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
    /// Whether this report is counted in `HOLDING_REPORTS`.
    counted: bool,
}

/// Threads whose report holds something. While it is 0 (no op has failed
/// since each thread's last wait), a wait has nothing to clear and skips
/// the thread-local report: a poll that succeeds reads one shared word
/// that nothing writes, instead of a thread-local whose lazy
/// initialization and destructor registration are checked on every
/// access. A thread's own count is always visible to it, so it never
/// skips a report of its own.
static HOLDING_REPORTS: AtomicUsize = AtomicUsize::new(0);

impl WaitReport {
    /// Counts this report as holding something (before it is filled).
    fn mark(&mut self) {
        if !self.counted {
            self.counted = true;
            HOLDING_REPORTS.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn clear(&mut self) {
        self.messages.clear();
        self.failed.clear();
        if self.counted {
            self.counted = false;
            HOLDING_REPORTS.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for WaitReport {
    fn drop(&mut self) {
        self.clear();
    }
}

thread_local! {
    static WAIT_REPORT: RefCell<WaitReport> = RefCell::new(WaitReport::default());
}

/// Forgets what the thread's last `wait_op` reported, when any thread's
/// report holds anything.
#[inline]
fn clear_report() {
    if HOLDING_REPORTS.load(Ordering::Relaxed) != 0 {
        WAIT_REPORT.with(|r| r.borrow_mut().clear());
    }
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
            clear_report();
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
                Err(WaitError::Failed { ops }) => WAIT_REPORT.with(|r| {
                    let mut r = r.borrow_mut();
                    r.mark();
                    r.failed.extend(ops.iter().map(|o| o.get()));
                    result.error_op_ids = r.failed.as_ptr();
                    result.error_op_id_count = r.failed.len();
                    let why = c.stage.op_error(ops[0]).map_or_else(|| format!("{} failed", ops[0]), |e| e.to_string());
                    error::fail(Status::OpFailed, &format!("{CALL}: {op} failed: {why}"))
                }),
                Err(WaitError::Unknown(e)) => report(&e),
            };
            // SAFETY: checked non-NULL; writable per the contract.
            out.write(result);
            status
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
                        r.mark();
                        r.messages.push((key.0, key.1, strings::c_string(&e.to_string())));
                        strings::view(&r.messages.last().expect("pushed").2)
                    }
                    None => ovx_string_t::NONE,
                }
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holding() -> usize {
        HOLDING_REPORTS.load(Ordering::Relaxed)
    }

    /// A report that holds something is counted until it is cleared or
    /// its thread exits, so waits elsewhere skip clearing only while no
    /// thread has anything to clear.
    #[test]
    fn reports_are_counted_until_cleared_or_their_thread_exits() {
        // No other test waits meanwhile.
        let _g = crate::tests::exclusive();
        let before = holding();
        WAIT_REPORT.with(|r| {
            let mut r = r.borrow_mut();
            r.mark();
            r.failed.push(7);
            r.mark();
        });
        assert_eq!(holding(), before + 1, "counted once");
        clear_report();
        assert_eq!(holding(), before);
        assert!(WAIT_REPORT.with(|r| r.borrow().failed.is_empty()), "cleared");
        std::thread::spawn(|| {
            WAIT_REPORT.with(|r| {
                let mut r = r.borrow_mut();
                r.mark();
                r.messages.push((1, 2, CString::new("failed").unwrap()));
            });
        })
        .join()
        .unwrap();
        assert_eq!(holding(), before, "a thread that exits with a report uncounts it");
    }
}
