//! The process-wide log callback: messages are filtered where they are
//! emitted and delivered, one at a time, on a dispatcher thread, so the
//! callback never runs on the caller's path. Without a callback, emitting
//! costs one atomic load.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ovstage_types::{Error, Result, Status};

use crate::abi::ovx_string::ovx_string_t;
use crate::abi::stage_types::{ovstage_log_callback_t, ovstage_log_severity_t};
use crate::strings;

/// Severity of a message (the contract's values).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Severity {
    Verbose = -2,
    Info = -1,
    Warning = 0,
    Error = 1,
}

/// A threshold: severities below it are dropped; `NONE` drops everything.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Level(i32);

const NONE: Level = Level(3);

fn parse_level(s: &str) -> Option<Level> {
    Some(match s.trim().to_ascii_lowercase().as_str() {
        "verbose" | "debug" => Level(Severity::Verbose as i32),
        "info" => Level(Severity::Info as i32),
        "warn" | "warning" => Level(Severity::Warning as i32),
        "error" | "fatal" => Level(Severity::Error as i32),
        "none" => NONE,
        _ => return None,
    })
}

/// Default threshold and per-channel rules (`channel=level`); the longest
/// rule naming the channel or one of its dotted parents wins.
#[derive(Clone, Debug)]
struct Filter {
    default: Level,
    rules: Vec<(String, Level)>,
}

impl Filter {
    fn parse(default: Level, spec: &str) -> Result<Filter> {
        let mut rules = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (channel, level) = part.split_once('=').ok_or_else(|| {
                Error::invalid_argument(format!("channel_filter: '{part}' is not of the form <channel>=<level>"))
            })?;
            let level = parse_level(level).ok_or_else(|| {
                Error::invalid_argument(format!(
                    "channel_filter: '{level}' is not a level (verbose, debug, info, warn, warning, error, fatal, none)"
                ))
            })?;
            if channel.trim().is_empty() {
                return Err(Error::invalid_argument(format!("channel_filter: '{part}' names no channel")));
            }
            rules.push((channel.trim().to_owned(), level));
        }
        Ok(Filter { default, rules })
    }

    fn passes(&self, severity: Severity, channel: &str) -> bool {
        let level = self
            .rules
            .iter()
            .filter(|(c, _)| channel == c || channel.strip_prefix(c.as_str()).is_some_and(|rest| rest.starts_with('.')))
            .max_by_key(|(c, _)| c.len())
            .map_or(self.default, |(_, l)| *l);
        level != NONE && severity as i32 >= level.0
    }
}

/// The installed callback and its context pointer.
#[derive(Copy, Clone)]
struct Sink {
    callback: unsafe extern "C" fn(ovstage_log_severity_t, f64, ovx_string_t, *mut c_void),
    user_data: *mut c_void,
}

// SAFETY: the contract makes the callback callable from any thread with its
// `user_data`; the library only passes the pointer back.
unsafe impl Send for Sink {}

struct Message {
    severity: Severity,
    timestamp: f64,
    text: String,
}

#[derive(Default)]
struct Queue {
    messages: VecDeque<Message>,
    /// Messages taken by the dispatcher and not delivered yet.
    in_flight: usize,
    /// Messages ever queued / delivered, for flush barriers.
    queued: u64,
    delivered: u64,
    stop: bool,
    sink: Option<Sink>,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        crate::sync::lock(&self.queue)
    }
}

struct Dispatcher {
    shared: Arc<Shared>,
    filter: Filter,
    thread: Option<JoinHandle<()>>,
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static LOGGER: Mutex<Option<Dispatcher>> = Mutex::new(None);

fn logger() -> MutexGuard<'static, Option<Dispatcher>> {
    crate::sync::lock(&LOGGER)
}

