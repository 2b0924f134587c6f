//! Hostile sizes and ids: every size from a client is checked before
//! anything is allocated or copied, client-sized allocations fail with
//! `OUT_OF_MEMORY` instead of aborting, and ids handed to one instance are
//! unknown to another.

use super::*;

const OUT_OF_MEMORY: u32 = 9;

fn write(i: &Inst, q: u64, name: &str, ordinal: u64, data: ovstage_write_data_t) -> ovstage_enqueue_result_t {
    // SAFETY: live instance; the payload's arrays are valid for the op.
    unsafe { (i.vt().write_attribute.unwrap())(i.ctx(), q, attr(name), ordinal, data, ovstage_prim_mode_t(0)) }
}

/// A uint8 tensor over `byte` with `shape` and `strides` (kept by the
/// caller); zero strides make it a broadcast of that one byte.
fn u8_tensor(byte: &u8, shape: &mut [i64], strides: &mut [i64]) -> DLTensor {
    DLTensor {
        data: std::ptr::from_ref(byte).cast_mut().cast(),
        device: DLDevice { device_type: DLDeviceType(1), device_id: 0 },
        ndim: shape.len() as i32,
        dtype: DLDataType { code: 1, bits: 8, lanes: 1 },
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    }
}

#[test]
fn broadcast_tensors_are_checked_before_any_copy() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A", "/B"]);
    let byte = 7u8;
    let rejected = |t: DLTensor, data: ovstage_write_data_t, status: u32, needle: &str| {
        let r = write(&i, q, "b", 1, ovstage_write_data_t { tensors: &t, ..data });
        assert_eq!((r.status.0, r.op_index), (status, 0), "{}", last_error());
        assert!(last_error().contains(needle), "{} lacks {needle:?}", last_error());
    };
    // A 64 GiB broadcast whose rows cannot fold: refused by its shape
    // alone (it used to be gathered first, and abort).
    let (mut shape, mut strides) = ([2i64, 1 << 35], [0i64, 0]);
    let t = u8_tensor(&byte, &mut shape, &mut strides);
    rejected(t, write_data(&t), INVALID_ARGUMENT, "row width between 1 and 65535");
    // 2^35 one-byte rows for a query of 2 prims, no index map.
    let (mut shape, mut strides) = ([1i64 << 35, 1], [0i64, 0]);
    let t = u8_tensor(&byte, &mut shape, &mut strides);
    rejected(t, write_data(&t), INVALID_ARGUMENT, "has 34359738368 rows but the write addresses at most 2 prims");
    // Strides whose reach overflows the address space.
    let (mut shape, mut strides) = ([2i64, 3], [i64::MAX, 1]);
    let t = u8_tensor(&byte, &mut shape, &mut strides);
    rejected(t, write_data(&t), INVALID_ARGUMENT, "beyond the address space");
    let (mut shape, mut strides) = ([3i64, 2], [i64::MIN / 2 - 1, 1]);
    let t = u8_tensor(&byte, &mut shape, &mut strides);
    rejected(t, write_data(&t), INVALID_ARGUMENT, "beyond the address space");
    // An array row of 2^44 broadcast bytes (16 TiB): an allocation no
    // machine running this grants, reported, not an abort.
    let (mut shape, mut strides) = ([1i64 << 44], [0i64]);
    let row = u8_tensor(&byte, &mut shape, &mut strides);
    let (mut s2, mut st2) = ([1i64], [1i64]);
    let rows = [row, u8_tensor(&byte, &mut s2, &mut st2)];
    let data = ovstage_write_data_t { tensor_count: 2, is_array: CBool::TRUE, ..write_data(&rows[0]) };
    let r = write(&i, q, "arr", 1, ovstage_write_data_t { tensors: rows.as_ptr(), ..data });
    assert_eq!((r.status.0, r.op_index), (OUT_OF_MEMORY, 0), "{}", last_error());
    assert!(last_error().contains("could not allocate 17592186044416 bytes"), "{}", last_error());
    // With an index map, only the rows it can address are gathered: a
    // broadcast of 2^40 rows is fine.
    let (mut shape, mut strides) = ([1i64 << 40, 1], [0i64, 0]);
    let t = u8_tensor(&byte, &mut shape, &mut strides);
    let map = [1u32, 0];
    i.done(write(&i, q, "b", 1, ovstage_write_data_t { index_map: map.as_ptr(), count: 2, ..write_data(&t) }));
    i.seal(1);
    let mut read = 0;
    let tokens = i.tokens(&["b"]);
    // SAFETY: live instance, valid arrays and output.
    unsafe {
        let vt = i.vt();
        i.done((vt.read_attributes.unwrap())(i.ctx(), q, tokens.as_ptr(), 1, LATEST, &mut read));
        let mut g: ovstage_read_group_t = std::mem::zeroed();
        assert_eq!((vt.fetch_read_next.unwrap())(i.ctx(), read, INFINITE, &mut g).0, OK);
        let t = &*g.data.tensors;
        assert_eq!(std::slice::from_raw_parts(t.data.cast::<u8>(), 2), &[7, 7]);
        assert_eq!((vt.release_group.unwrap())(i.ctx(), &g).0, OK);
        i.done((vt.release_read.unwrap())(i.ctx(), read));
    }
}

