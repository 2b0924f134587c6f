//! Clone: subtree copies, path rebasing, whole-clone failure, reports.

mod common;

use common::*;
use ovstage::{OrdinalRange, PrimMode, Semantic, Stage, Status, Tensor, Timeout, WriteData};

fn scene() -> Stage {
    let s = stage(2);
    let q = query(&s, &["/World", "/World/A", "/World/A/B", "/World/A/C", "/World/Mat"]);
    write(&s, q, "x", 1, scalars(&[0., 1., 2., 3., 4.]));
    // B's relationship targets: C (inside the subtree) and Mat (outside).
    let qb = query(&s, &["/World/A/B"]);
    let ids =
        vec![s.paths().intern_path("/World/A/C").unwrap().get(), s.paths().intern_path("/World/Mat").unwrap().get()];
    let rel =
        WriteData::array_rows(vec![Tensor::from_vec(ids, &[2]).unwrap()]).with_semantic(Semantic::RelationshipPathId);
    write(&s, qb, "rel", 1, rel);
    wait(&s, seal(&s, 1));
    s
}

fn p(s: &Stage, t: &str) -> ovstage::PrimPath {
    s.paths().intern_path(t).unwrap()
}

#[test]
fn clones_the_subtree_to_every_target() {
    let s = scene();
    let op = s.clone_subtree(p(&s, "/World/A"), &[p(&s, "/World/A2"), p(&s, "/Other/X")], 2u64).unwrap();
    let report = s.fetch_clone_result(op, Timeout::INFINITE).unwrap();
    assert_eq!(
        (report.ordinal.get(), report.target_count, report.source_prim_count, report.prims_cloned),
        (2, 2, 3, 6)
    );
    wait(&s, seal(&s, 2));
    let q = query(&s, &["/World/A2", "/World/A2/B", "/World/A2/C", "/Other/X", "/Other/X/B", "/Other/X/C"]);
    let (values, _) = read_f32(&s, q, "x", OrdinalRange::LATEST).unwrap();
    let got: Vec<f32> = values.iter().map(|(_, v)| v[0]).collect();
    assert_eq!(got, vec![1., 2., 3., 1., 2., 3.]);
    // The clone is a change at its ordinal.
    assert_eq!(read_f32(&s, q, "x", OrdinalRange::changes(2u64, 2u64).unwrap()).unwrap().0.len(), 6);
    // Paths inside the subtree are rebased; outside they stay.
    let qb = query(&s, &["/World/A2/B", "/Other/X/B"]);
    let groups = read_groups(&s, qb, "rel", OrdinalRange::LATEST).unwrap();
    let data = groups[0].data().unwrap();
    let mat = p(&s, "/World/Mat").get();
    assert_eq!(data.tensor(0).values::<u64>().unwrap(), &[p(&s, "/World/A2/C").get(), mat]);
    assert_eq!(data.tensor(1).values::<u64>().unwrap(), &[p(&s, "/Other/X/C").get(), mat]);
    // The hierarchy follows.
    let children = read_groups(&s, query(&s, &["/World/A2"]), "usd-children", OrdinalRange::LATEST).unwrap();
    assert_eq!(
        children[0].data().unwrap().tensor(0).values::<u64>().unwrap(),
        &[p(&s, "/World/A2/B").get(), p(&s, "/World/A2/C").get()]
    );
    // Reports last until the op is released.
    s.release_op(op).unwrap();
    assert_eq!(s.fetch_clone_result(op, Timeout::POLL).unwrap_err().status(), Status::InvalidHandle);
}

#[test]
fn failures_clone_nothing() {
    let s = scene();
    let before = s.stats().prims;
    let op = s.clone_subtree(p(&s, "/World/A"), &[p(&s, "/World/New"), p(&s, "/World/A/C")], 2u64).unwrap();
    let err = s.fetch_clone_result(op, Timeout::INFINITE).unwrap_err();
    assert_eq!(err.status(), Status::PrimNotFound);
    assert!(err.to_string().contains("/World/A/C"), "{err}");
    assert_eq!(s.wait_ok(op, LONG).unwrap_err().status(), Status::PrimNotFound);
    assert_eq!(s.stats().prims, before, "an existing target clones nothing");
    let op = s.clone_subtree(p(&s, "/Missing"), &[p(&s, "/World/New")], 3u64).unwrap();
    assert_eq!(s.fetch_clone_result(op, Timeout::INFINITE).unwrap_err().status(), Status::NotFound);
    // At or below the floor: accepted, and the clone fails when it runs (as
    // the published library), an existing target reported first.
    let op = s.clone_subtree(p(&s, "/World/A"), &[p(&s, "/World/New")], 1u64).unwrap();
    assert_eq!(s.fetch_clone_result(op, Timeout::INFINITE).unwrap_err().status(), Status::WriteFloorViolation);
    assert_eq!(s.wait_ok(op, LONG).unwrap_err().status(), Status::WriteFloorViolation);
    let op = s.clone_subtree(p(&s, "/World/A"), &[p(&s, "/World/A/C")], 1u64).unwrap();
    assert_eq!(s.fetch_clone_result(op, Timeout::INFINITE).unwrap_err().status(), Status::PrimNotFound);
    assert_eq!(s.stats().prims, before, "a refused clone clones nothing");
    let err = s.clone_subtree(p(&s, "/World/A"), &[p(&s, "/T"), p(&s, "/T")], 5u64).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    // No targets: a valid, empty clone.
    let op = s.clone_subtree(p(&s, "/World/A"), &[], 6u64).unwrap();
    let r = s.fetch_clone_result(op, Timeout::INFINITE).unwrap();
    assert_eq!((r.target_count, r.source_prim_count, r.prims_cloned), (0, 3, 0));
}

#[test]
fn a_clone_orders_with_writes_around_it() {
    let s = scene();
    let q = query(&s, &["/World/A"]);
    // Submitted in this order without waiting: write, clone, write.
    write(&s, q, "x", 5, scalars(&[50.]));
    let op = s.clone_subtree(p(&s, "/World/A"), &[p(&s, "/Copy")], 5u64).unwrap();
    write(&s, q, "x", 6, scalars(&[60.]));
    // A lower ordinal on the clone's cells is refused while it is unsealed:
    // accepted, and the op fails when it runs (as the published library).
    let qc = query(&s, &["/Copy"]);
    let late = s.write_attribute(qc, "x", 4u64, scalars(&[1.]), PrimMode::Upsert).unwrap();
    let err = s.wait_ok(late, LONG).unwrap_err();
    assert_eq!((err.status(), err.kind()), (Status::WriteFloorViolation, ovstage::ErrorKind::OrdinalConflict));
    wait(&s, op);
    wait(&s, seal(&s, 6));
    assert_eq!(read_f32(&s, qc, "x", OrdinalRange::LATEST).unwrap().0, vec![(0, vec![50.])]);
}
