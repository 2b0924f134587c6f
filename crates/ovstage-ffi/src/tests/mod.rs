//! Tests of the exports, called the way C calls them: through the exported
//! functions and the instance's function tables, with C structs.
//!
//! Process-wide settings (`ovstage_initialize`, the log callback) are
//! shared by every test of the binary, so tests take [`PROCESS`]: shared
//! for ordinary tests, exclusive for those that need no other instance
//! alive.

use std::ffi::CStr;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::abi::CBool;
use crate::abi::api::ovstage_vtable_t;
use crate::abi::api_types::*;
use crate::abi::dlpack::{DLDataType, DLDevice, DLDeviceType, DLTensor};
use crate::abi::ovx_string::{ovx_string_or_token_t, ovx_string_t};
use crate::abi::path_dictionary::path_dictionary_instance_t;
use crate::abi::path_dictionary_vtable::path_dictionary_vtable_t;
use crate::exports::stage::{ovstage_create_instance, ovstage_destroy_instance};
use ovstage_types::sync::{read, write};

mod bounds;
mod data;
mod dictionary;
mod lifecycle;
mod placement;
mod process;
mod tensors;

static PROCESS: RwLock<()> = RwLock::new(());

/// Shared access to the process state.
fn shared() -> RwLockReadGuard<'static, ()> {
    read(&PROCESS)
}

/// Exclusive access: no other test holds an instance.
pub(crate) fn exclusive() -> RwLockWriteGuard<'static, ()> {
    write(&PROCESS)
}

pub(crate) const OK: u32 = 0;
pub(crate) const INVALID_ARGUMENT: u32 = 1;
pub(crate) const INVALID_HANDLE: u32 = 2;
pub(crate) const NOT_FOUND: u32 = 3;
pub(crate) const PRIM_NOT_FOUND: u32 = 4;
pub(crate) const WRITE_FLOOR_VIOLATION: u32 = 5;
pub(crate) const NOT_SUPPORTED: u32 = 6;
pub(crate) const END_OF_ITERATION: u32 = 8;
pub(crate) const TIMEOUT: u32 = 11;
pub(crate) const OP_FAILED: u32 = 12;
pub(crate) const INFINITE: u64 = u64::MAX;

/// A string view of a Rust string (valid while `s` is).
pub(crate) fn s(text: &str) -> ovx_string_t {
    ovx_string_t { ptr: text.as_ptr().cast(), length: text.len() }
}

/// An attribute by name.
pub(crate) fn attr(name: &str) -> ovx_string_or_token_t {
    ovx_string_or_token_t { token: 0, string: s(name) }
}

/// The text of a library-produced view, checking its NUL terminator.
pub(crate) fn text(v: ovx_string_t) -> Option<String> {
    if v.ptr.is_null() {
        assert_eq!(v.length, 0, "a NULL view has length 0");
        return None;
    }
    // SAFETY: library-produced non-empty views are NUL-terminated.
    let c = unsafe { CStr::from_ptr(v.ptr) };
    assert_eq!(c.to_bytes().len(), v.length, "the terminator sits right after `length` bytes");
    Some(c.to_str().expect("UTF-8").to_owned())
}

/// The thread's last error message.
pub(crate) fn last_error() -> String {
    text(crate::exports::api::ovstage_get_last_error()).unwrap_or_default()
}

/// An instance, destroyed on drop.
pub(crate) struct Inst {
    pub(crate) ptr: *mut ovstage_instance_t,
}

impl Inst {
    pub(crate) fn new() -> Inst {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: NULL desc is allowed; `ptr` is writable.
        let status = unsafe { ovstage_create_instance(std::ptr::null(), &mut ptr) };
        assert_eq!(status.0, OK, "{}", last_error());
        Inst { ptr }
    }

    pub(crate) fn ctx(&self) -> *mut ovstage_context_t {
        // SAFETY: live instance.
        unsafe { (*self.ptr).context }
    }

