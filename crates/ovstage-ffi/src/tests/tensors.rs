//! DLPack inputs: validation, strided payloads, array payloads, selections
//! and the release of managed tensors.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::abi::dlpack::DLManagedTensorVersioned;

fn managed(values: Vec<f32>, calls: &'static AtomicUsize) -> *const DLManagedTensorVersioned {
    ovstage_dlpack::testing::counted_f32(values, 0, calls)
}

fn managed_data(ptrs: &[*const DLManagedTensorVersioned]) -> ovstage_write_data_t {
    ovstage_write_data_t {
        tensors: std::ptr::null(),
        managed_tensors: ptrs.as_ptr(),
        tensor_count: ptrs.len() as u32,
        ..write_data(&dummy())
    }
}

fn dummy() -> DLTensor {
    f32_tensor(&[], &mut [], 1)
}

fn write(i: &Inst, q: u64, name: &str, ordinal: u64, data: ovstage_write_data_t) -> ovstage_enqueue_result_t {
    // SAFETY: live instance; the payload's arrays are valid for the op.
    unsafe { (i.vt().write_attribute.unwrap())(i.ctx(), q, attr(name), ordinal, data, ovstage_prim_mode_t(0)) }
}

#[test]
fn managed_tensors_are_released_once_whatever_happens() {
    let _g = shared();
    static ACCEPTED: AtomicUsize = AtomicUsize::new(0);
    static REJECTED: AtomicUsize = AtomicUsize::new(0);
    static BATCH: AtomicUsize = AtomicUsize::new(0);
    let i = Inst::new();
    let q = i.query(&["/A", "/B"]);
    let t = [managed(vec![1., 2.], &ACCEPTED)];
    i.done(write(&i, q, "m", 1, managed_data(&t)));
    i.seal(1);
    assert_eq!(i.read_f32(q, &["m"], LATEST).unwrap()[0].rows, vec![vec![1.0], vec![2.0]]);
    // Rejected for a bad prim mode: the deleter still runs, once.
    let t = [managed(vec![1., 2.], &REJECTED)];
    // SAFETY: live instance.
    let r = unsafe {
        (i.vt().write_attribute.unwrap())(i.ctx(), q, attr("m"), 2, managed_data(&t), ovstage_prim_mode_t(9))
    };
    assert_eq!(r.status.0, INVALID_ARGUMENT);
    assert_eq!(REJECTED.load(Ordering::SeqCst), 1);
    // A batch naming one tensor twice: rejected, each tensor released once.
    let a = managed(vec![1., 2.], &BATCH);
    let b = managed(vec![3., 4.], &BATCH);
    let da = [a];
    let db = [b, a];
    let writes = [
        ovstage_attribute_write_t { attribute: attr("x"), data: managed_data(&da) },
        ovstage_attribute_write_t {
            attribute: attr("y"),
            data: ovstage_write_data_t { is_array: CBool::TRUE, ..managed_data(&db) },
        },
    ];
    // SAFETY: live instance, valid array.
    let r = unsafe { (i.vt().write_attributes.unwrap())(i.ctx(), q, writes.as_ptr(), 2, 3, ovstage_prim_mode_t(0)) };
    assert_eq!(r.status.0, INVALID_ARGUMENT);
    assert!(last_error().contains("already given in this call"), "{}", last_error());
    assert_eq!(BATCH.load(Ordering::SeqCst), 2);
    drop(i);
    assert_eq!(ACCEPTED.load(Ordering::SeqCst), 1, "released once the stage no longer reads it");
}

