//! `ovstage/ovstage_api/ovstage_api_types.h`: handles, status codes, modes
//! and the payload structs of the data plane.
//!
//! Every data-plane call is an enqueue that returns at once with an
//! `ovstage_enqueue_result_t`; results are fetched later with a timeout.

use super::CBool;
use super::c_enum_carrier;
use super::dlpack::{DLDataType, DLManagedTensorVersioned, DLTensor};
use super::ovx_string::{ovx_string_or_token_t, ovx_string_t, ovx_token_t};
use super::ovx_types::ovx_primpath_list_t;

/// Major version of the contract this library implements.
pub const OVSTAGE_VERSION_MAJOR: u32 = 0;
/// Minor version of the contract this library implements.
pub const OVSTAGE_VERSION_MINOR: u32 = 3;
/// Patch version of the contract this library implements.
pub const OVSTAGE_VERSION_PATCH: u32 = 0;

/// The data plane's per-instance state (opaque to C).
pub struct ovstage_context_t {
    _private: [u8; 0],
}

c_enum_carrier!(
    /// Status of a call or of an enqueue (carrier of `ovstage_api_status_t`).
    ovstage_api_status_t: u32
);
c_enum_carrier!(
    /// Filter predicate operator (carrier of `ovstage_filter_op_t`).
    ovstage_filter_op_t: u32
);
c_enum_carrier!(
    /// Prim creation mode (carrier of `ovstage_prim_mode_t`).
    ovstage_prim_mode_t: u32
);
c_enum_carrier!(
    /// Schema mismatch mode (carrier of `ovstage_attribute_mode_t`).
    ovstage_attribute_mode_t: u32
);
c_enum_carrier!(
    /// Write-floor advance scope (carrier of `ovstage_scope_t`).
    ovstage_scope_t: u32
);
c_enum_carrier!(
    /// Authored interpretation of a column (carrier of
    /// `ovstage_attribute_semantic_t`).
    ovstage_attribute_semantic_t: u32
);

/// Enum values, as emitted into the header.
pub mod values {
    /// Status of a call or of an enqueue. Values are stable ABI; the last
    /// failure's details are in `ovstage_get_last_error()` (synchronous calls)
    /// or `get_last_op_error` (failed ops).
    #[repr(C)]
    pub enum ovstage_api_status_t {
        /// Success.
        OVSTAGE_OK = 0,
        /// An argument is malformed, missing or contradicts another.
        OVSTAGE_ERROR_INVALID_ARGUMENT = 1,
        /// A handle is unknown, released, stale or of another instance.
        OVSTAGE_ERROR_INVALID_HANDLE = 2,
        /// A named thing (source prim, extension, ...) does not exist.
        OVSTAGE_ERROR_NOT_FOUND = 3,
        /// INSERT (or a clone target) met a prim that already exists.
        OVSTAGE_ERROR_PRIM_NOT_FOUND = 4,
        /// A mutation at or below a write floor or against newer retained
        /// history, or a read of unsealed data.
        OVSTAGE_ERROR_WRITE_FLOOR_VIOLATION = 5,
        /// Not implemented by this library.
        OVSTAGE_ERROR_NOT_SUPPORTED = 6,
        /// The submission queue is full.
        OVSTAGE_ERROR_QUEUE_FULL = 7,
        /// An iterating fetch has no more groups.
        OVSTAGE_ERROR_END_OF_ITERATION = 8,
        /// Memory could not be allocated.
        OVSTAGE_ERROR_OUT_OF_MEMORY = 9,
        /// The layout changed during a map session.
        OVSTAGE_ERROR_LAYOUT_CHANGED = 10,
        /// A wait or fetch did not complete within its timeout.
        OVSTAGE_ERROR_TIMEOUT = 11,
        /// An enqueued op failed; `get_last_op_error` says why.
        OVSTAGE_ERROR_OP_FAILED = 12,
        /// The values asked for are older than the retention frontier.
        OVSTAGE_ERROR_OUT_OF_RANGE = 13,
        /// A bug in the library (a caught panic, a broken invariant).
        OVSTAGE_ERROR_INTERNAL = 99,
    }

