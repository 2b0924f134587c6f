//! Model-based test of the stage: random sequences of writes, deletes, floor
//! advances, reads and waits, run with one lane and with several, against a
//! small sequential model. Every enqueue status, every op outcome and every
//! read result must match the model.
//!
//! Nothing waits between submissions unless the sequence says so: ops at
//! different ordinals run in any order on several lanes, and the outcome
//! must still be the sequential model's (admission is decided at enqueue,
//! in submission order; deletes are ordered with the writes of what they
//! delete).

mod common;

use std::collections::HashMap;

use common::*;
use ovstage::{AttrRef, FloorScope, OpId, OrdinalRange, PrimMode, QueryHandle, Stage, StageConfig, Status, WriteData};
use proptest::prelude::*;

const PRIMS: usize = 4;
const ATTRS: [&str; 2] = ["a", "b"];

#[derive(Clone, Debug)]
enum Op {
    Write { attr: usize, prims: u8, ordinal: u64, value: i16 },
    Delete { attr: Option<usize>, prims: u8, ordinal: u64 },
    Advance { ordinal: u64, scope: u8, attr: usize },
    Read { attr: usize, prims: u8, start: Option<u64>, end: Option<u64> },
    Wait,
}

fn op() -> impl Strategy<Value = Op> {
    let prims = 1u8..(1 << PRIMS);
    prop_oneof![
        8 => (0usize..2, prims.clone(), 1u64..12, any::<i16>())
            .prop_map(|(attr, prims, ordinal, value)| Op::Write { attr, prims, ordinal, value }),
        2 => (prop::option::weighted(0.6, 0usize..2), prims.clone(), 1u64..12)
            .prop_map(|(attr, prims, ordinal)| Op::Delete { attr, prims, ordinal }),
        3 => (1u64..12, 0u8..4, 0usize..2).prop_map(|(ordinal, scope, attr)| Op::Advance { ordinal, scope, attr }),
        4 => (0usize..2, prims, prop::option::weighted(0.3, 0u64..12), prop::option::weighted(0.7, 0u64..12))
            .prop_map(|(attr, prims, start, end)| Op::Read { attr, prims, start, end }),
        1 => Just(Op::Wait),
    ]
}

type Event = (u64, u64, Option<f32>); // (ordinal, submission seq, value or tombstone)

#[derive(Default)]
struct Model {
    base: u64,
    own: [u64; 2],
    cells: HashMap<(usize, usize), Vec<Event>>, // (prim, attr)
    live: [bool; PRIMS],
    /// (attr or None for whole-prim, ordinal, prims)
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

    fn at(&self, p: usize, a: usize, at: u64) -> Option<f32> {
        self.cells.get(&(p, a))?.iter().filter(|e| e.0 <= at).max_by_key(|e| (e.0, e.1)).and_then(|e| e.2)
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

    /// Outcome of a write that passed its enqueue checks.
    fn write(&mut self, attr: usize, prims: u8, ordinal: u64, value: f32) -> Result<(), Status> {
        let seq = self.next_seq();
        for p in prims_of(prims) {
            if !self.live[p] {
                self.live[p] = true;
            }
            self.cells.entry((p, attr)).or_default().push((ordinal, seq, Some(value)));
        }
        Ok(())
    }

    fn delete(&mut self, attr: Option<usize>, prims: u8, ordinal: u64, floors: [u64; 2]) -> Result<(), Status> {
        let attrs: Vec<usize> = attr.map_or_else(|| vec![0, 1], |a| vec![a]);
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
                if self.live[p] {
                    self.live[p] = false;
                }
            }
        }
        Ok(())
    }

    fn prune(&mut self) {
        let floors = [self.floor(0), self.floor(1)];
        let base = self.base;
        self.unsealed.retain(|(a, o, _)| match a {
            Some(a) => *o > floors[*a],
            None => *o > base,
        });
    }

    /// Expected read: enqueue error, or sorted values and tombstones.
    #[allow(clippy::type_complexity)]
    fn read(
        &self,
        attr: usize,
        prims: u8,
        start: Option<u64>,
        end: u64,
    ) -> Result<(Vec<(u32, Vec<f32>)>, Vec<u32>), Status> {
        let floor = self.floor(attr);
        if end > floor
            && self
                .unsealed
                .iter()
                .any(|(a, o, ps)| a.is_none_or(|a| a == attr) && *o > floor && *o <= end && ps & prims != 0)
        {
            return Err(Status::WriteFloorViolation);
        }
        let eff = end.min(floor);
        let order: Vec<usize> = prims_of(prims).collect();
        let mut values = Vec::new();
        let mut tombs = Vec::new();
        match start {
            None => {
                for (i, p) in order.iter().enumerate() {
                    if let Some(v) = self.at(*p, attr, eff) {
                        values.push((i as u32, vec![v]));
                    }
                }
            }
            Some(a) => {
                if a <= eff {
                    for (i, p) in order.iter().enumerate() {
                        let changed =
                            self.cells.get(&(*p, attr)).is_some_and(|ev| ev.iter().any(|e| e.0 >= a && e.0 <= eff));
                        if changed {
                            match self.at(*p, attr, eff) {
                                Some(v) => values.push((i as u32, vec![v])),
                                None => tombs.push(i as u32),
                            }
                        }
                    }
                }
            }
        }
        Ok((values, tombs))
    }
}

