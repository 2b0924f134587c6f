//! `cargo xtask asan`: the C ABI under AddressSanitizer.
//!
//! With the nightly toolchain (`-Zsanitizer=address` is unstable), in its
//! own target directory (`target/asan`) so the ordinary build is untouched:
//! the `ovstage-ffi` unit tests and the `ovstage-dlpack` tests; then the
//! library itself, against which the C examples (shared and static) and
//! the dlopen test are built with `-fsanitize=address` (GCC's runtime,
//! which serves the Rust library's instrumentation too) and run, their output compared with
//! `expected-output.txt`. Any ASan or LeakSanitizer report makes a run exit
//! non-zero, which fails the step.
//!
//! `--target` is always given, so build scripts and proc-macros are built
//! for the host without the sanitizer. The standard library is not rebuilt
//! (no `-Zbuild-std`): it is not instrumented, but every allocation still
//! goes through ASan's allocator, so our code's and C's accesses to heap
//! memory are checked, and the step costs one debug build of the crates.

use std::path::PathBuf;
use std::process::Command;

use crate::cexamples;

/// The target triple sanitized builds are made for.
pub(crate) const TARGET: &str = "x86_64-unknown-linux-gnu";

/// Options every sanitized run gets: leaks are errors, and a report ends
/// the program with a non-zero status. An allocation over 2 GiB returns
/// NULL instead of being reported (ASan's default), as a real allocator's
/// refusal would: the library must turn it into `OUT_OF_MEMORY`, which
/// the tests of huge client sizes check.
pub(crate) const ASAN_OPTIONS: &str =
    "detect_leaks=1:halt_on_error=1:allocator_may_return_null=1:max_allocation_size_mb=2048";

/// `cargo +nightly` in the workspace root, cleared of the variables the
/// outer (stable) cargo and rustup set, so the nightly toolchain's own
/// rustc is used.
pub(crate) fn nightly_cargo() -> Command {
    let mut cmd = Command::new("cargo");
    cmd.arg("+nightly").current_dir(crate::root());
    for var in
        ["CARGO", "RUSTC", "RUSTDOC", "RUSTUP_TOOLCHAIN", "RUSTC_WRAPPER", "RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS"]
    {
        cmd.env_remove(var);
    }
    cmd
}

/// Fails with a hint when `cargo +nightly` is missing.
pub(crate) fn require_nightly() -> Result<(), String> {
    let ok = nightly_cargo().arg("--version").output().is_ok_and(|o| o.status.success());
    if ok {
        Ok(())
    } else {
        Err("the nightly toolchain is required (rustup toolchain install nightly --component rust-src)".into())
    }
}

/// A nightly cargo command building for [`TARGET`] with ASan in
/// `target/asan`.
fn asan_cargo(args: &[&str]) -> Command {
    let mut cmd = nightly_cargo();
    cmd.args(args)
        .args(["-p", "ovstage-ffi", "--target", TARGET])
        .env("CARGO_TARGET_DIR", crate::root().join("target/asan"))
        .env("RUSTFLAGS", "-Zsanitizer=address -Cforce-frame-pointers=yes")
        .env("ASAN_OPTIONS", ASAN_OPTIONS)
        // insta must compare, never write, snapshots.
        .env("CI", "true");
    cmd
}

/// The unit tests of `ovstage-ffi` and the tests of `ovstage-dlpack` (the
/// DLPack import and export it uses) under ASan.
pub(crate) fn unit_tests() -> Result<(), String> {
    require_nightly()?;
    crate::step(
        "cargo +nightly test -p ovstage-ffi -p ovstage-dlpack (ASan)",
        asan_cargo(&["test", "-p", "ovstage-dlpack", "--lib", "--tests"]),
    )
}

/// Builds the sanitized library; returns its directory.
fn build_library() -> Result<PathBuf, String> {
    crate::step("cargo +nightly build -p ovstage-ffi (ASan)", asan_cargo(&["build", "--lib"]))?;
    let dir = crate::root().join("target/asan").join(TARGET).join("debug");
    cexamples::dynamic_alias(&dir)?;
    Ok(dir)
}

/// The C examples and the dlopen test against the sanitized library.
pub(crate) fn c_programs() -> Result<(), String> {
    let root = crate::root();
    let lib = build_library()?;
    let include = root.join("crates/ovstage-ffi/include");
    let out = root.join("target/asan/c-examples");
    let cflags = ["-fsanitize=address", "-fno-omit-frame-pointer"];
    for example in cexamples::build_examples(&lib, &include, &out, &cflags)? {
        for args in example.runs {
            let label = example.label(args);
            for (kind, binary) in [("shared", &example.shared), ("static", &example.statik)] {
                let mut cmd = Command::new(binary);
                cmd.args(*args).env("ASAN_OPTIONS", ASAN_OPTIONS);
                cexamples::run_expecting(&mut cmd, &format!("{label} ({kind}, ASan)"), &example.expected)?;
            }
            println!("    {label}: shared and static runs under ASan match the expected output");
        }
    }
    cexamples::dlopen_test(&root, &lib, &include, &out, &cflags)
}

/// `cargo xtask asan`: every ASan check.
pub(crate) fn run() -> Result<(), String> {
    unit_tests()?;
    crate::step_fn("C examples and dlopen test under ASan", c_programs)
}