#[test]
fn write_attributes_writes_every_entry_in_one_op() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A", "/B"]);
    let (pos, vel) = ([1f32, 2., 3., 4., 5., 6.], [9f32, 8.]);
    let (mut s1, mut s2) = ([2i64, 3], [2i64]);
    let (tp, tv) = (f32_tensor(&pos, &mut s1, 1), f32_tensor(&vel, &mut s2, 1));
    let writes = [
        ovstage_attribute_write_t { attribute: attr("pos"), data: write_data(&tp) },
        ovstage_attribute_write_t { attribute: attr("vel"), data: write_data(&tv) },
    ];
    // SAFETY: live instance, valid array.
    i.done(unsafe { (i.vt().write_attributes.unwrap())(i.ctx(), q, writes.as_ptr(), 2, 1, ovstage_prim_mode_t(0)) });
    i.seal(1);
    let g = i.read_f32(q, &["pos", "vel"], LATEST).unwrap();
    assert_eq!(g[0].rows, vec![vec![1., 2., 3.], vec![4., 5., 6.]], "(N, 3) folds into 3 lanes");
    assert_eq!(g[1].rows, vec![vec![9.], vec![8.]]);
    // SAFETY: NULL entries with a count are rejected.
    let r = unsafe { (i.vt().write_attributes.unwrap())(i.ctx(), q, std::ptr::null(), 2, 2, ovstage_prim_mode_t(0)) };
    assert_eq!(r.status.0, INVALID_ARGUMENT);
}

#[test]
fn strided_and_offset_payloads_are_gathered() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A", "/B"]);
    // Two rows of 2 lanes inside rows of 3 floats, after one leading float.
    let raw = [0f32, 1., 2., 99., 3., 4., 99.];
    let mut shape = [2i64, 2];
    let mut strides = [3i64, 1];
    let mut t = f32_tensor(&raw, &mut shape, 1);
    t.strides = strides.as_mut_ptr();
    t.byte_offset = 4;
    i.done(write(&i, q, "s", 1, write_data(&t)));
    i.seal(1);
    assert_eq!(i.read_f32(q, &["s"], LATEST).unwrap()[0].rows, vec![vec![1., 2.], vec![3., 4.]]);
}

