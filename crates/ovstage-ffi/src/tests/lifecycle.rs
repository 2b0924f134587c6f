//! Instance life cycle, diagnostics and the exports this release does not
//! implement.

use std::ffi::{CStr, c_void};

use super::*;
use crate::abi::stage_types::*;
use crate::exports::instancing::*;
use crate::exports::population::*;
use crate::exports::population_export::*;
use crate::exports::stage::*;

#[test]
fn create_and_destroy_with_and_without_a_descriptor() {
    let _g = shared();
    let name = c"named-stage";
    let desc = ovstage_instance_desc_t { name: name.as_ptr() };
    let mut inst = std::ptr::null_mut();
    // SAFETY: valid descriptor and output.
    assert_eq!(unsafe { ovstage_create_instance(&desc, &mut inst) }.0, OK);
    assert!(!inst.is_null());
    // SAFETY: live instance.
    let (vt, ctx) = unsafe { ((*inst).vtable, (*inst).context) };
    assert!(!vt.is_null() && !ctx.is_null());
    // SAFETY: created above, destroyed once.
    assert_eq!(unsafe { ovstage_destroy_instance(inst) }.0, OK);
    // SAFETY: NULL is a no-op.
    assert_eq!(unsafe { ovstage_destroy_instance(std::ptr::null_mut()) }.0, OK);
}

#[test]
fn a_failed_create_leaves_a_last_error() {
    let _g = shared();
    // SAFETY: NULL output is reported, not written.
    let st = unsafe { ovstage_create_instance(std::ptr::null(), std::ptr::null_mut()) };
    assert_eq!(st.0, INVALID_ARGUMENT);
    assert_eq!(last_error(), "ovstage_create_instance: out_instance is NULL");
    let bad = [0xffu8, 0];
    let desc = ovstage_instance_desc_t { name: bad.as_ptr().cast() };
    let mut inst = std::ptr::null_mut();
    // SAFETY: valid pointers; the name is not UTF-8.
    assert_eq!(unsafe { ovstage_create_instance(&desc, &mut inst) }.0, INVALID_ARGUMENT);
    assert!(inst.is_null());
    assert!(last_error().contains("not UTF-8"), "{}", last_error());
}

#[test]
fn slots_reject_a_null_context() {
    let _g = shared();
    let i = Inst::new();
    let vt = i.vt();
    let mut r =
        ovstage_op_wait_result_t { error_op_ids: std::ptr::null(), error_op_id_count: 0, lowest_pending_op_id: 0 };
    // SAFETY: a NULL context is reported.
    assert_eq!(unsafe { (vt.wait_op.unwrap())(std::ptr::null_mut(), 1, 0, &mut r) }.0, INVALID_ARGUMENT);
    assert_eq!(last_error(), "wait_op: instance context is NULL");
    // SAFETY: as above.
    let e = unsafe { (vt.release_query.unwrap())(std::ptr::null_mut(), 5) };
    assert_eq!((e.status.0, e.op_index), (INVALID_ARGUMENT, 0));
    // SAFETY: as above.
    assert!(unsafe { (vt.get_path_dictionary.unwrap())(std::ptr::null_mut()) }.is_null());
}

#[test]
fn version_error_strings_and_build_info() {
    let _g = shared();
    let i = Inst::new();
    let (mut a, mut b, mut c) = (9, 9, 9);
    // SAFETY: live instance, valid outputs.
    unsafe { (i.vt().get_version.unwrap())(i.ctx(), &mut a, &mut b, &mut c) };
    assert_eq!((a, b, c), (0, 3, 0));
    for (code, expect) in [
        (0, "success"),
        (5, "write floor violation"),
        (12, "operation failed"),
        (99, "internal error"),
        (14, "unknown error"),
    ] {
        // SAFETY: the result is a static NUL-terminated string.
        let got = unsafe { CStr::from_ptr((i.vt().get_error_string.unwrap())(i.ctx(), ovstage_api_status_t(code))) };
        assert_eq!(got.to_str().unwrap(), expect);
    }
    // SAFETY: the build information is static.
    let info = unsafe { &*ovstage_get_build_info() };
    assert_eq!(info.struct_size as usize, std::mem::size_of::<ovstage_build_info_t>());
    let build = text(info.build_string).unwrap();
    assert!(build.starts_with("0.3.0+"), "{build}");
    assert!(build.ends_with(&text(info.build_location).unwrap()), "{build}");
    assert!(!text(info.git_hash).unwrap().is_empty());
}

