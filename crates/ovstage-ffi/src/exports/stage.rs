//! The exported functions of ovstage/ovstage.h (types: `ovstage_abi::stage`).

use ovstage_abi::api_types::{
    ovstage_api_status_t, ovstage_enqueue_result_t, ovstage_instance_t, ovstage_op_id_t, ovstage_ordinal_t,
    ovstage_timeout_ns_t,
};
use ovstage_abi::ovx_string::ovx_string_t;
use ovstage_abi::ovx_types::ovx_primpath_list_t;
use ovstage_abi::stage_types::{
    ovstage_build_info_t, ovstage_clone_result_t, ovstage_config_t, ovstage_hierarchy_computation_model_desc_t,
    ovstage_hierarchy_computation_model_id_t, ovstage_hierarchy_handle_t, ovstage_hierarchy_relation_t,
    ovstage_hierarchy_result_t, ovstage_instance_desc_t, ovstage_log_callback_t, ovstage_log_severity_t,
};

use ovstage_types::Status;

use crate::error::{self, c_status, guard, status_result};
use crate::{build_info, clone, hierarchy, instance, log, process, slots, strings, unsupported};

/// This library's build information (callable any time, even before
/// `ovstage_initialize`); never NULL, valid for the library's lifetime.
#[unsafe(no_mangle)]
pub extern "C" fn ovstage_get_build_info() -> *const ovstage_build_info_t {
    build_info::get()
}

/// Takes a reference to the process state, applying `config` (optional)
/// when it is the first one. Later configs must agree with the active
/// settings. Balance with `ovstage_shutdown`. Instances hold a reference of
/// their own, so calling this is optional. INVALID_ARGUMENT (nothing
/// changed) for a malformed, duplicate, unknown or conflicting entry.
///
/// # Safety
/// `config`, when not NULL, points to a valid config whose entries and
/// strings are readable for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_initialize(config: *const ovstage_config_t) -> ovstage_api_status_t {
    guard("ovstage_initialize", || {
        // SAFETY: forwarded under this function's contract.
        status_result(unsafe { process::initialize(config) })
    })
}

/// The entries accepted when the active process state was first set up,
/// in their order, owned by `instance` until it is destroyed.
///
/// # Safety
/// `instance` is NULL or a live instance; `out_config` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_get_config(
    instance: *const ovstage_instance_t,
    out_config: *mut ovstage_config_t,
) -> ovstage_api_status_t {
    const CALL: &str = "ovstage_get_config";
    guard(CALL, || {
        status_result((|| {
            strings::non_null(out_config, "ovstage_get_config: out_config")?;
            // SAFETY: forwarded under this function's contract.
            let ctx = unsafe { instance::from_instance(instance.cast_mut(), CALL) }?;
            let entries = ctx.process.entries();
            let view = ovstage_config_t { entries: entries.as_ptr(), entry_count: entries.len() };
            // SAFETY: checked non-NULL; writable per this function's contract.
            unsafe { strings::put(out_config, view, "ovstage_get_config: out_config") }
        })())
    })
}

/// Drops a reference taken by `ovstage_initialize`; INVALID_ARGUMENT when
/// there is none.
#[unsafe(no_mangle)]
pub extern "C" fn ovstage_shutdown() -> ovstage_api_status_t {
    guard("ovstage_shutdown", || status_result(process::shutdown()))
}

/// Installs the process-wide log callback (NULL removes it after
/// delivering what is pending). Messages below `severity` are dropped, unless
/// `channel_filter` (`<channel>=<level>` pairs separated by commas; levels
/// verbose, debug, info, warn, warning, error, fatal, none) sets another level
/// for their channel or its dotted sub-channels. This library logs on
/// `ovstage` (instances created and destroyed, at info level), `ovstage.api`
/// (every rejected call with its message, at verbose level; caught internal
/// errors, at error level) and `ovstage.paths`. Needs the process state (an
/// initialization or a live instance): OP_FAILED otherwise.
///
/// # Safety
/// `channel_filter` is NULL or a readable string view; `callback` is NULL
/// or a function callable from another thread with `user_data`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_set_log_callback(
    severity: ovstage_log_severity_t,
    channel_filter: *const ovx_string_t,
    callback: ovstage_log_callback_t,
    user_data: *mut std::ffi::c_void,
) -> ovstage_api_status_t {
    const CALL: &str = "ovstage_set_log_callback";
    guard(CALL, || {
        if !process::is_bootstrapped() {
            return error::fail(
                Status::OpFailed,
                &format!(
                    "{CALL}: the runtime is not bootstrapped (call ovstage_initialize or create an instance first)"
                ),
            );
        }
        // SAFETY: forwarded under this function's contract.
        status_result(unsafe { log::set_callback(severity, channel_filter, callback, user_data, CALL) })
    })
}

