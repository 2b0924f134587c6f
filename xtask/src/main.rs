//! Project automation.
//!
//! `cargo xtask test` runs every check and test of the project, the same way
//! CI does: formatting, clippy with warnings denied, the generated C headers
//! being current and compiling as C and C++, the whole workspace's tests
//! (insta snapshots must match: no new snapshots are written), the docs with
//! warnings denied, the Rust and C examples (shared, static, valgrind), the
//! dlopen test, the C distribution's CMake and pkg-config files, the
//! snippets the docs cite, the conformance scenarios against their
//! snapshots, the ffi tests and C programs under
//! AddressSanitizer, and a bounded run of each fuzz target.

// A command-line program reports its errors on stderr.
#![allow(clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

mod asan;
mod bench;
mod bench_reference;
mod cexamples;
mod codegen;
mod conformance;
mod ctests;
mod cuda_entries;
mod dist;
mod fuzz;
mod gpu;
mod ptx;
mod python;
mod sections;
mod snippets;
mod valgrind;

const USAGE: &str = "usage: cargo xtask <command>

commands:
  test    run every check and test (formatting, clippy -D warnings, tests, docs, examples)
  codegen generate the C headers of crates/ovstage-ffi and the CUDA driver trampolines (--check: fail if the committed ones are stale)
  dist    build the C distribution: include/, lib/ (shared, static), CMake and pkg-config files
          (--debug: debug build; --out DIR: where, default target/dist/ovstage)
  dist-test
          build a debug dist and compile the minimal example through pkg-config and CMake
  bench   run the benchmark workloads (release) on our library; --against DIR also on
          DIR/libovstage-dynamic.so side by side; --report FILE writes Markdown
  bench-reference DIR [--filter REGEX] [--min-time SECONDS] [--rounds N] [--chunk N] [--gpu]
                  [--no-write] [--report FILE]
          the published package's own benchmark binary (DIR/benchmark.ovstage) on its library
          and on ours, alternating chunk by chunk for N rounds (default 3; the median of each
          case), GPU cases skipped unless --gpu; writes its section of BENCHMARKS.md and
          docs/bench-reference.svg unless --no-write (--from-csv PUBLISHED.csv OURS.csv: no run)
  bench-suite --against DIR [...]
          the same, under its earlier name, writing nothing but --report
  bench-py
          the Python benchmark (release build; OVSTAGE_REF_PATH adds the published package)
  conformance [--against DIR [--bless]] [--filter TEXT]
          the conformance scenarios on our library against the recorded snapshots; --against DIR
          also on DIR/libovstage-dynamic.so, printing every difference (--bless: rewrite the
          snapshots from it; those that document a difference get ours under their comments)
  check-snippets
          check the [snippet:NAME] markers in examples/ and tests/ and the snippets docs cite
  asan    the ovstage-ffi tests, C examples and dlopen test under AddressSanitizer (nightly)
  fuzz [TARGET] [--time SECONDS]
          run the fuzz targets (dlpack_intake, op_sequence; default both, 600 s each) from
          fuzz/corpus; failing inputs go to fuzz/artifacts/TARGET
  gpu-prepare
          build the GPU check's bundle under target/gpu-check/ (release test binaries, the check
          binary, libovstage.so, rows.ptx, gpu-check.sh); run it on a GPU machine with
          `bash target/gpu-check/gpu-check.sh OUTDIR`";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// Runs one step, printing what it runs and how long it took.
fn step(name: &str, mut cmd: Command) -> Result<(), String> {
    let started = Instant::now();
    println!("==> {name}");
    let status = cmd.status().map_err(|e| format!("{name}: could not start: {e}"))?;
    println!(
        "    {name}: {} in {:.1}s",
        if status.success() { "ok" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    if status.success() { Ok(()) } else { Err(format!("{name} failed ({status})")) }
}

/// Runs one in-process step, printing its name and how long it took.
fn step_fn(name: &str, f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let started = Instant::now();
    println!("==> {name}");
    let result = f();
    println!("    {name}: {} in {:.1}s", if result.is_ok() { "ok" } else { "FAILED" }, started.elapsed().as_secs_f64());
    result.map_err(|e| format!("{name} failed: {e}"))
}

fn test() -> Result<(), String> {
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--", "--check"]);
    step("cargo fmt --check", fmt)?;

    let mut clippy = cargo();
    clippy.args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]);
    step("cargo clippy -D warnings", clippy)?;

    step_fn("codegen --check", || codegen::run(&["--check".to_owned()]))?;
    step_fn("C header tests", ctests::header_tests)?;

    let mut tests = cargo();
    // CI=true makes insta fail on a missing or changed snapshot instead of
    // writing a new one.
    tests.args(["test", "--workspace"]).env("CI", "true");
    step("cargo test --workspace", tests)?;

    let mut doc = cargo();
    doc.args(["doc", "--workspace", "--no-deps"]).env("RUSTDOCFLAGS", "-D warnings");
    step("cargo doc -D warnings", doc)?;

    let mut example = cargo();
    example.args([
        "run",
        "--quiet",
        "-p",
        "ovstage-examples",
        "--bin",
        "run-ahead",
        "--",
        "--prims",
        "512",
        "--ticks",
        "40",
    ]);
    step("example run-ahead", example)?;

    step_fn("C examples, dlopen test, exported symbols", cexamples::run)?;
    step_fn("scheduler model under valgrind (release)", valgrind::scheduler_model)?;
    step_fn("dist: pkg-config and CMake consumers", dist::test)?;
    step_fn("Python package: maturin develop, pytest, examples", python::test)?;
    step_fn("check-snippets", check_snippets)?;
    step_fn("conformance scenarios against their snapshots", conformance::check)?;
    step_fn("benchmark workloads, once each at tiny sizes", bench::smoke)?;
    step_fn("gpu-prepare: the GPU check's bundle builds", gpu::prepare)?;
    asan::unit_tests()?;
    step_fn("C examples and dlopen test under ASan", asan::c_programs)?;
    step_fn(&format!("fuzz targets, {}s each", fuzz::CI_SECONDS), fuzz::smoke)?;
    Ok(())
}

/// `cargo xtask check-snippets`.
fn check_snippets() -> Result<(), String> {
    let summary = snippets::check(&root()).map_err(|problems| problems.join("\n"))?;
    println!("    check-snippets: ok: {summary}");
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(),
        Some("codegen") => codegen::run(&args[1..]),
        Some("bench-py") => python::bench(&args[1..]),
        Some("test-py") => python::test(),
        Some("dist") => dist::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("bench-reference") => bench_reference::run(&args[1..], false),
        Some("bench-suite") => bench_reference::run(&args[1..], true),
        Some("check-snippets") => check_snippets(),
        Some("conformance") => conformance::run(&args[1..]),
        Some("dist-test") => dist::test(),
        Some("asan") => asan::run(),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("gpu-prepare") => gpu::prepare(),
        Some("help" | "--help" | "-h") | None => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(other) => Err(format!("unknown command {other:?}\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}
