//! The C ABI's side of the process-wide log stream: the dispatcher, the
//! filters and the queue are `ovstage`'s (shared with the Python package);
//! this module wraps the client's C function pointer as the callback.

use std::ffi::c_void;

use ovstage_types::{Error, Result, Timeout};

use crate::abi::ovx_string::ovx_string_t;
use crate::abi::stage_types::{ovstage_log_callback_t, ovstage_log_severity_t};
use crate::strings;

pub(crate) use stage::LogSeverity as Severity;

/// The installed C callback and its context pointer.
#[derive(Copy, Clone)]
struct Sink {
    callback: unsafe extern "C" fn(ovstage_log_severity_t, f64, ovx_string_t, *mut c_void),
    user_data: *mut c_void,
}

// SAFETY: the contract makes the callback callable from any thread with its
// `user_data`; the library only passes the pointer back, and the dispatcher
// never calls it concurrently with itself.
unsafe impl Send for Sink {}
// SAFETY: as above; the sink is only read.
unsafe impl Sync for Sink {}

impl Sink {
    fn deliver(&self, severity: Severity, timestamp: f64, text: &str) {
        let text = strings::c_string(text);
        // SAFETY: the callback was installed by the client for exactly this
        // use; `text` outlives the call.
        unsafe {
            (self.callback)(ovstage_log_severity_t(severity as i32), timestamp, strings::view(&text), self.user_data)
        };
    }
}

/// Logs `text` on `channel` when a callback is installed and its filter
/// passes it.
pub(crate) fn emit(severity: Severity, channel: &str, text: &str) {
    stage::log_message(severity, channel, text);
}

/// Installs (or, with no callback, removes) the log callback: the logic of
/// `ovstage_set_log_callback` once the process state is known to exist.
/// `call` names the export in messages.
///
/// # Safety
/// `channel_filter` is NULL or a readable string view; `callback` is
/// callable from another thread with `user_data`.
pub(crate) unsafe fn set_callback(
    severity: ovstage_log_severity_t,
    channel_filter: *const ovx_string_t,
    callback: ovstage_log_callback_t,
    user_data: *mut c_void,
    call: &str,
) -> Result<()> {
    let spec = if channel_filter.is_null() {
        ""
    } else {
        // SAFETY: a non-NULL filter is a readable view per the caller.
        unsafe { strings::text(*channel_filter, format_args!("{call}: channel_filter")) }?
    };
    let callback: Option<stage::LogCallback> = callback.map(|callback| {
        let sink = Sink { callback, user_data };
        Box::new(move |sev: Severity, ts: f64, text: &str| sink.deliver(sev, ts, text)) as stage::LogCallback
    });
    stage::set_log_callback(callback, severity.0, spec).map_err(|e: Error| e.prefixed(call))
}

/// Waits until every message queued so far was delivered, for at most
/// `timeout` ns (`u64::MAX`: no limit); false when the time ran out (the
/// logic of `ovstage_flush_log`).
pub(crate) fn flush(timeout: u64) -> bool {
    stage::flush_log(Timeout::from_nanos(timeout))
}

/// Delivers what is pending and removes the callback (the last process
/// reference went away).
pub(crate) fn shutdown() {
    stage::shutdown_log();
}
