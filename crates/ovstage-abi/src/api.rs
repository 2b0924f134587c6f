//! `ovstage/ovstage_api/ovstage_api.h`: the data plane's 28-slot function
//! table, the extension table header and the thread's last error.
//!
//! Every slot takes the instance's `context` first and may be called from
//! any thread. Slots returning `ovstage_enqueue_result_t` enqueue an op and
//! return at once; the op runs on a worker lane once what it depends on has
//! run (same-ordinal mutations of overlapping cells in submission order, a
//! floor advance after the mutations it seals, a handle's users after its
//! producer, a release after the handle's users). `wait_op` waits for one op
//! and its dependencies only; fetches wait for their handle's producer.

use core::ffi::{c_char, c_void};

use super::api_types::{
    ovstage_api_status_t, ovstage_attribute_write_t, ovstage_context_t, ovstage_cuda_sync_t, ovstage_enqueue_result_t,
    ovstage_filter_t, ovstage_map_desc_t, ovstage_map_group_t, ovstage_map_handle_t, ovstage_op_id_t,
    ovstage_op_wait_result_t, ovstage_ordinal_query_handle_t, ovstage_ordinal_range_t, ovstage_ordinal_t,
    ovstage_prim_mode_t, ovstage_query_handle_t, ovstage_query_result_t, ovstage_read_group_t, ovstage_read_handle_t,
    ovstage_timeout_ns_t, ovstage_write_data_t, ovstage_write_floor_desc_t,
};
use super::ovx_string::{ovx_string_or_token_t, ovx_string_t, ovx_token_t};
use super::ovx_types::ovx_primpath_list_t;
use super::path_dictionary::path_dictionary_instance_t;

