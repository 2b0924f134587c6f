//! Errors at the boundary: the thread's last error message, status
//! conversion, and the panic guard every export runs inside.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::ffi::{CString, c_char};
use std::panic::{AssertUnwindSafe, PanicHookInfo, catch_unwind};
use std::sync::{Once, RwLock};

use ovstage_types::{Error, Status};

use crate::abi::api_types::{ovstage_api_status_t, ovstage_enqueue_result_t};
use crate::abi::ovx_string::ovx_string_t;
use crate::abi::ovx_types::{ovx_api_result_t, ovx_api_status_t};
use crate::log;
use crate::strings::{c_string, view};

thread_local! {
    /// The message of the thread's most recent failed synchronous call.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
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

thread_local! {
    /// How many export guards the thread is inside.
    static GUARDED: Cell<u32> = const { Cell::new(0) };
}

/// What a panic the library does not catch reports through: the hook that
/// was installed before ours (the standard one prints to stderr).
type Fallback = Box<dyn Fn(&PanicHookInfo<'_>) + Send + Sync>;

static FALLBACK: RwLock<Option<Fallback>> = RwLock::new(None);

/// Installs, once per process, a panic hook that keeps the library's own
/// panics off the client's stderr: a panic inside an export or on one of
/// our lane threads is caught (and becomes INTERNAL with its message), so
/// the hook only logs where it happened, on the `ovstage.api` channel at
/// verbose level. Every other panic of the process goes to the hook that
/// was there before.
pub(crate) fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        *crate::sync::write(&FALLBACK) = Some(std::panic::take_hook());
        std::panic::set_hook(Box::new(|info| {
            if caught_by_us() {
                let at = info.location().map_or_else(String::new, |l| format!(" at {}:{}", l.file(), l.line()));
                let message = format!("caught panic{at}: {}", panic_text(info.payload()));
                log::emit(log::Severity::Verbose, "ovstage.api", &message);
            } else if let Some(fallback) = &*crate::sync::read(&FALLBACK) {
                fallback(info);
            }
        }));
    });
}

/// Whether a panic on this thread now is one the library catches: inside
/// an export, or on a lane thread (named `ovstage-<stage>-lane<i>`), where
/// the scheduler catches a job's panic.
fn caught_by_us() -> bool {
    GUARDED.with(Cell::get) > 0
        || std::thread::current().name().is_some_and(|n| n.starts_with("ovstage-") && n.contains("-lane"))
}

/// Runs the body of export `call`, turning a panic into INTERNAL with a
/// message (a panic must never unwind into C).
///
/// Always inlined, with the panic's report out of line: called, it took
/// the body's captures as a block the export had just stored word by word
/// and copied them with wider loads, which stall on store forwarding (a
/// third of a poll's 21 ns).
#[inline(always)]
pub(crate) fn guard<R: Failure>(call: &str, body: impl FnOnce() -> R) -> R {
    install_panic_hook();
    // One look-up of the thread-local for both updates (a call through the
    // thread-local costs as much as the rest of a small export's guard);
    // the body's panic is caught inside, so the count always comes back.
    let result = GUARDED.with(|g| {
        g.set(g.get() + 1);
        let result = catch_unwind(AssertUnwindSafe(body));
        g.set(g.get() - 1);
        result
    });
    match result {
        Ok(r) => r,
        Err(payload) => caught(call, &*payload),
    }
}

/// The report of a panic `guard` caught.
#[cold]
#[inline(never)]
fn caught<R: Failure>(call: &str, payload: &(dyn Any + Send)) -> R {
    let message = format!("{call}: internal error (a bug in ovstage): {}", panic_text(payload));
    log::emit(log::Severity::Error, "ovstage.api", &message);
    set_last_error(&message);
    R::failure(Status::Internal)
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
    fn caught_panics_stay_off_stderr_and_others_reach_the_previous_hook() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let _g = crate::tests::exclusive();
        install_panic_hook();
        let passed_on = Arc::new(AtomicUsize::new(0));
        let counter = passed_on.clone();
        let previous = FALLBACK.write().unwrap().replace(Box::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
        let _: ovstage_api_status_t = guard("test_call", || panic!("inside an export"));
        assert_eq!(passed_on.load(Ordering::SeqCst), 0, "a panic inside a guard is ours");
        let lane = std::thread::Builder::new().name("ovstage-t-lane0".into());
        let job = lane.spawn(|| catch_unwind(|| panic!("in a job")).is_err()).unwrap();
        assert!(job.join().unwrap());
        assert_eq!(passed_on.load(Ordering::SeqCst), 0, "a panic on a lane is ours");
        assert!(catch_unwind(|| panic!("the client's own")).is_err());
        assert_eq!(passed_on.load(Ordering::SeqCst), 1, "any other panic reaches the previous hook");
        *FALLBACK.write().unwrap() = previous;
    }

    #[test]
    fn interior_nul_bytes_do_not_truncate_messages() {
        assert_eq!(c_string("a\0b").to_str().unwrap(), "a\u{FFFD}b");
    }
}