#[test]
fn unknown_extensions_are_not_found_and_null_arguments_rejected() {
    let _g = shared();
    let i = Inst::new();
    let mut table: *const c_void = std::ptr::dangling();
    // SAFETY: live instance, valid name and output.
    let st = unsafe { (i.vt().query_extension.unwrap())(i.ctx(), c"ovstage.placement2".as_ptr(), &mut table) };
    assert_eq!(st.0, NOT_FOUND);
    assert!(table.is_null());
    assert_eq!(
        last_error(),
        "query_extension: this library provides no extension named 'ovstage.placement2' (it provides 'ovstage.placement')"
    );
    // SAFETY: NULL name is reported.
    assert_eq!(unsafe { (i.vt().query_extension.unwrap())(i.ctx(), std::ptr::null(), &mut table) }.0, INVALID_ARGUMENT);
    // SAFETY: NULL output is reported.
    let st = unsafe { (i.vt().query_extension.unwrap())(i.ctx(), c"x".as_ptr(), std::ptr::null_mut()) };
    assert_eq!(st.0, INVALID_ARGUMENT);
}

/// `call` returned NOT_SUPPORTED and the last error says it is not
/// implemented.
fn not_supported(call: &str, status: u32) {
    assert_eq!(status, NOT_SUPPORTED, "{call}");
    let e = last_error();
    assert!(e.starts_with(call) && e.contains("is not implemented in this release of ovstage"), "{call}: {e}");
}

