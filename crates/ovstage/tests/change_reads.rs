//! Model-based test of change-range reads over a column much larger than
//! the change: random steps of a few writes and deletes (several at one
//! ordinal, then sealed), change reads over random ranges and snapshot reads
//! (which build images the change reads may then use), of a scalar and of
//! an array attribute, through a query in
//! row order, one in reverse and one of a few scattered prims, against a
//! sequential model.
//!
//! A read that picks a few rows (at most one row in eight of the column)
//! copies just those rows; one that picks many builds the column's image at
//! its end. Short and long ranges and the small query exercise both, and
//! must agree with the model either way.

mod common;

use common::*;
use ovstage::{OrdinalRange, QueryHandle, Stage, StageConfig, Status, Tensor, Token, WriteData};
use proptest::prelude::*;

const PRIMS: usize = 64;
const ATTR: &str = "v";

#[derive(Clone, Debug)]
enum Change {
    Write { prims: Vec<usize>, value: i16 },
    Delete { prims: Vec<usize> },
}

#[derive(Clone, Debug)]
enum Step {
    /// Changes at the next ordinal, then a seal of it.
    Changes(Vec<Change>),
    /// Changes in `[end - back - len, end - back]` (clamped).
    ChangeRead { back: u64, len: u64, query: Which },
    /// A snapshot `back` ordinals below the newest.
    SnapshotRead { back: u64, query: Which },
}

/// The query a read goes through.
#[derive(Copy, Clone, Debug)]
enum Which {
    Forward,
    Reverse,
    Few,
}

/// The prims of the small query, scattered and out of order.
const FEW: [usize; 5] = [40, 3, 63, 17, 5];

fn which() -> impl Strategy<Value = Which> {
    prop_oneof![Just(Which::Forward), Just(Which::Reverse), Just(Which::Few)]
}

fn some_prims() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        4 => prop::collection::vec(0..PRIMS, 1..4),
        1 => prop::collection::vec(0..PRIMS, 8..PRIMS),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let change = prop_oneof![
        3 => (some_prims(), any::<i16>()).prop_map(|(prims, value)| Change::Write { prims, value }),
        1 => some_prims().prop_map(|prims| Change::Delete { prims }),
    ];
    prop_oneof![
        4 => prop::collection::vec(change, 1..4).prop_map(Step::Changes),
        3 => (0u64..4, 0u64..10, which()).prop_map(|(back, len, query)| Step::ChangeRead { back, len, query }),
        2 => (0u64..4, which()).prop_map(|(back, query)| Step::SnapshotRead { back, query }),
    ]
}

/// The attribute's kind.
#[derive(Copy, Clone, Debug)]
enum Kind {
    Scalar,
    /// An array whose length (0 to 2) depends on the prim and the value.
    Array,
}

impl Kind {
    fn value(self, p: usize, value: i16) -> Vec<f32> {
        let v = f32::from(value);
        match self {
            Kind::Scalar => vec![v],
            Kind::Array => vec![v; (p + value.unsigned_abs() as usize) % 3],
        }
    }

    fn payload(self, prims: &[usize], value: i16) -> WriteData {
        match self {
            Kind::Scalar => scalars(&vec![f32::from(value); prims.len()]),
            Kind::Array => WriteData::array_rows(
                prims
                    .iter()
                    .map(|p| {
                        let v = self.value(*p, value);
                        let n = v.len() as u64;
                        Tensor::from_vec(v, &[n]).unwrap()
                    })
                    .collect(),
            ),
        }
    }
}

/// Every change of every prim: `(ordinal, value or deleted)`, in order.
#[derive(Default)]
struct Model {
    history: Vec<Vec<(u64, Option<Vec<f32>>)>>,
}

impl Model {
    fn at(&self, p: usize, ordinal: u64) -> Option<Vec<f32>> {
        self.history[p].iter().rev().find(|c| c.0 <= ordinal).and_then(|c| c.1.clone())
    }

    fn changed(&self, p: usize, start: u64, end: u64) -> bool {
        self.history[p].iter().any(|c| c.0 >= start && c.0 <= end)
    }

