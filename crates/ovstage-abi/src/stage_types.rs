//! `ovstage/ovstage_types.h`: types of the ovstage library itself (beyond
//! the data-plane contract): instance descriptor, build information,
//! process configuration, logging, clone and hierarchy results.

use core::ffi::{c_char, c_void};

use super::CBool;
use super::api_types::{ovstage_api_status_t, ovstage_ordinal_t};
use super::c_enum_carrier;
use super::ovx_string::{ovx_string_or_token_t, ovx_string_t};

/// How to create an instance.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_instance_desc_t {
    /// A name for diagnostics (NUL-terminated), or NULL.
    pub name: *const c_char,
}

/// What build of the library this is. The strings are NUL-terminated and
/// live as long as the library; later versions may append fields
/// (`struct_size` tells which are there).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_build_info_t {
    /// Size of this struct in bytes.
    pub struct_size: u32,
    /// Build number (0 for local builds).
    pub build_number: u32,
    /// `<version>+<branch>.<build number>.<revision>.<location>`.
    pub build_string: ovx_string_t,
    /// Source branch.
    pub git_branch: ovx_string_t,
    /// Source revision.
    pub git_hash: ovx_string_t,
    /// Where it was built.
    pub build_location: ovx_string_t,
}

c_enum_carrier!(
    /// Ordinal admission policy (carrier of
    /// `ovstage_ordinal_admission_policy_t`).
    ovstage_ordinal_admission_policy_t: u32
);
c_enum_carrier!(
    /// Config entry key type (carrier of `ovstage_config_key_type_t`).
    ovstage_config_key_type_t: u32
);
c_enum_carrier!(
    /// Boolean config key (carrier of `ovstage_config_bool_t`).
    ovstage_config_bool_t: u32
);
c_enum_carrier!(
    /// Signed integer config key (carrier of `ovstage_config_int64_t`).
    ovstage_config_int64_t: u32
);
c_enum_carrier!(
    /// Unsigned integer config key (carrier of `ovstage_config_uint64_t`).
    ovstage_config_uint64_t: u32
);
c_enum_carrier!(
    /// Floating-point config key (carrier of `ovstage_config_double_t`).
    ovstage_config_double_t: u32
);
c_enum_carrier!(
    /// String config key (carrier of `ovstage_config_string_t`).
    ovstage_config_string_t: u32
);
c_enum_carrier!(
    /// Blob config key (carrier of `ovstage_config_blob_t`).
    ovstage_config_blob_t: u32
);
c_enum_carrier!(
    /// Log severity (carrier of `ovstage_log_severity_t`).
    ovstage_log_severity_t: i32
);
c_enum_carrier!(
    /// Hierarchy computation model (carrier of
    /// `ovstage_hierarchy_computation_model_id_t`).
    ovstage_hierarchy_computation_model_id_t: u32
);
c_enum_carrier!(
    /// Hierarchy relation (carrier of `ovstage_hierarchy_relation_t`).
    ovstage_hierarchy_relation_t: u32
);

/// Enum values, as emitted into the header.
pub mod values {
    /// How mutations are admitted against the changes already recorded for
    /// the cells (prim, attribute) they touch. Every policy enforces write
    /// floors. Process-wide; each new instance takes the current one.
    #[repr(C)]
    pub enum ovstage_ordinal_admission_policy_t {
        /// No preference: keep the active policy (NONDECREASING at first).
        OVSTAGE_ORDINAL_ADMISSION_DEFAULT = 0,
        /// Only write floors are checked.
        OVSTAGE_ORDINAL_ADMISSION_FLOOR_ONLY = 1,
        /// An ordinal below a recorded change of the same cell is rejected;
        /// equal ordinals are accepted (the default).
        OVSTAGE_ORDINAL_ADMISSION_NONDECREASING = 2,
        /// An ordinal at or below a recorded change of the same cell is
        /// rejected.
        OVSTAGE_ORDINAL_ADMISSION_STRICTLY_INCREASING = 3,
    }

