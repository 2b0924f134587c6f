//! The exported functions of ovstage/ovstage_population_export.h (types: `ovstage_abi::population_export`).

use ovstage_abi::api_types::{ovstage_api_status_t, ovstage_instance_t, ovstage_ordinal_t, ovstage_timeout_ns_t};
use ovstage_abi::ovx_string::ovx_string_t;
use ovstage_abi::population::{ovstage_population_enqueue_result_t, ovstage_population_op_id_t};
use ovstage_abi::population_export::*;

use crate::unsupported;

/// Fills an export request with defaults. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_desc_init(
    desc: *mut ovstage_population_export_desc_t,
) -> ovstage_api_status_t {
    let _ = desc;
    unsupported::export_status("ovstage_population_export_desc_init")
}

/// Fills an export request for a snapshot at `ordinal`. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_desc_init_snapshot(
    desc: *mut ovstage_population_export_desc_t,
    ordinal: ovstage_ordinal_t,
) -> ovstage_api_status_t {
    let _ = (desc, ordinal);
    unsupported::export_status("ovstage_population_export_desc_init_snapshot")
}

/// Opens an export destination. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_destination_create(
    stage: *mut ovstage_instance_t,
    usd_identifier: ovx_string_t,
    mode: ovstage_population_export_destination_mode_t,
    out_destination: *mut ovstage_population_export_destination_handle_t,
) -> ovstage_api_status_t {
    let _ = (stage, usd_identifier, mode, out_destination);
    unsupported::export_status("ovstage_population_export_destination_create")
}

/// Enqueues the opening of an export destination. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_destination_enqueue_create(
    stage: *mut ovstage_instance_t,
    usd_identifier: ovx_string_t,
    mode: ovstage_population_export_destination_mode_t,
    out_destination: *mut ovstage_population_export_destination_handle_t,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, usd_identifier, mode, out_destination);
    unsupported::export_enqueue("ovstage_population_export_destination_enqueue_create")
}

/// Exports into a destination. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_to_destination(
    stage: *mut ovstage_instance_t,
    destination: ovstage_population_export_destination_handle_t,
    desc: *const ovstage_population_export_desc_t,
    report: *mut ovstage_population_export_report_t,
) -> ovstage_api_status_t {
    let _ = (stage, destination, desc, report);
    unsupported::export_status("ovstage_population_export_to_destination")
}

/// Enqueues an export into a destination. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_enqueue_to_destination(
    stage: *mut ovstage_instance_t,
    destination: ovstage_population_export_destination_handle_t,
    desc: *const ovstage_population_export_desc_t,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, destination, desc);
    unsupported::export_enqueue("ovstage_population_export_enqueue_to_destination")
}

/// Saves a destination. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_destination_save(
    stage: *mut ovstage_instance_t,
    destination: ovstage_population_export_destination_handle_t,
) -> ovstage_api_status_t {
    let _ = (stage, destination);
    unsupported::export_status("ovstage_population_export_destination_save")
}

/// Enqueues the save of a destination. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_destination_enqueue_save(
    stage: *mut ovstage_instance_t,
    destination: ovstage_population_export_destination_handle_t,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, destination);
    unsupported::export_enqueue("ovstage_population_export_destination_enqueue_save")
}

/// Closes a destination. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_destination_destroy(
    stage: *mut ovstage_instance_t,
    destination: ovstage_population_export_destination_handle_t,
) -> ovstage_api_status_t {
    let _ = (stage, destination);
    unsupported::export_status("ovstage_population_export_destination_destroy")
}

/// Enqueues the closing of a destination. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_destination_enqueue_destroy(
    stage: *mut ovstage_instance_t,
    destination: ovstage_population_export_destination_handle_t,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, destination);
    unsupported::export_enqueue("ovstage_population_export_destination_enqueue_destroy")
}

/// Exports to a USD file. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_to_usd_file(
    stage: *mut ovstage_instance_t,
    usd_identifier: ovx_string_t,
    desc: *const ovstage_population_export_desc_t,
    report: *mut ovstage_population_export_report_t,
) -> ovstage_api_status_t {
    let _ = (stage, usd_identifier, desc, report);
    unsupported::export_status("ovstage_population_export_to_usd_file")
}

/// Enqueues an export to a USD file. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_enqueue_to_usd_file(
    stage: *mut ovstage_instance_t,
    usd_identifier: ovx_string_t,
    desc: *const ovstage_population_export_desc_t,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, usd_identifier, desc);
    unsupported::export_enqueue("ovstage_population_export_enqueue_to_usd_file")
}

/// Exports to an open USD layer. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_to_usd_layer_identifier(
    stage: *mut ovstage_instance_t,
    usd_layer_identifier: ovx_string_t,
    desc: *const ovstage_population_export_desc_t,
    report: *mut ovstage_population_export_report_t,
) -> ovstage_api_status_t {
    let _ = (stage, usd_layer_identifier, desc, report);
    unsupported::export_status("ovstage_population_export_to_usd_layer_identifier")
}

/// Exports to an open USD stage's root layer. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_to_usd_stage_identifier(
    stage: *mut ovstage_instance_t,
    usd_stage_root_layer_identifier: ovx_string_t,
    desc: *const ovstage_population_export_desc_t,
    report: *mut ovstage_population_export_report_t,
) -> ovstage_api_status_t {
    let _ = (stage, usd_stage_root_layer_identifier, desc, report);
    unsupported::export_status("ovstage_population_export_to_usd_stage_identifier")
}

/// Enqueues an export to an open USD layer. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_enqueue_to_usd_layer_identifier(
    stage: *mut ovstage_instance_t,
    usd_layer_identifier: ovx_string_t,
    desc: *const ovstage_population_export_desc_t,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, usd_layer_identifier, desc);
    unsupported::export_enqueue("ovstage_population_export_enqueue_to_usd_layer_identifier")
}

/// Enqueues an export to an open USD stage's root layer. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_enqueue_to_usd_stage_identifier(
    stage: *mut ovstage_instance_t,
    usd_stage_root_layer_identifier: ovx_string_t,
    desc: *const ovstage_population_export_desc_t,
) -> ovstage_population_enqueue_result_t {
    let _ = (stage, usd_stage_root_layer_identifier, desc);
    unsupported::export_enqueue("ovstage_population_export_enqueue_to_usd_stage_identifier")
}

/// Waits for an export op and copies its report. Not supported.
///
/// # Safety
/// Never dereferences its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_population_export_wait_op(
    stage: *mut ovstage_instance_t,
    op_id: ovstage_population_op_id_t,
    timeout_ns: ovstage_timeout_ns_t,
    report: *mut ovstage_population_export_report_t,
) -> ovstage_api_status_t {
    let _ = (stage, op_id, timeout_ns, report);
    unsupported::export_status("ovstage_population_export_wait_op")
}
