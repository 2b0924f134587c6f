//! Test support shared by the bindings' tests (feature `testing`): managed
//! tensors whose deleters count their calls, so a test can check that each
//! runs exactly once.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::dlpack::{DLDataType, DLDevice, DLDeviceType, DLManagedTensorVersioned, DLPackVersion, DLTensor};

/// The memory of a counted tensor, freed by its deleter.
struct Owned {
    values: Vec<f32>,
    shape: [i64; 1],
    calls: &'static AtomicUsize,
}

unsafe extern "C" fn deleter(t: *mut DLManagedTensorVersioned) {
    // SAFETY: `manager_ctx` is the `Owned` boxed by `counted_f32`; the
    // deleter runs once per tensor (what the tests using it check).
    let owned = unsafe { Box::from_raw((*t).manager_ctx.cast::<Owned>()) };
    owned.calls.fetch_add(1, Ordering::SeqCst);
    // SAFETY: the tensor box made by `counted_f32`.
    drop(unsafe { Box::from_raw(t) });
}

/// A heap-allocated, compact 1-D float32 host tensor holding `values`, with
/// DLPack `flags`, whose deleter frees it and adds 1 to `calls`. The caller
/// hands it to code that takes it over (or runs the deleter itself).
pub fn counted_f32(values: Vec<f32>, flags: u64, calls: &'static AtomicUsize) -> *const DLManagedTensorVersioned {
    let mut owned = Box::new(Owned { shape: [values.len() as i64], values, calls });
    let dl_tensor = DLTensor {
        data: owned.values.as_mut_ptr().cast(),
        device: DLDevice { device_type: DLDeviceType(1), device_id: 0 },
        ndim: 1,
        dtype: DLDataType { code: 2, bits: 32, lanes: 1 },
        shape: owned.shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    Box::into_raw(Box::new(DLManagedTensorVersioned {
        version: DLPackVersion { major: 1, minor: 1 },
        manager_ctx: Box::into_raw(owned).cast(),
        deleter: Some(deleter),
        flags,
        dl_tensor,
    }))
}
