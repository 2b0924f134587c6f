//! Model-based test of the stage: random sequences of writes (fixed and
//! array attributes), map sessions, deletes, clones, floor advances, reads
//! (through path lists and filter queries) and waits, run with one lane and
//! with several, against a small sequential model. Every enqueue status,
//! every op outcome and every read result must match the model.
//!
//! Nothing waits between submissions unless the sequence says so: ops at
//! different ordinals run in any order on several lanes, and the outcome
//! must still be the sequential model's (admission is decided at enqueue,
//! in submission order; deletes and clones are ordered with the mutations
//! of what they touch). Filter queries see the committed state when they
//! run, so the harness lets pending work finish before one.

mod common;

use std::collections::HashMap;

use common::*;
use ovstage::{
    AttrRef, DType, FloorScope, MapDesc, OpId, OrdinalRange, Predicate, PrimMode, PrimPath, QueryHandle, Stage,
    StageConfig, Status, Tensor, Timeout, WriteData,
};
use proptest::prelude::*;

const PRIMS: usize = 4;
/// `a` and `b` hold one f32 per prim; `c` holds f32 arrays.
const ATTRS: [&str; 3] = ["a", "b", "c"];
const ARRAY: usize = 2;

#[derive(Clone, Debug)]
enum Op {
    Write { attr: usize, prims: u8, ordinal: u64, value: i16 },
    Map { attr: usize, prims: u8, ordinal: u64, value: i16 },
    Delete { attr: Option<usize>, prims: u8, ordinal: u64 },
    Clone { source: usize, target: usize, ordinal: u64 },
    Advance { ordinal: u64, scope: u8, attr: usize },
    Read { attr: usize, prims: u8, start: Option<u64>, end: Option<u64> },
    QueryRead { attr: usize, end: Option<u64> },
    Wait,
}

fn op() -> impl Strategy<Value = Op> {
    let prims = 1u8..(1 << PRIMS);
    prop_oneof![
        8 => (0usize..3, prims.clone(), 1u64..12, any::<i16>())
            .prop_map(|(attr, prims, ordinal, value)| Op::Write { attr, prims, ordinal, value }),
        2 => (0usize..2, prims.clone(), 1u64..12, any::<i16>())
            .prop_map(|(attr, prims, ordinal, value)| Op::Map { attr, prims, ordinal, value }),
        2 => (prop::option::weighted(0.6, 0usize..3), prims.clone(), 1u64..12)
            .prop_map(|(attr, prims, ordinal)| Op::Delete { attr, prims, ordinal }),
        1 => (0usize..PRIMS, 0usize..PRIMS, 1u64..12).prop_map(|(source, target, ordinal)| Op::Clone { source, target, ordinal }),
        3 => (1u64..12, 0u8..4, 0usize..3).prop_map(|(ordinal, scope, attr)| Op::Advance { ordinal, scope, attr }),
        4 => (0usize..3, prims, prop::option::weighted(0.3, 0u64..12), prop::option::weighted(0.7, 0u64..12))
            .prop_map(|(attr, prims, start, end)| Op::Read { attr, prims, start, end }),
        1 => (0usize..3, prop::option::weighted(0.5, 0u64..12)).prop_map(|(attr, end)| Op::QueryRead { attr, end }),
        1 => Just(Op::Wait),
    ]
}

type Value = Vec<f32>;
type Event = (u64, u64, Option<Value>); // (ordinal, submission seq, value or tombstone)

/// What prim `p` holds when written `value`: one f32, or an array whose
/// length depends on the prim (0 to 2 elements).
fn value_of(attr: usize, p: usize, value: i16) -> Value {
    let v = f32::from(value);
    if attr == ARRAY { vec![v; (p + value.unsigned_abs() as usize) % 3] } else { vec![v] }
}

#[derive(Default)]
struct Model {
    base: u64,
    own: [u64; 3],
    cells: HashMap<(usize, usize), Vec<Event>>, // (prim, attr)
    live: [bool; PRIMS],
    /// (attr or None for every attribute, ordinal, prims)
    unsealed: Vec<(Option<usize>, u64, u8)>,
    seq: u64,
}

fn prims_of(mask: u8) -> impl Iterator<Item = usize> {
    (0..PRIMS).filter(move |p| mask & (1 << p) != 0)
}

impl Model {
    fn floor(&self, attr: usize) -> u64 {
        self.own[attr].max(self.base)
    }

    fn latest(&self, p: usize, a: usize) -> Option<&Event> {
        self.cells.get(&(p, a))?.iter().max_by_key(|e| (e.0, e.1))
    }

    fn live_cell(&self, p: usize, a: usize) -> bool {
        self.latest(p, a).is_some_and(|e| e.2.is_some())
    }

