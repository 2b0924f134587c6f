//! `cargo xtask bench`: builds the library and the harness in release mode
//! and runs `ovstage-bench` on our `libovstage-dynamic.so`, and with
//! `--against DIR` also on `DIR/libovstage-dynamic.so` (e.g. the published
//! package's `bin/`), side by side.

use std::path::PathBuf;
use std::process::Command;

const USAGE: &str = "usage: cargo xtask bench [--against DIR] [--filter TEXT|TEXT...] [--rounds N] [--report FILE]

Runs every workload of crates/ovstage-bench on our library (release build);
with --against, also on DIR/libovstage-dynamic.so, interleaved, printing
ours / reference / ratio. --report writes the results as Markdown (e.g.
BENCHMARKS.md).";

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
            "--filter" | "--rounds" | "--report" => {
                pass.push(a.clone());
                pass.push(it.next().ok_or_else(|| format!("{a} needs a value"))?.clone());
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("bench: unknown argument {other:?}\n\n{USAGE}")),
        }
    }
    let dir = build("release")?;
    let status = Command::new(dir.join("ovstage-bench"))
        .arg("--ours")
        .arg(dir.join("libovstage-dynamic.so"))
        .args(&pass)
        .current_dir(crate::root())
        .status()
        .map_err(|e| format!("starting ovstage-bench: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("ovstage-bench failed ({status})")) }
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