    /// Filter predicate operators.
    #[repr(C)]
    pub enum ovstage_filter_op_t {
        /// The prim has the attribute.
        OVSTAGE_FILTER_OP_HAS = 0,
        /// The value is one of the given values.
        OVSTAGE_FILTER_OP_IN = 1,
        /// The composite value (array, string) contains one of the values.
        OVSTAGE_FILTER_OP_CONTAINS = 2,
        /// The string value starts with one of the values.
        OVSTAGE_FILTER_OP_PREFIX = 3,
        /// The value is less than the given value.
        OVSTAGE_FILTER_OP_LT = 4,
        /// The value is at most the given value.
        OVSTAGE_FILTER_OP_LE = 5,
        /// The value is greater than the given value.
        OVSTAGE_FILTER_OP_GT = 6,
        /// The value is at least the given value.
        OVSTAGE_FILTER_OP_GE = 7,
    }

    /// Whether a write or map may create prims, update them, or both.
    #[repr(C)]
    pub enum ovstage_prim_mode_t {
        /// Create missing prims and update existing ones (the default).
        OVSTAGE_PRIM_MODE_UPSERT = 0,
        /// Only create; an existing prim fails with PRIM_NOT_FOUND.
        OVSTAGE_PRIM_MODE_INSERT = 1,
    }

    /// What a write or map does when a prim already has the attribute with
    /// another schema (dtype, layout, array kind, semantic).
    #[repr(C)]
    pub enum ovstage_attribute_mode_t {
        /// Fail (the default).
        OVSTAGE_ATTRIBUTE_MODE_REJECT = 0,
        /// Replace the schema (not supported by this library).
        OVSTAGE_ATTRIBUTE_MODE_FORCE = 1,
    }

    /// Which attributes a write-floor advance affects.
    #[repr(C)]
    pub enum ovstage_scope_t {
        /// Every attribute and the global write floor.
        OVSTAGE_SCOPE_ALL = 0,
        /// Only the listed attributes.
        OVSTAGE_SCOPE_INCLUDE = 1,
        /// Every attribute but the listed ones (ALL when the list is empty).
        OVSTAGE_SCOPE_EXCLUDE = 2,
    }

    /// The authored interpretation of a column's values, recorded when the
    /// attribute is created and reported by reads.
    #[repr(C)]
    pub enum ovstage_attribute_semantic_t {
        /// Unspecified.
        OVSTAGE_SEMANTIC_NONE = 0,
        /// Asset path: (authored token, resolved token), `{kDLUInt, 64, 2}`.
        OVSTAGE_SEMANTIC_ASSET_PATH_ID = 1,
        /// Token id, `{kDLUInt, 64, 1}`.
        OVSTAGE_SEMANTIC_TOKEN_ID = 2,
        /// Path expression text as a token id, `{kDLUInt, 64, 1}`.
        OVSTAGE_SEMANTIC_PATH_EXPRESSION_STRING = 3,
        /// Relationship target path ids, `{kDLUInt, 64, 1}`.
        OVSTAGE_SEMANTIC_RELATIONSHIP_PATH_ID = 4,
        /// Geometric point.
        OVSTAGE_SEMANTIC_POINT = 5,
        /// Geometric vector.
        OVSTAGE_SEMANTIC_VECTOR = 6,
        /// Surface normal.
        OVSTAGE_SEMANTIC_NORMAL = 7,
        /// Color.
        OVSTAGE_SEMANTIC_COLOR = 8,
        /// Quaternion, lanes (x, y, z, w): imaginary part first.
        OVSTAGE_SEMANTIC_QUATERNION = 9,
        /// Square matrix (reads give `[N, S, S]`).
        OVSTAGE_SEMANTIC_MATRIX = 10,
        /// Texture coordinate.
        OVSTAGE_SEMANTIC_TEXTURE_COORDINATE = 11,
        /// Connection: (path id, token id) pair, `{kDLUInt, 64, 2}`.
        OVSTAGE_SEMANTIC_CONNECTION_PATH_ID = 12,
        /// UTF-8 string bytes, one `{kDLUInt, 8, 1}` array per prim.
        OVSTAGE_SEMANTIC_STRING = 13,
        /// Time code (a plain number).
        OVSTAGE_SEMANTIC_TIME_CODE = 14,
        /// Coordinate frame.
        OVSTAGE_SEMANTIC_FRAME = 15,
    }
}

