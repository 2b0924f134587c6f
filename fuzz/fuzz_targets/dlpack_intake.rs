//! Fuzz target: the DLPack intake of writes and the element sizes of map
//! sessions.
//!
//! The input describes one call on a fresh instance: `write_attribute`,
//! `write_attributes` (client or managed tensors) or `map_attribute` with
//! `element_sizes`, over a query of up to 7 prims. Tensors get every field
//! from the input (dtype code, bits and lanes, ndim, shape, strides
//! including 0 and negative ones, byte offset, device, NULL data) over a
//! real 64 KiB buffer; an input whose tensor would address bytes outside
//! that buffer, given what the library reads for such a descriptor, is
//! skipped, so every pointer the target hands over is valid; so is a map
//! whose element sizes ask for more than 1 GiB that the library would
//! allocate (see `asks_too_much`). Any status is
//! fine; a crash, an abort, an allocation over the fuzzer's limit, a leak,
//! a hang, a failure without a message, or a managed tensor not released
//! exactly once is a finding. Accepted writes are waited for, sealed and
//! read back, and every returned tensor is read over its whole extent.
//!
//! Input layout (little-endian; see `Bytes::compact_i64` for dimensions):
//! `[mode] [prims] [ordinal]` then the call: for writes, per payload
//! `[flags] [tensor_count] [count] [selection...] [tensors...]`, each
//! tensor `[device] [code] [bits] [lanes:u16] [ndim:i8] [shape...]
//! [strides flag] [strides...] [offset flag] [offset...]`; for maps
//! `[attribute] [code] [bits] [lanes:u16] [semantic] [modes] [sizes flag]
//! [sizes...]`.

#![no_main]

use std::sync::atomic::{AtomicUsize, Ordering};

use libfuzzer_sys::fuzz_target;
use ovstage_abi::CBool;
use ovstage_abi::api_types::*;
use ovstage_abi::dlpack::{DLDataType, DLDevice, DLDeviceType, DLManagedTensorVersioned, DLPackVersion, DLTensor};
use ovstage_fuzz::{Bytes, INFINITE, Instance, attr, element_bytes, extent, status};

/// Size of the memory tensors point into.
const BUFFER: usize = 64 * 1024;
const NAMES: [&str; 4] = ["a", "b", "usd-prim-type", "c"];
const PATHS: [&str; 7] = ["/P0", "/P1", "/P2", "/P0/C", "/P1/C", "/Q", "/Q/R/S"];

/// Managed tensors whose deleter ran in this run.
static DELETED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn deleter(t: *mut DLManagedTensorVersioned) {
    DELETED.fetch_add(1, Ordering::SeqCst);
    // SAFETY: made by `Box::into_raw` in `Program::managed`; a second call
    // would be a double free, which ASan reports.
    drop(unsafe { Box::from_raw(t) });
}

/// Everything the call's pointers point into, alive until the instance is
/// gone.
struct Program {
    buffer: Vec<u8>,
    /// Shapes and strides of every tensor (boxed: they do not move).
    arrays: Vec<Box<[i64]>>,
    tensors: Vec<Vec<DLTensor>>,
    managed: Vec<Vec<*const DLManagedTensorVersioned>>,
    selections: Vec<(Vec<u32>, Vec<u64>)>,
    /// Distinct managed tensors handed over.
    managed_count: usize,
}

