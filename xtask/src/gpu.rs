//! `cargo xtask gpu-prepare`: the GPU check's bundle, built here and run
//! on a machine with an NVIDIA GPU (`bash target/gpu-check/gpu-check.sh
//! OUTDIR`). It holds, under `target/gpu-check/`:
//!
//! - `bin/*.test`: the release test binaries of the CUDA backend (device
//!   tests against the CPU reference, the fake-driver test, unit tests) and
//!   of the C ABI (its CUDA-input tests, picked by `filters/`), named
//!   `TARGET-KIND.test`, debug info stripped;
//! - `bin/ovstage-gpu-check`: preflight and throughput figures;
//! - `lib/libovstage.so`, `rows.ptx` (for the machine's `ptxas`),
//!   `gpu-check.sh`, `gpu-check.py` and `hierarchy-probe.py` (from
//!   `xtask/gpu-check/`);
//! - `python/ovstage-*.whl`: a release wheel of the Python package, which
//!   `gpu-check.py` runs against PyTorch's CUDA tensors where torch is.
//!
//! The binaries are built by this machine's toolchain, so they need a glibc
//! at least as new as this machine's on the GPU machine.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The bundle's folder, relative to the workspace root.
const BUNDLE: &str = "target/gpu-check";
/// Far below the 64 MiB a device run can carry.
const MAX_BYTES: u64 = 48 << 20;

/// Tests of a binary the bundle runs, when not all of them: (binary name,
/// libtest filter). The C ABI's other tests need the source tree (insta
/// snapshots) and say nothing about the GPU.
const FILTERS: &[(&str, &[&str])] = &[(
    "ovstage-cdylib",
    &[
        "tensors::bad_tensors_are_rejected_with_the_reason",
        "tensors::cuda_writes_read_back_equal_to_host_writes",
        "tensors::a_cuda_write_is_enqueued_without_waiting_for_its_producer",
        "placement::",
    ],
)];

/// One executable cargo built: the bundle's name for it, and its path.
fn executables(root: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let mut cmd = crate::cargo();
    cmd.current_dir(root)
        .args(["build", "--release", "--message-format=json-render-diagnostics"])
        .args(["-p", "ovstage-backend-cuda", "-p", "ovstage-ffi", "--features", "ovstage-backend-cuda/cuda"])
        .args(["--tests", "--bins", "--lib"])
        .stdout(Stdio::piped());
    let out = cmd.output().map_err(|e| format!("cargo build: {e}"))?;
    if !out.status.success() {
        return Err("cargo build of the GPU check's binaries failed".into());
    }
    let mut found = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if !line.contains("\"reason\":\"compiler-artifact\"") {
            continue;
        }
        let Some(exe) = field(line, "\"executable\":\"") else { continue };
        let name = field(line, "\"name\":\"").unwrap_or_default();
        // The profile's `test` (a test harness), not the target's (testable).
        let test = field(line, "\"profile\":{").is_some()
            && line[line.find("\"profile\":{").expect("just found")..].contains("\"test\":true");
        let kind = field(line, "\"kind\":[\"").unwrap_or_default();
        let bundle_name = if test { format!("{name}-{kind}.test") } else { name };
        found.push((bundle_name, PathBuf::from(exe)));
    }
    Ok(found)
}

/// The string value after `key` in one line of cargo's JSON (no escapes in
/// the values read here: names, kinds and paths under target/).
fn field(line: &str, key: &str) -> Option<String> {
    let rest = &line[line.find(key)? + key.len()..];
    Some(rest[..rest.find('"')?].to_owned())
}

fn copy(from: &Path, to: &Path) -> Result<u64, String> {
    fs::copy(from, to).map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))
}

fn strip(path: &Path) {
    // Without `strip` the bundle is only larger.
    let _ = Command::new("strip").arg("--strip-debug").arg(path).status();
}

fn size_of_tree(dir: &Path) -> u64 {
    fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .map(|e| {
                let p = e.path();
                if p.is_dir() { size_of_tree(&p) } else { e.metadata().map_or(0, |m| m.len()) }
            })
            .sum()
    })
}

/// `cargo xtask gpu-prepare`.
pub(crate) fn prepare() -> Result<(), String> {
    let root = crate::root();
    let bundle = root.join(BUNDLE);
    if bundle.exists() {
        fs::remove_dir_all(&bundle).map_err(|e| format!("{}: {e}", bundle.display()))?;
    }
    for dir in ["bin", "lib", "filters"] {
        fs::create_dir_all(bundle.join(dir)).map_err(|e| format!("{BUNDLE}/{dir}: {e}"))?;
    }
    let mut tests = 0;
    let mut check = false;
    for (name, exe) in executables(&root)? {
        // (The check binary's own test harness has no tests.)
        let wanted = (name.ends_with(".test") && !name.ends_with("-bin.test")) || name == "ovstage-gpu-check";
        if !wanted {
            continue;
        }
        let target = bundle.join("bin").join(&name);
        copy(&exe, &target)?;
        strip(&target);
        tests += usize::from(name.ends_with(".test"));
        check |= name == "ovstage-gpu-check";
    }
    if !check || tests == 0 {
        return Err(format!("the build gave {tests} test binaries and no check binary: is the cuda feature gone?"));
    }
    for (binary, filters) in FILTERS {
        let name = format!("{binary}.test");
        if !bundle.join("bin").join(&name).exists() {
            return Err(format!("{name}, which {BUNDLE}/filters/ names, was not built"));
        }
        let lines: String = filters.iter().map(|f| format!("{f}\n")).collect();
        fs::write(bundle.join("filters").join(binary), lines).map_err(|e| e.to_string())?;
    }
    let lib = root.join("target/release/libovstage.so");
    copy(&lib, &bundle.join("lib/libovstage.so"))?;
    strip(&bundle.join("lib/libovstage.so"));
    copy(&root.join("crates/ovstage-backend-cuda/src/kernels/rows.ptx"), &bundle.join("rows.ptx"))?;
    copy(&root.join("xtask/gpu-check/gpu-check.sh"), &bundle.join("gpu-check.sh"))?;
    for script in ["gpu-check.py", "hierarchy-probe.py"] {
        copy(&root.join("xtask/gpu-check").join(script), &bundle.join(script))?;
    }
    crate::python::wheel(&root, &bundle.join("python"))?;
    let bytes = size_of_tree(&bundle);
    if bytes > MAX_BYTES {
        return Err(format!("{BUNDLE} is {} MiB, over the {} MiB it may take", bytes >> 20, MAX_BYTES >> 20));
    }
    println!(
        "gpu-prepare: {BUNDLE}: {tests} test binaries, the check binary, libovstage.so, rows.ptx, the scripts, a wheel \
         ({:.1} MiB); on a GPU machine: bash {BUNDLE}/gpu-check.sh OUTDIR",
        bytes as f64 / f64::from(1 << 20)
    );
    Ok(())
}