/// Waits up to `timeout` until every message logged before the call was
/// delivered (OK at once without a callback).
#[unsafe(no_mangle)]
pub extern "C" fn ovstage_flush_log(timeout: ovstage_timeout_ns_t) -> ovstage_api_status_t {
    guard("ovstage_flush_log", || c_status(if log::flush(timeout) { Status::Ok } else { Status::Timeout }))
}

/// Starts the op timeline (an extension of ours, not in the published
/// 0.3.0 API): every op of every instance in the process is recorded into a
/// Chrome trace (JSON; opens in Perfetto) written to `path` by
/// `ovstage_trace_stop`. The file is created now. `INVALID_ARGUMENT` for an
/// unwritable path or while a trace is already being recorded. Setting
/// `OVSTAGE_TRACE=path.json` in the environment does the same from the
/// first instance to the last one destroyed.
///
/// # Safety
/// `path` describes `length` readable bytes (or is `{NULL, 0}`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_trace_start(path: ovx_string_t) -> ovstage_api_status_t {
    const CALL: &str = "ovstage_trace_start";
    guard(CALL, || {
        // SAFETY: the caller's contract on `path`.
        let result = unsafe { strings::text(path, format_args!("{CALL}: path")) }.and_then(|p| {
            if p.is_empty() {
                return Err(ovstage_types::Error::invalid_argument(format!("{CALL}: path is empty")));
            }
            stage::trace::start(p).map_err(|e| e.prefixed(CALL))
        });
        status_result(result)
    })
}

/// Stops the op timeline and writes its file (an extension of ours). OK
/// also when no trace was being recorded.
#[unsafe(no_mangle)]
pub extern "C" fn ovstage_trace_stop() -> ovstage_api_status_t {
    const CALL: &str = "ovstage_trace_stop";
    guard(CALL, || status_result(stage::trace::stop().map(|_| ()).map_err(|e| e.prefixed(CALL))))
}

/// Creates an instance (`desc` may be NULL) and stores it in
/// `*out_instance`. Destroy it with `ovstage_destroy_instance`.
///
/// # Safety
/// `desc` is NULL or readable (its `name` NULL or NUL-terminated);
/// `out_instance` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_create_instance(
    desc: *const ovstage_instance_desc_t,
    out_instance: *mut *mut ovstage_instance_t,
) -> ovstage_api_status_t {
    const CALL: &str = "ovstage_create_instance";
    guard(CALL, || {
        status_result((|| {
            strings::non_null(out_instance, "ovstage_create_instance: out_instance")?;
            let name = if desc.is_null() {
                "ovstage"
            } else {
                // SAFETY: non-NULL and readable per this function's contract.
                let name = unsafe { (*desc).name };
                if name.is_null() {
                    "ovstage"
                } else {
                    // SAFETY: a non-NULL name is NUL-terminated per this
                    // function's contract.
                    unsafe { strings::c_text(name, "ovstage_create_instance: desc->name") }?
                }
            };
            let bundle = instance::create(name, &slots::VTABLE, &slots::dictionary::VTABLE);
            // SAFETY: checked non-NULL; writable per this function's contract.
            unsafe { out_instance.write(bundle) };
            Ok(())
        })())
    })
}

/// Destroys an instance (NULL is a no-op): outstanding ops finish first,
/// then everything it owns is freed, including its path dictionary. No
/// other thread may use the instance during or after the call.
///
/// # Safety
/// `instance` is NULL or an instance from `ovstage_create_instance` not
/// destroyed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_destroy_instance(instance: *mut ovstage_instance_t) -> ovstage_api_status_t {
    guard("ovstage_destroy_instance", || {
        // SAFETY: forwarded under this function's contract.
        status_result(unsafe { instance::destroy(instance) })
    })
}

/// The id of the USD stage an instance mirrors. Not supported: this library
/// has no USD population, so no instance mirrors a USD stage.
///
/// # Safety
/// Pointers are NULL or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_get_usd_stage_id(
    instance: *mut ovstage_instance_t,
    out_usd_stage_id: *mut u64,
) -> ovstage_api_status_t {
    const CALL: &str = "ovstage_get_usd_stage_id";
    guard(CALL, || {
        // SAFETY: forwarded under this function's contract.
        if let Err(e) = unsafe { instance::from_instance(instance, CALL) } {
            return error::report(&e);
        }
        if let Err(e) = strings::non_null(out_usd_stage_id, "ovstage_get_usd_stage_id: out_usd_stage_id") {
            return error::report(&e);
        }
        unsupported::status(CALL, "no instance mirrors a USD stage, since this library has no USD population")
    })
}

