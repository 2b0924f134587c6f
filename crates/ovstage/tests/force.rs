//! `ATTRIBUTE_MODE_FORCE`: a write, batch entry or map session replacing a
//! target prim's differing schema (dtype, lanes, kind, semantic), what reads
//! show before, at and after the replacement, and ordering with pending
//! writes.

mod common;

use common::*;
use ovstage::{
    AttributeMode, AttributeWrite, DType, GroupKind, MapDesc, OrdinalRange, PrimMode, QueryHandle, Selection, Semantic,
    Stage, StageConfig, Status, Tensor, Timeout, WriteData,
};

/// One group of a read: tombstones or values, element type, array or
/// fixed, semantic, ordinal, and `(index in the query, values)` per prim.
#[derive(Debug, PartialEq)]
struct Seen {
    deleted: bool,
    dtype: Option<DType>,
    array: bool,
    semantic: Semantic,
    ordinal: u64,
    rows: Vec<(u32, Vec<f64>)>,
}

fn seen(s: &Stage, q: QueryHandle, attr: &str, range: OrdinalRange) -> Vec<Seen> {
    let mut out: Vec<Seen> = read_groups(s, q, attr, range)
        .unwrap()
        .iter()
        .map(|g| {
            let deleted = g.kind() == GroupKind::Tombstones;
            let dtype = g.data().map(|d| d.dtype());
            let rows = if deleted {
                (0..g.len()).map(|i| (g.prims().list_index(i), Vec::new())).collect()
            } else {
                match dtype {
                    Some(DType::F32) => g
                        .rows::<f32>()
                        .unwrap()
                        .into_iter()
                        .map(|(i, r)| (i, r.iter().map(|v| f64::from(*v)).collect()))
                        .collect(),
                    Some(DType::I32) => g
                        .rows::<i32>()
                        .unwrap()
                        .into_iter()
                        .map(|(i, r)| (i, r.iter().map(|v| f64::from(*v)).collect()))
                        .collect(),
                    other => panic!("unexpected dtype {other:?}"),
                }
            };
            Seen { deleted, dtype, array: g.is_array(), semantic: g.semantic(), ordinal: g.ordinal().get(), rows }
        })
        .collect();
    out.sort_by_key(|g| (g.deleted, g.rows.first().map(|r| r.0), g.array));
    out
}

fn values(dtype: DType, array: bool, semantic: Semantic, ordinal: u64, rows: &[(u32, &[f64])]) -> Seen {
    let rows = rows.iter().map(|(i, v)| (*i, v.to_vec())).collect();
    Seen { deleted: false, dtype: Some(dtype), array, semantic, ordinal, rows }
}

fn tombstones(array: bool, semantic: Semantic, ordinal: u64, prims: &[u32]) -> Seen {
    let rows = prims.iter().map(|i| (*i, Vec::new())).collect();
    Seen { deleted: true, dtype: None, array, semantic, ordinal, rows }
}

fn force(data: WriteData) -> WriteData {
    data.with_attribute_mode(AttributeMode::Force)
}

fn ints(values: &[i32]) -> WriteData {
    WriteData::fixed(Tensor::rows(values.to_vec(), 1).unwrap())
}

fn status(r: ovstage::Result<ovstage::OpId>) -> Status {
    r.map(|_| Status::Ok).unwrap_or_else(|e| e.status())
}

