//! The parent side: workers, calibration, interleaved rounds, statistics,
//! the printed table and the Markdown report.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::workloads::{Runs, Scale, cases};

/// What to run.
pub(crate) struct Options {
    pub(crate) ours: PathBuf,
    pub(crate) against: Option<PathBuf>,
    pub(crate) filter: Option<String>,
    pub(crate) rounds: usize,
    pub(crate) report: Option<PathBuf>,
    pub(crate) smoke: bool,
    /// CPU-bound threads spinning in this (the driving) process for the
    /// whole run: a host's physics and rendering threads.
    pub(crate) busy: usize,
}

/// Threads that keep cores busy until dropped.
struct Background {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Background {
    fn start(n: usize) -> Background {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..n)
            .map(|i| {
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name(format!("busy{i}"))
                    .spawn(move || {
                        // Arithmetic the optimiser cannot drop, checking
                        // the flag now and then.
                        let mut x = 0x9e37_79b9_7f4a_7c15u64;
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            for _ in 0..4096 {
                                x = x.rotate_left(5).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 7);
                            }
                            std::hint::black_box(x);
                        }
                    })
                    .expect("spawning a background thread")
            })
            .collect();
        Background { stop, threads }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A batch lasts about this long once calibrated.
const BATCH: Duration = Duration::from_millis(50);

/// Each library runs a workload at least this long, and at least
/// [`WARM_UP_ITERATIONS`] iterations, before it is measured: the buffers a
/// write loop cycles through, pools and caches reach their steady state
/// (each of the first writes of a 200 MB payload faults in every page of a
/// new buffer, until the retained versions recycle theirs).
const WARM_UP: Duration = Duration::from_millis(500);

/// See [`WARM_UP`].
const WARM_UP_ITERATIONS: u64 = 8;

/// A worker process serving one library.
struct Worker {
    label: &'static str,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    info: String,
}

impl Worker {
    fn start(label: &'static str, lib: &Path) -> Result<Worker, String> {
        let exe = std::env::current_exe().map_err(|e| format!("finding this program: {e}"))?;
        let mut child = Command::new(exe)
            .arg("worker")
            .arg(lib)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting the worker for {}: {e}", lib.display()))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut w = Worker { label, child, stdin, stdout, info: String::new() };
        w.info = w.ask("info")?.trim_start_matches("info").trim().to_owned();
        Ok(w)
    }

    /// Sends a command and returns the reply (without `@@ `); `error`
    /// replies become `Err`.
    fn ask(&mut self, command: &str) -> Result<String, String> {
        writeln!(self.stdin, "{command}").and_then(|()| self.stdin.flush()).map_err(|e| self.died(&e.to_string()))?;
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).map_err(|e| self.died(&e.to_string()))?;
            if n == 0 {
                return Err(self.died("it exited"));
            }
            if let Some(reply) = line.trim_end().strip_prefix("@@ ") {
                return match reply.strip_prefix("error ") {
                    Some(e) => Err(format!("{} library: {e}", self.label)),
                    None => Ok(reply.to_owned()),
                };
            }
        }
    }

    fn died(&mut self, why: &str) -> String {
        let status = self.child.try_wait().ok().flatten().map_or_else(String::new, |s| format!(" ({s})"));
        format!("the {} library's worker failed: {why}{status}", self.label)
    }

    /// Runs `n` iterations; returns their total time.
    fn run(&mut self, n: u64) -> Result<Duration, String> {
        let reply = self.ask(&format!("run {n}"))?;
        let nanos: u64 = reply
            .strip_prefix("ok ")
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("{} library: unexpected reply {reply:?}", self.label))?;
        Ok(Duration::from_nanos(nanos))
    }

    /// Warms the workload up (see [`WARM_UP`]) and finds how many
    /// iterations make a batch of about [`BATCH`].
    fn calibrate(&mut self) -> Result<u64, String> {
        let mut n = 1u64;
        let (mut spent, mut done) = (Duration::ZERO, 0u64);
        loop {
            let t = self.run(n)?;
            spent += t;
            done += n;
            if t < BATCH / 2 && n < 1 << 20 {
                n *= 4;
            } else if spent >= WARM_UP && done >= WARM_UP_ITERATIONS {
                let per = t.as_secs_f64() / n as f64;
                return Ok(((BATCH.as_secs_f64() / per.max(1e-9)) as u64).clamp(1, 1 << 22).min(n.max(1) * 4));
            }
        }
    }

    fn extra(&mut self) -> Result<Vec<(String, String)>, String> {
        let reply = self.ask("extra")?;
        Ok(reply
            .trim_start_matches("extra")
            .split_whitespace()
            .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
            .collect())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}

/// One library's figures for one case.
#[derive(Clone, Debug)]
struct Figures {
    /// Seconds per iteration, one per round.
    rounds: Vec<f64>,
    extra: Vec<(String, String)>,
}

impl Figures {
    fn median(&self) -> f64 {
        let mut v = self.rounds.clone();
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
    }

