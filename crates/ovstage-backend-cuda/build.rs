//! One name for "this build drives a CUDA driver": the `cuda` feature on a
//! platform the driver trampolines cover (x86-64 Linux; see `src/driver`).
//! The crate's code says `cfg(driven)` instead of repeating the three
//! conditions, which must agree everywhere.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(driven)");
    let feature = std::env::var_os("CARGO_FEATURE_CUDA").is_some();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "x86_64");
    let os = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|o| o == "linux");
    if feature && arch && os {
        println!("cargo::rustc-cfg=driven");
    }
}
