//! Hierarchy lookups (`ovstage_get_hierarchy` and its fetch and release
//! calls) and the world-matrix computation (`ovstage_compute_hierarchy`).

use ovstage_types::{Error, HierarchyHandle, HierarchyRelation, PathList, Status, Timeout};

use crate::abi::api_types::{ovstage_api_status_t, ovstage_enqueue_result_t, ovstage_instance_t};
use crate::abi::ovx_string::ovx_string_t;
use crate::abi::ovx_types::ovx_primpath_list_t;
use crate::abi::stage_types::{
    ovstage_hierarchy_computation_model_desc_t, ovstage_hierarchy_computation_model_id_t, ovstage_hierarchy_handle_t,
    ovstage_hierarchy_relation_t, ovstage_hierarchy_result_t,
};
use crate::error::{c_status, enqueue_result, report, status_result};
use crate::instance::with_instance;
use crate::results::HeldHierarchy;
use crate::strings;

fn handle(raw: u64, call: &str) -> Result<HierarchyHandle, Error> {
    HierarchyHandle::from_raw(raw).ok_or_else(|| {
        Error::invalid_handle(format!(
            "{call}: the handle is 0 (OVSTAGE_INVALID_HIERARCHY_HANDLE), which a rejected enqueue leaves behind"
        ))
    })
}

/// `ovstage_get_hierarchy`.
///
/// # Safety
/// See the export.
pub(crate) unsafe fn enqueue(
    inst: *mut ovstage_instance_t,
    list: ovx_primpath_list_t,
    ordinal: u64,
    relation: ovstage_hierarchy_relation_t,
    out: *mut ovstage_hierarchy_handle_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "ovstage_get_hierarchy";
    // SAFETY: forwarded.
    unsafe {
        with_instance(inst, CALL, |c| {
            enqueue_result((|| {
                strings::non_null(out, format_args!("{CALL}: out_hierarchy_handle"))?;
                out.write(0);
                let relation = HierarchyRelation::from_raw(relation.0).ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "{CALL}: relation {} is not PARENT (0), CHILDREN (1) or SIBLINGS (2)",
                        relation.0
                    ))
                })?;
                let list = PathList::from_raw(list)
                    .ok_or_else(|| Error::invalid_handle(format!("{CALL}: 0 is OVX_INVALID_PRIMPATH_LIST")))?;
                let e = c.stage.get_hierarchy(list, ordinal, relation).map_err(|e| e.prefixed(CALL))?;
                out.write(e.handle.get());
                Ok(e.op)
            })())
        })
    }
}

/// `ovstage_fetch_hierarchy_result` (never blocks).
///
/// # Safety
/// See the export.
pub(crate) unsafe fn fetch(
    inst: *mut ovstage_instance_t,
    raw: ovstage_hierarchy_handle_t,
    out: *mut ovstage_hierarchy_result_t,
) -> ovstage_api_status_t {
    const CALL: &str = "ovstage_fetch_hierarchy_result";
    // SAFETY: forwarded.
    unsafe {
        with_instance(inst, CALL, |c| {
            status_result((|| {
                strings::non_null(out, format_args!("{CALL}: out_result"))?;
                let result = c.stage.fetch_hierarchy_result(handle(raw, CALL)?, Timeout::POLL)?;
                let paths = c.stage.paths();
                let held = HeldHierarchy::new(&result, |p| {
                    paths.path_text(p).map_or_else(|_| String::new(), |t| t.to_string())
                });
                let view = c.results.hierarchies.insert_view(held, |id, h| ovstage_hierarchy_result_t {
                    hierarchy_result_id: id,
                    ordinal: h.ordinal,
                    items: if h.items.is_empty() { std::ptr::null() } else { h.items.as_ptr() },
                    input_count: h.items.len(),
                    paths: if h.paths.is_empty() { std::ptr::null() } else { h.paths.as_ptr() },
                    path_count: h.paths.len(),
                });
                out.write(view);
                Ok(())
            })())
        })
    }
}

