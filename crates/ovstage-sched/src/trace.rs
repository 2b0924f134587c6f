//! The op timeline: a Chrome trace (JSON; opens in Perfetto or
//! `chrome://tracing`) of every op of every scheduler in the process while
//! it is on. Each op gives an enqueue instant on the submitting thread, a
//! begin and an end on the thread that ran it (a lane, or a submitting or
//! waiting thread), and a flow arrow from the enqueue to the begin; the
//! begin carries the op id, its call, ordinal and bytes, the end its
//! failure.
//!
//! Off, an op costs one relaxed load of a flag when it is submitted. On,
//! events go to one process-wide buffer under a mutex (a diagnostic mode:
//! it serialises the lanes a little), written out when tracing stops.
//! `OVSTAGE_TRACE=path.json` starts it with the first scheduler of the
//! process; each time the last live scheduler is dropped, the events so
//! far are appended to the file (which is valid JSON after each append)
//! and recording goes on, so stages created one after the other are all
//! in it.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, Once};
use std::time::Instant;

use ovstage_types::{Error, OpId};

use crate::spec::{OpSpec, Order};
use ovstage_types::sync::lock;

/// Whether events are being recorded.
static ON: AtomicBool = AtomicBool::new(false);
static RECORDER: Mutex<Option<Recorder>> = Mutex::new(None);
/// Held while events are taken from the recorder and written, so appends
/// reach the file whole and in order.
static WRITING: Mutex<()> = Mutex::new(());
/// Schedulers alive (a trace started from the environment is written out
/// each time the last one is dropped).
static SCHEDULERS: AtomicUsize = AtomicUsize::new(0);
static FROM_ENV: Once = Once::new();
static NEXT_TID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's track in traces (0: not assigned yet).
    static TID: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// What a trace shows of an op besides its id: taken from its spec when
/// it is submitted.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Tag {
    label: &'static str,
    ordinal: Option<u64>,
    bytes: u64,
}

impl Tag {
    /// The tag of an op submitted now: `None` unless a trace is being
    /// recorded (then only the ops submitted while it is are in it, each
    /// with its enqueue, begin and end).
    #[inline]
    pub(crate) fn when_tracing(spec: &OpSpec) -> Option<Box<Tag>> {
        if is_on() { Some(Box::new(Tag::of(spec))) } else { None }
    }

    fn of(spec: &OpSpec) -> Tag {
        let (kind, ordinal) = match &spec.order {
            Order::Independent => ("op", None),
            Order::Mutation { ordinal, .. } => ("mutation", Some(*ordinal)),
            Order::Barrier { ordinal, .. } => ("barrier", Some(*ordinal)),
            Order::FloorAdvance { ordinal, .. } => ("floor advance", Some(*ordinal)),
            Order::AfterFloors => ("after floors", None),
        };
        let (label, bytes) = spec.traced.as_deref().map_or((None, 0), |t| (t.label, t.bytes));
        Tag { label: label.unwrap_or(kind), ordinal, bytes }
    }
}

enum Kind {
    Enqueue,
    Begin,
    End { failure: Option<String> },
}

struct Event {
    kind: Kind,
    ns: u64,
    tid: u64,
    op: OpId,
    tag: Tag,
}

struct Recorder {
    path: PathBuf,
    origin: Instant,
    /// Events not yet written.
    events: Vec<Event>,
    /// Track names of the threads seen.
    threads: HashMap<u64, String>,
    /// Threads whose names are in the file.
    named: HashSet<u64>,
    /// What the file holds so far.
    file: FileState,
    from_env: bool,
}

/// How far the trace file has been written.
#[derive(Copy, Clone, PartialEq, Eq)]
enum FileState {
    /// Created empty by `start`.
    Empty,
    /// A complete document with no events.
    NoEvents,
    /// A complete document with events: more go before its closing.
    Events,
}

/// The document's opening and closing; events go between them.
const HEAD: &str = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
const TAIL: &str = "\n]}\n";

/// Whether a trace is being recorded (one relaxed load).
#[inline]
pub fn is_on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Starts recording every op of the process into a Chrome trace written
/// to `path` when [`stop`] is called. `path` is created (truncated) now, so
/// an unwritable path fails here. `INVALID_ARGUMENT` while a trace is
/// already being recorded.
pub fn start(path: impl AsRef<Path>) -> Result<(), Error> {
    start_at(path.as_ref(), false)
}

