//! Shared pieces of the fuzz targets: a reader of the fuzz input, an
//! instance driven through the C ABI the way C drives it (exported
//! functions and the instance's function tables, C structs, raw pointers),
//! and the checks every target applies to what the library hands back.
//!
//! The targets never trust the library: every tensor the library returns is
//! read (and map buffers written) over its whole extent, so AddressSanitizer
//! reports a buffer smaller than its descriptor says, or one already freed.

use std::ffi::CStr;

use ffi::exports::api::ovstage_get_last_error;
use ffi::exports::stage::{ovstage_create_instance, ovstage_destroy_instance};
use ovstage_abi::api::ovstage_vtable_t;
use ovstage_abi::api_types::*;
use ovstage_abi::dlpack::DLTensor;
use ovstage_abi::ovx_string::{ovx_string_or_token_t, ovx_string_t};
use ovstage_abi::path_dictionary::path_dictionary_instance_t;
use ovstage_abi::path_dictionary_vtable::path_dictionary_vtable_t;
use ovstage_types::{DType, DTypeCode};

/// Statuses of the contract the checks name.
pub mod status {
    /// Success.
    pub const OK: u32 = 0;
    /// A handle that is not (or no longer) valid.
    pub const INVALID_HANDLE: u32 = 2;
    /// A mutation or read at or below an unsealed write.
    pub const WRITE_FLOOR_VIOLATION: u32 = 5;
    /// After the last group.
    pub const END_OF_ITERATION: u32 = 8;
    /// A wait that ran out of time.
    pub const TIMEOUT: u32 = 11;
    /// An op, or one it depends on, failed.
    pub const OP_FAILED: u32 = 12;
    /// A caught panic or broken invariant inside the library.
    pub const INTERNAL: u32 = 99;
}

/// `OVSTAGE_TIMEOUT_INFINITE`.
pub const INFINITE: u64 = u64::MAX;

/// Reads the fuzz input front to back; past its end every read is 0, so
/// every input is a complete program.
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    /// A reader over `data`.
    pub fn new(data: &'a [u8]) -> Bytes<'a> {
        Bytes { data }
    }

    /// Whether everything was read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// What is left, without consuming it.
    pub fn rest(&self) -> &'a [u8] {
        self.data
    }

    /// The next byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }

    /// The next `N` bytes, zero-padded past the end.
    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        out
    }

    /// A little-endian u16.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }

    /// A little-endian u32.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    /// A little-endian u64.
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    /// A count in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.u8() as usize % n
    }

    /// A compactly encoded signed 64-bit value, one byte for the common
    /// cases: `0x00..=0x7f` is itself, `0x80..=0xbf` is -1 down to -64,
    /// `0xc0..=0xef` is `1 << (b - 0xc0)` (up to 2^47), and `0xf0..` is
    /// followed by a raw little-endian i64.
    pub fn compact_i64(&mut self) -> i64 {
        match self.u8() {
            b @ 0x00..=0x7f => b as i64,
            b @ 0x80..=0xbf => -((b - 0x80) as i64) - 1,
            b @ 0xc0..=0xef => 1i64 << (b - 0xc0),
            _ => self.u64() as i64,
        }
    }
}

/// A string view of a Rust string (valid while `text` is).
pub fn view(text: &str) -> ovx_string_t {
    ovx_string_t { ptr: text.as_ptr().cast(), length: text.len() }
}

/// An attribute named by string.
pub fn attr(name: &str) -> ovx_string_or_token_t {
    ovx_string_or_token_t { token: 0, string: view(name) }
}

/// The thread's last error message (empty when there is none).
pub fn last_error() -> String {
    let v = ovstage_get_last_error();
    if v.ptr.is_null() {
        return String::new();
    }
    // SAFETY: the library's views are NUL-terminated and valid until the
    // thread's next call into the library.
    let c = unsafe { CStr::from_ptr(v.ptr) };
    assert_eq!(c.to_bytes().len(), v.length, "the last error's terminator sits right after `length` bytes");
    c.to_string_lossy().into_owned()
}

