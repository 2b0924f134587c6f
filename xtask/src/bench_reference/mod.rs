//! `cargo xtask bench-reference DIR`: the published package's own benchmark
//! binary (`DIR/benchmark.ovstage`, Google Benchmark) on the published
//! library beside it and on ours copied beside it as `libovstage.so`,
//! alternating chunk by chunk for several rounds (see [`rounds`] for the
//! order and why a case's figure is the median of its rounds), with the
//! result written into BENCHMARKS.md between two marker comments
//! ([`markdown`]) and drawn in `docs/bench-reference.svg` ([`chart`]).
//!
//! Nothing of the package enters the repository: the binary, its libraries
//! and plugins are copied to a temporary directory (one copy per library)
//! that is removed afterwards, and nothing in `cargo xtask test` runs it.
//! `bench-suite` (its earlier name) is an alias that writes nothing unless
//! asked with `--report`, as before.

mod chart;
mod gbench;
mod markdown;
mod rounds;
mod summary;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use gbench::Outcome;
use rounds::{Lib, Samples};
use summary::Row;

const USAGE: &str = "usage: cargo xtask bench-reference DIR [--filter REGEX] [--min-time SECONDS] [--rounds N]
                                        [--confirm N] [--chunk N] [--gpu] [--no-write] [--report FILE]
       cargo xtask bench-reference --from-csv PUBLISHED.csv OURS.csv [--no-write] [--report FILE]
       cargo xtask bench-suite --against DIR [...]   (the same, writing nothing but --report)

Runs DIR/benchmark.ovstage (the published package's bin/, used read-only
through a temporary copy) on the published library and on ours (release
build), alternating every chunk of cases for N rounds (default 3), and
takes each case's median over the rounds; chunks holding a case below
1.25x after them run --confirm more rounds. Then prints the summary and
writes the section between <!-- bench-reference:begin --> and
<!-- bench-reference:end --> of BENCHMARKS.md and docs/bench-reference.svg
(--no-write: neither).

  --filter REGEX    only the cases the binary's --benchmark_filter selects
  --min-time S      --benchmark_min_time for cases that set none themselves
  --rounds N        rounds per library (default 3)
  --confirm N       more rounds for the chunks holding a case below 1.25x
                    after those (default 4; 0: none)
  --chunk N         cases per chunk (default 10)
  --gpu             also the *Gpu* cases (skipped by default: they fail on
                    both libraries without a GPU)
  --report FILE     also write the section to FILE
  --from-csv A B    no run: one round from two --benchmark_format=csv
                    reports (published, ours)";

/// The cases in order: name, then the rounds on ours and on the published
/// library.
type Cases = Vec<(String, Samples, Samples)>;

/// A case whose ratio after the first rounds is below this sends its chunk
/// to the confirmation rounds (`--confirm`). On these shared machines one
/// round of either library moves a case by 10-30% (at times 70%), so
/// within that of 1x the side a case lands on is the draw of three rounds;
/// more rounds of the same chunks (both libraries, alternating as before)
/// settle it. A case that errs is left as it is.
pub(super) const CONFIRM_BELOW: f64 = 1.25;

/// Confirmation rounds unless `--confirm` says otherwise.
const DEFAULT_CONFIRM: usize = 4;

/// What to run and where the results go.
#[derive(Clone, Debug, PartialEq)]
struct Options {
    /// The published package's `bin/`.
    dir: Option<PathBuf>,
    filter: Option<String>,
    min_time: Option<String>,
    rounds: usize,
    /// Confirmation rounds (see [`CONFIRM_BELOW`]).
    confirm: usize,
    chunk: usize,
    gpu: bool,
    /// Write BENCHMARKS.md and the chart.
    write: bool,
    report: Option<PathBuf>,
    /// (published, ours) CSV reports instead of a run.
    from_csv: Option<(PathBuf, PathBuf)>,
}