fn start_at(path: &Path, from_env: bool) -> Result<(), Error> {
    let mut recorder = lock(&RECORDER);
    if let Some(r) = recorder.as_ref() {
        return Err(Error::invalid_argument(format!(
            "trace start: a trace to {} is already being recorded; stop it first",
            r.path.display()
        )));
    }
    std::fs::write(path, b"")
        .map_err(|e| Error::invalid_argument(format!("trace start: cannot write {}: {e}", path.display())))?;
    *recorder = Some(Recorder {
        path: path.to_owned(),
        origin: Instant::now(),
        events: Vec::new(),
        threads: HashMap::new(),
        named: HashSet::new(),
        file: FileState::Empty,
        from_env,
    });
    ON.store(true, Ordering::Release);
    Ok(())
}

/// Stops recording and writes the trace; returns its path, or `None` when
/// no trace was being recorded.
pub fn stop() -> Result<Option<PathBuf>, Error> {
    let _writing = lock(&WRITING);
    let Some(mut recorder) = ({
        let mut slot = lock(&RECORDER);
        ON.store(false, Ordering::Release);
        slot.take()
    }) else {
        return Ok(None);
    };
    recorder
        .append()
        .map_err(|e| Error::invalid_argument(format!("trace stop: cannot write {}: {e}", recorder.path.display())))?;
    Ok(Some(recorder.path))
}

/// Appends what the environment's trace has recorded to its file and
/// keeps recording.
fn checkpoint() -> Result<(), Error> {
    // The events are taken under the recorder's lock and written outside
    // it, so the ops of a stage created meanwhile are not held up by the
    // file.
    let _writing = lock(&WRITING);
    let pending = {
        let mut slot = lock(&RECORDER);
        let Some(r) = slot.as_mut().filter(|r| r.from_env) else { return Ok(()) };
        let chunk = r.chunk();
        (r.path.clone(), r.file, chunk)
    };
    let (path, file, chunk) = pending;
    let written = write_chunk(&path, file, &chunk)
        .map_err(|e| Error::invalid_argument(format!("OVSTAGE_TRACE: cannot write {}: {e}", path.display())))?;
    if let Some(r) = lock(&RECORDER).as_mut().filter(|r| r.path == path) {
        r.file = written;
    }
    Ok(())
}

/// Called when a scheduler is created: counts it, and starts the trace
/// `OVSTAGE_TRACE` names the first time.
pub(crate) fn scheduler_started() {
    SCHEDULERS.fetch_add(1, Ordering::AcqRel);
    FROM_ENV.call_once(|| {
        if let Some(path) = std::env::var_os("OVSTAGE_TRACE").filter(|p| !p.is_empty())
            && let Err(e) = start_at(Path::new(&path), true)
        {
            // No caller to report to: the environment asked for it.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("ovstage: OVSTAGE_TRACE: {e}");
            }
        }
    });
}

/// Called when a scheduler is dropped: the last one alive appends what a
/// trace the environment started has recorded to its file.
pub(crate) fn scheduler_stopped() {
    let last = SCHEDULERS.fetch_sub(1, Ordering::AcqRel) == 1;
    if last && let Err(e) = checkpoint() {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("ovstage: OVSTAGE_TRACE: {e}");
        }
    }
}

fn record(op: OpId, tag: &Tag, kind: Kind) {
    let tid = TID.with(|t| {
        if t.get() == 0 {
            t.set(NEXT_TID.fetch_add(1, Ordering::Relaxed));
        }
        t.get()
    });
    let mut slot = lock(&RECORDER);
    let Some(r) = slot.as_mut() else { return };
    let ns = r.origin.elapsed().as_nanos() as u64;
    r.threads.entry(tid).or_insert_with(|| {
        let t = std::thread::current();
        t.name().map_or_else(|| format!("thread {tid}"), str::to_owned)
    });
    r.events.push(Event { kind, ns, tid, op, tag: *tag });
}