#[test]
fn a_forcing_write_replaces_the_dtype_and_reads_show_the_replacement() {
    let s = stage(2);
    let all = query(&s, &["/A", "/B", "/C"]);
    let ab = query(&s, &["/A", "/B"]);
    wait(&s, write(&s, all, "x", 1, ints(&[1, 2, 3])));
    // REJECT: a schema conflict, provable now.
    let rejected = s.write_attribute(ab, "x", 2u64, scalars(&[4., 5.]), PrimMode::Upsert).unwrap_err();
    assert_eq!(rejected.status(), Status::InvalidArgument);
    assert!(rejected.message().contains("ATTRIBUTE_MODE_FORCE"), "{}", rejected.message());
    wait(&s, write(&s, ab, "x", 2, force(scalars(&[4., 5.]))));
    wait(&s, seal(&s, 2));

    // Before: the old schema on every prim.
    let before = vec![values(DType::I32, false, Semantic::None, 1, &[(0, &[1.]), (1, &[2.]), (2, &[3.])])];
    assert_eq!(seen(&s, all, "x", OrdinalRange::snapshot(1u64)), before);
    // At and after: the new schema on the replaced prims, the old one on
    // the other, in separate groups.
    let latest = seen(&s, all, "x", OrdinalRange::LATEST);
    assert_eq!(
        latest,
        vec![
            values(DType::F32, false, Semantic::None, 2, &[(0, &[4.]), (1, &[5.])]),
            values(DType::I32, false, Semantic::None, 2, &[(2, &[3.])]),
        ]
    );
    assert_eq!(seen(&s, all, "x", OrdinalRange::snapshot(2u64)), latest);
    // A change range over it: a tombstone of the old schema and the value.
    let at = seen(&s, all, "x", OrdinalRange::changes(2u64, 2u64).unwrap());
    assert_eq!(
        at,
        vec![
            values(DType::F32, false, Semantic::None, 2, &[(0, &[4.]), (1, &[5.])]),
            tombstones(false, Semantic::None, 2, &[0, 1]),
        ]
    );
    assert_eq!(seen(&s, all, "x", OrdinalRange::changes(1u64, 1u64).unwrap()), before);
}

#[test]
fn forcing_with_no_change_and_onto_prims_without_the_attribute_writes_as_usual() {
    let s = stage(1);
    let ab = query(&s, &["/A", "/B"]);
    let abc = query(&s, &["/A", "/B", "/C"]);
    wait(&s, write(&s, ab, "x", 1, force(scalars(&[1., 2.]))));
    wait(&s, write(&s, abc, "x", 2, force(scalars(&[3., 4., 5.]))));
    wait(&s, seal(&s, 2));
    // One schema, no tombstone anywhere.
    assert_eq!(
        seen(&s, abc, "x", OrdinalRange::changes(0u64, 2u64).unwrap()),
        vec![values(DType::F32, false, Semantic::None, 2, &[(0, &[3.]), (1, &[4.]), (2, &[5.])])]
    );
}