/// The data plane's function table. Slot order is ABI.
#[repr(C)]
pub struct ovstage_vtable_t {
    /// Waits up to `timeout` for `op_id` and the ops it depends on (0 polls,
    /// `OVSTAGE_TIMEOUT_INFINITE` blocks). OK when done; OP_FAILED when it or
    /// a dependency failed (their ids in `out_wait_result`); TIMEOUT with the
    /// lowest pending op of the chain; INVALID_ARGUMENT for an unknown or
    /// released id.
    pub wait_op: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            op_id: ovstage_op_id_t,
            timeout: ovstage_timeout_ns_t,
            out_wait_result: *mut ovstage_op_wait_result_t,
        ) -> ovstage_api_status_t,
    >,
    /// Forgets a completed op id (its error message goes with it).
    pub release_op:
        Option<unsafe extern "C" fn(instance: *mut ovstage_context_t, op_id: ovstage_op_id_t) -> ovstage_api_status_t>,
    /// Enqueues a write-floor advance; it runs after every mutation at or
    /// below its ordinal in its scope. Floors never go back.
    pub advance_write_floor: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            desc: *const ovstage_write_floor_desc_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// Enqueues a query of the retention frontier: the oldest ordinal whose
    /// snapshot reads are exact.
    pub get_oldest_preserved_ordinal: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            out_handle: *mut ovstage_ordinal_query_handle_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// Enqueues a query of an attribute's write floor (an empty attribute
    /// asks for the global floor).
    pub get_attribute_write_floor: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            attribute: ovx_string_or_token_t,
            out_handle: *mut ovstage_ordinal_query_handle_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// Fetches an ordinal query's value, waiting up to `timeout`.
    pub fetch_ordinal: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            handle: ovstage_ordinal_query_handle_t,
            timeout: ovstage_timeout_ns_t,
            out_ordinal: *mut ovstage_ordinal_t,
        ) -> ovstage_api_status_t,
    >,
    /// Enqueues the release of an ordinal query handle.
    pub release_ordinal_query: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            handle: ovstage_ordinal_query_handle_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// Enqueues a filter query (NULL or empty filter: every prim); the
    /// handle is usable at once. `attrs` restricts the attributes reported by
    /// `fetch_query_result`.
    pub query: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            filter: *const ovstage_filter_t,
            attrs: *const ovx_token_t,
            attr_count: usize,
            out_query_handle: *mut ovstage_query_handle_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// Makes a query of exactly the prims of a path list (existing or not).
    pub query_from_path_list: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            path_list: ovx_primpath_list_t,
            out_handle: *mut ovstage_query_handle_t,
        ) -> ovstage_api_status_t,
    >,
    /// Fetches a query's result, waiting up to `timeout`.
    pub fetch_query_result: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            query_handle: ovstage_query_handle_t,
            timeout: ovstage_timeout_ns_t,
            out_result: *mut ovstage_query_result_t,
        ) -> ovstage_api_status_t,
    >,
    /// Frees a fetched query result (the query stays valid).
    pub release_query_result: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            result: *const ovstage_query_result_t,
        ) -> ovstage_api_status_t,
    >,
    /// Enqueues the release of a query handle, after the ops using it.
    pub release_query: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            handle: ovstage_query_handle_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// Enqueues a read of `attrs` over the query's prims for `range`.
    pub read_attributes: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            handle: ovstage_query_handle_t,
            attrs: *const ovx_token_t,
            attr_count: usize,
            range: ovstage_ordinal_range_t,
            out_read_handle: *mut ovstage_read_handle_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// Fetches the next group of a read (END_OF_ITERATION after the last),
    /// waiting up to `timeout`.
    pub fetch_read_next: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            read_handle: ovstage_read_handle_t,
            timeout: ovstage_timeout_ns_t,
            out_group: *mut ovstage_read_group_t,
        ) -> ovstage_api_status_t,
    >,
    /// Frees a fetched group (any order, any thread).
    pub release_group: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            group: *const ovstage_read_group_t,
        ) -> ovstage_api_status_t,
    >,
    /// Enqueues the release of a read handle.
    pub release_read: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            read_handle: ovstage_read_handle_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// Enqueues a write of one attribute over the query's prims at
    /// `ordinal`.
    pub write_attribute: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            handle: ovstage_query_handle_t,
            attribute: ovx_string_or_token_t,
            ordinal: ovstage_ordinal_t,
            data: ovstage_write_data_t,
            prim_mode: ovstage_prim_mode_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// Enqueues a map session: writable buffers for one attribute over the
    /// query's prims, committed at `ordinal`. `element_sizes` (one element
    /// count per prim) makes it an array session.
    pub map_attribute: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            handle: ovstage_query_handle_t,
            desc: *const ovstage_map_desc_t,
            ordinal: ovstage_ordinal_t,
            element_sizes: *const usize,
            element_count: usize,
            out_map_handle: *mut ovstage_map_handle_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// Fetches the next writable group of a map session (END_OF_ITERATION
    /// after the last), waiting up to `timeout`.
    pub fetch_map_next: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            map_handle: ovstage_map_handle_t,
            timeout: ovstage_timeout_ns_t,
            out_group: *mut ovstage_map_group_t,
        ) -> ovstage_api_status_t,
    >,
    /// Enqueues the commit of one fetched group.
    pub unmap_group: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            map_handle: ovstage_map_handle_t,
            group: *const ovstage_map_group_t,
            write_done_sync: ovstage_cuda_sync_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// Enqueues the commit of every group not committed yet and ends the
    /// session.
    pub unmap_attribute: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            map_handle: ovstage_map_handle_t,
            write_done_sync: ovstage_cuda_sync_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// Enqueues a delete of the listed attributes of the query's prims, or
    /// of the whole prims when the list is empty, at `ordinal`.
    pub delete_attributes: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            handle: ovstage_query_handle_t,
            attributes: *const ovx_string_or_token_t,
            attribute_count: usize,
            ordinal: ovstage_ordinal_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// The contract version implemented (`OVSTAGE_VERSION_*`).
    pub get_version: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            out_major: *mut u32,
            out_minor: *mut u32,
            out_patch: *mut u32,
        ),
    >,
    /// A static, never NULL description of a status code.
    pub get_error_string:
        Option<unsafe extern "C" fn(instance: *mut ovstage_context_t, error: ovstage_api_status_t) -> *const c_char>,
    /// The message of a failed op (valid until the next `wait_op` on this
    /// thread), or `{NULL, 0}` when the op is unknown or did not fail.
    pub get_last_op_error:
        Option<unsafe extern "C" fn(instance: *mut ovstage_context_t, op_id: ovstage_op_id_t) -> ovx_string_t>,
    /// The instance's path dictionary (owned by the instance).
    pub get_path_dictionary:
        Option<unsafe extern "C" fn(instance: *mut ovstage_context_t) -> *mut path_dictionary_instance_t>,
    /// Enqueues one op writing several attributes of the query's prims at
    /// `ordinal`.
    pub write_attributes: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            handle: ovstage_query_handle_t,
            writes: *const ovstage_attribute_write_t,
            write_count: usize,
            ordinal: ovstage_ordinal_t,
            prim_mode: ovstage_prim_mode_t,
        ) -> ovstage_enqueue_result_t,
    >,
    /// Looks up an optional extension table by NUL-terminated name: OK,
    /// NOT_FOUND, or INVALID_ARGUMENT for NULL arguments.
    pub query_extension: Option<
        unsafe extern "C" fn(
            instance: *mut ovstage_context_t,
            name: *const c_char,
            out_extension: *mut *const c_void,
        ) -> ovstage_api_status_t,
    >,
}

/// The first member of every extension table: the table's size in bytes
/// and its revision. Read a field only when the size covers it.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ovstage_extension_header_t {
    /// Size of the whole table in bytes.
    pub struct_size: u32,
    /// Revision of the table.
    pub version: u32,
}
