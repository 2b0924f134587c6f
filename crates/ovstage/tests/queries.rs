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
    assert_eq!(attrs, ["pos", "x"], "recorded metadata is listed only when requested");
    let q = s.query(&[Predicate::has("pos")], &["usd-prim-type".into(), "pos".into()]).unwrap();
    let r = s.fetch_query_result(q.handle, Timeout::INFINITE).unwrap();
    let mut attrs: Vec<String> = r.attributes.iter().map(|t| s.paths().token_text(*t).unwrap().to_string()).collect();
    attrs.sort();
    assert_eq!(attrs, ["pos", "usd-prim-type"]);
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
}

#[test]
fn an_empty_value_list_matches_no_prim() {
    let s = scene();
    // As on the reference: `IN []` is a valid filter that matches nothing.
    let (paths, _, _) = run(&s, &[Predicate::new("usd-path", FilterOp::In, Vec::<String>::new())]);
    assert!(paths.is_empty(), "{paths:?}");
    let (paths, _, _) = run(&s, &[Predicate::new("usd-path", FilterOp::Prefix, Vec::<String>::new())]);
    assert!(paths.is_empty(), "{paths:?}");
}

#[test]
fn requested_attributes_are_reported_even_when_no_prim_matches() {
    let s = scene();
    let q = s.query(&[Predicate::has("no-such-attribute")], &[ovstage::AttrRef::Name("pos")]).unwrap();
    let result = s.fetch_query_result(q.handle, Timeout::INFINITE).unwrap();
    assert_eq!(result.total_prim_count, 0);
    let attrs: Vec<String> = result.attributes.iter().map(|t| s.paths().token_text(*t).unwrap().to_string()).collect();
    assert_eq!(attrs, ["pos"]);
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

/// The paths a HAS query of `attr` matches, in result order.
fn has(s: &Stage, attr: &str) -> Vec<String> {
    let q = s.query(&[Predicate::has(attr)], &[]).unwrap();
    s.fetch_query_result(q.handle, Timeout::INFINITE).unwrap();
    let prims = s.query_prims(q.handle).unwrap();
    wait(s, s.release_query(q.handle).unwrap());
    prims.iter().map(|p| s.paths().path_text(*p).unwrap().to_string()).collect()
}

#[test]
fn repeated_queries_follow_structural_changes() {
    let s = stage(2);
    let abcd = query(&s, &["/W/A", "/W/B", "/W/C", "/W/D"]);
    let ab = query(&s, &["/W/A", "/W/B"]);
    wait(&s, write(&s, ab, "x", 1, scalars(&[1., 2.])));
    wait(&s, write(&s, abcd, "y", 1, scalars(&[0.; 4])));
    let root = query(&s, &["/W"]);
    wait(&s, write(&s, root, "v", 1, scalars(&[0.])));
    assert_eq!(has(&s, "x"), ["/W/A", "/W/B"]);
    assert_eq!(has(&s, "x"), ["/W/A", "/W/B"], "a repeated query");
    // Rewriting values changes no structure.
    wait(&s, write(&s, ab, "x", 2, scalars(&[3., 4.])));
    assert_eq!(has(&s, "x"), ["/W/A", "/W/B"]);
    // A new cell on an existing prim.
    let c = query(&s, &["/W/C"]);
    wait(&s, write(&s, c, "x", 3, scalars(&[5.])));
    assert_eq!(has(&s, "x"), ["/W/A", "/W/B", "/W/C"]);
    // A new prim.
    let e = query(&s, &["/W/E"]);
    wait(&s, write(&s, e, "x", 4, scalars(&[6.])));
    assert_eq!(has(&s, "x"), ["/W/A", "/W/B", "/W/C", "/W/E"]);
    // A deleted cell, then written again.
    let b = query(&s, &["/W/B"]);
    wait(&s, s.delete_attributes(b, &["x".into()], 5u64).unwrap());
    assert_eq!(has(&s, "x"), ["/W/A", "/W/C", "/W/E"]);
    wait(&s, write(&s, b, "x", 6, scalars(&[7.])));
    assert_eq!(has(&s, "x"), ["/W/A", "/W/B", "/W/C", "/W/E"]);
    // A deleted prim.
    let a = query(&s, &["/W/A"]);
    wait(&s, s.delete_attributes(a, &[], 7u64).unwrap());
    assert_eq!(has(&s, "x"), ["/W/B", "/W/C", "/W/E"]);
    assert_eq!(has(&s, "y"), ["/W/B", "/W/C", "/W/D"]);
    // A new attribute shows in the discovered attributes.
    let (_, attrs, _) = run(&s, &[Predicate::has("x")]);
    assert_eq!(attrs, ["x", "y"]);
    wait(&s, write(&s, root, "z", 8, scalars(&[8.])));
    let (_, attrs, _) = run(&s, &[Predicate::has("x")]);
    assert_eq!(attrs, ["x", "y"], "z is on none of the matched prims");
    wait(&s, write(&s, e, "z", 8, scalars(&[8.])));
    let (_, attrs, _) = run(&s, &[Predicate::has("x")]);
    assert_eq!(attrs, ["x", "y", "z"]);
    // A new column (another schema) of an existing attribute.
    let d = query(&s, &["/W/D"]);
    wait(&s, write(&s, d, "w", 9, scalars(&[9.])));
    assert_eq!(has(&s, "w"), ["/W/D"]);
    wait(&s, write(&s, c, "w", 9, f32x3(&[[1.; 3]])));
    assert_eq!(has(&s, "w"), ["/W/C", "/W/D"]);
    // The hierarchy: a new child.
    let parent_w = [Predicate::new("usd-parent", FilterOp::In, ["/W"])];
    assert_eq!(run(&s, &parent_w).0, ["/W/B", "/W/C", "/W/D", "/W/E"]);
    let f = query(&s, &["/W/F"]);
    wait(&s, write(&s, f, "y", 10, scalars(&[1.])));
    assert_eq!(run(&s, &parent_w).0, ["/W/B", "/W/C", "/W/D", "/W/E", "/W/F"]);
}

#[test]
fn equal_filters_share_results_and_value_filters_stay_fresh() {
    let s = scene();
    let f1 = [Predicate::has("pos"), Predicate::new("usd-path", FilterOp::Prefix, ["/World/Env1", "/World/Env0"])];
    let f2 = [Predicate::new("usd-path", FilterOp::Prefix, ["/World/Env0", "/World/Env1"]), Predicate::has("pos")];
    let (p1, a1, q1) = run(&s, &f1);
    let (p2, a2, q2) = run(&s, &f2);
    assert_eq!((&p1, &a1), (&p2, &a2), "the same filter in another order");
    assert_eq!(p1, ["/World/Env0/Robot", "/World/Env1/Robot"]);
    // Handles sharing a result are independent: release one, use the other.
    wait(&s, s.release_query(q1).unwrap());
    let (values, _) = read_f32(&s, q2, "pos", OrdinalRange::LATEST).unwrap();
    assert_eq!(values, vec![(0, vec![0.; 3]), (1, vec![1.; 3])]);
    wait(&s, s.release_query(q2).unwrap());
    // A value filter sees rewritten values (no structure changed).
    let scope_filter = [Predicate::new("usd-prim-type", FilterOp::In, ["Scope"])];
    assert_eq!(run(&s, &scope_filter).0, ["/World", "/Worldwide"]);
    let t = s.paths().intern_tokens(&["Scope"]).unwrap()[0].get();
    let env0 = query(&s, &["/World/Env0"]);
    wait(&s, write(&s, env0, "usd-prim-type", 2, WriteData::fixed(Tensor::rows(vec![t], 1).unwrap())));
    assert_eq!(run(&s, &scope_filter).0, ["/World", "/World/Env0", "/Worldwide"]);
}
