//! The exported functions of ovstage/ovstage_api/ovstage_api.h (types: `ovstage_abi::api`).

use ovstage_abi::ovx_string::ovx_string_t;

/// The message of the calling thread's most recent failed synchronous call
/// (any instance, or no instance at all, as after a failed
/// `ovstage_create_instance`); `{NULL, 0}` when none failed yet. Valid until
/// the thread's next call into the library.
#[unsafe(no_mangle)]
pub extern "C" fn ovstage_get_last_error() -> ovx_string_t {
    crate::error::last_error()
}
