//! Model-based test of retention across schema replacements: random ticks
//! of forcing writes (each of a random tuple width, so a prim's schema
//! changes often) and deletes, each sealed, on a stage that keeps only a
//! few floors of history, with snapshot and change reads at random
//! ordinals, against a sequential model.
//!
//! The trim drops versions behind the retention frontier and, once a
//! replaced schema's column holds nothing a retained read can see, the
//! column itself. Inside the window (snapshots at or above the frontier,
//! change ranges starting above it) every read must match the model; below
//! it a read may be `OUT_OF_RANGE` instead, never a wrong answer.

mod common;

use common::*;
use ovstage::{AttributeMode, OrdinalRange, Stage, StageConfig, Status, Tensor, WriteData};
use proptest::prelude::*;

const PRIMS: usize = 6;
const ATTR: &str = "v";

#[derive(Clone, Debug)]
enum Change {
    /// A forcing write of `width` lanes of `value` on `prims`.
    Write {
        prims: Vec<usize>,
        width: u16,
        value: i16,
    },
    Delete {
        prims: Vec<usize>,
    },
}

#[derive(Clone, Debug)]
enum Step {
    /// Changes at the next ordinal, then a seal of it.
    Tick(Vec<Change>),
    /// A snapshot `back` ordinals below the newest.
    Snapshot { back: u64 },
    /// Changes in `[end - len, end]`, `end` being `back` below the newest.
    Changes { back: u64, len: u64 },
}

fn prims() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..PRIMS, 1..=PRIMS)
}

fn step() -> impl Strategy<Value = Step> {
    let change = prop_oneof![
        4 => (prims(), 1u16..4, any::<i16>()).prop_map(|(prims, width, value)| Change::Write { prims, width, value }),
        1 => prims().prop_map(|prims| Change::Delete { prims }),
    ];
    prop_oneof![
        5 => prop::collection::vec(change, 1..3).prop_map(Step::Tick),
        2 => (0u64..8).prop_map(|back| Step::Snapshot { back }),
        2 => (0u64..8, 0u64..8).prop_map(|(back, len)| Step::Changes { back, len }),
    ]
}

/// A prim's cell: its width and value (every lane holds the value).
type Cell = Option<(u16, i16)>;

/// Every change of every prim, `(ordinal, cell after it)`, in order.
struct Model {
    history: Vec<Vec<(u64, Cell)>>,
}

impl Model {
    fn at(&self, p: usize, ordinal: u64) -> Cell {
        self.history[p].iter().rev().find(|c| c.0 <= ordinal).and_then(|c| c.1)
    }

    fn values(cell: (u16, i16)) -> Vec<f32> {
        vec![f32::from(cell.1); usize::from(cell.0)]
    }

    fn snapshot(&self, end: u64) -> ReadOut {
        let values = (0..PRIMS).filter_map(|p| self.at(p, end).map(|c| (p as u32, Model::values(c)))).collect();
        (values, Vec::new())
    }

    /// A change range: per schema (width) a prim's cell was in or entered
    /// in `[start, end]`, its value at `end` when it is of that schema
    /// then, else a tombstone in that schema's column.
    fn changes(&self, start: u64, end: u64) -> ReadOut {
        let (mut values, mut tombstones) = (Vec::new(), Vec::new());
        for p in 0..PRIMS {
            let mut widths: Vec<u16> = Vec::new();
            let mut before = self.at(p, start - 1);
            for (_, cell) in self.history[p].iter().filter(|c| c.0 >= start && c.0 <= end) {
                widths.extend(before.map(|b| b.0).filter(|w| cell.is_none_or(|c| c.0 != *w)));
                widths.extend(cell.map(|c| c.0));
                before = *cell;
            }
            widths.sort_unstable();
            widths.dedup();
            let now = self.at(p, end);
            for w in widths {
                match now.filter(|c| c.0 == w) {
                    Some(c) => values.push((p as u32, Model::values(c))),
                    None => tombstones.push(p as u32),
                }
            }
        }
        values.sort_by_key(|v| v.0);
        tombstones.sort_unstable();
        (values, tombstones)
    }
}

