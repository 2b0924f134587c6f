//! The scheduler's ordering rules, each shown by an op that cannot finish
//! while the op it must follow is held back by a gate, and by ops that can.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ovstage_sched::{Cells, FloorScope, Job, Lanes, OpSpec, Order, Scheduler, SchedulerConfig, Unboxed, WaitError};
use ovstage_types::{Error, OpId, Status, Timeout};
use smallvec::smallvec;

const SHORT: Timeout = Timeout::from_nanos(30_000_000);
const LONG: Timeout = Timeout::from_nanos(10_000_000_000);

/// A scheduler whose submissions cannot be refused (no op bound), so
/// `submit` gives the id directly.
struct Sched(Scheduler);

impl Sched {
    fn submit(&self, spec: &OpSpec, job: Job) -> OpId {
        self.0.submit(spec, job).expect("no op bound")
    }
}

impl std::ops::Deref for Sched {
    type Target = Scheduler;
    fn deref(&self) -> &Scheduler {
        &self.0
    }
}

fn sched(lanes: usize) -> Sched {
    Sched(Scheduler::new(&SchedulerConfig { lanes: Lanes::fixed(lanes), ..SchedulerConfig::default() }))
}

fn noop() -> Job {
    Box::new(|| Ok(()))
}

/// A job that blocks until the returned sender is used (or dropped).
fn gated() -> (Job, Sender<()>) {
    let (tx, rx): (Sender<()>, Receiver<()>) = channel();
    (
        Box::new(move || {
            let _ = rx.recv();
            Ok(())
        }),
        tx,
    )
}

/// Submits an op whose job blocks until the returned sender is used (or
/// dropped), and returns once a lane has started it.
fn held_on_a_lane(s: &Sched) -> (OpId, Sender<()>) {
    let (job, gate) = gated();
    let (started_tx, started) = channel::<()>();
    let held = s.submit(
        &OpSpec::independent(),
        Box::new(move || {
            let _ = started_tx.send(());
            job()
        }),
    );
    started.recv_timeout(Duration::from_secs(10)).expect("the held op starts on a lane");
    (held, gate)
}

fn logging(log: &Arc<Mutex<Vec<u32>>>, tag: u32) -> Job {
    let log = log.clone();
    Box::new(move || {
        log.lock().unwrap().push(tag);
        Ok(())
    })
}

/// A two-lane scheduler whose failure hook records the failed ops' ids.
fn reporting_failures() -> (Scheduler, Arc<Mutex<Vec<OpId>>>) {
    let reported = Arc::new(Mutex::new(Vec::new()));
    let r = reported.clone();
    let hook = ovstage_sched::FailureHook(Arc::new(move |op, _: &ovstage_sched::Failure| r.lock().unwrap().push(op)));
    let s = Scheduler::new(&SchedulerConfig {
        lanes: Lanes::fixed(2),
        on_failure: Some(hook),
        ..SchedulerConfig::default()
    });
    (s, reported)
}

/// Submits `spec` with an unboxed job that counts its runs; returns the op
/// and the count.
fn submit_counting(s: &Scheduler, spec: &OpSpec) -> (OpId, Arc<AtomicUsize>) {
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let op = s
        .submit_with(spec, || {
            Ok::<_, Error>(Unboxed(move || {
                r.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }))
        })
        .expect("no op bound");
    (op, ran)
}

fn mutation(ordinal: u64, key: u64) -> OpSpec {
    OpSpec::new(Order::Mutation { ordinal, cells: Cells::one(key) })
}

fn is_pending(s: &Scheduler, op: OpId) -> bool {
    matches!(s.wait(op, SHORT), Err(WaitError::Timeout { .. }))
}

#[test]
fn same_ordinal_same_key_runs_in_submission_order() {
    let s = sched(2);
    let (job, gate) = gated();
    let first = s.submit(&mutation(5, 1), job);
    let second = s.submit(&mutation(5, 1), noop());
    assert!(is_pending(&s, second), "second same-cell mutation ran before the first");
    assert_eq!(s.wait(second, Timeout::POLL), Err(WaitError::Timeout { lowest_pending: first }));
    gate.send(()).unwrap();
    assert_eq!(s.wait(second, LONG), Ok(()));
    assert_eq!(s.wait(first, Timeout::POLL), Ok(()));
}

#[test]
fn same_ordinal_other_key_and_other_ordinal_are_independent() {
    let s = sched(2);
    let (job, gate) = gated();
    let _blocked = s.submit(&mutation(5, 1), job);
    let other_key = s.submit(&mutation(5, 2), noop());
    let other_ordinal = s.submit(&mutation(6, 1), noop());
    assert_eq!(s.wait(other_key, LONG), Ok(()));
    assert_eq!(s.wait(other_ordinal, LONG), Ok(()));
    gate.send(()).unwrap();
}

/// A lane held by a long op keeps pushes from waking another lane (the
/// busy limit keeps a core for the submitter); an op queued meanwhile
/// still runs while its submitter only polls, on a lane that looks again
/// on its own, and at once for a submitter that sleeps in `wait`.
#[test]
fn an_op_queued_behind_a_held_lane_runs_for_a_poller_and_a_waiter() {
    let s = sched(2);
    let (held, gate) = held_on_a_lane(&s);
    let polled = s.submit(&OpSpec::independent(), noop());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while s.is_complete(polled) != Some(true) {
        assert!(std::time::Instant::now() < deadline, "an op queued behind a held lane never ran for a poller");
        std::thread::sleep(Duration::from_millis(1));
    }
    let waited = s.submit(&OpSpec::independent(), noop());
    assert_eq!(s.wait(waited, LONG), Ok(()));
    assert!(is_pending(&s, held), "the held op is still held");
    gate.send(()).unwrap();
    assert_eq!(s.wait(held, LONG), Ok(()));
}

