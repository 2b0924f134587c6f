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
    for (attr, op) in
        [("usd-path", FilterOp::Contains), ("usd-prim-type", FilterOp::Contains), ("usd-parent", FilterOp::Lt)]
    {
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

/// Columns of every common dtype on the scene's six prims (`pos`, float3
/// on two robots, is in the scene already).
fn typed_scene() -> Stage {
    let s = scene();
    let all = query(&s, &PATHS);
    let fixed = |t: Tensor| WriteData::fixed(t);
    wait(&s, write(&s, all, "i32", 2, fixed(Tensor::rows(vec![-5i32, 0, 7, 1, 2, 3], 1).unwrap())));
    wait(&s, write(&s, all, "i64", 2, fixed(Tensor::rows(vec![-1i64, 1 << 40, 7, 0, 0, 0], 1).unwrap())));
    wait(&s, write(&s, all, "u8", 2, fixed(Tensor::rows(vec![0u8, 255, 7, 1, 1, 1], 1).unwrap())));
    wait(&s, write(&s, all, "u64", 2, fixed(Tensor::rows(vec![u64::MAX, 0, 7, 1, 1, 1], 1).unwrap())));
    wait(&s, write(&s, all, "f64", 2, fixed(Tensor::rows(vec![0.5f64, -2.25, 7.0, 1., 1., 1.], 1).unwrap())));
    let rows = (0..6).map(|i| Tensor::from_vec(vec![7f32; i], &[i as u64]).unwrap()).collect();
    wait(&s, write(&s, all, "arr", 2, WriteData::array_rows(rows)));
    let t = s.paths().intern_tokens(&["Foo", "7"]).unwrap();
    let tokens = vec![t[0].get(), t[1].get(), 0, 0, 0, 0];
    wait(&s, write(&s, all, "tok", 2, fixed(Tensor::rows(tokens, 1).unwrap())));
    wait(&s, seal(&s, 2));
    s
}

/// Value predicates on recorded columns (ours goes beyond the published
/// library, which refuses them; see `query/values.rs` for the rules): each
/// operator on each kind of column, values that do not parse, prims
/// without the attribute, and combinations with structural tests.
#[test]
fn value_predicates_select_by_latest_value() {
    let s = typed_scene();
    let sel = |attr: &str, op: FilterOp, v: &[&str]| run(&s, &[Predicate::new(attr, op, v.iter().copied())]).0;
    let all: Vec<String> = PATHS.iter().map(|p| p.to_string()).collect();
    let pick = |idx: &[usize]| idx.iter().map(|i| all[*i].clone()).collect::<Vec<_>>();
    // i32: [-5, 0, 7, 1, 2, 3] over PATHS.
    assert_eq!(sel("i32", FilterOp::In, &["7", "-5"]), pick(&[0, 2]));
    assert_eq!(sel("i32", FilterOp::Lt, &["1"]), pick(&[0, 1]));
    assert_eq!(sel("i32", FilterOp::Le, &["1"]), pick(&[0, 1, 3]));
    assert_eq!(sel("i32", FilterOp::Gt, &["2"]), pick(&[2, 5]));
    assert_eq!(sel("i32", FilterOp::Ge, &["2"]), pick(&[2, 4, 5]));
    assert!(sel("i32", FilterOp::In, &["x", "3.5"]).is_empty(), "values that do not parse match nothing");
    assert!(sel("i32", FilterOp::In, &[]).is_empty());
    assert!(sel("i32", FilterOp::Contains, &["7"]).is_empty(), "CONTAINS needs a composite value");
    // Wide integers keep their exact values.
    assert_eq!(sel("i64", FilterOp::In, &["1099511627776"]), pick(&[1]));
    assert_eq!(sel("u64", FilterOp::Ge, &["18446744073709551615"]), pick(&[0]));
    assert_eq!(sel("u8", FilterOp::Gt, &["200"]), pick(&[1]));
    assert_eq!(sel("f64", FilterOp::Lt, &["0"]), pick(&[1]));
    assert_eq!(sel("f64", FilterOp::In, &["0.5", "7"]), pick(&[0, 2]));
    // Arrays: [7.0; i] for prim i (prim 0's array is empty).
    assert_eq!(sel("arr", FilterOp::Contains, &["7"]), pick(&[1, 2, 3, 4, 5]));
    assert_eq!(sel("arr", FilterOp::In, &["7, 7"]), pick(&[2]));
    // A name no prim carries matches nothing.
    assert!(sel("no-such-attribute", FilterOp::In, &["7"]).is_empty());
    // With a structural test (AND).
    let both = [Predicate::new("usd-path", FilterOp::Prefix, [PATHS[2]]), Predicate::new("i32", FilterOp::Ge, ["0"])];
    assert_eq!(run(&s, &both).0, pick(&[2]));
    // Comparisons on the built-in metadata stay unsupported.
    for attr in ["usd-path", "usd-parent", "usd-children", "usd-prim-type", "usd-schemas", "usd-ancestor-types"] {
        for op in [FilterOp::Lt, FilterOp::Le, FilterOp::Gt, FilterOp::Ge] {
            let err = s.query(&[Predicate::new(attr, op, ["/World"])], &[]).unwrap_err();
            assert_eq!(err.status(), Status::NotSupported, "{attr} {op:?}");
        }
    }
}

/// A value filter is evaluated anew each time (never served from the
/// structural cache): a later write changes what it selects.
#[test]
fn value_predicates_follow_later_writes() {
    let s = typed_scene();
    let all = query(&s, &PATHS);
    let f = [Predicate::new("i32", FilterOp::In, ["100"])];
    assert!(run(&s, &f).0.is_empty());
    let values = WriteData::fixed(Tensor::rows(vec![100i32, 0, 0, 0, 0, 100], 1).unwrap());
    wait(&s, write(&s, all, "i32", 3, values));
    assert_eq!(run(&s, &f).0, vec![PATHS[0].to_string(), PATHS[5].to_string()]);
}

/// A value that is not a valid path or token names no prim and no type: it
/// matches nothing, and the filter is accepted (as on the reference).
#[test]
fn values_that_are_not_paths_or_tokens_match_nothing() {
    let s = scene();
    let paths = |f: &[Predicate<'_>]| run(&s, f).0;
    assert_eq!(paths(&[Predicate::new("usd-path", FilterOp::In, ["/World", "not a path", ""])]), ["/World"]);
    assert!(paths(&[Predicate::new("usd-parent", FilterOp::In, [""])]).is_empty());
    assert_eq!(paths(&[Predicate::new("usd-parent", FilterOp::In, ["", "/World"])]), ["/World/Env0", "/World/Env1"]);
    assert!(paths(&[Predicate::new("usd-children", FilterOp::Contains, ["", "x//y"])]).is_empty());
    assert_eq!(paths(&[Predicate::new("usd-prim-type", FilterOp::In, ["", "Scope"])]), ["/World", "/Worldwide"]);
    assert!(paths(&[Predicate::new("usd-schemas", FilterOp::Contains, [""])]).is_empty());
    assert!(paths(&[Predicate::new("usd-ancestor-types", FilterOp::Contains, ["a\0b"])]).is_empty());
    // An empty prefix is a byte prefix of every path.
    assert_eq!(paths(&[Predicate::new("usd-path", FilterOp::Prefix, [""])]).len(), PATHS.len());
}

/// Without an attribute scope, a query reports the recorded attributes its
/// matched prims carry and every name its filter tests (carried or not,
/// built-in or not); a filter of nothing but `HAS usd-path` reports
/// `usd-path` alone. A scope replaces all of that. All as the reference.
#[test]
fn a_filter_reports_the_names_it_tests() {
    let s = scene();
    let attrs = |f: &[Predicate<'_>]| run(&s, f).1;
    let (paths, names, _) = run(&s, &[Predicate::has("no-such-attribute")]);
    assert!(paths.is_empty());
    assert_eq!(names, ["no-such-attribute"]);
    assert_eq!(attrs(&[Predicate::has("no-such-attribute"), Predicate::has("pos")]), ["no-such-attribute", "pos"]);
    assert_eq!(attrs(&[Predicate::has("usd-path")]), ["usd-path"]);
    assert_eq!(attrs(&[Predicate::has("usd-path"), Predicate::has("usd-path")]), ["usd-path"]);
    assert_eq!(attrs(&[Predicate::has("usd-path"), Predicate::has("pos")]), ["pos", "usd-path", "x"]);
    assert_eq!(attrs(&[Predicate::new("usd-path", FilterOp::Prefix, ["/World/Env0/"])]), ["pos", "usd-path", "x"]);
    assert_eq!(attrs(&[Predicate::new("usd-parent", FilterOp::In, ["/World"])]), ["usd-parent", "x"]);
    assert_eq!(attrs(&[Predicate::has("usd-children")]), ["usd-children", "x"]);
    assert_eq!(attrs(&[Predicate::new("usd-children", FilterOp::Contains, ["/World/Env0"])]), ["usd-children", "x"]);
    assert_eq!(attrs(&[Predicate::new("usd-prim-type", FilterOp::In, ["Scope"])]), ["usd-prim-type", "x"]);
    assert_eq!(
        attrs(&[Predicate::new("usd-schemas", FilterOp::Contains, ["PhysicsRigidBodyAPI"])]),
        ["pos", "usd-schemas", "x"]
    );
    assert_eq!(attrs(&[]), ["pos", "x"], "no filter: only what the prims carry");
    let q = s.query(&[Predicate::has("usd-path"), Predicate::has("nope")], &["x".into()]).unwrap();
    let r = s.fetch_query_result(q.handle, Timeout::INFINITE).unwrap();
    assert_eq!(r.attributes, vec![s.paths().lookup_token("x").unwrap()], "a scope replaces the filter's names");
}

/// `usd-prim-type IN` (the one value test on recorded data) sees the latest
/// committed values, sealed or not, and no value once deleted.
#[test]
fn prim_type_tests_see_the_latest_committed_values() {
    let s = scene();
    let t = s.paths().intern_tokens(&["Xform", "Mesh"]).unwrap();
    let envs = query(&s, &["/World/Env0", "/World/Env1"]);
    let paths = |types: &[&str]| run(&s, &[Predicate::new("usd-prim-type", FilterOp::In, types.iter().copied())]).0;
    assert_eq!(paths(&["Mesh"]), Vec::<String>::new());
    wait(
        &s,
        write(&s, envs, "usd-prim-type", 5, WriteData::fixed(Tensor::rows(vec![t[1].get(), t[0].get()], 1).unwrap())),
    );
    assert_eq!(paths(&["Mesh"]), ["/World/Env0"], "an unsealed write is seen");
    assert_eq!(paths(&["Mesh", "Scope"]), ["/World", "/World/Env0", "/Worldwide"]);
    wait(&s, seal(&s, 5));
    assert_eq!(paths(&["Mesh"]), ["/World/Env0"]);
    let env0 = query(&s, &["/World/Env0"]);
    wait(&s, s.delete_attributes(env0, &["usd-prim-type".into()], 6u64).unwrap());
    assert!(paths(&["Mesh"]).is_empty(), "a deleted type matches nothing");
    let (has, _, _) = run(&s, &[Predicate::has("usd-prim-type")]);
    assert!(!has.contains(&"/World/Env0".to_string()), "{has:?}");
    assert_eq!(has.len(), PATHS.len() - 1);
}

mod model {
    //! `usd-prim-type IN` and `usd-path IN` / `PREFIX`, with values valid
    //! or not, against a direct model over the written prims.
    use super::*;
    use proptest::prelude::*;

    const TYPES: [&str; 4] = ["A", "B", "C", "D"];
    const NAMES: [&str; 5] = ["/R", "/R/a", "/R/a/b", "/R/c", "/Rx"];

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            (0..TYPES.len()).prop_map(|i| TYPES[i].to_string()),
            (0..NAMES.len()).prop_map(|i| NAMES[i].to_string()),
            Just(String::new()),
            Just("not a path".to_string()),
            Just("/R/".to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn matches_the_model(
            types in proptest::collection::vec(proptest::option::of(0..TYPES.len()), NAMES.len()),
            type_values in proptest::collection::vec(value(), 0..4),
            path_values in proptest::collection::vec(value(), 0..4),
            prefix in any::<bool>(),
        ) {
            let s = stage(2);
            let all = query(&s, &NAMES);
            wait(&s, write(&s, all, "x", 1, scalars(&[0.; NAMES.len()])));
            let typed: Vec<usize> = (0..NAMES.len()).filter(|i| types[*i].is_some()).collect();
            if !typed.is_empty() {
                let names: Vec<&str> = typed.iter().map(|i| NAMES[*i]).collect();
                let ids = typed.iter().map(|i| s.paths().intern_token(TYPES[types[*i].unwrap()]).unwrap().get()).collect();
                let q = query(&s, &names);
                wait(&s, write(&s, q, "usd-prim-type", 1, WriteData::fixed(Tensor::rows(ids, 1).unwrap())));
            }
            let op = if prefix { FilterOp::Prefix } else { FilterOp::In };
            let filter = [
                Predicate::new("usd-prim-type", FilterOp::In, type_values.clone()),
                Predicate::new("usd-path", op, path_values.clone()),
            ];
            let (got, _, _) = run(&s, &filter);
            let mut want: Vec<String> = (0..NAMES.len())
                .filter(|i| types[*i].is_some_and(|t| type_values.iter().any(|v| v == TYPES[t])))
                .filter(|i| {
                    path_values.iter().any(|v| if prefix { NAMES[*i].starts_with(v.as_str()) } else { v == NAMES[*i] })
                })
                .map(|i| NAMES[i].to_string())
                .collect();
            want.sort();
            prop_assert_eq!(got, want);
        }
    }
}