fn frontier(s: &Stage) -> u64 {
    let h = s.get_oldest_preserved_ordinal().unwrap();
    s.fetch_ordinal(h.handle, LONG).unwrap().get()
}

fn run(steps: &[Step], depth: usize) -> Result<(), TestCaseError> {
    let stage = Stage::with_config("schemas", StageConfig::default().with_lanes(2).with_history_depth(depth));
    let paths = prim_paths(PRIMS);
    let names: Vec<&str> = paths.iter().map(String::as_str).collect();
    let all = query(&stage, &names);
    let mut m = Model { history: vec![Vec::new(); PRIMS] };
    let mut newest = 0u64;
    let mut most_columns = 0;
    for step in steps {
        match step {
            Step::Tick(changes) => {
                newest += 1;
                // Each prim changes at most once a tick.
                let mut taken = [false; PRIMS];
                for change in changes {
                    let (Change::Write { prims, .. } | Change::Delete { prims }) = change;
                    let mut prims: Vec<usize> = prims.iter().copied().filter(|p| !taken[*p]).collect();
                    prims.sort_unstable();
                    prims.dedup();
                    if let Change::Delete { .. } = change {
                        prims.retain(|p| m.at(*p, newest).is_some());
                    }
                    if prims.is_empty() {
                        continue;
                    }
                    prims.iter().for_each(|p| taken[*p] = true);
                    let q = query(&stage, &prims.iter().map(|p| names[*p]).collect::<Vec<_>>());
                    let op = match change {
                        Change::Write { width, value, .. } => {
                            let lanes = usize::from(*width);
                            let values = Tensor::rows(vec![f32::from(*value); prims.len() * lanes], *width).unwrap();
                            let data = WriteData::fixed(values).with_attribute_mode(AttributeMode::Force);
                            prims.iter().for_each(|p| m.history[*p].push((newest, Some((*width, *value)))));
                            write(&stage, q, ATTR, newest, data)
                        }
                        Change::Delete { .. } => {
                            prims.iter().for_each(|p| m.history[*p].push((newest, None)));
                            stage.delete_attributes(q, &[ATTR.into()], newest).unwrap()
                        }
                    };
                    wait(&stage, op);
                }
                wait(&stage, seal(&stage, newest));
                most_columns = most_columns.max(stage.stats().columns);
            }
            Step::Snapshot { back } => {
                let end = newest.saturating_sub(*back);
                let got = read_f32(&stage, all, ATTR, OrdinalRange::snapshot(end));
                let expect = m.snapshot(end);
                match got {
                    Ok(got) => prop_assert_eq!(got, expect, "snapshot at {}", end),
                    Err(e) => {
                        let f = frontier(&stage);
                        prop_assert!(
                            e.status() == Status::OutOfRange && end < f,
                            "snapshot at {} (frontier {}): {}",
                            end,
                            f,
                            e
                        );
                    }
                }
            }
            Step::Changes { back, len } => {
                let end = newest.saturating_sub(*back).max(1);
                let start = end.saturating_sub(*len).max(1);
                let got = read_f32(&stage, all, ATTR, OrdinalRange::changes(start, end).unwrap());
                let expect = m.changes(start, end);
                match got {
                    Ok(got) => prop_assert_eq!(got, expect, "changes in [{}, {}]", start, end),
                    Err(e) => {
                        let f = frontier(&stage);
                        prop_assert!(
                            e.status() == Status::OutOfRange && start <= f,
                            "changes in [{}, {}] (frontier {}): {}",
                            start,
                            end,
                            f,
                            e
                        );
                    }
                }
            }
        }
    }
    // At most one column per schema (three widths here), dropped ones
    // made again included.
    prop_assert!(most_columns <= 3, "{} columns held", most_columns);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn reads_across_schema_replacements_match_model(steps in prop::collection::vec(step(), 1..60), depth in 1usize..4) {
        run(&steps, depth)?;
    }
}
