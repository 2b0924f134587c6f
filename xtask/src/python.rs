//! The Python package's checks: a virtual environment (created when
//! missing; `OVSTAGE_PY_VENV` names one to reuse), `maturin develop` of
//! `crates/ovstage-py` into it (sharing the workspace's target directory),
//! the pytest suite and the Python examples.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The virtual environment to use.
pub(crate) fn venv(root: &Path) -> PathBuf {
    std::env::var_os("OVSTAGE_PY_VENV").map(PathBuf::from).unwrap_or_else(|| root.join("target/py-venv"))
}

fn run(mut cmd: Command, what: &str) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("{what}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{what} failed: {status}")) }
}

/// The environment's interpreter, the environment created with maturin,
/// numpy and pytest when missing.
fn ensure_venv(root: &Path) -> Result<PathBuf, String> {
    let venv = venv(root);
    let python = venv.join("bin/python");
    if !python.exists() {
        let mut c = Command::new("python3");
        c.args(["-m", "venv"]).arg(&venv);
        run(c, "python3 -m venv")?;
    }
    let have = Command::new(&python)
        .args(["-c", "import maturin, numpy, pytest"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !have {
        let mut c = Command::new(&python);
        c.args(["-m", "pip", "install", "-q", "maturin", "numpy", "pytest"]);
        run(c, "pip install maturin numpy pytest")?;
    }
    Ok(python)
}

/// Creates the environment when missing and installs the package into it.
pub(crate) fn develop(root: &Path, release: bool) -> Result<PathBuf, String> {
    let python = ensure_venv(root)?;
    let venv = venv(root);
    let mut c = Command::new(venv.join("bin/maturin"));
    c.arg("develop").arg("--quiet").current_dir(root.join("crates/ovstage-py"));
    if release {
        c.arg("--release");
    }
    c.env("VIRTUAL_ENV", &venv).env("CARGO_TARGET_DIR", root.join("target"));
    run(c, "maturin develop")?;
    Ok(python)
}

/// Builds a release wheel of the package into `out` (for the GPU check's
/// bundle); returns its path.
pub(crate) fn wheel(root: &Path, out: &Path) -> Result<PathBuf, String> {
    ensure_venv(root)?;
    let mut c = Command::new(venv(root).join("bin/maturin"));
    c.args(["build", "--quiet", "--release", "--out"]).arg(out).current_dir(root.join("crates/ovstage-py"));
    c.env("VIRTUAL_ENV", venv(root)).env("CARGO_TARGET_DIR", root.join("target"));
    run(c, "maturin build --release")?;
    std::fs::read_dir(out)
        .map_err(|e| format!("{}: {e}", out.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("maturin build left no wheel in {}", out.display()))
}

/// Builds the package, runs the pytest suite and the Python examples.
pub(crate) fn test() -> Result<(), String> {
    let root = crate::root();
    let python = develop(&root, false)?;
    extension_is_cuda_free(&python)?;
    let mut c = Command::new(&python);
    c.args(["-m", "pytest", "-q", "crates/ovstage-py/tests"]).current_dir(&root);
    run(c, "pytest")?;
    for example in [
        "examples/python/minimal/main.py",
        "examples/python/runtime-loop/main.py",
        "examples/python/gpu-consumer/main.py",
    ] {
        let mut c = Command::new(&python);
        c.arg(example).current_dir(&root);
        run(c, example)?;
    }
    Ok(())
}

/// The installed extension module carries the CUDA backend without
/// linking the driver (see `cexamples::cuda_free`).
fn extension_is_cuda_free(python: &Path) -> Result<(), String> {
    let o = Command::new(python)
        .args(["-c", "import ovstage._native as m; print(m.__file__)"])
        .output()
        .map_err(|e| format!("python: {e}"))?;
    if !o.status.success() {
        return Err(format!("locating the extension module: {}", String::from_utf8_lossy(&o.stderr)));
    }
    crate::cexamples::cuda_free(Path::new(String::from_utf8_lossy(&o.stdout).trim()))
}

/// `cargo xtask bench-py`: the Python benchmark against a release build.
pub(crate) fn bench(args: &[String]) -> Result<(), String> {
    let root = crate::root();
    let python = develop(&root, true)?;
    let mut c = Command::new(&python);
    c.arg("crates/ovstage-py/bench/bench.py").args(args).current_dir(&root);
    run(c, "bench.py")
}
