//! Sizes chosen by a client: checked arithmetic refuses what no buffer can
//! hold at enqueue (`INVALID_ARGUMENT`, naming the attribute, prim and
//! ordinal), and an allocation that fails when an op runs fails that op
//! with `OUT_OF_MEMORY` instead of aborting the process.

mod common;

use common::*;
use ovstage::{DType, MapDesc, OrdinalRange, Status, Timeout};

#[test]
fn map_element_sizes_that_overflow_are_rejected_at_enqueue() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    // 2^62 four-byte elements wrap to 0 in u64; SIZE_MAX / 2 of them
    // overflow the product; 2^61 of them fit in u64 but not in one buffer
    // (isize::MAX bytes at most).
    for (dtype, sizes) in [
        (DType::F32, [1u64 << 62, 1]),
        (DType::F32, [u64::MAX / 2, 4]),
        (DType::F32, [4, 1 << 61]),
        (DType::U8, [4, u64::MAX]),
    ] {
        let e = s.map_attribute(q, MapDesc::new("a", dtype), 3u64, Some(&sizes)).expect_err("refused at enqueue");
        assert_eq!(e.status(), Status::InvalidArgument, "{e}");
        let entry = if sizes[0] > 4 { 0 } else { 1 };
        assert!(e.message().contains(&format!("element_sizes[{entry}]")), "{e}");
        assert_eq!(e.context().attribute.as_deref(), Some("a"));
        assert_eq!(e.context().prim.as_deref(), Some(["/A", "/B"][entry]));
        assert_eq!(e.context().ordinal.map(|o| o.get()), Some(3));
    }
    // Without a dtype the existing storage's element size is used.
    let map = s.map_attribute(q, MapDesc::new("b", DType::F64), 1u64, Some(&[1, 1])).unwrap();
    wait(&s, s.unmap_attribute(map.handle, []).unwrap());
    let e = s.map_attribute(q, MapDesc::existing("b"), 2u64, Some(&[1u64 << 60, 1])).expect_err("8-byte elements");
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
}

#[test]
fn a_map_session_too_large_to_allocate_fails_its_op_with_out_of_memory() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    // 4 TiB: addressable, but no machine running this test has it.
    let map = s.map_attribute(q, MapDesc::new("a", DType::F32), 1u64, Some(&[1u64 << 40, 4])).unwrap();
    let e = s.fetch_map_next(map.handle, Timeout::INFINITE).expect_err("setup failed");
    assert_eq!(e.status(), Status::OutOfMemory, "{e}");
    assert!(e.message().contains("could not allocate 4398046511120 bytes"), "{e}");
    assert_eq!(e.context().attribute.as_deref(), Some("a"));
    assert_eq!(s.wait_ok(map.op, LONG).expect_err("the op failed").status(), Status::OutOfMemory);
    // The stage goes on: the session ends, nothing was published, and a
    // session of a sensible size works.
    let end = s.unmap_attribute(map.handle, []).unwrap();
    assert!(s.wait_ok(end, LONG).is_err(), "ending a failed session reports its failure");
    let map = s.map_attribute(q, MapDesc::new("a", DType::F32), 2u64, Some(&[1, 2])).unwrap();
    let mut g = s.fetch_map_next(map.handle, Timeout::INFINITE).unwrap().unwrap();
    g.values_mut::<f32>(1).unwrap().copy_from_slice(&[5., 6.]);
    wait(&s, s.unmap_attribute(map.handle, [g]).unwrap());
    wait(&s, seal(&s, 2));
    let groups = read_groups(&s, q, "a", OrdinalRange::LATEST).unwrap();
    assert_eq!(groups[0].data().unwrap().tensor(1).values::<f32>().unwrap(), &[5., 6.]);
}

#[test]
fn a_path_list_of_another_stage_is_unknown() {
    let (a, b) = (stage(1), stage(1));
    let la = a.paths().create_path_list_from_strings(&["/A"]).unwrap();
    let lb = b.paths().create_path_list_from_strings(&["/A"]).unwrap();
    assert_ne!(la, lb, "path list handles are salted per dictionary");
    let e = b.paths().release_path_list_reference(la).expect_err("A's list on B");
    assert_eq!(e.status(), Status::InvalidHandle, "{e}");
    assert!(b.query_from_path_list(la).is_err());
    assert_eq!(b.paths().path_list_len(lb).unwrap(), 1, "B's own list is untouched");
    a.paths().add_path_list_reference(la).unwrap();
    a.paths().release_path_list_reference(la).unwrap();
    a.paths().release_path_list_reference(la).unwrap();
    assert_eq!(a.paths().release_path_list_reference(la).unwrap_err().status(), Status::InvalidHandle, "released");
}