    /// Largest distance of a round from the median, relative to it.
    fn spread(&self) -> f64 {
        let m = self.median();
        self.rounds.iter().map(|r| (r - m).abs() / m).fold(0.0, f64::max)
    }
}

/// One row of the results.
struct Row {
    name: String,
    ours: Figures,
    reference: Option<Figures>,
}

fn time(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.2} µs", s * 1e6)
    } else {
        format!("{:.1} ns", s * 1e9)
    }
}

fn cell(f: &Figures) -> String {
    format!("{} ±{:.0}%", time(f.median()), f.spread() * 100.0)
}

fn extras(f: &Figures) -> String {
    f.extra.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// Runs every selected case on the workers and prints (and writes) the
/// results.
pub(crate) fn run(o: &Options) -> Result<(), String> {
    let scale = if o.smoke { Scale::Smoke } else { Scale::Full };
    let mut ours = Worker::start("our", &o.ours)?;
    let mut reference = match &o.against {
        Some(lib) => Some(Worker::start("reference", lib)?),
        None => None,
    };
    println!("ours:      {} ({})", o.ours.display(), ours.info);
    if let (Some(r), Some(lib)) = (&reference, &o.against) {
        println!("reference: {} ({})", lib.display(), r.info);
    }
    let selected: Vec<_> = cases(scale)
        .into_iter()
        .filter(|c| o.filter.as_ref().is_none_or(|f| f.split('|').any(|part| c.name.contains(part))))
        .collect();
    let started = Instant::now();
    let _background = (o.busy > 0).then(|| Background::start(o.busy));
    if o.busy > 0 {
        println!("with {} CPU-bound background threads", o.busy);
    }
    let mut rows = Vec::new();
    for case in &selected {
        let scale_word = if o.smoke { "smoke" } else { "full" };
        let setup = format!("setup {scale_word} {}", case.name);
        if o.smoke {
            ours.ask(&setup)?;
            ours.run(1)?;
            let extra = ours.extra()?;
            ours.ask("teardown")?;
            println!(
                "{:<48} ok {}",
                case.name,
                extra.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
            );
            continue;
        }
        let both = case.runs == Runs::Both;
        let figures = if o.busy > 0 {
            let mut libs = vec![("our", o.ours.as_path())];
            if both && let Some(lib) = &o.against {
                libs.push(("reference", lib.as_path()));
            }
            fresh_rounds(&libs, &setup, o.rounds).map_err(|e| format!("{}: {e}", case.name))?
        } else {
            let mut workers: Vec<&mut Worker> = vec![&mut ours];
            if both && let Some(r) = reference.as_mut() {
                workers.push(r);
            }
            same_process_rounds(&mut workers, &setup, o.rounds).map_err(|e| format!("{}: {e}", case.name))?
        };
        let row = Row { name: case.name.clone(), ours: figures[0].clone(), reference: figures.get(1).cloned() };
        print_row(&row);
        rows.push(row);
    }
    if o.smoke {
        println!("smoke run: {} workloads ran once in {:.1}s", selected.len(), started.elapsed().as_secs_f64());
        return Ok(());
    }
    if let Some(path) = &o.report {
        let text = markdown(o, &ours, reference.as_ref(), &rows);
        std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("report written to {}", path.display());
    }
    Ok(())
}

/// Each library's rounds of one case in the workers that serve it for the
/// whole run, alternating: warm-up and calibration once, then one batch per
/// library per round.
fn same_process_rounds(workers: &mut [&mut Worker], setup: &str, rounds: usize) -> Result<Vec<Figures>, String> {
    let mut batch = Vec::new();
    for w in workers.iter_mut() {
        w.ask(setup)?;
        batch.push(w.calibrate()?);
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); workers.len()];
    for _ in 0..rounds {
        for (i, w) in workers.iter_mut().enumerate() {
            let t = w.run(batch[i])?;
            times[i].push(t.as_secs_f64() / batch[i] as f64);
        }
    }
    let mut figures = Vec::new();
    for (i, w) in workers.iter_mut().enumerate() {
        let extra = w.extra()?;
        w.ask("teardown")?;
        figures.push(Figures { rounds: std::mem::take(&mut times[i]), extra });
    }
    Ok(figures)
}

/// Each library's rounds of one case, each round in a new worker process
/// (set up, warmed up and calibrated again), alternating. With the cores
/// taken by background threads, where the scheduler places a process's
/// threads decides its figures for as long as it lives: one process of
/// either library ran `ConcurrentLatestRead/2` at 40-100 us an iteration,
/// another at 3-4 ms (the threads it starts each iteration waited a 4 ms
/// tick to run first), so rounds in one process are one sample, not five.
fn fresh_rounds(libs: &[(&'static str, &Path)], setup: &str, rounds: usize) -> Result<Vec<Figures>, String> {
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); libs.len()];
    let mut extras = vec![Vec::new(); libs.len()];
    for round in 0..rounds {
        // Which library goes first alternates: a process started right
        // after the other library's may find the scheduler in another state.
        for k in 0..libs.len() {
            let i = (k + round) % libs.len();
            let (label, lib) = libs[i];
            let mut w = Worker::start(label, lib)?;
            w.ask(setup)?;
            let n = w.calibrate()?;
            let t = w.run(n)?;
            times[i].push(t.as_secs_f64() / n as f64);
            extras[i] = w.extra()?;
            w.ask("teardown")?;
        }
    }
    Ok(times.into_iter().zip(extras).map(|(rounds, extra)| Figures { rounds, extra }).collect())
}