    pub(crate) fn vt(&self) -> &'static ovstage_vtable_t {
        // SAFETY: live instance; its vtable is a static.
        unsafe { &*(*self.ptr).vtable }
    }

    pub(crate) fn dict(&self) -> (&'static path_dictionary_vtable_t, *mut path_dictionary_instance_t) {
        // SAFETY: live instance.
        let d = unsafe { (self.vt().get_path_dictionary.unwrap())(self.ctx()) };
        assert!(!d.is_null());
        // SAFETY: the dictionary bundle lives as long as the instance; its
        // vtable is a static.
        (unsafe { &*(*d).vtable }, d)
    }

    /// A query over `paths`.
    pub(crate) fn query(&self, paths: &[&str]) -> u64 {
        let (dvt, d) = self.dict();
        let views: Vec<ovx_string_t> = paths.iter().map(|p| s(p)).collect();
        let mut list = 0;
        // SAFETY: valid arrays and output.
        let r = unsafe {
            (dvt.create_path_list_from_strings.unwrap())((*d).context, views.as_ptr(), views.len(), &mut list)
        };
        assert_eq!(r.status.0, 0);
        let mut q = 0;
        // SAFETY: live instance, valid output.
        let st = unsafe { (self.vt().query_from_path_list.unwrap())(self.ctx(), list, &mut q) };
        assert_eq!(st.0, OK, "{}", last_error());
        q
    }

    /// Waits for `op`; returns the status.
    pub(crate) fn wait(&self, op: u64) -> u32 {
        let mut r =
            ovstage_op_wait_result_t { error_op_ids: std::ptr::null(), error_op_id_count: 0, lowest_pending_op_id: 0 };
        // SAFETY: live instance, valid output.
        unsafe { (self.vt().wait_op.unwrap())(self.ctx(), op, INFINITE, &mut r) }.0
    }

    /// Waits for an accepted enqueue and expects success.
    pub(crate) fn done(&self, r: ovstage_enqueue_result_t) {
        assert_eq!(r.status.0, OK, "enqueue: {}", last_error());
        assert_ne!(r.op_index, 0);
        assert_eq!(self.wait(r.op_index), OK, "wait: {}", last_error());
    }

    /// Writes f32 rows of `lanes` lanes (client-managed tensor) at
    /// `ordinal`.
    pub(crate) fn write_f32(
        &self,
        q: u64,
        name: &str,
        ordinal: u64,
        values: &[f32],
        lanes: u16,
    ) -> ovstage_enqueue_result_t {
        let mut shape = [(values.len() / lanes as usize) as i64];
        let t = f32_tensor(values, &mut shape, lanes);
        // SAFETY: live instance; the tensor outlives the op (waited by callers).
        unsafe {
            (self.vt().write_attribute.unwrap())(
                self.ctx(),
                q,
                attr(name),
                ordinal,
                write_data(&t),
                ovstage_prim_mode_t(0),
            )
        }
    }

    /// Advances the global write floor and waits.
    pub(crate) fn seal(&self, ordinal: u64) {
        let desc = ovstage_write_floor_desc_t {
            ordinal,
            scope: ovstage_scope_t(0),
            attributes: std::ptr::null(),
            attribute_count: 0,
        };
        // SAFETY: live instance, valid desc.
        self.done(unsafe { (self.vt().advance_write_floor.unwrap())(self.ctx(), &desc) });
    }

    /// Reads `names` at the latest sealed values; returns every group's
    /// (attribute name, row values) and releases everything.
    pub(crate) fn read_f32(
        &self,
        q: u64,
        names: &[&str],
        range: ovstage_ordinal_range_t,
    ) -> Result<Vec<ReadOut>, (u32, String)> {
        let tokens = self.tokens(names);
        let mut read = 0;
        // SAFETY: live instance, valid arrays and output.
        let r = unsafe {
            (self.vt().read_attributes.unwrap())(self.ctx(), q, tokens.as_ptr(), tokens.len(), range, &mut read)
        };
        if r.status.0 != OK {
            return Err((r.status.0, last_error()));
        }
        self.fetch_all(read)
    }

    /// Fetches every group of `read` as [`ReadOut`]s, releasing each, then
    /// releases the read.
    pub(crate) fn fetch_all(&self, read: u64) -> Result<Vec<ReadOut>, (u32, String)> {
        let mut out = Vec::new();
        loop {
            // SAFETY: a zeroed group is a valid output buffer.
            let mut g: ovstage_read_group_t = unsafe { std::mem::zeroed() };
            // SAFETY: live instance, valid output.
            let st = unsafe { (self.vt().fetch_read_next.unwrap())(self.ctx(), read, INFINITE, &mut g) }.0;
            if st == END_OF_ITERATION {
                break;
            }
            if st != OK {
                return Err((st, last_error()));
            }
            out.push(ReadOut::of(&g));
            // SAFETY: live instance; the group came from this read.
            assert_eq!(unsafe { (self.vt().release_group.unwrap())(self.ctx(), &g) }.0, OK);
        }
        // SAFETY: live instance.
        self.done(unsafe { (self.vt().release_read.unwrap())(self.ctx(), read) });
        Ok(out)
    }

    /// Interns tokens.
    pub(crate) fn tokens(&self, names: &[&str]) -> Vec<u64> {
        let (dvt, d) = self.dict();
        let views: Vec<ovx_string_t> = names.iter().map(|n| s(n)).collect();
        let mut out = vec![0u64; names.len()];
        // SAFETY: valid arrays.
        let r = unsafe {
            (dvt.create_tokens_from_strings.unwrap())((*d).context, views.as_ptr(), views.len(), out.as_mut_ptr())
        };
        assert_eq!(r.status.0, 0);
        out
    }
}