#[test]
fn forcing_changes_lanes_kind_and_semantic() {
    let s = stage(2);
    let ab = query(&s, &["/A", "/B"]);
    let a = query(&s, &["/A"]);
    let cd = query(&s, &["/C", "/D"]);
    let all = query(&s, &["/A", "/B", "/C", "/D"]);
    // Fixed to array on one prim, then back.
    wait(&s, write(&s, ab, "k", 1, scalars(&[1., 2.])));
    let row = || WriteData::array_rows(vec![Tensor::rows(vec![7f32, 8., 9.], 1).unwrap()]);
    assert_eq!(status(s.write_attribute(a, "k", 2u64, row(), PrimMode::Upsert)), Status::InvalidArgument);
    wait(&s, write(&s, a, "k", 2, force(row())));
    wait(&s, seal(&s, 2));
    assert_eq!(
        seen(&s, ab, "k", OrdinalRange::changes(2u64, 2u64).unwrap()),
        vec![
            values(DType::F32, true, Semantic::None, 2, &[(0, &[7., 8., 9.])]),
            tombstones(false, Semantic::None, 2, &[0]),
        ]
    );
    wait(&s, write(&s, ab, "k", 3, force(scalars(&[5., 6.]))));
    wait(&s, seal(&s, 3));
    assert_eq!(
        seen(&s, ab, "k", OrdinalRange::changes(3u64, 3u64).unwrap()),
        vec![
            values(DType::F32, false, Semantic::None, 3, &[(0, &[5.]), (1, &[6.])]),
            tombstones(true, Semantic::None, 3, &[0]),
        ]
    );
    // The array version is still there at 2.
    assert_eq!(seen(&s, a, "k", OrdinalRange::snapshot(2u64))[0].rows, vec![(0, vec![7., 8., 9.])]);

    // Semantic: POINT to NORMAL on one prim; the other keeps POINT.
    let v3 = |v: f32| f32x3(&[[v; 3]; 2]);
    wait(&s, write(&s, ab, "p", 4, v3(1.).with_semantic(Semantic::Point)));
    let normal = || f32x3(&[[0., 0., 1.]]).with_semantic(Semantic::Normal);
    assert_eq!(status(s.write_attribute(a, "p", 5u64, normal(), PrimMode::Upsert)), Status::InvalidArgument);
    wait(&s, write(&s, a, "p", 5, force(normal())));
    // Written with no semantic over the two roles: ambiguous, refused
    // (REJECT and FORCE alike); one prim alone keeps its role.
    for data in [v3(2.), force(v3(2.))] {
        assert_eq!(status(s.write_attribute(ab, "p", 6u64, data, PrimMode::Upsert)), Status::InvalidArgument);
    }
    wait(&s, write(&s, a, "p", 6, force(f32x3(&[[2.; 3]]))));
    // Prims without the attribute author their own role.
    wait(&s, write(&s, cd, "p", 7, v3(3.).with_semantic(Semantic::Color)));
    wait(&s, seal(&s, 7));
    let latest = seen(&s, all, "p", OrdinalRange::LATEST);
    let roles: Vec<(Semantic, Vec<u32>)> =
        latest.iter().map(|g| (g.semantic, g.rows.iter().map(|r| r.0).collect())).collect();
    assert_eq!(
        roles,
        vec![(Semantic::Normal, vec![0]), (Semantic::Point, vec![1]), (Semantic::Color, vec![2, 3])],
        "{latest:?}"
    );
    assert_eq!(latest[0].rows, vec![(0, vec![2., 2., 2.])]);
    let at5 = seen(&s, all, "p", OrdinalRange::changes(5u64, 5u64).unwrap());
    assert!(at5.contains(&tombstones(false, Semantic::Point, 5, &[0])), "{at5:?}");
}

#[test]
fn a_batch_mixes_forcing_and_ordinary_entries() {
    let s = stage(2);
    let ab = query(&s, &["/A", "/B"]);
    wait(&s, write(&s, ab, "d", 1, ints(&[1, 2])));
    let batch = vec![
        AttributeWrite { attribute: "d".into(), data: force(scalars(&[3., 4.])) },
        AttributeWrite { attribute: "e".into(), data: scalars(&[5., 6.]) },
    ];
    wait(&s, s.write_attributes(ab, batch, 2u64, PrimMode::Upsert).unwrap());
    // A conflicting ordinary entry fails the whole batch at enqueue: the
    // forcing entry is not applied either.
    let batch = vec![
        AttributeWrite { attribute: "e".into(), data: force(ints(&[7, 8])) },
        AttributeWrite { attribute: "d".into(), data: ints(&[9, 9]) },
    ];
    assert_eq!(status(s.write_attributes(ab, batch, 3u64, PrimMode::Upsert)), Status::InvalidArgument);
    wait(&s, seal(&s, 3));
    assert_eq!(
        seen(&s, ab, "d", OrdinalRange::changes(2u64, 3u64).unwrap()),
        vec![
            values(DType::F32, false, Semantic::None, 2, &[(0, &[3.]), (1, &[4.])]),
            tombstones(false, Semantic::None, 2, &[0, 1]),
        ]
    );
    assert_eq!(
        seen(&s, ab, "e", OrdinalRange::LATEST),
        vec![values(DType::F32, false, Semantic::None, 2, &[(0, &[5.]), (1, &[6.])])]
    );
}