#[test]
fn unimplemented_exports_say_so() {
    let _g = shared();
    let i = Inst::new();
    let p = i.ptr;
    let none = s("");
    let mut u = 0u64;
    let mut list = 0u64;
    // SAFETY: every export below only validates or ignores its arguments.
    unsafe {
        not_supported("ovstage_get_usd_stage_id", ovstage_get_usd_stage_id(p, &mut u).0);
        // Implemented now: a valid model is accepted, an unknown one refused.
        let r = ovstage_compute_hierarchy(p, ovstage_hierarchy_computation_model_id_t(1), 0, 1);
        assert_eq!(r.status.0, 0, "ovstage_compute_hierarchy: {}", last_error());
        let bad = ovstage_compute_hierarchy(p, ovstage_hierarchy_computation_model_id_t(7), 0, 2);
        assert_eq!(bad.status.0, INVALID_ARGUMENT);
        assert!(last_error().contains("7 is not a hierarchy computation model"), "{}", last_error());
        not_supported(
            "ovstage_instancing_get_instance_roots",
            ovstage_instancing_get_instance_roots(p, 1, &mut list).0,
        );
        not_supported("ovstage_instancing_get_prototype_root", ovstage_instancing_get_prototype_root(p, 1, &mut u).0);
        not_supported("ovstage_instancing_get_prototype_roots", ovstage_instancing_get_prototype_roots(p, &mut list).0);
        not_supported(
            "ovstage_population_register_usd_schemas",
            ovstage_population_register_usd_schemas(std::ptr::null(), 0).0,
        );
        let r = ovstage_population_open_usd_from_file(p, s("/tmp/x.usda"), 1, 0.0, 3);
        assert_eq!(r.op_index, 0);
        not_supported("ovstage_population_open_usd_from_file", r.status.0);
        assert_eq!(text(ovstage_population_get_last_error()).unwrap(), last_error());
        not_supported(
            "ovstage_population_open_usd_from_string",
            ovstage_population_open_usd_from_string(p, none, 1, 0.0, 3).status.0,
        );
        not_supported("ovstage_population_reset_usd", ovstage_population_reset_usd(p).status.0);
        not_supported("ovstage_population_apply_usd_time", ovstage_population_apply_usd_time(p, 1, 0.5).status.0);
        not_supported("ovstage_population_apply_usd_changes", ovstage_population_apply_usd_changes(p, 1).status.0);
        not_supported(
            "ovstage_population_remove_usd_reference",
            ovstage_population_remove_usd_reference(p, 1).status.0,
        );
        not_supported("ovstage_population_wait_op", ovstage_population_wait_op(p, 1, 0, std::ptr::null_mut()).0);
        assert!(text(ovstage_population_get_last_op_error(1)).is_none());
        not_supported(
            "ovstage_population_export_desc_init",
            ovstage_population_export_desc_init(std::ptr::null_mut()).0,
        );
        not_supported(
            "ovstage_population_export_to_usd_file",
            ovstage_population_export_to_usd_file(p, none, std::ptr::null(), std::ptr::null_mut()).0,
        );
        not_supported(
            "ovstage_population_export_enqueue_to_usd_file",
            ovstage_population_export_enqueue_to_usd_file(p, none, std::ptr::null()).status.0,
        );
        let mut models = std::ptr::null();
        let mut n = 7;
        assert_eq!(ovstage_get_hierarchy_computation_models(p, &mut models, &mut n).0, OK);
        assert_eq!(n, 4);
        let listed = std::slice::from_raw_parts(models, n);
        let named: Vec<(u32, &[u8])> = listed
            .iter()
            .map(|m| (m.model_id.0, std::slice::from_raw_parts(m.name.ptr.cast::<u8>(), m.name.length)))
            .collect();
        let expected: [(u32, &[u8]); 4] =
            [(1, b"cpu-incremental"), (2, b"gpu-incremental"), (3, b"gpu-global"), (4, b"runtime-default")];
        assert_eq!(named, expected);
        // NUL-terminated as well, for clients that read them as C strings.
        assert_eq!(*listed[2].name.ptr.add(listed[2].name.length), 0);
        // The same table on every call.
        let mut again = std::ptr::null();
        assert_eq!(ovstage_get_hierarchy_computation_models(p, &mut again, &mut n).0, OK);
        assert_eq!(again, models);
    }
}

#[test]
fn the_op_timeline_starts_and_stops_through_the_c_exports() {
    let _g = exclusive();
    let path = std::env::temp_dir().join(format!("ovstage-ffi-trace-{}.json", std::process::id()));
    let text = path.to_str().unwrap().to_owned();
    assert_eq!(ovstage_trace_stop().0, OK, "stopping with no trace is OK");
    // SAFETY: empty and NULL-with-length strings are reported, not read.
    assert_eq!(unsafe { ovstage_trace_start(s("")) }.0, INVALID_ARGUMENT);
    assert!(last_error().contains("path is empty"), "{}", last_error());
    // SAFETY: as above.
    assert_eq!(unsafe { ovstage_trace_start(ovx_string_t { ptr: std::ptr::null(), length: 3 }) }.0, INVALID_ARGUMENT);
    // SAFETY: `text` outlives the call.
    assert_eq!(unsafe { ovstage_trace_start(s(&text)) }.0, OK);
    // SAFETY: as above.
    assert_eq!(unsafe { ovstage_trace_start(s(&text)) }.0, INVALID_ARGUMENT);
    assert!(last_error().contains("already being recorded"), "{}", last_error());
    Inst::new().seal(1);
    assert_eq!(ovstage_trace_stop().0, OK);
    let json = std::fs::read_to_string(&path).unwrap();
    assert!(json.starts_with("{\"displayTimeUnit\":\"ns\",\"traceEvents\":["), "{json}");
    assert!(json.trim_end().ends_with("]}"), "{json}");
    assert!(json.contains("\"name\":\"advance_write_floor\""), "{json}");
    assert_eq!(json.matches("\"ph\":\"B\"").count(), json.matches("\"ph\":\"E\"").count(), "{json}");
    let _ = std::fs::remove_file(&path);
}