impl Program {
    /// One tensor from the input, or `None` when the library could read
    /// outside the buffer through it.
    fn tensor(&mut self, r: &mut Bytes<'_>) -> Option<DLTensor> {
        let device = r.u8();
        let device = if device & 0x80 == 0 { 1 } else { (device & 0x7f) as i32 };
        let (code, bits, lanes) = (r.u8(), r.u8(), r.u16());
        let ndim = r.u8() as i8 as i32;
        let len = ndim.max(0) as usize;
        let mut shape: Box<[i64]> = vec![1i64; len].into_boxed_slice();
        for d in shape.iter_mut().take(17) {
            *d = r.compact_i64();
        }
        let strides_flag = r.u8();
        let null_data = strides_flag & 0x80 != 0;
        let mut strides: Option<Box<[i64]>> = None;
        if strides_flag & 1 != 0 {
            let mut s = vec![0i64; len].into_boxed_slice();
            for v in s.iter_mut().take(17) {
                *v = r.compact_i64();
            }
            strides = Some(s);
        }
        let offset_flag = r.u8();
        let raw_offset = if offset_flag == 0xff { r.u64() } else { r.u16() as u64 };

        // What the library reads through this descriptor (see
        // `tensors::check`): nothing unless the dtype, ndim and shape are
        // valid and the payload is not empty; then the compact bytes, or
        // every element the strides address.
        let mut byte_offset = raw_offset;
        let read = (|| {
            let element = element_bytes(code, bits, lanes)?;
            if !(0..=16).contains(&ndim) || shape.iter().any(|d| *d < 0) {
                return None;
            }
            let bytes = shape
                .iter()
                .try_fold(1u64, |acc, d| acc.checked_mul(*d as u64))
                .and_then(|c| c.checked_mul(element as u64))
                .and_then(|b| usize::try_from(b).ok())?;
            if bytes == 0 || null_data {
                return None;
            }
            let compact = match &strides {
                None => true,
                Some(s) => {
                    let mut expect = 1i64;
                    let mut compact = true;
                    for i in (0..len).rev() {
                        if shape[i] > 1 && s[i] != expect {
                            compact = false;
                        }
                        expect = expect.saturating_mul(shape[i]);
                    }
                    compact
                }
            };
            Some(if compact { (0i128, bytes as i128) } else { extent(&shape, strides.as_deref(), element)? })
        })();
        if let Some((lo, hi)) = read {
            let span = hi - lo;
            if span > BUFFER as i128 {
                return None;
            }
            if offset_flag & 1 == 0 {
                // Place the addressed bytes inside the buffer.
                let slack = (BUFFER as i128 - span) as u64 + 1;
                byte_offset = (-lo) as u64 + raw_offset % slack;
            }
            let start = byte_offset as i128 + lo;
            if start < 0 || byte_offset as i128 + hi > BUFFER as i128 {
                return None;
            }
        }
        let data = if null_data { std::ptr::null_mut() } else { self.buffer.as_mut_ptr().cast() };
        let t = DLTensor {
            data,
            device: DLDevice { device_type: DLDeviceType(device), device_id: 0 },
            ndim,
            dtype: DLDataType { code, bits, lanes },
            shape: if strides_flag & 0x40 != 0 { std::ptr::null_mut() } else { shape.as_mut_ptr() },
            strides: strides.as_mut().map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
            byte_offset,
        };
        self.arrays.push(shape);
        if let Some(s) = strides {
            self.arrays.push(s);
        }
        Some(t)
    }

    /// A managed tensor owning nothing but itself (the deleter frees it).
    fn managed(&mut self, t: DLTensor) -> *const DLManagedTensorVersioned {
        self.managed_count += 1;
        Box::into_raw(Box::new(DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 1 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(deleter),
            flags: 0,
            dl_tensor: t,
        }))
    }

    /// One write payload, or `None` when a tensor would be out of bounds.
    fn payload(&mut self, r: &mut Bytes<'_>, managed: bool) -> Option<ovstage_write_data_t> {
        let flags = r.u8();
        let n = match r.u8() {
            0xff => 0,
            b => 1 + b as usize % 4,
        };
        let count = r.u8() as u32;
        let (mut index_map, mut mask) = (Vec::new(), Vec::new());
        match (flags >> 1) & 3 {
            2 => index_map = (0..count.max(1)).map(|_| r.u8() as u32).collect(),
            3 => mask = (0..(count.max(1) as usize).div_ceil(64)).map(|_| r.u64()).collect(),
            _ => {}
        }
        let mut tensors = Vec::with_capacity(n);
        for _ in 0..n {
            tensors.push(self.tensor(r)?);
        }
        let mut ptrs = Vec::new();
        if managed {
            ptrs = tensors.iter().map(|t| self.managed(*t)).collect();
            if flags & 0x80 != 0 && !ptrs.is_empty() {
                // The same managed tensor twice: rejected, released once.
                ptrs.push(ptrs[0]);
            }
        }
        let semantic = if flags & 0x20 != 0 { r.u8() as u32 } else { 0 };
        self.selections.push((index_map, mask));
        let (im, mk) = self.selections.last().expect("pushed");
        let data = ovstage_write_data_t {
            tensors: if managed || tensors.is_empty() { std::ptr::null() } else { tensors.as_ptr() },
            managed_tensors: if managed { ptrs.as_ptr() } else { std::ptr::null() },
            tensor_count: if managed { ptrs.len() as u32 } else { n as u32 },
            count: if (flags >> 1) & 3 == 0 { 0 } else { count },
            index_map: if im.is_empty() { std::ptr::null() } else { im.as_ptr() },
            mask: if mk.is_empty() { std::ptr::null() } else { mk.as_ptr() },
            cuda_sync: ovstage_cuda_sync_t::default(),
            semantic: ovstage_attribute_semantic_t(semantic),
            is_array: CBool(flags & 1),
            attribute_mode: ovstage_attribute_mode_t(((flags >> 6) & 1) as u32),
        };
        self.tensors.push(tensors);
        self.managed.push(ptrs);
        Some(data)
    }
}