#[test]
fn a_forcing_map_session_replaces_the_schema_when_it_commits() {
    let s = stage(2);
    let ab = query(&s, &["/A", "/B"]);
    wait(&s, write(&s, ab, "m", 1, ints(&[1, 2])));
    wait(&s, seal(&s, 1));
    let f3 = DType::F32.with_lanes(3);
    // REJECT refuses another dtype at setup; FORCE needs a dtype.
    assert_eq!(s.map_attribute(ab, MapDesc::new("m", f3), 2u64, None).unwrap_err().status(), Status::InvalidArgument);
    let no_dtype = MapDesc { attribute_mode: AttributeMode::Force, ..MapDesc::existing("m") };
    assert_eq!(s.map_attribute(ab, no_dtype, 2u64, None).unwrap_err().status(), Status::InvalidArgument);
    let desc = MapDesc { attribute_mode: AttributeMode::Force, ..MapDesc::new("m", f3) };
    let map = s.map_attribute(ab, desc.clone(), 2u64, None).unwrap();
    let mut g = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().unwrap();
    g.values_mut::<f32>(0).unwrap().copy_from_slice(&[1., 1., 1., 2., 2., 2.]);
    // Nothing is replaced before the commit.
    assert_eq!(seen(&s, ab, "m", OrdinalRange::snapshot(1u64))[0].dtype, Some(DType::I32));
    wait(&s, s.unmap_attribute(map.handle, [g]).unwrap());
    wait(&s, seal(&s, 2));
    assert_eq!(
        seen(&s, ab, "m", OrdinalRange::changes(2u64, 2u64).unwrap()),
        vec![
            values(DType::F32, false, Semantic::None, 2, &[(0, &[1., 1., 1.]), (1, &[2., 2., 2.])]),
            tombstones(false, Semantic::None, 2, &[0, 1]),
        ]
    );
    // FORCE with the same schema again: an ordinary session.
    let map = s.map_attribute(ab, desc, 3u64, None).unwrap();
    let mut g = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().unwrap();
    g.values_mut::<f32>(0).unwrap().fill(4.);
    wait(&s, s.unmap_attribute(map.handle, [g]).unwrap());
    wait(&s, seal(&s, 3));
    assert_eq!(
        seen(&s, ab, "m", OrdinalRange::changes(3u64, 3u64).unwrap()),
        vec![values(DType::F32, false, Semantic::None, 3, &[(0, &[4.; 3]), (1, &[4.; 3])])]
    );
}

#[test]
fn forcing_runs_after_pending_writes_and_before_later_ones() {
    for lanes in [1, 4] {
        let s = stage(lanes);
        let paths = prim_paths(64);
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let q = query(&s, &refs);
        let half = query(&s, &refs[..32]);
        let rest = query(&s, &refs[32..]);
        let mut ops = Vec::new();
        // Nothing waited for: old-schema writes, the replacement on half
        // the prims, then new-schema writes to that half and old-schema
        // writes to the rest, all pending together.
        for o in 1..=20u64 {
            ops.push(write(&s, q, "w", o, scalars(&[o as f32; 64])));
        }
        ops.push(write(&s, half, "w", 21, force(f32x3(&[[21.; 3]; 32]))));
        for o in 22..=40u64 {
            ops.push(write(&s, half, "w", o, f32x3(&[[o as f32; 3]; 32])));
            ops.push(write(&s, rest, "w", o, scalars(&[o as f32; 32])));
        }
        ops.push(seal(&s, 40));
        for op in ops {
            wait(&s, op);
        }
        let at20 = seen(&s, q, "w", OrdinalRange::snapshot(20u64));
        assert_eq!(at20.len(), 1);
        assert!(at20[0].rows.iter().all(|r| r.1 == vec![20.]), "lanes={lanes}");
        let latest = seen(&s, q, "w", OrdinalRange::LATEST);
        assert_eq!(latest.len(), 2, "lanes={lanes}: {latest:?}");
        assert!(latest[0].rows.iter().all(|r| r.0 < 32 && r.1 == vec![40.; 3]), "lanes={lanes}");
        assert!(latest[1].rows.iter().all(|r| r.0 >= 32 && r.1 == vec![40.]), "lanes={lanes}");
        let at21 = seen(&s, q, "w", OrdinalRange::changes(21u64, 21u64).unwrap());
        assert!(at21.iter().any(|g| g.deleted && g.rows.len() == 32), "lanes={lanes}: {at21:?}");
    }
}

