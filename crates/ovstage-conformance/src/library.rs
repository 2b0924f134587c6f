//! The library under test, loaded by path: its flat entry points.

use std::ffi::CStr;
use std::path::Path;
use std::ptr::null_mut;

use ovstage_abi::api_types::{ovstage_api_status_t, ovstage_instance_t};
use ovstage_abi::ovx_string::ovx_string_t;
use ovstage_abi::stage_types::{
    ovstage_config_entry_key_t, ovstage_config_entry_t, ovstage_config_entry_value_t, ovstage_config_key_type_t,
    ovstage_config_t, ovstage_config_uint64_t, ovstage_instance_desc_t,
};

type CreateFn =
    unsafe extern "C" fn(*const ovstage_instance_desc_t, *mut *mut ovstage_instance_t) -> ovstage_api_status_t;
type DestroyFn = unsafe extern "C" fn(*mut ovstage_instance_t) -> ovstage_api_status_t;
type InitializeFn = unsafe extern "C" fn(*const ovstage_config_t) -> ovstage_api_status_t;
type ShutdownFn = unsafe extern "C" fn() -> ovstage_api_status_t;
type LastErrorFn = unsafe extern "C" fn() -> ovx_string_t;
/// `ovstage_compute_hierarchy(instance, model, input_ordinal, output_ordinal)`.
pub(crate) type ComputeHierarchyFn = unsafe extern "C" fn(
    *mut ovstage_instance_t,
    ovstage_abi::stage_types::ovstage_hierarchy_computation_model_id_t,
    u64,
    u64,
) -> ovstage_abi::api_types::ovstage_enqueue_result_t;

/// `ovstage_clone(instance, source, targets, count, ordinal)`.
pub(crate) type CloneFn = unsafe extern "C" fn(
    *mut ovstage_instance_t,
    ovx_string_t,
    *const ovx_string_t,
    usize,
    u64,
) -> ovstage_abi::api_types::ovstage_enqueue_result_t;
/// `ovstage_fetch_clone_result(instance, op, timeout, out)`.
pub(crate) type FetchCloneFn = unsafe extern "C" fn(
    *mut ovstage_instance_t,
    u64,
    u64,
    *mut ovstage_abi::stage_types::ovstage_clone_result_t,
) -> ovstage_api_status_t;

/// `ovstage_get_hierarchy(instance, list, ordinal, relation, out_handle)`.
pub(crate) type GetHierarchyFn = unsafe extern "C" fn(
    *mut ovstage_instance_t,
    u64,
    u64,
    ovstage_abi::stage_types::ovstage_hierarchy_relation_t,
    *mut u64,
) -> ovstage_abi::api_types::ovstage_enqueue_result_t;
/// `ovstage_fetch_hierarchy_result(instance, handle, out)`.
pub(crate) type FetchHierarchyFn = unsafe extern "C" fn(
    *mut ovstage_instance_t,
    u64,
    *mut ovstage_abi::stage_types::ovstage_hierarchy_result_t,
) -> ovstage_api_status_t;
/// `ovstage_release_hierarchy_result(instance, result)`.
pub(crate) type ReleaseHierarchyResultFn = unsafe extern "C" fn(
    *mut ovstage_instance_t,
    *const ovstage_abi::stage_types::ovstage_hierarchy_result_t,
) -> ovstage_api_status_t;
/// `ovstage_release_hierarchy(instance, handle)`.
pub(crate) type ReleaseHierarchyFn =
    unsafe extern "C" fn(*mut ovstage_instance_t, u64) -> ovstage_abi::api_types::ovstage_enqueue_result_t;

/// `ovstage_get_build_info()`.
pub(crate) type BuildInfoFn = unsafe extern "C" fn() -> *const ovstage_abi::stage_types::ovstage_build_info_t;
/// `ovstage_get_hierarchy_computation_models(instance, out_models, out_count)`.
pub(crate) type ModelsFn = unsafe extern "C" fn(
    *mut ovstage_instance_t,
    *mut *const ovstage_abi::stage_types::ovstage_hierarchy_computation_model_desc_t,
    *mut usize,
) -> ovstage_api_status_t;
/// `ovstage_get_usd_stage_id(instance, out)`.
pub(crate) type UsdStageIdFn = unsafe extern "C" fn(*mut ovstage_instance_t, *mut u64) -> ovstage_api_status_t;