    fn at(&self, p: usize, a: usize, at: u64) -> Option<Value> {
        self.cells.get(&(p, a))?.iter().filter(|e| e.0 <= at).max_by_key(|e| (e.0, e.1)).and_then(|e| e.2.clone())
    }

    /// Whether an accepted, unsealed change of `attr` (any attribute for
    /// `None`) above `ordinal` touches one of `prims`.
    fn blocked(&self, attr: Option<usize>, prims: u8, ordinal: u64) -> bool {
        self.unsealed
            .iter()
            .any(|(a, o, ps)| *o > ordinal && ps & prims != 0 && (attr.is_none() || a.is_none() || *a == attr))
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn write(&mut self, attr: usize, prims: u8, ordinal: u64, value: i16) {
        let seq = self.next_seq();
        for p in prims_of(prims) {
            self.live[p] = true;
            self.cells.entry((p, attr)).or_default().push((ordinal, seq, Some(value_of(attr, p, value))));
        }
    }

    fn delete(&mut self, attr: Option<usize>, prims: u8, ordinal: u64, floors: [u64; 3]) -> Result<(), Status> {
        let attrs: Vec<usize> = attr.map_or_else(|| vec![0, 1, 2], |a| vec![a]);
        for &a in &attrs {
            let targets: Vec<usize> = prims_of(prims).filter(|p| self.live_cell(*p, a)).collect();
            if attr.is_none() && !targets.is_empty() && ordinal <= floors[a] {
                return Err(Status::WriteFloorViolation);
            }
        }
        let seq = self.next_seq();
        for &a in &attrs {
            for p in prims_of(prims).filter(|p| self.live_cell(*p, a)).collect::<Vec<_>>() {
                self.cells.entry((p, a)).or_default().push((ordinal, seq, None));
            }
        }
        if attr.is_none() {
            for p in prims_of(prims) {
                self.live[p] = false;
            }
        }
        Ok(())
    }

    fn clone_prim(&mut self, source: usize, target: usize, ordinal: u64, floors: [u64; 3]) -> Result<(), Status> {
        if !self.live[source] {
            return Err(Status::NotFound);
        }
        if self.live[target] {
            return Err(Status::PrimNotFound);
        }
        let mut copies = Vec::new();
        for (a, floor) in floors.iter().enumerate() {
            let Some(value) = self.latest(source, a).and_then(|e| e.2.clone()) else { continue };
            if ordinal <= *floor {
                return Err(Status::WriteFloorViolation);
            }
            if self.cells.get(&(target, a)).is_some_and(|ev| ev.iter().any(|e| e.0 > ordinal)) {
                return Err(Status::WriteFloorViolation);
            }
            copies.push((a, value));
        }
        let seq = self.next_seq();
        self.live[target] = true;
        for (a, value) in copies {
            self.cells.entry((target, a)).or_default().push((ordinal, seq, Some(value)));
        }
        Ok(())
    }

    fn prune(&mut self) {
        let floors = [self.floor(0), self.floor(1), self.floor(2)];
        let base = self.base;
        self.unsealed.retain(|(a, o, _)| match a {
            Some(a) => *o > floors[*a],
            None => *o > base,
        });
    }

    /// Expected read over `order` (prim numbers in query order): enqueue
    /// error, or sorted values and tombstones.
    fn read(&self, attr: usize, order: &[usize], start: Option<u64>, end: u64) -> Result<ReadOut, Status> {
        let mask = order.iter().fold(0u8, |m, p| m | 1 << p);
        let floor = self.floor(attr);
        if end > floor
            && self
                .unsealed
                .iter()
                .any(|(a, o, ps)| a.is_none_or(|a| a == attr) && *o > floor && *o <= end && ps & mask != 0)
        {
            return Err(Status::WriteFloorViolation);
        }
        let eff = end.min(floor);
        let mut values = Vec::new();
        let mut tombs = Vec::new();
        for (i, p) in order.iter().enumerate() {
            match start {
                None => {
                    if let Some(v) = self.at(*p, attr, eff) {
                        values.push((i as u32, v));
                    }
                }
                Some(a) if a <= eff => {
                    let changed =
                        self.cells.get(&(*p, attr)).is_some_and(|ev| ev.iter().any(|e| e.0 >= a && e.0 <= eff));
                    if changed {
                        match self.at(*p, attr, eff) {
                            Some(v) => values.push((i as u32, v)),
                            None => tombs.push(i as u32),
                        }
                    }
                }
                Some(_) => {}
            }
        }
        Ok((values, tombs))
    }
}

struct Pending {
    op: OpId,
    expect: Result<(), Status>,
}

fn path(p: usize) -> String {
    format!("/M/P{p}")
}

fn settle(stage: &Stage, pending: &mut Vec<Pending>) -> Result<(), TestCaseError> {
    for p in pending.drain(..) {
        let got = stage.wait_ok(p.op, LONG).map_err(|e| e.status());
        prop_assert_eq!(got, p.expect, "outcome of {}", p.op);
    }
    Ok(())
}

fn payload(attr: usize, prims: u8, value: i16) -> WriteData {
    if attr == ARRAY {
        let rows = prims_of(prims)
            .map(|p| {
                let v = value_of(attr, p, value);
                let n = v.len() as u64;
                Tensor::from_vec(v, &[n]).unwrap()
            })
            .collect();
        WriteData::array_rows(rows)
    } else {
        WriteData::fixed(Tensor::rows(vec![f32::from(value); prims.count_ones() as usize], 1).unwrap())
    }
}

fn run(ops: &[Op], lanes: usize) -> Result<(), TestCaseError> {
    let stage = Stage::with_config("model", StageConfig::default().with_lanes(lanes).with_history_depth(1000));
    // The attributes exist from the start, so EXCLUDE scopes are well defined.
    let all: Vec<AttrRef<'_>> = ATTRS.iter().map(|a| (*a).into()).collect();
    stage.wait_ok(stage.advance_write_floor(0u64, FloorScope::Include(all)).unwrap(), LONG).unwrap();
    let ids: Vec<PrimPath> = (0..PRIMS).map(|p| stage.paths().intern_path(&path(p)).unwrap()).collect();
    let mut queries: HashMap<u8, QueryHandle> = HashMap::new();
    let mut q = |mask: u8| {
        *queries.entry(mask).or_insert_with(|| {
            let paths: Vec<String> = prims_of(mask).map(path).collect();
            query(&stage, &paths.iter().map(String::as_str).collect::<Vec<_>>())
        })
    };
    let mut m = Model::default();
    let mut pending: Vec<Pending> = Vec::new();
    let rejected = |got: Result<OpId, ovstage::Error>| got.map(|_| ()).map_err(|e| e.status());
    for op in ops {
        match op {
            Op::Write { attr, prims, ordinal, value } => {
                let got = stage.write_attribute(
                    q(*prims),
                    ATTRS[*attr],
                    *ordinal,
                    payload(*attr, *prims, *value),
                    PrimMode::Upsert,
                );
                if *ordinal <= m.floor(*attr) {
                    prop_assert_eq!(rejected(got), Err(Status::WriteFloorViolation));
                    continue;
                }
                let op = got.map_err(|e| TestCaseError::fail(format!("write rejected: {e}")))?;
                if m.blocked(Some(*attr), *prims, *ordinal) {
                    // An ordinal conflict fails the op when it runs.
                    pending.push(Pending { op, expect: Err(Status::WriteFloorViolation) });
                    continue;
                }
                m.unsealed.push((Some(*attr), *ordinal, *prims));
                m.write(*attr, *prims, *ordinal, *value);
                pending.push(Pending { op, expect: Ok(()) });
            }
            Op::Map { attr, prims, ordinal, value } => {
                let got = stage.map_attribute(q(*prims), MapDesc::new(ATTRS[*attr], DType::F32), *ordinal, None);
                if *ordinal <= m.floor(*attr) {
                    prop_assert_eq!(got.map(|_| ()).map_err(|e| e.status()), Err(Status::WriteFloorViolation));
                    continue;
                }
                let map = got.map_err(|e| TestCaseError::fail(format!("map rejected: {e}")))?;
                if m.blocked(Some(*attr), *prims, *ordinal) {
                    // An ordinal conflict fails the session's setup.
                    let fetched =
                        stage.fetch_map_next(map.handle, Timeout::INFINITE).map(|_| ()).map_err(|e| e.status());
                    prop_assert_eq!(fetched, Err(Status::WriteFloorViolation));
                    pending.push(Pending { op: map.op, expect: Err(Status::WriteFloorViolation) });
                    let _ = stage.unmap_attribute(map.handle, []).map(|op| stage.wait_ok(op, LONG));
                    continue;
                }
                m.unsealed.push((Some(*attr), *ordinal, *prims));
                let mut group = stage.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().expect("one group");
                group.values_mut::<f32>(0).unwrap().fill(f32::from(*value));
                let commit = stage.unmap_attribute(map.handle, [group]).unwrap();
                m.write(*attr, *prims, *ordinal, *value);
                pending.push(Pending { op: map.op, expect: Ok(()) });
                pending.push(Pending { op: commit, expect: Ok(()) });
            }
            Op::Delete { attr, prims, ordinal } => {
                let names: Vec<AttrRef<'_>> = attr.iter().map(|a| ATTRS[*a].into()).collect();
                let got = stage.delete_attributes(q(*prims), &names, *ordinal);
                let floor = attr.map_or(m.base, |a| m.floor(a));
                if *ordinal <= floor {
                    prop_assert_eq!(rejected(got), Err(Status::WriteFloorViolation));
                    continue;
                }
                let op = got.map_err(|e| TestCaseError::fail(format!("delete rejected: {e}")))?;
                if m.blocked(*attr, *prims, *ordinal) {
                    pending.push(Pending { op, expect: Err(Status::WriteFloorViolation) });
                    continue;
                }
                m.unsealed.push((*attr, *ordinal, *prims));
                let floors = [m.floor(0), m.floor(1), m.floor(2)];
                let expect = m.delete(*attr, *prims, *ordinal, floors);
                pending.push(Pending { op, expect });
            }
            Op::Clone { source, target, ordinal } => {
                let got = stage.clone_subtree(ids[*source], &[ids[*target]], *ordinal);
                let op = got.map_err(|e| TestCaseError::fail(format!("clone rejected: {e}")))?;
                if *ordinal <= m.base {
                    // Accepted; fails when it runs (source, then target, then the floor).
                    let expect = if !m.live[*source] {
                        Err(Status::NotFound)
                    } else if m.live[*target] {
                        Err(Status::PrimNotFound)
                    } else {
                        Err(Status::WriteFloorViolation)
                    };
                    pending.push(Pending { op, expect });
                    continue;
                }
                m.unsealed.push((None, *ordinal, (1 << PRIMS) - 1));
                let floors = [m.floor(0), m.floor(1), m.floor(2)];
                let expect = m.clone_prim(*source, *target, *ordinal, floors);
                pending.push(Pending { op, expect });
            }
            Op::Advance { ordinal, scope, attr } => {
                let (scope, own): (FloorScope<'_>, Vec<usize>) = match scope {
                    0 | 3 => (FloorScope::All, vec![]),
                    1 => (FloorScope::Include(vec![ATTRS[*attr].into()]), vec![*attr]),
                    _ => (FloorScope::Exclude(vec![ATTRS[*attr].into()]), (0..3).filter(|a| a != attr).collect()),
                };
                let all = matches!(scope, FloorScope::All);
                let op = stage.advance_write_floor(*ordinal, scope).unwrap();
                if all {
                    m.base = m.base.max(*ordinal);
                }
                for a in own {
                    m.own[a] = m.own[a].max(*ordinal);
                }
                m.prune();
                pending.push(Pending { op, expect: Ok(()) });
            }
            Op::Read { attr, prims, start, end } => {
                let end_v = end.unwrap_or(u64::MAX);
                let start = start.filter(|s| *s <= end_v);
                let range = match start {
                    Some(s) => OrdinalRange::changes(s, end_v).unwrap(),
                    None => OrdinalRange::snapshot(end_v),
                };
                let order: Vec<usize> = prims_of(*prims).collect();
                let expect = m.read(*attr, &order, start, end_v);
                let got = read_f32(&stage, q(*prims), ATTRS[*attr], range).map_err(|e| e.status());
                prop_assert_eq!(got, expect, "read {:?} of {} over {:#b}", range, ATTRS[*attr], prims);
            }
            Op::QueryRead { attr, end } => {
                settle(&stage, &mut pending)?;
                let fq = stage.query(&[Predicate::has(ATTRS[*attr])], &[]).unwrap();
                let result = stage.fetch_query_result(fq.handle, Timeout::INFINITE).unwrap();
                let mut order: Vec<usize> = (0..PRIMS).filter(|p| m.live_cell(*p, *attr)).collect();
                order.sort_by_key(|p| ids[*p]);
                prop_assert_eq!(result.total_prim_count, order.len(), "HAS {}", ATTRS[*attr]);
                let end_v = end.unwrap_or(u64::MAX);
                let expect = m.read(*attr, &order, None, end_v);
                let got =
                    read_f32(&stage, fq.handle, ATTRS[*attr], OrdinalRange::snapshot(end_v)).map_err(|e| e.status());
                prop_assert_eq!(got, expect, "read of {} through HAS at {}", ATTRS[*attr], end_v);
                pending.push(Pending { op: stage.release_query(fq.handle).unwrap(), expect: Ok(()) });
            }
            Op::Wait => settle(&stage, &mut pending)?,
        }
    }
    settle(&stage, &mut pending)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn stage_matches_model_one_lane(ops in prop::collection::vec(op(), 1..50)) {
        run(&ops, 1)?;
    }

    #[test]
    fn stage_matches_model_several_lanes(ops in prop::collection::vec(op(), 1..50)) {
        run(&ops, 3)?;
    }
}
