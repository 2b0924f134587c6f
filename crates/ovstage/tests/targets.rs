//! Write targets decided at enqueue, as the published library decides
//! them: INSERT onto a prim that exists (when no pending op could remove
//! it) and a prim named twice by the query are refused before anything is
//! queued; an INSERT that depends on pending ops is decided when it runs.

mod common;

use common::*;
use ovstage::{PrimMode, Status, Timeout};

#[test]
fn insert_onto_an_existing_prim_is_refused_at_enqueue() {
    let s = stage(2);
    let q = query(&s, &["/World/A", "/World/B"]);
    let qb = query(&s, &["/World/B", "/World/C"]);
    wait(&s, write(&s, q, "x", 1, scalars(&[1., 2.])));
    let e = s.write_attribute(qb, "y", 2u64, scalars(&[3., 4.]), PrimMode::Insert).expect_err("B exists");
    assert_eq!(e.status(), Status::PrimNotFound);
    assert!(e.to_string().contains("/World/B"), "{e}");
    // Nothing was created or written: C is still free for an INSERT.
    let qc = query(&s, &["/World/C"]);
    wait(&s, s.write_attribute(qc, "y", 2u64, scalars(&[5.]), PrimMode::Insert).unwrap());
}

#[test]
fn insert_behind_a_pending_whole_prim_delete_is_decided_when_it_runs() {
    let s = stage(2);
    let q = query(&s, &["/World/A"]);
    wait(&s, write(&s, q, "x", 1, scalars(&[1.])));
    // The delete and the INSERT back to back: whether the delete is still
    // pending at the INSERT's enqueue (decided when it runs) or already ran
    // (decided at enqueue), A is gone first, so the INSERT succeeds.
    let del = s.delete_attributes(q, &[], 2u64).unwrap();
    let ins = s.write_attribute(q, "x", 3u64, scalars(&[7.]), PrimMode::Insert);
    wait(&s, del);
    match ins {
        Ok(op) => s.wait(op, Timeout::INFINITE).expect("A was deleted before the INSERT ran"),
        Err(e) => panic!("INSERT after the delete of its prim was refused: {e}"),
    }
}

#[test]
fn a_prim_named_twice_by_the_query_is_refused_at_enqueue() {
    let s = stage(2);
    let q = query(&s, &["/World/A", "/World/B", "/World/A"]);
    let e = s.write_attribute(q, "x", 1u64, scalars(&[1., 2., 3.]), PrimMode::Upsert).expect_err("A twice");
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.to_string().contains("/World/A") && e.message().contains("more than once"), "{e}");
    // A selection that leaves the repeat out is fine.
    let data = scalars(&[1., 2.]).with_selection(ovstage::Selection::Leading(2));
    wait(&s, s.write_attribute(q, "x", 1u64, data, PrimMode::Upsert).unwrap());
}

#[test]
fn a_type_name_belongs_to_one_kind_of_name() {
    // As in the published library: a name written as a prim type cannot
    // also be a schema name (or an attribute's), and the write that tries
    // fails when it runs, publishing nothing.
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    let t = s.paths().intern_tokens(&["Xform", "Scope", "pos"]).unwrap();
    wait(&s, write(&s, q, "pos", 1, scalars(&[1., 2.])));
    let types = |ids: Vec<u64>| ovstage::WriteData::fixed(ovstage::Tensor::rows(ids, 1).unwrap());
    wait(
        &s,
        s.write_attribute(q, "usd-prim-type", 2u64, types(vec![t[0].get(), t[1].get()]), PrimMode::Upsert).unwrap(),
    );
    let rows = |r: Vec<Vec<u64>>| {
        let tensors = r.into_iter().map(|v| ovstage::Tensor::from_vec(v.clone(), &[v.len() as u64]).unwrap()).collect();
        ovstage::WriteData::array_rows(tensors)
    };
    let op = s.write_attribute(q, "usd-schemas", 3u64, rows(vec![vec![t[0].get()], vec![]]), PrimMode::Upsert).unwrap();
    let e = s.wait_ok(op, LONG).unwrap_err();
    assert!(e.message().contains("'Xform'"), "{e}");
    // An attribute's name cannot be a type name either.
    let op =
        s.write_attribute(q, "usd-prim-type", 3u64, types(vec![t[2].get(), t[1].get()]), PrimMode::Upsert).unwrap();
    assert!(s.wait_ok(op, LONG).unwrap_err().message().contains("'pos'"));
    // The same kind again is fine.
    let op =
        s.write_attribute(q, "usd-prim-type", 4u64, types(vec![t[1].get(), t[0].get()]), PrimMode::Upsert).unwrap();
    s.wait_ok(op, LONG).unwrap();
}

#[test]
fn a_write_that_fails_when_it_runs_leaves_no_unsealed_change_behind() {
    // The write at 5 is accepted and fails when it runs (a prim type name
    // used as a schema name), publishing nothing: a write at 4 to the same
    // cells is then not below any change (admission counts committed
    // changes, as the published library's does).
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    let t = s.paths().intern_tokens(&["Xform", "Scope", "MySchema"]).unwrap();
    let types = |ids: Vec<u64>| ovstage::WriteData::fixed(ovstage::Tensor::rows(ids, 1).unwrap());
    let rows = |r: Vec<Vec<u64>>| {
        let tensors = r.into_iter().map(|v| ovstage::Tensor::from_vec(v.clone(), &[v.len() as u64]).unwrap()).collect();
        ovstage::WriteData::array_rows(tensors)
    };
    wait(
        &s,
        s.write_attribute(q, "usd-prim-type", 3u64, types(vec![t[0].get(), t[1].get()]), PrimMode::Upsert).unwrap(),
    );
    wait(&s, seal(&s, 3));
    let failed =
        s.write_attribute(q, "usd-schemas", 5u64, rows(vec![vec![t[0].get()], vec![]]), PrimMode::Upsert).unwrap();
    assert!(s.wait_ok(failed, LONG).unwrap_err().message().contains("'Xform'"));
    let below = s.write_attribute(q, "usd-schemas", 4u64, rows(vec![vec![t[2].get()], vec![]]), PrimMode::Upsert);
    let below = below.expect("accepted");
    if let Err(e) = s.wait_ok(below, LONG) {
        panic!("a write below the failed one's ordinal failed: {e}");
    }
}