impl Drop for Inst {
    fn drop(&mut self) {
        // SAFETY: created by `new`, destroyed once.
        let st = unsafe { ovstage_destroy_instance(self.ptr) };
        assert_eq!(st.0, OK);
    }
}

/// What a read group held, copied out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReadOut {
    pub(crate) is_delete: bool,
    pub(crate) is_array: bool,
    pub(crate) ordinal: u64,
    /// Rows of f32 values per logical element (prims in group order).
    pub(crate) rows: Vec<Vec<f32>>,
    pub(crate) shapes: Vec<Vec<i64>>,
    pub(crate) prim_positions: Vec<u32>,
}

impl ReadOut {
    fn of(g: &ovstage_read_group_t) -> ReadOut {
        let count = g.prims.count as usize;
        let prim_positions: Vec<u32> = (0..count)
            .map(|i| {
                if g.prims.index_map.is_null() {
                    g.prims.offset + i as u32
                } else {
                    // SAFETY: `count` entries.
                    unsafe { *g.prims.index_map.add(i) }
                }
            })
            .collect();
        let mut rows = Vec::new();
        let mut shapes = Vec::new();
        // SAFETY: `tensor_count` tensors, each with `ndim` shape and strides.
        unsafe {
            for i in 0..g.data.tensor_count as usize {
                let t = &*g.data.tensors.add(i);
                let shape: Vec<i64> = (0..t.ndim as usize).map(|k| *t.shape.add(k)).collect();
                let strides: Vec<i64> = (0..t.ndim as usize).map(|k| *t.strides.add(k)).collect();
                let mut expect = 1;
                for k in (0..shape.len()).rev() {
                    assert_eq!(strides[k], expect, "compact strides");
                    expect *= shape[k];
                }
                assert_eq!((t.dtype.code, t.dtype.bits, t.dtype.lanes), (2, 32, 1), "f32 with scalar lanes");
                assert_eq!(t.device.device_type.0, 1, "host memory");
                let n: i64 = shape.iter().product();
                let values =
                    if n == 0 { &[][..] } else { std::slice::from_raw_parts(t.data.cast::<f32>(), n as usize) };
                shapes.push(shape.clone());
                if g.is_array.get() {
                    rows.push(values.to_vec());
                } else {
                    let width = if shape.len() > 1 { shape[1..].iter().product::<i64>() as usize } else { 1 };
                    let data_rows: Vec<Vec<f32>> = values.chunks(width.max(1)).map(<[f32]>::to_vec).collect();
                    for e in 0..count {
                        let row = if g.data.index_map.is_null() { e } else { *g.data.index_map.add(e) as usize };
                        rows.push(data_rows[row].clone());
                    }
                }
            }
        }
        ReadOut {
            is_delete: g.is_delete.get(),
            is_array: g.is_array.get(),
            ordinal: g.ordinal,
            rows,
            shapes,
            prim_positions,
        }
    }
}

/// The latest sealed values.
pub(crate) const LATEST: ovstage_ordinal_range_t =
    ovstage_ordinal_range_t { start_ordinal: 0, end_ordinal: u64::MAX, has_start_ordinal: CBool::FALSE };

/// Changes in `[a, b]`.
pub(crate) fn changes(a: u64, b: u64) -> ovstage_ordinal_range_t {
    ovstage_ordinal_range_t { start_ordinal: a, end_ordinal: b, has_start_ordinal: CBool::TRUE }
}

/// A host f32 tensor over `values` with `shape` (kept by the caller).
/// CUDA device 0 for a test that needs a GPU, or `None` after printing
/// `SKIP test: why` (the GPU check's bundle runs these where there is one).
#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
pub(crate) fn gpu_or_skip(test: &str) -> Option<ovstage_backend_cuda::gpu::Gpu> {
    ovstage_backend_cuda::gpu::Gpu::new(0).map_err(|e| println!("SKIP {test}: {e}")).ok()
}

pub(crate) fn f32_tensor(values: &[f32], shape: &mut [i64], lanes: u16) -> DLTensor {
    DLTensor {
        data: values.as_ptr().cast_mut().cast(),
        device: DLDevice { device_type: DLDeviceType(1), device_id: 0 },
        ndim: shape.len() as i32,
        dtype: DLDataType { code: 2, bits: 32, lanes },
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    }
}

/// A fixed-size write payload of one client tensor.
pub(crate) fn write_data(t: &DLTensor) -> ovstage_write_data_t {
    ovstage_write_data_t {
        tensors: t,
        managed_tensors: std::ptr::null(),
        tensor_count: 1,
        count: 0,
        index_map: std::ptr::null(),
        mask: std::ptr::null(),
        cuda_sync: ovstage_cuda_sync_t::default(),
        semantic: ovstage_attribute_semantic_t(0),
        is_array: CBool::FALSE,
        attribute_mode: ovstage_attribute_mode_t(0),
    }
}
