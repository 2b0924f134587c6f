//! The process-wide log stream shared by every binding: messages are
//! filtered where they are emitted and delivered, one at a time and in
//! order, on a dispatcher thread, so a callback never runs on the caller's
//! path or on a worker lane. Without a callback, emitting costs one atomic
//! load. The C ABI wraps a C function pointer in a [`LogCallback`], the
//! Python package a Python callable.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use ovstage_types::sync::lock;
use ovstage_types::{Error, Result, Status, Timeout};

/// Severity of a message (the contract's values).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogSeverity {
    /// Diagnostics (also `debug` in channel filters).
    Verbose = -2,
    /// Lifecycle events.
    Info = -1,
    /// Something failed that the caller may not have noticed.
    Warning = 0,
    /// Something failed.
    Error = 1,
}

/// The threshold value that drops every message.
pub const LOG_THRESHOLD_NONE: i32 = 3;

/// A log sink: `(severity, wall-clock seconds since the epoch, message)`.
/// Called on the dispatcher thread, never concurrently with itself.
pub type LogCallback = Box<dyn Fn(LogSeverity, f64, &str) + Send + Sync>;

/// A threshold: severities below it are dropped; `NONE` drops everything.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Level(i32);

const NONE: Level = Level(LOG_THRESHOLD_NONE);

