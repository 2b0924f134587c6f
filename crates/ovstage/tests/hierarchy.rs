//! Built-in metadata attributes and hierarchy lookups.

mod common;

use common::*;
use ovstage::{
    GroupKind, HierarchyRelation, OrdinalRange, PrimMode, PrimPath, ReadGroup, Semantic, Stage, Status, Tensor,
    Timeout, WriteData,
};

const PATHS: [&str; 5] = ["/World", "/World/A", "/World/A/B", "/World/A/C", "/World/D/E"];

fn world() -> Stage {
    let s = stage(2);
    let q = query(&s, &PATHS);
    write(&s, q, "x", 1, scalars(&[0., 1., 2., 3., 4.]));
    wait(&s, seal(&s, 1));
    s
}

fn id(s: &Stage, p: &str) -> u64 {
    s.paths().intern_path(p).unwrap().get()
}

/// `(index in the query, u64 values)` for each prim of the value groups.
fn ids(groups: &[ReadGroup]) -> Vec<(u32, Vec<u64>)> {
    let mut out = Vec::new();
    for g in groups {
        assert_eq!(g.kind(), GroupKind::Values);
        for (i, row) in g.rows::<u64>().unwrap() {
            out.push((i, row.to_vec()));
        }
    }
    out
}

#[test]
fn derived_paths_parents_and_children() {
    let s = world();
    let mut with_missing: Vec<&str> = PATHS.to_vec();
    with_missing.push("/Nope");
    let q = query(&s, &with_missing);
    let paths = read_groups(&s, q, "usd-path", OrdinalRange::LATEST).unwrap();
    assert_eq!(paths[0].ordinal().get(), u64::MAX, "derived groups carry the requested end");
    let expect: Vec<(u32, Vec<u64>)> = PATHS.iter().enumerate().map(|(i, p)| (i as u32, vec![id(&s, p)])).collect();
    assert_eq!(ids(&paths), expect);
    // A root has no parent, nor does a prim whose parent path holds no prim.
    let parents = read_groups(&s, q, "usd-parent", OrdinalRange::LATEST).unwrap();
    let (world, a) = (id(&s, "/World"), id(&s, "/World/A"));
    assert_eq!(ids(&parents), vec![(1, vec![world]), (2, vec![a]), (3, vec![a])]);
    let children = read_groups(&s, q, "usd-children", OrdinalRange::LATEST).unwrap();
    assert!(children[0].is_array());
    assert_eq!(
        ids(&children),
        vec![(0, vec![a]), (1, vec![id(&s, "/World/A/B"), id(&s, "/World/A/C")])],
        "leaves contribute no row; /World/D/E is no child of /World"
    );
    // No change history: a range read reports nothing.
    assert!(read_groups(&s, q, "usd-path", OrdinalRange::changes(0u64, 1u64).unwrap()).unwrap().is_empty());
}

#[test]
fn derived_and_unsupported_names_are_refused() {
    let s = world();
    let q = query(&s, &["/World"]);
    for name in ["usd-path", "usd-parent", "usd-children", "usd-active"] {
        let err = s
            .write_attribute(q, name, 5u64, WriteData::fixed(Tensor::rows(vec![1u64], 1).unwrap()), PrimMode::Upsert)
            .unwrap_err();
        assert_eq!(err.status(), Status::NotSupported, "{name}: {err}");
        let err = s.delete_attributes(q, &[name.into()], 5u64).unwrap_err();
        assert_eq!(err.status(), Status::NotSupported, "{name}: {err}");
    }
    let err = s.read_attributes(q, &["usd-active".into()], OrdinalRange::LATEST).unwrap_err();
    assert_eq!(err.status(), Status::NotSupported);
}

#[test]
fn recorded_metadata_has_fixed_schemas() {
    let s = world();
    let q = query(&s, &["/World/A", "/World/A/B"]);
    let t = s.paths().intern_tokens(&["Xform", "Mesh", "PhysicsRigidBodyAPI"]).unwrap();
    let types = WriteData::fixed(Tensor::rows(vec![t[0].get(), t[1].get()], 1).unwrap());
    write(&s, q, "usd-prim-type", 2, types);
    let schemas = WriteData::array_rows(vec![
        Tensor::from_vec(vec![t[2].get()], &[1]).unwrap(),
        Tensor::from_vec(Vec::<u64>::new(), &[0]).unwrap(),
    ]);
    write(&s, q, "usd-schemas", 2, schemas);
    wait(&s, seal(&s, 2));
    let types = read_groups(&s, q, "usd-prim-type", OrdinalRange::LATEST).unwrap();
    assert_eq!(types[0].semantic(), Semantic::TokenId);
    assert_eq!(ids(&types), vec![(0, vec![t[0].get()]), (1, vec![t[1].get()])]);
    let schemas = read_groups(&s, q, "usd-schemas", OrdinalRange::LATEST).unwrap();
    assert_eq!(ids(&schemas), vec![(0, vec![t[2].get()]), (1, vec![])]);
    // Wrong kinds are rejected; the type can be deleted.
    let as_array = WriteData::array_rows((0..2).map(|_| Tensor::from_vec(vec![1u64], &[1]).unwrap()).collect());
    let err = s.write_attribute(q, "usd-prim-type", 3u64, as_array, PrimMode::Upsert).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    let err = s.write_attribute(q, "usd-schemas", 3u64, scalars(&[1., 2.]), PrimMode::Upsert).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "{err}");
    wait(&s, s.delete_attributes(q, &["usd-prim-type".into()], 3u64).unwrap());
}

#[test]
fn hierarchy_lookups() {
    let s = world();
    let list =
        s.paths().create_path_list_from_strings(&["/World", "/World/A", "/World/A/B", "/Nope", "/World/D/E"]).unwrap();
    let look = |relation| {
        let h = s.get_hierarchy(list, 7u64, relation).unwrap();
        let r = s.fetch_hierarchy_result(h.handle, Timeout::INFINITE).unwrap();
        wait(&s, s.release_hierarchy(h.handle).unwrap());
        assert_eq!(r.ordinal.get(), 7);
        r.items.into_iter().map(|i| (i.status, i.paths)).collect::<Vec<_>>()
    };
    let p = |t: &str| s.paths().intern_path(t).unwrap();
    let none: Vec<PrimPath> = Vec::new();
    assert_eq!(
        look(HierarchyRelation::Parent),
        vec![
            (Status::Ok, none.clone()),
            (Status::Ok, vec![p("/World")]),
            (Status::Ok, vec![p("/World/A")]),
            (Status::NotFound, none.clone()),
            (Status::Ok, none),
        ]
    );
    assert_eq!(look(HierarchyRelation::Children)[1], (Status::Ok, vec![p("/World/A/B"), p("/World/A/C")]));
    assert_eq!(look(HierarchyRelation::Siblings)[2], (Status::Ok, vec![p("/World/A/C")]));
    // Nothing here carries world matrices: a computation changes nothing.
    let op = s.compute_hierarchy(1u64, 9u64).unwrap();
    s.wait_ok(op, LONG).unwrap();
}
