//! Filter queries: every supported predicate, AND, unsupported pairings,
//! discovered attributes, and handles used before the query has run.

mod common;

use common::*;
use ovstage::{FilterOp, OrdinalRange, Predicate, PrimMode, QueryHandle, Stage, Status, Tensor, Timeout, WriteData};

const PATHS: [&str; 6] =
    ["/World", "/World/Env0", "/World/Env0/Robot", "/World/Env1", "/World/Env1/Robot", "/Worldwide"];

fn scene() -> Stage {
    let s = stage(2);
    let all = query(&s, &PATHS);
    write(&s, all, "x", 1, scalars(&[0., 1., 2., 3., 4., 5.]));
    let robots = query(&s, &["/World/Env0/Robot", "/World/Env1/Robot"]);
    write(&s, robots, "pos", 1, f32x3(&[[0.; 3], [1.; 3]]));
    let t = s.paths().intern_tokens(&["Xform", "Scope", "PhysicsRigidBodyAPI", "Imageable"]).unwrap();
    let types = [t[1], t[0], t[0], t[0], t[0], t[1]].map(|t| t.get()).to_vec();
    write(&s, all, "usd-prim-type", 1, WriteData::fixed(Tensor::rows(types, 1).unwrap()));
    let schemas = WriteData::array_rows(vec![
        Tensor::from_vec(vec![t[2].get()], &[1]).unwrap(),
        Tensor::from_vec(Vec::<u64>::new(), &[0]).unwrap(),
    ]);
    write(&s, robots, "usd-schemas", 1, schemas);
    let ancestors = WriteData::array_rows(vec![Tensor::from_vec(vec![t[3].get()], &[1]).unwrap()]);
    let env0 = query(&s, &["/World/Env0"]);
    write(&s, env0, "usd-ancestor-types", 1, ancestors);
    wait(&s, seal(&s, 1));
    s
}

/// The paths a filter matches, and the attributes it reports.
fn run(s: &Stage, filter: &[Predicate<'_>]) -> (Vec<String>, Vec<String>, QueryHandle) {
    let q = s.query(filter, &[]).unwrap();
    let result = s.fetch_query_result(q.handle, Timeout::INFINITE).unwrap();
    let prims = s.query_prims(q.handle).unwrap();
    assert_eq!(result.total_prim_count, prims.len());
    assert_eq!(result.handle, q.handle);
    let mut paths: Vec<String> = prims.iter().map(|p| s.paths().path_text(*p).unwrap().to_string()).collect();
    paths.sort();
    let mut attrs: Vec<String> =
        result.attributes.iter().map(|t| s.paths().token_text(*t).unwrap().to_string()).collect();
    attrs.sort();
    (paths, attrs, q.handle)
}

#[test]
fn each_supported_predicate() {
    let s = scene();
    let paths = |f: &[Predicate<'_>]| run(&s, f).0;
    assert_eq!(paths(&[Predicate::has("pos")]), ["/World/Env0/Robot", "/World/Env1/Robot"]);
    assert_eq!(paths(&[Predicate::new("usd-path", FilterOp::Prefix, ["/World/Env"])]).len(), 4);
    assert_eq!(
        paths(&[Predicate::new("usd-path", FilterOp::Prefix, ["/World"])]).len(),
        6,
        "a byte prefix: /Worldwide too"
    );
    assert_eq!(paths(&[Predicate::new("usd-path", FilterOp::Prefix, ["/World/"])]).len(), 4);
    assert_eq!(paths(&[Predicate::new("usd-path", FilterOp::In, ["/World", "/Nope"])]), ["/World"]);
    assert_eq!(paths(&[Predicate::new("usd-parent", FilterOp::In, ["/World"])]), ["/World/Env0", "/World/Env1"]);
    assert_eq!(paths(&[Predicate::new("usd-children", FilterOp::Contains, ["/World/Env1/Robot"])]), ["/World/Env1"]);
    assert_eq!(paths(&[Predicate::new("usd-prim-type", FilterOp::In, ["Scope"])]), ["/World", "/Worldwide"]);
    assert_eq!(
        paths(&[Predicate::new("usd-schemas", FilterOp::Contains, ["PhysicsRigidBodyAPI"])]),
        ["/World/Env0/Robot"]
    );
    assert_eq!(paths(&[Predicate::new("usd-ancestor-types", FilterOp::Contains, ["Imageable"])]), ["/World/Env0"]);
    assert_eq!(
        paths(&[Predicate::has("pos"), Predicate::new("usd-path", FilterOp::Prefix, ["/World/Env1"])]),
        ["/World/Env1/Robot"],
        "predicates combine with AND"
    );
    assert_eq!(paths(&[]).len(), 6, "an empty filter matches every prim");
}

#[test]
fn discovered_attributes_are_scoped() {
    let s = scene();
    let (_, attrs, _) = run(&s, &[Predicate::has("pos")]);
    assert_eq!(attrs, ["pos", "usd-prim-type", "usd-schemas", "x"]);
    let q = s.query(&[Predicate::has("pos")], &["pos".into(), "missing".into()]).unwrap();
    let r = s.fetch_query_result(q.handle, Timeout::INFINITE).unwrap();
    assert_eq!(r.attributes, vec![s.paths().lookup_token("pos").unwrap()]);
}

#[test]
fn unsupported_pairings_say_so() {
    let s = scene();
    for (attr, op) in [
        ("pos", FilterOp::Lt),
        ("usd-path", FilterOp::Contains),
        ("usd-prim-type", FilterOp::Contains),
        ("x", FilterOp::In),
    ] {
        let err = s.query(&[Predicate::new(attr, op, ["1"])], &[]).unwrap_err();
        assert_eq!(err.status(), Status::NotSupported, "{attr} {op:?}");
        assert!(err.to_string().contains(op.name()), "{err}");
    }
    let err = s.query(&[Predicate::has("usd-active")], &[]).unwrap_err();
    assert_eq!(err.status(), Status::NotSupported);
    let err = s.query(&[Predicate::new("usd-path", FilterOp::In, Vec::<String>::new())], &[]).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
}

#[test]
fn a_query_handle_is_usable_before_the_query_runs() {
    let s = scene();
    // Write, read and delete through the handle right away, without waiting.
    let q = s.query(&[Predicate::has("pos")], &[]).unwrap();
    let op = s.write_attribute(q.handle, "vel", 2u64, f32x3(&[[7.; 3], [8.; 3]]), PrimMode::Upsert).unwrap();
    // Its prims may or may not be known yet: a shape error is reported at
    // enqueue when they are, otherwise when the write runs.
    let bad = s.write_attribute(q.handle, "vel2", 2u64, f32x3(&[[7.; 3]]), PrimMode::Upsert);
    seal(&s, 2);
    let (values, _) = read_f32(&s, q.handle, "vel", OrdinalRange::LATEST).unwrap();
    assert_eq!(values, vec![(0, vec![7.; 3]), (1, vec![8.; 3])]);
    wait(&s, op);
    let err = bad.and_then(|op| s.wait_ok(op, LONG)).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "{err}");
    let del = s.delete_attributes(q.handle, &["vel".into()], 3u64).unwrap();
    wait(&s, del);
    wait(&s, s.release_query(q.handle).unwrap());
    assert_eq!(
        s.write_attribute(q.handle, "vel", 4u64, f32x3(&[]), PrimMode::Upsert).unwrap_err().status(),
        Status::InvalidHandle
    );
}
