//! The data plane through the vtable: writes, reads, maps, queries,
//! deletes, ordinal queries, op tracking, clone and hierarchy lookups.

use super::*;
use crate::abi::stage_types::*;
use crate::exports::stage::*;

#[test]
fn write_seal_read_returns_the_rows() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/World/A", "/World/B"]);
    i.done(i.write_f32(q, "pos", 1, &[1., 2., 3., 4., 5., 6.], 3));
    i.seal(1);
    let groups = i.read_f32(q, &["pos"], LATEST).unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].rows, vec![vec![1., 2., 3.], vec![4., 5., 6.]]);
    assert_eq!(groups[0].shapes, vec![vec![2, 3]]);
    assert_eq!(groups[0].prim_positions, vec![0, 1]);
    // A newer write does not change the snapshot at 1 (versioned reads).
    i.done(i.write_f32(q, "pos", 2, &[7., 8., 9., 10., 11., 12.], 3));
    i.seal(2);
    let at1 = i.read_f32(q, &["pos"], ovstage_ordinal_range_t { end_ordinal: 1, ..LATEST }).unwrap();
    assert_eq!(at1[0].rows[1], vec![4., 5., 6.]);
    let latest = i.read_f32(q, &["pos"], LATEST).unwrap();
    assert_eq!(latest[0].rows[1], vec![10., 11., 12.]);
}

#[test]
fn groups_stay_valid_until_released_and_ids_are_checked() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/P"]);
    i.done(i.write_f32(q, "v", 1, &[1.0], 1));
    i.seal(1);
    let tok = i.tokens(&["v"]);
    let mut read = 0;
    // SAFETY: live instance, valid arrays and outputs throughout.
    unsafe {
        let vt = i.vt();
        i.done((vt.read_attributes.unwrap())(i.ctx(), q, tok.as_ptr(), 1, LATEST, &mut read));
        let mut g: ovstage_read_group_t = std::mem::zeroed();
        assert_eq!((vt.fetch_read_next.unwrap())(i.ctx(), read, 0, &mut g).0, OK);
        // Overwrite and seal while the group is held: the group is unchanged.
        i.done(i.write_f32(q, "v", 2, &[2.0], 1));
        i.seal(2);
        assert_eq!(*(*g.data.tensors).data.cast::<f32>(), 1.0);
        assert_eq!(g.attribute, tok[0]);
        assert!(!g.is_delete.get() && !g.is_array.get());
        assert_eq!(g.meta.attribute_write_floor_ordinal, 1);
        assert_eq!((g.prims.count, g.data.count, g.data.tensor_count), (1, 1, 1), "count is always the element count");
        let mut end: ovstage_read_group_t = std::mem::zeroed();
        assert_eq!((vt.fetch_read_next.unwrap())(i.ctx(), read, 0, &mut end).0, END_OF_ITERATION);
        assert_eq!((vt.release_group.unwrap())(i.ctx(), &g).0, OK);
        assert_eq!((vt.release_group.unwrap())(i.ctx(), &g).0, INVALID_HANDLE, "released twice");
        assert!(last_error().contains("unknown or already released"));
        assert_eq!((vt.release_group.unwrap())(i.ctx(), std::ptr::null()).0, INVALID_ARGUMENT);
        i.done((vt.release_read.unwrap())(i.ctx(), read));
        let again = (vt.release_read.unwrap())(i.ctx(), read);
        assert_eq!((again.status.0, again.op_index), (INVALID_HANDLE, 0));
        assert_eq!((vt.fetch_read_next.unwrap())(i.ctx(), read, 0, &mut g).0, INVALID_HANDLE);
    }
}