/// The ordering key of mutations, write floors and reads (any value;
/// no sentinel). Declared by a guarded typedef in the header so that other
/// headers can declare it too.
///
/// cbindgen:ignore
pub type ovstage_ordinal_t = u64;

/// Validity bitmask over logical elements (NULL = all valid): element `i`
/// is bit `i % 64` of word `i / 64`.
pub type ovstage_mask_t = *const u64;

/// CUDA synchronization before an op touches device data: `stream` (0 none,
/// 1 the default stream, else a `cudaStream_t`) is drained and
/// `wait_event` (0 none, else a `cudaEvent_t`) is waited on. `{0, 0}` for
/// host data.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ovstage_cuda_sync_t {
    /// Stream to drain.
    pub stream: usize,
    /// Event to wait on.
    pub wait_event: usize,
}

/// Timeout of waits and fetches in nanoseconds: 0 polls,
/// `OVSTAGE_TIMEOUT_INFINITE` blocks.
pub type ovstage_timeout_ns_t = u64;

/// Block until done.
pub const OVSTAGE_TIMEOUT_INFINITE: ovstage_timeout_ns_t = !0u64 as ovstage_timeout_ns_t;

/// Identifies an enqueued op; increasing and never reused in an instance.
pub type ovstage_op_id_t = u64;

/// No op.
pub const OVSTAGE_INVALID_OP_ID: ovstage_op_id_t = 0 as ovstage_op_id_t;

/// What an enqueue returns: whether the op was accepted and its id
/// (`OVSTAGE_INVALID_OP_ID` when not accepted).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ovstage_enqueue_result_t {
    /// `OVSTAGE_OK` when accepted.
    pub status: ovstage_api_status_t,
    /// The op's id.
    pub op_index: ovstage_op_id_t,
}

/// A set of prims (from a filter or a path list).
pub type ovstage_query_handle_t = u64;
/// No query.
pub const OVSTAGE_INVALID_QUERY_HANDLE: ovstage_query_handle_t = 0 as ovstage_query_handle_t;

/// An enqueued multi-attribute read.
pub type ovstage_read_handle_t = u64;
/// No read.
pub const OVSTAGE_INVALID_READ_HANDLE: ovstage_read_handle_t = 0 as ovstage_read_handle_t;

/// An enqueued map session.
pub type ovstage_map_handle_t = u64;
/// No map session.
pub const OVSTAGE_INVALID_MAP_HANDLE: ovstage_map_handle_t = 0 as ovstage_map_handle_t;

/// An enqueued ordinal query (write floor, retention frontier).
pub type ovstage_ordinal_query_handle_t = u64;
/// No ordinal query.
pub const OVSTAGE_INVALID_ORDINAL_QUERY_HANDLE: ovstage_ordinal_query_handle_t = 0 as ovstage_ordinal_query_handle_t;

/// Identity of a fetched read group (for `release_group`).
pub type ovstage_read_group_id_t = u64;
/// No read group.
pub const OVSTAGE_INVALID_READ_GROUP_ID: ovstage_read_group_id_t = 0 as ovstage_read_group_id_t;

/// Identity of a fetched query result (for `release_query_result`).
pub type ovstage_query_result_id_t = u64;
/// No query result.
pub const OVSTAGE_INVALID_QUERY_RESULT_ID: ovstage_query_result_id_t = 0 as ovstage_query_result_id_t;

