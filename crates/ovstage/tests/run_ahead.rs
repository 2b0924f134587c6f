//! A producer running far ahead of its floor advances (issue 9, item 5):
//! reads at the sealed floor always work within the limits, and beyond
//! them `Reject` refuses the producer while `Coalesce` bounds memory and
//! keeps the next floors exact.

mod common;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use common::*;
use ovstage::{
    AttrRef, FloorScope, OpId, OrdinalRange, PrimMode, QueryHandle, Stage, StageConfig, Status, Timeout,
    UnsealedOverflow,
};

/// The lead of the producer, and how often it advances its floor.
const LEAD: u64 = 100;
const EVERY: u64 = 10;

/// The value written at `ordinal` (exact in f32 far beyond the ordinals
/// used here).
fn at(ordinal: u64) -> f32 {
    ordinal as f32
}

fn snapshot_of(s: &Stage, q: QueryHandle, attr: &str, ordinal: u64) -> ovstage::Result<f32> {
    let (values, tombstones) = read_f32(s, q, attr, OrdinalRange::snapshot(ordinal))?;
    assert!(tombstones.is_empty());
    assert_eq!(values.len(), 1, "one prim at {ordinal}: {values:?}");
    Ok(values[0].1[0])
}

fn oldest_preserved(s: &Stage) -> u64 {
    let h = s.get_oldest_preserved_ordinal().unwrap();
    s.fetch_ordinal(h.handle, LONG).unwrap().get()
}

#[test]
fn reads_at_the_floor_succeed_while_a_producer_runs_a_hundred_ahead() {
    // The scenario, with the default configuration: one prim, the
    // producer 100 ordinals ahead, the floor advanced every 10 ordinals,
    // nothing waited for but the reads.
    let s = Stage::with_config("issue", StageConfig::default().with_lanes(4));
    let q = query(&s, &["/A"]);
    let mut floor = 0;
    let mut writes: Vec<OpId> = Vec::new();
    for t in 1..=1500u64 {
        writes.push(write(&s, q, "x", t, scalars(&[at(t)])));
        if t % EVERY == 0 && t > LEAD {
            let new = t - LEAD;
            s.advance_write_floor(new, FloorScope::All).unwrap();
            // Every ordinal the advance sealed reads exactly, the new
            // floor included.
            for o in floor + 1..=new {
                let got = snapshot_of(&s, q, "x", o).unwrap_or_else(|e| panic!("snapshot at {o} (floor {new}): {e}"));
                assert_eq!(got, at(o), "snapshot at {o}");
            }
            floor = new;
        }
    }
    writes.into_iter().for_each(|op| wait(&s, op));
}

/// One producer of the multi-threaded variant: its own attribute on its
/// own prim, running `LEAD` ahead of that attribute's floor.
fn produce(s: &Stage, q: QueryHandle, attr: &str, ticks: u64) {
    let mut ops = Vec::new();
    for t in 1..=ticks {
        ops.push(write(s, q, attr, t, scalars(&[at(t)])));
        if t % EVERY == 0 && t > LEAD {
            let scope = FloorScope::Include(vec![AttrRef::from(attr)]);
            ops.push(s.advance_write_floor(t - LEAD, scope).unwrap());
        }
        if ops.len() > 64 {
            ops.drain(..32).for_each(|op| wait(s, op));
        }
    }
    ops.into_iter().for_each(|op| wait(s, op));
}

#[test]
fn reads_at_the_floor_succeed_with_several_producers_and_readers() {
    // 4 producers and 4 readers on 8 threads. Every version is retained
    // (history depth), so a read at a floor fetched earlier is exact
    // however far the producers got since: any failure is a merge.
    const PRODUCERS: usize = 4;
    let config = StageConfig::default().with_lanes(4).with_history_depth(1_000_000);
    let s = Stage::with_config("issue-mt", config);
    let attrs: Vec<String> = (0..PRODUCERS).map(|i| format!("x{i}")).collect();
    let queries: Vec<QueryHandle> = (0..PRODUCERS).map(|i| query(&s, &[&format!("/P{i}")])).collect();
    let done = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let failures: Mutex<Vec<String>> = Mutex::default();
    thread::scope(|scope| {
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|i| {
                let (s, q, attr) = (&s, queries[i], &attrs[i]);
                scope.spawn(move || produce(s, q, attr, 800))
            })
            .collect();
        for r in 0..4 {
            let (s, attrs, queries, done) = (&s, &attrs, &queries, &done);
            let (reads, failures) = (&reads, &failures);
            scope.spawn(move || {
                let mut i = r;
                while !done.load(Ordering::Acquire) {
                    i = (i + 1) % PRODUCERS;
                    // The attribute's floor as the stage reports it.
                    let h = s.get_attribute_write_floor(Some(attrs[i].as_str().into())).unwrap();
                    let f = s.fetch_ordinal(h.handle, Timeout::INFINITE).unwrap().get();
                    s.release_ordinal_query(h.handle).unwrap();
                    if f == 0 {
                        continue;
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                    match snapshot_of(s, queries[i], &attrs[i], f) {
                        Ok(v) => assert_eq!(v, at(f), "{} at its floor {f}", attrs[i]),
                        Err(e) => failures.lock().unwrap().push(format!("{} at its floor {f}: {e}", attrs[i])),
                    }
                }
            });
        }
        producers.into_iter().for_each(|p| p.join().unwrap());
        done.store(true, Ordering::Release);
    });
    assert!(reads.load(Ordering::Relaxed) > 0);
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} reads at the floor failed: {failures:#?}",
        failures.len(),
        reads.into_inner()
    );
}