#[test]
fn failed_ops_are_reported_by_wait_with_their_message() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A"]);
    i.done(i.write_f32(q, "x", 5, &[1.0], 1));
    // NONDECREASING admission: an older ordinal for the same cell fails.
    let r = i.write_f32(q, "x", 3, &[2.0], 1);
    if r.status.0 == OK {
        let mut w =
            ovstage_op_wait_result_t { error_op_ids: std::ptr::null(), error_op_id_count: 0, lowest_pending_op_id: 0 };
        // SAFETY: live instance, valid output.
        let st = unsafe { (i.vt().wait_op.unwrap())(i.ctx(), r.op_index, INFINITE, &mut w) };
        assert_eq!(st.0, OP_FAILED);
        assert!(w.error_op_id_count >= 1);
        // SAFETY: `error_op_id_count` ids, valid until the next wait.
        let ids = unsafe { std::slice::from_raw_parts(w.error_op_ids, w.error_op_id_count) };
        assert!(ids.contains(&r.op_index));
        // SAFETY: live instance.
        let msg = text(unsafe { (i.vt().get_last_op_error.unwrap())(i.ctx(), r.op_index) }).unwrap();
        assert!(msg.contains("ordinal 3"), "{msg}");
    } else {
        // Admission decided at enqueue: the same conflict, synchronously.
        assert_eq!(r.status.0, WRITE_FLOOR_VIOLATION, "{}", last_error());
        assert_eq!(r.op_index, 0);
    }
    // Unknown, zero and released op ids.
    let mut w =
        ovstage_op_wait_result_t { error_op_ids: std::ptr::null(), error_op_id_count: 0, lowest_pending_op_id: 0 };
    // SAFETY: live instance, valid output.
    unsafe {
        assert_eq!((i.vt().wait_op.unwrap())(i.ctx(), 999_999, 0, &mut w).0, INVALID_ARGUMENT);
        assert_eq!((i.vt().wait_op.unwrap())(i.ctx(), 0, 0, &mut w).0, INVALID_ARGUMENT);
        assert_eq!((i.vt().wait_op.unwrap())(i.ctx(), 1, 0, std::ptr::null_mut()).0, INVALID_ARGUMENT);
        assert!(text((i.vt().get_last_op_error.unwrap())(i.ctx(), 999_999)).is_none());
        let op = i.write_f32(q, "x", 6, &[3.0], 1);
        i.done(op);
        assert_eq!((i.vt().release_op.unwrap())(i.ctx(), op.op_index).0, OK);
        assert_ne!((i.vt().release_op.unwrap())(i.ctx(), op.op_index).0, OK);
        assert_eq!((i.vt().wait_op.unwrap())(i.ctx(), op.op_index, 0, &mut w).0, INVALID_ARGUMENT);
    }
}

#[test]
fn polling_reports_progress_until_done() {
    let _g = shared();
    let i = Inst::new();
    let prims: Vec<String> = (0..2000).map(|p| format!("/P{p}")).collect();
    let refs: Vec<&str> = prims.iter().map(String::as_str).collect();
    let q = i.query(&refs);
    let values = vec![1.0f32; 2000 * 16];
    let mut ops = Vec::new();
    for t in 1..=20u64 {
        let r = i.write_f32(q, "m", t, &values, 16);
        assert_eq!(r.status.0, OK, "{}", last_error());
        ops.push(r.op_index);
    }
    assert!(ops.windows(2).all(|w| w[0] < w[1]), "op ids increase");
    let last = *ops.last().unwrap();
    let mut polls = 0;
    loop {
        let mut w =
            ovstage_op_wait_result_t { error_op_ids: std::ptr::null(), error_op_id_count: 0, lowest_pending_op_id: 0 };
        // SAFETY: live instance, valid output.
        let st = unsafe { (i.vt().wait_op.unwrap())(i.ctx(), last, 0, &mut w) }.0;
        polls += 1;
        match st {
            OK => break,
            TIMEOUT => assert!(w.lowest_pending_op_id != 0 && w.lowest_pending_op_id <= last),
            other => panic!("poll returned {other}: {}", last_error()),
        }
        std::thread::yield_now();
    }
    assert!(polls >= 1);
    for op in ops {
        assert_eq!(i.wait(op), OK);
    }
}