fn print_row(r: &Row) {
    match &r.reference {
        Some(reference) => println!(
            "{:<52} ours {:>18}   reference {:>18}   ratio {:>7.1}x {}",
            r.name,
            cell(&r.ours),
            cell(reference),
            reference.median() / r.ours.median(),
            extras(&r.ours)
        ),
        None => println!("{:<52} ours {:>18} {}", r.name, cell(&r.ours), extras(&r.ours)),
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| t.lines().next().and_then(|l| l.split_whitespace().nth(1)).and_then(|kb| kb.parse::<u64>().ok()))
        .map_or_else(|| "?".into(), |kb| format!("{:.0} GiB", kb as f64 / 1048576.0));
    format!("{cpu}, {cores} cores, {mem}")
}

fn markdown(o: &Options, ours: &Worker, reference: Option<&Worker>, rows: &[Row]) -> String {
    let mut t = String::new();
    let date = Command::new("date")
        .arg("-u")
        .arg("+%Y-%m-%d %H:%M UTC")
        .output()
        .ok()
        .map_or_else(|| "unknown date".into(), |out| String::from_utf8_lossy(&out.stdout).trim().to_owned());
    if o.busy > 0 {
        let _ = writeln!(t, "## Busy machine: {} CPU-bound background threads\n", o.busy);
    } else {
        let _ = writeln!(t, "# Benchmarks\n");
    }
    let _ = writeln!(
        t,
        "Generated by `cargo xtask bench --against DIR{} --report BENCHMARKS.md` (the harness is\n`crates/ovstage-bench`; \
         its doc comments define every workload). Each library runs in its own\nprocess and is driven only through \
         the C ABI by the same code; after a warm-up of at least 0.5 s and 8 iterations each, batches of about\n50 ms alternate between the two libraries for {} rounds; a cell \
         is the median time per\niteration and the largest deviation of a round from it. Ratio = reference / ours\n\
         (higher is better for us). These machines are shared: only ratios from one run\nmean much.\n",
        if o.busy > 0 { format!(" --busy {}", o.busy) } else { String::new() },
        o.rounds
    );
    if o.busy > 0 {
        let _ = writeln!(
            t,
            "The same harness, with {} threads of integer arithmetic spinning in the driving process for the whole \
             run (a simulation host's physics and rendering threads), competing with both libraries' threads for the \
             cores. Here each round of a workload runs in new worker processes (set up, warmed up and calibrated \
             again): with the cores taken, where the scheduler places a process's threads decides its times for as \
             long as it lives, so the median is over {} placements of each library.\n",
            o.busy, o.rounds
        );
    }
    let _ = writeln!(t, "- Date: {date}");
    let _ = writeln!(t, "- Machine: {}", machine());
    let _ = writeln!(t, "- Ours: `{}` ({})", o.ours.display(), ours.info);
    if let (Some(r), Some(lib)) = (reference, &o.against) {
        let _ = writeln!(t, "- Reference: `{}` ({})", lib.display(), r.info);
    }
    let _ = writeln!(t, "\n## Side by side\n");
    let _ = writeln!(t, "| workload | ours | reference | ratio |");
    let _ = writeln!(t, "|---|---:|---:|---:|");
    for r in rows.iter().filter(|r| r.reference.is_some()) {
        let reference = r.reference.as_ref().expect("filtered");
        let _ = writeln!(
            t,
            "| {} | {} | {} | {:.1}× |",
            r.name,
            cell(&r.ours),
            cell(reference),
            reference.median() / r.ours.median()
        );
    }
    let with_extra: Vec<&Row> = rows.iter().filter(|r| r.reference.is_some() && !r.ours.extra.is_empty()).collect();
    if !with_extra.is_empty() {
        let _ = writeln!(t, "\nExtra figures (ours; reference):\n");
        for r in with_extra {
            let theirs = r.reference.as_ref().map(extras).unwrap_or_default();
            let _ = writeln!(t, "- {}: {}; {}", r.name, extras(&r.ours), theirs);
        }
    }
    let _ = writeln!(t, "\n## Ours only\n");
    let _ = writeln!(t, "| figure | time per iteration | details |");
    let _ = writeln!(t, "|---|---:|---|");
    for r in rows.iter().filter(|r| r.reference.is_none()) {
        let _ = writeln!(t, "| {} | {} | {} |", r.name, cell(&r.ours), extras(&r.ours));
    }
    t
}
