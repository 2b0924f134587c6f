//! Client tensors taken in: managed tensors released exactly once,
//! descriptors validated before anything is read or allocated, compact
//! payloads read in place, strided ones gathered within what the write can
//! use.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ovstage::DType;
use ovstage_dlpack::dlpack::{DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use ovstage_dlpack::import::{self, CudaSync, Inputs, Managed, RowBound, Takeover};
use ovstage_types::Status;

fn tensor(data: &[f32], shape: &mut [i64], strides: Option<&mut [i64]>) -> DLTensor {
    DLTensor {
        data: data.as_ptr().cast_mut().cast(),
        device: DLDevice { device_type: DLDeviceType(1), device_id: 0 },
        ndim: shape.len() as i32,
        dtype: DLDataType { code: 2, bits: 32, lanes: 1 },
        shape: shape.as_mut_ptr(),
        strides: strides.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: 0,
    }
}

fn managed(values: Vec<f32>, calls: &'static AtomicUsize) -> *const DLManagedTensorVersioned {
    ovstage_dlpack::testing::counted_f32(values, 1, calls)
}

#[test]
fn takeover_owns_each_distinct_tensor_once() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let (a, b) = (managed(vec![1., 2.], &CALLS), managed(vec![3.], &CALLS));
    let mut takeover = Takeover::new();
    // SAFETY: valid managed tensors whose ownership passes here.
    let first = unsafe { takeover.take(&[a], "write 0") };
    // SAFETY: as above (`a` again is refused, not owned twice).
    let second = unsafe { takeover.take(&[b, std::ptr::null(), a], "write 1") };
    assert_eq!((first.len(), second.len()), (1, 1));
    assert_eq!(first[0].flags(), ovstage_dlpack::Flags::READ_ONLY);
    assert_eq!(first[0].tensor().ndim, 1);
    let e = takeover.finish().unwrap_err();
    assert_eq!(e.to_string(), "write 1: managed_tensors[1] is NULL", "the first problem is reported");
    assert_eq!(CALLS.load(Ordering::SeqCst), 0);
    drop(first);
    drop(second);
    assert_eq!(CALLS.load(Ordering::SeqCst), 2, "each deleter ran once");
    let mut takeover = Takeover::new();
    let c = managed(vec![1.], &CALLS);
    // SAFETY: as above.
    let owners = unsafe { takeover.take(&[c, c], "w") };
    assert_eq!(
        takeover.finish().unwrap_err().to_string(),
        "w: managed_tensors[1] is a DLManagedTensorVersioned already given in this call"
    );
    drop(owners);
    assert_eq!(CALLS.load(Ordering::SeqCst), 3);
}

#[test]
fn managed_tensors_stay_alive_while_a_stage_tensor_reads_them() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let p = managed(vec![5., 6., 7.], &CALLS);
    // SAFETY: a valid managed tensor whose ownership passes here.
    let owner = Arc::new(unsafe { Managed::from_versioned(p.cast_mut()) }.unwrap());
    let data = owner.tensor().data.cast_const().cast::<u8>();
    // SAFETY: the descriptor is valid while `owner` lives.
    let t = unsafe { import::tensor(owner.tensor(), Some(&owner), &|| RowBound::Any, CudaSync::NONE, "t") }.unwrap();
    drop(owner);
    assert_eq!(CALLS.load(Ordering::SeqCst), 0, "the stage tensor holds the owner");
    assert_eq!(t.bytes().as_ptr(), data, "read in place");
    assert_eq!(t.bytes(), bytemuck_f32(&[5., 6., 7.]));
    drop(t);
    assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    // SAFETY: NULL is refused, not owned.
    assert!(unsafe { Managed::from_versioned(std::ptr::null_mut()) }.is_none());
}

static LEGACY: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn legacy_deleter(t: *mut DLManagedTensor) {
    LEGACY.fetch_add(1, Ordering::SeqCst);
    // SAFETY: the box made in the test.
    drop(unsafe { Box::from_raw(t) });
}

#[test]
fn legacy_managed_tensors_are_released_once() {
    let values = [1f32];
    let mut shape = [1i64];
    let t = Box::into_raw(Box::new(DLManagedTensor {
        dl_tensor: tensor(&values, &mut shape, None),
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(legacy_deleter),
    }));
    // SAFETY: a valid managed tensor whose ownership passes here.
    let owner = unsafe { Managed::from_legacy(t) }.unwrap();
    assert_eq!(owner.flags(), ovstage_dlpack::Flags::empty());
    assert_eq!(owner.tensor().ndim, 1);
    drop(owner);
    assert_eq!(LEGACY.load(Ordering::SeqCst), 1);
}