#[test]
fn whole_prim_mutation_orders_with_every_key_at_its_ordinal() {
    let s = sched(2);
    let (job, gate) = gated();
    let first = s.submit(&mutation(3, 9), job);
    let all = s.submit(&OpSpec::new(Order::Mutation { ordinal: 3, cells: Cells::all() }), noop());
    let after = s.submit(&mutation(3, 4), noop());
    assert!(is_pending(&s, all));
    assert!(is_pending(&s, after), "a key mutation after an all-cells one must follow it");
    gate.send(()).unwrap();
    assert_eq!(s.wait(after, LONG), Ok(()));
    assert_eq!(s.wait(all, Timeout::POLL), Ok(()));
    assert_eq!(s.wait(first, Timeout::POLL), Ok(()));
}

#[test]
fn floor_advance_waits_for_mutations_at_or_below_it_in_scope() {
    // Gated jobs hold a lane each while blocked; leave lanes for the rest.
    let s = sched(5);
    let (below, gate_below) = gated();
    let (above, gate_above) = gated();
    let (other, gate_other) = gated();
    let _w4 = s.submit(&mutation(4, 1), below);
    let _w9 = s.submit(&mutation(9, 1), above);
    let _w2 = s.submit(&mutation(2, 2), other);
    // Scope {1}: waits for the key-1 mutation at 4, not the one at 9 and not
    // the key-2 mutation at 2.
    let adv =
        s.submit(&OpSpec::new(Order::FloorAdvance { ordinal: 5, scope: FloorScope::Include(smallvec![1]) }), noop());
    assert!(is_pending(&s, adv));
    gate_below.send(()).unwrap();
    assert_eq!(s.wait(adv, LONG), Ok(()), "advance waited for a mutation above it or out of scope");
    // An all-scope advance waits for the key-2 mutation at 2 too.
    let all = s.submit(&OpSpec::new(Order::FloorAdvance { ordinal: 5, scope: FloorScope::All }), noop());
    assert!(is_pending(&s, all));
    gate_other.send(()).unwrap();
    assert_eq!(s.wait(all, LONG), Ok(()));
    // Exclude {1}: does not wait for key 1 at 9, but an all-scope advance to 9 does.
    let excl =
        s.submit(&OpSpec::new(Order::FloorAdvance { ordinal: 9, scope: FloorScope::Exclude(smallvec![1]) }), noop());
    assert_eq!(s.wait(excl, LONG), Ok(()));
    let all9 = s.submit(&OpSpec::new(Order::FloorAdvance { ordinal: 9, scope: FloorScope::All }), noop());
    assert!(is_pending(&s, all9));
    gate_above.send(()).unwrap();
    assert_eq!(s.wait(all9, LONG), Ok(()));
}

#[test]
fn floor_advance_waits_for_a_mutation_submitted_below_an_earlier_advance() {
    // The stage never submits a mutation at or below a submitted floor; the
    // scheduler's rule must hold without relying on that.
    let s = sched(3);
    let first = s.submit(&OpSpec::new(Order::FloorAdvance { ordinal: 10, scope: FloorScope::All }), noop());
    assert_eq!(s.wait(first, LONG), Ok(()));
    let (late, gate) = gated();
    let _w = s.submit(&mutation(5, 1), late);
    let adv = s.submit(&OpSpec::new(Order::FloorAdvance { ordinal: 12, scope: FloorScope::All }), noop());
    assert!(is_pending(&s, adv), "the advance to 12 did not wait for the mutation at 5");
    gate.send(()).unwrap();
    assert_eq!(s.wait(adv, LONG), Ok(()));
}

#[test]
fn submit_with_builds_the_job_under_the_ordering_lock_or_submits_nothing() {
    let s = sched(1);
    let log = Arc::new(Mutex::new(Vec::new()));
    let refused: Result<OpId, Error> =
        s.submit_with(&mutation(1, 1), || -> Result<Job, Error> { Err(Error::invalid_argument("no")) });
    assert_eq!(refused.unwrap_err().status(), Status::InvalidArgument);
    assert_eq!(s.tracked_ops(), 0, "a refused build submits nothing");
    let decided = 7u32;
    let op: Result<OpId, Error> = s.submit_with(&mutation(1, 1), || Ok(logging(&log, decided)));
    assert_eq!(s.wait(op.unwrap(), LONG), Ok(()));
    assert_eq!(*log.lock().unwrap(), vec![7]);
    // Beyond the op bound the build never runs.
    let bounded = Scheduler::new(&SchedulerConfig { lanes: Lanes::fixed(1), max_ops: 1, ..SchedulerConfig::default() });
    let _held = bounded.submit(&OpSpec::independent(), noop()).unwrap();
    let built = AtomicUsize::new(0);
    let full = bounded.submit_with(&mutation(1, 1), || -> Result<Job, ovstage_sched::QueueFull> {
        built.fetch_add(1, Ordering::SeqCst);
        Ok(noop())
    });
    assert!(full.is_err());
    assert_eq!(built.load(Ordering::SeqCst), 0);
}

