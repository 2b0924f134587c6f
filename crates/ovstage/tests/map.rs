//! Mapped writes: the committed buffer becomes the version's storage, array
//! sessions, schema rules, INSERT, abandoned sessions and ordering.

mod common;

use common::*;
use ovstage::{DType, FloorScope, MapDesc, OrdinalRange, PrimMode, Stage, Status, Timeout};

fn fill(s: &Stage, q: ovstage::QueryHandle, desc: MapDesc<'_>, ordinal: u64, values: &[f32]) -> *const u8 {
    let map = s.map_attribute(q, desc, ordinal, None).unwrap();
    let mut group = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().expect("one group");
    group.values_mut::<f32>(0).unwrap().copy_from_slice(values);
    let ptr = group.bytes_mut().as_ptr();
    assert!(s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().is_none(), "one group per session");
    wait(s, s.unmap_group(map.handle, group).unwrap());
    wait(s, s.unmap_attribute(map.handle, []).unwrap());
    ptr
}

#[test]
fn the_mapped_buffer_becomes_the_stored_version() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B", "/C"]);
    let ptr = fill(&s, q, MapDesc::new("x", DType::F32), 1, &[1., 2., 3.]);
    wait(&s, seal(&s, 1));
    let groups = read_groups(&s, q, "x", OrdinalRange::LATEST).unwrap();
    let data = groups[0].data().unwrap();
    assert_eq!(data.values::<f32>().unwrap(), &[1., 2., 3.]);
    assert_eq!(data.as_ptr(), ptr, "no staging copy: the read sees the mapped buffer itself");
    // An existing attribute maps without a dtype.
    fill(&s, q, MapDesc::existing("x"), 2, &[4., 5., 6.]);
    wait(&s, seal(&s, 2));
    assert_eq!(read_f32(&s, q, "x", OrdinalRange::LATEST).unwrap().0[2], (2, vec![6.]));
    assert_eq!(read_f32(&s, q, "x", OrdinalRange::snapshot(1u64)).unwrap().0[2], (2, vec![3.]));
}

#[test]
fn array_sessions_take_element_sizes() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B", "/C"]);
    let map = s.map_attribute(q, MapDesc::new("w", DType::F32.with_lanes(3)), 1u64, Some(&[2, 0, 1])).unwrap();
    let mut g = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().unwrap();
    assert_eq!((g.tensor_count(), &g.shape(0)[..], &g.shape(1)[..]), (3, &[2u64, 3][..], &[0u64, 3][..]));
    g.values_mut::<f32>(0).unwrap().copy_from_slice(&[1., 1., 1., 2., 2., 2.]);
    g.values_mut::<f32>(2).unwrap().copy_from_slice(&[3., 3., 3.]);
    wait(&s, s.unmap_attribute(map.handle, [g]).unwrap());
    wait(&s, seal(&s, 1));
    let groups = read_groups(&s, q, "w", OrdinalRange::LATEST).unwrap();
    let data = groups[0].data().unwrap();
    assert_eq!(data.tensor(0).values::<f32>().unwrap(), &[1., 1., 1., 2., 2., 2.]);
    assert_eq!(data.tensor(1).shape(), &[0, 3]);
    assert_eq!(data.tensor(2).values::<f32>().unwrap(), &[3., 3., 3.]);
}

