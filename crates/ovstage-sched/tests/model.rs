//! Model-based check of the ordering rules: random op mixes, submitted from
//! one or several threads onto one or several lanes; every pair of ops the
//! rules order must not overlap, and the later one must start after the
//! earlier one ended. Submission order is op id order (ids are allocated
//! while the ordering state is locked).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ovstage_sched::{Cells, FloorScope, Lanes, OpSpec, Order, QueueFull, Scheduler, SchedulerConfig};
use ovstage_types::{OpId, Timeout};
use proptest::prelude::*;
use smallvec::SmallVec;

/// A submission the model's check refused (or, never here, the op bound).
struct Refused;

impl From<QueueFull> for Refused {
    fn from(_: QueueFull) -> Refused {
        Refused
    }
}

#[derive(Clone, Debug)]
enum Gen {
    Mutation { ordinal: u64, keys: Vec<u64>, all: bool, barrier: bool },
    Advance { ordinal: u64, scope: u8, keys: Vec<u64> },
    Read,
    Produce(u64),
    Use(u64),
    Release(u64),
}

fn gen_op() -> impl Strategy<Value = Gen> {
    prop_oneof![
        6 => (0u64..8, prop::collection::vec(0u64..4, 1..3), prop::bool::weighted(0.1), prop::bool::weighted(0.1))
            .prop_map(|(ordinal, keys, all, barrier)| Gen::Mutation { ordinal, keys, all, barrier }),
        2 => (0u64..8, 0u8..3, prop::collection::vec(0u64..4, 0..3))
            .prop_map(|(ordinal, scope, keys)| Gen::Advance { ordinal, scope, keys }),
        1 => Just(Gen::Read),
        1 => (0u64..3).prop_map(Gen::Produce),
        2 => (0u64..3).prop_map(Gen::Use),
        1 => (0u64..3).prop_map(Gen::Release),
    ]
}

fn scope_of(scope: u8, keys: &[u64]) -> FloorScope {
    let keys: SmallVec<[u64; 4]> = keys.iter().copied().collect();
    match scope {
        0 => FloorScope::All,
        1 => FloorScope::Include(keys),
        _ => FloorScope::Exclude(keys),
    }
}

fn spec_of(g: &Gen) -> OpSpec {
    match g {
        Gen::Mutation { ordinal, keys, all, barrier } => {
            let cells = if *all { Cells::all() } else { Cells::keys(keys.iter().copied()) };
            if *barrier {
                OpSpec::new(Order::Barrier { ordinal: *ordinal, cells })
            } else {
                OpSpec::new(Order::Mutation { ordinal: *ordinal, cells })
            }
        }
        Gen::Advance { ordinal, scope, keys } => {
            OpSpec::new(Order::FloorAdvance { ordinal: *ordinal, scope: scope_of(*scope, keys) })
        }
        Gen::Read => OpSpec::new(Order::AfterFloors),
        Gen::Produce(h) => OpSpec::independent().producing(*h),
        Gen::Use(h) => OpSpec::independent().using(*h),
        Gen::Release(h) => OpSpec::independent().releasing(*h),
    }
}

fn overlaps(a: &Gen, b: &Gen) -> bool {
    match (a, b) {
        (Gen::Mutation { keys: ka, all: aa, .. }, Gen::Mutation { keys: kb, all: ab, .. }) => {
            *aa || *ab || ka.iter().any(|k| kb.contains(k))
        }
        _ => false,
    }
}

fn in_scope(m: &Gen, scope: u8, keys: &[u64]) -> bool {
    let Gen::Mutation { keys: mk, all, .. } = m else {
        return false;
    };
    *all || match scope {
        0 => true,
        1 => mk.iter().any(|k| keys.contains(k)),
        _ => keys.is_empty() || mk.iter().any(|k| !keys.contains(k)),
    }
}