#[test]
fn bad_tensors_are_rejected_with_the_reason() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A", "/B"]);
    let values = [1f32, 2.];
    let check = |t: DLTensor, status: u32, needle: &str| {
        let r = write(&i, q, "b", 1, write_data(&t));
        assert_eq!((r.status.0, r.op_index), (status, 0), "{}", last_error());
        assert!(last_error().contains(needle), "{} lacks {needle}", last_error());
    };
    let mut shape = [2i64];
    let good = f32_tensor(&values, &mut shape, 1);
    let mut t = good;
    t.device.device_type = crate::abi::dlpack::DLDeviceType(2);
    // Without a driver (or device 0) the tensor names a device that is not
    // there, as the reference answers; with one, its bytes are copied to the
    // host at enqueue (xtask/ctests/cuda_staging.c runs that end to end).
    match ovstage_backend_cuda::probe_device(0) {
        Err(_) => check(t, INVALID_ARGUMENT, "is on CUDA device 0, but this machine has no usable CUDA driver"),
        Ok(()) => {
            // A device address the driver refuses to copy from.
            t.data = 0x10 as *mut std::ffi::c_void;
            check(t, INVALID_ARGUMENT, "copying 8 bytes from CUDA device 0 failed");
        }
    }
    t.device.device_id = 7;
    if ovstage_backend_cuda::probe_device(7).is_err() {
        check(t, INVALID_ARGUMENT, "is on CUDA device 7, but");
    }
    t.device.device_id = -1;
    check(t, INVALID_ARGUMENT, "CUDA device id -1 is negative");
    let mut t = good;
    t.device.device_type = crate::abi::dlpack::DLDeviceType(13);
    if ovstage_backend_cuda::probe_device(0).is_err() {
        check(t, INVALID_ARGUMENT, "is on CUDA device 0, but this machine has no usable CUDA driver");
    }
    let mut t = good;
    t.device.device_type = crate::abi::dlpack::DLDeviceType(77);
    check(t, NOT_SUPPORTED, "device type 77");
    let mut t = good;
    t.dtype.code = 200;
    check(t, INVALID_ARGUMENT, "dtype code 200");
    let mut t = good;
    t.dtype.bits = 12;
    check(t, INVALID_ARGUMENT, "whole-byte");
    let mut t = good;
    t.ndim = -1;
    check(t, INVALID_ARGUMENT, "ndim -1");
    let mut t = good;
    t.shape = std::ptr::null_mut();
    check(t, INVALID_ARGUMENT, "shape is NULL");
    let mut neg = [-2i64];
    let mut t = good;
    t.shape = neg.as_mut_ptr();
    check(t, INVALID_ARGUMENT, "negative");
    let mut t = good;
    t.data = std::ptr::null_mut();
    check(t, INVALID_ARGUMENT, "data is NULL");
    let mut three = [3i64];
    let mut t = good;
    t.shape = three.as_mut_ptr();
    t.data = [1f32, 2., 3.].as_ptr().cast_mut().cast();
    check(t, INVALID_ARGUMENT, "");
    // Payload-level checks.
    let both = ovstage_write_data_t {
        managed_tensors: [std::ptr::null::<DLManagedTensorVersioned>()].as_ptr(),
        ..write_data(&good)
    };
    let r = write(&i, q, "b", 1, both);
    assert_eq!(r.status.0, INVALID_ARGUMENT);
    let neither = ovstage_write_data_t { tensors: std::ptr::null(), ..write_data(&good) };
    assert_eq!(write(&i, q, "b", 1, neither).status.0, INVALID_ARGUMENT);
    assert!(last_error().contains("exactly one must be"));
    let map = [0u32, 1];
    let mask = [3u64];
    let both_sel = ovstage_write_data_t { index_map: map.as_ptr(), mask: mask.as_ptr(), count: 2, ..write_data(&good) };
    assert_eq!(write(&i, q, "b", 1, both_sel).status.0, INVALID_ARGUMENT);
    assert!(last_error().contains("mutually exclusive"));
    let no_count = ovstage_write_data_t { index_map: map.as_ptr(), ..write_data(&good) };
    assert_eq!(write(&i, q, "b", 1, no_count).status.0, INVALID_ARGUMENT);
    let sync =
        ovstage_write_data_t { cuda_sync: ovstage_cuda_sync_t { stream: 1, wait_event: 0 }, ..write_data(&good) };
    assert_eq!(write(&i, q, "b", 1, sync).status.0, NOT_SUPPORTED);
    let semantic = ovstage_write_data_t { semantic: ovstage_attribute_semantic_t(16), ..write_data(&good) };
    assert_eq!(write(&i, q, "b", 1, semantic).status.0, INVALID_ARGUMENT);
    let two = [good, good];
    let fixed_two = ovstage_write_data_t { tensors: two.as_ptr(), tensor_count: 2, ..write_data(&good) };
    assert_eq!(write(&i, q, "b", 1, fixed_two).status.0, INVALID_ARGUMENT);
    assert!(last_error().contains("exactly one tensor"));
    // SAFETY: live instance; no attribute name and no token.
    let r = unsafe {
        (i.vt().write_attribute.unwrap())(i.ctx(), q, attr(""), 1, write_data(&good), ovstage_prim_mode_t(0))
    };
    assert_eq!(r.status.0, INVALID_ARGUMENT);
}

