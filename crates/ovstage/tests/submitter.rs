//! Which writes run on the thread that enqueues them: small ones whose
//! payload is there already, when nothing holds them back; never one
//! whose payload may still be arriving, nor a large one. Small map
//! setups and commits likewise, floor advances, filter queries whose
//! result is cached, and releases of queries nothing uses any more.

mod common;

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use common::{LONG, prim_paths, query, read_f32, seal, stage, wait, write};
use ovstage::{DType, HostBytes, MapDesc, OrdinalRange, Predicate, QueryHandle, Stage, Tensor, Timeout, WriteData};

/// Bytes that note the threads reading them.
struct Noted {
    bytes: Vec<u8>,
    readers: Arc<Mutex<Vec<ThreadId>>>,
    arriving: bool,
}

impl HostBytes for Noted {
    fn host_bytes(&self) -> &[u8] {
        self.readers.lock().unwrap().push(std::thread::current().id());
        &self.bytes
    }

    fn len(&self) -> usize {
        self.bytes.len()
    }

    fn arriving(&self) -> bool {
        self.arriving
    }
}

/// A query of `n` prims (`common::prim_paths`).
fn query_of(s: &Stage, n: usize) -> QueryHandle {
    let paths = prim_paths(n);
    query(s, &paths.iter().map(String::as_str).collect::<Vec<_>>())
}

/// A write of `n` f32 (one per prim) whose readers are noted.
fn noted(n: usize, arriving: bool) -> (WriteData, Arc<Mutex<Vec<ThreadId>>>) {
    let readers = Arc::new(Mutex::new(Vec::new()));
    let bytes = Noted { bytes: vec![0; n * 4], readers: readers.clone(), arriving };
    (WriteData::fixed(Tensor::new(bytes, DType::F32, &[n as u64]).unwrap()), readers)
}

#[test]
fn small_ready_writes_run_inside_their_enqueue_and_others_on_lanes() {
    let s = stage(2);
    let me = std::thread::current().id();
    let q = query_of(&s, 4);
    let (data, readers) = noted(4, false);
    let op = write(&s, q, "a", 1, data);
    // Complete when the call returned: it ran on this thread.
    assert_eq!(s.wait(op, ovstage::Timeout::POLL), Ok(()));
    let read_by = readers.lock().unwrap().clone();
    assert!(!read_by.is_empty() && read_by.iter().all(|t| *t == me), "read on this thread only: {read_by:?}");

    // Still arriving: handed to a lane, which reads it.
    let (data, readers) = noted(4, true);
    let op = write(&s, q, "b", 1, data);
    s.wait_ok(op, LONG).unwrap();
    assert!(readers.lock().unwrap().iter().any(|t| *t != me), "{:?}", readers.lock().unwrap());

    // Over 16 KiB: handed to a lane.
    let qb = query_of(&s, 5000);
    let (data, readers) = noted(5000, false);
    let op = write(&s, qb, "c", 1, data);
    s.wait_ok(op, LONG).unwrap();
    assert!(readers.lock().unwrap().iter().any(|t| *t != me), "{:?}", readers.lock().unwrap());
}

#[test]
fn a_floor_advance_with_nothing_to_wait_for_runs_inside_its_call() {
    // The simulation loop: write, seal, read, each step on one thread.
    let s = stage(2);
    let q = query_of(&s, 4);
    for ordinal in 1..=20u64 {
        let (data, _) = noted(4, false);
        write(&s, q, "a", ordinal, data);
        let advance = seal(&s, ordinal);
        // Complete when the call returned (a lane would still be waking).
        assert_eq!(s.wait(advance, Timeout::POLL), Ok(()), "step {ordinal}");
        // Sealed: a write at the ordinal is now below the floor.
        let (data, _) = noted(4, false);
        let refused = s.write_attribute(q, "a", ordinal, data, ovstage::PrimMode::Upsert).unwrap_err();
        assert_eq!(refused.status(), ovstage::Status::WriteFloorViolation, "{refused}");
    }
}

/// Maps `f32` "m" over `n` prims at `ordinal`, fills it with `value`, and
/// returns the query and the commit ending the session.
fn commit_session(s: &Stage, n: usize, ordinal: u64, value: f32) -> (QueryHandle, ovstage::OpId) {
    let q = query_of(s, n);
    let map = s.map_attribute(q, MapDesc::new("m", DType::F32), ordinal, None).unwrap();
    if n <= 256 {
        // A session over a few prims is set up inside the call.
        assert_eq!(s.wait(map.op, Timeout::POLL), Ok(()), "a {n}-prim setup had not run when map_attribute returned");
    }
    let mut group = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().expect("one group");
    group.values_mut::<f32>(0).unwrap().fill(value);
    (q, s.unmap_attribute(map.handle, [group]).unwrap())
}