#[test]
fn deletes_show_as_tombstones_in_change_reads() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A", "/B"]);
    i.done(i.write_f32(q, "w", 1, &[1., 2.], 1));
    i.seal(1);
    let qa = i.query(&["/A"]);
    // SAFETY: live instance; no attributes: whole prims.
    i.done(unsafe { (i.vt().delete_attributes.unwrap())(i.ctx(), qa, std::ptr::null(), 0, 2) });
    i.seal(2);
    let groups = i.read_f32(q, &["w"], changes(2, 2)).unwrap();
    assert_eq!(groups.len(), 1);
    assert!(groups[0].is_delete);
    assert_eq!(groups[0].prim_positions, vec![0]);
    let latest = i.read_f32(q, &["w"], LATEST).unwrap();
    assert_eq!((latest.len(), latest[0].prim_positions.clone(), latest[0].rows.clone()), (1, vec![1], vec![vec![2.0]]));
    // Named attribute delete, bad attribute arguments.
    let names = [attr("w")];
    // SAFETY: live instance, valid array.
    i.done(unsafe { (i.vt().delete_attributes.unwrap())(i.ctx(), q, names.as_ptr(), 1, 3) });
    // SAFETY: NULL array with a count is reported.
    let bad = unsafe { (i.vt().delete_attributes.unwrap())(i.ctx(), q, std::ptr::null(), 2, 4) };
    assert_eq!(bad.status.0, INVALID_ARGUMENT);
}

#[test]
fn reads_check_ranges_and_floors() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A"]);
    let err = i.read_f32(q, &["v"], changes(5, 2)).unwrap_err();
    assert_eq!(err.0, INVALID_ARGUMENT);
    i.done(i.write_f32(q, "v", 3, &[1.0], 1));
    // Unsealed data at or below the end of the read.
    let err = i.read_f32(q, &["v"], ovstage_ordinal_range_t { end_ordinal: 3, ..LATEST }).unwrap_err();
    assert_eq!(err.0, WRITE_FLOOR_VIOLATION, "{}", err.1);
    // A read of an attribute nobody has: no groups.
    assert!(i.read_f32(q, &["nothing"], LATEST).unwrap().is_empty());
    let mut read = 7;
    // SAFETY: invalid query handle and token arguments are reported.
    unsafe {
        let r = (i.vt().read_attributes.unwrap())(i.ctx(), 0, std::ptr::null(), 0, LATEST, &mut read);
        assert_eq!((r.status.0, read), (INVALID_ARGUMENT, 0), "handle 0 is a bad argument, as on the reference");
        let zero = [0u64];
        let r = (i.vt().read_attributes.unwrap())(i.ctx(), q, zero.as_ptr(), 1, LATEST, &mut read);
        assert_eq!(r.status.0, INVALID_ARGUMENT);
        let r = (i.vt().read_attributes.unwrap())(i.ctx(), q + 1, std::ptr::null(), 0, LATEST, &mut read);
        assert_eq!(r.status.0, INVALID_HANDLE, "{}", last_error());
    }
}