fn bytemuck_f32(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

#[test]
fn strided_tensors_are_gathered_within_their_bound() {
    // A column of a 3x2 matrix: rows 0, 2, 4.
    let values = [0f32, 1., 2., 3., 4., 5.];
    let (mut shape, mut strides) = ([3i64, 1], [2i64, 1]);
    let t = tensor(&values, &mut shape, Some(&mut strides));
    // SAFETY: every addressed element is in `values`.
    let out = unsafe { import::tensor(&t, None, &|| RowBound::Any, CudaSync::NONE, "t") }.unwrap();
    assert_eq!(out.bytes(), bytemuck_f32(&[0., 2., 4.]));
    assert_eq!((out.dtype(), out.shape()), (DType::F32, &[3u64, 1][..]));
    // SAFETY: as above.
    let used = unsafe { import::tensor(&t, None, &|| RowBound::Used(2), CudaSync::NONE, "t") }.unwrap();
    assert_eq!(used.bytes(), bytemuck_f32(&[0., 2.]), "rows past the index map's reach are not copied");
    // SAFETY: as above.
    let e = unsafe { import::tensor(&t, None, &|| RowBound::Prims(2), CudaSync::NONE, "t") }.unwrap_err();
    assert!(e.to_string().contains("has 3 rows but the write addresses at most 2 prims"), "{e}");
    // Negative strides: reversed.
    let (mut shape, mut strides) = ([3i64], [-1i64]);
    let t = DLTensor { byte_offset: 8, ..tensor(&values, &mut shape, Some(&mut strides)) };
    // SAFETY: elements 2, 1, 0 of `values`.
    let out = unsafe { import::tensor(&t, None, &|| RowBound::Any, CudaSync::NONE, "t") }.unwrap();
    assert_eq!(out.bytes(), bytemuck_f32(&[2., 1., 0.]));
}

#[test]
fn descriptors_are_checked_before_use() {
    let values = [0f32; 4];
    let check = |t: DLTensor| {
        // SAFETY: the descriptors' arrays are valid; none is read past
        // what its checks allow.
        unsafe { import::tensors(Inputs::Client(&[t]), &|| RowBound::Any, CudaSync::NONE, &"w") }.unwrap_err()
    };
    let mut shape = [4i64];
    // (With a driver, 0x10 is a device address it refuses to copy from.)
    let cuda = DLTensor {
        device: DLDevice { device_type: DLDeviceType(2), device_id: 0 },
        data: 0x10 as *mut std::ffi::c_void,
        ..tensor(&values, &mut shape, None)
    };
    let e = check(cuda);
    // The device check itself is tested in `device.rs`; here: it comes
    // first, with the tensor's index.
    let expected = match ovstage_backend_cuda::probe_device(0) {
        Err(no_device) => {
            (Status::InvalidArgument, format!("w: tensors[0]: the tensor is on CUDA device 0, but {no_device}"))
        }
        Ok(()) => (Status::InvalidArgument, "w: tensors[0]: copying 16 bytes from CUDA device 0 failed".into()),
    };
    assert_eq!(e.status(), expected.0);
    assert!(e.to_string().starts_with(&expected.1), "{e}");
    let mut shape = [4i64];
    let e = check(DLTensor { ndim: 17, ..tensor(&values, &mut shape, None) });
    assert!(e.to_string().contains("ndim 17 is not between 0 and 16"), "{e}");
    let e = check(DLTensor { shape: std::ptr::null_mut(), ..tensor(&values, &mut shape, None) });
    assert_eq!(e.to_string(), "w: tensors[0]: shape is NULL but its count is 1");
    let mut shape = [-1i64];
    assert!(check(tensor(&values, &mut shape, None)).to_string().contains("shape[0] is negative"));
    let mut shape = [i64::MAX, 2];
    assert!(check(tensor(&values, &mut shape, None)).to_string().contains("is too large"));
    let (mut shape, mut strides) = ([2i64, 3], [i64::MAX, 1]);
    assert!(check(tensor(&values, &mut shape, Some(&mut strides))).to_string().contains("beyond the address space"));
    let mut shape = [4i64];
    let e = check(DLTensor { data: std::ptr::null_mut(), ..tensor(&values, &mut shape, None) });
    assert!(e.to_string().contains("data is NULL but the tensor holds 16 bytes"), "{e}");
    let e = check(DLTensor { dtype: DLDataType { code: 2, bits: 3, lanes: 1 }, ..tensor(&values, &mut shape, None) });
    assert!(e.to_string().contains("no whole-byte element size"), "{e}");
    // A broadcast too large to gather is OUT_OF_MEMORY, not an abort.
    let byte = [0f32];
    let (mut shape, mut strides) = ([1i64 << 44], [0i64]);
    // SAFETY: every element is `byte[0]`.
    let e = unsafe {
        import::array_rows(
            Inputs::Client(&[tensor(&byte, &mut shape, Some(&mut strides))]),
            Vec::new(),
            CudaSync::NONE,
            &"w",
        )
    }
    .unwrap_err();
    assert_eq!(e.status(), Status::OutOfMemory);
}

#[test]
fn row_major_strides_are_recognised_with_any_stride_on_extents_of_one() {
    let rm = |dims: &[u64], strides: &[i64]| import::row_major(dims.iter().copied(), strides);
    assert!(rm(&[2, 3], &[3, 1]));
    assert!(rm(&[1, 3], &[99, 1]), "extent 1: any stride");
    assert!(rm(&[0, 3], &[-5, 1]), "extent 0: any stride");
    assert!(!rm(&[2, 3], &[1, 2]), "column-major");
    assert!(!rm(&[4], &[2]), "every other element");
    assert!(rm(&[], &[]));
}