#[test]
fn floor_advances_chain_and_after_floors_ops_follow_them() {
    let s = sched(2);
    let (job, gate) = gated();
    let _w = s.submit(&mutation(1, 1), job);
    let adv = s.submit(&OpSpec::new(Order::FloorAdvance { ordinal: 1, scope: FloorScope::All }), noop());
    let adv2 =
        s.submit(&OpSpec::new(Order::FloorAdvance { ordinal: 7, scope: FloorScope::Include(smallvec![5]) }), noop());
    let read = s.submit(&OpSpec::new(Order::AfterFloors), noop());
    let independent = s.submit(&OpSpec::independent(), noop());
    assert_eq!(s.wait(independent, LONG), Ok(()));
    assert!(is_pending(&s, adv2), "floor advances run in submission order");
    assert!(is_pending(&s, read), "an after-floors op ran before a pending advance");
    assert_eq!(s.wait(read, Timeout::POLL), Err(WaitError::Timeout { lowest_pending: OpId::from_raw(1).unwrap() }));
    gate.send(()).unwrap();
    assert_eq!(s.wait(read, LONG), Ok(()));
    assert_eq!(s.wait(adv, Timeout::POLL), Ok(()));
}

#[test]
fn handle_consumers_follow_producer_and_release_follows_users() {
    let s = sched(2);
    let (produce, gate_p) = gated();
    let producer = s.submit(&OpSpec::independent().producing(77), produce);
    let (consume, gate_c) = gated();
    let consumer = s.submit(&OpSpec::independent().using(77), consume);
    let release = s.submit(&OpSpec::independent().releasing(77), noop());
    let unrelated = s.submit(&OpSpec::independent().using(78), noop());
    assert_eq!(s.wait(unrelated, LONG), Ok(()));
    assert!(is_pending(&s, consumer));
    gate_p.send(()).unwrap();
    assert_eq!(s.wait(producer, LONG), Ok(()));
    assert!(is_pending(&s, release), "release ran while a user of the handle was running");
    gate_c.send(()).unwrap();
    assert_eq!(s.wait(release, LONG), Ok(()));
}

#[test]
fn release_waits_for_every_user_however_many_and_in_any_completion_order() {
    // Pending users are kept in a short list, then in a map past a few:
    // both, and the switch between them, must keep every user.
    for users in [1usize, 8, 9, 40] {
        let s = sched(2);
        let handle = 500 + users as u64;
        let (ops, gates): (Vec<OpId>, Vec<Sender<()>>) = (0..users)
            .map(|_| {
                let (job, gate) = gated();
                (s.submit(&OpSpec::independent().using(handle).using(handle), job), gate)
            })
            .unzip();
        let release = s.submit(&OpSpec::independent().releasing(handle), noop());
        // Every user but the middle one completes (the lanes take them in
        // their own order); the release still waits for that one.
        let last = users / 2;
        for (_, gate) in gates.iter().enumerate().filter(|(i, _)| *i != last) {
            gate.send(()).unwrap();
        }
        for (i, op) in ops.iter().enumerate().filter(|(i, _)| *i != last) {
            assert_eq!(s.wait(*op, LONG), Ok(()), "{users} users: user {i}");
        }
        assert!(is_pending(&s, release), "{users} users: release ran with user {last} pending");
        gates[last].send(()).unwrap();
        assert_eq!(s.wait(release, LONG), Ok(()), "{users} users");
        // Nothing of them is left behind (each listed its handle twice): a
        // later release of the handle has no one to wait for.
        let again = s.submit(&OpSpec::independent().releasing(handle), noop());
        assert_eq!(s.wait(again, LONG), Ok(()), "{users} users: a completed user was kept");
    }
}

#[test]
fn infinite_wait_runs_the_chain_on_the_calling_thread() {
    let s = sched(1);
    let log = Arc::new(Mutex::new(Vec::new()));
    let a = s.submit(&mutation(1, 1), logging(&log, 1));
    let b = s.submit(&mutation(1, 1), logging(&log, 2));
    let c = s.submit(&mutation(1, 1), logging(&log, 3));
    assert_eq!(s.wait(c, Timeout::INFINITE), Ok(()));
    assert_eq!(*log.lock().unwrap(), vec![1, 2, 3]);
    for op in [a, b] {
        assert_eq!(s.wait(op, Timeout::POLL), Ok(()));
    }
}

#[test]
fn failures_are_reported_with_their_cause() {
    let s = sched(2);
    let bad =
        s.submit(&OpSpec::independent().producing(1), Box::new(|| Err(Error::invalid_argument("bad input").into())));
    let consumer = s.submit(
        &OpSpec::independent().using(1),
        Box::new(move || {
            Err(ovstage_sched::Failure { error: Error::new(Status::OpFailed, "input failed"), caused_by: Some(bad) })
        }),
    );
    assert_eq!(s.wait(bad, LONG), Err(WaitError::Failed { ops: smallvec![bad] }));
    assert_eq!(s.wait(consumer, LONG), Err(WaitError::Failed { ops: smallvec![bad, consumer] }));
    // Reported again on every wait until released.
    assert_eq!(s.wait(consumer, Timeout::POLL), Err(WaitError::Failed { ops: smallvec![bad, consumer] }));
    assert_eq!(s.failure(bad).unwrap().error.status(), Status::InvalidArgument);
    assert_eq!(s.failure(consumer).unwrap().caused_by, Some(bad));
    s.release(bad).unwrap();
    assert_eq!(s.wait(consumer, Timeout::POLL), Err(WaitError::Failed { ops: smallvec![consumer] }));
}

#[test]
fn panicking_job_fails_with_internal() {
    let s = sched(2);
    let op = s.submit(&OpSpec::independent(), Box::new(|| panic!("kaboom")));
    assert!(matches!(s.wait(op, LONG), Err(WaitError::Failed { .. })));
    let failure = s.failure(op).unwrap();
    assert_eq!(failure.error.status(), Status::Internal);
    assert!(failure.error.message().contains("kaboom"), "{}", failure.error);
    // The lane survives.
    let next = s.submit(&OpSpec::independent(), noop());
    assert_eq!(s.wait(next, LONG), Ok(()));
}