#[test]
fn maps_fill_in_place_and_commit() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A", "/B", "/C"]);
    let desc = ovstage_map_desc_t {
        attribute: attr("vel"),
        dtype: crate::abi::dlpack::DLDataType { code: 2, bits: 32, lanes: 2 },
        semantic: ovstage_attribute_semantic_t(6),
        prim_mode: ovstage_prim_mode_t(0),
        attribute_mode: ovstage_attribute_mode_t(0),
    };
    let mut map = 0;
    // SAFETY: live instance; every pointer below is valid.
    unsafe {
        let vt = i.vt();
        i.done((vt.map_attribute.unwrap())(i.ctx(), q, &desc, 4, std::ptr::null(), 0, &mut map));
        let mut g: ovstage_map_group_t = std::mem::zeroed();
        assert_eq!((vt.fetch_map_next.unwrap())(i.ctx(), map, INFINITE, &mut g).0, OK);
        assert_eq!((g.prims.count, g.data.tensor_count), (3, 1));
        let t = &*g.data.tensors;
        assert_eq!((t.ndim, *t.shape, *t.shape.add(1)), (2, 3, 2));
        let values = std::slice::from_raw_parts_mut(t.data.cast::<f32>(), 6);
        values.copy_from_slice(&[1., 2., 3., 4., 5., 6.]);
        let mut end: ovstage_map_group_t = std::mem::zeroed();
        assert_eq!((vt.fetch_map_next.unwrap())(i.ctx(), map, 0, &mut end).0, END_OF_ITERATION);
        let sync = ovstage_cuda_sync_t { stream: 1, wait_event: 0 };
        assert_eq!((vt.unmap_group.unwrap())(i.ctx(), map, &g, sync).status.0, INVALID_ARGUMENT);
        i.done((vt.unmap_group.unwrap())(i.ctx(), map, &g, ovstage_cuda_sync_t::default()));
        assert_eq!(
            (vt.unmap_group.unwrap())(i.ctx(), map, &g, ovstage_cuda_sync_t::default()).status.0,
            INVALID_HANDLE
        );
        i.done((vt.unmap_attribute.unwrap())(i.ctx(), map, ovstage_cuda_sync_t::default()));
    }
    i.seal(4);
    let groups = i.read_f32(q, &["vel"], LATEST).unwrap();
    assert_eq!(groups[0].rows, vec![vec![1., 2.], vec![3., 4.], vec![5., 6.]]);
}

#[test]
fn filter_queries_report_attributes_and_counts() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/W/A", "/W/B", "/X"]);
    i.done(i.write_f32(q, "mass", 1, &[1., 2., 3.], 1));
    i.seal(1);
    let prefix = [s("/W/")];
    let preds = [ovstage_predicate_t {
        attribute: attr("usd-path"),
        op: ovstage_filter_op_t(3),
        values: prefix.as_ptr(),
        value_count: 1,
    }];
    let filter = ovstage_filter_t { predicates: preds.as_ptr(), count: 1 };
    let mut handle = 0;
    // SAFETY: live instance; valid filter and outputs.
    unsafe {
        let vt = i.vt();
        i.done((vt.query.unwrap())(i.ctx(), &filter, std::ptr::null(), 0, &mut handle));
        let mut r: ovstage_query_result_t = std::mem::zeroed();
        assert_eq!((vt.fetch_query_result.unwrap())(i.ctx(), handle, INFINITE, &mut r).0, OK, "{}", last_error());
        assert_eq!((r.total_prim_count, r.all_handle), (2, handle));
        let attrs = std::slice::from_raw_parts(r.attributes, r.attribute_count);
        assert!(attrs.contains(&i.tokens(&["mass"])[0]));
        assert_eq!((vt.release_query_result.unwrap())(i.ctx(), &r).0, OK);
        assert_eq!((vt.release_query_result.unwrap())(i.ctx(), &r).0, INVALID_HANDLE);
        let groups = i.read_f32(handle, &["mass"], LATEST).unwrap();
        assert_eq!(groups[0].rows, vec![vec![1.0], vec![2.0]]);
        i.done((vt.release_query.unwrap())(i.ctx(), handle));
        let bad_op = [ovstage_predicate_t { op: ovstage_filter_op_t(42), ..preds[0] }];
        let f = ovstage_filter_t { predicates: bad_op.as_ptr(), count: 1 };
        let r = (vt.query.unwrap())(i.ctx(), &f, std::ptr::null(), 0, &mut handle);
        assert_eq!((r.status.0, handle), (NOT_SUPPORTED, 0), "as on the reference");
        assert!(last_error().contains("not a filter operator"));
    }
}

