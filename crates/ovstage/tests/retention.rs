//! Version retention: snapshots inside the window are exact, older ones are
//! OUT_OF_RANGE, and a long write/seal/read loop runs in flat memory.

mod common;

use common::*;
use ovstage::{OrdinalRange, Selection, Stage, StageConfig, Status, StoreStats, Tensor, WriteData};

fn retaining(depth: usize) -> Stage {
    Stage::with_config("retention", StageConfig::default().with_lanes(2).with_history_depth(depth))
}

fn frontier(s: &Stage) -> u64 {
    let h = s.get_oldest_preserved_ordinal().unwrap();
    s.fetch_ordinal(h.handle, LONG).unwrap().get()
}

#[test]
fn the_window_follows_the_floor() {
    let s = retaining(3);
    let q = query(&s, &["/A", "/B"]);
    for t in 1..=10u64 {
        write(&s, q, "x", t, scalars(&[t as f32, -(t as f32)]));
        wait(&s, seal(&s, t));
    }
    assert_eq!(frontier(&s), 7, "three advances behind the floor 10");
    for t in 7..=10u64 {
        let (values, _) = read_f32(&s, q, "x", OrdinalRange::snapshot(t)).unwrap();
        assert_eq!(values, vec![(0, vec![t as f32]), (1, vec![-(t as f32)])], "snapshot at {t}");
    }
    let err = read_groups(&s, q, "x", OrdinalRange::snapshot(6u64)).unwrap_err();
    assert_eq!(err.status(), Status::OutOfRange);
    // Refused at enqueue: the attribute changed between 6 and the frontier.
    let err = s.read_attributes(q, &["x".into()], OrdinalRange::snapshot(6u64)).unwrap_err();
    assert_eq!((err.status(), err.context().attribute.as_deref()), (Status::OutOfRange, Some("x")));
    // So is a snapshot from before the attribute's first write: it has
    // changed since (the published library answers the same).
    let err = s.read_attributes(q, &["x".into()], OrdinalRange::snapshot(0u64)).unwrap_err();
    assert_eq!(err.status(), Status::OutOfRange);
    // An attribute that has not changed since stays exact below the frontier.
    let qc = query(&s, &["/C"]);
    write(&s, qc, "still", 11, scalars(&[42.]));
    for t in 11..=20u64 {
        wait(&s, seal(&s, t));
    }
    assert_eq!(frontier(&s), 17);
    assert_eq!(read_f32(&s, qc, "still", OrdinalRange::snapshot(12u64)).unwrap().0, vec![(0, vec![42.])]);
    assert_eq!(
        read_f32(&s, qc, "still", OrdinalRange::changes(11u64, 20u64).unwrap()).unwrap().0,
        vec![(0, vec![42.])]
    );
}

fn steady_loop(s: &Stage, steps: u64, sparse: bool) -> Vec<StoreStats> {
    let paths = prim_paths(1000);
    let q = query(s, &paths.iter().map(String::as_str).collect::<Vec<_>>());
    let mut samples = Vec::new();
    for t in 1..=steps {
        let values: Vec<[f32; 3]> = (0..1000).map(|i| [t as f32, i as f32, 0.]).collect();
        let mut data = f32x3(&values);
        if sparse && t > 1 {
            data = data.with_selection(Selection::Mask { count: 1000, bits: vec![0x5555_5555_5555_5555; 16] });
        }
        let w = write(s, q, "x", t, data);
        let a = seal(s, t);
        let groups = read_groups(s, q, "x", OrdinalRange::LATEST).unwrap();
        assert_eq!(groups.iter().map(|g| g.len()).sum::<usize>(), 1000);
        drop(groups);
        for op in [w, a] {
            wait(s, op);
            s.release_op(op).unwrap();
        }
        if t % 50 == 0 {
            samples.push(s.stats());
        }
    }
    samples
}