/// Whether the rules require `b` (submitted later) to run after `a`.
/// `released` tells whether a release of `a`'s handle came between them
/// (after it, a new producer starts a new handle life).
fn must_follow(a: &Gen, b: &Gen) -> bool {
    match (a, b) {
        (Gen::Mutation { ordinal: oa, barrier: ba, .. }, Gen::Mutation { ordinal: ob, barrier: bb, .. }) => {
            (oa == ob || *ba || *bb) && overlaps(a, b)
        }
        (Gen::Mutation { ordinal: oa, .. }, Gen::Advance { ordinal, scope, keys }) => {
            oa <= ordinal && in_scope(a, *scope, keys)
        }
        (Gen::Advance { .. }, Gen::Advance { .. } | Gen::Read) => true,
        _ => false,
    }
}

/// Models handle lifetimes: use/release only while the handle is produced
/// and not released. (The stage's floor precondition is enforced at
/// submission by `run`; `run_with(.., false)` leaves it out.)
fn sanitize(ops: Vec<Gen>) -> Vec<Gen> {
    let mut live = [false; 3];
    let mut out = Vec::new();
    for op in ops {
        match &op {
            Gen::Produce(h) if live[*h as usize] => continue,
            Gen::Produce(h) => live[*h as usize] = true,
            Gen::Use(h) if !live[*h as usize] => continue,
            Gen::Release(h) if !live[*h as usize] => continue,
            Gen::Release(h) => live[*h as usize] = false,
            _ => {}
        }
        out.push(op);
    }
    out
}

fn normalized(g: Gen) -> Gen {
    match g {
        Gen::Advance { ordinal, scope: 2, keys } if keys.is_empty() => Gen::Advance { ordinal, scope: 0, keys },
        g => g,
    }
}

/// Handle relations: `b` uses/releases the handle produced by `a` with no
/// release in between, or `b` releases a handle `a` used in that life.
fn handle_follow(ops: &[Gen], i: usize, j: usize) -> bool {
    let handle_of = |g: &Gen| match g {
        Gen::Produce(h) | Gen::Use(h) | Gen::Release(h) => Some(*h),
        _ => None,
    };
    let (Some(ha), Some(hb)) = (handle_of(&ops[i]), handle_of(&ops[j])) else {
        return false;
    };
    if ha != hb || ops[i + 1..j].iter().any(|g| matches!(g, Gen::Release(h) if *h == ha)) {
        return false;
    }
    matches!((&ops[i], &ops[j]), (Gen::Produce(_), Gen::Use(_) | Gen::Release(_)) | (Gen::Use(_), Gen::Release(_)))
}

/// Submits `ops` (with the stage's floor precondition enforced when
/// `precondition`; the rules must hold either way).
fn run(ops: &[Gen], lanes: usize, threads: usize) {
    run_with(ops, lanes, threads, true);
}

