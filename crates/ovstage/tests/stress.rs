//! Several threads submitting at once: writers running ahead (copy-in
//! writes, and a mapper filling map sessions), a sealer advancing the floor
//! behind them, readers checking every read and holding groups while the
//! writers go on. No write may be lost and no read may see unsealed data.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use common::*;
use ovstage::{
    DType, FloorScope, GroupKind, MapDesc, OrdinalRange, PrimMode, QueryHandle, ReadGroup, Stage, StageConfig, Status,
    Timeout,
};

const WRITERS: usize = 3;
const PRIMS_PER_WRITER: usize = 32;
const TICKS: u64 = 300;

fn value(tick: u64, writer: usize) -> f32 {
    (tick * 100 + writer as u64) as f32
}

/// Checks one read group set: every prim holds the same tick, at most
/// `bound`; returns that tick.
fn check(groups: &[ReadGroup], writers: usize, bound: u64) -> Option<u64> {
    let mut tick = None;
    let mut seen = 0;
    for g in groups {
        assert_eq!(g.kind(), GroupKind::Values);
        for (i, row) in g.rows::<f32>().unwrap() {
            let v = row[0] as u64;
            let (t, w) = (v / 100, (v % 100) as usize);
            assert_eq!(w, i as usize / PRIMS_PER_WRITER, "prim {i} holds another writer's value");
            assert!(t <= bound, "read tick {t} above the sealed floor {bound}");
            assert!(tick.is_none_or(|x| x == t), "torn read: ticks {tick:?} and {t}");
            tick = Some(t);
            seen += 1;
        }
    }
    if tick.is_some() {
        assert_eq!(seen, writers * PRIMS_PER_WRITER, "a prim is missing from the read");
    }
    tick
}

fn floor(stage: &Stage) -> u64 {
    let h = stage.get_attribute_write_floor(Some("x".into())).unwrap();
    let f = stage.fetch_ordinal(h.handle, Timeout::INFINITE).unwrap().get();
    stage.release_ordinal_query(h.handle).unwrap();
    f
}