/// Parses the arguments; `alias` (called as `bench-suite`) defaults to
/// writing nothing.
fn parse_args(args: &[String], alias: bool) -> Result<Options, String> {
    let mut o = Options {
        dir: None,
        filter: None,
        min_time: None,
        rounds: 3,
        confirm: DEFAULT_CONFIRM,
        chunk: 10,
        gpu: false,
        write: !alias,
        report: None,
        from_csv: None,
    };
    let mut it = args.iter();
    let count = |v: Option<&String>, what: &str| -> Result<usize, String> {
        v.and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("{what} needs a positive whole number\n\n{USAGE}"))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--against" => o.dir = Some(PathBuf::from(it.next().ok_or(USAGE)?)),
            "--filter" => o.filter = Some(it.next().ok_or(USAGE)?.clone()),
            "--min-time" => {
                let v = it.next().ok_or(USAGE)?;
                v.parse::<f64>().map_err(|_| format!("--min-time {v}: not a number of seconds"))?;
                o.min_time = Some(v.clone());
            }
            "--rounds" => o.rounds = count(it.next(), "--rounds")?,
            "--confirm" => {
                let v = it.next().ok_or(USAGE)?;
                o.confirm = v.parse().map_err(|_| format!("--confirm {v}: needs a whole number\n\n{USAGE}"))?;
            }
            "--chunk" => o.chunk = count(it.next(), "--chunk")?,
            "--gpu" => o.gpu = true,
            "--no-write" => o.write = false,
            "--report" => o.report = Some(PathBuf::from(it.next().ok_or(USAGE)?)),
            "--from-csv" => {
                let (a, b) = (it.next().ok_or(USAGE)?, it.next().ok_or(USAGE)?);
                o.from_csv = Some((PathBuf::from(a), PathBuf::from(b)));
            }
            dir if !dir.starts_with('-') && o.dir.is_none() => o.dir = Some(PathBuf::from(dir)),
            _ => return Err(USAGE.into()),
        }
    }
    if o.dir.is_none() == o.from_csv.is_none() {
        return Err(USAGE.into());
    }
    Ok(o)
}

/// The command line as the header shows it (the package directory as DIR).
fn command_line(o: &Options) -> String {
    let mut c = String::from("cargo xtask bench-reference");
    if let Some((a, b)) = &o.from_csv {
        c += &format!(" --from-csv {} {}", a.display(), b.display());
        return c;
    }
    c += " DIR";
    if let Some(f) = &o.filter {
        c += &format!(" --filter '{f}'");
    }
    if let Some(m) = &o.min_time {
        c += &format!(" --min-time {m}");
    }
    c += &format!(" --rounds {}", o.rounds);
    if o.confirm != DEFAULT_CONFIRM {
        c += &format!(" --confirm {}", o.confirm);
    }
    if o.chunk != 10 {
        c += &format!(" --chunk {}", o.chunk);
    }
    if o.gpu {
        c += " --gpu";
    }
    c
}

/// Copies the files under `from` (its plugins included) to `to`.
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| e.to_string())?;
    for entry in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        let kind = entry.file_type().map_err(|e| e.to_string())?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// The two temporary copies of the package's `bin/`, removed on drop.
struct Copies {
    root: PathBuf,
}