struct Pending {
    op: OpId,
    expect: Result<(), Status>,
}

fn paths_of(mask: u8) -> Vec<String> {
    prims_of(mask).map(|p| format!("/M/P{p}")).collect()
}

fn settle(stage: &Stage, pending: &mut Vec<Pending>) -> Result<(), TestCaseError> {
    for p in pending.drain(..) {
        let got = stage.wait_ok(p.op, LONG).map_err(|e| e.status());
        prop_assert_eq!(got, p.expect, "outcome of {}", p.op);
    }
    Ok(())
}

fn run(ops: &[Op], lanes: usize) -> Result<(), TestCaseError> {
    let stage = Stage::with_config("model", StageConfig::default().with_lanes(lanes).with_history_depth(1000));
    // Both attributes exist from the start, so EXCLUDE scopes are well defined.
    stage
        .wait_ok(stage.advance_write_floor(0u64, FloorScope::Include(vec!["a".into(), "b".into()])).unwrap(), LONG)
        .unwrap();
    let mut queries: HashMap<u8, QueryHandle> = HashMap::new();
    let mut q = |mask: u8| {
        *queries
            .entry(mask)
            .or_insert_with(|| query(&stage, &paths_of(mask).iter().map(String::as_str).collect::<Vec<_>>()))
    };
    let mut m = Model::default();
    let mut pending: Vec<Pending> = Vec::new();
    for op in ops {
        match op {
            Op::Write { attr, prims, ordinal, value } => {
                let value = f32::from(*value);
                let data =
                    WriteData::fixed(ovstage::Tensor::rows(vec![value; prims.count_ones() as usize], 1).unwrap());
                let got = stage.write_attribute(q(*prims), ATTRS[*attr], *ordinal, data, PrimMode::Upsert);
                if *ordinal <= m.floor(*attr) || m.blocked(Some(*attr), *prims, *ordinal) {
                    prop_assert_eq!(got.map(|_| ()).map_err(|e| e.status()), Err(Status::WriteFloorViolation));
                    continue;
                }
                let op = got.map_err(|e| TestCaseError::fail(format!("write rejected: {e}")))?;
                m.unsealed.push((Some(*attr), *ordinal, *prims));
                let expect = m.write(*attr, *prims, *ordinal, value);
                pending.push(Pending { op, expect });
            }
            Op::Delete { attr, prims, ordinal } => {
                let names: Vec<AttrRef<'_>> = attr.iter().map(|a| ATTRS[*a].into()).collect();
                let got = stage.delete_attributes(q(*prims), &names, *ordinal);
                let floor = match attr {
                    Some(a) => m.floor(*a),
                    None => m.base,
                };
                if *ordinal <= floor || m.blocked(*attr, *prims, *ordinal) {
                    prop_assert_eq!(got.map(|_| ()).map_err(|e| e.status()), Err(Status::WriteFloorViolation));
                    continue;
                }
                let op = got.map_err(|e| TestCaseError::fail(format!("delete rejected: {e}")))?;
                m.unsealed.push((*attr, *ordinal, *prims));
                let floors = [m.floor(0), m.floor(1)];
                let expect = m.delete(*attr, *prims, *ordinal, floors);
                pending.push(Pending { op, expect });
            }
            Op::Advance { ordinal, scope, attr } => {
                let (scope, own): (FloorScope<'_>, Vec<usize>) = match scope {
                    0 | 3 => (FloorScope::All, vec![]),
                    1 => (FloorScope::Include(vec![ATTRS[*attr].into()]), vec![*attr]),
                    _ => (FloorScope::Exclude(vec![ATTRS[*attr].into()]), vec![1 - *attr]),
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
                let expect = m.read(*attr, *prims, start, end_v);
                let got = read_f32(&stage, q(*prims), ATTRS[*attr], range).map_err(|e| e.status());
                prop_assert_eq!(got, expect, "read {:?} of {} over {:#b}", range, ATTRS[*attr], prims);
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