#[test]
fn selections_and_array_payloads() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A", "/B", "/C"]);
    // Index map: A and C take row 1, B row 0.
    let rows = [10f32, 20.];
    let mut shape = [2i64];
    let t = f32_tensor(&rows, &mut shape, 1);
    let map = [1u32, 0, 1];
    i.done(write(&i, q, "g", 1, ovstage_write_data_t { index_map: map.as_ptr(), count: 3, ..write_data(&t) }));
    // Mask: only B (bit 1) of three, the payload still has three rows.
    let all = [1f32, 2., 3.];
    let mut shape3 = [3i64];
    let t3 = f32_tensor(&all, &mut shape3, 1);
    let mask = [0b010u64];
    i.done(write(&i, q, "g", 2, ovstage_write_data_t { mask: mask.as_ptr(), count: 3, ..write_data(&t3) }));
    // Arrays: one tensor per prim, lengths 1, 0 and 2.
    let (a, c) = ([1f32], [2f32, 3.]);
    let (mut sa, mut sb, mut sc) = ([1i64], [0i64], [2i64]);
    let per_row = [f32_tensor(&a, &mut sa, 1), f32_tensor(&[], &mut sb, 1), f32_tensor(&c, &mut sc, 1)];
    let arr =
        ovstage_write_data_t { tensors: per_row.as_ptr(), tensor_count: 3, is_array: CBool::TRUE, ..write_data(&t) };
    i.done(write(&i, q, "arr", 2, arr));
    i.seal(2);
    let g = i.read_f32(q, &["g", "arr"], LATEST).unwrap();
    assert_eq!(g[0].rows, vec![vec![20.], vec![2.], vec![20.]]);
    assert!(g[1].is_array);
    assert_eq!(g[1].rows, vec![vec![1.], vec![], vec![2., 3.]]);
    // Packed arrays: rows of equal length in one tensor.
    let packed = [1f32, 2., 3., 4., 5., 6.];
    let mut sp = [6i64];
    let tp = f32_tensor(&packed, &mut sp, 1);
    i.done(write(&i, q, "arr", 3, ovstage_write_data_t { is_array: CBool::TRUE, ..write_data(&tp) }));
    i.seal(3);
    assert_eq!(i.read_f32(q, &["arr"], LATEST).unwrap()[0].rows, vec![vec![1., 2.], vec![3., 4.], vec![5., 6.]]);
}

#[test]
fn boundary_error_messages() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A", "/B"]);
    let values = [1f32, 2.];
    let mut shape = [2i64];
    let good = f32_tensor(&values, &mut shape, 1);
    let mut messages = Vec::new();
    let mut record = |what: &str, status: u32| messages.push(format!("{what}: status {status}: {}", last_error()));
    // (CUDA tensors are left out: their message depends on the machine's
    // driver; `bad_tensors_are_rejected_with_the_reason` checks both.)
    let mut code = good;
    code.dtype.code = 200;
    record("dtype code", write(&i, q, "b", 1, write_data(&code)).status.0);
    let neither = ovstage_write_data_t { tensors: std::ptr::null(), ..write_data(&good) };
    record("no tensors", write(&i, q, "b", 1, neither).status.0);
    let map = [0u32, 1];
    let mask = [3u64];
    let both = ovstage_write_data_t { index_map: map.as_ptr(), mask: mask.as_ptr(), count: 2, ..write_data(&good) };
    record("index map and mask", write(&i, q, "b", 1, both).status.0);
    // SAFETY: live instance; bad prim mode and a NULL out pointer.
    unsafe {
        let r = (i.vt().write_attribute.unwrap())(i.ctx(), q, attr("b"), 1, write_data(&good), ovstage_prim_mode_t(5));
        record("prim mode", r.status.0);
        let r = (i.vt().get_oldest_preserved_ordinal.unwrap())(i.ctx(), std::ptr::null_mut());
        record("null out handle", r.status.0);
        let r = (i.vt().release_query.unwrap())(i.ctx(), 0);
        record("query handle 0", r.status.0);
        // Entries of write_attributes are named by their index.
        let writes = [
            ovstage_attribute_write_t { attribute: attr("b"), data: write_data(&good) },
            ovstage_attribute_write_t { attribute: attr("c"), data: write_data(&code) },
        ];
        let r = (i.vt().write_attributes.unwrap())(i.ctx(), q, writes.as_ptr(), 2, 1, ovstage_prim_mode_t(0));
        record("write_attributes, bad tensor", r.status.0);
        let writes = [writes[0], ovstage_attribute_write_t { attribute: attr(""), data: write_data(&good) }];
        let r = (i.vt().write_attributes.unwrap())(i.ctx(), q, writes.as_ptr(), 2, 1, ovstage_prim_mode_t(0));
        record("write_attributes, no attribute", r.status.0);
    }
    insta::assert_snapshot!(messages.join("\n"));
}