#[test]
fn full_writes_run_in_flat_memory() {
    let s = retaining(2);
    let samples = steady_loop(&s, 400, false);
    let first = samples[1];
    for later in &samples[2..] {
        assert_eq!(later.versions, first.versions, "versions grow: {samples:?}");
        assert_eq!(later.bytes, first.bytes, "bytes grow: {samples:?}");
    }
    assert!(first.versions <= 4, "{first:?}");
    assert!(first.tracked_ops < 16, "released ops are forgotten: {first:?}");
}

#[test]
fn sparse_writes_run_in_flat_memory() {
    let s = retaining(0);
    let samples = steady_loop(&s, 400, true);
    let first = samples[1];
    for later in &samples[2..] {
        assert_eq!((later.versions, later.bytes), (first.versions, first.bytes), "{samples:?}");
    }
}

#[test]
fn a_held_group_pins_only_its_own_version() {
    let s = retaining(0);
    let q = query(&s, &["/A"]);
    write(&s, q, "x", 1, scalars(&[1.]));
    wait(&s, seal(&s, 1));
    let held = read_groups(&s, q, "x", OrdinalRange::LATEST).unwrap();
    for t in 2..=100u64 {
        write(&s, q, "x", t, scalars(&[t as f32]));
        wait(&s, seal(&s, t));
    }
    assert_eq!(held[0].data().unwrap().values::<f32>().unwrap(), &[1.]);
    assert!(s.stats().versions <= 2, "{:?}", s.stats());
}

#[test]
fn unsealed_versions_are_capped_and_the_frontier_says_so() {
    let s = Stage::with_config("capped", StageConfig::default().with_lanes(2).with_max_versions(8));
    let q = query(&s, &["/A", "/B"]);
    let ops: Vec<_> = (1..=200u64).map(|t| write(&s, q, "x", t, scalars(&[t as f32, 0.]))).collect();
    ops.into_iter().for_each(|op| wait(&s, op));
    // Versions still to be published are never merged; once nothing below
    // is pending, the next write merges down to the cap.
    wait(&s, write(&s, q, "x", 201, scalars(&[201., 0.])));
    assert!(s.stats().versions <= 9, "never-sealed writes keep memory bounded: {:?}", s.stats());
    wait(&s, seal(&s, 201));
    let oldest = frontier(&s);
    assert!(oldest > 150 && oldest <= 201, "frontier {oldest} covers the merged spans");
    // Exact at and above the reported frontier, refused inside merged spans.
    for t in oldest..=201 {
        assert_eq!(read_f32(&s, q, "x", OrdinalRange::snapshot(t)).unwrap().0[0], (0, vec![t as f32]), "at {t}");
    }
    // The frontier is the end of a merged span, so the ordinal just below
    // it lies strictly inside that span. (Which ordinals were merged
    // depends on the order the lanes ran the writes in.)
    let e = read_groups(&s, q, "x", OrdinalRange::snapshot(oldest - 1)).unwrap_err();
    assert_eq!(e.status(), Status::OutOfRange, "{e}");
}

#[test]
fn a_producer_beyond_the_cap_keeps_the_oldest_unsealed_versions_exact() {
    // Each write runs before the next is submitted: the merges happen at the
    // head, and the oldest unsealed ticks, which the next advances seal,
    // stay exact; so does the newest.
    let config = StageConfig::default().with_lanes(2).with_max_versions(8).with_history_depth(1000);
    let s = Stage::with_config("head", config);
    let q = query(&s, &["/A"]);
    for t in 1..=100u64 {
        wait(&s, write(&s, q, "x", t, scalars(&[t as f32])));
        assert!(s.stats().versions <= 8, "at {t}: {:?}", s.stats());
    }
    for floor in 1..=6u64 {
        wait(&s, seal(&s, floor));
        assert_eq!(frontier(&s), 0, "nothing merged at or below the floor {floor}");
        for t in 1..=floor {
            assert_eq!(read_f32(&s, q, "x", OrdinalRange::snapshot(t)).unwrap().0, vec![(0, vec![t as f32])]);
        }
    }
    // Ticks 7 to 99 are one span: refused strictly inside it, and the
    // frontier says so once the floor reaches into it.
    wait(&s, seal(&s, 50));
    assert_eq!(frontier(&s), 99);
    assert_eq!(read_groups(&s, q, "x", OrdinalRange::snapshot(50u64)).unwrap_err().status(), Status::OutOfRange);
    wait(&s, seal(&s, 100));
    for t in [99, 100] {
        assert_eq!(read_f32(&s, q, "x", OrdinalRange::snapshot(t)).unwrap().0, vec![(0, vec![t as f32])]);
    }
}