    /// The expected read over `order` (query index `i` is prim `order[i]`).
    fn read(&self, order: &[usize], range: Option<(u64, u64)>, end: u64) -> ReadOut {
        let mut values = Vec::new();
        let mut tombstones = Vec::new();
        for (i, p) in order.iter().enumerate() {
            if let Some((start, end)) = range
                && !self.changed(*p, start, end)
            {
                continue;
            }
            match self.at(*p, end) {
                Some(v) => values.push((i as u32, v)),
                None if range.is_some() => tombstones.push(i as u32),
                None => {}
            }
        }
        (values, tombstones)
    }
}

fn run(steps: &[Step], kind: Kind) -> Result<(), TestCaseError> {
    let stage = Stage::with_config("changes", StageConfig::default().with_lanes(2).with_history_depth(10_000));
    let paths = prim_paths(PRIMS);
    let forward: Vec<usize> = (0..PRIMS).collect();
    let reverse: Vec<usize> = (0..PRIMS).rev().collect();
    let query_of = |order: &[usize]| -> QueryHandle {
        let names: Vec<&str> = order.iter().map(|p| paths[*p].as_str()).collect();
        query(&stage, &names)
    };
    let few = FEW.to_vec();
    let queries = [(query_of(&forward), &forward), (query_of(&reverse), &reverse), (query_of(&few), &few)];
    let pick = |which: Which| match which {
        Which::Forward => queries[0],
        Which::Reverse => queries[1],
        Which::Few => queries[2],
    };
    let mut m = Model { history: vec![Vec::new(); PRIMS] };
    let mut newest = 0u64;
    for step in steps {
        match step {
            Step::Changes(changes) => {
                newest += 1;
                for change in changes {
                    match change {
                        Change::Write { prims, value } => {
                            let mut prims = prims.clone();
                            prims.sort_unstable();
                            prims.dedup();
                            let names: Vec<&str> = prims.iter().map(|p| paths[*p].as_str()).collect();
                            let data = kind.payload(&prims, *value);
                            wait(&stage, write(&stage, query(&stage, &names), ATTR, newest, data));
                            prims.iter().for_each(|p| m.history[*p].push((newest, Some(kind.value(*p, *value)))));
                        }
                        Change::Delete { prims } => {
                            // Only cells that hold a value are deleted.
                            let mut live: Vec<usize> =
                                prims.iter().copied().filter(|p| m.at(*p, newest).is_some()).collect();
                            live.sort_unstable();
                            live.dedup();
                            if live.is_empty() {
                                continue;
                            }
                            let names: Vec<&str> = live.iter().map(|p| paths[*p].as_str()).collect();
                            let op = stage.delete_attributes(query(&stage, &names), &[ATTR.into()], newest).unwrap();
                            wait(&stage, op);
                            live.iter().for_each(|p| m.history[*p].push((newest, None)));
                        }
                    }
                }
                wait(&stage, seal(&stage, newest));
            }
            Step::ChangeRead { back, len, query } => {
                let end = newest.saturating_sub(*back).max(1);
                let start = end.saturating_sub(*len).max(1);
                let (q, order) = pick(*query);
                let got = read_f32(&stage, q, ATTR, OrdinalRange::changes(start, end).unwrap());
                let expect = m.read(order, Some((start, end)), end);
                prop_assert_eq!(got.ok(), Some(expect), "changes in [{}, {}] through {:?}", start, end, query);
            }
            Step::SnapshotRead { back, query } => {
                let end = newest.saturating_sub(*back);
                let (q, order) = pick(*query);
                let got = read_f32(&stage, q, ATTR, OrdinalRange::snapshot(end));
                let expect = m.read(order, None, end);
                prop_assert_eq!(got.ok(), Some(expect), "snapshot at {} through {:?}", end, query);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn scalar_reads_match_model(steps in prop::collection::vec(step(), 1..40)) {
        run(&steps, Kind::Scalar)?;
    }

    #[test]
    fn array_reads_match_model(steps in prop::collection::vec(step(), 1..40)) {
        run(&steps, Kind::Array)?;
    }
}

/// One changed row out of many is reported with its value, its prim and
/// the version's ordinal, and a deleted one as a tombstone, through both
/// a run and a scattered row map.
#[test]
fn one_changed_row_of_many() {
    let stage = Stage::with_config("one", StageConfig::default().with_lanes(1).with_history_depth(100));
    let paths = prim_paths(1000);
    let names: Vec<&str> = paths.iter().map(String::as_str).collect();
    let q = query(&stage, &names);
    let values: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    wait(&stage, write(&stage, q, ATTR, 1, scalars(&values)));
    wait(&stage, seal(&stage, 1));
    wait(&stage, write(&stage, query(&stage, &[names[700]]), ATTR, 2, scalars(&[-7.0])));
    let op = stage.delete_attributes(query(&stage, &[names[3]]), &[ATTR.into()], 2).unwrap();
    wait(&stage, op);
    wait(&stage, seal(&stage, 2));
    let got = read_f32(&stage, q, ATTR, OrdinalRange::changes(2, 2).unwrap()).unwrap();
    assert_eq!(got, (vec![(700, vec![-7.0])], vec![3]));
    let reversed: Vec<&str> = names.iter().rev().copied().collect();
    let got = read_f32(&stage, query(&stage, &reversed), ATTR, OrdinalRange::changes(2, 2).unwrap()).unwrap();
    assert_eq!(got, (vec![(299, vec![-7.0])], vec![996]));
    let groups = read_groups(&stage, q, ATTR, OrdinalRange::changes(2, 2).unwrap()).unwrap();
    assert!(groups.iter().all(|g| g.ordinal().get() == 2), "groups carry the version's ordinal");
}

/// Attributes of the multi-attribute model: most of a wide change read's
/// attributes did not change in its range, and reads skip those.
const ATTRS: [&str; 5] = ["m0", "m1", "m2", "m3", "m4"];

#[derive(Clone, Debug)]
enum MultiStep {
    /// Writes `value` to `prims` of each listed attribute at the next
    /// ordinal, then seals it.
    Write { attrs: Vec<usize>, prims: Vec<usize>, value: i16 },
    /// Reads every attribute's changes in `[end - back - len, end - back]`.
    Read { back: u64, len: u64, query: Which },
}

fn multi_step() -> impl Strategy<Value = MultiStep> {
    prop_oneof![
        3 => (prop::collection::vec(0..ATTRS.len(), 1..3), some_prims(), any::<i16>())
            .prop_map(|(attrs, prims, value)| MultiStep::Write { attrs, prims, value }),
        2 => (0u64..4, 0u64..6, which()).prop_map(|(back, len, query)| MultiStep::Read { back, len, query }),
    ]
}

/// A change read of several attributes, some unchanged in its range (or
/// never written), over queries whose row maps are runs or scattered,
/// against a model per attribute.
fn run_multi(steps: &[MultiStep]) -> Result<(), TestCaseError> {
    let stage = Stage::with_config("multi", StageConfig::default().with_lanes(2).with_history_depth(10_000));
    let paths = prim_paths(PRIMS);
    let forward: Vec<usize> = (0..PRIMS).collect();
    let reverse: Vec<usize> = (0..PRIMS).rev().collect();
    let few = FEW.to_vec();
    let query_of = |order: &[usize]| -> QueryHandle {
        let names: Vec<&str> = order.iter().map(|p| paths[*p].as_str()).collect();
        query(&stage, &names)
    };
    let queries = [(query_of(&forward), &forward), (query_of(&reverse), &reverse), (query_of(&few), &few)];
    let tokens: Vec<ovstage::Token> = ATTRS.iter().map(|a| stage.paths().intern_token(a).unwrap()).collect();
    let mut models: Vec<Model> = ATTRS.iter().map(|_| Model { history: vec![Vec::new(); PRIMS] }).collect();
    let mut newest = 0u64;
    for step in steps {
        match step {
            MultiStep::Write { attrs, prims, value } => {
                newest += 1;
                let mut prims = prims.clone();
                prims.sort_unstable();
                prims.dedup();
                let names: Vec<&str> = prims.iter().map(|p| paths[*p].as_str()).collect();
                let q = query(&stage, &names);
                let mut attrs = attrs.clone();
                attrs.sort_unstable();
                attrs.dedup();
                for a in attrs {
                    let data = Kind::Scalar.payload(&prims, *value);
                    wait(&stage, write(&stage, q, ATTRS[a], newest, data));
                    prims.iter().for_each(|p| models[a].history[*p].push((newest, Some(vec![f32::from(*value)]))));
                }
                wait(&stage, seal(&stage, newest));
            }
            MultiStep::Read { back, len, query } => {
                let end = newest.saturating_sub(*back).max(1);
                let start = end.saturating_sub(*len).max(1);
                let (q, order) = match query {
                    Which::Forward => queries[0],
                    Which::Reverse => queries[1],
                    Which::Few => queries[2],
                };
                let names: Vec<ovstage::AttrRef<'_>> = tokens.iter().map(|t| (*t).into()).collect();
                let r = stage.read_attributes(q, &names, OrdinalRange::changes(start, end).unwrap()).unwrap();
                let mut got: Vec<ReadOut> = ATTRS.iter().map(|_| ReadOut::default()).collect();
                while let Some(g) = stage.fetch_read_next(r.handle, LONG).unwrap() {
                    let a = tokens.iter().position(|t| *t == g.attribute()).expect("a requested attribute");
                    prop_assert_eq!(g.ordinal().get() <= end, true, "group ordinal above the range");
                    match g.kind() {
                        ovstage::GroupKind::Values => {
                            for (i, row) in g.rows::<f32>().unwrap() {
                                got[a].0.push((i, row.to_vec()));
                            }
                        }
                        ovstage::GroupKind::Tombstones => {
                            got[a].1.extend((0..g.len()).map(|i| g.prims().list_index(i)));
                        }
                    }
                }
                wait(&stage, stage.release_read(r.handle).unwrap());
                for (a, out) in got.iter_mut().enumerate() {
                    out.0.sort_by_key(|v| v.0);
                    out.1.sort_unstable();
                    let expect = models[a].read(order, Some((start, end)), end);
                    prop_assert_eq!(&*out, &expect, "{} changes in [{}, {}] through {:?}", ATTRS[a], start, end, query);
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn multi_attribute_change_reads_match_model(steps in prop::collection::vec(multi_step(), 1..40)) {
        run_multi(&steps)?;
    }
}

/// The attributes of one read are resolved together (tokens checked and
/// families looked up once for all): by token, by name, through an alias
/// (first read by its own token, labelling its group), derived, unknown
/// (no group); a bad argument is reported in argument order.
#[test]
fn a_read_resolves_each_of_its_attributes() {
    let s = Stage::with_config("resolve", StageConfig::default().with_lanes(2));
    let q = query(&s, &["/A", "/B"]);
    wait(&s, write(&s, q, "x", 1, scalars(&[1.0, 2.0])));
    wait(&s, write(&s, q, "omni:fabric:localMatrix", 1, scalars(&[3.0, 4.0])));
    wait(&s, seal(&s, 1));
    let tok = |t: &str| s.paths().intern_token(t).unwrap();
    let (x, alias, unknown, path) = (tok("x"), tok("omni:xform"), tok("nothing"), tok("usd-path"));
    for attrs in [
        vec![x.into(), alias.into(), unknown.into(), path.into()],
        vec!["x".into(), alias.into(), "nothing".into(), path.into()],
    ] {
        let r = s.read_attributes(q, &attrs, OrdinalRange::snapshot(1)).unwrap();
        let mut got = Vec::new();
        while let Some(g) = s.fetch_read_next(r.handle, LONG).unwrap() {
            let first = if g.attribute() == path { None } else { Some(g.rows::<f32>().unwrap()[0].1[0]) };
            got.push((g.attribute(), first));
        }
        wait(&s, s.release_read(r.handle).unwrap());
        assert_eq!(got, [(x, Some(1.0)), (alias, Some(3.0)), (path, None)]);
    }
    let foreign = Token::from_raw(1 << 40).unwrap();
    let first =
        |attrs: &[ovstage::AttrRef<'_>]| s.read_attributes(q, attrs, OrdinalRange::snapshot(1)).unwrap_err().status();
    assert_eq!(first(&["usd-active".into(), foreign.into()]), Status::NotSupported);
    assert_eq!(first(&[foreign.into(), "usd-active".into()]), Status::InvalidArgument);
    assert_eq!(first(&[x.into(), foreign.into()]), Status::InvalidArgument);
}
