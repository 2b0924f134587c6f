//! Errors at the boundary: the thread's last error message, status
//! conversion, and the panic guard every export runs inside.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

use ovstage_types::{Error, Status};

use crate::abi::api_types::{ovstage_api_status_t, ovstage_enqueue_result_t};
use crate::abi::ovx_string::ovx_string_t;
use crate::abi::ovx_types::{ovx_api_result_t, ovx_api_status_t};
use crate::log;

thread_local! {
    /// The message of the thread's most recent failed synchronous call.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// A NUL-terminated copy of `text` (interior NUL bytes become U+FFFD).
pub(crate) fn c_string(text: &str) -> CString {
    CString::new(text)
        .unwrap_or_else(|_| CString::new(text.replace('\0', "\u{FFFD}")).expect("interior NUL bytes were replaced"))
}

/// A view of a library-owned C string (NUL-terminated, as outputs must be).
pub(crate) fn view(s: &CString) -> ovx_string_t {
    ovx_string_t { ptr: s.as_ptr(), length: s.as_bytes().len() }
}

/// The thread's last error message (see `ovstage_get_last_error`).
pub(crate) fn last_error() -> ovx_string_t {
    LAST_ERROR.with(|e| e.borrow().as_ref().map_or(ovx_string_t::NONE, view))
}

/// Records `message` as the thread's last error; it also goes to the log at
/// verbose level, so a log callback can trace every rejected call.
pub(crate) fn set_last_error(message: &str) {
    log::emit(log::Severity::Verbose, "ovstage.api", message);
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(c_string(message)));
}

/// The C status of `status`.
pub(crate) fn c_status(status: Status) -> ovstage_api_status_t {
    ovstage_api_status_t(status.as_raw())
}

/// Records `message` and returns `status`.
pub(crate) fn fail(status: Status, message: &str) -> ovstage_api_status_t {
    set_last_error(message);
    c_status(status)
}

/// Records `err` and returns its status.
pub(crate) fn report(err: &Error) -> ovstage_api_status_t {
    fail(err.status(), &err.to_string())
}

/// What an export returns when it fails before doing anything, and when it
/// panicked.
pub(crate) trait Failure {
    /// The value for a failure with `status`.
    fn failure(status: Status) -> Self;
}

impl Failure for ovstage_api_status_t {
    fn failure(status: Status) -> Self {
        c_status(status)
    }
}

impl Failure for ovstage_enqueue_result_t {
    fn failure(status: Status) -> Self {
        rejected(status)
    }
}

impl Failure for ovx_string_t {
    fn failure(_: Status) -> Self {
        ovx_string_t::NONE
    }
}

impl Failure for () {
    fn failure(_: Status) -> Self {}
}

impl Failure for *const c_char {
    fn failure(_: Status) -> Self {
        c"internal error".as_ptr()
    }
}

impl<T> Failure for *mut T {
    fn failure(_: Status) -> Self {
        std::ptr::null_mut()
    }
}

impl Failure for ovx_api_result_t {
    fn failure(_: Status) -> Self {
        // A path-dictionary failure whose message could not be built: the
        // caller sees the error status with no message to release.
        ovx_api_result_t { status: ovx_api_status_t(1), error: ovx_string_t::NONE }
    }
}

/// An enqueue result that rejects the op with `status`.
pub(crate) fn rejected(status: Status) -> ovstage_enqueue_result_t {
    ovstage_enqueue_result_t { status: c_status(status), op_index: 0 }
}

/// An accepted enqueue.
pub(crate) fn accepted(op: ovstage_types::OpId) -> ovstage_enqueue_result_t {
    ovstage_enqueue_result_t { status: c_status(Status::Ok), op_index: op.get() }
}

/// Turns an enqueue outcome into its C result, recording a rejection.
pub(crate) fn enqueue_result(result: Result<ovstage_types::OpId, Error>) -> ovstage_enqueue_result_t {
    match result {
        Ok(op) => accepted(op),
        Err(e) => {
            report(&e);
            rejected(e.status())
        }
    }
}

/// Turns a synchronous outcome into its C status, recording a failure.
pub(crate) fn status_result(result: Result<(), Error>) -> ovstage_api_status_t {
    match result {
        Ok(()) => c_status(Status::Ok),
        Err(e) => report(&e),
    }
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

/// Runs the body of export `call`, turning a panic into INTERNAL with a
/// message (a panic must never unwind into C).
pub(crate) fn guard<R: Failure>(call: &str, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(payload) => {
            let message = format!("{call}: internal error (a bug in ovstage): {}", panic_text(&*payload));
            log::emit(log::Severity::Error, "ovstage.api", &message);
            set_last_error(&message);
            R::failure(Status::Internal)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_internal_with_a_message() {
        let status: ovstage_api_status_t = guard("test_call", || panic!("boom {}", 7));
        assert_eq!(status.0, Status::Internal.as_raw());
        let e = last_error();
        // SAFETY: the view points at the thread's NUL-terminated last error.
        let text = unsafe { std::ffi::CStr::from_ptr(e.ptr) }.to_str().unwrap();
        assert_eq!(text, "test_call: internal error (a bug in ovstage): boom 7");
        assert_eq!(text.len(), e.length);
        let r: ovstage_enqueue_result_t = guard("test_call", || panic!("again"));
        assert_eq!((r.status.0, r.op_index), (Status::Internal.as_raw(), 0));
    }

    #[test]
    fn interior_nul_bytes_do_not_truncate_messages() {
        assert_eq!(c_string("a\0b").to_str().unwrap(), "a\u{FFFD}b");
    }
}