/// `ovstage_release_hierarchy_result`.
///
/// # Safety
/// See the export.
pub(crate) unsafe fn release_result(
    inst: *mut ovstage_instance_t,
    result: *const ovstage_hierarchy_result_t,
) -> ovstage_api_status_t {
    const CALL: &str = "ovstage_release_hierarchy_result";
    // SAFETY: forwarded.
    unsafe {
        with_instance(inst, CALL, |c| {
            if result.is_null() {
                return report(&Error::invalid_argument(format!("{CALL}: result is NULL")));
            }
            let id = (*result).hierarchy_result_id;
            match c.results.hierarchies.remove(id) {
                Some(_) => c_status(Status::Ok),
                None => report(&Error::invalid_handle(format!(
                    "{CALL}: hierarchy result {id:#x} is unknown or already released"
                ))),
            }
        })
    }
}

/// `ovstage_release_hierarchy`.
///
/// # Safety
/// See the export.
pub(crate) unsafe fn release(
    inst: *mut ovstage_instance_t,
    raw: ovstage_hierarchy_handle_t,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "ovstage_release_hierarchy";
    // SAFETY: forwarded.
    unsafe {
        with_instance(inst, CALL, |c| enqueue_result(handle(raw, CALL).and_then(|h| c.stage.release_hierarchy(h))))
    }
}

/// `ovstage_get_hierarchy_computation_models`: the four models the
/// contract names ([`stage::COMPUTATION_MODELS`]), as the published
/// library lists them.
///
/// # Safety
/// See the export.
pub(crate) unsafe fn computation_models(
    inst: *mut ovstage_instance_t,
    out_models: *mut *const ovstage_hierarchy_computation_model_desc_t,
    out_count: *mut usize,
) -> ovstage_api_status_t {
    const CALL: &str = "ovstage_get_hierarchy_computation_models";
    // SAFETY: forwarded.
    unsafe {
        with_instance(inst, CALL, |_| {
            status_result((|| {
                strings::non_null(out_models, format_args!("{CALL}: out_models"))?;
                strings::non_null(out_count, format_args!("{CALL}: out_model_count"))?;
                let models = models();
                out_models.write(models.0.as_ptr());
                out_count.write(models.0.len());
                Ok(())
            })())
        })
    }
}

/// A NUL-terminated copy of `s`, kept for the process (the descriptors are
/// handed out as process-lifetime views), as a view without the terminator.
fn leaked(s: &str) -> ovx_string_t {
    let c = std::ffi::CString::new(s).expect("model names and descriptions have no NUL");
    let length = s.len();
    ovx_string_t { ptr: Box::leak(c.into_boxed_c_str()).as_ptr(), length }
}

struct Models(Vec<ovstage_hierarchy_computation_model_desc_t>);

// SAFETY: the descriptors only point at leaked, never written strings.
unsafe impl Sync for Models {}
// SAFETY: as above.
unsafe impl Send for Models {}

/// The descriptors, made once.
fn models() -> &'static Models {
    static MODELS: std::sync::OnceLock<Models> = std::sync::OnceLock::new();
    MODELS.get_or_init(|| {
        Models(
            stage::COMPUTATION_MODELS
                .iter()
                .map(|(id, name, description)| ovstage_hierarchy_computation_model_desc_t {
                    model_id: ovstage_hierarchy_computation_model_id_t(*id),
                    name: leaked(name),
                    description: leaked(description),
                })
                .collect(),
        )
    })
}

/// Whether this process has a CUDA device (device 0), asked only when a
/// GPU model is; `Err`: why not.
pub(crate) fn cuda_device() -> Result<(), String> {
    ovstage_backend_cuda::probe_device(0).map(|_| ()).map_err(|e| e.to_string())
}

/// `ovstage_compute_hierarchy`: CPU_INCREMENTAL and RUNTIME_DEFAULT run the
/// CPU computation; the GPU models run it too where the process has a CUDA
/// device, and are accepted and fail without one, as on the published
/// library.
///
/// # Safety
/// See the export.
pub(crate) unsafe fn compute(
    inst: *mut ovstage_instance_t,
    model: ovstage_hierarchy_computation_model_id_t,
    input_ordinal: u64,
    output_ordinal: u64,
) -> ovstage_enqueue_result_t {
    const CALL: &str = "ovstage_compute_hierarchy";
    // SAFETY: forwarded.
    unsafe {
        with_instance(inst, CALL, |c| {
            enqueue_result(
                stage::ComputationModel::from_id(i64::from(model.0), cuda_device)
                    .and_then(|m| c.stage.compute_hierarchy_with(m, input_ordinal, output_ordinal))
                    .map_err(|e| e.prefixed(CALL)),
            )
        })
    }
}
