//! End-to-end behaviour of writes, floors and reads.

mod common;

use common::*;
use ovstage::{FloorScope, GroupKind, OrdinalRange, PrimMode, Selection, Status};

#[test]
fn write_seal_read_latest_is_one_dense_group() {
    let s = stage(2);
    let q = query(&s, &["/World/A", "/World/B", "/World/C"]);
    write(&s, q, "pos", 5, f32x3(&[[0., 1., 2.], [3., 4., 5.], [6., 7., 8.]]));
    seal(&s, 5);
    let groups = read_groups(&s, q, "pos", OrdinalRange::LATEST).unwrap();
    assert_eq!(groups.len(), 1);
    let g = &groups[0];
    assert_eq!(g.kind(), GroupKind::Values);
    assert_eq!((g.prims().offset, g.prims().count, g.prims().index_map.is_none()), (0, 3, true));
    let data = g.data().unwrap();
    assert_eq!(data.shape(), &[3, 3]);
    assert_eq!(data.strides(), &[3, 1]);
    assert!(data.index_map().is_none());
    assert_eq!(data.values::<f32>().unwrap(), &[0., 1., 2., 3., 4., 5., 6., 7., 8.]);
    assert_eq!(g.meta().write_floor.get(), 5);
    assert_eq!(g.ordinal().get(), 5);
}

#[test]
fn a_fetch_into_a_box_hands_out_the_same_groups_in_the_same_order() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    write(&s, q, "x", 1, scalars(&[1., 2.]));
    write(&s, q, "y", 1, scalars(&[3., 4.]));
    wait(&s, seal(&s, 1));
    let attrs = ["x".into(), "y".into()];
    let plain = s.read_attributes(q, &attrs, OrdinalRange::LATEST).unwrap();
    let boxed = s.read_attributes(q, &attrs, OrdinalRange::LATEST).unwrap();
    for _ in 0..2 {
        let a = s.fetch_read_next(plain.handle, LONG).unwrap().expect("a group");
        let b = s.fetch_read_next_into(boxed.handle, LONG, |g| g).unwrap().expect("a group");
        assert_eq!((a.attribute(), a.prims()), (b.attribute(), b.prims()));
        assert_eq!(a.data().unwrap().values::<f32>().unwrap(), b.data().unwrap().values::<f32>().unwrap());
    }
    assert!(s.fetch_read_next_into(boxed.handle, LONG, |g| g).unwrap().is_none(), "END_OF_ITERATION after the last");
    for r in [plain, boxed] {
        let release = s.release_read(r.handle).unwrap();
        wait(&s, release);
    }
    let err = s.fetch_read_next_into(boxed.handle, LONG, |g| g).unwrap_err();
    assert_eq!(err.status(), Status::InvalidHandle);
}

#[test]
fn snapshots_inside_the_window_are_exact() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    let qb = query(&s, &["/B"]);
    write(&s, q, "x", 1, scalars(&[1., 2.]));
    seal(&s, 1);
    write(&s, qb, "x", 2, scalars(&[20.]));
    seal(&s, 2);
    write(&s, q, "x", 3, scalars(&[100., 200.]));
    let w = seal(&s, 3);
    wait(&s, w);
    let at = |n: u64| read_f32(&s, q, "x", OrdinalRange::snapshot(n)).unwrap().0;
    assert_eq!(at(1), vec![(0, vec![1.]), (1, vec![2.])]);
    assert_eq!(at(2), vec![(0, vec![1.]), (1, vec![20.])]);
    assert_eq!(at(3), vec![(0, vec![100.]), (1, vec![200.])]);
    assert_eq!(at(0), vec![], "nothing existed at 0");
    let (changed, tombs) = read_f32(&s, q, "x", OrdinalRange::changes(2u64, 2u64).unwrap()).unwrap();
    assert_eq!(changed, vec![(1, vec![20.])]);
    assert!(tombs.is_empty());
}