pub(crate) fn enqueued(op: OpId, tag: &Tag) {
    record(op, tag, Kind::Enqueue);
}

pub(crate) fn began(op: OpId, tag: &Tag) {
    record(op, tag, Kind::Begin);
}

pub(crate) fn ended(op: OpId, tag: &Tag, failure: Option<&Error>) {
    record(op, tag, Kind::End { failure: failure.map(|e| e.to_string()) });
}

impl Recorder {
    /// The events not yet written, as JSON array elements separated by
    /// commas (names of threads not yet named first); empties the buffer.
    fn chunk(&mut self) -> String {
        let mut out = String::with_capacity(self.events.len() * 160);
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !std::mem::take(&mut first) {
                out.push_str(",\n");
            }
        };
        let pid = std::process::id();
        let mut threads: Vec<_> = self.threads.iter().filter(|(tid, _)| !self.named.contains(tid)).collect();
        threads.sort();
        for (tid, name) in threads {
            self.named.insert(*tid);
            sep(&mut out);
            let _ = write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
                quoted(name)
            );
        }
        for e in std::mem::take(&mut self.events) {
            let ts = format!("{}.{:03}", e.ns / 1000, e.ns % 1000);
            let (op, tid, label) = (e.op.get(), e.tid, quoted(e.tag.label));
            sep(&mut out);
            match e.kind {
                Kind::Enqueue => {
                    let _ = write!(
                        out,
                        "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"enqueue\",\"name\":{label},\"ts\":{ts},\"pid\":{pid},\"tid\":{tid},\"args\":{{\"op\":{op}}}}},\n\
                         {{\"ph\":\"s\",\"cat\":\"op\",\"name\":\"op\",\"id\":{op},\"ts\":{ts},\"pid\":{pid},\"tid\":{tid}}}"
                    );
                }
                Kind::Begin => {
                    // The flow's end after the slice it binds to ("bp": "e",
                    // the enclosing slice).
                    let _ = write!(
                        out,
                        "{{\"ph\":\"B\",\"cat\":\"op\",\"name\":{label},\"ts\":{ts},\"pid\":{pid},\"tid\":{tid},\"args\":{{\"op\":{op},\"ordinal\":{},\"bytes\":{}}}}},\n\
                         {{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"op\",\"name\":\"op\",\"id\":{op},\"ts\":{ts},\"pid\":{pid},\"tid\":{tid}}}",
                        e.tag.ordinal.map_or_else(|| "null".to_owned(), |o| o.to_string()),
                        e.tag.bytes
                    );
                }
                Kind::End { failure } => {
                    let failure = failure.as_deref().map_or_else(|| "null".to_owned(), quoted);
                    let _ = write!(
                        out,
                        "{{\"ph\":\"E\",\"cat\":\"op\",\"name\":{label},\"ts\":{ts},\"pid\":{pid},\"tid\":{tid},\"args\":{{\"op\":{op},\"failure\":{failure}}}}}"
                    );
                }
            }
        }
        out
    }

    /// Writes the events not yet written to the file.
    fn append(&mut self) -> std::io::Result<()> {
        let chunk = self.chunk();
        self.file = write_chunk(&self.path, self.file, &chunk)?;
        Ok(())
    }
}

/// Writes `chunk` (array elements) into the trace document at `path`,
/// whose state is `file`: a new document, or the elements inserted before
/// the existing document's closing. Returns the file's new state.
fn write_chunk(path: &Path, file: FileState, chunk: &str) -> std::io::Result<FileState> {
    match (file, chunk.is_empty()) {
        (FileState::Empty, _) => {
            std::fs::write(path, format!("{HEAD}{chunk}{TAIL}"))?;
            Ok(if chunk.is_empty() { FileState::NoEvents } else { FileState::Events })
        }
        (state, true) => Ok(state),
        (state, false) => {
            let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
            f.seek(SeekFrom::End(-(TAIL.len() as i64)))?;
            let sep = if state == FileState::Events { ",\n" } else { "" };
            f.write_all(format!("{sep}{chunk}{TAIL}").as_bytes())?;
            Ok(FileState::Events)
        }
    }
}

/// `s` as a JSON string literal.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn strings_are_escaped_as_json() {
        assert_eq!(quoted("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
    }
}