#[test]
fn ids_increase_release_rules_and_unknown_ids() {
    let s = sched(2);
    let (job, gate) = gated();
    let pending = s.submit(&OpSpec::independent(), job);
    let ids: Vec<OpId> = (0..10).map(|_| s.submit(&OpSpec::independent(), noop())).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]) && pending < ids[0]);
    let err = s.release(pending).unwrap_err();
    assert_eq!(err.status(), Status::OpFailed);
    gate.send(()).unwrap();
    s.wait(pending, LONG).unwrap();
    s.release(pending).unwrap();
    assert_eq!(s.release(pending).unwrap_err().status(), Status::InvalidHandle);
    match s.wait(pending, Timeout::POLL) {
        Err(WaitError::Unknown(e)) => assert_eq!(e.status(), Status::InvalidArgument),
        other => panic!("{other:?}"),
    }
    let never = OpId::from_raw(1 << 40).unwrap();
    assert!(matches!(s.wait(never, Timeout::INFINITE), Err(WaitError::Unknown(_))));
    for id in &ids {
        s.wait(*id, LONG).unwrap();
        s.release(*id).unwrap();
    }
    let fresh = s.submit(&OpSpec::independent(), noop());
    assert!(fresh > *ids.last().unwrap(), "ids are never reused");
    assert_eq!(s.tracked_ops(), 1);
}

#[test]
fn finite_timeout_bounds_the_wait() {
    let s = sched(2);
    let (job, gate) = gated();
    let op = s.submit(&OpSpec::independent(), job);
    let start = std::time::Instant::now();
    assert!(matches!(s.wait(op, Timeout::from(Duration::from_millis(20))), Err(WaitError::Timeout { .. })));
    assert!(start.elapsed() >= Duration::from_millis(20));
    gate.send(()).unwrap();
    assert_eq!(s.wait(op, LONG), Ok(()));
}

#[test]
fn one_lane_never_overlaps_ops() {
    let s = sched(1);
    let running = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let ops: Vec<OpId> = (0..200)
        .map(|i| {
            let (running, max) = (running.clone(), max.clone());
            s.submit(
                &mutation(i % 7, i % 3),
                Box::new(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    max.fetch_max(now, Ordering::SeqCst);
                    std::thread::yield_now();
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok(())
                }),
            )
        })
        .collect();
    // Waiting threads help run ops; with one lane they still take turns.
    std::thread::scope(|scope| {
        for chunk in ops.chunks(50) {
            let s = &s;
            scope.spawn(move || {
                for op in chunk {
                    s.wait(*op, Timeout::INFINITE).unwrap();
                }
            });
        }
    });
    assert_eq!(max.load(Ordering::SeqCst), 1);
}

/// With one lane, a thread waiting on an op queued behind the op the lane
/// runs leaves it to the lane: taking it and then sleeping on the serial
/// lock made the lane and the waiter hand the lock back and forth.
#[test]
fn with_one_lane_a_waiter_leaves_queued_work_to_the_busy_lane() {
    let s = sched(1);
    let (held, gate) = held_on_a_lane(&s);
    let ran_on = Arc::new(Mutex::new(None));
    let queued = s.submit(&OpSpec::independent(), recording(&ran_on));
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        gate.send(()).unwrap();
    });
    assert_eq!(s.wait(queued, Timeout::INFINITE), Ok(()));
    opener.join().unwrap();
    let ran_on = ran_on.lock().unwrap().expect("the queued op ran");
    assert_ne!(ran_on, std::thread::current().id(), "the waiter took the op while the lane ran another");
    assert_eq!(s.wait(held, Timeout::POLL), Ok(()));
}

#[test]
fn drop_finishes_outstanding_work() {
    let done = Arc::new(AtomicUsize::new(0));
    {
        let s = sched(2);
        for i in 0..100 {
            let done = done.clone();
            s.submit(
                &mutation(i / 10, 1),
                Box::new(move || {
                    done.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }),
            );
        }
    }
    assert_eq!(done.load(Ordering::SeqCst), 100);
}

/// A job that records the thread it ran on.
fn recording(on: &Arc<Mutex<Option<std::thread::ThreadId>>>) -> Job {
    let on = on.clone();
    Box::new(move || {
        *on.lock().unwrap() = Some(std::thread::current().id());
        Ok(())
    })
}

#[test]
fn a_release_ready_at_submission_runs_on_the_submitter_and_one_that_is_not_waits() {
    let s = sched(2);
    let me = std::thread::current().id();
    // Ready at submission: done before `submit` returns, on this thread.
    let producer = s.submit(&OpSpec::independent().producing(5), noop());
    s.wait(producer, LONG).unwrap();
    let ran_on = Arc::new(Mutex::new(None));
    let release = s.submit(&OpSpec::independent().releasing(5).on_submitter_when_ready(), recording(&ran_on));
    assert_eq!(s.is_complete(release), Some(true), "ran before the submission returned");
    assert_eq!(*ran_on.lock().unwrap(), Some(me));
    // Not ready (its user is held back): it runs after the user, not inline.
    let producer = s.submit(&OpSpec::independent().producing(6), noop());
    let (job, gate) = gated();
    let user = s.submit(&OpSpec::independent().using(6), job);
    let ran_on = Arc::new(Mutex::new(None));
    let release = s.submit(&OpSpec::independent().releasing(6).on_submitter_when_ready(), recording(&ran_on));
    assert_eq!(s.is_complete(release), Some(false), "waits for the handle's user");
    assert!(matches!(s.wait(release, SHORT), Err(WaitError::Timeout { .. })));
    gate.send(()).unwrap();
    for op in [producer, user, release] {
        s.wait(op, LONG).unwrap();
    }
    assert!(ran_on.lock().unwrap().is_some());
}

