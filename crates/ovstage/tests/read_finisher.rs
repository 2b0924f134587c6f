//! A read's finisher (`Stage::read_attributes_finishing`): runs exactly once
//! per accepted read, after the groups are built and before the read
//! reports complete; never for a read rejected at enqueue; an error it
//! returns fails a read that had succeeded.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use ovstage::{Error, OrdinalRange, ReadFinisher, Status, Timeout};

/// A finisher that counts its runs and remembers how many groups (or
/// which status) it was given, answering `answer`.
fn counting(runs: &Arc<AtomicUsize>, seen: &Arc<std::sync::Mutex<Vec<String>>>, answer: Option<Error>) -> ReadFinisher {
    let (runs, seen) = (runs.clone(), seen.clone());
    Box::new(move |given| {
        runs.fetch_add(1, Ordering::SeqCst);
        seen.lock().unwrap().push(match given {
            Ok(groups) => format!("{} groups", groups.len()),
            Err(e) => format!("error {:?}", e.status()),
        });
        answer.map_or(Ok(()), Err)
    })
}

#[test]
fn a_finisher_sees_the_groups_before_the_read_completes_and_runs_once() {
    for lanes in [1, 2] {
        // Few prims (the read runs on the submitter) and many (on a lane):
        // both paths finish.
        for n in [2, 5000] {
            let s = stage(lanes);
            let paths = prim_paths(n);
            let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
            let q = query(&s, &refs);
            let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
            wait(&s, write(&s, q, "x", 1, scalars(&values)));
            wait(&s, seal(&s, 1));
            let (runs, seen) = (Arc::default(), Arc::default());
            let r = s
                .read_attributes_finishing(
                    q,
                    &["x".into(), "y".into()],
                    OrdinalRange::snapshot(1),
                    counting(&runs, &seen, None),
                )
                .unwrap();
            wait(&s, r.op);
            assert_eq!(runs.load(Ordering::SeqCst), 1);
            assert_eq!(*seen.lock().unwrap(), ["1 groups"]);
            let g = s.fetch_read_next(r.handle, Timeout::POLL).unwrap().expect("the group");
            assert_eq!(g.len(), n);
            drop(g);
            wait(&s, s.release_read(r.handle).unwrap());
            assert_eq!(runs.load(Ordering::SeqCst), 1, "released without running it again");
        }
    }
}

#[test]
fn a_finisher_error_fails_a_read_that_had_succeeded() {
    let s = stage(2);
    let q = query(&s, &["/A"]);
    wait(&s, write(&s, q, "x", 1, scalars(&[1.0])));
    wait(&s, seal(&s, 1));
    let (runs, seen) = (Arc::default(), Arc::default());
    let fail = Error::new(Status::OpFailed, "the finisher's own failure");
    let r = s
        .read_attributes_finishing(q, &["x".into()], OrdinalRange::snapshot(1), counting(&runs, &seen, Some(fail)))
        .unwrap();
    let _ = s.wait(r.op, LONG);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(*seen.lock().unwrap(), ["1 groups"]);
    // No group is handed out; the read's error is the finisher's.
    let e = s.fetch_read_next(r.handle, Timeout::POLL).unwrap_err();
    assert!(e.message().contains("the finisher's own failure"), "{e}");
    assert_eq!(s.op_error(r.op).map(|e| e.status()), Some(Status::OpFailed));
}

#[test]
fn a_read_rejected_at_enqueue_never_runs_its_finisher() {
    let s = stage(2);
    let q = query(&s, &["/A"]);
    // Unsealed at 1: a read ending at 1 is refused when it is enqueued.
    wait(&s, write(&s, q, "x", 1, scalars(&[1.0])));
    let (runs, seen) = (Arc::default(), Arc::default());
    let e = s
        .read_attributes_finishing(q, &["x".into()], OrdinalRange::snapshot(1), counting(&runs, &seen, None))
        .unwrap_err();
    assert_eq!(e.status(), Status::WriteFloorViolation);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[test]
fn groups_of_one_image_share_its_identity_and_a_new_version_has_another() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    wait(&s, write(&s, q, "x", 1, scalars(&[1.0, 2.0])));
    wait(&s, seal(&s, 1));
    let read = |end: u64| {
        let r = s.read_attributes(q, &["x".into()], OrdinalRange::snapshot(end)).unwrap();
        let g = s.fetch_read_next(r.handle, LONG).unwrap().expect("a group");
        wait(&s, s.release_read(r.handle).unwrap());
        g
    };
    let (a, b) = (read(1), read(1));
    let (ia, ib) = (a.data().unwrap().image_identity(), b.data().unwrap().image_identity());
    assert!(ia.same(&ib) && ia.addr() == ib.addr() && ia.is_live());
    wait(&s, write(&s, q, "x", 2, scalars(&[3.0, 4.0])));
    wait(&s, seal(&s, 2));
    let c = read(2);
    let ic = c.data().unwrap().image_identity();
    assert!(!ic.same(&ia), "a new version is a new image");
    // The identity keeps no values alive: once nothing holds the image it
    // is dead (the stage itself may still hold it for history).
    drop((a, b, c));
    drop(s);
    assert!(!ia.is_live() && !ic.is_live());
}
