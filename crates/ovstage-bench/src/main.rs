//! `ovstage-bench`: the reference's workloads run through the ovstage C ABI
//! against two libraries side by side.
//!
//! ```text
//! ovstage-bench --ours LIB [--against LIB] [--filter TEXT|TEXT...] [--rounds N] [--busy N] [--report FILE]
//! ovstage-bench --smoke --ours LIB        every workload once, tiny sizes
//! ```
//!
//! Each library runs in its own worker process (a copy of this program
//! started with `worker LIB`), so the two never share a process, a loader
//! namespace or an allocator. The parent drives both with the same
//! commands: set a workload up, warm it up (at least 0.5 s and 8
//! iterations), calibrate a batch size per library (a batch takes about
//! 50 ms, at least one iteration), then alternate timed batches between the
//! libraries for several rounds. It reports each library's
//! median time per iteration, the spread of the rounds, and the ratio
//! reference / ours. The workloads are defined in `workloads.rs`.

// A command-line program reports on stdout/stderr.
#![allow(clippy::print_stderr)]

mod api;
mod report;
mod worker;
mod workloads;

use std::path::PathBuf;
use std::process::ExitCode;

use report::{Options, run};

const USAGE: &str = "usage:
  ovstage-bench --ours LIB [--against LIB] [--filter TEXT|TEXT...] [--rounds N] [--busy N] [--report FILE]
      (--filter: run the workloads whose name contains one of the texts;
       --busy: N CPU-bound threads spin in this process for the whole run)
  ovstage-bench --smoke --ours LIB
  ovstage-bench worker LIB   (internal: serves one library to the parent)";

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o =
        Options { ours: PathBuf::new(), against: None, filter: None, rounds: 5, report: None, smoke: false, busy: 0 };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--ours" => o.ours = PathBuf::from(value("--ours")?),
            "--against" => o.against = Some(PathBuf::from(value("--against")?)),
            "--filter" => o.filter = Some(value("--filter")?),
            "--rounds" => o.rounds = value("--rounds")?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--report" => o.report = Some(PathBuf::from(value("--report")?)),
            "--smoke" => o.smoke = true,
            "--busy" => o.busy = value("--busy")?.parse().map_err(|e| format!("--busy: {e}"))?,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if o.ours.as_os_str().is_empty() {
        return Err(format!("--ours is required\n{USAGE}"));
    }
    if o.rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("worker") => match args.get(1) {
            Some(lib) => worker::serve(&PathBuf::from(lib)),
            None => Err(USAGE.into()),
        },
        _ => parse(&args).and_then(|o| run(&o)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ovstage-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