fn run_with(ops: &[Gen], lanes: usize, threads: usize, precondition: bool) {
    let s = Scheduler::new(&SchedulerConfig { lanes: Lanes::fixed(lanes), ..SchedulerConfig::default() });
    let clock = Arc::new(AtomicU64::new(1));
    // (index into ops, start, end)
    let spans: Arc<Mutex<Vec<(usize, u64, u64)>>> = Arc::default();
    // The precondition of `Order::FloorAdvance`, enforced the way the stage
    // does: checked while the ordering state is locked.
    let sealed_all: Mutex<Option<u64>> = Mutex::new(None);
    let submit = |idx: usize| -> Option<(OpId, usize)> {
        let (clock, spans) = (clock.clone(), spans.clone());
        let check = || {
            let mut sealed = sealed_all.lock().unwrap();
            match &ops[idx] {
                Gen::Mutation { ordinal, .. } if precondition && sealed.is_some_and(|s| *ordinal <= s) => {
                    return Err(Refused);
                }
                Gen::Advance { ordinal, scope: 0, .. } => *sealed = Some(sealed.map_or(*ordinal, |s| s.max(*ordinal))),
                _ => {}
            }
            Ok(())
        };
        // Every other op asks to run on its submitter when nothing holds it
        // back (as the stage's small ops do): then it runs there at once,
        // born complete where its ordering files nothing.
        let spec =
            if idx.is_multiple_of(2) { spec_of(&ops[idx]).on_submitter_when_ready() } else { spec_of(&ops[idx]) };
        let id = s.submit_checked(
            &spec,
            Box::new(move || {
                let start = clock.fetch_add(1, Ordering::SeqCst);
                std::hint::black_box((0..50).sum::<u64>());
                let end = clock.fetch_add(1, Ordering::SeqCst);
                spans.lock().unwrap().push((idx, start, end));
                Ok(())
            }),
            check,
        );
        Some((id.ok()?, idx))
    };
    let submitted: Vec<(OpId, usize)> = if threads == 1 {
        (0..ops.len()).filter_map(submit).collect()
    } else {
        // Handle ops must keep their relative order; give them all to thread 0.
        let out = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for t in 0..threads {
                let (out, submit) = (&out, &submit);
                scope.spawn(move || {
                    for idx in (0..ops.len()).filter(|i| {
                        let handle_op = matches!(ops[*i], Gen::Produce(_) | Gen::Use(_) | Gen::Release(_));
                        let advance = matches!(ops[*i], Gen::Advance { .. });
                        if handle_op || advance { t == 0 } else { i % threads == t }
                    }) {
                        if let Some(r) = submit(idx) {
                            out.lock().unwrap().push(r);
                        }
                    }
                });
            }
        });
        out.into_inner().unwrap()
    };
    for (id, _) in &submitted {
        s.wait(*id, Timeout::INFINITE).unwrap();
    }
    let mut by_idx = vec![(0u64, 0u64, OpId::from_raw(u64::MAX).unwrap()); ops.len()];
    let spans = spans.lock().unwrap();
    assert_eq!(spans.len(), submitted.len(), "every accepted op ran exactly once");
    for (idx, start, end) in spans.iter() {
        by_idx[*idx].0 = *start;
        by_idx[*idx].1 = *end;
    }
    for (id, idx) in &submitted {
        by_idx[*idx].2 = *id;
    }
    // Submission order is id order; handle ops were submitted by one thread
    // in program order, so their ids follow `ops` order too.
    let mut order: Vec<usize> = submitted.iter().map(|(_, idx)| *idx).collect();
    order.sort_by_key(|i| by_idx[*i].2);
    let ordered: Vec<Gen> = order.iter().map(|i| ops[*i].clone()).collect();
    for a in 0..ordered.len() {
        for b in a + 1..ordered.len() {
            let (ia, ib) = (order[a], order[b]);
            let follow = must_follow(&ordered[a], &ordered[b]) || handle_follow(&ordered, a, b);
            if follow {
                assert!(
                    by_idx[ib].0 > by_idx[ia].1,
                    "{:?} (id {}) must run after {:?} (id {}) but started at {} before it ended at {}",
                    ordered[b],
                    by_idx[ib].2.get(),
                    ordered[a],
                    by_idx[ia].2.get(),
                    by_idx[ib].0,
                    by_idx[ia].1
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn ordering_rules_hold_one_lane(ops in prop::collection::vec(gen_op(), 1..60)) {
        let ops: Vec<Gen> = sanitize(ops).into_iter().map(normalized).collect();
        run(&ops, 1, 1);
    }

    #[test]
    fn ordering_rules_hold_several_lanes(ops in prop::collection::vec(gen_op(), 1..80)) {
        let ops: Vec<Gen> = sanitize(ops).into_iter().map(normalized).collect();
        run(&ops, 4, 1);
    }

    #[test]
    fn ordering_rules_hold_without_the_floor_precondition(ops in prop::collection::vec(gen_op(), 1..80)) {
        let ops: Vec<Gen> = sanitize(ops).into_iter().map(normalized).collect();
        run_with(&ops, 1, 1, false);
        run_with(&ops, 4, 1, false);
    }

    #[test]
    fn ordering_rules_hold_several_submitters(ops in prop::collection::vec(gen_op(), 1..80)) {
        let ops: Vec<Gen> = sanitize(ops).into_iter().map(normalized).collect();
        run(&ops, 3, 3);
    }
}
