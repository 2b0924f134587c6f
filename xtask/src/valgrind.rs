//! The scheduler's model test, built optimized, under valgrind: the
//! ordering lock's code once branched on uninitialized bytes of an op's
//! spec (an enum variant's unused payload) in optimized builds only, which
//! memcheck reports and a debug build never shows.

use std::process::Command;

/// Builds the model test in release, then runs a few proptest cases of it
/// under valgrind; any memcheck error fails.
pub(crate) fn scheduler_model() -> Result<(), String> {
    let output = crate::cargo()
        .args(["test", "--release", "-p", "ovstage-sched", "--test", "model", "--no-run"])
        .output()
        .map_err(|e| format!("cargo: {e}"))?;
    let log = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!("building the model test failed:\n{log}"));
    }
    // "  Executable tests/model.rs (target/release/deps/model-HASH)"
    let exe = log
        .lines()
        .find_map(|l| l.trim().strip_prefix("Executable tests/model.rs (")?.strip_suffix(')').map(str::to_owned))
        .ok_or_else(|| format!("no test executable in cargo's output:\n{log}"))?;
    let status = Command::new("valgrind")
        .args(["--error-exitcode=3", "--quiet", "--track-origins=yes"])
        .arg(crate::root().join(&exe))
        .arg("--test-threads=1")
        .env("PROPTEST_CASES", "4")
        .current_dir(crate::root())
        .status()
        .map_err(|e| format!("valgrind: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("the scheduler model under valgrind: {status}")) }
}