#[test]
fn a_masked_forcing_write_replaces_only_the_selected_prims() {
    let s = stage(2);
    let all = query(&s, &["/A", "/B", "/C", "/D"]);
    wait(&s, write(&s, all, "s", 1, scalars(&[1., 2., 3., 4.])));
    let rows =
        f32x3(&[[1.; 3], [0.; 3], [3.; 3], [0.; 3]]).with_selection(Selection::Mask { count: 4, bits: vec![0b0101] });
    wait(&s, write(&s, all, "s", 2, force(rows)));
    wait(&s, seal(&s, 2));
    assert_eq!(
        seen(&s, all, "s", OrdinalRange::changes(2u64, 2u64).unwrap()),
        vec![
            values(DType::F32, false, Semantic::None, 2, &[(0, &[1.; 3]), (2, &[3.; 3])]),
            tombstones(false, Semantic::None, 2, &[0, 2]),
        ]
    );
    // The unselected prims keep the old schema.
    let latest = seen(&s, all, "s", OrdinalRange::LATEST);
    assert_eq!(latest[1].rows, vec![(1, vec![2.]), (3, vec![4.])]);
}

/// `width` lanes of `value` per prim of `prims`, forcing the schema.
fn wide(prims: usize, width: u16, value: f32) -> WriteData {
    force(WriteData::fixed(Tensor::rows(vec![value; prims * usize::from(width)], width).unwrap()))
}

/// A loop that replaces an attribute's schema every tick (a new tuple
/// width each time) holds a bounded number of columns: once the retention
/// frontier has passed a schema's last cells, its column goes. Reads inside
/// the window stay exact, and a change read reaching back to a dropped
/// column's last change is out of range rather than silently missing its
/// tombstones.
#[test]
fn replaced_schemas_are_dropped_once_the_frontier_passes_them() {
    let s = Stage::with_config("force loop", StageConfig::default().with_lanes(2).with_history_depth(3));
    let q = query(&s, &["/A", "/B"]);
    let ticks = 40u64;
    let mut columns = Vec::new();
    for t in 1..=ticks {
        let ops = [write(&s, q, "x", t, wide(2, t as u16, t as f32)), seal(&s, t)];
        for op in ops {
            wait(&s, op);
            s.release_op(op).unwrap();
        }
        columns.push(s.stats().columns);
    }
    let most = *columns.iter().max().unwrap();
    assert!(most <= 6, "columns held per tick: {columns:?}");
    let frontier = {
        let h = s.get_oldest_preserved_ordinal().unwrap();
        s.fetch_ordinal(h.handle, LONG).unwrap().get()
    };
    assert_eq!(frontier, ticks - 3);
    // Every snapshot inside the window: its tick's width and value.
    for t in frontier..=ticks {
        let groups = read_groups(&s, q, "x", OrdinalRange::snapshot(t)).unwrap();
        let got: Vec<(usize, u16, Vec<f32>)> = groups
            .iter()
            .map(|g| {
                let rows = g.rows::<f32>().unwrap();
                (g.len(), rows[0].1.len() as u16, rows.iter().flat_map(|r| r.1.iter().copied()).collect())
            })
            .collect();
        assert_eq!(got, vec![(2, t as u16, vec![t as f32; 2 * t as usize])], "snapshot at {t}");
    }
    // Changes since the frontier: the newest write and the tombstones it
    // left in the previous schema's column (still held).
    let since = seen(&s, q, "x", OrdinalRange::changes(ticks, ticks).unwrap());
    assert_eq!(since.len(), 2, "{since:?}");
    assert!(since[0].rows.len() == 2 && !since[0].deleted && since[1].deleted, "{since:?}");
    // Reaching back past a dropped column's last change: out of range.
    let err = read_groups(&s, q, "x", OrdinalRange::changes(2u64, ticks).unwrap()).unwrap_err();
    assert_eq!((err.status(), err.context().attribute.as_deref()), (Status::OutOfRange, Some("x")));
    let err = s.read_attributes(q, &["x".into()], OrdinalRange::snapshot(5u64)).unwrap_err();
    assert_eq!(err.status(), Status::OutOfRange);
    // A schema dropped earlier can be written again: a new column.
    wait(&s, write(&s, q, "x", ticks + 1, wide(2, 1, -1.)));
    wait(&s, seal(&s, ticks + 1));
    let latest = seen(&s, q, "x", OrdinalRange::LATEST);
    assert_eq!(latest, vec![values(DType::F32, false, Semantic::None, ticks + 1, &[(0, &[-1.]), (1, &[-1.])])]);
}

