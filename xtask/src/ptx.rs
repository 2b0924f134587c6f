//! `cargo xtask codegen`, kernel part: `rows.ptx` of the CUDA backend,
//! compiled from `rows.cu` by clang-14 (no CUDA toolkit), and its stamp.
//!
//! The PTX is committed so that building the backend needs no compiler of
//! CUDA; `rows.ptx.stamp` records the clang major version, the exact command
//! and the SHA-256 of the `rows.cu` it came from. `--check`:
//! - always: the stamp's hash must be that of `rows.cu` (needs nothing);
//! - with `clang-14` on PATH: the PTX must regenerate byte-identically;
//! - with `ptxas` on PATH: the PTX must assemble for sm_80 and sm_90 (the
//!   oldest target and the H200's, which JIT-compiles the sm_80 PTX).
//!
//! clang runs in a scratch directory on a copy of `rows.cu` named by a
//! relative path, so the command is exactly the stamped one and nothing of
//! the checkout's location can reach the output; the generator also refuses
//! PTX that names the checkout.

use std::fmt::Write as _;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// The kernels' directory, relative to the workspace root.
const DIR: &str = "crates/ovstage-backend-cuda/src/kernels";
/// The compiler, as the Debian package installs it.
const CLANG: &str = "clang-14";
/// Its major version, pinned: another major may emit different PTX.
const CLANG_MAJOR: u32 = 14;
/// clang's flags before `-o rows.ptx`: device code only, PTX for sm_80
/// (clang-14 stops at sm_86; the driver JIT-compiles it for newer GPUs),
/// neither CUDA headers nor libdevice.
const FLAGS: [&str; 9] =
    ["-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_80", "-nocudainc", "-nocudalib", "-O3", "-S", "rows.cu"];
/// The architectures `ptxas` must assemble the PTX for.
const PTXAS_ARCHS: [&str; 2] = ["sm_80", "sm_90"];

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The stamp for a `rows.cu` of this hash.
fn stamp(source_sha256: &str) -> String {
    format!(
        "# rows.ptx is generated from rows.cu by `cargo xtask codegen`; do not edit either by hand.\n\
         clang-major = {CLANG_MAJOR}\n\
         command = {CLANG} {} -o rows.ptx\n\
         rows.cu-sha256 = {source_sha256}\n",
        FLAGS.join(" ")
    )
}

/// The `rows.cu-sha256` value of a stamp.
fn stamped_hash(stamp: &str) -> Option<&str> {
    stamp.lines().find_map(|l| l.strip_prefix("rows.cu-sha256 = ")).map(str::trim)
}

/// Whether `program` can be started: `Ok(false)` when it is not on PATH.
fn on_path(program: &str) -> Result<bool, String> {
    match Command::new(program).arg("--version").output() {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("{program}: could not start: {e}")),
    }
}

