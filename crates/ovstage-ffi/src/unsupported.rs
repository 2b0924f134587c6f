//! Exports of the contract this release does not implement: they keep the
//! contract's signature, return NOT_SUPPORTED and say so in the last-error
//! message. Nothing is faked.

use std::cell::RefCell;
use std::ffi::CString;

use ovstage_types::Status;

use crate::abi::api_types::ovstage_api_status_t;
use crate::abi::ovx_string::ovx_string_t;
use crate::abi::population::ovstage_population_enqueue_result_t;
use crate::error;
use crate::strings::{c_string, view};

/// Why instancing lookups are missing.
pub(crate) const INSTANCING: &str = "instancing lookups need USD population, which this library does not have";
/// Why USD population is missing.
const POPULATION: &str = "USD population (reading USD layers into a stage) is not part of this library";
/// Why USD export is missing.
const EXPORT: &str = "USD export (writing stage data to USD layers) is not part of this library";

thread_local! {
    /// The thread's last population error (`ovstage_population_get_last_error`).
    static POPULATION_LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// The message every unimplemented export records.
pub(crate) fn message(call: &str, why: &str) -> String {
    format!("{call} is not implemented in this release of ovstage: {why}")
}

/// Records that `call` is not implemented and returns NOT_SUPPORTED.
pub(crate) fn status(call: &str, why: &str) -> ovstage_api_status_t {
    error::fail(Status::NotSupported, &message(call, why))
}

fn population_failure(call: &str, why: &str) -> ovstage_api_status_t {
    let text = message(call, why);
    POPULATION_LAST_ERROR.with(|e| *e.borrow_mut() = Some(c_string(&text)));
    error::fail(Status::NotSupported, &text)
}

/// A population call that is not implemented (synchronous form).
pub(crate) fn population_status(call: &str) -> ovstage_api_status_t {
    population_failure(call, POPULATION)
}

/// A population call that is not implemented (enqueue form).
pub(crate) fn population_enqueue(call: &str) -> ovstage_population_enqueue_result_t {
    ovstage_population_enqueue_result_t { status: population_failure(call, POPULATION), op_index: 0 }
}

/// An export call that is not implemented (synchronous form).
pub(crate) fn export_status(call: &str) -> ovstage_api_status_t {
    population_failure(call, EXPORT)
}

/// An export call that is not implemented (enqueue form).
pub(crate) fn export_enqueue(call: &str) -> ovstage_population_enqueue_result_t {
    ovstage_population_enqueue_result_t { status: population_failure(call, EXPORT), op_index: 0 }
}

/// The thread's last population error.
pub(crate) fn population_last_error() -> ovx_string_t {
    POPULATION_LAST_ERROR.with(|e| e.borrow().as_ref().map_or(ovx_string_t::NONE, view))
}