#[test]
fn reject_refuses_a_producer_beyond_max_versions_and_floor_reads_keep_working() {
    const MAX: u64 = 16;
    let config = StageConfig::default()
        .with_lanes(2)
        .with_max_versions(MAX as usize)
        .with_unsealed_overflow(UnsealedOverflow::Reject)
        .with_history_depth(1_000_000);
    let s = Stage::with_config("reject", config);
    let q = query(&s, &["/A"]);
    let mut floor = 0u64;
    let mut refused = 0;
    let mut t = 1u64;
    while t <= 400 {
        match s.write_attribute(q, "x", t, scalars(&[at(t)]), PrimMode::Upsert) {
            Ok(_) => t += 1,
            Err(e) => {
                // Refused exactly at the limit, at enqueue, whatever has run.
                assert_eq!(e.status(), Status::QueueFull, "{e}");
                assert_eq!(t, floor + MAX + 1, "{e}");
                refused += 1;
                // Advancing the floor makes room; every sealed ordinal is
                // exact.
                let new = floor + 1 + refused % 7;
                s.advance_write_floor(new, FloorScope::All).unwrap();
                for o in floor + 1..=new {
                    assert_eq!(snapshot_of(&s, q, "x", o).unwrap(), at(o), "snapshot at {o}");
                }
                floor = new;
            }
        }
    }
    assert!(refused > 20, "{refused}");
    assert_eq!(oldest_preserved(&s), 0, "nothing merged, nothing trimmed");
}

#[test]
fn coalesce_bounds_a_producer_beyond_the_limits_and_keeps_the_next_floors_exact() {
    // A lead of 40 against a cap of 16: memory stays bounded, a snapshot
    // is refused only strictly inside a merged span (which the frontier
    // reports), and the 14 ordinals above the floor when the producer
    // overran stay exact.
    const MAX: usize = 16;
    // Sealed versions kept: the history depth's 4 advances of 5 ordinals,
    // and the one at the frontier.
    const SEALED: usize = 4 * 5 + 1;
    let config = StageConfig::default().with_lanes(2).with_max_versions(MAX);
    let s = Stage::with_config("coalesce", config);
    let q = query(&s, &["/A"]);
    for t in 1..=40u64 {
        wait(&s, write(&s, q, "x", t, scalars(&[at(t)])));
    }
    let mut floor = 0u64;
    let (mut exact, mut refused) = (0, 0);
    for t in 41..=400u64 {
        wait(&s, write(&s, q, "x", t, scalars(&[at(t)])));
        assert!(s.stats().versions <= MAX + SEALED, "at {t}: {:?}", s.stats());
        if t % 5 == 0 {
            let new = t - 40;
            wait(&s, s.advance_write_floor(new, FloorScope::All).unwrap());
            let oldest = oldest_preserved(&s);
            for o in floor + 1..=new {
                match snapshot_of(&s, q, "x", o) {
                    Ok(v) => {
                        assert_eq!(v, at(o), "snapshot at {o}");
                        exact += 1;
                    }
                    Err(e) => {
                        assert_eq!(e.status(), Status::OutOfRange, "{e}");
                        assert!(o < oldest, "refused at {o}, below the floor {new}, above the frontier {oldest}");
                        assert!(o > 14, "the 14 oldest unsealed ordinals stay exact");
                        refused += 1;
                    }
                }
            }
            floor = new;
        }
    }
    assert!(exact >= 14 && refused > 0, "exact {exact}, refused {refused}");
}