/// What `wait_op` reports besides its status.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_op_wait_result_t {
    /// Failed op ids this wait observed (thread-local; valid until the next
    /// `wait_op` on the thread).
    pub error_op_ids: *const ovstage_op_id_t,
    /// Entries of `error_op_ids`.
    pub error_op_id_count: usize,
    /// On TIMEOUT: the lowest still-pending op id in the waited op's chain.
    pub lowest_pending_op_id: ovstage_op_id_t,
}

/// A payload: tensors plus which logical elements take which row.
///
/// Fixed-size attributes have one tensor whose leading dimension is the
/// row count; array attributes one tensor per element. `index_map` (element
/// `i` takes row `index_map[i]`) and `mask` (bit set = element written) are
/// mutually exclusive, and `count` is the element count when either is set.
/// Tensors from reads and maps have scalar lanes, component dimensions and
/// explicit compact strides.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_data_t {
    /// The tensors.
    pub tensors: *const DLTensor,
    /// Entries of `tensors`.
    pub tensor_count: u32,
    /// Logical element count when `index_map` or `mask` is set.
    pub count: u32,
    /// Row of each element, or NULL for the identity.
    pub index_map: *const u32,
    /// Written elements, or NULL for all.
    pub mask: ovstage_mask_t,
    /// GPU synchronization (`{0, 0}` for host data).
    pub cuda_sync: ovstage_cuda_sync_t,
}

/// Which prims of a path list a group covers: `count` prims from `offset`,
/// or the listed `index_map` positions.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_prim_group_t {
    /// The path list (borrowed from the producing handle).
    pub list: ovx_primpath_list_t,
    /// First position when `index_map` is NULL.
    pub offset: u32,
    /// Number of prims.
    pub count: u32,
    /// Positions in `list`, or NULL for the run from `offset`.
    pub index_map: *const u32,
}

/// An attribute's write floor and layout generation when a group was made.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ovstage_attribute_meta_t {
    /// Data at or below this ordinal is sealed.
    pub attribute_write_floor_ordinal: ovstage_ordinal_t,
    /// Changes when prims join or leave the attribute.
    pub layout_generation: u64,
}

/// What a read selects: a snapshot at `end_ordinal` (`has_start_ordinal`
/// false; `UINT64_MAX` is the latest sealed values) or the changes in
/// `[start_ordinal, end_ordinal]`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_ordinal_range_t {
    /// First ordinal of a change range.
    pub start_ordinal: ovstage_ordinal_t,
    /// Snapshot ordinal, or last ordinal of a change range.
    pub end_ordinal: ovstage_ordinal_t,
    /// Whether this is a change range.
    pub has_start_ordinal: CBool,
}

/// One read result group: one attribute over some of the query's prims,
/// values or tombstones. Valid until `release_group`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_read_group_t {
    /// Identity for `release_group`.
    pub read_group_id: ovstage_read_group_id_t,
    /// The attribute.
    pub attribute: ovx_token_t,
    /// Informational ordinal of the group.
    pub ordinal: ovstage_ordinal_t,
    /// Whether this is a tombstone group (deleted cells; no data).
    pub is_delete: CBool,
    /// Whether the attribute is an array (one tensor per prim).
    pub is_array: CBool,
    /// The attribute's semantic.
    pub semantic: ovstage_attribute_semantic_t,
    /// The prims covered.
    pub prims: ovstage_prim_group_t,
    /// The values (read-only).
    pub data: ovstage_data_t,
    /// Write floor and layout generation.
    pub meta: ovstage_attribute_meta_t,
}

/// One writable group of a map session. Fill `data`, then commit it with
/// `unmap_group` or `unmap_attribute`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_map_group_t {
    /// The prims covered.
    pub prims: ovstage_prim_group_t,
    /// The writable tensors.
    pub data: ovstage_data_t,
    /// Write floor and layout generation at setup.
    pub meta: ovstage_attribute_meta_t,
}

