//! `ovx/types.h`: prim path handles, the status and result types of ovx
//! interfaces such as the path dictionary.

use super::c_enum_carrier;
use super::ovx_string::ovx_string_t;

/// An interned prim path (0 is no path). Lives as long as its dictionary.
pub type ovx_primpath_t = u64;
/// A reference-counted, ordered list of prim paths (0 is no list).
pub type ovx_primpath_list_t = u64;

/// The token no string interns to.
pub const OVX_INVALID_TOKEN: super::ovx_string::ovx_token_t = 0 as super::ovx_string::ovx_token_t;
/// The path no string interns to.
pub const OVX_INVALID_PRIMPATH: ovx_primpath_t = 0 as ovx_primpath_t;
/// The list handle no list has; a no-op for reference counting.
pub const OVX_INVALID_PRIMPATH_LIST: ovx_primpath_list_t = 0 as ovx_primpath_list_t;

c_enum_carrier!(
    /// Outcome of an ovx interface call (carrier of `ovx_api_status_t`).
    ovx_api_status_t: u32
);

/// Enum values, as emitted into the header.
pub mod values {
    /// Outcome of an ovx interface call.
    #[repr(C)]
    pub enum ovx_api_status_t {
        /// The call did what it was asked.
        OVX_API_SUCCESS = 0,
        /// The call failed; the result's `error` says why.
        OVX_API_ERROR = 1,
    }
}

/// Status and, on failure, an error message the caller releases with the
/// interface's `release_error`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovx_api_result_t {
    /// Success or error.
    pub status: ovx_api_status_t,
    /// The message on error (NUL-terminated, release it), else `{NULL, 0}`.
    pub error: ovx_string_t,
}

/// A prim given either as an interned path (used when non-zero) or as text.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovx_string_or_prim_path_t {
    /// The path handle, or 0 to use `string`.
    pub path: ovx_primpath_t,
    /// The path text, used when `path` is 0.
    pub string: ovx_string_t,
}