/// An empty wait result, the output buffer of `wait_op`.
pub fn wait_result() -> ovstage_op_wait_result_t {
    ovstage_op_wait_result_t { error_op_ids: std::ptr::null(), error_op_id_count: 0, lowest_pending_op_id: 0 }
}

/// An instance, created with the default settings and destroyed on drop.
pub struct Instance {
    ptr: *mut ovstage_instance_t,
}

impl Default for Instance {
    fn default() -> Self {
        Self::new()
    }
}

impl Instance {
    /// Creates an instance (panics if the library refuses).
    pub fn new() -> Instance {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: a NULL descriptor is allowed; `ptr` is writable.
        let st = unsafe { ovstage_create_instance(std::ptr::null(), &mut ptr) };
        assert_eq!(st.0, status::OK, "ovstage_create_instance: {}", last_error());
        Instance { ptr }
    }

    /// The context every slot takes.
    pub fn ctx(&self) -> *mut ovstage_context_t {
        // SAFETY: a live instance.
        unsafe { (*self.ptr).context }
    }

    /// The data-plane function table.
    pub fn vt(&self) -> &'static ovstage_vtable_t {
        // SAFETY: a live instance; its table is a static of the library.
        unsafe { &*(*self.ptr).vtable }
    }

    /// The path dictionary's table and context.
    pub fn dict(&self) -> (&'static path_dictionary_vtable_t, *mut path_dictionary_instance_t) {
        // SAFETY: a live instance.
        let d = unsafe { (self.vt().get_path_dictionary.expect("slot"))(self.ctx()) };
        assert!(!d.is_null(), "get_path_dictionary returned NULL");
        // SAFETY: the dictionary bundle lives as long as the instance; its
        // table is a static.
        (unsafe { &*(*d).vtable }, d)
    }

    /// A path list of `paths` (0 if the dictionary refused it).
    pub fn path_list(&self, paths: &[&str]) -> u64 {
        let (dvt, d) = self.dict();
        let views: Vec<ovx_string_t> = paths.iter().map(|p| view(p)).collect();
        let mut list = 0;
        // SAFETY: valid arrays and output; the dictionary's context.
        let r = unsafe {
            (dvt.create_path_list_from_strings.expect("slot"))((*d).context, views.as_ptr(), views.len(), &mut list)
        };
        if r.status.0 != 0 { 0 } else { list }
    }

    /// Drops the caller's reference to a path list.
    pub fn release_path_list(&self, list: u64) {
        let (dvt, d) = self.dict();
        // SAFETY: the dictionary's context; any list id is checked.
        unsafe { (dvt.release_path_list_reference.expect("slot"))((*d).context, list) };
    }

    /// A query of exactly `paths` (0 when refused).
    pub fn query(&self, paths: &[&str]) -> u64 {
        let list = self.path_list(paths);
        let mut q = 0;
        // SAFETY: a live instance, a writable output.
        let st = unsafe { (self.vt().query_from_path_list.expect("slot"))(self.ctx(), list, &mut q) };
        self.release_path_list(list);
        if st.0 == status::OK { q } else { 0 }
    }

    /// Tokens of `names` (0 for a refused one).
    pub fn tokens(&self, names: &[&str]) -> Vec<u64> {
        let (dvt, d) = self.dict();
        let views: Vec<ovx_string_t> = names.iter().map(|n| view(n)).collect();
        let mut out = vec![0u64; names.len()];
        // SAFETY: valid arrays of `names.len()` entries.
        unsafe {
            (dvt.create_tokens_from_strings.expect("slot"))((*d).context, views.as_ptr(), views.len(), out.as_mut_ptr())
        };
        out
    }

    /// Waits for `op` with `timeout`; returns the status.
    pub fn wait(&self, op: u64, timeout: u64) -> u32 {
        let mut r = wait_result();
        // SAFETY: a live instance, a writable output.
        let st = unsafe { (self.vt().wait_op.expect("slot"))(self.ctx(), op, timeout, &mut r) }.0;
        if st == status::OP_FAILED {
            assert!(r.error_op_id_count > 0, "wait_op: OP_FAILED names no failed op");
            // SAFETY: `error_op_id_count` ids, valid until the next wait.
            let ids = unsafe { std::slice::from_raw_parts(r.error_op_ids, r.error_op_id_count) };
            assert!(ids.iter().all(|id| *id != 0), "wait_op: a failed op id is 0");
        }
        st
    }

    /// Makes the thread's last error a known message (that of
    /// `query_extension` with NULL arguments, a call the targets make for
    /// nothing else), so that a failure that leaves none is seen: after
    /// `mark`, a failed call must leave a message of its own.
    pub fn mark(&self) {
        // SAFETY: a live instance; NULL arguments are refused.
        let st =
            unsafe { (self.vt().query_extension.expect("slot"))(self.ctx(), std::ptr::null(), std::ptr::null_mut()) }.0;
        assert_ne!(st, status::OK, "query_extension(NULL) must be refused");
        let msg = last_error();
        assert!(msg.starts_with("query_extension"), "unexpected message for query_extension(NULL): {msg}");
    }

    /// Checks that a failed synchronous call (status other than OK,
    /// END_OF_ITERATION and TIMEOUT) made after [`Instance::mark`] left a
    /// message of its own. `call` names it in the panic message.
    pub fn check_message(&self, st: u32, call: &str) {
        if matches!(st, status::OK | status::END_OF_ITERATION | status::TIMEOUT) {
            return;
        }
        let msg = last_error();
        // A caught panic is a bug whatever the input.
        assert_ne!(st, status::INTERNAL, "{call} failed with INTERNAL: {msg}");
        assert!(!msg.is_empty(), "{call} failed with status {st} and left no last-error message");
        assert!(!msg.starts_with("query_extension"), "{call} failed with status {st} but left no message of its own");
    }

    /// Checks an enqueue result: a rejected enqueue has op id 0 and a
    /// message of its own, an accepted one a non-zero op id.
    pub fn check_enqueue(&self, r: ovstage_enqueue_result_t, call: &str) -> Option<u64> {
        if r.status.0 == status::OK {
            assert_ne!(r.op_index, 0, "{call}: accepted with op id 0");
            Some(r.op_index)
        } else {
            assert_eq!(r.op_index, 0, "{call}: rejected (status {}) but returned op id {}", r.status.0, r.op_index);
            self.check_message(r.status.0, call);
            None
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: created by `new`, destroyed once.
        let st = unsafe { ovstage_destroy_instance(self.ptr) };
        assert_eq!(st.0, status::OK, "ovstage_destroy_instance: {}", last_error());
    }
}