#[test]
fn per_row_array_payloads_are_read_in_place_and_strided_rows_gathered() {
    let _g = shared();
    let i = Inst::new();
    let q = i.query(&["/A", "/B", "/C", "/D"]);
    // Row 1 is strided (every other float), row 2 is empty, row 3 has a
    // byte offset.
    let (a, b, d) = ([1f32, 2.], [3f32, 99., 4., 99.], [99f32, 5.]);
    let (mut sa, mut sb, mut sc, mut sd) = ([2i64], [2i64], [0i64], [1i64]);
    let mut stride = [2i64];
    let mut strided = f32_tensor(&b, &mut sb, 1);
    strided.strides = stride.as_mut_ptr();
    let mut offset = f32_tensor(&d, &mut sd, 1);
    offset.byte_offset = 4;
    let rows = [f32_tensor(&a, &mut sa, 1), strided, f32_tensor(&[], &mut sc, 1), offset];
    let data =
        ovstage_write_data_t { tensors: rows.as_ptr(), tensor_count: 4, is_array: CBool::TRUE, ..write_data(&rows[0]) };
    i.done(write(&i, q, "arr", 1, data));
    i.seal(1);
    let g = i.read_f32(q, &["arr"], LATEST).unwrap();
    assert_eq!(g[0].rows, vec![vec![1., 2.], vec![3., 4.], vec![], vec![5.]]);
    // A bad row is named by its index.
    let mut neg = [-1i64];
    let mut bad = rows[0];
    bad.shape = neg.as_mut_ptr();
    let rows = [rows[0], bad];
    let data =
        ovstage_write_data_t { tensors: rows.as_ptr(), tensor_count: 2, is_array: CBool::TRUE, ..write_data(&rows[0]) };
    assert_eq!(write(&i, q, "arr", 2, data).status.0, INVALID_ARGUMENT);
    assert!(last_error().contains("tensors[1]: shape[0] is negative"), "{}", last_error());
}

#[test]
fn runs_of_like_row_tensors_read_the_same_as_one_by_one() {
    // Rows after the first that share its dtype and trailing dimensions
    // take a shorter path; whatever differs goes through the full check.
    let _g = shared();
    let i = Inst::new();
    let paths = ["/A", "/B", "/C", "/D", "/E", "/F"];
    let q = i.query(&paths);
    let v: Vec<f32> = (0..24).map(|x| x as f32).collect();
    let (mut s0, mut s1, mut s2, mut s3, mut s4, mut s5) =
        ([2i64, 3], [1i64, 3], [0i64, 3], [3i64, 3], [1i64, 3], [2i64, 3]);
    let mut null_empty = f32_tensor(&[], &mut s2, 1);
    null_empty.data = std::ptr::null_mut();
    let mut offset = f32_tensor(&v[12..], &mut s4, 1);
    offset.byte_offset = 8;
    // Row-major strides given explicitly are compact too.
    let mut compact_strides = [3i64, 1];
    let mut explicit = f32_tensor(&v[16..], &mut s5, 1);
    explicit.strides = compact_strides.as_mut_ptr();
    let rows = [
        f32_tensor(&v[0..], &mut s0, 1),
        f32_tensor(&v[6..], &mut s1, 1),
        null_empty,
        f32_tensor(&v[9..], &mut s3, 1),
        offset,
        explicit,
    ];
    let data =
        ovstage_write_data_t { tensors: rows.as_ptr(), tensor_count: 6, is_array: CBool::TRUE, ..write_data(&rows[0]) };
    i.done(write(&i, q, "arr", 1, data));
    i.seal(1);
    let g = i.read_f32(q, &["arr"], LATEST).unwrap();
    let expect: Vec<Vec<f32>> =
        [(0, 6), (6, 9), (0, 0), (9, 18), (14, 17), (16, 22)].iter().map(|&(a, b)| v[a..b].to_vec()).collect();
    assert_eq!(g[0].rows, expect);
    // Within a run: a different trailing dimension, a negative leading one
    // and NULL data are reported as for the first row, by index.
    type Spoil = fn(&mut DLTensor, &mut [i64; 2]);
    let cases: [(&str, Spoil); 3] = [
        ("tensor 2", |_, shape| shape[1] = 2),
        ("tensors[2]: shape[0] is negative", |_, shape| shape[0] = -1),
        ("tensors[2]: data is NULL but the tensor holds 12 bytes", |t, _| t.data = std::ptr::null_mut()),
    ];
    for (n, (message, spoil)) in cases.into_iter().enumerate() {
        let (mut a, mut b, mut c) = ([1i64, 3], [1i64, 3], [1i64, 3]);
        let mut rows = [f32_tensor(&v, &mut a, 1), f32_tensor(&v, &mut b, 1), f32_tensor(&v, &mut c, 1)];
        spoil(&mut rows[2], &mut c);
        rows[2].shape = c.as_mut_ptr();
        let data = ovstage_write_data_t {
            tensors: rows.as_ptr(),
            tensor_count: 3,
            is_array: CBool::TRUE,
            ..write_data(&rows[0])
        };
        let r = write(&i, q, "arr", 2 + n as u64, data);
        // Reported at enqueue or by the op, whichever sees it.
        let status = if r.status.0 == OK { i.wait(r.op_index) } else { r.status.0 };
        let failure = (status, last_error());
        assert!(failure.0 != 0 && failure.1.contains(message), "case {n}: {failure:?}");
    }
}

