//! `ovstage_clone` and `ovstage_fetch_clone_result`.

use ovstage_types::{Error, OpId, Result, Status, Timeout};

use crate::abi::api_types::{ovstage_api_status_t, ovstage_enqueue_result_t, ovstage_instance_t};
use crate::abi::ovx_string::ovx_string_t;
use crate::abi::stage_types::ovstage_clone_result_t;
use crate::error::{c_status, enqueue_result, report};
use crate::instance::with_instance;
use crate::strings;

const CALL: &str = "ovstage_clone";

/// `ovstage_clone`.
///
/// # Safety
/// See the export.
pub(crate) unsafe fn enqueue(
    inst: *mut ovstage_instance_t,
    source: ovx_string_t,
    targets: *const ovx_string_t,
    n: usize,
    ordinal: u64,
) -> ovstage_enqueue_result_t {
    // SAFETY: forwarded.
    unsafe {
        with_instance(inst, CALL, |c| {
            enqueue_result((|| -> Result<OpId> {
                let paths = c.stage.paths();
                let source_text = strings::text(source, format_args!("{CALL}: source_path"))?;
                if source_text.is_empty() {
                    return Err(Error::invalid_argument(format!("{CALL}: source_path is empty")));
                }
                let source = paths.intern_path(source_text).map_err(|e| e.prefixed(CALL))?;
                let texts = strings::texts(targets, n, format_args!("{CALL}: target_paths"))?;
                let mut target_paths = Vec::with_capacity(texts.len());
                for (i, t) in texts.iter().enumerate() {
                    if t.is_empty() {
                        return Err(Error::invalid_argument(format!("{CALL}: target_paths[{i}] is empty")));
                    }
                    target_paths
                        .push(paths.intern_path(t).map_err(|e| e.prefixed(&format!("{CALL}: target_paths[{i}]")))?);
                }
                c.stage.clone_subtree(source, &target_paths, ordinal)
            })())
        })
    }
}

/// `ovstage_fetch_clone_result`.
///
/// # Safety
/// See the export.
pub(crate) unsafe fn fetch(
    inst: *mut ovstage_instance_t,
    op: u64,
    timeout: u64,
    out: *mut ovstage_clone_result_t,
) -> ovstage_api_status_t {
    const FETCH: &str = "ovstage_fetch_clone_result";
    // SAFETY: forwarded.
    unsafe {
        with_instance(inst, FETCH, |c| {
            if out.is_null() {
                return report(&Error::invalid_argument(format!("{FETCH}: out_result is NULL")));
            }
            out.write(ovstage_clone_result_t::default());
            let Some(op) = OpId::from_raw(op) else {
                return report(&Error::invalid_handle(format!("{FETCH}: 0 is OVSTAGE_INVALID_OP_ID")));
            };
            match c.stage.fetch_clone_result(op, Timeout::from_nanos(timeout)) {
                Ok(r) => {
                    out.write(ovstage_clone_result_t {
                        ordinal: r.ordinal.get(),
                        target_count: r.target_count,
                        source_prim_count: r.source_prim_count,
                        prims_cloned: r.prims_cloned,
                    });
                    c_status(Status::Ok)
                }
                Err(e) => report(&e),
            }
        })
    }
}