    /// Which key and value members of a config entry are valid.
    #[repr(C)]
    pub enum ovstage_config_key_type_t {
        /// `bool_key` / `bool_value`.
        OVSTAGE_CONFIG_KEY_TYPE_BOOL = 0,
        /// `int64_key` / `int_value`.
        OVSTAGE_CONFIG_KEY_TYPE_INT64 = 1,
        /// `uint64_key` / `uint_value`.
        OVSTAGE_CONFIG_KEY_TYPE_UINT64 = 2,
        /// `double_key` / `double_value`.
        OVSTAGE_CONFIG_KEY_TYPE_DOUBLE = 3,
        /// `string_key` / `string_value`.
        OVSTAGE_CONFIG_KEY_TYPE_STRING = 4,
        /// `blob_key` / `blob_value`.
        OVSTAGE_CONFIG_KEY_TYPE_BLOB = 5,
        /// Number of key types.
        OVSTAGE_CONFIG_KEY_TYPE_COUNT = 6,
    }

    /// Boolean config keys (none yet).
    #[repr(C)]
    pub enum ovstage_config_bool_t {
        /// Number of keys.
        OVSTAGE_CONFIG_BOOL_COUNT = 0,
    }

    /// Signed integer config keys (none yet).
    #[repr(C)]
    pub enum ovstage_config_int64_t {
        /// Number of keys.
        OVSTAGE_CONFIG_INT64_COUNT = 0,
    }

    /// Unsigned integer config keys.
    #[repr(C)]
    pub enum ovstage_config_uint64_t {
        /// The hierarchy computation model (this library computes no
        /// hierarchy; the value is recorded and validated only).
        OVSTAGE_CONFIG_RUNTIME_DEFAULT_HIERARCHY_COMPUTATION_MODEL = 0,
        /// An `ovstage_ordinal_admission_policy_t`.
        OVSTAGE_CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY = 1,
        /// Number of contract keys.
        OVSTAGE_CONFIG_UINT64_COUNT = 2,
        /// This library's extension: worker lanes per instance (1 runs every
        /// op on one serialized lane; 0 or absent: one per available core).
        OVSTAGE_CONFIG_RUNTIME_LANE_COUNT = 256,
        /// This library's extension: how many global write-floor advances
        /// of history each attribute keeps for snapshot and range reads
        /// (0 or absent: 4).
        OVSTAGE_CONFIG_RUNTIME_HISTORY_DEPTH = 257,
        /// This library's extension: unsealed versions (distinct ordinals
        /// written ahead of the write floor) kept exact per column; beyond
        /// it the newest are merged, or, with
        /// `OVSTAGE_CONFIG_RUNTIME_UNSEALED_OVERFLOW` 1, the mutation is
        /// refused (0 or absent: 1024).
        OVSTAGE_CONFIG_RUNTIME_MAX_UNSEALED_VERSIONS = 258,
        /// This library's extension: bytes of unsealed versions kept exact
        /// per column before the newest are merged; at least 4 versions are
        /// kept whatever their size; not applied when
        /// `OVSTAGE_CONFIG_RUNTIME_UNSEALED_OVERFLOW` is 1 (0 or absent:
        /// 8 MiB).
        OVSTAGE_CONFIG_RUNTIME_MAX_UNSEALED_BYTES = 259,
        /// This library's extension: what a mutation beyond
        /// `OVSTAGE_CONFIG_RUNTIME_MAX_UNSEALED_VERSIONS` does. 0 (or
        /// absent): coalesce, accepted, and the newest unsealed versions of
        /// the column are merged (snapshots strictly inside a merged span
        /// are `OVSTAGE_ERROR_OUT_OF_RANGE`). 1: reject, refused at enqueue
        /// with `OVSTAGE_ERROR_QUEUE_FULL` until a write-floor advance seals
        /// earlier ordinals; every sealed ordinal stays readable.
        OVSTAGE_CONFIG_RUNTIME_UNSEALED_OVERFLOW = 260,
        /// This library's extension: ops an instance keeps submitted and not
        /// released (`release_op`); beyond it an enqueue is refused with
        /// `OVSTAGE_ERROR_QUEUE_FULL` naming the oldest unreleased op
        /// (releases of handles are always accepted) (0 or absent:
        /// 1048576).
        OVSTAGE_CONFIG_RUNTIME_MAX_OPS = 261,
    }