#[test]
fn unsealed_data_is_never_read() {
    let s = stage(2);
    let q = query(&s, &["/A"]);
    write(&s, q, "x", 1, scalars(&[1.]));
    wait(&s, seal(&s, 1));
    wait(&s, write(&s, q, "x", 2, scalars(&[2.])));
    // Latest read above the floor with an unsealed change on the prim fails.
    let err = s.read_attributes(q, &["x".into()], OrdinalRange::LATEST).unwrap_err();
    assert_eq!(err.status(), Status::WriteFloorViolation);
    // A snapshot at the floor does not.
    assert_eq!(read_f32(&s, q, "x", OrdinalRange::snapshot(1u64)).unwrap().0, vec![(0, vec![1.])]);
    // A read of another prim is not affected by the unsealed change.
    let other = query(&s, &["/Other"]);
    assert!(read_groups(&s, other, "x", OrdinalRange::LATEST).unwrap().is_empty());
}

#[test]
fn pipelined_write_seal_read_without_waiting() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    for t in 1..=20u64 {
        write(&s, q, "x", t, scalars(&[t as f32, -(t as f32)]));
        seal(&s, t);
    }
    let (values, _) = read_f32(&s, q, "x", OrdinalRange::LATEST).unwrap();
    assert_eq!(values, vec![(0, vec![20.]), (1, vec![-20.])]);
}

#[test]
fn same_ordinal_writes_apply_in_submission_order() {
    let s = stage(4);
    let q = query(&s, &["/A"]);
    for i in 0..50 {
        write(&s, q, "x", 7, scalars(&[i as f32]));
    }
    seal(&s, 7);
    assert_eq!(read_f32(&s, q, "x", OrdinalRange::LATEST).unwrap().0, vec![(0, vec![49.])]);
}

#[test]
fn held_groups_stay_unchanged_while_writers_continue() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    write(&s, q, "x", 1, scalars(&[1., 2.]));
    seal(&s, 1);
    let held = read_groups(&s, q, "x", OrdinalRange::LATEST).unwrap();
    let before: Vec<f32> = held[0].data().unwrap().values::<f32>().unwrap().to_vec();
    for t in 2..40u64 {
        write(&s, q, "x", t, scalars(&[t as f32, t as f32]));
        seal(&s, t);
    }
    let d = s.wait_ok(seal(&s, 40), LONG);
    assert!(d.is_ok());
    assert_eq!(held[0].data().unwrap().values::<f32>().unwrap(), &before[..]);
    assert_eq!(read_f32(&s, q, "x", OrdinalRange::LATEST).unwrap().0, vec![(0, vec![39.]), (1, vec![39.])]);
}

#[test]
fn deletes_produce_tombstones_and_drop_values() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B", "/C"]);
    let qb = query(&s, &["/B"]);
    write(&s, q, "x", 1, scalars(&[1., 2., 3.]));
    seal(&s, 1);
    s.delete_attributes(qb, &["x".into()], 2u64).unwrap();
    wait(&s, seal(&s, 2));
    let (values, tombs) = read_f32(&s, q, "x", OrdinalRange::LATEST).unwrap();
    assert_eq!(values, vec![(0, vec![1.]), (2, vec![3.])]);
    assert!(tombs.is_empty());
    let (values, tombs) = read_f32(&s, q, "x", OrdinalRange::changes(2u64, 2u64).unwrap()).unwrap();
    assert!(values.is_empty());
    assert_eq!(tombs, vec![1]);
    // The snapshot before the delete still has B.
    assert_eq!(read_f32(&s, q, "x", OrdinalRange::snapshot(1u64)).unwrap().0.len(), 3);
    // Whole-prim delete of C.
    let qc = query(&s, &["/C"]);
    s.delete_attributes(qc, &[], 3u64).unwrap();
    wait(&s, seal(&s, 3));
    assert_eq!(read_f32(&s, q, "x", OrdinalRange::LATEST).unwrap().0, vec![(0, vec![1.])]);
    assert_eq!(read_f32(&s, q, "x", OrdinalRange::changes(1u64, 3u64).unwrap()).unwrap().1, vec![1, 2]);
    assert_eq!(s.stats().prims, 2);
}

