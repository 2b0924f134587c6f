//! `ovstage_get_build_info`: what build of the library this is.

use crate::abi::ovx_string::ovx_string_t;
use crate::abi::stage_types::ovstage_build_info_t;

/// A NUL-terminated literal as a view without the terminator.
const fn view(s: &'static str) -> ovx_string_t {
    ovx_string_t { ptr: s.as_ptr().cast(), length: s.len() - 1 }
}

struct Info(ovstage_build_info_t);

// SAFETY: the struct only points at string literals; it is never written.
unsafe impl Sync for Info {}

static INFO: Info = Info(ovstage_build_info_t {
    struct_size: std::mem::size_of::<ovstage_build_info_t>() as u32,
    build_number: 0,
    // `<contract version>+<branch>.<build number>.<revision>.<location>`:
    // bindings check that it starts with the version `get_version` reports.
    build_string: view(concat!(
        "0.3.0+",
        env!("OVSTAGE_GIT_BRANCH"),
        ".0.",
        env!("OVSTAGE_GIT_HASH"),
        ".ovstage-rs-",
        env!("CARGO_PKG_VERSION"),
        "\0"
    )),
    git_branch: view(concat!(env!("OVSTAGE_GIT_BRANCH"), "\0")),
    git_hash: view(concat!(env!("OVSTAGE_GIT_HASH"), "\0")),
    build_location: view(concat!("ovstage-rs-", env!("CARGO_PKG_VERSION"), "\0")),
});

/// The build information.
pub(crate) fn get() -> *const ovstage_build_info_t {
    &INFO.0
}
