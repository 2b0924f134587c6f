//! The exported functions of ovstage/ovstage_population.h (types: `ovstage_abi::population`).

use ovstage_abi::api_types::{ovstage_api_status_t, ovstage_instance_t, ovstage_ordinal_t, ovstage_timeout_ns_t};
use ovstage_abi::ovx_string::ovx_string_t;
use ovstage_abi::population::*;

use crate::unsupported;

/// Registers USD schema plug-in paths. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_register_usd_schemas(
    paths: *const ovx_string_t,
    path_count: usize,
) -> ovstage_api_status_t {
    let _ = (paths, path_count);
    unsupported::population_status("ovstage_population_register_usd_schemas")
}

/// Populates from a USD file. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_open_usd_from_file(
    stage: *mut ovstage_instance_t,
    path: ovx_string_t,
    ordinal: ovstage_ordinal_t,
    time: f64,
    domains: u32,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, path, ordinal, time, domains);
    unsupported::population_enqueue("ovstage_population_open_usd_from_file")
}

/// Populates from USDA text. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_open_usd_from_string(
    stage: *mut ovstage_instance_t,
    usda: ovx_string_t,
    ordinal: ovstage_ordinal_t,
    time: f64,
    domains: u32,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, usda, ordinal, time, domains);
    unsupported::population_enqueue("ovstage_population_open_usd_from_string")
}

/// Populates from a USD file with selectors. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_open_usd_from_file_with_desc(
    stage: *mut ovstage_instance_t,
    path: ovx_string_t,
    ordinal: ovstage_ordinal_t,
    time: f64,
    descs: *const ovstage_population_desc_t,
    desc_count: usize,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, path, ordinal, time, descs, desc_count);
    unsupported::population_enqueue("ovstage_population_open_usd_from_file_with_desc")
}

/// Populates from USDA text with selectors. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_open_usd_from_string_with_desc(
    stage: *mut ovstage_instance_t,
    usda: ovx_string_t,
    ordinal: ovstage_ordinal_t,
    time: f64,
    descs: *const ovstage_population_desc_t,
    desc_count: usize,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, usda, ordinal, time, descs, desc_count);
    unsupported::population_enqueue("ovstage_population_open_usd_from_string_with_desc")
}

/// Populates the open USD stage again with selectors. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_repopulate_usd_with_desc(
    stage: *mut ovstage_instance_t,
    ordinal: ovstage_ordinal_t,
    time: f64,
    descs: *const ovstage_population_desc_t,
    desc_count: usize,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, ordinal, time, descs, desc_count);
    unsupported::population_enqueue("ovstage_population_repopulate_usd_with_desc")
}

/// References a USD file under a prim. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_add_usd_reference_from_file(
    stage: *mut ovstage_instance_t,
    ref_file_path: ovx_string_t,
    target_path: ovx_string_t,
    out_handle: *mut ovstage_population_usd_reference_handle_t,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, ref_file_path, target_path, out_handle);
    unsupported::population_enqueue("ovstage_population_add_usd_reference_from_file")
}

/// References USDA text under a prim. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_add_usd_reference_from_string(
    stage: *mut ovstage_instance_t,
    ref_str: ovx_string_t,
    target_path: ovx_string_t,
    out_handle: *mut ovstage_population_usd_reference_handle_t,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, ref_str, target_path, out_handle);
    unsupported::population_enqueue("ovstage_population_add_usd_reference_from_string")
}

/// Removes an added USD reference. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_remove_usd_reference(
    stage: *mut ovstage_instance_t,
    handle: ovstage_population_usd_reference_handle_t,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, handle);
    unsupported::population_enqueue("ovstage_population_remove_usd_reference")
}

/// Forgets the USD stage. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_reset_usd(
    stage: *mut ovstage_instance_t,
) -> ovstage_population_enqueue_result_t {
    let _ = stage;
    unsupported::population_enqueue("ovstage_population_reset_usd")
}

/// Samples the USD stage at a time code. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_apply_usd_time(
    stage: *mut ovstage_instance_t,
    ordinal: ovstage_ordinal_t,
    time: f64,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, ordinal, time);
    unsupported::population_enqueue("ovstage_population_apply_usd_time")
}

/// Applies pending USD edits. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_apply_usd_changes(
    stage: *mut ovstage_instance_t,
    ordinal: ovstage_ordinal_t,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, ordinal);
    unsupported::population_enqueue("ovstage_population_apply_usd_changes")
}

/// Waits for a population op. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_wait_op(
    stage: *mut ovstage_instance_t,
    op_id: ovstage_population_op_id_t,
    timeout_ns: ovstage_timeout_ns_t,
    out_wait_result: *mut ovstage_population_op_wait_result_t,
) -> ovstage_api_status_t {
    let _ = (stage, op_id, timeout_ns, out_wait_result);
    unsupported::population_status("ovstage_population_wait_op")
}

/// The message of the calling thread's last failed population call, or
/// `{NULL, 0}`.
#[unsafe(no_mangle)]
pub extern "C" fn ovstage_population_get_last_error() -> ovx_string_t {
    unsupported::population_last_error()
}

/// The message of a failed population op: `{NULL, 0}`, as no population
/// op ever exists here.
#[unsafe(no_mangle)]
pub extern "C" fn ovstage_population_get_last_op_error(op_id: ovstage_population_op_id_t) -> ovx_string_t {
    let _ = op_id;
    ovx_string_t::NONE
}