#[test]
fn sparse_writes_by_mask_and_index_map() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B", "/C", "/D"]);
    write(&s, q, "x", 1, scalars(&[1., 2., 3., 4.]));
    let masked = scalars(&[10., 20., 30., 40.]).with_selection(Selection::Mask { count: 4, bits: vec![0b1010] });
    write(&s, q, "x", 2, masked);
    let gathered = scalars(&[7., 8.]).with_selection(Selection::IndexMap(vec![1, 1, 0]));
    write(&s, q, "x", 3, gathered);
    wait(&s, seal(&s, 3));
    let at = |n: u64| read_f32(&s, q, "x", OrdinalRange::snapshot(n)).unwrap().0;
    assert_eq!(at(2), vec![(0, vec![1.]), (1, vec![20.]), (2, vec![3.]), (3, vec![40.])]);
    assert_eq!(at(3), vec![(0, vec![8.]), (1, vec![8.]), (2, vec![7.]), (3, vec![40.])]);
}

/// An index map as long as the query writes every prim of it (each from
/// the payload row it names), also into a new attribute and after a write
/// of some prims only.
#[test]
fn an_index_map_over_every_prim_writes_them_all_from_the_rows_it_names() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B", "/C", "/D"]);
    let reversed = || Selection::IndexMap(vec![3, 2, 1, 0]);
    write(&s, q, "y", 1, scalars(&[1., 2., 3., 4.]).with_selection(reversed()));
    write(&s, q, "y", 2, scalars(&[9.]).with_selection(Selection::IndexMap(vec![0, 0])));
    write(&s, q, "y", 3, scalars(&[5., 6., 7., 8.]).with_selection(Selection::IndexMap(vec![1, 1, 3, 2])));
    wait(&s, seal(&s, 3));
    let at = |n: u64| read_f32(&s, q, "y", OrdinalRange::snapshot(n)).unwrap().0;
    assert_eq!(at(1), vec![(0, vec![4.]), (1, vec![3.]), (2, vec![2.]), (3, vec![1.])]);
    assert_eq!(at(2), vec![(0, vec![9.]), (1, vec![9.]), (2, vec![2.]), (3, vec![1.])]);
    assert_eq!(at(3), vec![(0, vec![6.]), (1, vec![6.]), (2, vec![8.]), (3, vec![7.])]);
    let changed = read_f32(&s, q, "y", OrdinalRange::changes(3u64, 3u64).unwrap()).unwrap().0;
    assert_eq!(changed.len(), 4);
}

#[test]
fn queries_in_other_orders_read_through_index_maps() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B", "/C"]);
    write(&s, q, "x", 1, scalars(&[1., 2., 3.]));
    seal(&s, 1);
    let rev = query(&s, &["/C", "/Missing", "/A"]);
    let groups = read_groups(&s, rev, "x", OrdinalRange::LATEST).unwrap();
    assert_eq!(groups.len(), 1);
    let g = &groups[0];
    assert_eq!(g.prims().index_map.as_deref(), Some(&[0u32, 2][..]));
    assert_eq!(g.data().unwrap().index_map(), Some(&[2u32, 0][..]));
    let rows: Vec<(u32, Vec<f32>)> = g.rows::<f32>().unwrap().into_iter().map(|(i, r)| (i, r.to_vec())).collect();
    assert_eq!(rows, vec![(0, vec![3.]), (2, vec![1.])]);
}

#[test]
fn insert_mode_creates_only() {
    let s = stage(2);
    let q = query(&s, &["/A"]);
    let op = s.write_attribute(q, "x", 1u64, scalars(&[1.]), PrimMode::Insert).unwrap();
    wait(&s, op);
    let err = s.write_attribute(q, "y", 2u64, scalars(&[1.]), PrimMode::Insert).unwrap_err();
    assert_eq!(err.status(), Status::PrimNotFound);
    assert_eq!(err.context().prim.as_deref(), Some("/A"));
}

