//! The CUDA driver, opened at run time.
//!
//! cust calls the driver's C entry points (`cuInit`, `cuMemcpyDtoH_v2`, ...)
//! by name. Instead of linking `libcuda.so.1`, which a machine without an
//! NVIDIA driver does not have, this module defines every one of those names
//! itself (`entries.rs`, generated from cust_raw's bindings by `cargo xtask
//! codegen`): each is a hidden trampoline that jumps through a table.
//! The table starts empty; the first call of any entry lands in a resolver
//! that opens the driver once per process (`dlopen`), fills the whole table
//! and continues into the real function with the caller's arguments intact.
//! So:
//!
//! - no binary has `NEEDED libcuda.so.1`, and none exports a `cu*` symbol
//!   (the trampolines are hidden);
//! - nothing opens the driver or runs `cuInit` until the first CUDA call,
//!   which only a CUDA tensor or a device placement makes;
//! - on a machine without a driver every entry returns
//!   `CUDA_ERROR_NO_DEVICE` (100), and an entry point the installed driver
//!   lacks returns `CUDA_ERROR_NOT_FOUND` (500): errors, never a crash.
//!
//! `OVSTAGE_LIBCUDA` names another driver library to open (the fake driver
//! of the tests); it is read once, when the driver is first opened.
//!
//! The trampolines are x86-64 System V code; another architecture needs its
//! own variant (the crate's `cuda` feature compiles this module only for
//! x86-64 Linux).

mod entries;

use std::ffi::{CString, c_void};
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

pub use entries::NAMES;

/// The library opened when `OVSTAGE_LIBCUDA` is not set: the driver's
/// soname, as every CUDA runtime opens it.
pub const DEFAULT_LIBRARY: &str = "libcuda.so.1";

/// `CUDA_ERROR_NO_DEVICE`: what every entry returns when the driver could
/// not be opened.
const NO_DEVICE: u32 = 100;
/// `CUDA_ERROR_NOT_FOUND`: what an entry the driver lacks returns.
const NOT_FOUND: u32 = 500;

/// Where each entry of [`NAMES`] jumps: null until the driver is opened,
/// then the driver's function or one of the fallbacks below.
static TABLE: [AtomicPtr<c_void>; NAMES.len()] = [const { AtomicPtr::new(ptr::null_mut()) }; NAMES.len()];

/// What opening the driver gave, once per process.
struct Opened {
    /// The library path or name that was opened (or tried).
    library: String,
    /// Why the driver could not be opened, if it could not.
    failure: Option<String>,
    /// Entry points the opened driver does not have.
    missing: Vec<&'static str>,
    /// Keeps the driver mapped for the life of the process (never closed:
    /// its functions are in the table).
    _handle: Option<libloading::Library>,
}

static OPENED: OnceLock<Opened> = OnceLock::new();

/// The fallback of every entry when there is no driver. Entry points take
/// their arguments in registers and on the caller's stack, which a function
/// that reads none of them leaves alone, so one fallback fits them all.
extern "C" fn no_driver() -> u32 {
    NO_DEVICE
}

/// The fallback of an entry point the driver does not export.
extern "C" fn not_in_driver() -> u32 {
    NOT_FOUND
}

fn open_driver() -> Opened {
    let library = std::env::var("OVSTAGE_LIBCUDA").unwrap_or_else(|_| DEFAULT_LIBRARY.to_owned());
    // SAFETY: opening the CUDA driver runs its initialisers, which are the
    // vendor's and expect nothing of the caller; a library named by
    // OVSTAGE_LIBCUDA is the user's choice of driver.
    let handle = match unsafe { libloading::Library::new(&library) } {
        Ok(handle) => handle,
        Err(e) => {
            for slot in &TABLE {
                slot.store(no_driver as *mut c_void, Ordering::Relaxed);
            }
            return Opened { failure: Some(format!("{e}")), library, missing: Vec::new(), _handle: None };
        }
    };
    let mut missing = Vec::new();
    for (slot, name) in TABLE.iter().zip(NAMES.iter()) {
        let c_name = CString::new(*name).expect("entry names have no NUL");
        // SAFETY: the symbol is read as an address only; it is called through
        // a trampoline whose declaration (cust_raw's) is the driver's own
        // signature for that name.
        let found = unsafe { handle.get::<*mut c_void>(c_name.as_bytes_with_nul()) };
        match found {
            Ok(symbol) if !symbol.is_null() => slot.store(*symbol, Ordering::Relaxed),
            _ => {
                missing.push(*name);
                slot.store(not_in_driver as *mut c_void, Ordering::Relaxed);
            }
        }
    }
    Opened { library, failure: None, missing, _handle: Some(handle) }
}

fn opened() -> &'static Opened {
    // The table is filled inside the initialiser: a thread that finds
    // `OPENED` set (or a non-null entry) sees every entry filled.
    OPENED.get_or_init(open_driver)
}

/// Called by the trampolines' shared resolver (see `entries`) the first time
/// an entry runs: opens the driver if nobody has yet and returns where entry
/// `index` goes. Never unwinds (nothing in it panics but a broken invariant,
/// and a panic in an `extern "C"` function aborts).
extern "C" fn resolve(index: u32) -> *mut c_void {
    opened();
    TABLE[index as usize].load(Ordering::Relaxed)
}