/// A loaded library implementing the ovstage C ABI.
pub(crate) struct Library {
    pub(crate) create: CreateFn,
    pub(crate) destroy: DestroyFn,
    initialize: InitializeFn,
    shutdown: ShutdownFn,
    last_error: LastErrorFn,
    pub(crate) compute_hierarchy: ComputeHierarchyFn,
    pub(crate) clone: CloneFn,
    pub(crate) fetch_clone_result: FetchCloneFn,
    pub(crate) get_hierarchy: GetHierarchyFn,
    pub(crate) fetch_hierarchy_result: FetchHierarchyFn,
    pub(crate) release_hierarchy_result: ReleaseHierarchyResultFn,
    pub(crate) release_hierarchy: ReleaseHierarchyFn,
    pub(crate) build_info: BuildInfoFn,
    pub(crate) computation_models: ModelsFn,
    pub(crate) usd_stage_id: UsdStageIdFn,
    // Keeps the code the pointers above point into loaded.
    _lib: libloading::Library,
}

impl Library {
    /// Loads `path` and resolves the entry points the harness calls.
    pub(crate) fn load(path: &Path) -> Result<Library, String> {
        // SAFETY: loading runs the library's initializers; the library
        // under test is trusted to be an ovstage implementation.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| format!("loading {}: {e}", path.display()))?;
        fn get<T: Copy>(lib: &libloading::Library, name: &str) -> Result<T, String> {
            // SAFETY: `T` is the contract's signature of the export `name`.
            unsafe { lib.get::<T>(name.as_bytes()) }.map(|s| *s).map_err(|e| format!("{name}: {e}"))
        }
        Ok(Library {
            create: get(&lib, "ovstage_create_instance")?,
            destroy: get(&lib, "ovstage_destroy_instance")?,
            initialize: get(&lib, "ovstage_initialize")?,
            shutdown: get(&lib, "ovstage_shutdown")?,
            last_error: get(&lib, "ovstage_get_last_error")?,
            compute_hierarchy: get(&lib, "ovstage_compute_hierarchy")?,
            clone: get(&lib, "ovstage_clone")?,
            fetch_clone_result: get(&lib, "ovstage_fetch_clone_result")?,
            get_hierarchy: get(&lib, "ovstage_get_hierarchy")?,
            fetch_hierarchy_result: get(&lib, "ovstage_fetch_hierarchy_result")?,
            release_hierarchy_result: get(&lib, "ovstage_release_hierarchy_result")?,
            release_hierarchy: get(&lib, "ovstage_release_hierarchy")?,
            build_info: get(&lib, "ovstage_get_build_info")?,
            computation_models: get(&lib, "ovstage_get_hierarchy_computation_models")?,
            usd_stage_id: get(&lib, "ovstage_get_usd_stage_id")?,
            _lib: lib,
        })
    }

    /// `ovstage_initialize` with `(key, value)` uint64 settings; the status.
    pub(crate) fn initialize(&self, settings: &[(u32, u64)]) -> u32 {
        let entries: Vec<ovstage_config_entry_t> = settings
            .iter()
            .map(|(key, value)| ovstage_config_entry_t {
                key_type: ovstage_config_key_type_t(2),
                key: ovstage_config_entry_key_t { uint64_key: ovstage_config_uint64_t(*key) },
                value: ovstage_config_entry_value_t { uint_value: *value },
            })
            .collect();
        let config = ovstage_config_t { entries: entries.as_ptr(), entry_count: entries.len() };
        // SAFETY: a valid config for the duration of the call.
        unsafe { (self.initialize)(&config) }.0
    }

    /// `ovstage_shutdown`; the status.
    pub(crate) fn shutdown(&self) -> u32 {
        // SAFETY: no arguments.
        unsafe { (self.shutdown)() }.0
    }

    /// The calling thread's last error message (for diagnostics only: the
    /// transcripts compare statuses, not wording).
    pub(crate) fn last_error(&self) -> String {
        // SAFETY: no arguments; a view owned by the library.
        crate::driver::text(unsafe { (self.last_error)() })
    }

    /// A new instance, or the failing status.
    pub(crate) fn create_instance(&self, name: &CStr) -> Result<*mut ovstage_instance_t, u32> {
        let desc = ovstage_instance_desc_t { name: name.as_ptr() };
        let mut inst = null_mut();
        // SAFETY: valid descriptor and output.
        let status = unsafe { (self.create)(&desc, &mut inst) }.0;
        if status == 0 && !inst.is_null() { Ok(inst) } else { Err(status) }
    }
}