fn run(shared: Arc<Shared>) {
    let mut q = shared.lock();
    loop {
        if let Some(m) = q.messages.pop_front() {
            q.in_flight += 1;
            let sink = q.sink;
            drop(q);
            if let Some(sink) = sink {
                let text = strings::c_string(&m.text);
                let severity = ovstage_log_severity_t(m.severity as i32);
                // SAFETY: the callback was installed by the client for exactly
                // this use; `text` outlives the call.
                unsafe { (sink.callback)(severity, m.timestamp, strings::view(&text), sink.user_data) };
            }
            q = shared.lock();
            q.in_flight -= 1;
            q.delivered += 1;
            shared.done.notify_all();
        } else if q.stop {
            return;
        } else {
            q = shared.wake.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Logs `text` on `channel` when a callback is installed and its filter
/// passes it.
pub(crate) fn emit(severity: Severity, channel: &str, text: &str) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let guard = logger();
    let Some(d) = guard.as_ref() else { return };
    if !d.filter.passes(severity, channel) {
        return;
    }
    let timestamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let mut q = d.shared.lock();
    q.messages.push_back(Message { severity, timestamp, text: format!("[{channel}] {text}") });
    q.queued += 1;
    d.shared.wake.notify_one();
}

/// Waits until every message queued so far was delivered, up to `deadline`.
fn drain(shared: &Shared, deadline: Option<Instant>) -> bool {
    let mut q = shared.lock();
    let target = q.queued;
    while q.delivered < target {
        match deadline {
            None => q = shared.done.wait(q).unwrap_or_else(|e| e.into_inner()),
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return false;
                }
                q = shared.done.wait_timeout(q, d - now).unwrap_or_else(|e| e.into_inner()).0;
            }
        }
    }
    true
}

/// Stops the dispatcher after delivering what is queued.
fn stop(d: Dispatcher) {
    ENABLED.store(false, Ordering::Relaxed);
    drain(&d.shared, None);
    d.shared.lock().stop = true;
    d.shared.wake.notify_all();
    if let Some(t) = d.thread {
        let _ = t.join();
    }
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
    let default = match severity.0 {
        -2..=1 | 3 => Level(severity.0),
        other => {
            return Err(Error::invalid_argument(format!("{call}: severity {other} is not a log severity")));
        }
    };
    let spec = if channel_filter.is_null() {
        ""
    } else {
        // SAFETY: a non-NULL filter is a readable view per the caller.
        unsafe { strings::text(*channel_filter, format!("{call}: channel_filter")) }?
    };
    let filter = Filter::parse(default, spec).map_err(|e| e.prefixed(call))?;
    let mut slot = logger();
    match callback {
        None => {
            if let Some(d) = slot.take() {
                drop(slot);
                stop(d);
            }
        }
        Some(callback) => {
            let sink = Sink { callback, user_data };
            match slot.as_mut() {
                Some(d) => {
                    d.filter = filter;
                    d.shared.lock().sink = Some(sink);
                }
                None => {
                    let shared = Arc::new(Shared {
                        queue: Mutex::new(Queue { sink: Some(sink), ..Queue::default() }),
                        wake: Condvar::new(),
                        done: Condvar::new(),
                    });
                    let worker = shared.clone();
                    let thread = std::thread::Builder::new()
                        .name("ovstage-log".into())
                        .spawn(move || run(worker))
                        .map_err(|e| Error::new(Status::OutOfMemory, format!("{call}: no dispatcher thread: {e}")))?;
                    *slot = Some(Dispatcher { shared, filter, thread: Some(thread) });
                }
            }
            ENABLED.store(true, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// Waits until every message queued so far was delivered, for at most
/// `timeout` ns (`u64::MAX`: no limit); false when the time ran out (the
/// logic of `ovstage_flush_log`).
pub(crate) fn flush(timeout: u64) -> bool {
    let shared = match logger().as_ref() {
        Some(d) => d.shared.clone(),
        None => return true,
    };
    let deadline = match timeout {
        u64::MAX => None,
        ns => Some(Instant::now() + Duration::from_nanos(ns)),
    };
    drain(&shared, deadline)
}

/// Delivers what is pending and removes the callback (the last process
/// reference went away).
pub(crate) fn shutdown() {
    let d = logger().take();
    if let Some(d) = d {
        stop(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_pick_the_most_specific_rule() {
        let f = Filter::parse(Level(0), "ovstage=error, ovstage.api=verbose").unwrap();
        assert!(f.passes(Severity::Verbose, "ovstage.api"));
        assert!(!f.passes(Severity::Warning, "ovstage"));
        assert!(f.passes(Severity::Error, "ovstage.paths"));
        assert!(f.passes(Severity::Warning, "other"));
        assert!(!f.passes(Severity::Info, "other"));
        assert!(!f.passes(Severity::Info, "ovstage.apix"), "a rule matches whole dotted components");
        let none = Filter::parse(NONE, "").unwrap();
        assert!(!none.passes(Severity::Error, "ovstage"));
        assert!(Filter::parse(Level(0), "ovstage").is_err());
        assert!(Filter::parse(Level(0), "ovstage=loud").is_err());
    }
}