/// Fetches every group of an accepted read, reads its bytes, releases it.
fn read_back(i: &Instance, q: u64, names: &[&str], ordinal: u64) {
    let desc = ovstage_write_floor_desc_t {
        ordinal,
        scope: ovstage_scope_t(0),
        attributes: std::ptr::null(),
        attribute_count: 0,
    };
    i.mark();
    // SAFETY: a live instance, a valid descriptor.
    let r = unsafe { (i.vt().advance_write_floor.expect("slot"))(i.ctx(), &desc) };
    if let Some(op) = i.check_enqueue(r, "advance_write_floor") {
        i.wait(op, INFINITE);
    }
    let tokens = i.tokens(names);
    let range = ovstage_ordinal_range_t { start_ordinal: 0, end_ordinal: u64::MAX, has_start_ordinal: CBool::FALSE };
    let mut read = 0;
    i.mark();
    // SAFETY: a live instance, valid arrays and output.
    let r =
        unsafe { (i.vt().read_attributes.expect("slot"))(i.ctx(), q, tokens.as_ptr(), tokens.len(), range, &mut read) };
    if i.check_enqueue(r, "read_attributes").is_none() {
        return;
    }
    for _ in 0..64 {
        // SAFETY: a zeroed group is a valid output buffer.
        let mut g: ovstage_read_group_t = unsafe { std::mem::zeroed() };
        i.mark();
        // SAFETY: a live instance, a writable output.
        let st = unsafe { (i.vt().fetch_read_next.expect("slot"))(i.ctx(), read, INFINITE, &mut g) }.0;
        i.check_message(st, "fetch_read_next");
        if st != status::OK {
            break;
        }
        // SAFETY: the group is held until released below.
        unsafe { ovstage_fuzz::touch(g.data.tensors, g.data.tensor_count) };
        // SAFETY: a live instance; the group came from this read.
        let st = unsafe { (i.vt().release_group.expect("slot"))(i.ctx(), &g) }.0;
        assert_eq!(st, status::OK, "release_group of a fetched group: {}", ovstage_fuzz::last_error());
    }
    // SAFETY: a live instance.
    let r = unsafe { (i.vt().release_read.expect("slot"))(i.ctx(), read) };
    if let Some(op) = i.check_enqueue(r, "release_read") {
        i.wait(op, INFINITE);
    }
}

/// The most bytes a map session of this target asks for.
const MAP_CAP: u128 = 1 << 30;

/// Whether element sizes ask for a session buffer of more than
/// [`MAP_CAP`] bytes that the library may allocate (at most `isize::MAX`
/// bytes: more, and it must refuse before allocating, which is fuzzed).
/// Such a map is the client asking for that much memory, and the
/// library's allocation of it is fallible, but the fuzzer counts any
/// single allocation past its 2 GiB limit as a finding; so it is skipped,
/// as a tensor addressing outside the buffer is.
fn asks_too_much(sizes: &[usize], element: Option<usize>) -> bool {
    let Some(element) = element else { return false };
    // At most 8 entries of 64-bit sizes times an element of at most 2^21
    // bytes: no overflow in 128 bits.
    let total: u128 = sizes.iter().map(|n| *n as u128 * element as u128).sum();
    total > MAP_CAP && total <= isize::MAX as u128
}

fn map(i: &Instance, q: u64, ordinal: u64, r: &mut Bytes<'_>) {
    let name = NAMES[r.below(NAMES.len())];
    let (code, bits, lanes) = (r.u8(), r.u8(), r.u16());
    let semantic = r.u8() as u32 % 20;
    let modes = r.u8();
    let desc = ovstage_map_desc_t {
        attribute: attr(name),
        dtype: DLDataType { code, bits, lanes },
        semantic: ovstage_attribute_semantic_t(semantic),
        prim_mode: ovstage_prim_mode_t((modes & 3) as u32),
        attribute_mode: ovstage_attribute_mode_t(((modes >> 2) & 1) as u32),
    };
    let sizes_flag = r.u8();
    let sizes: Vec<usize> = if sizes_flag & 1 == 0 {
        Vec::new()
    } else {
        (0..(sizes_flag >> 1) as usize % 9).map(|_| r.compact_i64() as usize).collect()
    };
    // Never more entries than the array holds; sometimes fewer.
    let count = if sizes_flag & 0x80 != 0 { sizes.len() / 2 } else { sizes.len() };
    if asks_too_much(&sizes[..count], element_bytes(code, bits, lanes)) {
        return;
    }
    let ptr = if sizes_flag & 1 == 0 { std::ptr::null() } else { sizes.as_ptr() };
    let mut handle = 0;
    i.mark();
    // SAFETY: a live instance; `count` readable sizes; a writable output.
    let res = unsafe { (i.vt().map_attribute.expect("slot"))(i.ctx(), q, &desc, ordinal, ptr, count, &mut handle) };
    let Some(op) = i.check_enqueue(res, "map_attribute") else {
        assert_eq!(handle, 0, "a rejected map_attribute leaves the invalid handle");
        return;
    };
    i.wait(op, INFINITE);
    let mut commit_each = r.u8();
    for _ in 0..16 {
        // SAFETY: a zeroed group is a valid output buffer.
        let mut g: ovstage_map_group_t = unsafe { std::mem::zeroed() };
        i.mark();
        // SAFETY: a live instance, a writable output.
        let st = unsafe { (i.vt().fetch_map_next.expect("slot"))(i.ctx(), handle, INFINITE, &mut g) }.0;
        i.check_message(st, "fetch_map_next");
        if st != status::OK {
            break;
        }
        // SAFETY: a fetched, writable group, held until committed.
        unsafe { ovstage_fuzz::fill(g.data.tensors, g.data.tensor_count, 0x3f) };
        if commit_each & 1 != 0 {
            i.mark();
            // SAFETY: a live instance; the group came from this session.
            let res =
                unsafe { (i.vt().unmap_group.expect("slot"))(i.ctx(), handle, &g, ovstage_cuda_sync_t::default()) };
            if let Some(op) = i.check_enqueue(res, "unmap_group") {
                i.wait(op, INFINITE);
            }
        }
        commit_each >>= 1;
    }
    i.mark();
    // SAFETY: a live instance.
    let res = unsafe { (i.vt().unmap_attribute.expect("slot"))(i.ctx(), handle, ovstage_cuda_sync_t::default()) };
    if let Some(op) = i.check_enqueue(res, "unmap_attribute") {
        i.wait(op, INFINITE);
    }
}

