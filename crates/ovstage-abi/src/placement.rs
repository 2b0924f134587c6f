//! `ovstage/ovstage_api/experimental/ovstage_placement_extension.h`: the
//! experimental device-placement extension table. This library does not
//! provide it (`query_extension` answers NOT_FOUND); the types are here so
//! that code written against it compiles.

use super::api::ovstage_extension_header_t;
use super::api_types::{
    ovstage_attribute_write_t, ovstage_context_t, ovstage_enqueue_result_t, ovstage_map_desc_t, ovstage_map_handle_t,
    ovstage_ordinal_range_t, ovstage_ordinal_t, ovstage_prim_mode_t, ovstage_query_handle_t, ovstage_read_handle_t,
    ovstage_write_data_t,
};
use super::dlpack::DLDevice;
use super::ovx_string::{ovx_string_or_token_t, ovx_token_t};

/// Revision of the placement table this header describes.
pub const OVSTAGE_PLACEMENT_EXTENSION_VERSION: u32 = 1;

/// Where an op's data lives and how it synchronizes.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_placement_t {
    /// The device of the data.
    pub device: DLDevice,
    /// Stream the op's device work runs on (0 = none).
    pub stream: usize,
    /// Event recorded when the data may be reused (0 = none).
    pub availability_event: usize,
}

/// The placement extension table (revision 1).
#[repr(C)]
pub struct ovstage_placement_extension_v1_t {
    /// Size and revision of the table.
    pub header: ovstage_extension_header_t,
    /// `write_attribute` with a placement.
    pub write_attribute_on_device: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            handle: ovstage_query_handle_t,
            attribute: ovx_string_or_token_t,
            ordinal: ovstage_ordinal_t,
            data: ovstage_write_data_t,
            prim_mode: ovstage_prim_mode_t,
            placement: *const ovstage_placement_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// `write_attributes` with a placement.
    pub write_attributes_on_device: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            handle: ovstage_query_handle_t,
            writes: *const ovstage_attribute_write_t,
            write_count: usize,
            ordinal: ovstage_ordinal_t,
            prim_mode: ovstage_prim_mode_t,
            placement: *const ovstage_placement_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// `map_attribute` on a device.
    pub map_attribute_on_device: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            handle: ovstage_query_handle_t,
            desc: *const ovstage_map_desc_t,
            ordinal: ovstage_ordinal_t,
            element_sizes: *const usize,
            element_count: usize,
            placement: *const ovstage_placement_t,
            out_map_handle: *mut ovstage_map_handle_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// `read_attributes` delivering to a device.
    pub read_attributes_on_device: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            handle: ovstage_query_handle_t,
            attrs: *const ovx_token_t,
            attr_count: usize,
            range: ovstage_ordinal_range_t,
            placement: *const ovstage_placement_t,
            out_read_handle: *mut ovstage_read_handle_t,
        ) -> ovstage_enqueue_result_t,
    >,
}