    /// Floating-point config keys (none yet).
    #[repr(C)]
    pub enum ovstage_config_double_t {
        /// Number of keys.
        OVSTAGE_CONFIG_DOUBLE_COUNT = 0,
    }

    /// String config keys.
    #[repr(C)]
    pub enum ovstage_config_string_t {
        /// The binary package's `bin/` directory, for static loaders. This
        /// library needs no runtime closure and ignores it.
        OVSTAGE_CONFIG_BINARY_PACKAGE_ROOT_PATH = 0,
        /// Number of keys.
        OVSTAGE_CONFIG_STRING_COUNT = 1,
    }

    /// Blob config keys (none yet).
    #[repr(C)]
    pub enum ovstage_config_blob_t {
        /// Number of keys.
        OVSTAGE_CONFIG_BLOB_COUNT = 0,
    }

    /// Severity of a log message.
    #[repr(C)]
    pub enum ovstage_log_severity_t {
        /// Detailed tracing.
        OVSTAGE_LOG_VERBOSE = -2,
        /// Information.
        OVSTAGE_LOG_INFO = -1,
        /// Something looks wrong; work goes on.
        OVSTAGE_LOG_WARNING = 0,
        /// Something failed.
        OVSTAGE_LOG_ERROR = 1,
        /// As a threshold: nothing is delivered. Never a message's severity.
        OVSTAGE_LOG_NONE = 3,
    }

    /// Hierarchy computation models (world transforms from the hierarchy).
    #[repr(C)]
    pub enum ovstage_hierarchy_computation_model_id_t {
        /// Not a model.
        OVSTAGE_HIERARCHY_COMPUTATION_MODEL_INVALID = 0,
        /// Incremental, on the CPU.
        OVSTAGE_HIERARCHY_COMPUTATION_MODEL_CPU_INCREMENTAL = 1,
        /// Incremental, on the GPU.
        OVSTAGE_HIERARCHY_COMPUTATION_MODEL_GPU_INCREMENTAL = 2,
        /// Global recomputation, on the GPU.
        OVSTAGE_HIERARCHY_COMPUTATION_MODEL_GPU_GLOBAL = 3,
        /// The process default captured when the instance was created.
        OVSTAGE_HIERARCHY_COMPUTATION_MODEL_RUNTIME_DEFAULT = 4,
    }

    /// Which relatives a hierarchy lookup returns.
    #[repr(C)]
    pub enum ovstage_hierarchy_relation_t {
        /// The parent (0 or 1 path).
        OVSTAGE_HIERARCHY_PARENT = 0,
        /// The direct children.
        OVSTAGE_HIERARCHY_CHILDREN = 1,
        /// The other children of the parent.
        OVSTAGE_HIERARCHY_SIBLINGS = 2,
    }
}

/// The key of a config entry; `key_type` says which member is valid.
#[repr(C)]
#[derive(Copy, Clone)]
pub union ovstage_config_entry_key_t {
    /// With `OVSTAGE_CONFIG_KEY_TYPE_BOOL`.
    pub bool_key: ovstage_config_bool_t,
    /// With `OVSTAGE_CONFIG_KEY_TYPE_INT64`.
    pub int64_key: ovstage_config_int64_t,
    /// With `OVSTAGE_CONFIG_KEY_TYPE_UINT64`.
    pub uint64_key: ovstage_config_uint64_t,
    /// With `OVSTAGE_CONFIG_KEY_TYPE_DOUBLE`.
    pub double_key: ovstage_config_double_t,
    /// With `OVSTAGE_CONFIG_KEY_TYPE_STRING`.
    pub string_key: ovstage_config_string_t,
    /// With `OVSTAGE_CONFIG_KEY_TYPE_BLOB`.
    pub blob_key: ovstage_config_blob_t,
}

/// A blob config value.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_config_blob_value_t {
    /// The bytes.
    pub data: *const c_void,
    /// Their count.
    pub size: usize,
}

