//! `ovstage/ovstage_population.h`: filling a stage from USD. Not supported
//! by this library: every function returns NOT_SUPPORTED (or an empty
//! string) and says so in `ovstage_population_get_last_error`.

use super::api_types::{ovstage_api_status_t, ovstage_instance_t, ovstage_ordinal_t, ovstage_timeout_ns_t};
use super::c_enum_carrier;
use super::ovx_string::ovx_string_t;
use super::population_predicate::{ovstage_population_prim_predicate_t, ovstage_population_property_predicate_t};
use crate::unsupported;

c_enum_carrier!(
    /// Population domain bit (carrier of `ovstage_population_domain_t`).
    ovstage_population_domain_t: u32
);

/// Enum values, as emitted into the header.
pub mod values {
    /// Which consumers a population serves (bits).
    #[repr(C)]
    pub enum ovstage_population_domain_t {
        /// None.
        OVSTAGE_POPULATION_DOMAIN_NONE = 0,
        /// Rendering.
        OVSTAGE_POPULATION_DOMAIN_RENDERING = 1,
        /// Physics.
        OVSTAGE_POPULATION_DOMAIN_PHYSICS = 2,
        /// Rendering and physics.
        OVSTAGE_POPULATION_DOMAIN_ALL = 3,
    }
}

/// What one population pass selects.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ovstage_population_selector_t {
    /// Prims to populate.
    pub prim_predicate: ovstage_population_prim_predicate_t,
    /// Properties to populate on them.
    pub property_predicate: ovstage_population_property_predicate_t,
    /// Prim metadata to populate.
    pub prim_metadata_paths: *const ovx_string_t,
    /// Entries of `prim_metadata_paths`.
    pub prim_metadata_path_count: usize,
    /// Property metadata to populate.
    pub property_metadata_paths: *const ovx_string_t,
    /// Entries of `property_metadata_paths`.
    pub property_metadata_path_count: usize,
}

/// A population request for some domains.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_population_desc_t {
    /// `ovstage_population_domain_t` bits.
    pub domains: u32,
    /// Selectors (their union is populated).
    pub selectors: *const ovstage_population_selector_t,
    /// Entries of `selectors`.
    pub selector_count: usize,
    /// Stage metadata to populate.
    pub stage_metadata_paths: *const ovx_string_t,
    /// Entries of `stage_metadata_paths`.
    pub stage_metadata_path_count: usize,
}

/// Identifies a population op.
pub type ovstage_population_op_id_t = u64;
/// No population op.
pub const OVSTAGE_POPULATION_INVALID_OP_ID: ovstage_population_op_id_t = 0 as ovstage_population_op_id_t;

/// Identifies an added USD reference.
pub type ovstage_population_usd_reference_handle_t = u64;
/// No USD reference.
pub const OVSTAGE_POPULATION_INVALID_USD_REFERENCE_HANDLE: ovstage_population_usd_reference_handle_t =
    0 as ovstage_population_usd_reference_handle_t;

/// What a population enqueue returns.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_population_enqueue_result_t {
    /// OK when accepted.
    pub status: ovstage_api_status_t,
    /// The op's id.
    pub op_index: ovstage_population_op_id_t,
}

/// What `ovstage_population_wait_op` reports besides its status.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_population_op_wait_result_t {
    /// Failed op ids observed.
    pub error_op_ids: *const ovstage_population_op_id_t,
    /// Entries of `error_op_ids`.
    pub error_op_id_count: usize,
    /// On TIMEOUT, the lowest pending op.
    pub lowest_pending_op_id: ovstage_population_op_id_t,
}

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
