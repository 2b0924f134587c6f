//! `ovstage/ovstage_population.h`: filling a stage from USD. Not supported
//! by this library: every function returns NOT_SUPPORTED (or an empty
//! string) and says so in `ovstage_population_get_last_error`.

use super::api_types::ovstage_api_status_t;
use super::c_enum_carrier;
use super::ovx_string::ovx_string_t;
use super::population_predicate::{ovstage_population_prim_predicate_t, ovstage_population_property_predicate_t};

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