#[test]
fn op_ids_of_another_stage_are_unknown() {
    let (a, b) = (stage(1), stage(1));
    let (src_a, src_b) = (a.paths().intern_path("/S").unwrap(), b.paths().intern_path("/S").unwrap());
    let (qa, qb) = (query(&a, &["/S"]), query(&b, &["/S"]));
    wait(&a, write(&a, qa, "x", 1, scalars(&[1.])));
    wait(&b, write(&b, qb, "x", 1, scalars(&[1.])));
    let ca = a.clone_subtree(src_a, &[a.paths().intern_path("/T").unwrap()], 2u64).unwrap();
    let cb = b.clone_subtree(src_b, &[b.paths().intern_path("/T").unwrap()], 2u64).unwrap();
    assert_ne!(ca, cb, "each stage counts its op ids from its own block");
    wait(&a, ca);
    wait(&b, cb);
    // A's op on B: unknown, not one of B's ops.
    assert!(b.wait_ok(ca, Timeout::POLL).is_err());
    assert_eq!(b.fetch_clone_result(ca, Timeout::POLL).unwrap_err().status(), Status::InvalidHandle);
    assert_eq!(b.release_op(ca).unwrap_err().status(), Status::InvalidHandle);
    // B's op is untouched by all that.
    assert_eq!(b.fetch_clone_result(cb, Timeout::POLL).unwrap().source_prim_count, 1);
    b.release_op(cb).unwrap();
    a.release_op(ca).unwrap();
}

#[test]
fn unreleased_ops_are_bounded_with_queue_full() {
    let s = ovstage::Stage::with_config("bounded", ovstage::StageConfig::default().with_lanes(1).with_max_ops(8));
    let q = query(&s, &["/A"]);
    let ops: Vec<_> = (1..=8u64).map(|o| write(&s, q, "x", o, scalars(&[o as f32]))).collect();
    let e = s.write_attribute(q, "x", 9u64, scalars(&[9.]), ovstage::PrimMode::Upsert).expect_err("full");
    assert_eq!(e.status(), Status::QueueFull, "{e}");
    assert!(e.message().contains("8 ops are submitted and not released"), "{e}");
    assert!(e.message().contains(&format!("the oldest is {}", ops[0])), "{e}");
    let e = s.advance_write_floor(9u64, ovstage::FloorScope::All).expect_err("an advance is an op too");
    assert_eq!(e.status(), Status::QueueFull);
    // Releasing a handle is always accepted, even when full.
    wait(&s, ops[7]);
    s.release_query(q).expect("a release is accepted at the bound");
    for op in &ops {
        wait(&s, *op);
        s.release_op(*op).unwrap();
    }
    // The refused write left nothing behind: ordinal 9 is still free.
    let q = query(&s, &["/A"]);
    wait(&s, write(&s, q, "x", 9, scalars(&[9.])));
    wait(&s, seal(&s, 9));
    assert_eq!(read_f32(&s, q, "x", OrdinalRange::LATEST).unwrap().0, vec![(0, vec![9.])]);
}

/// Decided: UINT64_MAX is an ordinal like any other (the contract has no
/// sentinel ordinals for writes). A change there is unsealed until the
/// floor reaches UINT64_MAX, so by the contract's rule a LATEST read of
/// that cell fails with WRITE_FLOOR_VIOLATION meanwhile; the sealed floor
/// stays readable, and advancing the floor to UINT64_MAX seals it, after
/// which nothing can be written to the attribute again.
#[test]
fn a_write_at_the_highest_ordinal_is_an_ordinary_unsealed_change() {
    let s = stage(2);
    let q = query(&s, &["/A"]);
    wait(&s, write(&s, q, "x", 1, scalars(&[1.])));
    wait(&s, seal(&s, 1));
    wait(&s, write(&s, q, "x", u64::MAX, scalars(&[2.])));
    let e = read_f32(&s, q, "x", OrdinalRange::LATEST).expect_err("unsealed change at the end");
    assert_eq!(e.status(), Status::WriteFloorViolation, "{e}");
    assert_eq!(e.context().ordinal.map(|o| o.get()), Some(u64::MAX), "{e}");
    assert_eq!(read_f32(&s, q, "x", OrdinalRange::snapshot(1u64)).unwrap().0, vec![(0, vec![1.])]);
    wait(&s, seal(&s, u64::MAX));
    assert_eq!(read_f32(&s, q, "x", OrdinalRange::LATEST).unwrap().0, vec![(0, vec![2.])]);
    let e = s.write_attribute(q, "x", u64::MAX, scalars(&[3.]), ovstage::PrimMode::Upsert).expect_err("sealed");
    assert_eq!(e.status(), Status::WriteFloorViolation, "{e}");
}