/// Deleting an attribute from every prim keeps its last column (the
/// attribute still exists, with that schema), and a pending mutation of the
/// attribute (here a map session, open while the frontier passes the dead
/// column) keeps every column until it has run.
#[test]
fn an_attribute_deleted_everywhere_keeps_one_column() {
    let s = Stage::with_config("deleted", StageConfig::default().with_lanes(2).with_history_depth(1));
    let q = query(&s, &["/A", "/B"]);
    wait(&s, write(&s, q, "x", 1, ints(&[1, 2])));
    wait(&s, write(&s, q, "x", 2, force(scalars(&[3., 4.]))));
    wait(&s, s.delete_attributes(q, &["x".into()], 3u64).unwrap());
    let map = s.map_attribute(q, MapDesc::new("x", DType::F32), 20u64, None).unwrap();
    for t in 1..=8u64 {
        wait(&s, seal(&s, t));
    }
    assert_eq!(s.stats().columns, 2, "nothing goes while the session is pending");
    let mut g = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().unwrap();
    g.values_mut::<f32>(0).unwrap().copy_from_slice(&[5., 6.]);
    wait(&s, s.unmap_attribute(map.handle, [g]).unwrap());
    for t in 20..=22u64 {
        wait(&s, seal(&s, t));
    }
    assert_eq!(s.stats().columns, 1, "the i32 column went, the f32 one stays");
    assert_eq!(
        seen(&s, q, "x", OrdinalRange::LATEST),
        vec![values(DType::F32, false, Semantic::None, 20, &[(0, &[5.]), (1, &[6.])])]
    );
    // Deleted everywhere again: the last column stays, and its schema is
    // the attribute's (written again without forcing, it is accepted).
    wait(&s, s.delete_attributes(q, &["x".into()], 23u64).unwrap());
    for t in 23..=26u64 {
        wait(&s, seal(&s, t));
    }
    assert_eq!(s.stats().columns, 1);
    assert!(seen(&s, q, "x", OrdinalRange::LATEST).is_empty());
    wait(&s, write(&s, q, "x", 27, scalars(&[7., 8.])));
    wait(&s, seal(&s, 27));
    assert_eq!(
        seen(&s, q, "x", OrdinalRange::LATEST),
        vec![values(DType::F32, false, Semantic::None, 27, &[(0, &[7.]), (1, &[8.])])]
    );
}