/// The value of a config entry; `key_type` says which member is valid.
#[repr(C)]
#[derive(Copy, Clone)]
pub union ovstage_config_entry_value_t {
    /// With `OVSTAGE_CONFIG_KEY_TYPE_BOOL`.
    pub bool_value: CBool,
    /// With `OVSTAGE_CONFIG_KEY_TYPE_INT64`.
    pub int_value: i64,
    /// With `OVSTAGE_CONFIG_KEY_TYPE_UINT64`.
    pub uint_value: u64,
    /// With `OVSTAGE_CONFIG_KEY_TYPE_DOUBLE`.
    pub double_value: f64,
    /// With `OVSTAGE_CONFIG_KEY_TYPE_STRING`.
    pub string_value: ovx_string_t,
    /// With `OVSTAGE_CONFIG_KEY_TYPE_BLOB`.
    pub blob_value: ovstage_config_blob_value_t,
}

/// One process configuration setting.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ovstage_config_entry_t {
    /// Which `key` and `value` members are valid.
    pub key_type: ovstage_config_key_type_t,
    /// The setting.
    pub key: ovstage_config_entry_key_t,
    /// Its value.
    pub value: ovstage_config_entry_value_t,
}

/// Process configuration for `ovstage_initialize` (NULL or no entries:
/// defaults, or the active settings).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_config_t {
    /// The entries.
    pub entries: *const ovstage_config_entry_t,
    /// Their count.
    pub entry_count: usize,
}

/// Receives log messages; calls are serialized on a dispatcher thread and
/// `message` is valid only during the call.
pub type ovstage_log_callback_t = Option<
    unsafe extern "C" fn(
        severity: ovstage_log_severity_t,
        timestamp: f64,
        message: ovx_string_t,
        user_data: *mut c_void,
    ),
>;

/// An enqueued hierarchy lookup.
pub type ovstage_hierarchy_handle_t = u64;
/// No hierarchy lookup.
pub const OVSTAGE_INVALID_HIERARCHY_HANDLE: ovstage_hierarchy_handle_t = 0 as ovstage_hierarchy_handle_t;

/// Identity of a fetched hierarchy result.
pub type ovstage_hierarchy_result_id_t = u64;
/// No hierarchy result.
pub const OVSTAGE_INVALID_HIERARCHY_RESULT_ID: ovstage_hierarchy_result_id_t = 0 as ovstage_hierarchy_result_id_t;

/// What a finished clone did (plain values; nothing to release).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ovstage_clone_result_t {
    /// The clone's ordinal.
    pub ordinal: ovstage_ordinal_t,
    /// Targets submitted.
    pub target_count: usize,
    /// Prims of the source subtree, its root included.
    pub source_prim_count: usize,
    /// Prims of all target subtrees after the clone.
    pub prims_cloned: usize,
}

/// One input prim's part of a hierarchy result: its status (NOT_FOUND for
/// a prim that does not exist) and its paths in the result's `paths`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_hierarchy_item_t {
    /// OK or NOT_FOUND.
    pub status: ovstage_api_status_t,
    /// First of this item's paths.
    pub path_offset: usize,
    /// Number of this item's paths.
    pub path_count: usize,
}

/// A fetched hierarchy lookup: one item per input prim, in order, and the
/// related paths. Valid until `ovstage_release_hierarchy_result`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_hierarchy_result_t {
    /// Identity for `ovstage_release_hierarchy_result`.
    pub hierarchy_result_id: ovstage_hierarchy_result_id_t,
    /// The ordinal given to `ovstage_get_hierarchy` (a tag only).
    pub ordinal: ovstage_ordinal_t,
    /// One item per input prim.
    pub items: *const ovstage_hierarchy_item_t,
    /// Entries of `items`.
    pub input_count: usize,
    /// Related paths of all items (as NUL-terminated path strings).
    pub paths: *const ovx_string_or_token_t,
    /// Entries of `paths`.
    pub path_count: usize,
}

/// A hierarchy computation model this library offers.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_hierarchy_computation_model_desc_t {
    /// The model.
    pub model_id: ovstage_hierarchy_computation_model_id_t,
    /// Short name.
    pub name: ovx_string_t,
    /// Description.
    pub description: ovx_string_t,
}
