//! `cargo xtask bench`: builds the library and the harness in release mode
//! and runs `ovstage-bench` on our `libovstage-dynamic.so`, and with
//! `--against DIR` also on `DIR/libovstage-dynamic.so` (e.g. the published
//! package's `bin/`), side by side.

use std::path::PathBuf;
use std::process::Command;

const USAGE: &str =
    "usage: cargo xtask bench [--against DIR] [--filter TEXT|TEXT...] [--rounds N] [--busy N] [--report FILE]

Runs every workload of crates/ovstage-bench on our library (release build);
with --against, also on DIR/libovstage-dynamic.so, interleaved, printing
ours / reference / ratio. --report writes the results as Markdown into FILE
between the lines <!-- bench:begin --> and <!-- bench:end --> (e.g.
BENCHMARKS.md, whose other sections are kept; a new FILE gets just that
section). --busy N runs with N CPU-bound threads spinning beside the
libraries for the whole run; its report goes between <!-- bench-busy:begin -->
and <!-- bench-busy:end --> instead.";

/// The lines around the section of a report file this command owns.
const BEGIN: &str = "<!-- bench:begin -->";
const END: &str = "<!-- bench:end -->";
const BUSY_BEGIN: &str = "<!-- bench-busy:begin -->";
const BUSY_END: &str = "<!-- bench-busy:end -->";

/// Builds `ovstage-ffi` and `ovstage-bench` with `profile` (`release` or
/// `dev`); returns the target directory of that profile.
fn build(profile: &str) -> Result<PathBuf, String> {
    let mut cargo = crate::cargo();
    cargo.args(["build", "-p", "ovstage-ffi", "-p", "ovstage-bench", "--profile", profile]);
    let status = cargo.status().map_err(|e| format!("cargo build: {e}"))?;
    if !status.success() {
        return Err("building the library and the benchmark harness failed".into());
    }
    let dir = crate::root().join("target").join(if profile == "dev" { "debug" } else { profile });
    crate::cexamples::dynamic_alias(&dir)?;
    Ok(dir)
}

/// `cargo xtask bench [...]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut pass = Vec::new();
    let mut report = None;
    let mut busy = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--against" => {
                let dir = PathBuf::from(it.next().ok_or("--against needs a directory")?);
                let lib = dir.join("libovstage-dynamic.so");
                if !lib.exists() {
                    return Err(format!("--against: {} does not exist", lib.display()));
                }
                pass.push("--against".to_owned());
                pass.push(lib.display().to_string());
            }
            "--report" => report = Some(PathBuf::from(it.next().ok_or("--report needs a file")?)),
            "--filter" | "--rounds" | "--busy" => {
                let value = it.next().ok_or_else(|| format!("{a} needs a value"))?;
                busy |= a == "--busy" && value != "0";
                pass.push(a.clone());
                pass.push(value.clone());
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("bench: unknown argument {other:?}\n\n{USAGE}")),
        }
    }
    let dir = build("release")?;
    // The harness writes its whole report to a scratch file; only its
    // section of FILE is replaced.
    let scratch = dir.join("bench-report.md");
    if report.is_some() {
        pass.push("--report".to_owned());
        pass.push(scratch.display().to_string());
    }
    let status = Command::new(dir.join("ovstage-bench"))
        .arg("--ours")
        .arg(dir.join("libovstage-dynamic.so"))
        .args(&pass)
        .current_dir(crate::root())
        .status()
        .map_err(|e| format!("starting ovstage-bench: {e}"))?;
    if !status.success() {
        return Err(format!("ovstage-bench failed ({status})"));
    }
    if let Some(path) = report {
        let section = std::fs::read_to_string(&scratch).map_err(|e| format!("reading {}: {e}", scratch.display()))?;
        let (begin, end) = if busy { (BUSY_BEGIN, BUSY_END) } else { (BEGIN, END) };
        crate::sections::write_section(&path, begin, end, &section)?;
        println!("section {begin} of {} rewritten", path.display());
    }
    Ok(())
}

/// Every workload once at a tiny size on our library (debug build): keeps
/// them working; times mean nothing here.
pub(crate) fn smoke() -> Result<(), String> {
    let dir = build("dev")?;
    let status = Command::new(dir.join("ovstage-bench"))
        .arg("--smoke")
        .arg("--ours")
        .arg(dir.join("libovstage-dynamic.so"))
        .current_dir(crate::root())
        .status()
        .map_err(|e| format!("starting ovstage-bench: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("the benchmark smoke run failed ({status})")) }
}