/// Checks that `clang-14 --version` is of the pinned major.
fn check_clang_version() -> Result<(), String> {
    let out = Command::new(CLANG).arg("--version").output().map_err(|e| format!("{CLANG}: could not start: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or("");
    let major = first.split_once("version ").and_then(|(_, v)| v.split('.').next()).and_then(|m| m.parse::<u32>().ok());
    if major == Some(CLANG_MAJOR) {
        Ok(())
    } else {
        Err(format!("{CLANG} --version says {first:?}; rows.ptx is stamped for clang {CLANG_MAJOR}"))
    }
}

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Self, String> {
        let dir = std::env::temp_dir().join(format!("ovstage-ptx-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Compiles `source` (the text of `rows.cu`) to PTX with clang-14.
fn compile(root: &Path, source: &[u8]) -> Result<Vec<u8>, String> {
    if !on_path(CLANG)? {
        return Err(format!("{CLANG} is not on PATH: install the Debian package clang-14 (apt-get install clang-14)"));
    }
    check_clang_version()?;
    let scratch = Scratch::new()?;
    fs::write(scratch.0.join("rows.cu"), source).map_err(|e| format!("{}: {e}", scratch.0.display()))?;
    let out = Command::new(CLANG)
        .args(FLAGS)
        .args(["-o", "rows.ptx"])
        .current_dir(&scratch.0)
        .output()
        .map_err(|e| format!("{CLANG}: could not start: {e}"))?;
    if !out.status.success() {
        return Err(format!("{CLANG} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    let ptx = fs::read(scratch.0.join("rows.ptx")).map_err(|e| format!("{CLANG} wrote no rows.ptx: {e}"))?;
    let text = String::from_utf8_lossy(&ptx);
    for place in [root.to_string_lossy(), scratch.0.to_string_lossy()] {
        if text.contains(place.as_ref()) {
            return Err(format!("{CLANG}'s PTX names {place}: it would not regenerate identically elsewhere"));
        }
    }
    if !text.contains("\n.target sm_80\n") {
        return Err(format!("{CLANG}'s PTX does not target sm_80"));
    }
    Ok(ptx)
}

/// Assembles `ptx` with `ptxas` for each of [`PTXAS_ARCHS`].
fn assemble(ptx: &Path) -> Result<(), String> {
    for arch in PTXAS_ARCHS {
        let out = Command::new("ptxas")
            .arg(format!("-arch={arch}"))
            .args(["-o", "/dev/null"])
            .arg(ptx)
            .output()
            .map_err(|e| format!("ptxas: could not start: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "ptxas -arch={arch} {} failed ({}):\n{}{}",
                ptx.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    Ok(())
}

/// `cargo xtask codegen [--check]`, kernel part: without `check`, compiles
/// `rows.cu` and writes `rows.ptx` and `rows.ptx.stamp`; with it, runs the
/// checks of the module docs, printing one line for each.
pub(crate) fn run(check: bool) -> Result<(), String> {
    let root = crate::root();
    let dir = root.join(DIR);
    let read = |name: &str| fs::read(dir.join(name)).map_err(|e| format!("{DIR}/{name}: {e}"));
    let source = read("rows.cu")?;
    let hash = sha256_hex(&source);
    let want_stamp = stamp(&hash);

    if !check {
        let ptx = compile(&root, &source)?;
        let mut changed = Vec::new();
        for (name, bytes) in [("rows.ptx", ptx.as_slice()), ("rows.ptx.stamp", want_stamp.as_bytes())] {
            if fs::read(dir.join(name)).is_ok_and(|old| old == bytes) {
                continue;
            }
            fs::write(dir.join(name), bytes).map_err(|e| format!("{DIR}/{name}: {e}"))?;
            changed.push(name);
        }
        if changed.is_empty() {
            println!("codegen: {DIR}/rows.ptx is up to date");
        } else {
            println!("codegen: wrote {DIR}/{}", changed.join(", "));
        }
        return Ok(());
    }

    // (a) The stamp against the source: needs nothing.
    let have_stamp = String::from_utf8(read("rows.ptx.stamp")?).map_err(|e| format!("{DIR}/rows.ptx.stamp: {e}"))?;
    match stamped_hash(&have_stamp) {
        Some(h) if h == hash => {}
        Some(h) => {
            return Err(format!(
                "{DIR}/rows.cu changed since rows.ptx was generated (stamp sha256 {h}, rows.cu {hash}); \
                 run `cargo xtask codegen`"
            ));
        }
        None => return Err(format!("{DIR}/rows.ptx.stamp has no rows.cu-sha256 line; run `cargo xtask codegen`")),
    }
    if have_stamp != want_stamp {
        return Err(format!("{DIR}/rows.ptx.stamp does not match the generator's command; run `cargo xtask codegen`"));
    }
    println!("codegen: ptx: rows.ptx.stamp matches rows.cu (sha256 {hash}): done");

    // (b) Regeneration, with the stamped compiler only.
    let ptx = read("rows.ptx")?;
    if on_path(CLANG)? {
        if compile(&root, &source)? != ptx {
            return Err(format!(
                "{DIR}/rows.ptx differs from what {CLANG} generates from rows.cu; run `cargo xtask codegen`"
            ));
        }
        println!("codegen: ptx: {CLANG} regenerates rows.ptx byte-identically: done");
    } else {
        println!("codegen: ptx: regeneration skipped: {CLANG} is not on PATH (Debian package clang-14)");
    }

    // (c) Assembly, when a CUDA toolkit's ptxas is at hand.
    if on_path("ptxas")? {
        assemble(&dir.join("rows.ptx"))?;
        println!("codegen: ptx: ptxas assembles rows.ptx for {}: done", PTXAS_ARCHS.join(" and "));
    } else {
        println!(
            "codegen: ptx: assembly skipped: ptxas is not on PATH (a CUDA toolkit, or pip install nvidia-cuda-nvcc-cu12)"
        );
    }
    Ok(())
}
