//! `ovstage-conformance`: the differential conformance harness's driver.
//!
//! ```text
//! ovstage-conformance LIB [--filter TEXT]
//! ```
//!
//! Loads the library at `LIB` (an implementation of the ovstage C ABI),
//! runs every scenario of the corpus (`scenarios.rs`) on a fresh instance
//! and prints one transcript: a `=== NAME` line per scenario, then one
//! normalised line per call (`driver.rs` says how ids, groups and messages
//! are normalised). `cargo xtask conformance` runs it once per library, in
//! separate processes, and compares the transcripts with each other or
//! with the recorded snapshots in `snapshots/`.

// A command-line program reports on stdout/stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod driver;
mod library;
mod payload;
mod scenarios;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use driver::{Driver, status_name};
use library::Library;

fn run(lib: &Library, filter: Option<&str>) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    for s in scenarios::all() {
        if filter.is_some_and(|f| !s.name.contains(f)) {
            continue;
        }
        writeln!(out, "=== {}", s.name).map_err(|e| e.to_string())?;
        let status = lib.initialize(s.settings);
        if status != 0 {
            writeln!(out, "ovstage_initialize {:?} -> {}", s.settings, status_name(status))
                .map_err(|e| e.to_string())?;
            continue;
        }
        let mut d = Driver::new(lib)?;
        (s.run)(&mut d);
        let lines = std::mem::take(&mut d.lines);
        drop(d);
        for line in lines {
            writeln!(out, "{line}").map_err(|e| e.to_string())?;
        }
        let status = lib.shutdown();
        if status != 0 {
            writeln!(out, "ovstage_shutdown -> {}", status_name(status)).map_err(|e| e.to_string())?;
        }
        out.flush().map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (lib, filter) = match args.as_slice() {
        [lib] => (lib, None),
        [lib, flag, f] if flag == "--filter" => (lib, Some(f.as_str())),
        _ => {
            eprintln!("usage: ovstage-conformance LIB [--filter TEXT]");
            return ExitCode::FAILURE;
        }
    };
    match Library::load(&PathBuf::from(lib)).and_then(|l| run(&l, filter)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ovstage-conformance: {e}");
            ExitCode::FAILURE
        }
    }
}