#[test]
fn unsealed_bytes_are_budgeted_and_reads_stay_exact_above_the_merges() {
    // 1000 prims of 100 f32 (400 KB per write) against a 1 MiB budget:
    // beyond the few versions always kept, the newest are merged.
    let config = StageConfig::default().with_lanes(2).with_max_unsealed_bytes(1 << 20);
    let s = Stage::with_config("budget", config);
    let paths = prim_paths(1000);
    let q = query(&s, &paths.iter().map(String::as_str).collect::<Vec<_>>());
    let payload = |t: u64| WriteData::fixed(Tensor::rows(vec![t as f32; 100_000], 100).unwrap());
    for t in 1..=40u64 {
        wait(&s, write(&s, q, "x", t, payload(t)));
        let stats = s.stats();
        let kept = StageConfig::MIN_UNSEALED_VERSIONS;
        assert!(stats.versions <= kept, "at {t}: {stats:?}");
        assert!(stats.bytes <= kept * 400_000, "at {t}: {stats:?}");
    }
    // Kept: the two oldest, one span [3, 39] at the head, and the newest.
    wait(&s, seal(&s, 2));
    assert_eq!(frontier(&s), 0, "the floor is below the merged span");
    wait(&s, seal(&s, 40));
    let oldest = frontier(&s);
    assert_eq!(oldest, 39, "the merged span ends just below the newest version");
    for t in [1, 2, 39, 40] {
        let (values, _) = read_f32(&s, q, "x", OrdinalRange::snapshot(t)).unwrap();
        assert_eq!(values.len(), 1000);
        assert!(values.iter().all(|(_, v)| v.len() == 100 && v.iter().all(|x| *x == t as f32)), "at {t}");
    }
    let err = read_groups(&s, q, "x", OrdinalRange::snapshot(oldest - 1)).unwrap_err();
    assert_eq!(err.status(), Status::OutOfRange);
    // Small payloads are governed by the version cap alone.
    let small = query(&s, &["/Small"]);
    for t in 41..=100u64 {
        wait(&s, write(&s, small, "y", t, scalars(&[t as f32])));
    }
    wait(&s, seal(&s, 100));
    for t in 41..=100u64 {
        assert_eq!(read_f32(&s, small, "y", OrdinalRange::snapshot(t)).unwrap().0, vec![(0, vec![t as f32])]);
    }
}

#[test]
fn seals_of_some_attributes_move_the_frontier() {
    // A loop that seals only the attributes it owns (INCLUDE) while another
    // attribute stays unsealed still retires old history.
    let s = retaining(2);
    let q = query(&s, &["/A"]);
    write(&s, q, "idle", 1, scalars(&[0.]));
    for t in 1..=6u64 {
        write(&s, q, "x", t, scalars(&[t as f32]));
        wait(&s, s.advance_write_floor(t, ovstage::FloorScope::Include(vec!["x".into()])).unwrap());
    }
    assert_eq!(frontier(&s), 4, "two advances behind the highest floor");
    let err = s.read_attributes(q, &["x".into()], OrdinalRange::snapshot(2u64)).unwrap_err();
    assert_eq!(err.status(), Status::OutOfRange);
    let (values, _) = read_f32(&s, q, "x", OrdinalRange::snapshot(5u64)).unwrap();
    assert_eq!(values, vec![(0, vec![5.])]);
}