#[test]
fn setup_and_commit_errors() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    // Provable at enqueue (nothing pending could change the answer), so
    // refused there, as the published library does: a new attribute needs
    // a dtype.
    let err = s.map_attribute(q, MapDesc::existing("nope"), 1u64, None).unwrap_err();
    assert_eq!(err.status(), Status::NotSupported, "{err}");
    wait(&s, write(&s, q, "x", 1, scalars(&[1., 2.])));
    // Another dtype on existing cells is a schema conflict.
    let err = s.map_attribute(q, MapDesc::new("x", DType::F64), 2u64, None).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "{err}");
    // INSERT over existing prims.
    let desc = MapDesc { prim_mode: PrimMode::Insert, ..MapDesc::new("y", DType::F32) };
    let err = s.map_attribute(q, desc, 2u64, None).unwrap_err();
    assert_eq!(err.status(), Status::PrimNotFound, "{err}");
    // An unsupported element type.
    let err = s.map_attribute(q, MapDesc::new("c", DType::new(ovstage::DTypeCode::Complex, 64, 1)), 2u64, None);
    assert_eq!(err.unwrap_err().status(), Status::NotSupported);
    // Behind a pending write of the attribute the setup decides when it
    // runs (or at enqueue, when the write already ran): the same error.
    let pending = write(&s, q, "z", 2, scalars(&[1., 2.]));
    let late = s.map_attribute(q, MapDesc::new("z", DType::F64), 2u64, None);
    let err = late.and_then(|m| s.fetch_map_next(m.handle, Timeout::INFINITE)).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "{err}");
    wait(&s, pending);
    // Derived attributes cannot be mapped; element sizes must match the prims.
    let err = s.map_attribute(q, MapDesc::new("usd-path", DType::U64), 3u64, None).unwrap_err();
    assert_eq!(err.status(), Status::NotSupported);
    let err = s.map_attribute(q, MapDesc::new("w", DType::F32), 3u64, Some(&[1])).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    // A session ordinal at or below the floor is refused like a write.
    let err = s.map_attribute(q, MapDesc::new("x", DType::F32), 0u64, None).unwrap_err();
    assert_eq!(err.status(), Status::WriteFloorViolation);
    // Committing after the floor passed the session's ordinal is refused.
    let map = s.map_attribute(q, MapDesc::existing("x"), 5u64, None).unwrap();
    let g = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().unwrap();
    wait(&s, s.advance_write_floor(5u64, FloorScope::All).unwrap());
    assert_eq!(s.unmap_group(map.handle, g).unwrap_err().status(), Status::WriteFloorViolation);
}

#[test]
fn an_abandoned_session_publishes_nothing() {
    let s = stage(2);
    let q = query(&s, &["/A"]);
    let map = s.map_attribute(q, MapDesc::new("x", DType::F32), 1u64, None).unwrap();
    let mut g = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().unwrap();
    g.values_mut::<f32>(0).unwrap()[0] = 9.;
    drop(g);
    wait(&s, s.unmap_attribute(map.handle, []).unwrap());
    wait(&s, seal(&s, 1));
    assert!(read_groups(&s, q, "x", OrdinalRange::LATEST).unwrap().is_empty());
    assert_eq!(s.stats().prims, 0, "no prim was created");
    assert_eq!(s.fetch_map_next(map.handle, Timeout::POLL).unwrap_err().status(), Status::InvalidHandle);
}

#[test]
fn maps_order_like_writes_at_their_ordinal() {
    let s = stage(3);
    let q = query(&s, &["/A"]);
    write(&s, q, "x", 1, scalars(&[1.]));
    let map = s.map_attribute(q, MapDesc::existing("x"), 1u64, None).unwrap();
    let mut g = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().unwrap();
    g.values_mut::<f32>(0).unwrap()[0] = 2.;
    s.unmap_attribute(map.handle, [g]).unwrap();
    write(&s, q, "x", 1, scalars(&[3.]));
    wait(&s, seal(&s, 1));
    assert_eq!(read_f32(&s, q, "x", OrdinalRange::LATEST).unwrap().0, vec![(0, vec![3.])], "the later write wins");
    let changes = read_f32(&s, q, "x", OrdinalRange::changes(1u64, 1u64).unwrap()).unwrap();
    assert_eq!(changes.0.len(), 1);
}

/// A session whose ordinal conflicts with a change already accepted fails
/// when its op runs; fetching from it reports that conflict, also after
/// its op was waited for and released (found by the `op_sequence` fuzz
/// target: the fetch reported INTERNAL once the op was released).
#[test]
fn a_conflicting_session_reports_its_conflict_after_its_op_is_released() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    wait(&s, write(&s, q, "x", 5, scalars(&[1., 2.])));
    let map = s.map_attribute(q, MapDesc::existing("x"), 3u64, None).unwrap();
    let cause = s.wait_ok(map.op, LONG).unwrap_err();
    assert!(cause.message().contains("ordinal conflict"), "{cause}");
    let before = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap_err();
    assert_eq!((before.status(), before.message()), (cause.status(), cause.message()));
    s.release_op(map.op).unwrap();
    for timeout in [Timeout::POLL, Timeout::INFINITE] {
        let after = s.fetch_map_next(map.handle, timeout).unwrap_err();
        assert_eq!((after.status(), after.message()), (cause.status(), cause.message()), "{after}");
    }
}
