//! Several threads submitting, waiting for and releasing ops on one
//! scheduler at once: ids are allocated under the ordering lock and the
//! nodes inserted after it, so ids reach the op table out of order, and
//! released nodes go to the releasing thread's pool. Every op must still
//! be found, run once, and be released exactly once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use ovstage_sched::{Cells, Lanes, OpSpec, Order, Scheduler, SchedulerConfig};
use ovstage_types::{OpId, Status, Timeout};

const THREADS: usize = 4;
const OPS: usize = 3000;

#[test]
fn racing_submitters_find_run_and_release_every_op_once() {
    let s = Scheduler::new(&SchedulerConfig { lanes: Lanes::fixed(2), ..SchedulerConfig::default() });
    let ran = Arc::new(AtomicUsize::new(0));
    let start = Barrier::new(THREADS);
    // Ops a thread hands to its neighbour to release (another thread's
    // pool then gets the node).
    let handed: Vec<Mutex<Vec<OpId>>> = (0..THREADS).map(|_| Mutex::new(Vec::new())).collect();
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (s, ran, start, handed) = (&s, ran.clone(), &start, &handed);
            scope.spawn(move || {
                start.wait();
                let mut mine = Vec::with_capacity(OPS);
                for i in 0..OPS {
                    // Mutations of this thread's own cell at increasing
                    // ordinals (ordered: allocated under the lock), and
                    // independent ops, half of them on the submitter.
                    let spec = match i % 3 {
                        0 => OpSpec::new(Order::Mutation { ordinal: i as u64 + 1, cells: Cells::one(t as u64) }),
                        1 => OpSpec::independent().on_submitter_when_ready(),
                        _ => OpSpec::independent(),
                    };
                    let ran = ran.clone();
                    let id = s
                        .submit(
                            &spec,
                            Box::new(move || {
                                ran.fetch_add(1, Ordering::Relaxed);
                                Ok(())
                            }),
                        )
                        .expect("no op bound");
                    mine.push(id);
                }
                for (i, id) in mine.into_iter().enumerate() {
                    s.wait(id, Timeout::INFINITE).expect("every op is found and runs");
                    if i % 4 == 0 {
                        handed[(t + 1) % THREADS].lock().unwrap().push(id);
                    } else {
                        s.release(id).expect("released once");
                        assert_eq!(s.release(id).unwrap_err().status(), Status::InvalidHandle, "{id} released twice");
                    }
                }
                start.wait();
                for id in std::mem::take(&mut *handed[t].lock().unwrap()) {
                    s.release(id).expect("a neighbour's op, released once");
                    assert_eq!(s.release(id).unwrap_err().status(), Status::InvalidHandle);
                }
            });
        }
    });
    assert_eq!(ran.load(Ordering::Relaxed), THREADS * OPS, "every op ran exactly once");
    assert_eq!(s.tracked_ops(), 0, "every op was released");
}