/// The byte range `[lo, hi)` relative to the first element that the
/// elements of a tensor with this shape, these strides (in elements; None:
/// compact) and element size address; `None` when it addresses nothing.
/// Computed in i128, so no shape or stride overflows it.
pub fn extent(shape: &[i64], strides: Option<&[i64]>, element: usize) -> Option<(i128, i128)> {
    if shape.iter().any(|d| *d <= 0) {
        return None;
    }
    let (mut lo, mut hi) = (0i128, 0i128);
    match strides {
        None => {
            let count: i128 = shape.iter().map(|d| *d as i128).product();
            hi = (count - 1) * element as i128;
        }
        Some(strides) => {
            for (d, s) in shape.iter().zip(strides) {
                let reach = (*d as i128 - 1) * *s as i128 * element as i128;
                if reach < 0 { lo += reach } else { hi += reach }
            }
        }
    }
    Some((lo, hi + element as i128))
}

/// The element size of a DLPack dtype, as the library computes it.
pub fn element_bytes(code: u8, bits: u8, lanes: u16) -> Option<usize> {
    DType::new(DTypeCode::from_raw(code)?, bits, lanes).element_bytes()
}

/// The shape and strides of a library-produced tensor, checked for sanity.
///
/// # Safety
/// `t` was handed out by the library and is still held.
unsafe fn dims(t: &DLTensor) -> (Vec<i64>, Option<Vec<i64>>) {
    assert!((0..=16).contains(&t.ndim), "library tensor with ndim {}", t.ndim);
    let n = t.ndim as usize;
    if n == 0 {
        return (Vec::new(), None);
    }
    assert!(!t.shape.is_null(), "library tensor with ndim {n} and a NULL shape");
    // SAFETY: `ndim` entries per the contract.
    let shape = unsafe { std::slice::from_raw_parts(t.shape, n) }.to_vec();
    assert!(shape.iter().all(|d| *d >= 0), "library tensor with a negative dimension: {shape:?}");
    let strides = if t.strides.is_null() {
        None
    } else {
        // SAFETY: `ndim` entries per the contract.
        Some(unsafe { std::slice::from_raw_parts(t.strides, n) }.to_vec())
    };
    (shape, strides)
}