/// Enqueues an array map session of float32 `a` over `q` with
/// `element_sizes`; returns the enqueue status and the handle.
fn map_f32_array(i: &Inst, q: u64, ordinal: u64, sizes: &[usize]) -> (ovstage_enqueue_result_t, u64) {
    let desc = ovstage_map_desc_t {
        attribute: attr("a"),
        dtype: DLDataType { code: 2, bits: 32, lanes: 1 },
        semantic: ovstage_attribute_semantic_t(0),
        prim_mode: ovstage_prim_mode_t(0),
        attribute_mode: ovstage_attribute_mode_t(0),
    };
    let mut map = 0;
    // SAFETY: live instance; valid descriptor, sizes and output.
    let r =
        unsafe { (i.vt().map_attribute.unwrap())(i.ctx(), q, &desc, ordinal, sizes.as_ptr(), sizes.len(), &mut map) };
    (r, map)
}

#[test]
fn map_element_sizes_are_checked_and_huge_sessions_fail_with_out_of_memory() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A", "/B"]);
    // Products and sums that overflow: refused at enqueue.
    for sizes in [[1usize << 62, 1], [usize::MAX / 2, 4], [4, usize::MAX]] {
        let (r, map) = map_f32_array(&i, q, 1, &sizes);
        assert_eq!((r.status.0, r.op_index, map), (INVALID_ARGUMENT, 0, 0), "{sizes:?}: {}", last_error());
        assert!(last_error().contains("element_sizes["), "{}", last_error());
    }
    // 16 TiB: accepted, and the session fails with OUT_OF_MEMORY (it used
    // to abort the process).
    let (r, map) = map_f32_array(&i, q, 1, &[1 << 42, 4]);
    assert_eq!(r.status.0, OK, "{}", last_error());
    // SAFETY: live instance; valid outputs.
    unsafe {
        let vt = i.vt();
        let mut g: ovstage_map_group_t = std::mem::zeroed();
        assert_eq!((vt.fetch_map_next.unwrap())(i.ctx(), map, INFINITE, &mut g).0, OUT_OF_MEMORY, "{}", last_error());
        assert!(last_error().contains("could not allocate"), "{}", last_error());
        let end = (vt.unmap_attribute.unwrap())(i.ctx(), map, ovstage_cuda_sync_t::default());
        assert_eq!(end.status.0, OK);
        assert_ne!(i.wait(end.op_index), OK, "ending a failed session reports its failure");
    }
    // The instance goes on.
    let (r, map) = map_f32_array(&i, q, 2, &[1, 1]);
    assert_eq!(r.status.0, OK);
    // SAFETY: live instance.
    i.done(unsafe { (i.vt().unmap_attribute.unwrap())(i.ctx(), map, ovstage_cuda_sync_t::default()) });
}

#[test]
fn a_read_group_id_of_another_instance_is_unknown() {
    let _g = shared();
    let (a, b) = (Inst::new(), Inst::new());
    let mut groups = Vec::new();
    for i in [&a, &b] {
        let q = i.query(&["/A"]);
        i.done(i.write_f32(q, "x", 1, &[1.], 1));
        i.seal(1);
        let tokens = i.tokens(&["x"]);
        let mut read = 0;
        // SAFETY: live instance, valid arrays and outputs.
        unsafe {
            i.done((i.vt().read_attributes.unwrap())(i.ctx(), q, tokens.as_ptr(), 1, LATEST, &mut read));
            let mut g: ovstage_read_group_t = std::mem::zeroed();
            assert_eq!((i.vt().fetch_read_next.unwrap())(i.ctx(), read, INFINITE, &mut g).0, OK);
            groups.push(g);
        }
    }
    assert_ne!(groups[0].read_group_id, groups[1].read_group_id, "ids are salted per instance");
    // SAFETY: live instances; the groups came from them.
    unsafe {
        let release = |i: &Inst, g: &ovstage_read_group_t| (i.vt().release_group.unwrap())(i.ctx(), g).0;
        assert_eq!(release(&b, &groups[0]), INVALID_HANDLE, "A's group released on B");
        assert!(last_error().contains("unknown or already released"), "{}", last_error());
        // B's own group is still held, and its view still valid.
        assert_eq!(*(*groups[1].data.tensors).data.cast::<f32>(), 1.);
        assert_eq!(release(&b, &groups[1]), OK);
        assert_eq!(release(&a, &groups[0]), OK);
    }
}

#[test]
fn counts_and_lengths_larger_than_memory_are_refused_before_any_read() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A"]);
    let one = attr("x");
    // SAFETY: live instance; the counts lie, and must be refused before
    // anything is read past the one element given.
    unsafe {
        let r = (i.vt().delete_attributes.unwrap())(i.ctx(), q, &one, usize::MAX, 1);
        assert_eq!((r.status.0, r.op_index), (INVALID_ARGUMENT, 0));
        assert!(last_error().contains("larger than any array can be"), "{}", last_error());
        let long = ovx_string_or_token_t { token: 0, string: ovx_string_t { ptr: c"x".as_ptr(), length: usize::MAX } };
        let r = (i.vt().delete_attributes.unwrap())(i.ctx(), q, &long, 1, 1);
        assert_eq!((r.status.0, r.op_index), (INVALID_ARGUMENT, 0));
        assert!(last_error().contains("larger than any string can be"), "{}", last_error());
    }
}