/// What a map session maps.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_map_desc_t {
    /// The attribute.
    pub attribute: ovx_string_or_token_t,
    /// Element type (tuple width in lanes); all zero to use the existing
    /// attribute's.
    pub dtype: DLDataType,
    /// Semantic recorded when the attribute is created.
    pub semantic: ovstage_attribute_semantic_t,
    /// UPSERT or INSERT.
    pub prim_mode: ovstage_prim_mode_t,
    /// REJECT or FORCE.
    pub attribute_mode: ovstage_attribute_mode_t,
}

/// One filter predicate on one attribute.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_predicate_t {
    /// The attribute tested.
    pub attribute: ovx_string_or_token_t,
    /// The operator.
    pub op: ovstage_filter_op_t,
    /// Values to compare with (NULL for HAS).
    pub values: *const ovx_string_t,
    /// Entries of `values`.
    pub value_count: usize,
}

/// A conjunction of predicates.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_filter_t {
    /// The predicates, all of which must hold.
    pub predicates: *const ovstage_predicate_t,
    /// Entries of `predicates`.
    pub count: usize,
}

/// The result of a query: its matched prims' count and the attributes
/// found on them. Valid until `release_query_result`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_query_result_t {
    /// Identity for `release_query_result`.
    pub query_result_id: ovstage_query_result_id_t,
    /// Attributes found on the matched prims.
    pub attributes: *const ovx_token_t,
    /// Entries of `attributes`.
    pub attribute_count: usize,
    /// The query handle itself.
    pub all_handle: ovstage_query_handle_t,
    /// Number of matched prims.
    pub total_prim_count: usize,
}

/// A write-floor advance.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_write_floor_desc_t {
    /// The new floor (advances never go back).
    pub ordinal: ovstage_ordinal_t,
    /// ALL, INCLUDE or EXCLUDE.
    pub scope: ovstage_scope_t,
    /// Attributes for INCLUDE and EXCLUDE.
    pub attributes: *const ovx_token_t,
    /// Entries of `attributes`.
    pub attribute_count: usize,
}

/// The payload of a copy-in write.
///
/// Exactly one of `tensors` (client-managed: valid until the op completes)
/// and `managed_tensors` (ownership passes to the library, which calls each
/// deleter once) is non-NULL, with `tensor_count` entries. A fixed-size
/// attribute takes one tensor of stacked rows (leading dimension = rows;
/// trailing dimensions fold into the tuple width); an array attribute takes
/// one tensor per row or one packed tensor. `count`, `index_map` and `mask`
/// select the prims written, as in [`ovstage_data_t`].
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_write_data_t {
    /// Client-managed tensors, or NULL.
    pub tensors: *const DLTensor,
    /// Library-managed tensors, or NULL.
    pub managed_tensors: *const *const DLManagedTensorVersioned,
    /// Entries of the tensor array.
    pub tensor_count: u32,
    /// Logical element count: the leading `count` prims of the query (0 is
    /// all of them); required with `index_map` or `mask`.
    pub count: u32,
    /// Source row of each element, or NULL for the identity.
    pub index_map: *const u32,
    /// Elements written, or NULL for all.
    pub mask: ovstage_mask_t,
    /// GPU synchronization (`{0, 0}` for host data).
    pub cuda_sync: ovstage_cuda_sync_t,
    /// Semantic recorded when the attribute is created.
    pub semantic: ovstage_attribute_semantic_t,
    /// Whether the attribute is an array (the only thing that decides it).
    pub is_array: CBool,
    /// REJECT or FORCE.
    pub attribute_mode: ovstage_attribute_mode_t,
}

/// One entry of a multi-attribute write.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_attribute_write_t {
    /// The attribute.
    pub attribute: ovx_string_or_token_t,
    /// Its payload.
    pub data: ovstage_write_data_t,
}

/// An ovstage instance: its function table and the state every function
/// takes first. Declared by a guarded definition in the header so that
/// other headers can declare it too.
///
/// cbindgen:ignore
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_instance_t {
    /// The 28-slot function table.
    pub vtable: *const super::api::ovstage_vtable_t,
    /// The instance's state.
    pub context: *mut ovstage_context_t,
}