/// Enqueues a clone of the subtree at `source_path` to each of the
/// `num_target_paths` targets at `ordinal`. Targets must not exist (the
/// clone fails with PRIM_NOT_FOUND otherwise), the source must (NOT_FOUND).
/// Relationship and connection paths into the source subtree are rebased.
/// The report is fetched with `ovstage_fetch_clone_result`.
///
/// # Safety
/// `instance` is NULL or live; `source_path` and the `num_target_paths`
/// entries of `target_paths` are readable string views.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_clone(
    instance: *mut ovstage_instance_t,
    source_path: ovx_string_t,
    target_paths: *const ovx_string_t,
    num_target_paths: usize,
    ordinal: ovstage_ordinal_t,
) -> ovstage_enqueue_result_t {
    // SAFETY: forwarded under this function's contract.
    unsafe { clone::enqueue(instance, source_path, target_paths, num_target_paths, ordinal) }
}

/// Waits up to `timeout` for the clone `op_id` and copies its report;
/// the clone's own failure status when it failed (`*out_result` zeroed).
/// Available until the op is released.
///
/// # Safety
/// `instance` is NULL or live; `out_result` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_fetch_clone_result(
    instance: *mut ovstage_instance_t,
    op_id: ovstage_op_id_t,
    timeout: ovstage_timeout_ns_t,
    out_result: *mut ovstage_clone_result_t,
) -> ovstage_api_status_t {
    // SAFETY: forwarded under this function's contract.
    unsafe { clone::fetch(instance, op_id, timeout, out_result) }
}

/// Enqueues a lookup of the parent, children or siblings of each prim of
/// `prim_paths` in the current hierarchy (`ordinal` is only echoed).
///
/// # Safety
/// `instance` is NULL or live; `out_hierarchy_handle` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_get_hierarchy(
    instance: *mut ovstage_instance_t,
    prim_paths: ovx_primpath_list_t,
    ordinal: ovstage_ordinal_t,
    relation: ovstage_hierarchy_relation_t,
    out_hierarchy_handle: *mut ovstage_hierarchy_handle_t,
) -> ovstage_enqueue_result_t {
    // SAFETY: forwarded under this function's contract.
    unsafe { hierarchy::enqueue(instance, prim_paths, ordinal, relation, out_hierarchy_handle) }
}

/// Fetches a finished hierarchy lookup without blocking (TIMEOUT while it
/// runs). The result stays valid until `ovstage_release_hierarchy_result`.
///
/// # Safety
/// `instance` is NULL or live; `out_result` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_fetch_hierarchy_result(
    instance: *mut ovstage_instance_t,
    hierarchy_handle: ovstage_hierarchy_handle_t,
    out_result: *mut ovstage_hierarchy_result_t,
) -> ovstage_api_status_t {
    // SAFETY: forwarded under this function's contract.
    unsafe { hierarchy::fetch(instance, hierarchy_handle, out_result) }
}

/// Frees a fetched hierarchy result.
///
/// # Safety
/// `instance` is NULL or live; `result` is NULL or readable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_release_hierarchy_result(
    instance: *mut ovstage_instance_t,
    result: *const ovstage_hierarchy_result_t,
) -> ovstage_api_status_t {
    // SAFETY: forwarded under this function's contract.
    unsafe { hierarchy::release_result(instance, result) }
}

/// Enqueues the release of a hierarchy handle.
///
/// # Safety
/// `instance` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_release_hierarchy(
    instance: *mut ovstage_instance_t,
    handle: ovstage_hierarchy_handle_t,
) -> ovstage_enqueue_result_t {
    // SAFETY: forwarded under this function's contract.
    unsafe { hierarchy::release(instance, handle) }
}

/// The hierarchy computation models this library offers: cpu-incremental
/// and runtime-default.
///
/// # Safety
/// Pointers are NULL or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_get_hierarchy_computation_models(
    instance: *mut ovstage_instance_t,
    out_models: *mut *const ovstage_hierarchy_computation_model_desc_t,
    out_model_count: *mut usize,
) -> ovstage_api_status_t {
    // SAFETY: forwarded under this function's contract.
    unsafe { hierarchy::computation_models(instance, out_models, out_model_count) }
}

/// Enqueues a world-matrix computation (CPU_INCREMENTAL for every valid
/// model id): world = local x parent world along the hierarchy, from the
/// inputs as of `input_ordinal`, changed rows recorded at `output_ordinal`.
///
/// # Safety
/// `instance` is NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ovstage_compute_hierarchy(
    instance: *mut ovstage_instance_t,
    computation_model_id: ovstage_hierarchy_computation_model_id_t,
    input_ordinal: ovstage_ordinal_t,
    output_ordinal: ovstage_ordinal_t,
) -> ovstage_enqueue_result_t {
    // SAFETY: forwarded under this function's contract.
    unsafe { hierarchy::compute(instance, computation_model_id, input_ordinal, output_ordinal) }
}
