//! `cargo xtask fuzz`: the libFuzzer targets of `fuzz/`.
//!
//! The targets are built with the nightly toolchain, libfuzzer-sys and the
//! flags `cargo fuzz build` passes (sanitizer coverage, ASan, debug
//! assertions, overflow checks) in `target/fuzz`, without installing
//! cargo-fuzz. Each run starts from the committed seed corpus
//! (`fuzz/corpus/<target>`, read only) and keeps what it finds in
//! `target/fuzz/corpus/<target>`; a crash, a leak, a timeout or an
//! allocation over the limit stops the run, saves the input under
//! `fuzz/artifacts/<target>/` and fails the step.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::asan::{TARGET, nightly_cargo, require_nightly};

/// Every fuzz target (a binary of the `fuzz` crate).
pub(crate) const TARGETS: &[&str] = &["dlpack_intake", "op_sequence"];

/// Seconds each target runs for in `cargo xtask test`.
pub(crate) const CI_SECONDS: u64 = 30;

/// Seconds each target runs for in `cargo xtask fuzz` by default.
const DEFAULT_SECONDS: u64 = 600;

/// What `cargo fuzz build` passes to rustc (its defaults: ASan, inline
/// 8-bit counters, PC table, comparison tracing, `cfg(fuzzing)`, debug
/// assertions).
const RUSTFLAGS: &str = "-Cpasses=sancov-module \
    -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares \
    --cfg fuzzing \
    -Zsanitizer=address \
    -Cdebug-assertions \
    -Coverflow-checks \
    -Cforce-frame-pointers=yes";

/// Limits of one run: a single allocation or the whole process past 2 GiB
/// is a finding (not an out-of-memory machine), and so is an input that
/// takes more than 20 s.
const LIMITS: &[&str] = &["-rss_limit_mb=2048", "-malloc_limit_mb=2048", "-timeout=20", "-print_final_stats=1"];

/// Builds every target (release, instrumented); returns the binaries'
/// directory.
pub(crate) fn build() -> Result<PathBuf, String> {
    require_nightly()?;
    let root = crate::root();
    let mut cmd = nightly_cargo();
    cmd.current_dir(root.join("fuzz"))
        .args(["build", "--release", "--bins", "--target", TARGET])
        .env("CARGO_TARGET_DIR", root.join("target/fuzz"))
        .env("RUSTFLAGS", RUSTFLAGS);
    crate::step("build the fuzz targets (nightly, libFuzzer, ASan)", cmd)?;
    Ok(root.join("target/fuzz").join(TARGET).join("release"))
}

fn create_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))
}

/// The files in `dir` (none when it does not exist).
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect();
    out.sort();
    out
}

/// Runs `target` for `seconds` from the seed corpus; its log goes to
/// `target/fuzz/logs/<target>.log` and its tail to the terminal when it
/// fails.
pub(crate) fn run_target(bin: &Path, target: &str, seconds: u64) -> Result<(), String> {
    let root = crate::root();
    let seeds = root.join("fuzz/corpus").join(target);
    let corpus = root.join("target/fuzz/corpus").join(target);
    let artifacts = root.join("fuzz/artifacts").join(target);
    let logs = root.join("target/fuzz/logs");
    for dir in [&corpus, &artifacts, &logs] {
        create_dir(dir)?;
    }
    let before = files(&artifacts);
    let log_path = logs.join(format!("{target}.log"));
    let log = std::fs::File::create(&log_path).map_err(|e| format!("creating {}: {e}", log_path.display()))?;
    let started = Instant::now();
    println!("==> fuzz {target} for {seconds}s");
    let mut cmd = Command::new(bin.join(target));
    cmd.env("ASAN_OPTIONS", crate::asan::ASAN_OPTIONS)
        // No reserve of freed large buffers, so no reaper thread: one that
        // an input starts can be exiting while libFuzzer's leak check of
        // that input runs, which reports its thread state as leaked (a
        // false positive a 4-minute `dlpack_intake` run hit; the input
        // alone does not reproduce it). The reserve has unit tests.
        .env("OVSTAGE_RESERVE_MB", "0")
        .arg(format!("-max_total_time={seconds}"))
        .args(LIMITS)
        // A trailing slash: libFuzzer prepends the prefix to the file name.
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg(&corpus)
        .arg(&seeds)
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log);
    let status = cmd.status().map_err(|e| format!("fuzz {target}: could not start: {e}"))?;
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    let stat =
        |name: &str| text.lines().find_map(|l| l.strip_prefix(&format!("stat::{name}:")).map(|v| v.trim().to_owned()));
    println!(
        "    fuzz {target}: {} in {:.1}s ({} runs, {} execs/s, corpus {} inputs; log {})",
        if status.success() { "ok" } else { "FAILED" },
        started.elapsed().as_secs_f64(),
        stat("number_of_executed_units").unwrap_or_else(|| "?".into()),
        stat("average_exec_per_sec").unwrap_or_else(|| "?".into()),
        files(&corpus).len() + files(&seeds).len(),
        log_path.display(),
    );
    if status.success() {
        return Ok(());
    }
    let tail: Vec<&str> = text.lines().rev().take(60).collect();
    for line in tail.iter().rev() {
        eprintln!("    | {line}");
    }
    let new: Vec<String> =
        files(&artifacts).into_iter().filter(|f| !before.contains(f)).map(|f| f.display().to_string()).collect();
    Err(format!(
        "fuzz {target} found a failing input ({status}); saved: {}\n  reproduce: {} <input>",
        if new.is_empty() { "none (see the log)".to_owned() } else { new.join(", ") },
        bin.join(target).display()
    ))
}

/// The fuzz step of `cargo xtask test`: every target for [`CI_SECONDS`].
pub(crate) fn smoke() -> Result<(), String> {
    let bin = build()?;
    let mut failures = Vec::new();
    for target in TARGETS {
        if let Err(e) = run_target(&bin, target, CI_SECONDS) {
            failures.push(e);
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(failures.join("\n")) }
}

/// `cargo xtask fuzz [TARGET] [--time SECONDS]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut seconds = DEFAULT_SECONDS;
    let mut targets: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--time" => {
                let value = it.next().ok_or("--time needs a number of seconds")?;
                seconds = value.parse().map_err(|_| format!("--time: {value:?} is not a number of seconds"))?;
            }
            name => match TARGETS.iter().find(|t| **t == name) {
                Some(t) => targets.push(t),
                None => return Err(format!("unknown fuzz target {name:?} (targets: {})", TARGETS.join(", "))),
            },
        }
    }
    if targets.is_empty() {
        targets = TARGETS.to_vec();
    }
    let bin = build()?;
    let mut failures = Vec::new();
    for target in targets {
        if let Err(e) = run_target(&bin, target, seconds) {
            failures.push(e);
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(failures.join("\n")) }
}
