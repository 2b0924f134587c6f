//! The lazy driver against a fake `libcuda.so.1`: calls pass through the
//! trampolines with their arguments intact (the first call of a process,
//! which goes through the resolver, included), missing entry points and a
//! missing driver are clean errors, and cust works on top.
//!
//! The driver is opened once per process, so each scenario runs in a child
//! process of this binary (`fake_driver --child NAME`). The fake driver is
//! compiled with the machine's C compiler; without one the test prints SKIP
//! and passes.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use ovstage_backend_cuda::driver::{self, DriverError};

const FAKE_DRIVER: &str = r#"
#include <stdio.h>
#include <string.h>
typedef int CUresult;
static int initialised;
CUresult cuInit(unsigned flags) { if (flags != 0) return 1; initialised = 1; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 12034; return 0; }
CUresult cuDeviceGetCount(int *n) { if (!initialised) return 3; *n = 2; return 0; }
CUresult cuDeviceGet(int *d, int ordinal) {
    if (!initialised) return 3;
    if (ordinal < 0 || ordinal > 1) return 101;
    *d = ordinal; return 0;
}
CUresult cuDeviceGetName(char *name, int len, int dev) { snprintf(name, len, "Fake GPU %d", dev); return 0; }
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { (void)ctx; (void)dev; return 201; }
/* Eleven arguments: the last three arrive on the stack. */
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shmem, void *stream, void **params, void **extra) {
    int ok = f == (void *)0x10 && gx == 1 && gy == 2 && gz == 3 && bx == 4 && by == 5 && bz == 6
        && shmem == 7 && stream == (void *)0x1234 && params == (void **)0x4321 && extra == (void **)0x5678;
    return ok ? 0 : 1;
}
/* A float argument arrives in xmm0. */
CUresult cuParamSetf(void *f, int offset, float value) {
    return f == (void *)0x10 && offset == 7 && value == 2.5f ? 0 : 1;
}
"#;

/// CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NOT_FOUND.
const NO_DEVICE: u32 = 100;
const NOT_FOUND: u32 = 500;

fn code(r: cust::sys::CUresult) -> u32 {
    r as u32
}

type Scenario = fn() -> Result<(), String>;

fn ensure(ok: bool, what: &str) -> Result<(), String> {
    if ok { Ok(()) } else { Err(what.to_owned()) }
}

/// Nothing is opened before the first call; `init` reports the fake's
/// figures; an entry the fake lacks is listed and returns NOT_FOUND.
fn init() -> Result<(), String> {
    ensure(!driver::is_opened(), "the driver is opened before any call")?;
    let info = driver::init().map_err(|e| format!("init: {e}"))?;
    ensure(info.version == 12034 && info.devices == 2, &format!("init gave {info:?}"))?;
    ensure(driver::is_opened(), "not opened after init")?;
    let missing = driver::missing();
    ensure(missing.contains(&"cuMemAlloc_v2"), "cuMemAlloc_v2 is not listed as missing")?;
    ensure(!missing.contains(&"cuInit"), "cuInit is listed as missing")?;
    let mut ptr = 0;
    // SAFETY: the fake lacks the entry, so nothing is written.
    let r = code(unsafe { cust::sys::cuMemAlloc_v2(&mut ptr, 64) });
    ensure(r == NOT_FOUND, &format!("a missing entry returned {r}"))
}

/// The first call of the process has stack arguments: the resolver keeps
/// them in place; the second call goes straight through.
fn stack_arguments() -> Result<(), String> {
    for round in 0..2 {
        // SAFETY: the fake only compares the arguments.
        let r = code(unsafe {
            cust::sys::cuLaunchKernel(
                0x10 as _,
                1,
                2,
                3,
                4,
                5,
                6,
                7,
                0x1234 as _,
                0x4321 as *mut *mut std::ffi::c_void,
                0x5678 as *mut *mut std::ffi::c_void,
            )
        });
        ensure(r == 0, &format!("call {round}: arguments did not arrive intact"))?;
    }
    Ok(())
}

/// The first call of the process takes a float: the resolver keeps the
/// vector registers.
fn float_argument() -> Result<(), String> {
    // SAFETY: the fake only compares the arguments.
    let r = code(unsafe { cust::sys::cuParamSetf(0x10 as _, 7, 2.5) });
    ensure(r == 0, "the float argument did not arrive intact")
}