/// A thread waiting on an op that runs on a lane runs the work queued
/// behind it instead of sleeping until a parked lane is woken for it. Both
/// lanes are held in gated jobs, so only the waiter can run the queued op;
/// the gates open once it has run (or after 5 s, failing the test).
#[test]
fn a_waiter_runs_queued_work_while_its_op_runs_elsewhere() {
    let s = Arc::new(sched(2));
    let started = Arc::new(AtomicUsize::new(0));
    let mut gates = Vec::new();
    let mut held = Vec::new();
    for _ in 0..2 {
        let (tx, rx): (Sender<()>, Receiver<()>) = channel();
        let started = started.clone();
        let job: Job = Box::new(move || {
            started.fetch_add(1, Ordering::SeqCst);
            let _ = rx.recv();
            Ok(())
        });
        held.push(s.submit(&OpSpec::independent(), job));
        gates.push(tx);
    }
    // A lane parked while another runs looks for work every millisecond.
    let t = std::time::Instant::now();
    while started.load(Ordering::SeqCst) < 2 {
        assert!(t.elapsed() < Duration::from_secs(10), "both lanes took a gated job");
        std::thread::sleep(Duration::from_millis(1));
    }
    let ran_on = Arc::new(Mutex::new(None));
    let queued = s.submit(&OpSpec::independent(), recording(&ran_on));
    let opener = {
        let (s, ran_on) = (s.clone(), ran_on.clone());
        std::thread::spawn(move || {
            let t = std::time::Instant::now();
            while ran_on.lock().unwrap().is_none() && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(1));
            }
            drop(gates);
            s.wait(queued, LONG).unwrap();
        })
    };
    s.wait(held[0], Timeout::INFINITE).unwrap();
    opener.join().unwrap();
    assert_eq!(*ran_on.lock().unwrap(), Some(std::thread::current().id()), "the waiter ran the queued op");
    for op in held {
        s.wait(op, LONG).unwrap();
    }
}

/// An unboxed job runs like a boxed one wherever the op runs: on the
/// submitter when it is ready there, later on a lane when it has to wait
/// (then it is boxed), and a panic in it fails the op with INTERNAL.
#[test]
fn an_unboxed_job_runs_inline_or_later_and_its_panic_fails_the_op() {
    let s = sched(2);
    let me = std::thread::current().id();
    let ran_on = Arc::new(Mutex::new(None));
    let r = ran_on.clone();
    let spec = OpSpec::independent().on_submitter_when_ready();
    let inline = s
        .submit_with(&spec, || {
            Ok::<_, Error>(Unboxed(move || {
                *r.lock().unwrap() = Some(std::thread::current().id());
                Ok(())
            }))
        })
        .unwrap();
    assert_eq!(s.is_complete(inline), Some(true), "ran before the submission returned");
    assert_eq!(*ran_on.lock().unwrap(), Some(me));
    // Held back by its producer: stored, then run once the gate opens.
    let (job, gate) = gated();
    let producer = s.submit(&OpSpec::independent().producing(9), job);
    let (later, ran) = submit_counting(&s, &OpSpec::independent().using(9).on_submitter_when_ready());
    assert!(matches!(s.wait(later, SHORT), Err(WaitError::Timeout { .. })), "waits for its producer");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    gate.send(()).unwrap();
    s.wait(producer, LONG).unwrap();
    s.wait(later, LONG).unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1, "ran exactly once");
    let panicked = s
        .submit_with(&spec, || {
            Ok::<_, Error>(Unboxed(|| -> Result<(), ovstage_sched::Failure> { panic!("unboxed kaboom") }))
        })
        .unwrap();
    let failure = s.failure(panicked).expect("the panic failed the op");
    assert_eq!(failure.error.status(), Status::Internal);
    assert!(failure.error.message().contains("unboxed kaboom"), "{}", failure.error.message());
}

/// Polls answer from the completion ring or the table and always agree
/// with the op's state: done ops poll OK (also ops far older than the
/// ring holds), failed ops poll as failed, released ops as unknown, even
/// while other threads release and submit around them.
#[test]
fn polls_agree_with_completion_failure_and_release_under_contention() {
    let s = sched(2);
    let old = s.submit(&OpSpec::independent(), noop());
    let failed = s.submit(&OpSpec::independent(), Box::new(|| Err(Error::internal("boom").into())));
    // Enough later ops that `old` is out of the ring: polled through the
    // table.
    for _ in 0..20_000 {
        let op = s.submit(&OpSpec::independent(), noop());
        s.wait(op, LONG).unwrap();
        s.release(op).unwrap();
    }
    assert_eq!(s.wait(old, LONG), Ok(()));
    assert_eq!(s.is_complete(old), Some(true));
    assert!(matches!(s.wait(failed, LONG), Err(WaitError::Failed { .. })));
    // Recent ops (in the ring). Two threads release disjoint halves,
    // polling each op before and after; a third submits and releases
    // fresh ops (fewer than would take the recent ops' slots) and polls
    // every recent op, which must be done or released, nothing else.
    let ops: Vec<OpId> = (0..4_000).map(|_| s.submit(&OpSpec::independent(), noop())).collect();
    for op in &ops {
        s.wait(*op, LONG).unwrap();
    }
    let (a, b) = ops.split_at(ops.len() / 2);
    let (s, ops) = (&s, &ops);
    std::thread::scope(|scope| {
        for half in [a, b] {
            scope.spawn(move || {
                for op in half {
                    assert_eq!(s.wait(*op, Timeout::POLL), Ok(()), "{op}: done before its release");
                    s.release(*op).unwrap();
                    assert!(matches!(s.wait(*op, Timeout::POLL), Err(WaitError::Unknown(_))), "{op}: released");
                    assert_eq!(s.is_complete(*op), None);
                }
            });
        }
        scope.spawn(move || {
            for (i, op) in ops.iter().cycle().take(8_000).enumerate() {
                match s.wait(*op, Timeout::POLL) {
                    Ok(()) | Err(WaitError::Unknown(_)) => {}
                    other => panic!("{op}: {other:?}"),
                }
                if i % 2 == 0 {
                    let fresh = s.submit(&OpSpec::independent(), noop());
                    s.wait(fresh, LONG).unwrap();
                    s.release(fresh).unwrap();
                }
            }
        });
    });
    s.release(old).unwrap();
    assert!(matches!(s.wait(old, Timeout::POLL), Err(WaitError::Unknown(_))));
    assert!(matches!(s.wait(failed, Timeout::POLL), Err(WaitError::Failed { .. })), "failures are not in the ring");
    s.release(failed).unwrap();
    assert_eq!(s.tracked_ops(), 0);
}