fn parse_level(s: &str) -> Option<Level> {
    Some(match s.trim().to_ascii_lowercase().as_str() {
        "verbose" | "debug" => Level(LogSeverity::Verbose as i32),
        "info" => Level(LogSeverity::Info as i32),
        "warn" | "warning" => Level(LogSeverity::Warning as i32),
        "error" | "fatal" => Level(LogSeverity::Error as i32),
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

    fn passes(&self, severity: LogSeverity, channel: &str) -> bool {
        let level = self
            .rules
            .iter()
            .filter(|(c, _)| channel == c || channel.strip_prefix(c.as_str()).is_some_and(|rest| rest.starts_with('.')))
            .max_by_key(|(c, _)| c.len())
            .map_or(self.default, |(_, l)| *l);
        level != NONE && severity as i32 >= level.0
    }
}

/// The installed sink; shared so that a delivery in progress keeps the
/// callback it started with when another replaces it.
type Sink = Arc<dyn Fn(LogSeverity, f64, &str) + Send + Sync>;

struct Message {
    severity: LogSeverity,
    timestamp: f64,
    text: String,
}

#[derive(Default)]
struct Queue {
    messages: VecDeque<Message>,
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

struct Dispatcher {
    shared: Arc<Shared>,
    filter: Filter,
    thread: Option<JoinHandle<()>>,
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static LOGGER: Mutex<Option<Dispatcher>> = Mutex::new(None);

fn logger() -> MutexGuard<'static, Option<Dispatcher>> {
    lock(&LOGGER)
}

thread_local! {
    /// Set on the dispatcher thread: a callback that flushes or removes
    /// the callback must not wait for its own delivery.
    static ON_DISPATCHER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn on_dispatcher() -> bool {
    ON_DISPATCHER.with(std::cell::Cell::get)
}

fn run(shared: Arc<Shared>) {
    ON_DISPATCHER.with(|on| on.set(true));
    let mut q = lock(&shared.queue);
    loop {
        if let Some(m) = q.messages.pop_front() {
            let sink = q.sink.clone();
            drop(q);
            if let Some(sink) = sink {
                // A panicking sink must not stop delivery (nor leave
                // flushes waiting for a count that never moves).
                let _ =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sink(m.severity, m.timestamp, &m.text)));
            }
            q = lock(&shared.queue);
            q.delivered += 1;
            shared.done.notify_all();
        } else if q.stop {
            return;
        } else {
            q = shared.wake.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Whether a callback is installed (a cheap check before formatting a
/// message).
pub fn log_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Logs `text` on `channel` when a callback is installed and its filter
/// passes it. Never blocks on the callback.
pub fn log_message(severity: LogSeverity, channel: &str, text: &str) {
    if !log_enabled() {
        return;
    }
    let guard = logger();
    let Some(d) = guard.as_ref() else { return };
    if !d.filter.passes(severity, channel) {
        return;
    }
    let timestamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let mut q = lock(&d.shared.queue);
    q.messages.push_back(Message { severity, timestamp, text: format!("[{channel}] {text}") });
    q.queued += 1;
    d.shared.wake.notify_one();
}

/// Waits until every message queued so far was delivered, up to `deadline`.
fn drain(shared: &Shared, deadline: Option<Instant>) -> bool {
    let mut q = lock(&shared.queue);
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
    if on_dispatcher() {
        // Called from a callback: the dispatcher delivers what is queued
        // and ends once this delivery returns (its handle is dropped,
        // detaching it).
        lock(&d.shared.queue).stop = true;
        return;
    }
    drain(&d.shared, None);
    lock(&d.shared.queue).stop = true;
    d.shared.wake.notify_all();
    if let Some(t) = d.thread {
        let _ = t.join();
    }
}

/// Installs `callback` (or, with `None`, delivers what is pending and
/// removes the callback). `threshold` is a [`LogSeverity`] value or
/// [`LOG_THRESHOLD_NONE`], the level for channels `channel_filter` does not
/// name; `channel_filter` is a comma-separated list of `<channel>=<level>`
/// (levels `verbose|debug|info|warn|warning|error|fatal|none`).
/// `INVALID_ARGUMENT` for a bad threshold or filter (nothing changes).
///
/// Removing a callback waits for the dispatcher, which runs the callback:
/// a caller holding a lock the callback needs (a binding's interpreter
/// lock) must release it first.
pub fn set_log_callback(callback: Option<LogCallback>, threshold: i32, channel_filter: &str) -> Result<()> {
    let default = match threshold {
        -2..=1 | LOG_THRESHOLD_NONE => Level(threshold),
        other => return Err(Error::invalid_argument(format!("severity {other} is not a log severity"))),
    };
    let filter = Filter::parse(default, channel_filter)?;
    let mut slot = logger();
    match callback {
        None => {
            if let Some(d) = slot.take() {
                drop(slot);
                stop(d);
            }
        }
        Some(callback) => {
            let sink: Sink = Arc::from(callback);
            match slot.as_mut() {
                Some(d) => {
                    d.filter = filter;
                    lock(&d.shared.queue).sink = Some(sink);
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
                        .map_err(|e| Error::new(Status::OutOfMemory, format!("no log dispatcher thread: {e}")))?;
                    *slot = Some(Dispatcher { shared, filter, thread: Some(thread) });
                }
            }
            ENABLED.store(true, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// Waits until every message emitted before the call was delivered, for at
/// most `timeout`; `false` when the time ran out first (`true` at once
/// without a callback; `false` at once when called from the callback). The
/// same caution as [`set_log_callback`] applies to locks the callback needs.
pub fn flush_log(timeout: Timeout) -> bool {
    if on_dispatcher() {
        // From a callback: the message being delivered cannot be delivered
        // before this call returns.
        return false;
    }
    let shared = match logger().as_ref() {
        Some(d) => d.shared.clone(),
        None => return true,
    };
    // A bound too far away to represent is no bound.
    let deadline = timeout.as_duration().and_then(|d| Instant::now().checked_add(d));
    drain(&shared, deadline)
}

/// Delivers what is pending and removes the callback (a binding's process
/// teardown).
pub fn shutdown_log() {
    let d = logger().take();
    if let Some(d) = d {
        stop(d);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Tests that install the process-wide callback run one at a time.
    pub(crate) static EXCLUSIVE: Mutex<()> = Mutex::new(());

    #[test]
    fn filters_pick_the_most_specific_rule() {
        let f = Filter::parse(Level(0), "ovstage=error, ovstage.api=verbose").unwrap();
        assert!(f.passes(LogSeverity::Verbose, "ovstage.api"));
        assert!(!f.passes(LogSeverity::Warning, "ovstage"));
        assert!(f.passes(LogSeverity::Error, "ovstage.paths"));
        assert!(f.passes(LogSeverity::Warning, "other"));
        assert!(!f.passes(LogSeverity::Info, "other"));
        assert!(!f.passes(LogSeverity::Info, "ovstage.apix"), "a rule matches whole dotted components");
        let none = Filter::parse(NONE, "").unwrap();
        assert!(!none.passes(LogSeverity::Error, "ovstage"));
        assert!(Filter::parse(Level(0), "ovstage").is_err());
        assert!(Filter::parse(Level(0), "ovstage=loud").is_err());
        assert!(Filter::parse(Level(0), "=info").is_err());
    }

    #[test]
    fn delivery_threshold_flush_and_removal() {
        let _g = lock(&EXCLUSIVE);
        type Seen = Arc<Mutex<Vec<(LogSeverity, String, String)>>>;
        let got: Seen = Arc::default();
        let sink = got.clone();
        let bad: LogCallback = Box::new(|_, _, _| {});
        assert_eq!(set_log_callback(Some(bad), 2, "").unwrap_err().status(), Status::InvalidArgument, "2 is no level");
        let cb: LogCallback = Box::new(move |sev, ts, text| {
            assert!(ts > 1.0e9, "seconds since the epoch");
            let thread = std::thread::current().name().unwrap_or("").to_owned();
            lock(&sink).push((sev, text.to_owned(), thread));
        });
        set_log_callback(Some(cb), LogSeverity::Warning as i32, "test.chatty=verbose").unwrap();
        log_message(LogSeverity::Info, "test.quiet", "dropped: below the default threshold");
        log_message(LogSeverity::Warning, "test.quiet", "kept");
        log_message(LogSeverity::Verbose, "test.chatty", "kept: the channel's rule");
        assert!(flush_log(Timeout::INFINITE));
        {
            let seen = lock(&got);
            let ours: Vec<_> = seen.iter().filter(|(_, t, _)| t.starts_with("[test.")).collect();
            assert_eq!(ours.len(), 2, "{seen:?}");
            assert_eq!((ours[0].0, ours[0].1.as_str()), (LogSeverity::Warning, "[test.quiet] kept"));
            assert_eq!(ours[1].0, LogSeverity::Verbose);
            assert!(ours.iter().all(|(_, _, thread)| thread == "ovstage-log"), "delivered on the dispatcher");
        }
        set_log_callback(None, 0, "").unwrap();
        assert!(!log_enabled());
        let before = lock(&got).len();
        log_message(LogSeverity::Error, "test.quiet", "nobody listens");
        assert!(flush_log(Timeout::POLL), "nothing installed: drained");
        assert_eq!(lock(&got).len(), before);
    }

    #[test]
    fn a_callback_may_flush_and_remove_itself() {
        let _g = lock(&EXCLUSIVE);
        let (tx, rx) = std::sync::mpsc::channel();
        let tx = Mutex::new(tx);
        let cb: LogCallback = Box::new(move |_, _, text| {
            if text.contains("remove me") {
                let flushed = flush_log(Timeout::INFINITE);
                let removed = set_log_callback(None, 0, "").is_ok();
                let _ = lock(&tx).send((flushed, removed));
            }
        });
        set_log_callback(Some(cb), LogSeverity::Verbose as i32, "").unwrap();
        log_message(LogSeverity::Error, "test", "remove me");
        let (flushed, removed) = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("no deadlock");
        assert!(!flushed && removed);
        assert!(!log_enabled());
        assert!(flush_log(Timeout::INFINITE));
    }

    #[test]
    fn a_panicking_callback_does_not_stop_delivery() {
        let _g = lock(&EXCLUSIVE);
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let c = count.clone();
        let cb: LogCallback = Box::new(move |_, _, text| {
            if text.contains("boom") {
                panic!("callback failure");
            }
            c.fetch_add(1, Ordering::SeqCst);
        });
        set_log_callback(Some(cb), LogSeverity::Verbose as i32, "").unwrap();
        log_message(LogSeverity::Error, "test", "boom");
        log_message(LogSeverity::Error, "test", "after");
        assert!(flush_log(Timeout::INFINITE));
        assert!(count.load(Ordering::SeqCst) >= 1);
        shutdown_log();
        assert!(!log_enabled());
    }

    #[test]
    fn the_stage_logs_its_creation_and_failed_ops() {
        let _g = lock(&EXCLUSIVE);
        let got: Arc<Mutex<Vec<(LogSeverity, String)>>> = Arc::default();
        let sink = got.clone();
        let cb: LogCallback = Box::new(move |sev, _, text| lock(&sink).push((sev, text.to_owned())));
        set_log_callback(Some(cb), LogSeverity::Info as i32, "").unwrap();
        let stage = crate::Stage::new("logged");
        let missing = stage.paths().intern_path("/Missing").unwrap();
        let target = stage.paths().intern_path("/T").unwrap();
        let op = stage.clone_subtree(missing, &[target], 1u64).unwrap();
        assert!(stage.wait(op, Timeout::INFINITE).is_err(), "the clone of a missing source fails at execution");
        assert!(flush_log(Timeout::INFINITE));
        shutdown_log();
        let seen = lock(&got);
        let created = format!("stage 'logged' created (ovstage-rs {}", env!("CARGO_PKG_VERSION"));
        assert!(seen.iter().any(|(s, t)| *s == LogSeverity::Info && t.contains(&created)), "{seen:?}");
        assert!(
            seen.iter()
                .any(|(s, t)| *s == LogSeverity::Warning && t.starts_with("[ovstage.ops]") && t.contains("/Missing")),
            "{seen:?}"
        );
    }
}