#[test]
fn ordinal_queries_report_floors() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A"]);
    i.done(i.write_f32(q, "a", 4, &[1.0], 1));
    i.seal(4);
    let mut h = 0;
    let mut value = 0;
    // SAFETY: live instance; valid outputs.
    unsafe {
        let vt = i.vt();
        let empty = ovx_string_or_token_t { token: 0, string: ovx_string_t::NONE };
        i.done((vt.get_attribute_write_floor.unwrap())(i.ctx(), empty, &mut h));
        assert_eq!((vt.fetch_ordinal.unwrap())(i.ctx(), h, INFINITE, &mut value).0, OK);
        assert_eq!(value, 4);
        i.done((vt.release_ordinal_query.unwrap())(i.ctx(), h));
        assert_eq!((vt.fetch_ordinal.unwrap())(i.ctx(), h, 0, &mut value).0, INVALID_HANDLE);
        i.done((vt.get_attribute_write_floor.unwrap())(i.ctx(), attr("a"), &mut h));
        assert_eq!((vt.fetch_ordinal.unwrap())(i.ctx(), h, INFINITE, &mut value).0, OK);
        assert_eq!(value, 4);
        i.done((vt.get_oldest_preserved_ordinal.unwrap())(i.ctx(), &mut h));
        assert_eq!((vt.fetch_ordinal.unwrap())(i.ctx(), h, INFINITE, &mut value).0, OK);
        assert!(value <= 4);
        let r = (vt.get_oldest_preserved_ordinal.unwrap())(i.ctx(), std::ptr::null_mut());
        assert_eq!(r.status.0, INVALID_ARGUMENT);
        let desc = ovstage_write_floor_desc_t {
            ordinal: 9,
            scope: ovstage_scope_t(7),
            attributes: std::ptr::null(),
            attribute_count: 0,
        };
        assert_eq!((vt.advance_write_floor.unwrap())(i.ctx(), &desc).status.0, INVALID_ARGUMENT);
        assert_eq!((vt.advance_write_floor.unwrap())(i.ctx(), std::ptr::null()).status.0, INVALID_ARGUMENT);
    }
}

#[test]
fn clone_then_fetch_the_report() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/Src", "/Src/Child"]);
    i.done(i.write_f32(q, "p", 1, &[1., 2.], 1));
    let targets = [s("/T1"), s("/T2")];
    let mut report = ovstage_clone_result_t::default();
    // SAFETY: live instance; valid arrays and outputs.
    unsafe {
        let r = ovstage_clone(i.ptr, s("/Src"), targets.as_ptr(), 2, 2);
        i.done(r);
        assert_eq!(ovstage_fetch_clone_result(i.ptr, r.op_index, INFINITE, &mut report).0, OK);
        assert_eq!((report.ordinal, report.target_count, report.source_prim_count, report.prims_cloned), (2, 2, 2, 4));
        // A target that exists fails the clone with PRIM_NOT_FOUND.
        let again = ovstage_clone(i.ptr, s("/Src"), targets.as_ptr(), 1, 3);
        assert_eq!(again.status.0, OK);
        assert_eq!(i.wait(again.op_index), OP_FAILED);
        assert_eq!(ovstage_fetch_clone_result(i.ptr, again.op_index, INFINITE, &mut report).0, PRIM_NOT_FOUND);
        assert_eq!(report, ovstage_clone_result_t::default(), "zeroed on failure");
        // Not a clone op, empty and duplicate targets.
        let w = i.write_f32(q, "p", 4, &[1., 2.], 1);
        i.done(w);
        assert_eq!(ovstage_fetch_clone_result(i.ptr, w.op_index, 0, &mut report).0, INVALID_HANDLE);
        let bad = [s("")];
        assert_eq!(ovstage_clone(i.ptr, s("/Src"), bad.as_ptr(), 1, 5).status.0, INVALID_ARGUMENT);
        let dup = [s("/D"), s("/D")];
        assert_eq!(ovstage_clone(i.ptr, s("/Src"), dup.as_ptr(), 2, 5).status.0, INVALID_ARGUMENT);
        assert!(last_error().contains("listed twice"), "{}", last_error());
    }
    i.seal(4);
    let tq = i.query(&["/T1/Child", "/T2"]);
    assert_eq!(i.read_f32(tq, &["p"], LATEST).unwrap()[0].rows, vec![vec![2.0], vec![1.0]]);
}