#[test]
fn a_marker_with_nothing_to_wait_for_is_complete_when_submitted() {
    for lanes in [1, 2] {
        let s = sched(lanes);
        let release = s.submit_marker(&OpSpec::independent().releasing(91)).expect("no op bound");
        assert_eq!(s.wait(release, Timeout::POLL), Ok(()), "{lanes} lanes: a marker nothing holds back is done");
        assert_eq!(s.is_complete(release), Some(true));
        // A finished user leaves nothing to wait for either.
        let user = s.submit(&OpSpec::independent().using(92), noop());
        assert_eq!(s.wait(user, LONG), Ok(()));
        let release = s.submit_marker(&OpSpec::independent().releasing(92)).expect("no op bound");
        assert_eq!(s.wait(release, Timeout::POLL), Ok(()), "{lanes} lanes");
        s.release(release).expect("a completed marker is released like any op");
    }
}

/// A release nothing holds back gets no node of its own (its slot holds
/// the table's shared complete node): its id still follows every earlier
/// op's, it answers as done after its ring slot was taken by far newer
/// ops, it is the oldest op a full queue names, and it is released once.
#[test]
fn a_born_complete_release_behaves_as_any_completed_op() {
    let s = Scheduler::new(&SchedulerConfig { lanes: Lanes::fixed(1), max_ops: 3, ..SchedulerConfig::default() });
    let first = s.submit(&OpSpec::independent(), noop()).unwrap();
    let release = s.submit_marker(&OpSpec::independent().releasing(94)).expect("releases are always accepted");
    assert!(release > first, "ids follow submission order");
    s.wait(first, LONG).unwrap();
    s.release(first).unwrap();
    // 2^14 later ops take every slot of the completion ring.
    for _ in 0..(1 << 14) + 8 {
        let op = s.submit(&OpSpec::independent(), noop()).unwrap();
        s.wait(op, LONG).unwrap();
        s.release(op).unwrap();
    }
    assert_eq!(s.wait(release, Timeout::POLL), Ok(()), "answered by the table");
    assert_eq!(s.is_complete(release), Some(true));
    let _a = s.submit(&OpSpec::independent(), noop()).unwrap();
    let _b = s.submit(&OpSpec::independent(), noop()).unwrap();
    let full = s.submit(&OpSpec::independent(), noop()).unwrap_err();
    assert_eq!(full.oldest, Some(release), "the oldest unreleased op is named by its own id");
    s.release(release).unwrap();
    assert!(matches!(s.wait(release, Timeout::POLL), Err(WaitError::Unknown(_))));
    assert!(s.release(release).is_err(), "released once");
    // The shared node never serves a new op: later ops run and fail on
    // their own.
    let failing = s.submit(&OpSpec::independent(), Box::new(|| Err(Error::invalid_argument("no").into()))).unwrap();
    assert!(matches!(s.wait(failing, LONG), Err(WaitError::Failed { .. })));
    let again = s.submit_marker(&OpSpec::independent().releasing(95)).unwrap();
    assert_eq!(s.wait(again, Timeout::POLL), Ok(()));
}

#[test]
fn a_marker_follows_the_pending_users_of_its_handle() {
    for lanes in [1, 2] {
        let s = sched(lanes);
        let (produce, gate_p) = gated();
        let producer = s.submit(&OpSpec::independent().producing(93), produce);
        let (consume, gate_c) = gated();
        let consumer = s.submit(&OpSpec::independent().using(93), consume);
        let release = s.submit_marker(&OpSpec::independent().releasing(93)).expect("no op bound");
        assert!(is_pending(&s, release), "{lanes} lanes: the release completed before the handle's users");
        gate_p.send(()).unwrap();
        assert_eq!(s.wait(producer, LONG), Ok(()));
        assert!(is_pending(&s, release), "{lanes} lanes: the release completed while a user was running");
        gate_c.send(()).unwrap();
        assert_eq!(s.wait(consumer, LONG), Ok(()));
        assert_eq!(s.wait(release, LONG), Ok(()), "{lanes} lanes");
    }
}

