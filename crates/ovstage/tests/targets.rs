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