fuzz_target!(|data: &[u8]| {
    let mut r = Bytes::new(data);
    let mode = r.u8();
    let prims = r.below(PATHS.len() + 1);
    let ordinal = 1 + r.below(4) as u64;
    DELETED.store(0, Ordering::SeqCst);
    let mut p = Program {
        buffer: data.iter().copied().cycle().take(BUFFER).collect(),
        arrays: Vec::new(),
        tensors: Vec::new(),
        managed: Vec::new(),
        selections: Vec::new(),
        managed_count: 0,
    };
    p.buffer.resize(BUFFER, 0);
    let i = Instance::new();
    let q = i.query(&PATHS[..prims]);
    let managed = mode & 4 != 0;
    let prim_mode = ovstage_prim_mode_t(((mode >> 4) & 1) as u32);
    let mut written: Vec<&str> = Vec::new();
    match mode % 3 {
        0 => {
            let name = NAMES[r.below(NAMES.len())];
            let Some(d) = p.payload(&mut r, managed) else { return skip(i, p) };
            i.mark();
            // SAFETY: a live instance; the payload's arrays stay valid
            // until the instance is destroyed.
            let res = unsafe { (i.vt().write_attribute.expect("slot"))(i.ctx(), q, attr(name), ordinal, d, prim_mode) };
            if let Some(op) = i.check_enqueue(res, "write_attribute") {
                i.wait(op, INFINITE);
                written.push(name);
            }
        }
        1 => {
            let n = 1 + r.below(3);
            let mut writes = Vec::new();
            for _ in 0..n {
                let name = NAMES[r.below(NAMES.len())];
                let Some(d) = p.payload(&mut r, managed) else { return skip(i, p) };
                writes.push(ovstage_attribute_write_t { attribute: attr(name), data: d });
                written.push(name);
            }
            i.mark();
            // SAFETY: a live instance; `writes` and the payloads' arrays
            // stay valid until the instance is destroyed.
            let res = unsafe {
                (i.vt().write_attributes.expect("slot"))(i.ctx(), q, writes.as_ptr(), writes.len(), ordinal, prim_mode)
            };
            match i.check_enqueue(res, "write_attributes") {
                Some(op) => {
                    i.wait(op, INFINITE);
                }
                None => written.clear(),
            }
        }
        _ => {
            map(&i, q, ordinal, &mut r);
            written.extend(NAMES);
        }
    }
    if mode & 8 != 0 && !written.is_empty() {
        read_back(&i, q, &written, ordinal);
    }
    drop_all(i, p);
});

/// Gives up on an input whose tensors would be out of bounds: nothing was
/// handed over, so the target releases its managed tensors itself.
fn skip(i: Instance, p: Program) {
    let mut seen = std::collections::HashSet::new();
    for ptr in p.managed.iter().flatten() {
        if seen.insert(*ptr) {
            // SAFETY: made by `Program::managed` and never handed over.
            unsafe { deleter(ptr.cast_mut()) };
        }
    }
    drop_all(i, p);
}

/// Destroys the instance, then checks that every managed tensor handed over
/// was released exactly once.
fn drop_all(i: Instance, p: Program) {
    drop(i);
    assert_eq!(
        DELETED.load(Ordering::SeqCst),
        p.managed_count,
        "every managed tensor handed over is released exactly once"
    );
    drop(p);
}
