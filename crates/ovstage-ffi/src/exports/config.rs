//! The exported functions of ovstage/ovstage_config.h (types: `ovstage_abi::config`).

use ovstage_abi::ovx_string::ovx_string_t;

/// The running executable's directory without a trailing separator
/// (thread-local storage, valid until the thread's next call), or
/// `{NULL, 0}` when it cannot be determined.
#[unsafe(no_mangle)]
pub extern "C" fn ovstage_executable_dir() -> ovx_string_t {
    crate::error::guard("ovstage_executable_dir", crate::process::executable_dir)
}
