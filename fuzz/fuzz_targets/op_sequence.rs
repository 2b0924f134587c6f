//! Fuzz target: random op sequences through the C ABI on one or two
//! instances.
//!
//! The input is a program: a first byte choosing one or two instances,
//! then up to 256 ops, each a byte (`op % 20`, instance `op >> 5`)
//! followed by its arguments. Ops: writes (dense, sparse through an index
//! map or a mask, per-row arrays; some forcing a schema replacement),
//! deletes, floor advances (global or per attribute), reads with fetch and
//! release, map sessions (fetch, fill, commit a group or the session),
//! path-list and filter queries with their results, waits, releases,
//! ordinal queries, and every release or use of a handle that may be
//! valid, stale, from the other instance, 0 or random.
//!
//! Checked whatever the input:
//! - nothing crashes, aborts, leaks, hangs or allocates past the fuzzer's
//!   limit (libFuzzer and ASan);
//! - a failed call leaves a last-error message of its own, a rejected
//!   enqueue has op id 0 and an accepted one a non-zero id;
//! - every tensor the library hands out (read groups, map groups) is
//!   readable, map groups writable, over the extent their descriptors give
//!   (ASan);
//! - handles and read groups of the other instance are never accepted;
//! - after a global floor advance to F was waited for (and no per-attribute
//!   advance happened on the instance), a snapshot read at F of a fresh
//!   query is accepted and every fetch succeeds until END_OF_ITERATION.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ovstage_abi::CBool;
use ovstage_abi::api_types::*;
use ovstage_abi::dlpack::{DLDataType, DLDevice, DLDeviceType, DLTensor};
use ovstage_fuzz::{Bytes, INFINITE, Instance, attr, status};

const NAMES: [&str; 3] = ["a", "b", "c"];
const PATHS: [&str; 6] = ["/A", "/B", "/A/C", "/D", "/D/E", "/F"];
const MAX_OPS: usize = 256;

/// Memory handed to the library: kept until every instance is destroyed
/// (client tensors must stay valid until their op completes).
#[derive(Default)]
struct Keep {
    floats: Vec<Box<[f32]>>,
    dims: Vec<Box<[i64]>>,
    tensors: Vec<Box<[DLTensor]>>,
    index_maps: Vec<Box<[u32]>>,
    masks: Vec<Box<[u64]>>,
}

/// What one instance handed out.
#[derive(Default)]
struct Handles {
    queries: Vec<u64>,
    reads: Vec<u64>,
    maps: Vec<u64>,
    ordinal_queries: Vec<u64>,
    ops: Vec<u64>,
    groups: Vec<ovstage_read_group_t>,
    map_groups: Vec<(u64, ovstage_map_group_t)>,
    query_results: Vec<ovstage_query_result_t>,
    /// The highest global floor an advance was waited for.
    floor: Option<u64>,
    /// Whether a per-attribute advance was accepted (attribute floors may
    /// then be above the global one, so older snapshots may be trimmed).
    attribute_floors: bool,
}

struct World<'a> {
    r: Bytes<'a>,
    insts: Vec<Instance>,
    handles: Vec<Handles>,
    keep: Keep,
}

/// How a handle argument is chosen.
enum Pick {
    /// One this instance handed out (maybe released since).
    Own(u64),
    /// One the other instance handed out.
    Foreign(u64),
    /// 0 or a value from the input.
    Raw(u64),
}

impl Pick {
    fn value(&self) -> u64 {
        match self {
            Pick::Own(h) | Pick::Foreign(h) | Pick::Raw(h) => *h,
        }
    }
}