/// No driver: every entry returns NO_DEVICE, `init` says which library
/// could not be opened, nothing panics.
fn no_driver() -> Result<(), String> {
    // SAFETY: no driver: the fallback reads no argument.
    let r = code(unsafe { cust::sys::cuInit(0) });
    ensure(r == NO_DEVICE, &format!("cuInit without a driver returned {r}"))?;
    match driver::init() {
        Err(DriverError::Unavailable { library, reason }) => {
            ensure(library.ends_with("/no-such-dir/libcuda.so.1"), &format!("library {library}"))?;
            ensure(!reason.is_empty(), "no reason")
        }
        other => Err(format!("init without a driver gave {other:?}")),
    }?;
    ensure(driver::missing().is_empty(), "missing entries without a driver")?;
    let e = cust::init(cust::CudaFlags::empty()).expect_err("cust::init without a driver");
    ensure(format!("{e:?}") == "NoDevice", &format!("cust::init gave {e:?}"))
}

/// cust on the fake: init, a device and its name, and a context whose
/// retain fails, as an error value.
fn cust_on_top() -> Result<(), String> {
    cust::init(cust::CudaFlags::empty()).map_err(|e| format!("cust::init: {e:?}"))?;
    let device = cust::device::Device::get_device(1).map_err(|e| format!("device 1: {e:?}"))?;
    let name = device.name().map_err(|e| format!("name: {e:?}"))?;
    ensure(name == "Fake GPU 1", &format!("name {name:?}"))?;
    let e = cust::device::Device::get_device(2).expect_err("device 2 of 2");
    ensure(format!("{e:?}") == "InvalidDevice", &format!("device 2 gave {e:?}"))?;
    let e = cust::context::Context::new(device).expect_err("the fake refuses contexts");
    ensure(format!("{e:?}") == "InvalidContext", &format!("context gave {e:?}"))
}

/// Threads racing the first call all get through.
fn racing_threads() -> Result<(), String> {
    let versions: Vec<i32> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    let mut v = 0;
                    // SAFETY: the fake writes one int.
                    let r = unsafe { cust::sys::cuDriverGetVersion(&mut v) };
                    if code(r) == 0 { v } else { -1 }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("no panic")).collect()
    });
    ensure(versions.iter().all(|v| *v == 12034), &format!("versions {versions:?}"))
}

const SCENARIOS: &[(&str, Scenario, Library)] = &[
    ("init", init, Library::Fake),
    ("stack_arguments", stack_arguments, Library::Fake),
    ("float_argument", float_argument, Library::Fake),
    ("cust_on_top", cust_on_top, Library::Fake),
    ("racing_threads", racing_threads, Library::Fake),
    ("no_driver", no_driver, Library::Missing),
];

#[derive(Clone, Copy)]
enum Library {
    Fake,
    Missing,
}

fn compile_fake(dir: &Path) -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let src = dir.join("fake_cuda.c");
    let lib = dir.join("libcuda.so.1");
    std::fs::write(&src, FAKE_DRIVER).expect("write the fake driver's source");
    let status = Command::new(&cc).args(["-shared", "-fPIC", "-O1", "-o"]).arg(&lib).arg(&src).status().ok()?;
    status.success().then_some(lib)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let name = &args[i + 1];
        let (_, scenario, _) = SCENARIOS.iter().find(|(n, _, _)| n == name).expect("a known scenario");
        return match scenario() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                println!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    // Under `cargo test -- --list` and friends: nothing to list.
    if args.iter().any(|a| a == "--list") {
        return ExitCode::SUCCESS;
    }
    let dir = std::env::temp_dir().join(format!("ovstage-fake-cuda-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let Some(fake) = compile_fake(&dir) else {
        println!("SKIP fake_driver: no C compiler to build the fake driver with");
        return ExitCode::SUCCESS;
    };
    let me = std::env::current_exe().expect("the test binary");
    let mut failed = 0;
    for (name, _, library) in SCENARIOS {
        let path = match library {
            Library::Fake => fake.clone(),
            Library::Missing => dir.join("no-such-dir/libcuda.so.1"),
        };
        let out =
            Command::new(&me).args(["--child", name]).env("OVSTAGE_LIBCUDA", &path).output().expect("run a child");
        if out.status.success() {
            println!("fake_driver {name} ... ok");
        } else {
            failed += 1;
            println!(
                "fake_driver {name} ... FAILED ({}): {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