// The resolver every trampoline jumps to when its table entry is still
// null, with the entry's index in r11d. It saves the registers that carry
// arguments (six integer, eight vector: a few entry points take floats),
// calls `resolve`, restores them and jumps to the answer, so the real
// function sees its caller's arguments, stack arguments included (the stack
// pointer is back where it was on entry). On entry rsp is 8 mod 16 (a
// return address was pushed); 6 pushes and 136 bytes make it 0 mod 16 for
// the call.
core::arch::global_asm!(
    ".pushsection .text.ovstage_cuda_entries,\"ax\",@progbits",
    ".p2align 4",
    ".globl ovstage_cuda_lazy_entry",
    ".hidden ovstage_cuda_lazy_entry",
    ".type ovstage_cuda_lazy_entry,@function",
    "ovstage_cuda_lazy_entry:",
    "push rdi",
    "push rsi",
    "push rdx",
    "push rcx",
    "push r8",
    "push r9",
    "sub rsp, 136",
    "movdqu [rsp], xmm0",
    "movdqu [rsp + 16], xmm1",
    "movdqu [rsp + 32], xmm2",
    "movdqu [rsp + 48], xmm3",
    "movdqu [rsp + 64], xmm4",
    "movdqu [rsp + 80], xmm5",
    "movdqu [rsp + 96], xmm6",
    "movdqu [rsp + 112], xmm7",
    "mov edi, r11d",
    "call {resolve}",
    "movdqu xmm0, [rsp]",
    "movdqu xmm1, [rsp + 16]",
    "movdqu xmm2, [rsp + 32]",
    "movdqu xmm3, [rsp + 48]",
    "movdqu xmm4, [rsp + 64]",
    "movdqu xmm5, [rsp + 80]",
    "movdqu xmm6, [rsp + 96]",
    "movdqu xmm7, [rsp + 112]",
    "add rsp, 136",
    "pop r9",
    "pop r8",
    "pop rcx",
    "pop rdx",
    "pop rsi",
    "pop rdi",
    "jmp rax",
    ".size ovstage_cuda_lazy_entry, . - ovstage_cuda_lazy_entry",
    ".popsection",
    resolve = sym resolve,
);

/// Why the driver cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DriverError {
    /// The driver library could not be opened (no NVIDIA driver on this
    /// machine, or `OVSTAGE_LIBCUDA` names something else).
    Unavailable {
        /// The library that was tried.
        library: String,
        /// What the dynamic loader said.
        reason: String,
    },
    /// The driver was opened but a call failed.
    Failed {
        /// The entry point that failed.
        call: &'static str,
        /// Its `CUresult`.
        code: u32,
    },
}

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriverError::Unavailable { library, reason } => {
                write!(f, "the CUDA driver ({library}) could not be opened: {reason}")
            }
            DriverError::Failed { call, code } => write!(f, "the CUDA driver's {call} failed with CUresult {code}"),
        }
    }
}

impl std::error::Error for DriverError {}

/// Opens the driver library if this process has not yet (it never runs
/// `cuInit`). Every later call answers from the first.
pub fn open() -> Result<(), DriverError> {
    let o = opened();
    match &o.failure {
        None => Ok(()),
        Some(reason) => Err(DriverError::Unavailable { library: o.library.clone(), reason: reason.clone() }),
    }
}

/// Whether this process has opened (or tried to open) the driver. A
/// process that made no CUDA call has not.
pub fn is_opened() -> bool {
    OPENED.get().is_some()
}

/// The entry points the opened driver does not have (empty before it is
/// opened or when it could not be).
pub fn missing() -> &'static [&'static str] {
    OPENED.get().map_or(&[], |o| o.missing.as_slice())
}

/// What [`init`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverInfo {
    /// The library that was opened.
    pub library: String,
    /// The driver's CUDA version, as `cuDriverGetVersion` gives it
    /// (1000 × major + 10 × minor).
    pub version: i32,
    /// How many CUDA devices it sees.
    pub devices: i32,
}

// Our own calls declare `CUresult` as a plain integer, so a code newer than
// cust_raw's enum (bindings of CUDA 11.4) is a number to report, never an
// invalid enum value. They resolve to the same trampolines.
unsafe extern "C" {
    #[link_name = "cuInit"]
    fn cu_init(flags: u32) -> u32;
    #[link_name = "cuDriverGetVersion"]
    fn cu_driver_get_version(version: *mut i32) -> u32;
    #[link_name = "cuDeviceGetCount"]
    fn cu_device_get_count(count: *mut i32) -> u32;
}

fn check(call: &'static str, code: u32) -> Result<(), DriverError> {
    if code == 0 { Ok(()) } else { Err(DriverError::Failed { call, code }) }
}

/// Opens the driver and initialises it (`cuInit(0)`): the driver's version
/// and device count, or why there is no usable driver.
pub fn init() -> Result<DriverInfo, DriverError> {
    open()?;
    // SAFETY: `cuInit` takes flags by value; 0 is the only defined value.
    check("cuInit", unsafe { cu_init(0) })?;
    let mut version = 0;
    // SAFETY: the driver writes one int through a valid pointer.
    check("cuDriverGetVersion", unsafe { cu_driver_get_version(&mut version) })?;
    let mut devices = 0;
    // SAFETY: as above.
    check("cuDeviceGetCount", unsafe { cu_device_get_count(&mut devices) })?;
    Ok(DriverInfo { library: opened().library.clone(), version, devices })
}
