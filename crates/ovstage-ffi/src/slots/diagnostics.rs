//! Diagnostics and resources: `get_version`, `get_error_string`,
//! `get_path_dictionary`, `query_extension`.

use std::ffi::{c_char, c_void};

use ovstage_types::{Error, Status};

use super::with_context;
use crate::abi::api_types::{
    OVSTAGE_VERSION_MAJOR, OVSTAGE_VERSION_MINOR, OVSTAGE_VERSION_PATCH, ovstage_api_status_t, ovstage_context_t,
};
use crate::abi::path_dictionary::path_dictionary_instance_t;
use crate::error::{self, report};
use crate::strings;

/// `get_version`: the contract version (NULL outputs are skipped).
pub(super) unsafe extern "C" fn get_version(
    ctx: *mut ovstage_context_t,
    major: *mut u32,
    minor: *mut u32,
    patch: *mut u32,
) {
    // SAFETY: the contract's precondition on `ctx`.
    unsafe {
        with_context(ctx, "get_version", |_| {
            for (out, v) in
                [(major, OVSTAGE_VERSION_MAJOR), (minor, OVSTAGE_VERSION_MINOR), (patch, OVSTAGE_VERSION_PATCH)]
            {
                if !out.is_null() {
                    // SAFETY: non-NULL outputs are writable per the contract.
                    out.write(v);
                }
            }
        })
    }
}

/// A static description of a status code.
pub(crate) fn status_text(raw: u32) -> &'static std::ffi::CStr {
    match Status::from_raw(raw) {
        Some(Status::Ok) => c"success",
        Some(Status::InvalidArgument) => c"invalid argument",
        Some(Status::InvalidHandle) => c"invalid handle",
        Some(Status::NotFound) => c"not found",
        Some(Status::PrimNotFound) => c"prim not found",
        Some(Status::WriteFloorViolation) => c"write floor violation",
        Some(Status::NotSupported) => c"not supported",
        Some(Status::QueueFull) => c"queue full",
        Some(Status::EndOfIteration) => c"end of iteration",
        Some(Status::OutOfMemory) => c"out of memory",
        Some(Status::LayoutChanged) => c"layout changed",
        Some(Status::Timeout) => c"timeout",
        Some(Status::OpFailed) => c"operation failed",
        Some(Status::OutOfRange) => c"out of range",
        Some(Status::Internal) => c"internal error",
        None => c"unknown error",
    }
}

/// `get_error_string`.
pub(super) unsafe extern "C" fn get_error_string(
    ctx: *mut ovstage_context_t,
    status: ovstage_api_status_t,
) -> *const c_char {
    // The text does not depend on the instance; a NULL context still gets it.
    let _ = ctx;
    status_text(status.0).as_ptr()
}

/// `get_path_dictionary`.
pub(super) unsafe extern "C" fn get_path_dictionary(ctx: *mut ovstage_context_t) -> *mut path_dictionary_instance_t {
    // SAFETY: the contract's precondition on `ctx`.
    unsafe { with_context(ctx, "get_path_dictionary", |c| (&raw const c.dictionary).cast_mut()) }
}

/// `query_extension`: the placement table (`"ovstage.placement"`), and no
/// other.
pub(super) unsafe extern "C" fn query_extension(
    ctx: *mut ovstage_context_t,
    name: *const c_char,
    out: *mut *const c_void,
) -> ovstage_api_status_t {
    const CALL: &str = "query_extension";
    // SAFETY: the contract's precondition on `ctx`.
    unsafe {
        with_context(ctx, CALL, |_| {
            if out.is_null() {
                return report(&Error::invalid_argument(format!("{CALL}: out_extension is NULL")));
            }
            // SAFETY: checked non-NULL; writable per the contract.
            out.write(std::ptr::null());
            // SAFETY: a non-NULL name is NUL-terminated per the contract.
            match strings::c_text(name, format_args!("{CALL}: name")) {
                Err(e) => report(&e),
                Ok(n) if n == super::placed::NAME => {
                    // SAFETY: checked non-NULL above.
                    out.write((&raw const super::placed::TABLE).cast());
                    crate::error::c_status(Status::Ok)
                }
                Ok(n) => error::fail(
                    Status::NotFound,
                    &format!(
                        "{CALL}: this library provides no extension named '{n}' (it provides '{}')",
                        super::placed::NAME
                    ),
                ),
            }
        })
    }
}
