//! Where ops run: a small read, and a cheap ordinal query, whose inputs are
//! ready when they are enqueued run on the submitting thread (they have
//! completed when the enqueue returns); larger reads go to a lane and read
//! the same values; nothing run early skips an advance it must observe.

mod common;

use common::*;
use ovstage::{OrdinalRange, Timeout};

#[test]
fn a_small_read_of_ready_inputs_has_run_when_its_enqueue_returns() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    wait(&s, write(&s, q, "x", 1, scalars(&[1.0, 2.0])));
    wait(&s, seal(&s, 1));
    let r = s.read_attributes(q, &["x".into()], OrdinalRange::snapshot(1)).unwrap();
    // A poll never blocks and never runs anything: the read ran inside the
    // enqueue.
    assert!(s.wait(r.op, Timeout::POLL).is_ok(), "the read is still pending after its enqueue returned");
    let g = s.fetch_read_next(r.handle, Timeout::POLL).unwrap().expect("one group");
    let values: Vec<f32> = g.rows::<f32>().unwrap().into_iter().map(|(_, row)| row[0]).collect();
    assert_eq!(values, [1.0, 2.0]);
    drop(g);
    let release = s.release_read(r.handle).unwrap();
    assert!(s.wait(release, Timeout::POLL).is_ok(), "releasing a finished read waits for nothing");
}

#[test]
fn a_floor_query_after_a_finished_advance_is_answered_at_enqueue() {
    let s = stage(2);
    let q = query(&s, &["/A"]);
    wait(&s, write(&s, q, "x", 3, scalars(&[1.0])));
    wait(&s, seal(&s, 3));
    for attribute in [Some("x".into()), None] {
        let h = s.get_attribute_write_floor(attribute).unwrap();
        assert!(s.wait(h.op, Timeout::POLL).is_ok(), "the floor query is still pending after its enqueue returned");
        assert_eq!(s.fetch_ordinal(h.handle, Timeout::POLL).unwrap().get(), 3);
    }
}

#[test]
fn reads_too_large_to_run_at_enqueue_read_the_same_values() {
    // 20,000 prims: above the size a read runs at enqueue, so this one goes
    // to a lane; a few of its prims read alone run at enqueue. Both agree.
    let s = stage(2);
    let paths = prim_paths(20_000);
    let all: Vec<&str> = paths.iter().map(String::as_str).collect();
    let q_all = query(&s, &all);
    let values: Vec<f32> = (0..all.len()).map(|i| i as f32).collect();
    wait(&s, write(&s, q_all, "x", 1, scalars(&values)));
    wait(&s, seal(&s, 1));
    let few = [all[7], all[19_999], all[0]];
    let q_few = query(&s, &few);
    let (big, _) = read_f32(&s, q_all, "x", OrdinalRange::snapshot(1)).unwrap();
    let (small, _) = read_f32(&s, q_few, "x", OrdinalRange::snapshot(1)).unwrap();
    assert_eq!(big.len(), all.len());
    assert!(big.iter().all(|(i, v)| v[0] == *i as f32));
    assert_eq!(small, vec![(0, vec![7.0]), (1, vec![19_999.0]), (2, vec![0.0])]);
}

#[test]
fn reads_enqueued_right_after_an_unwaited_advance_observe_it() {
    // Nothing is waited for: each read must run after the advance submitted
    // before it, whether it runs at enqueue or on a lane.
    let s = stage(2);
    let q = query(&s, &["/A"]);
    for t in 1..=500u64 {
        write(&s, q, "x", t, scalars(&[t as f32]));
        seal(&s, t);
        let (values, _) = read_f32(&s, q, "x", OrdinalRange::snapshot(t)).unwrap();
        assert_eq!(values, vec![(0, vec![t as f32])], "snapshot at {t}");
        let h = s.get_attribute_write_floor(Some("x".into())).unwrap();
        assert_eq!(s.fetch_ordinal(h.handle, LONG).unwrap().get(), t);
    }
}

#[test]
fn a_change_read_costs_what_changed_not_the_query_size() {
    // 20,000 prims and two more attributes: a snapshot of this query is
    // too large to run at enqueue, but a change range in which a few of
    // its cells changed is small, and runs there; one in which every cell
    // changed goes to a lane. Both read what changed.
    let s = stage(2);
    let paths = prim_paths(20_000);
    let all: Vec<&str> = paths.iter().map(String::as_str).collect();
    let q_all = query(&s, &all);
    let values: Vec<f32> = (0..all.len()).map(|i| i as f32).collect();
    for attr in ["x", "y", "z"] {
        wait(&s, write(&s, q_all, attr, 1, scalars(&values)));
    }
    wait(&s, seal(&s, 1));
    wait(&s, write(&s, query(&s, &[all[12_345], all[3]]), "y", 2, scalars(&[-1.0, -2.0])));
    wait(&s, seal(&s, 2));
    let attrs = ["x".into(), "y".into(), "z".into(), "usd-path".into()];
    let r = s.read_attributes(q_all, &attrs, OrdinalRange::changes(2, 2).unwrap()).unwrap();
    assert!(
        s.wait(r.op, Timeout::POLL).is_ok(),
        "a change read of a few changed cells is still pending after its enqueue"
    );
    let g = s.fetch_read_next(r.handle, Timeout::POLL).unwrap().expect("one group");
    let mut got: Vec<(u32, f32)> = g.rows::<f32>().unwrap().into_iter().map(|(i, row)| (i, row[0])).collect();
    got.sort_by_key(|v| v.0);
    assert_eq!(got, [(3, -2.0), (12_345, -1.0)]);
    drop(g);
    assert!(s.fetch_read_next(r.handle, Timeout::POLL).unwrap().is_none(), "only y changed at 2");
    s.release_read(r.handle).unwrap();
    let (every, _) = read_f32(&s, q_all, "x", OrdinalRange::changes(1, 2).unwrap()).unwrap();
    assert_eq!(every.len(), all.len());
    assert!(every.iter().all(|(i, v)| v[0] == *i as f32));
}
