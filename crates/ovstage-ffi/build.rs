//! Records the source revision and branch for `ovstage_get_build_info`
//! ("unknown" outside a git checkout).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_owned())
}

fn main() {
    let hash = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let branch = git(&["rev-parse", "--abbrev-ref", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=OVSTAGE_GIT_HASH={hash}");
    println!("cargo:rustc-env=OVSTAGE_GIT_BRANCH={branch}");
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(head_ref) = git(&["rev-parse", "--symbolic-full-name", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{head_ref}");
        }
    }
    // Programs linking the shared library record this name (not the path
    // they linked), so the library can be moved and found through the
    // loader's search path.
    // Only the C-library package links a cdylib (the fuzz crates build the
    // same sources as an rlib, from their own package).
    let cdylib = std::env::var("CARGO_PKG_NAME").as_deref() == Ok("ovstage-ffi");
    if cdylib && std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libovstage.so");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