impl Copies {
    /// Copies `dir` twice; in the second, `ours` replaces the library.
    fn new(dir: &Path, ours: &Path) -> Result<Copies, String> {
        let root = std::env::temp_dir().join(format!("ovstage-bench-reference-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let copies = Copies { root };
        copy_tree(dir, &copies.dir(Lib::Reference))?;
        copy_tree(dir, &copies.dir(Lib::Ours))?;
        for name in ["libovstage.so", "libovstage-dynamic.so"] {
            std::fs::copy(ours, copies.dir(Lib::Ours).join(name)).map_err(|e| format!("{}: {e}", ours.display()))?;
        }
        Ok(copies)
    }

    fn dir(&self, lib: Lib) -> PathBuf {
        self.root.join(match lib {
            Lib::Reference => "published",
            Lib::Ours => "ours",
        })
    }

    /// Runs the binary of `lib`'s copy with `args`; its stdout, or why
    /// there is none.
    fn run(&self, lib: Lib, args: &[String]) -> Result<(String, String), String> {
        let dir = self.dir(lib);
        let out = Command::new(dir.join("benchmark.ovstage"))
            .args(args)
            .current_dir(&dir)
            .env("LD_LIBRARY_PATH", &dir)
            .output()
            .map_err(|e| format!("benchmark.ovstage: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        let why = format!("exit {}: {}", out.status, tail.into_iter().rev().collect::<Vec<_>>().join(" / "));
        Ok((String::from_utf8_lossy(&out.stdout).into_owned(), why))
    }
}

impl Drop for Copies {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The machine in a few words: CPU model and core count.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores (nproc)")
}

/// Now, as `YYYY-MM-DD HH:MM UTC`.
fn now() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map_or_else(|| "unknown date".into(), |out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Runs `cases` in chunks of `chunk` for `rounds` rounds in the order of
/// [`rounds::schedule`], then the chunks holding a case below
/// [`CONFIRM_BELOW`] for `confirm` more; `run(lib, chunk)` runs one chunk
/// on one library and returns its CSV report and, for cases missing from
/// it, why. The cases in order with their samples.
fn run_rounds(
    cases: &[String],
    chunk: usize,
    rounds: usize,
    confirm: usize,
    mut run: impl FnMut(Lib, &[String]) -> Result<(String, String), String>,
) -> Result<Cases, String> {
    let chunks: Vec<&[String]> = cases.chunks(chunk.max(1)).collect();
    let mut samples: HashMap<&str, (Samples, Samples)> = HashMap::new();
    let started = Instant::now();
    run_plan(&chunks, rounds, "round", started, &mut samples, &mut run)?;
    if confirm > 0 {
        let close = |case: &String| {
            samples.get(case.as_str()).is_some_and(|(ours, reference)| {
                summary::ratio(&ours.result(), &reference.result()).is_some_and(|r| r < CONFIRM_BELOW)
            })
        };
        let doubtful: Vec<&[String]> = chunks.iter().copied().filter(|c| c.iter().any(close)).collect();
        run_plan(&doubtful, confirm, "confirmation round", started, &mut samples, &mut run)?;
    }
    Ok(cases
        .iter()
        .map(|c| {
            let (ours, reference) = samples.remove(c.as_str()).unwrap_or_default();
            (c.clone(), ours, reference)
        })
        .collect())
}

/// Runs `chunks` for `rounds` rounds (see [`run_rounds`]), adding each
/// case's outcome to its samples.
fn run_plan<'a>(
    chunks: &[&'a [String]],
    rounds: usize,
    what: &str,
    started: Instant,
    samples: &mut HashMap<&'a str, (Samples, Samples)>,
    run: &mut impl FnMut(Lib, &[String]) -> Result<(String, String), String>,
) -> Result<(), String> {
    let plan = rounds::schedule(chunks.len(), rounds);
    for (step, &(round, c, lib)) in plan.iter().enumerate() {
        eprintln!(
            "[{:>4}/{} {:>5.0}s] {what} {}/{rounds}, chunk {}/{} ({} cases) on {}",
            step + 1,
            plan.len(),
            started.elapsed().as_secs_f64(),
            round + 1,
            c + 1,
            chunks.len(),
            chunks[c].len(),
            match lib {
                Lib::Reference => "the published library",
                Lib::Ours => "ours",
            }
        );
        let (csv, why) = run(lib, chunks[c])?;
        let got: HashMap<String, Outcome> = gbench::parse_csv(&csv).into_iter().collect();
        for case in chunks[c] {
            let outcome = got.get(case).cloned().unwrap_or_else(|| Outcome::Error(format!("no result ({why})")));
            let entry = samples.entry(case.as_str()).or_default();
            match lib {
                Lib::Reference => entry.1.add(outcome),
                Lib::Ours => entry.0.add(outcome),
            }
        }
    }
    Ok(())
}

/// Runs the binary as the options say; the cases in listing order with
/// their samples on each library, and how many GPU cases were skipped.
fn measure(o: &Options, dir: &Path) -> Result<(Cases, usize), String> {
    if !dir.join("benchmark.ovstage").exists() {
        return Err(format!("{} has no benchmark.ovstage", dir.display()));
    }
    let mut cargo = crate::cargo();
    cargo.args(["build", "--release", "-p", "ovstage-ffi"]);
    if !cargo.status().map_err(|e| e.to_string())?.success() {
        return Err("building the library failed".into());
    }
    let copies = Copies::new(dir, &crate::root().join("target/release/libovstage.so"))?;
    let mut list = vec!["--benchmark_list_tests".to_owned()];
    if let Some(f) = &o.filter {
        list.push(format!("--benchmark_filter={f}"));
    }
    let (listing, why) = copies.run(Lib::Reference, &list)?;
    let all = gbench::parse_listing(&listing);
    if all.is_empty() {
        return Err(format!("the binary listed no case ({why})"));
    }
    let (cases, gpu): (Vec<String>, Vec<String>) = all.into_iter().partition(|c| o.gpu || !gbench::needs_gpu(c));
    if cases.is_empty() {
        return Err(format!("only GPU cases match ({} of them; --gpu runs them)", gpu.len()));
    }
    let rows = run_rounds(&cases, o.chunk, o.rounds, o.confirm, |lib, chunk| {
        let mut args =
            vec![format!("--benchmark_filter={}", gbench::exact_filter(chunk)), "--benchmark_format=csv".into()];
        if let Some(m) = &o.min_time {
            args.push(format!("--benchmark_min_time={m}s"));
        }
        copies.run(lib, &args)
    })?;
    Ok((rows, gpu.len()))
}

/// One round from two CSV reports (published, ours), in the published
/// report's order.
fn from_csv(o: &Options, published: &Path, ours: &Path) -> Result<(Cases, usize), String> {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let theirs = gbench::parse_csv(&read(published)?);
    let mut mine: HashMap<String, Outcome> = gbench::parse_csv(&read(ours)?).into_iter().collect();
    let (mut rows, mut gpu) = (Vec::new(), 0);
    for (case, outcome) in theirs {
        if !o.gpu && gbench::needs_gpu(&case) {
            gpu += 1;
            continue;
        }
        let (mut a, mut b) = (Samples::default(), Samples::default());
        b.add(outcome);
        a.add(mine.remove(&case).unwrap_or_else(|| Outcome::Error("not in the report".into())));
        rows.push((case, a, b));
    }
    Ok((rows, gpu))
}

/// `cargo xtask bench-reference [...]`, or `bench-suite` when `alias`.
pub(crate) fn run(args: &[String], alias: bool) -> Result<(), String> {
    let o = parse_args(args, alias)?;
    let (measured, gpu_skipped) = match (&o.from_csv, &o.dir) {
        (Some((a, b)), _) => from_csv(&o, a, b)?,
        (None, Some(dir)) => measure(&o, dir)?,
        (None, None) => return Err(USAGE.into()),
    };
    let rows: Vec<Row> = measured
        .into_iter()
        .map(|(case, ours, reference)| Row { case, ours: ours.result(), reference: reference.result() })
        .collect();
    let families = summary::families(&rows);
    let totals = summary::totals(&rows);
    let chart_path = "docs/bench-reference.svg";
    let meta = markdown::Meta {
        command: command_line(&o),
        date: now(),
        machine: machine(),
        min_time: o.min_time.clone(),
        filter: o.filter.clone(),
        rounds: if o.from_csv.is_some() { 1 } else { o.rounds },
        confirm: if o.from_csv.is_some() { 0 } else { o.confirm },
        chunk: if o.from_csv.is_some() { 0 } else { o.chunk },
        gpu_skipped,
        chart: Some(chart_path.into()),
    };
    let section = markdown::render(&meta, &rows, &families, &totals);
    println!("{section}");
    if let Some(path) = &o.report {
        std::fs::write(path, &section).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if o.write {
        let doc_path = crate::root().join("BENCHMARKS.md");
        let doc = std::fs::read_to_string(&doc_path).map_err(|e| format!("{}: {e}", doc_path.display()))?;
        let doc = markdown::replace_section(&doc, &section).map_err(|e| format!("BENCHMARKS.md: {e}"))?;
        std::fs::write(&doc_path, doc).map_err(|e| format!("{}: {e}", doc_path.display()))?;
        let mut subtitle =
            format!("{} cases on {}; {}; median of {} rounds", totals.both, meta.machine, meta.date, meta.rounds);
        if meta.confirm > 0 {
            subtitle += &format!(" (+{} near 1x)", meta.confirm);
        }
        let svg_path = crate::root().join(chart_path);
        std::fs::write(&svg_path, chart::svg(&families, &subtitle))
            .map_err(|e| format!("{}: {e}", svg_path.display()))?;
        eprintln!(
            "{}",
            format_args!("wrote BENCHMARKS.md (between {} and {}) and {chart_path}", markdown::BEGIN, markdown::END)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn arguments_positional_or_against_with_defaults() {
        let o = parse_args(&args("/pkg/bin --filter Clone --min-time 0.01 --rounds 2"), false).unwrap();
        assert_eq!(o.dir.as_deref(), Some(Path::new("/pkg/bin")));
        assert_eq!(
            (o.filter.as_deref(), o.min_time.as_deref(), o.rounds, o.chunk),
            (Some("Clone"), Some("0.01"), 2, 10)
        );
        assert!(o.write && !o.gpu);
        assert_eq!(command_line(&o), "cargo xtask bench-reference DIR --filter 'Clone' --min-time 0.01 --rounds 2");
        assert_eq!(o.confirm, 4);
        let none = parse_args(&args("/pkg/bin --confirm 0"), false).unwrap();
        assert_eq!((none.confirm, command_line(&none).ends_with("--rounds 3 --confirm 0")), (0, true));

        let alias = parse_args(&args("--against /pkg/bin --report out.md"), true).unwrap();
        assert!(!alias.write);
        assert_eq!(alias.report.as_deref(), Some(Path::new("out.md")));
        assert_eq!(alias.rounds, 3);

        let csv = parse_args(&args("--from-csv a.csv b.csv --no-write"), false).unwrap();
        assert_eq!(csv.from_csv, Some((PathBuf::from("a.csv"), PathBuf::from("b.csv"))));
        assert!(!csv.write);
    }

    #[test]
    fn rounds_alternate_and_take_each_cases_median() {
        let cases: Vec<String> = ["BM_A/1", "BM_A/2", "BM_B/1"].iter().map(|c| c.to_string()).collect();
        let mut calls = Vec::new();
        let got = run_rounds(&cases, 2, 3, 0, |lib, chunk| {
            calls.push((lib, chunk.len()));
            let round = calls.iter().filter(|c| c.0 == lib && c.1 == chunk.len()).count() as f64;
            let mut csv = String::from("name,iterations,real_time,cpu_time,time_unit\n");
            for case in chunk {
                // Ours never reports BM_B/1 (as if the binary died there).
                if lib == Lib::Ours && case == "BM_B/1" {
                    continue;
                }
                let base = if lib == Lib::Ours { 100.0 } else { 400.0 };
                csv += &format!("\"{case}\",1,{},1,ns\n", base * round);
            }
            Ok((csv, "exit 134".into()))
        })
        .unwrap();
        // 2 chunks x 3 rounds x 2 libraries, the first of each pair alternating.
        assert_eq!(calls.len(), 12);
        let firsts: Vec<Lib> = calls.iter().step_by(2).map(|c| c.0).collect();
        assert_eq!(firsts, vec![Lib::Reference, Lib::Ours, Lib::Ours, Lib::Reference, Lib::Reference, Lib::Ours]);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].0, "BM_A/1");
        // Rounds 1, 2, 3 gave 100, 200, 300 ns on ours: the median is 200.
        assert_eq!(got[0].1.result().unwrap().median, 200.0);
        assert_eq!(got[0].2.result().unwrap().median, 800.0);
        assert_eq!(got[2].1.result(), Err("no result (exit 134)".into()));
        assert!(got[2].2.result().is_ok());
    }

    /// A chunk holding a case below `CONFIRM_BELOW` after the first rounds
    /// runs the confirmation rounds (all its cases, alternating as before);
    /// the other chunks do not, and figures are over all of a case's rounds.
    #[test]
    fn chunks_near_parity_run_the_confirmation_rounds() {
        let cases: Vec<String> = ["BM_A/1", "BM_A/2", "BM_B/1", "BM_C/1"].iter().map(|c| c.to_string()).collect();
        let mut calls: Vec<(Lib, Vec<String>)> = Vec::new();
        let got = run_rounds(&cases, 2, 3, 2, |lib, chunk| {
            calls.push((lib, chunk.to_vec()));
            let round = calls.iter().filter(|c| c.0 == lib && c.1 == chunk).count() as f64;
            let mut csv = String::from("name,iterations,real_time,cpu_time,time_unit\n");
            for case in chunk {
                // BM_A/2 is 1.2x on the published library's side, BM_C/1
                // errs on ours; the others are 4x.
                let ours = if case == "BM_A/2" { 100.0 * round } else { 100.0 };
                let t = match lib {
                    Lib::Ours if case == "BM_C/1" => continue,
                    Lib::Ours => ours,
                    Lib::Reference if case == "BM_A/2" => 120.0 * round,
                    Lib::Reference => 400.0,
                };
                csv += &format!("\"{case}\",1,{t},1,ns\n");
            }
            Ok((csv, "exit 134".into()))
        })
        .unwrap();
        // 2 chunks x 3 rounds x 2 libraries, then the first chunk's 2
        // confirmation rounds (the second's case erred: not confirmed).
        assert_eq!(calls.len(), 16);
        assert!(calls[12..].iter().all(|c| c.1 == cases[..2]), "{:?}", &calls[12..]);
        assert_ne!(calls[12].0, calls[13].0);
        assert_ne!(calls[12].0, calls[14].0, "the first alternates in confirmation rounds too");
        let rounds = |i: usize| (got[i].1.result().map(|t| t.rounds), got[i].2.result().map(|t| t.rounds));
        assert_eq!(rounds(0), (Ok(5), Ok(5)));
        assert_eq!(rounds(1), (Ok(5), Ok(5)));
        assert_eq!(rounds(2), (Ok(3), Ok(3)));
        // Rounds 1..=5 on BM_A/2: the median is the third.
        assert_eq!(got[1].1.result().unwrap().median, 300.0);
        assert_eq!(got[1].2.result().unwrap().median, 360.0);
        // No confirmation asked: the first rounds only.
        let mut n = 0;
        run_rounds(&cases, 2, 3, 0, |_, chunk| {
            n += 1;
            Ok((chunk.iter().map(|c| format!("\"{c}\",1,100,1,ns\n")).collect(), String::new()))
        })
        .unwrap();
        assert_eq!(n, 12);
    }

    #[test]
    fn bad_arguments_are_refused() {
        for bad in
            ["", "--rounds 0 /d", "/d --min-time soon", "/d /e", "/d --bogus", "/d --from-csv a b", "/d --confirm x"]
        {
            assert!(parse_args(&args(bad), false).is_err(), "{bad:?} was accepted");
        }
    }
}