#[test]
fn managed_array_rows_are_released_once_each() {
    let _g = shared();
    static WRITTEN: AtomicUsize = AtomicUsize::new(0);
    static MIXED: AtomicUsize = AtomicUsize::new(0);
    let i = Inst::new();
    let q = i.query(&["/A", "/B", "/C"]);
    let rows = [managed(vec![1., 2.], &WRITTEN), managed(vec![], &WRITTEN), managed(vec![3.], &WRITTEN)];
    let data = ovstage_write_data_t { is_array: CBool::TRUE, ..managed_data(&rows) };
    i.done(write(&i, q, "m", 1, data));
    i.seal(1);
    assert_eq!(i.read_f32(q, &["m"], LATEST).unwrap()[0].rows, vec![vec![1., 2.], vec![], vec![3.]]);
    // Rows of different element types (f32, then f32x2): rejected at
    // enqueue, every row released at once.
    let pair = managed(vec![4., 5.], &MIXED);
    // SAFETY: the tensor `managed` just built, not handed over yet.
    unsafe {
        let t = &mut (*pair.cast_mut()).dl_tensor;
        t.dtype.lanes = 2;
        *t.shape = 1;
    }
    let rows = [managed(vec![1.], &MIXED), pair, managed(vec![2.], &MIXED)];
    let r = write(&i, q, "m", 2, ovstage_write_data_t { is_array: CBool::TRUE, ..managed_data(&rows) });
    assert_eq!(r.status.0, INVALID_ARGUMENT);
    assert!(last_error().contains("mix element types f32 and f32x2 (tensor 1)"), "{}", last_error());
    assert_eq!(MIXED.load(Ordering::SeqCst), 3);
    drop(i);
    assert_eq!(WRITTEN.load(Ordering::SeqCst), 3, "each row released once the stage no longer reads it");
}

/// Writes from real CUDA memory (device 0) read back equal to the same
/// writes from host memory: all prims, an index map and, with `cuda_sync`
/// naming the legacy stream, a packed array. Prints SKIP without a GPU (the
/// GPU check's bundle runs it where there is one). Built where the backend
/// drives a driver (its `driven` cfg, see its build.rs: a cfg of another
/// crate, so spelled out here).
/// `t` described over device memory at `address` on CUDA device 0.
#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
fn on_cuda_device_0(t: DLTensor, address: u64) -> DLTensor {
    let device = DLDevice { device_type: crate::abi::dlpack::DLDeviceType(2), device_id: 0 };
    DLTensor { data: address as *mut std::ffi::c_void, device, ..t }
}