fn stress(lanes: usize) {
    // Keep every version, so a snapshot at a floor fetched earlier is still
    // exact however far the writers and the sealer got since.
    let config = StageConfig::default().with_lanes(lanes).with_history_depth(100_000).with_max_versions(100_000);
    let s = Stage::with_config("stress", config);
    let all: Vec<String> =
        (0..WRITERS * PRIMS_PER_WRITER).map(|i| format!("/World/W{}/P{}", i / PRIMS_PER_WRITER, i)).collect();
    let all_q = query(&s, &all.iter().map(String::as_str).collect::<Vec<_>>());
    let writer_q: Vec<QueryHandle> = (0..WRITERS)
        .map(|w| {
            query(
                &s,
                &all[w * PRIMS_PER_WRITER..(w + 1) * PRIMS_PER_WRITER].iter().map(String::as_str).collect::<Vec<_>>(),
            )
        })
        .collect();
    // One progress slot per writer, plus the mapper's.
    let progress: Vec<AtomicU64> = (0..=WRITERS).map(|_| AtomicU64::new(0)).collect();
    let done = AtomicBool::new(false);
    let held: std::sync::Mutex<Vec<(ReadGroup, Vec<f32>)>> = Default::default();
    thread::scope(|scope| {
        for (w, q) in writer_q.iter().enumerate() {
            let (s, progress) = (&s, &progress);
            scope.spawn(move || {
                let mut ops = Vec::new();
                for tick in 1..=TICKS {
                    let data = scalars(&[value(tick, w); PRIMS_PER_WRITER]);
                    ops.push(
                        s.write_attribute(*q, "x", tick, data, PrimMode::Upsert).expect("writer ahead of the floor"),
                    );
                    progress[w].store(tick, Ordering::SeqCst);
                    if tick % 50 == 0 {
                        for op in ops.drain(..) {
                            wait(s, op);
                            s.release_op(op).unwrap();
                        }
                    }
                }
                for op in ops {
                    wait(s, op);
                }
            });
        }
        {
            // The mapper: attribute "m" over every prim, one map session per
            // tick, each value the tick.
            let (s, progress) = (&s, &progress);
            scope.spawn(move || {
                for tick in 1..=TICKS {
                    let map = s
                        .map_attribute(all_q, MapDesc::new("m", DType::F32), tick, None)
                        .expect("mapper ahead of the floor");
                    let mut group = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().expect("one group");
                    group.values_mut::<f32>(0).unwrap().fill(tick as f32);
                    let op = s.unmap_attribute(map.handle, [group]).unwrap();
                    progress[WRITERS].store(tick, Ordering::SeqCst);
                    if tick % 25 == 0 {
                        wait(s, op);
                    }
                }
            });
        }
        {
            let (s, progress, done) = (&s, &progress, &done);
            scope.spawn(move || {
                let mut sealed = 0;
                while sealed < TICKS {
                    let target = progress.iter().map(|p| p.load(Ordering::SeqCst)).min().unwrap();
                    if target > sealed {
                        let op = s.advance_write_floor(target, FloorScope::All).unwrap();
                        if target % 3 == 0 {
                            wait(s, op);
                        }
                        sealed = target;
                    } else {
                        thread::yield_now();
                    }
                }
                done.store(true, Ordering::SeqCst);
            });
        }
        for reader in 0..2 {
            let (s, done, held) = (&s, &done, &held);
            scope.spawn(move || {
                let mut reads = 0;
                while !done.load(Ordering::SeqCst) || reads < 5 {
                    reads += 1;
                    if reader == 0 {
                        // Snapshot at a fetched floor: exact, never fails.
                        let f = floor(s);
                        let groups = read_groups(s, all_q, "x", OrdinalRange::snapshot(f)).unwrap();
                        let tick = check(&groups, WRITERS, f);
                        assert_eq!(tick.unwrap_or(0), f, "snapshot at the floor {f} is not exactly tick {f}");
                        let (mapped, _) = read_f32(s, all_q, "m", OrdinalRange::snapshot(f)).unwrap();
                        if f > 0 {
                            assert_eq!(mapped.len(), WRITERS * PRIMS_PER_WRITER, "a mapped prim is missing");
                            assert!(mapped.iter().all(|(_, v)| v[0] == f as f32), "mapped values not at tick {f}");
                        }
                        if reads % 10 == 0
                            && let Some(g) = groups.into_iter().next()
                        {
                            let copy = g.data().unwrap().values::<f32>().unwrap().to_vec();
                            held.lock().unwrap().push((g, copy));
                        }
                    } else {
                        // Latest: may meet unsealed data, never returns it.
                        match read_groups(s, all_q, "x", OrdinalRange::LATEST) {
                            Ok(groups) => {
                                check(&groups, WRITERS, floor(s));
                            }
                            Err(e) => assert_eq!(e.status(), Status::WriteFloorViolation, "{e}"),
                        }
                    }
                }
            });
        }
    });
    wait(&s, s.advance_write_floor(TICKS, FloorScope::All).unwrap());
    let groups = read_groups(&s, all_q, "x", OrdinalRange::LATEST).unwrap();
    assert_eq!(check(&groups, WRITERS, TICKS), Some(TICKS), "a write was lost");
    let (mapped, _) = read_f32(&s, all_q, "m", OrdinalRange::LATEST).unwrap();
    assert!(mapped.iter().all(|(_, v)| v[0] == TICKS as f32), "a map commit was lost");
    for (g, copy) in held.lock().unwrap().iter() {
        assert_eq!(g.data().unwrap().values::<f32>().unwrap(), &copy[..], "a held group changed");
    }
}

#[test]
fn writers_sealer_and_readers_one_lane() {
    stress(1);
}

#[test]
fn writers_sealer_and_readers_several_lanes() {
    stress(4);
}