#[test]
fn floor_scopes() {
    let s = stage(2);
    let q = query(&s, &["/A"]);
    write(&s, q, "a", 10, scalars(&[1.]));
    write(&s, q, "b", 10, scalars(&[1.]));
    wait(&s, s.advance_write_floor(10u64, FloorScope::Include(vec!["a".into()])).unwrap());
    let floor = |attr: Option<&str>| {
        let h = s.get_attribute_write_floor(attr.map(Into::into)).unwrap();
        s.fetch_ordinal(h.handle, LONG).unwrap().get()
    };
    assert_eq!((floor(Some("a")), floor(Some("b")), floor(None)), (10, 0, 0));
    wait(&s, s.advance_write_floor(20u64, FloorScope::Exclude(vec!["a".into()])).unwrap());
    assert_eq!((floor(Some("a")), floor(Some("b")), floor(None), floor(Some("new"))), (10, 20, 10, 0));
    wait(&s, s.advance_write_floor(5u64, FloorScope::All).unwrap());
    assert_eq!((floor(Some("a")), floor(Some("b")), floor(None), floor(Some("new"))), (10, 20, 10, 5));
    // Clamps: never regresses.
    wait(&s, s.advance_write_floor(3u64, FloorScope::All).unwrap());
    assert_eq!(floor(Some("new")), 5);
    let err = s.write_attribute(q, "a", 9u64, scalars(&[1.]), PrimMode::Upsert).unwrap_err();
    assert_eq!(err.status(), Status::WriteFloorViolation);
    assert!(s.write_attribute(q, "c", 6u64, scalars(&[1.]), PrimMode::Upsert).is_ok());
}

#[test]
fn reads_observe_floor_advances_submitted_before_them() {
    // A large write keeps a lane busy; the read is submitted right after the
    // advance that seals it, without waiting, and must still see it.
    let s = stage(2);
    let n = 1 << 16;
    let paths = prim_paths(n);
    let q = query(&s, &paths.iter().map(String::as_str).collect::<Vec<_>>());
    let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
    write(&s, q, "x", 1, scalars(&values));
    seal(&s, 1);
    let groups = read_groups(&s, q, "x", OrdinalRange::LATEST).unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].data().unwrap().values::<f32>().unwrap(), &values[..]);
}

#[test]
fn transform_attribute_aliases_share_one_column() {
    // `omni:xform` is stored as `omni:fabric:localMatrix`: one column, one
    // floor, one history; groups carry the name they were asked by.
    let s = stage(2);
    let q = query(&s, &["/A"]);
    wait(&s, write(&s, q, "omni:xform", 1, scalars(&[1.])));
    wait(&s, write(&s, q, "omni:fabric:localMatrix", 2, scalars(&[2.])));
    let e = s.write_attribute(q, "omni:xform", 3u64, f32x3(&[[0.; 3]]), PrimMode::Upsert).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "one schema for both names: {e}");
    wait(&s, s.advance_write_floor(2u64, FloorScope::Include(vec!["omni:xform".into()])).unwrap());
    let h = s.get_attribute_write_floor(Some("omni:fabric:localMatrix".into())).unwrap();
    assert_eq!(s.fetch_ordinal(h.handle, LONG).unwrap().get(), 2);
    for name in ["omni:xform", "omni:fabric:localMatrix"] {
        let groups = read_groups(&s, q, name, OrdinalRange::snapshot(2u64)).unwrap();
        assert_eq!(groups.len(), 1);
        assert_eq!(s.paths().token_text(groups[0].attribute()).unwrap().as_ref(), name);
        assert_eq!(groups[0].data().unwrap().values::<f32>().unwrap(), &[2.]);
    }
}