#[test]
fn small_map_setups_and_commits_run_inside_their_calls() {
    let s = stage(2);
    // 16 bytes: committed when the call returns (handed to a lane, a
    // sleeping one had to be woken first).
    let (_, op) = commit_session(&s, 4, 1, 2.5);
    assert_eq!(s.wait(op, Timeout::POLL), Ok(()), "a small commit had not run when its unmap returned");
    // Over 16 KiB: committed on a lane, and as correct.
    let (q, op) = commit_session(&s, 5000, 2, 4.0);
    wait(&s, op);
    wait(&s, seal(&s, 2));
    let (values, tombstones) = read_f32(&s, q, "m", OrdinalRange::LATEST).unwrap();
    assert!(tombstones.is_empty());
    assert_eq!(values.len(), 5000);
    assert!(values.iter().all(|(_, v)| v == &[4.0]), "the large commit's values");
}

#[test]
fn a_repeated_structural_query_resolves_inside_its_call() {
    let s = stage(2);
    let q = query_of(&s, 64);
    let (data, _) = noted(64, false);
    s.wait_ok(write(&s, q, "h", 1, data), LONG).unwrap();
    let has = [Predicate::has("h")];
    let first = s.query(&has, &[]).unwrap();
    assert_eq!(s.fetch_query_result(first.handle, Timeout::INFINITE).unwrap().total_prim_count, 64);
    // Cached now, and nothing structural changed: a lookup, done in the call.
    let again = s.query(&has, &[]).unwrap();
    assert_eq!(s.wait(again.op, Timeout::POLL), Ok(()), "a cached query had not resolved when query returned");
    assert_eq!(s.fetch_query_result(again.handle, Timeout::POLL).unwrap().total_prim_count, 64);
}

#[test]
fn a_query_nothing_uses_is_released_inside_the_call() {
    let s = stage(2);
    let q = query_of(&s, 8);
    let (data, _) = noted(8, false);
    let op = write(&s, q, "r", 1, data);
    s.wait_ok(op, LONG).unwrap();
    let filter = s.query(&[Predicate::has("r")], &[]).unwrap();
    s.wait_ok(filter.op, LONG).unwrap();
    // Released while a lane could take it, its waiter raced the lane for
    // it (a lane that won cost the waiter a hand-off): it runs here now.
    for handle in [q, filter.handle] {
        let release = s.release_query(handle).unwrap();
        assert_eq!(s.wait(release, Timeout::POLL), Ok(()), "the release had not run when release_query returned");
        s.release_op(release).unwrap();
    }
}

/// The thread a snapshot read of "v" ran on, and how many groups it built
/// (noted by its finisher, which the read's job runs); its one group holds
/// the query's `n` prims.
fn read_on(s: &Stage, q: QueryHandle, n: usize, end: u64) -> (ThreadId, usize) {
    let ran = Arc::new(Mutex::new(None));
    let r = ran.clone();
    let finish: ovstage::ReadFinisher = Box::new(move |groups| {
        *r.lock().unwrap() = Some((std::thread::current().id(), groups.map_or(0, |g| g.len())));
        Ok(())
    });
    let read = s.read_attributes_finishing(q, &["v".into()], OrdinalRange::snapshot(end), finish).unwrap();
    s.wait_ok(read.op, LONG).unwrap();
    let group = s.fetch_read_next(read.handle, Timeout::POLL).unwrap().expect("a group");
    assert_eq!(group.len(), n);
    drop(group);
    wait(s, s.release_read(read.handle).unwrap());
    let noted = *ran.lock().unwrap();
    noted.expect("the finisher ran")
}

/// A snapshot read of more than 16k cells goes to a lane while it has an
/// image to build or rows to map, and runs inside its call once it only
/// hands out a view: its column's image as of its end built and the
/// query's rows in it known (the same read again). A new version to fold
/// sends it to a lane again.
#[test]
fn a_large_read_that_only_hands_out_a_view_runs_inside_its_call() {
    let s = stage(2);
    let me = std::thread::current().id();
    let n = 20_000;
    let q = query_of(&s, n);
    let (data, _) = noted(n, false);
    s.wait_ok(write(&s, q, "v", 1, data), LONG).unwrap();
    wait(&s, seal(&s, 1));
    let (first, groups) = read_on(&s, q, n, 1);
    assert_eq!(groups, 1);
    assert_ne!(first, me, "the first read builds the image and maps the rows: on a lane");
    for _ in 0..2 {
        assert_eq!(read_on(&s, q, n, 1).0, me, "a view of the built image: inside the call");
    }
    // A latest read ends at the floor: the same image.
    assert_eq!(read_on(&s, q, n, u64::MAX).0, me);
    let (data, _) = noted(n, false);
    s.wait_ok(write(&s, q, "v", 2, data), LONG).unwrap();
    wait(&s, seal(&s, 2));
    assert_ne!(read_on(&s, q, n, 2).0, me, "a new version to fold: on a lane");
    assert_eq!(read_on(&s, q, n, 2).0, me);
    // One serialized lane never runs work on the submitter.
    let one = stage(1);
    let q1 = query_of(&one, n);
    let (data, _) = noted(n, false);
    one.wait_ok(write(&one, q1, "v", 1, data), LONG).unwrap();
    wait(&one, seal(&one, 1));
    for _ in 0..2 {
        assert_ne!(read_on(&one, q1, n, 1).0, me);
    }
}