#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
#[test]
fn cuda_writes_read_back_equal_to_host_writes() {
    use ovstage_backend_cuda::cust::memory::DeviceBuffer;
    let _g = shared();
    let Some(gpu) = gpu_or_skip("cuda_writes_read_back_equal_to_host_writes") else { return };
    let i = Inst::new();
    let q = i.query(&["/A", "/B", "/C"]);
    let values = [1f32, 2., 3., 4., 5., 6.];
    let on_device = DeviceBuffer::from_slice(&values).expect("device memory");
    gpu.synchronize().expect("synchronize");
    let mut shape = [3i64, 2];
    let host = f32_tensor(&values, &mut shape, 1);
    let device = on_cuda_device_0(host, on_device.as_device_ptr().as_raw());
    i.done(write(&i, q, "h", 1, write_data(&host)));
    i.done(write(&i, q, "d", 1, write_data(&device)));
    let map = [2u32, 0];
    for (name, t) in [("h", &host), ("d", &device)] {
        let mapped = ovstage_write_data_t { index_map: map.as_ptr(), count: 2, ..write_data(t) };
        i.done(write(&i, q, name, 2, mapped));
    }
    let mut flat = [6i64];
    let host_flat = f32_tensor(&values, &mut flat, 1);
    let device_flat = DLTensor { data: device.data, device: device.device, ..host_flat };
    for (name, t) in [("ha", &host_flat), ("da", &device_flat)] {
        let sync = if name == "da" { ovstage_cuda_sync_t { stream: 1, wait_event: 0 } } else { Default::default() };
        let packed = ovstage_write_data_t { is_array: CBool::TRUE, cuda_sync: sync, ..write_data(t) };
        i.done(write(&i, q, name, 1, packed));
    }
    i.seal(2);
    let read = |name: &str| i.read_f32(q, &[name], LATEST).unwrap().into_iter().map(|g| g.rows).collect::<Vec<_>>();
    assert_eq!(read("d"), read("h"));
    assert_eq!(read("da"), read("ha"));
}

/// On a real GPU: the enqueue of a write from a CUDA tensor waits for
/// nothing on the device. A producer holds its stream for 300 ms and then
/// writes the tensor's value; the write names that stream. When the
/// enqueue returns the producer's stream is still busy (asked with
/// `cuStreamQuery`, not timed), and the op, once waited for, holds the
/// producer's value. Prints SKIP without a GPU.
#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
#[test]
fn a_cuda_write_is_enqueued_without_waiting_for_its_producer() {
    use ovstage_backend_cuda::cust::memory::DeviceBuffer;
    use ovstage_backend_cuda::cust::stream::{Stream, StreamFlags};
    let _g = shared();
    let Some(gpu) = gpu_or_skip("a_cuda_write_is_enqueued_without_waiting_for_its_producer") else { return };
    let i = Inst::new();
    let q = i.query(&["/A"]);
    let value = 2.5f32;
    let out = DeviceBuffer::from_slice(&[0u32]).expect("device memory");
    let producer = Stream::new(StreamFlags::NON_BLOCKING, None).expect("stream");
    gpu.synchronize().expect("synchronize");
    // SAFETY: `out` is a device u32; one thread writes it after 300 ms.
    unsafe { gpu.spin_ns(300_000_000, out.as_device_ptr().as_raw(), value.to_bits(), &producer) }.expect("launch");
    let mut shape = [1i64];
    let t = on_cuda_device_0(f32_tensor(&[0.], &mut shape, 1), out.as_device_ptr().as_raw());
    let sync = ovstage_cuda_sync_t { stream: producer.as_inner() as usize, wait_event: 0 };
    let r = write(&i, q, "produced", 1, ovstage_write_data_t { cuda_sync: sync, ..write_data(&t) });
    // SAFETY: a live stream.
    let busy = unsafe { ovstage_backend_cuda::cust::sys::cuStreamQuery(producer.as_inner()) };
    assert_eq!(busy, ovstage_backend_cuda::cust::sys::cudaError_enum::CUDA_ERROR_NOT_READY, "the enqueue waited");
    i.done(r);
    i.seal(1);
    let rows = i.read_f32(q, &["produced"], LATEST).unwrap()[0].rows.concat();
    assert_eq!(rows, [value]);
}