/// A snapshot below the frontier is served only where nothing changed
/// since; a dropped column's last change counts, although the column is
/// gone: the read is out of range, not missing that column's cells.
#[test]
fn a_snapshot_below_a_dropped_columns_last_change_is_out_of_range() {
    let s = Stage::with_config("below", StageConfig::default().with_lanes(2).with_history_depth(1));
    let (a, b) = (query(&s, &["/A"]), query(&s, &["/B"]));
    wait(&s, write(&s, b, "x", 1, wide(1, 2, 2.)));
    wait(&s, write(&s, a, "x", 1, wide(1, 1, 1.)));
    wait(&s, s.delete_attributes(a, &["x".into()], 2u64).unwrap());
    for t in 1..=6u64 {
        wait(&s, seal(&s, t));
    }
    assert_eq!(s.stats().columns, 1, "/A's column went");
    let ab = query(&s, &["/A", "/B"]);
    let err = s.read_attributes(ab, &["x".into()], OrdinalRange::snapshot(1u64)).unwrap_err();
    assert_eq!((err.status(), err.context().ordinal.map(|o| o.get())), (Status::OutOfRange, Some(1)));
    // /B's column has not changed since 1: a snapshot after the drop is
    // still served below the frontier.
    assert_eq!(seen(&s, ab, "x", OrdinalRange::snapshot(3u64)).len(), 1);
}

/// A producer replacing the schema every tick without waiting (writes and
/// seals pipelined, so mutations are often pending while the trim looks
/// for dead columns), beside a reader of the newest sealed values: every
/// read is one tick's values in that tick's width, never a torn or lost
/// one (or, when the frontier passed its ordinal before it ran, out of
/// range), and dead columns go.
#[test]
fn schema_replacement_under_a_concurrent_reader() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    const TICKS: u64 = 400;
    let width = |t: u64| (t % 5 + 1) as u16;
    let s = Stage::with_config("force stress", StageConfig::default().with_lanes(2).with_history_depth(2));
    let q = query(&s, &["/A", "/B"]);
    let (done, sealed, reads) = (AtomicBool::new(false), AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut served = 0u32;
            while !done.load(Ordering::Acquire) {
                let at = sealed.load(Ordering::Acquire);
                let got = read_groups(&s, q, "x", OrdinalRange::snapshot(at));
                reads.fetch_add(1, Ordering::Release);
                let groups = match got {
                    Ok(groups) => groups,
                    Err(e) if e.status() == Status::OutOfRange => continue,
                    Err(e) => panic!("read at {at}: {e}"),
                };
                if at == 0 {
                    assert!(groups.is_empty());
                    continue;
                }
                assert_eq!(groups.len(), 1, "both prims in one schema at {at}");
                let rows = groups[0].rows::<f32>().unwrap();
                assert_eq!(rows.len(), 2);
                for (_, row) in &rows {
                    assert_eq!(row.len(), usize::from(width(at)), "tick {at} in its width");
                    assert!(row.iter().all(|v| *v as u64 == at), "tick {at}'s values: {row:?}");
                }
                served += 1;
            }
            served
        });
        let mut pending = Vec::new();
        for t in 1..=TICKS {
            pending.push(write(&s, q, "x", t, wide(2, width(t), t as f32)));
            pending.push(seal(&s, t));
            if t % 8 == 0 {
                for op in pending.drain(..) {
                    wait(&s, op);
                    s.release_op(op).unwrap();
                }
                sealed.store(t, Ordering::Release);
                // Paced by the reader: it reads between every batch.
                let before = reads.load(Ordering::Acquire);
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                while reads.load(Ordering::Acquire) < before + 2 && std::time::Instant::now() < deadline {
                    std::thread::yield_now();
                }
            }
        }
        for op in pending.drain(..) {
            wait(&s, op);
            s.release_op(op).unwrap();
        }
        done.store(true, Ordering::Release);
        let served = reader.join().unwrap();
        assert!(served >= 25, "the reader was served {served} times");
    });
    let latest = seen(&s, q, "x", OrdinalRange::LATEST);
    assert_eq!(latest.len(), 1);
    assert_eq!(latest[0].ordinal, TICKS);
    assert!(s.stats().columns < 5, "dead columns went: {}", s.stats().columns);
}