/// A brief op with nothing to wait for is answered as it is submitted, on
/// the submitting thread, and then behaves as any completed op: its id
/// follows the ops before it, it polls done, counts against the op bound
/// and is released once. Its handle orders nothing (it is complete before
/// anyone has it), so a user of that handle runs at once.
#[test]
fn a_brief_op_nothing_holds_back_is_complete_when_submitted() {
    let s = Scheduler::new(&SchedulerConfig { lanes: Lanes::fixed(2), max_ops: 3, ..SchedulerConfig::default() });
    let me = std::thread::current().id();
    let first = s.submit(&OpSpec::independent(), noop()).unwrap();
    for order in [Order::AfterFloors, Order::Independent] {
        let ran_on = Arc::new(Mutex::new(None));
        let r = ran_on.clone();
        let spec = OpSpec::new(order.clone()).producing(70).on_submitter_when_ready();
        let brief = s.submit_brief(&spec, move || *r.lock().unwrap() = Some(std::thread::current().id())).unwrap();
        assert!(brief > first, "{order:?}: ids follow submission order");
        assert_eq!(*ran_on.lock().unwrap(), Some(me), "{order:?}: answered on the submitter before it returned");
        assert_eq!(s.is_complete(brief), Some(true));
        assert_eq!(s.wait(brief, Timeout::POLL), Ok(()));
        let user = s.submit(&OpSpec::independent().using(70), noop()).unwrap();
        assert_eq!(s.wait(user, LONG), Ok(()), "{order:?}: its handle holds nothing back");
        s.release(user).unwrap();
        s.release(brief).unwrap();
        assert!(matches!(s.wait(brief, Timeout::POLL), Err(WaitError::Unknown(_))), "{order:?}: released");
        assert!(s.release(brief).is_err(), "{order:?}: released once");
    }
    let _a = s.submit(&OpSpec::independent(), noop()).unwrap();
    let _b = s.submit(&OpSpec::independent(), noop()).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let full = s.submit_brief(&OpSpec::new(Order::AfterFloors), move || {
        r.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(full.unwrap_err().oldest, Some(first), "a full queue refuses it before it runs");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

/// A brief after-floors op waits for a pending floor advance (and so for
/// the mutation the advance waits for) and answers once it has completed;
/// an independent one does not wait for it (with two lanes, where one is
/// free to answer it).
#[test]
fn a_brief_op_behind_a_pending_floor_advance_answers_after_it() {
    for lanes in [1, 2] {
        let s = sched(lanes);
        let (job, gate) = gated();
        let write = s.submit(&mutation(1, 1), job);
        let advance = s.submit(&OpSpec::new(Order::FloorAdvance { ordinal: 1, scope: FloorScope::All }), noop());
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        let spec = OpSpec::new(Order::AfterFloors).on_submitter_when_ready();
        let after = s.submit_brief(&spec, move || l.lock().unwrap().push("after floors")).unwrap();
        let l = log.clone();
        let independent =
            s.submit_brief(&OpSpec::independent(), move || l.lock().unwrap().push("independent")).unwrap();
        if lanes > 1 {
            // (One lane runs nothing while the gated write holds it.)
            assert_eq!(s.wait(independent, LONG), Ok(()), "{lanes} lanes");
        }
        assert!(is_pending(&s, after), "{lanes} lanes: answered before the advance it follows");
        assert_eq!(s.wait(after, Timeout::POLL), Err(WaitError::Timeout { lowest_pending: write }));
        gate.send(()).unwrap();
        assert_eq!(s.wait(after, LONG), Ok(()), "{lanes} lanes");
        assert_eq!(s.wait(advance, Timeout::POLL), Ok(()));
        assert_eq!(s.wait(independent, LONG), Ok(()), "{lanes} lanes");
        let log = log.lock().unwrap().clone();
        match lanes {
            1 => assert!(log.len() == 2 && log.contains(&"independent"), "each answered once: {log:?}"),
            _ => assert_eq!(log, ["independent", "after floors"], "each answered once"),
        }
    }
}

/// A brief op that panics, answered at once or after waiting, fails with
/// INTERNAL and the panic's message, is reported to the failure hook, and
/// leaves the scheduler working.
#[test]
fn a_brief_op_that_panics_fails_with_internal() {
    let (s, reported) = reporting_failures();
    let spec = OpSpec::new(Order::AfterFloors).on_submitter_when_ready();
    let at_once = s.submit_brief(&spec, || panic!("brief kaboom")).unwrap();
    let (job, gate) = gated();
    let _write = s.submit(&mutation(1, 1), job).unwrap();
    let _advance = s.submit(&OpSpec::new(Order::FloorAdvance { ordinal: 1, scope: FloorScope::All }), noop()).unwrap();
    let later = s.submit_brief(&spec, || panic!("later kaboom")).unwrap();
    gate.send(()).unwrap();
    for (op, message) in [(at_once, "brief kaboom"), (later, "later kaboom")] {
        assert!(matches!(s.wait(op, LONG), Err(WaitError::Failed { .. })), "{message}");
        let failure = s.failure(op).expect("the panic failed the op");
        assert_eq!(failure.error.status(), Status::Internal);
        assert!(failure.error.message().contains(message), "{}", failure.error.message());
        s.release(op).expect("a failed brief op is released like any op");
    }
    assert_eq!(*reported.lock().unwrap(), [at_once, later]);
    let fine = s.submit_brief(&spec, || {}).unwrap();
    assert_eq!(s.wait(fine, Timeout::POLL), Ok(()));
}

/// A brief op's work runs after the ordering lock is released: while it
/// is held up, another thread's ordered submissions go through and run,
/// and its id still precedes theirs.
#[test]
fn a_brief_op_holds_up_no_other_submission_while_it_runs() {
    let s = Arc::new(sched(2));
    let (entered, entered_rx) = channel();
    let (go, go_rx) = channel::<()>();
    let submitter = {
        let s = s.clone();
        std::thread::spawn(move || {
            s.submit_brief(&OpSpec::new(Order::AfterFloors).on_submitter_when_ready(), move || {
                entered.send(()).unwrap();
                let _ = go_rx.recv();
            })
            .unwrap()
        })
    };
    entered_rx.recv().unwrap();
    // On another thread, so that a submission held up fails this test
    // instead of hanging it.
    let (done, done_rx) = channel();
    let other = {
        let s = s.clone();
        std::thread::spawn(move || {
            let write = s.submit(&mutation(1, 1), noop());
            let advance = s.submit(&OpSpec::new(Order::FloorAdvance { ordinal: 1, scope: FloorScope::All }), noop());
            done.send((write, s.wait(advance, LONG))).unwrap();
        })
    };
    let outcome = done_rx.recv_timeout(Duration::from_secs(10));
    go.send(()).unwrap();
    let (write, advanced) = outcome.expect("an ordered submission waited for the brief op's work");
    assert_eq!(advanced, Ok(()), "an advance submitted and run while the brief op runs");
    other.join().unwrap();
    let brief = submitter.join().unwrap();
    assert!(brief < write, "its id was given before the work ran");
    assert_eq!(s.wait(brief, Timeout::POLL), Ok(()));
}

/// With one lane a brief op is executed as every op is (never beside
/// another), and a brief op that uses a handle follows its producer.
#[test]
fn a_brief_op_on_one_lane_or_using_a_handle_takes_the_usual_path() {
    let s = sched(1);
    let (job, gate) = gated();
    let running = s.submit(&OpSpec::independent(), job);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let serial = s
        .submit_brief(&OpSpec::independent().on_submitter_when_ready(), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(is_pending(&s, serial), "ran beside the one lane's running op");
    gate.send(()).unwrap();
    assert_eq!(s.wait(serial, LONG), Ok(()));
    assert_eq!(s.wait(running, LONG), Ok(()));
    let s = sched(2);
    let (job, gate) = gated();
    let producer = s.submit(&OpSpec::independent().producing(71), job);
    let r = ran.clone();
    let user = s
        .submit_brief(&OpSpec::independent().using(71).on_submitter_when_ready(), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    assert!(is_pending(&s, user), "ran before its handle's producer");
    gate.send(()).unwrap();
    assert_eq!(s.wait(user, LONG), Ok(()));
    assert_eq!(s.wait(producer, Timeout::POLL), Ok(()));
    assert_eq!(ran.load(Ordering::SeqCst), 2, "each ran once");
}

/// An op placed on its submitter with nothing to wait for (independent,
/// after floors, using a handle whose producer has run, releasing an idle
/// handle) runs there before its id is returned and then behaves as any
/// completed op (the scheduler gives it no node of its own); one whose job
/// fails (or panics) is failed with that error and reported to the failure
/// hook. One held back by a pending user of the handle it releases waits
/// for the user.
#[test]
fn an_op_on_its_submitter_with_nothing_to_wait_for_completes_before_its_id_is_returned() {
    let (s, reported) = reporting_failures();
    let me = std::thread::current().id();
    let producer = s.submit(&OpSpec::independent().producing(80), noop()).unwrap();
    s.wait(producer, LONG).unwrap();
    let specs = [
        OpSpec::independent(),
        OpSpec::new(Order::AfterFloors).producing(81),
        OpSpec::new(Order::AfterFloors).using(80),
        OpSpec::independent().releasing(82),
    ];
    for spec in specs {
        let spec = spec.on_submitter_when_ready();
        let ran_on = Arc::new(Mutex::new(None));
        let r = ran_on.clone();
        let op = s
            .submit_with(&spec, || {
                Ok::<_, Error>(Unboxed(move || {
                    *r.lock().unwrap() = Some(std::thread::current().id());
                    Ok(())
                }))
            })
            .unwrap();
        assert_eq!(*ran_on.lock().unwrap(), Some(me), "{spec:?}: ran on the submitter before it returned");
        assert_eq!(s.wait(op, Timeout::POLL), Ok(()), "{spec:?}");
        assert_eq!(s.pending_ops(), 0, "{spec:?}");
        s.release(op).unwrap();
        assert!(s.release(op).is_err(), "{spec:?}: released once");
    }
    // A handle used by such an op holds its release back on nothing.
    let release = s.submit_marker(&OpSpec::independent().releasing(80)).unwrap();
    assert_eq!(s.wait(release, Timeout::POLL), Ok(()));
    let spec = OpSpec::new(Order::AfterFloors).on_submitter_when_ready();
    let failed = s
        .submit_with(&spec, || {
            Ok::<_, Error>(Unboxed(|| -> Result<(), ovstage_sched::Failure> {
                Err(Error::invalid_argument("born and failed").into())
            }))
        })
        .unwrap();
    let panicked = s
        .submit_with(&spec, || {
            Ok::<_, Error>(Unboxed(|| -> Result<(), ovstage_sched::Failure> { panic!("born kaboom") }))
        })
        .unwrap();
    for (op, status, message) in
        [(failed, Status::InvalidArgument, "born and failed"), (panicked, Status::Internal, "born kaboom")]
    {
        assert!(matches!(s.wait(op, Timeout::POLL), Err(WaitError::Failed { .. })), "{message}");
        let failure = s.failure(op).expect("failed");
        assert_eq!(failure.error.status(), status);
        assert!(failure.error.message().contains(message), "{}", failure.error.message());
        s.release(op).expect("a failed op is released like any op");
    }
    assert_eq!(*reported.lock().unwrap(), [failed, panicked]);
    // A pending user holds a release back.
    let (job, gate) = gated();
    let user = s.submit(&OpSpec::independent().using(83), job).unwrap();
    let (release, ran) = submit_counting(&s, &OpSpec::independent().releasing(83).on_submitter_when_ready());
    assert!(is_pending(&s, release), "the release ran before its handle's user");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    gate.send(()).unwrap();
    assert_eq!(s.wait(user, LONG), Ok(()));
    assert_eq!(s.wait(release, LONG), Ok(()));
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}