#[test]
fn hierarchy_lookups_list_relatives() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/R", "/R/A", "/R/B"]);
    i.done(i.write_f32(q, "x", 1, &[0., 0., 0.], 1));
    let (dvt, d) = i.dict();
    let paths = [s("/R"), s("/R/A"), s("/Missing")];
    let mut list = 0;
    // SAFETY: live instance and dictionary; valid arrays and outputs.
    unsafe {
        assert_eq!(
            (dvt.create_path_list_from_strings.unwrap())((*d).context, paths.as_ptr(), 3, &mut list).status.0,
            0
        );
        let mut h = 0;
        let r = ovstage_get_hierarchy(i.ptr, list, 42, ovstage_hierarchy_relation_t(1), &mut h);
        i.done(r);
        let mut res: ovstage_hierarchy_result_t = std::mem::zeroed();
        assert_eq!(ovstage_fetch_hierarchy_result(i.ptr, h, &mut res).0, OK, "{}", last_error());
        assert_eq!((res.ordinal, res.input_count), (42, 3));
        let items = std::slice::from_raw_parts(res.items, 3);
        let all = std::slice::from_raw_parts(res.paths, res.path_count);
        let kids: Vec<String> =
            all[items[0].path_offset..][..items[0].path_count].iter().map(|p| text(p.string).unwrap()).collect();
        assert_eq!(kids, ["/R/A", "/R/B"]);
        assert_eq!((items[1].status.0, items[1].path_count), (OK, 0));
        assert_eq!(items[2].status.0, NOT_FOUND);
        assert_eq!(ovstage_release_hierarchy_result(i.ptr, &res).0, OK);
        assert_eq!(ovstage_release_hierarchy_result(i.ptr, &res).0, INVALID_HANDLE);
        i.done(ovstage_release_hierarchy(i.ptr, h));
        let r = ovstage_get_hierarchy(i.ptr, list, 1, ovstage_hierarchy_relation_t(9), &mut h);
        assert_eq!((r.status.0, h), (INVALID_ARGUMENT, 0));
    }
}

#[test]
fn handles_of_another_instance_are_invalid() {
    let _g = shared();
    let (a, b) = (Inst::new(), Inst::new());
    let qa = a.query(&["/A"]);
    let _qb = b.query(&["/B"]);
    a.done(a.write_f32(qa, "v", 1, &[1.0], 1));
    let r = b.write_f32(qa, "v", 1, &[1.0], 1);
    assert_eq!((r.status.0, r.op_index), (INVALID_HANDLE, 0), "{}", last_error());
    let mut read = 0;
    // SAFETY: live instances; valid outputs.
    unsafe {
        let r = (b.vt().read_attributes.unwrap())(b.ctx(), qa, std::ptr::null(), 0, LATEST, &mut read);
        assert_eq!(r.status.0, INVALID_HANDLE);
        // A path list of A's dictionary is unknown to B's.
        let (dvt, d) = a.dict();
        let mut list = 0;
        let one = [s("/X")];
        assert_eq!((dvt.create_path_list_from_strings.unwrap())((*d).context, one.as_ptr(), 1, &mut list).status.0, 0);
        let mut q = 0;
        assert_ne!((b.vt().query_from_path_list.unwrap())(b.ctx(), list, &mut q).0, OK);
        assert_eq!(q, 0);
    }
}
