//! `ovx/string_types.h`: string views and tokens shared by the ovx family
//! of C APIs.

use core::ffi::c_char;

/// A UTF-8 string view of `length` bytes, owned by whoever produced it.
///
/// As input it is length-delimited: `ptr[length]` need not be NUL and views
/// into larger buffers are fine. As output from the library a non-empty
/// view is NUL-terminated (`ptr[length] == '\0'`), so `ptr` can be handed to
/// C string functions; `{NULL, 0}` means "no value". A NULL `ptr` with a
/// non-zero `length` is invalid.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovx_string_t {
    /// First byte, or NULL.
    pub ptr: *const c_char,
    /// Length in bytes, without any terminator.
    pub length: usize,
}

impl ovx_string_t {
    /// The empty view `{NULL, 0}`.
    pub const NONE: ovx_string_t = ovx_string_t { ptr: core::ptr::null(), length: 0 };
}

/// An interned string (0 is no token).
pub type ovx_token_t = u64;

/// An attribute or name given either as a token (used when non-zero) or as
/// text.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovx_string_or_token_t {
    /// The token, or 0 to use `string`.
    pub token: ovx_token_t,
    /// The text, used when `token` is 0.
    pub string: ovx_string_t,
}