impl World<'_> {
    fn pick(&mut self, i: usize, list: fn(&Handles) -> &Vec<u64>) -> Pick {
        let b = self.r.u8();
        let other = (i + 1) % self.insts.len();
        match b % 8 {
            0..=4 => match list(&self.handles[i]).len() {
                0 => Pick::Raw(0),
                n => Pick::Own(list(&self.handles[i])[b as usize / 8 % n]),
            },
            5 if other != i => match list(&self.handles[other]).len() {
                0 => Pick::Raw(0),
                n => Pick::Foreign(list(&self.handles[other])[b as usize / 8 % n]),
            },
            6 => Pick::Raw(self.r.u64()),
            _ => Pick::Raw(0),
        }
    }

    fn ordinal(&mut self) -> u64 {
        match self.r.u8() {
            0xff => self.r.u64(),
            b => (b % 16) as u64,
        }
    }

    /// Records an enqueue's op; checks a foreign handle was not accepted.
    fn enqueued(&mut self, i: usize, res: ovstage_enqueue_result_t, call: &str, pick: &Pick) -> Option<u64> {
        let op = self.insts[i].check_enqueue(res, call);
        if let (Some(_), Pick::Foreign(h)) = (op, pick) {
            panic!("{call} accepted handle {h:#x} of the other instance");
        }
        if let Some(op) = op {
            self.handles[i].ops.push(op);
        }
        op
    }

    /// A client f32 tensor of `rows` x `lanes` (kept alive).
    fn f32_tensor(&mut self, rows: usize, lanes: usize) -> DLTensor {
        let values: Box<[f32]> = (0..rows * lanes).map(|v| v as f32).collect();
        let mut shape: Box<[i64]> =
            if lanes > 1 { Box::new([rows as i64, lanes as i64]) } else { Box::new([rows as i64]) };
        let t = DLTensor {
            data: values.as_ptr().cast_mut().cast(),
            device: DLDevice { device_type: DLDeviceType(1), device_id: 0 },
            ndim: shape.len() as i32,
            dtype: DLDataType { code: 2, bits: 32, lanes: 1 },
            shape: shape.as_mut_ptr(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        };
        self.keep.floats.push(values);
        self.keep.dims.push(shape);
        t
    }

    fn payload(&mut self, tensors: Vec<DLTensor>, is_array: bool) -> ovstage_write_data_t {
        let tensors: Box<[DLTensor]> = tensors.into_boxed_slice();
        let data = ovstage_write_data_t {
            tensors: tensors.as_ptr(),
            managed_tensors: std::ptr::null(),
            tensor_count: tensors.len() as u32,
            count: 0,
            index_map: std::ptr::null(),
            mask: std::ptr::null(),
            cuda_sync: ovstage_cuda_sync_t::default(),
            semantic: ovstage_attribute_semantic_t(0),
            is_array: CBool(is_array as u8),
            attribute_mode: ovstage_attribute_mode_t(0),
        };
        self.keep.tensors.push(tensors);
        data
    }

    fn write(&mut self, i: usize, kind: u8) {
        let q = self.pick(i, |h| &h.queries);
        let name = NAMES[self.r.below(NAMES.len())];
        let ordinal = self.ordinal();
        let shape = self.r.u8();
        let (rows, lanes) = (shape as usize % 8, 1 + (shape as usize >> 3) % 3);
        let mut data = match kind {
            // Per-row arrays: one tensor per prim, each of 0..4 elements.
            2 => {
                let tensors = (0..rows.max(1))
                    .map(|_| {
                        let n = self.r.below(5);
                        self.f32_tensor(n, 1)
                    })
                    .collect();
                self.payload(tensors, true)
            }
            _ => {
                let t = self.f32_tensor(rows, lanes);
                self.payload(vec![t], false)
            }
        };
        if kind == 1 {
            let count = 1 + self.r.below(8) as u32;
            if self.r.u8() & 1 == 0 {
                let map: Box<[u32]> = (0..count).map(|_| self.r.below(8) as u32).collect();
                data.index_map = map.as_ptr();
                self.keep.index_maps.push(map);
            } else {
                let mask: Box<[u64]> = Box::new([self.r.u8() as u64]);
                data.mask = mask.as_ptr();
                self.keep.masks.push(mask);
            }
            data.count = count;
        }
        let mode = ovstage_prim_mode_t(self.r.below(3) as u32);
        // One write in four replaces a differing schema (lanes, kind)
        // instead of being refused: replaced schemas' columns are dropped
        // once the retention frontier passes them.
        if self.r.below(4) == 0 {
            data.attribute_mode = ovstage_attribute_mode_t(
                ovstage_abi::api_types::values::ovstage_attribute_mode_t::OVSTAGE_ATTRIBUTE_MODE_FORCE as u32,
            );
        }
        let inst = &self.insts[i];
        inst.mark();
        // SAFETY: a live instance; the payload's memory is kept until the
        // instances are gone.
        let res = unsafe {
            (inst.vt().write_attribute.expect("slot"))(inst.ctx(), q.value(), attr(name), ordinal, data, mode)
        };
        self.enqueued(i, res, "write_attribute", &q);
    }

    fn delete(&mut self, i: usize) {
        let q = self.pick(i, |h| &h.queries);
        let which = self.r.u8();
        let attrs: Vec<_> =
            NAMES.iter().enumerate().filter(|(k, _)| which & (1 << k) != 0).map(|(_, n)| attr(n)).collect();
        let ordinal = self.ordinal();
        let inst = &self.insts[i];
        inst.mark();
        // SAFETY: a live instance; `attrs` has `attrs.len()` entries.
        let res = unsafe {
            (inst.vt().delete_attributes.expect("slot"))(inst.ctx(), q.value(), attrs.as_ptr(), attrs.len(), ordinal)
        };
        self.enqueued(i, res, "delete_attributes", &q);
    }

    /// Advances the floor; with `wait`, waits and records a global floor.
    fn advance(&mut self, i: usize, ordinal: u64, scope: u32, wait: bool) -> bool {
        let tokens = self.insts[i].tokens(&NAMES[..1 + (scope as usize % 3)]);
        let desc = ovstage_write_floor_desc_t {
            ordinal,
            scope: ovstage_scope_t(scope),
            attributes: if scope == 0 { std::ptr::null() } else { tokens.as_ptr() },
            attribute_count: if scope == 0 { 0 } else { tokens.len() },
        };
        let inst = &self.insts[i];
        inst.mark();
        // SAFETY: a live instance, a valid descriptor.
        let res = unsafe { (inst.vt().advance_write_floor.expect("slot"))(inst.ctx(), &desc) };
        let Some(op) = self.enqueued(i, res, "advance_write_floor", &Pick::Raw(0)) else { return false };
        if scope != 0 {
            self.handles[i].attribute_floors = true;
        }
        if !wait {
            return false;
        }
        let inst = &self.insts[i];
        inst.mark();
        let st = inst.wait(op, INFINITE);
        inst.check_message(st, "wait_op");
        if st == status::OK && scope == 0 {
            let f = &mut self.handles[i].floor;
            *f = Some(f.map_or(ordinal, |f| f.max(ordinal)));
            return true;
        }
        false
    }

    fn read(&mut self, i: usize) {
        let q = self.pick(i, |h| &h.queries);
        let which = self.r.u8();
        let names: Vec<&str> =
            NAMES.iter().enumerate().filter(|(k, _)| which & (1 << k) != 0).map(|(_, n)| *n).collect();
        let tokens = self.insts[i].tokens(&names);
        let range = match self.r.u8() % 3 {
            0 => ovstage_ordinal_range_t { start_ordinal: 0, end_ordinal: u64::MAX, has_start_ordinal: CBool::FALSE },
            1 => ovstage_ordinal_range_t {
                start_ordinal: 0,
                end_ordinal: self.ordinal(),
                has_start_ordinal: CBool::FALSE,
            },
            _ => ovstage_ordinal_range_t {
                start_ordinal: self.ordinal(),
                end_ordinal: self.ordinal(),
                has_start_ordinal: CBool::TRUE,
            },
        };
        let mut read = 0;
        let inst = &self.insts[i];
        inst.mark();
        // SAFETY: a live instance; valid arrays and output.
        let res = unsafe {
            (inst.vt().read_attributes.expect("slot"))(
                inst.ctx(),
                q.value(),
                tokens.as_ptr(),
                tokens.len(),
                range,
                &mut read,
            )
        };
        if self.enqueued(i, res, "read_attributes", &q).is_some() {
            assert_ne!(read, 0, "an accepted read_attributes returned the invalid handle");
            self.handles[i].reads.push(read);
        } else {
            assert_eq!(read, 0, "a rejected read_attributes leaves the invalid handle");
        }
    }

    fn fetch_read(&mut self, i: usize) {
        let h = self.pick(i, |h| &h.reads);
        let timeout = if self.r.u8() & 1 == 0 { 0 } else { INFINITE };
        let inst = &self.insts[i];
        // SAFETY: a zeroed group is a valid output buffer.
        let mut g: ovstage_read_group_t = unsafe { std::mem::zeroed() };
        inst.mark();
        // SAFETY: a live instance, a writable output.
        let st = unsafe { (inst.vt().fetch_read_next.expect("slot"))(inst.ctx(), h.value(), timeout, &mut g) }.0;
        inst.check_message(st, "fetch_read_next");
        if st == status::OK {
            if let Pick::Foreign(h) = h {
                panic!("fetch_read_next accepted read handle {h:#x} of the other instance");
            }
            // SAFETY: a fetched group, held until released.
            unsafe { ovstage_fuzz::touch(g.data.tensors, g.data.tensor_count) };
            self.handles[i].groups.push(g);
        }
    }

    fn release_group(&mut self, i: usize) {
        let b = self.r.u8();
        let other = (i + 1) % self.insts.len();
        let (g, foreign) = match b % 4 {
            0 | 1 if !self.handles[i].groups.is_empty() => {
                let n = self.handles[i].groups.len();
                let g = self.handles[i].groups.swap_remove(b as usize / 4 % n);
                // A held group stays readable until it is released.
                // SAFETY: fetched from this instance and not released.
                unsafe { ovstage_fuzz::touch(g.data.tensors, g.data.tensor_count) };
                (g, false)
            }
            2 if other != i && !self.handles[other].groups.is_empty() => {
                let n = self.handles[other].groups.len();
                (self.handles[other].groups[b as usize / 4 % n], true)
            }
            _ => {
                // SAFETY: a zeroed group is a valid value.
                let mut g: ovstage_read_group_t = unsafe { std::mem::zeroed() };
                g.read_group_id = self.r.u64();
                (g, false)
            }
        };
        let inst = &self.insts[i];
        inst.mark();
        // SAFETY: a live instance, a readable group.
        let st = unsafe { (inst.vt().release_group.expect("slot"))(inst.ctx(), &g) }.0;
        inst.check_message(st, "release_group");
        if foreign {
            assert_ne!(st, status::OK, "release_group accepted group {:#x} of the other instance", g.read_group_id);
        }
    }

    fn release_read(&mut self, i: usize) {
        let h = self.pick(i, |h| &h.reads);
        let inst = &self.insts[i];
        inst.mark();
        // SAFETY: a live instance.
        let res = unsafe { (inst.vt().release_read.expect("slot"))(inst.ctx(), h.value()) };
        self.enqueued(i, res, "release_read", &h);
    }

    fn map(&mut self, i: usize) {
        let q = self.pick(i, |h| &h.queries);
        let name = NAMES[self.r.below(NAMES.len())];
        let b = self.r.u8();
        let dtype = match b % 3 {
            0 => DLDataType { code: 0, bits: 0, lanes: 0 },
            _ => DLDataType { code: 2, bits: 32, lanes: 1 + (b as u16 >> 2) % 3 },
        };
        let sizes: Vec<usize> =
            if b & 0x80 != 0 { (0..self.r.below(7)).map(|_| self.r.below(5)).collect() } else { Vec::new() };
        let ordinal = self.ordinal();
        let desc = ovstage_map_desc_t {
            attribute: attr(name),
            dtype,
            semantic: ovstage_attribute_semantic_t(0),
            prim_mode: ovstage_prim_mode_t(((b >> 5) & 1) as u32),
            attribute_mode: ovstage_attribute_mode_t(0),
        };
        let mut handle = 0;
        let inst = &self.insts[i];
        inst.mark();
        // SAFETY: a live instance; `sizes` has `sizes.len()` entries; a
        // writable output.
        let res = unsafe {
            (inst.vt().map_attribute.expect("slot"))(
                inst.ctx(),
                q.value(),
                &desc,
                ordinal,
                if b & 0x80 != 0 { sizes.as_ptr() } else { std::ptr::null() },
                sizes.len(),
                &mut handle,
            )
        };
        if self.enqueued(i, res, "map_attribute", &q).is_some() {
            self.handles[i].maps.push(handle);
        }
    }

    fn fetch_map(&mut self, i: usize) {
        let h = self.pick(i, |h| &h.maps);
        let timeout = if self.r.u8() & 1 == 0 { 0 } else { INFINITE };
        let inst = &self.insts[i];
        // SAFETY: a zeroed group is a valid output buffer.
        let mut g: ovstage_map_group_t = unsafe { std::mem::zeroed() };
        inst.mark();
        // SAFETY: a live instance, a writable output.
        let st = unsafe { (inst.vt().fetch_map_next.expect("slot"))(inst.ctx(), h.value(), timeout, &mut g) }.0;
        inst.check_message(st, "fetch_map_next");
        if st == status::OK {
            if let Pick::Foreign(h) = h {
                panic!("fetch_map_next accepted map handle {h:#x} of the other instance");
            }
            // SAFETY: a fetched, writable group, held until committed.
            unsafe { ovstage_fuzz::fill(g.data.tensors, g.data.tensor_count, 0x40) };
            self.handles[i].map_groups.push((h.value(), g));
        }
    }

    fn unmap(&mut self, i: usize, whole: bool) {
        let inst_groups = &mut self.handles[i].map_groups;
        let b = self.r.u8();
        if !whole {
            let (h, g) = if inst_groups.is_empty() || b & 1 != 0 {
                let h = self.pick(i, |h| &h.maps).value();
                // SAFETY: a zeroed group is a valid value.
                (h, unsafe { std::mem::zeroed::<ovstage_map_group_t>() })
            } else {
                let n = inst_groups.len();
                inst_groups.swap_remove(b as usize / 2 % n)
            };
            let inst = &self.insts[i];
            inst.mark();
            // SAFETY: a live instance, a readable group.
            let res =
                unsafe { (inst.vt().unmap_group.expect("slot"))(inst.ctx(), h, &g, ovstage_cuda_sync_t::default()) };
            self.enqueued(i, res, "unmap_group", &Pick::Raw(0));
        } else {
            let h = self.pick(i, |h| &h.maps);
            // Groups of the session are the library's again, whatever the
            // outcome: forget them.
            self.handles[i].map_groups.retain(|(m, _)| *m != h.value());
            let inst = &self.insts[i];
            inst.mark();
            // SAFETY: a live instance.
            let res = unsafe {
                (inst.vt().unmap_attribute.expect("slot"))(inst.ctx(), h.value(), ovstage_cuda_sync_t::default())
            };
            self.enqueued(i, res, "unmap_attribute", &h);
        }
    }

    fn path_query(&mut self, i: usize) {
        let which = self.r.u8();
        let paths: Vec<&str> =
            PATHS.iter().enumerate().filter(|(k, _)| which & (1 << k) != 0).map(|(_, p)| *p).collect();
        let q = self.insts[i].query(&paths);
        if q != 0 {
            self.handles[i].queries.push(q);
        }
    }

    fn filter_query(&mut self, i: usize) {
        let which = self.r.u8();
        let names: Vec<&str> =
            NAMES.iter().enumerate().filter(|(k, _)| which & (1 << k) != 0).map(|(_, n)| *n).collect();
        let tokens = self.insts[i].tokens(&names);
        let mut q = 0;
        let inst = &self.insts[i];
        inst.mark();
        // SAFETY: a live instance; NULL filter (every prim); valid arrays
        // and output.
        let res = unsafe {
            (inst.vt().query.expect("slot"))(inst.ctx(), std::ptr::null(), tokens.as_ptr(), tokens.len(), &mut q)
        };
        if self.enqueued(i, res, "query", &Pick::Raw(0)).is_some() {
            self.handles[i].queries.push(q);
        }
    }

    fn query_result(&mut self, i: usize) {
        let b = self.r.u8();
        if b & 1 == 0 || self.handles[i].query_results.is_empty() {
            let h = self.pick(i, |h| &h.queries);
            let inst = &self.insts[i];
            // SAFETY: a zeroed result is a valid output buffer.
            let mut out: ovstage_query_result_t = unsafe { std::mem::zeroed() };
            inst.mark();
            let timeout = if b & 2 == 0 { 0 } else { INFINITE };
            // SAFETY: a live instance, a writable output.
            let st =
                unsafe { (inst.vt().fetch_query_result.expect("slot"))(inst.ctx(), h.value(), timeout, &mut out) }.0;
            inst.check_message(st, "fetch_query_result");
            if st == status::OK {
                if let Pick::Foreign(h) = h {
                    panic!("fetch_query_result accepted query handle {h:#x} of the other instance");
                }
                if out.attribute_count > 0 {
                    // SAFETY: `attribute_count` tokens while the result is held.
                    let attrs = unsafe { std::slice::from_raw_parts(out.attributes, out.attribute_count) };
                    std::hint::black_box(attrs.iter().sum::<u64>());
                }
                self.handles[i].query_results.push(out);
            }
        } else {
            let n = self.handles[i].query_results.len();
            let out = self.handles[i].query_results.swap_remove(b as usize / 2 % n);
            let inst = &self.insts[i];
            inst.mark();
            // SAFETY: a live instance, a readable result.
            let st = unsafe { (inst.vt().release_query_result.expect("slot"))(inst.ctx(), &out) }.0;
            assert_eq!(st, status::OK, "release_query_result of a held result: {}", ovstage_fuzz::last_error());
        }
    }

    fn release_query(&mut self, i: usize) {
        let h = self.pick(i, |h| &h.queries);
        let inst = &self.insts[i];
        inst.mark();
        // SAFETY: a live instance.
        let res = unsafe { (inst.vt().release_query.expect("slot"))(inst.ctx(), h.value()) };
        self.enqueued(i, res, "release_query", &h);
    }

    fn wait(&mut self, i: usize) {
        let h = self.pick(i, |h| &h.ops);
        let timeout = if self.r.u8() & 1 == 0 { 0 } else { INFINITE };
        let inst = &self.insts[i];
        inst.mark();
        let st = inst.wait(h.value(), timeout);
        inst.check_message(st, "wait_op");
        if st != status::OK && st != status::TIMEOUT {
            // SAFETY: a live instance; a failed op's message view is valid
            // until the thread's next wait.
            let v = unsafe { (inst.vt().get_last_op_error.expect("slot"))(inst.ctx(), h.value()) };
            if !v.ptr.is_null() {
                // SAFETY: a library view of `length` bytes plus a NUL.
                let bytes = unsafe { std::slice::from_raw_parts(v.ptr.cast::<u8>(), v.length + 1) };
                assert_eq!(bytes[v.length], 0, "get_last_op_error's view is NUL-terminated");
            }
        }
    }

    fn release_op(&mut self, i: usize) {
        let h = self.pick(i, |h| &h.ops);
        let inst = &self.insts[i];
        inst.mark();
        // SAFETY: a live instance.
        let st = unsafe { (inst.vt().release_op.expect("slot"))(inst.ctx(), h.value()) }.0;
        inst.check_message(st, "release_op");
    }

    fn ordinal_query(&mut self, i: usize) {
        let b = self.r.u8();
        let inst = &self.insts[i];
        match b % 3 {
            0 | 1 => {
                let mut h = 0;
                inst.mark();
                // SAFETY: a live instance, a writable output.
                let res = unsafe {
                    if b.is_multiple_of(3) {
                        (inst.vt().get_oldest_preserved_ordinal.expect("slot"))(inst.ctx(), &mut h)
                    } else {
                        (inst.vt().get_attribute_write_floor.expect("slot"))(
                            inst.ctx(),
                            attr(NAMES[b as usize >> 6 & 1]),
                            &mut h,
                        )
                    }
                };
                if self.enqueued(i, res, "ordinal query", &Pick::Raw(0)).is_some() {
                    self.handles[i].ordinal_queries.push(h);
                }
            }
            _ => {
                let h = self.pick(i, |h| &h.ordinal_queries);
                let inst = &self.insts[i];
                let mut out = 0;
                inst.mark();
                // SAFETY: a live instance, a writable output.
                let st =
                    unsafe { (inst.vt().fetch_ordinal.expect("slot"))(inst.ctx(), h.value(), INFINITE, &mut out) }.0;
                inst.check_message(st, "fetch_ordinal");
                if let (status::OK, Pick::Foreign(h)) = (st, &h) {
                    panic!("fetch_ordinal accepted ordinal query handle {h:#x} of the other instance");
                }
                if b & 0x80 != 0 {
                    inst.mark();
                    // SAFETY: a live instance.
                    let res = unsafe { (inst.vt().release_ordinal_query.expect("slot"))(inst.ctx(), h.value()) };
                    self.enqueued(i, res, "release_ordinal_query", &h);
                }
            }
        }
    }

    /// Advances the global floor, waits, and reads the snapshot at that
    /// floor: it must be accepted and fetch to the end without error.
    fn sealed_read(&mut self, i: usize) {
        let ordinal = self.handles[i].floor.unwrap_or(0).max(self.ordinal());
        if !self.advance(i, ordinal, 0, true) || self.handles[i].attribute_floors {
            return;
        }
        let q = self.insts[i].query(&PATHS);
        if q == 0 {
            return;
        }
        let inst = &self.insts[i];
        let tokens = inst.tokens(&NAMES);
        let range = ovstage_ordinal_range_t { start_ordinal: 0, end_ordinal: ordinal, has_start_ordinal: CBool::FALSE };
        let mut read = 0;
        inst.mark();
        // SAFETY: a live instance; valid arrays and output.
        let res = unsafe {
            (inst.vt().read_attributes.expect("slot"))(inst.ctx(), q, tokens.as_ptr(), tokens.len(), range, &mut read)
        };
        assert_eq!(
            res.status.0,
            status::OK,
            "a snapshot read at the sealed floor {ordinal} was refused: {}",
            ovstage_fuzz::last_error()
        );
        loop {
            // SAFETY: a zeroed group is a valid output buffer.
            let mut g: ovstage_read_group_t = unsafe { std::mem::zeroed() };
            // SAFETY: a live instance, a writable output.
            let st = unsafe { (inst.vt().fetch_read_next.expect("slot"))(inst.ctx(), read, INFINITE, &mut g) }.0;
            if st == status::END_OF_ITERATION {
                break;
            }
            assert_eq!(st, status::OK, "reading the sealed floor {ordinal} failed: {}", ovstage_fuzz::last_error());
            // SAFETY: a fetched group, released below.
            unsafe { ovstage_fuzz::touch(g.data.tensors, g.data.tensor_count) };
            // SAFETY: a live instance; the group came from this read.
            let st = unsafe { (inst.vt().release_group.expect("slot"))(inst.ctx(), &g) }.0;
            assert_eq!(st, status::OK, "release_group of a fetched group: {}", ovstage_fuzz::last_error());
        }
        // SAFETY: a live instance.
        let res = unsafe { (inst.vt().release_read.expect("slot"))(inst.ctx(), read) };
        self.enqueued(i, res, "release_read", &Pick::Raw(0));
        self.handles[i].queries.push(q);
    }

    fn step(&mut self) {
        let b = self.r.u8();
        let i = (b as usize >> 5) % self.insts.len();
        match b % 20 {
            k @ 0..=2 => self.write(i, k),
            3 => self.delete(i),
            4 => {
                let (ordinal, scope, wait) = (self.ordinal(), self.r.u8(), self.r.u8() & 1 != 0);
                self.advance(i, ordinal, (scope % 4) as u32, wait);
            }
            5 => self.read(i),
            6 => self.fetch_read(i),
            7 => self.release_group(i),
            8 => self.release_read(i),
            9 => self.map(i),
            10 => self.fetch_map(i),
            11 => self.unmap(i, false),
            12 => self.unmap(i, true),
            13 => self.path_query(i),
            14 => self.filter_query(i),
            15 => self.query_result(i),
            16 => self.release_query(i),
            17 => self.wait(i),
            18 => self.release_op(i),
            _ => {
                if b & 0x10 != 0 {
                    self.sealed_read(i);
                } else {
                    self.ordinal_query(i);
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut r = Bytes::new(data);
    let count = 1 + (r.u8() & 1) as usize;
    let insts: Vec<Instance> = (0..count).map(|_| Instance::new()).collect();
    let mut w = World { r, insts, handles: (0..count).map(|_| Handles::default()).collect(), keep: Keep::default() };
    // Every instance starts with a query of every path.
    for i in 0..count {
        let q = w.insts[i].query(&PATHS);
        w.handles[i].queries.push(q);
    }
    for _ in 0..MAX_OPS {
        if w.r.is_empty() {
            break;
        }
        w.step();
    }
    // Held groups stay readable until released, whatever happened since;
    // then they and held results are released with their instance.
    for h in &w.handles {
        for g in &h.groups {
            // SAFETY: fetched and not released.
            unsafe { ovstage_fuzz::touch(g.data.tensors, g.data.tensor_count) };
        }
    }
    let World { insts, keep, .. } = w;
    drop(insts);
    drop(keep);
});