/// The bytes a library-produced tensor addresses, as a range from its data
/// pointer plus byte offset.
///
/// # Safety
/// As for [`dims`].
unsafe fn tensor_bytes(t: &DLTensor) -> Option<(*mut u8, usize, usize)> {
    // SAFETY: forwarded.
    let (shape, strides) = unsafe { dims(t) };
    let element = element_bytes(t.dtype.code, t.dtype.bits, t.dtype.lanes)
        .unwrap_or_else(|| panic!("library tensor with dtype {:?}", (t.dtype.code, t.dtype.bits, t.dtype.lanes)));
    let (lo, hi) = extent(&shape, strides.as_deref(), element)?;
    assert!(lo == 0, "library tensor addressing bytes before its first element");
    assert!(hi <= 1 << 40, "library tensor addressing {hi} bytes");
    assert!(!t.data.is_null(), "library tensor of {hi} bytes with NULL data");
    Some((t.data.cast::<u8>().wrapping_add(t.byte_offset as usize), hi as usize, element))
}

/// Reads every byte of the `count` tensors at `tensors`, so that ASan sees
/// any byte the descriptors promise but the library does not own.
///
/// # Safety
/// The tensors were handed out by the library and are still held.
pub unsafe fn touch(tensors: *const DLTensor, count: u32) -> u64 {
    if count == 0 {
        return 0;
    }
    assert!(!tensors.is_null(), "{count} library tensors at NULL");
    let mut sum = 0u64;
    for i in 0..count as usize {
        // SAFETY: `count` descriptors per the contract.
        let t = unsafe { &*tensors.add(i) };
        // SAFETY: forwarded.
        if let Some((p, n, _)) = unsafe { tensor_bytes(t) } {
            // SAFETY: the library promises `n` readable bytes; reading them
            // is the check.
            let bytes = unsafe { std::slice::from_raw_parts(p, n) };
            sum = bytes.iter().fold(sum, |s, b| s.wrapping_add(*b as u64));
        }
    }
    std::hint::black_box(sum)
}

/// Tensors up to this size are written whole by [`fill`]; a larger one
/// (a client may map gigabytes, which the library must allow) is written
/// at both ends only, so its pages are not all committed: the whole write
/// of a 1.9 GB session took the run past libFuzzer's 2 GiB RSS limit.
const FILL_WHOLE_BYTES: usize = 64 << 20;

/// Bytes written at each end of a tensor larger than [`FILL_WHOLE_BYTES`].
const FILL_END_BYTES: usize = 64 << 10;

/// Writes `fill` into the `count` map tensors at `tensors`: every byte, or
/// both ends of a tensor over [`FILL_WHOLE_BYTES`] (its last byte is what
/// shows an extent larger than the allocation, to ASan).
///
/// # Safety
/// The tensors were handed out by the library as writable (a fetched map
/// group) and are still held.
pub unsafe fn fill(tensors: *const DLTensor, count: u32, fill: u8) {
    if count == 0 {
        return;
    }
    assert!(!tensors.is_null(), "{count} library tensors at NULL");
    for i in 0..count as usize {
        // SAFETY: `count` descriptors per the contract.
        let t = unsafe { &*tensors.add(i) };
        // SAFETY: forwarded.
        if let Some((p, n, _)) = unsafe { tensor_bytes(t) } {
            // SAFETY: the library promises `n` writable bytes; writing
            // them is the check (both ends: within `n`).
            unsafe {
                if n <= FILL_WHOLE_BYTES {
                    std::ptr::write_bytes(p, fill, n);
                } else {
                    std::ptr::write_bytes(p, fill, FILL_END_BYTES);
                    std::ptr::write_bytes(p.add(n - FILL_END_BYTES), fill, FILL_END_BYTES);
                }
            }
        }
    }
}
