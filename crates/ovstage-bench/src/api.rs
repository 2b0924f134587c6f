//! A library implementing the ovstage C ABI, loaded by path, and an instance
//! of it driven only through the exported entry points, the instance's
//! vtable and its path dictionary: exactly what a binding does.
//!
//! Every call checks its status; failures become `Err` with the library's
//! own message.

use std::ffi::{CStr, c_char};
use std::path::Path;
use std::ptr::{null, null_mut};

use ovstage_abi::CBool;
use ovstage_abi::api::ovstage_vtable_t;
use ovstage_abi::api_types::*;
use ovstage_abi::dlpack::{DLDataType, DLDevice, DLDeviceType, DLTensor};
use ovstage_abi::ovx_string::{ovx_string_or_token_t, ovx_string_t};
use ovstage_abi::ovx_types::ovx_api_result_t;
use ovstage_abi::path_dictionary::path_dictionary_instance_t;
use ovstage_abi::path_dictionary_vtable::path_dictionary_vtable_t;
use ovstage_abi::stage_types::{
    ovstage_build_info_t, ovstage_config_entry_key_t, ovstage_config_entry_t, ovstage_config_entry_value_t,
    ovstage_config_key_type_t, ovstage_config_t, ovstage_config_uint64_t, ovstage_instance_desc_t,
};

/// A failed call, with the library's message.
pub(crate) type Result<T> = std::result::Result<T, String>;

const OK: u32 = 0;
/// `OVSTAGE_ERROR_END_OF_ITERATION`.
const END_OF_ITERATION: u32 = 8;
/// `OVSTAGE_TIMEOUT_INFINITE`.
pub(crate) const INFINITE: u64 = u64::MAX;

type CreateFn =
    unsafe extern "C" fn(*const ovstage_instance_desc_t, *mut *mut ovstage_instance_t) -> ovstage_api_status_t;
type DestroyFn = unsafe extern "C" fn(*mut ovstage_instance_t) -> ovstage_api_status_t;
type LastErrorFn = unsafe extern "C" fn() -> ovx_string_t;
type InitializeFn = unsafe extern "C" fn(*const ovstage_config_t) -> ovstage_api_status_t;
type ShutdownFn = unsafe extern "C" fn() -> ovstage_api_status_t;
type BuildInfoFn = unsafe extern "C" fn() -> *const ovstage_build_info_t;

/// The library's flat entry points.
pub(crate) struct Library {
    create: CreateFn,
    destroy: DestroyFn,
    last_error: LastErrorFn,
    initialize: InitializeFn,
    shutdown: ShutdownFn,
    build_info: Option<BuildInfoFn>,
    // Keeps the code the pointers above point into loaded.
    _lib: libloading::Library,
}

fn symbol<T: Copy>(lib: &libloading::Library, name: &str) -> Result<T> {
    // SAFETY: `T` is the contract's signature of the export named `name`.
    unsafe { lib.get::<T>(name.as_bytes()).map(|s| *s).map_err(|e| format!("{name}: {e}")) }
}

impl Library {
    /// Loads the library at `path` and resolves the entry points.
    pub(crate) fn load(path: &Path) -> Result<Library> {
        // SAFETY: loading runs the library's initializers; the library
        // under test is trusted to be an ovstage implementation.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| format!("loading {}: {e}", path.display()))?;
        Ok(Library {
            create: symbol(&lib, "ovstage_create_instance")?,
            destroy: symbol(&lib, "ovstage_destroy_instance")?,
            last_error: symbol(&lib, "ovstage_get_last_error")?,
            initialize: symbol(&lib, "ovstage_initialize")?,
            shutdown: symbol(&lib, "ovstage_shutdown")?,
            build_info: symbol(&lib, "ovstage_get_build_info").ok(),
            _lib: lib,
        })
    }

    /// The calling thread's last error message.
    pub(crate) fn last_error(&self) -> String {
        // SAFETY: no arguments; the result is a view owned by the library.
        let e = unsafe { (self.last_error)() };
        view_text(e)
    }

    fn check(&self, what: &str, status: ovstage_api_status_t) -> Result<()> {
        if status.0 == OK { Ok(()) } else { Err(format!("{what}: status {}: {}", status.0, self.last_error())) }
    }

    /// The library's build string (empty without `ovstage_get_build_info`).
    pub(crate) fn build_string(&self) -> String {
        let Some(f) = self.build_info else { return String::new() };
        // SAFETY: the export returns a static struct or NULL.
        let info = unsafe { f() };
        if info.is_null() {
            return String::new();
        }
        // SAFETY: non-NULL: the library's static build information.
        view_text(unsafe { (*info).build_string })
    }

    /// Takes a process reference with one `uint64` setting.
    fn initialize_u64(&self, key: u32, value: u64) -> Result<()> {
        let entries = [ovstage_config_entry_t {
            key_type: ovstage_config_key_type_t(2),
            key: ovstage_config_entry_key_t { uint64_key: ovstage_config_uint64_t(key) },
            value: ovstage_config_entry_value_t { uint_value: value },
        }];
        let config = ovstage_config_t { entries: entries.as_ptr(), entry_count: entries.len() };
        // SAFETY: a valid config for the duration of the call.
        self.check("ovstage_initialize", unsafe { (self.initialize)(&config) })
    }

    /// Takes a process reference selecting the ordinal admission policy.
    pub(crate) fn initialize(&self, admission: u64) -> Result<()> {
        self.initialize_u64(1, admission)
    }

    /// Takes a process reference selecting the worker lane count (our
    /// `OVSTAGE_CONFIG_RUNTIME_LANE_COUNT`; 0 is one lane per core).
    pub(crate) fn initialize_lanes(&self, lanes: u64) -> Result<()> {
        self.initialize_u64(256, lanes)
    }

    /// Drops the reference taken by `initialize`.
    pub(crate) fn shutdown(&self) -> Result<()> {
        // SAFETY: no arguments.
        self.check("ovstage_shutdown", unsafe { (self.shutdown)() })
    }
}

/// The text of a library-owned view (empty for `{NULL, 0}`).
fn view_text(v: ovx_string_t) -> String {
    if v.ptr.is_null() || v.length == 0 {
        return String::new();
    }
    // SAFETY: a non-empty library view has `length` readable bytes.
    let bytes = unsafe { std::slice::from_raw_parts(v.ptr.cast::<u8>(), v.length) };
    String::from_utf8_lossy(bytes).into_owned()
}

/// A string view of `s` (valid while `s` is).
pub(crate) fn view(s: &str) -> ovx_string_t {
    ovx_string_t { ptr: s.as_ptr().cast::<c_char>(), length: s.len() }
}

/// A host tensor: owned data plus the shape (and strides) a `DLTensor`
/// points into.
pub(crate) struct HostTensor {
    data: Vec<u8>,
    shape: Vec<i64>,
    dtype: DLDataType,
}

impl HostTensor {
    /// `rows` rows of `lanes` f32 (canonical layout: `[rows]`, width in lanes).
    pub(crate) fn f32_rows(values: &[f32], lanes: u16) -> HostTensor {
        let rows = values.len() / usize::from(lanes);
        HostTensor {
            data: values.iter().flat_map(|v| v.to_ne_bytes()).collect(),
            shape: vec![rows as i64],
            dtype: DLDataType { code: 2, bits: 32, lanes },
        }
    }

    /// `rows` rows of `lanes` f64.
    pub(crate) fn f64_rows(values: &[f64], lanes: u16) -> HostTensor {
        let rows = values.len() / usize::from(lanes);
        HostTensor {
            data: values.iter().flat_map(|v| v.to_ne_bytes()).collect(),
            shape: vec![rows as i64],
            dtype: DLDataType { code: 2, bits: 64, lanes },
        }
    }

    /// The descriptor (valid while `self` is not moved or dropped).
    pub(crate) fn dl(&mut self) -> DLTensor {
        DLTensor {
            data: self.data.as_mut_ptr().cast(),
            device: DLDevice { device_type: DLDeviceType(1), device_id: 0 },
            ndim: self.shape.len() as i32,
            dtype: self.dtype,
            shape: self.shape.as_mut_ptr(),
            strides: null_mut(),
            byte_offset: 0,
        }
    }
}

/// A write payload: which rows go where.
pub(crate) enum Selection<'a> {
    /// Every prim of the query.
    All,
    /// The first `count` prims whose bit is set.
    Mask { count: u32, bits: &'a [u64] },
}

/// The payload struct of `tensors` (client-managed).
pub(crate) fn write_data(tensors: &[DLTensor], is_array: bool, selection: &Selection<'_>) -> ovstage_write_data_t {
    let (count, mask) = match selection {
        Selection::All => (0, null()),
        Selection::Mask { count, bits } => (*count, bits.as_ptr()),
    };
    ovstage_write_data_t {
        tensors: tensors.as_ptr(),
        managed_tensors: null(),
        tensor_count: tensors.len() as u32,
        count,
        index_map: null(),
        mask,
        cuda_sync: ovstage_cuda_sync_t::default(),
        semantic: ovstage_attribute_semantic_t(0),
        is_array: CBool::from(is_array),
        attribute_mode: ovstage_attribute_mode_t(0),
    }
}

/// What a drained read saw.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadStats {
    pub(crate) groups: usize,
    pub(crate) rows: u64,
}

/// The latest sealed values.
pub(crate) const LATEST: ovstage_ordinal_range_t =
    ovstage_ordinal_range_t { start_ordinal: 0, end_ordinal: u64::MAX, has_start_ordinal: CBool::FALSE };

/// A snapshot read at `ordinal`: how the reference's suite reads the latest
/// values (the last sealed ordinal, given explicitly).
pub(crate) fn snapshot(ordinal: u64) -> ovstage_ordinal_range_t {
    ovstage_ordinal_range_t { start_ordinal: 0, end_ordinal: ordinal, has_start_ordinal: CBool::FALSE }
}

/// An instance of a loaded library.
pub(crate) struct Stage<'l> {
    lib: &'l Library,
    inst: *mut ovstage_instance_t,
    vt: &'l ovstage_vtable_t,
    ctx: *mut ovstage_context_t,
    dvt: &'l path_dictionary_vtable_t,
    dict: *mut path_dictionary_instance_t,
}

// SAFETY: every entry point of the contract may be called from any thread
// on the same instance; the pointers are only handed back to the library.
unsafe impl Send for Stage<'_> {}
// SAFETY: as above.
unsafe impl Sync for Stage<'_> {}

impl<'l> Stage<'l> {
    /// Creates an instance.
    pub(crate) fn new(lib: &'l Library, name: &CStr) -> Result<Stage<'l>> {
        let desc = ovstage_instance_desc_t { name: name.as_ptr() };
        let mut inst = null_mut();
        // SAFETY: valid descriptor and output.
        lib.check("ovstage_create_instance", unsafe { (lib.create)(&desc, &mut inst) })?;
        // SAFETY: a created instance has a vtable and context that live as
        // long as the instance, and a vtable that is never NULL.
        let (vt, ctx) = unsafe { (&*(*inst).vtable, (*inst).context) };
        // SAFETY: live instance.
        let dict = unsafe { (vt.get_path_dictionary.expect("slot"))(ctx) };
        if dict.is_null() {
            return Err("get_path_dictionary returned NULL".into());
        }
        // SAFETY: the dictionary bundle lives as long as the instance.
        let dvt = unsafe { &*(*dict).vtable };
        Ok(Stage { lib, inst, vt, ctx, dvt, dict })
    }

    fn check(&self, what: &str, status: ovstage_api_status_t) -> Result<()> {
        self.lib.check(what, status)
    }

    fn dict_check(&self, what: &str, r: ovx_api_result_t) -> Result<()> {
        if r.status.0 == 0 {
            return Ok(());
        }
        let msg = view_text(r.error);
        // SAFETY: an error result's message is released through the
        // dictionary that made it.
        unsafe { (self.dvt.release_error.expect("slot"))((*self.dict).context, r.error) };
        Err(format!("{what}: {msg}"))
    }

    fn enqueued(&self, what: &str, r: ovstage_enqueue_result_t) -> Result<u64> {
        self.check(what, r.status)?;
        Ok(r.op_index)
    }

    /// Interns tokens.
    pub(crate) fn tokens(&self, names: &[&str]) -> Result<Vec<u64>> {
        let views: Vec<ovx_string_t> = names.iter().map(|n| view(n)).collect();
        let mut out = vec![0u64; names.len()];
        // SAFETY: arrays of the given length.
        let r = unsafe {
            (self.dvt.create_tokens_from_strings.expect("slot"))(
                (*self.dict).context,
                views.as_ptr(),
                views.len(),
                out.as_mut_ptr(),
            )
        };
        self.dict_check("create_tokens_from_strings", r)?;
        Ok(out)
    }

    /// A query of exactly `paths` (in that order).
    pub(crate) fn query_paths(&self, paths: &[String]) -> Result<u64> {
        let views: Vec<ovx_string_t> = paths.iter().map(|p| view(p)).collect();
        let mut list = 0;
        // SAFETY: arrays of the given length, valid output.
        let r = unsafe {
            (self.dvt.create_path_list_from_strings.expect("slot"))(
                (*self.dict).context,
                views.as_ptr(),
                views.len(),
                &mut list,
            )
        };
        self.dict_check("create_path_list_from_strings", r)?;
        let mut q = 0;
        // SAFETY: live instance, valid output.
        self.check("query_from_path_list", unsafe {
            (self.vt.query_from_path_list.expect("slot"))(self.ctx, list, &mut q)
        })?;
        // The query keeps its own reference.
        // SAFETY: the list was made above.
        let r = unsafe { (self.dvt.release_path_list_reference.expect("slot"))((*self.dict).context, list) };
        self.dict_check("release_path_list_reference", r)?;
        Ok(q)
    }

    /// Waits for `op` (blocking) and releases it.
    pub(crate) fn wait(&self, op: u64) -> Result<()> {
        let mut r = ovstage_op_wait_result_t { error_op_ids: null(), error_op_id_count: 0, lowest_pending_op_id: 0 };
        // SAFETY: live instance, valid output.
        let status = unsafe { (self.vt.wait_op.expect("slot"))(self.ctx, op, INFINITE, &mut r) };
        if status.0 != OK {
            let detail = if r.error_op_id_count > 0 {
                // SAFETY: `error_op_id_count` ids, valid until the next wait.
                let id = unsafe { *r.error_op_ids };
                // SAFETY: live instance.
                view_text(unsafe { (self.vt.get_last_op_error.expect("slot"))(self.ctx, id) })
            } else {
                self.lib.last_error()
            };
            return Err(format!("wait_op({op}): status {}: {detail}", status.0));
        }
        // SAFETY: live instance; the op is complete.
        self.check("release_op", unsafe { (self.vt.release_op.expect("slot"))(self.ctx, op) })
    }

    /// Waits for `op` (blocking) and keeps it (not released).
    pub(crate) fn wait_kept(&self, op: u64) -> Result<()> {
        let mut r = ovstage_op_wait_result_t { error_op_ids: null(), error_op_id_count: 0, lowest_pending_op_id: 0 };
        // SAFETY: live instance, valid output.
        let status = unsafe { (self.vt.wait_op.expect("slot"))(self.ctx, op, INFINITE, &mut r) };
        match status.0 {
            OK => Ok(()),
            _ => Err(format!("wait_op({op}): status {}: {}", status.0, self.lib.last_error())),
        }
    }

    /// `wait_op(op, 0)` on a completed op that is kept (not released): the
    /// status alone.
    pub(crate) fn poll_status(&self, op: u64) -> u32 {
        let mut r = ovstage_op_wait_result_t { error_op_ids: null(), error_op_id_count: 0, lowest_pending_op_id: 0 };
        // SAFETY: live instance, valid output.
        unsafe { (self.vt.wait_op.expect("slot"))(self.ctx, op, 0, &mut r) }.0
    }

    /// Releases a completed op.
    pub(crate) fn release_op(&self, op: u64) -> Result<()> {
        // SAFETY: live instance.
        self.check("release_op", unsafe { (self.vt.release_op.expect("slot"))(self.ctx, op) })
    }

    /// Enqueues a write (client tensors, kept alive by the caller until the
    /// op completes); returns the op.
    pub(crate) fn write(&self, q: u64, attribute: u64, ordinal: u64, data: ovstage_write_data_t) -> Result<u64> {
        let attr = ovx_string_or_token_t { token: attribute, string: ovx_string_t::NONE };
        // SAFETY: live instance; the payload is valid until the op completes.
        let r = unsafe {
            (self.vt.write_attribute.expect("slot"))(self.ctx, q, attr, ordinal, data, ovstage_prim_mode_t(0))
        };
        self.enqueued("write_attribute", r)
    }

    /// Enqueues a global write-floor advance; returns the op.
    pub(crate) fn advance(&self, ordinal: u64) -> Result<u64> {
        let desc =
            ovstage_write_floor_desc_t { ordinal, scope: ovstage_scope_t(0), attributes: null(), attribute_count: 0 };
        // SAFETY: live instance, valid descriptor.
        self.enqueued("advance_write_floor", unsafe { (self.vt.advance_write_floor.expect("slot"))(self.ctx, &desc) })
    }

    /// Advances the global write floor and waits.
    pub(crate) fn seal(&self, ordinal: u64) -> Result<()> {
        let op = self.advance(ordinal)?;
        self.wait(op)
    }

    /// Reads `attributes` of `q` for `range`, fetches every group, releases
    /// them and the read.
    pub(crate) fn read(&self, q: u64, attributes: &[u64], range: ovstage_ordinal_range_t) -> Result<ReadStats> {
        let mut read = 0;
        // SAFETY: live instance; valid arrays and output.
        let r = unsafe {
            (self.vt.read_attributes.expect("slot"))(
                self.ctx,
                q,
                attributes.as_ptr(),
                attributes.len(),
                range,
                &mut read,
            )
        };
        let op = self.enqueued("read_attributes", r)?;
        let mut stats = ReadStats::default();
        loop {
            // SAFETY: an all-zero group is a valid output buffer.
            let mut g: ovstage_read_group_t = unsafe { std::mem::zeroed() };
            // SAFETY: live instance, valid output.
            let status = unsafe { (self.vt.fetch_read_next.expect("slot"))(self.ctx, read, INFINITE, &mut g) };
            if status.0 == END_OF_ITERATION {
                break;
            }
            self.check("fetch_read_next", status)?;
            stats.groups += 1;
            stats.rows += u64::from(g.prims.count);
            // SAFETY: live instance; a fetched group.
            self.check("release_group", unsafe { (self.vt.release_group.expect("slot"))(self.ctx, &g) })?;
        }
        self.wait(op)?;
        // SAFETY: live instance.
        let rel = self.enqueued("release_read", unsafe { (self.vt.release_read.expect("slot"))(self.ctx, read) })?;
        self.wait(rel)?;
        Ok(stats)
    }

    /// A filter query of the prims that have `attribute` (HAS); returns the
    /// query handle and its op.
    pub(crate) fn query_has(&self, attribute: u64) -> Result<(u64, u64)> {
        let pred = ovstage_predicate_t {
            attribute: ovx_string_or_token_t { token: attribute, string: ovx_string_t::NONE },
            op: ovstage_filter_op_t(0),
            values: null(),
            value_count: 0,
        };
        let filter = ovstage_filter_t { predicates: &pred, count: 1 };
        let mut q = 0;
        // SAFETY: live instance; valid filter and output.
        let r = unsafe { (self.vt.query.expect("slot"))(self.ctx, &filter, null(), 0, &mut q) };
        Ok((q, self.enqueued("query", r)?))
    }

    /// Fetches and releases a query's result; returns its prim count.
    pub(crate) fn query_result(&self, q: u64) -> Result<usize> {
        // SAFETY: an all-zero result is a valid output buffer.
        let mut r: ovstage_query_result_t = unsafe { std::mem::zeroed() };
        // SAFETY: live instance, valid output.
        self.check("fetch_query_result", unsafe {
            (self.vt.fetch_query_result.expect("slot"))(self.ctx, q, INFINITE, &mut r)
        })?;
        let n = r.total_prim_count;
        // SAFETY: live instance; a fetched result.
        self.check("release_query_result", unsafe { (self.vt.release_query_result.expect("slot"))(self.ctx, &r) })?;
        Ok(n)
    }

    /// Releases a query handle (and waits for the release).
    pub(crate) fn release_query(&self, q: u64) -> Result<()> {
        // SAFETY: live instance.
        let op = self.enqueued("release_query", unsafe { (self.vt.release_query.expect("slot"))(self.ctx, q) })?;
        self.wait(op)
    }

    /// A map session of `attribute` over `q` at `ordinal` (`dtype` zero:
    /// the existing schema); `fill` writes every group's tensors, then the
    /// session is committed and waited for.
    pub(crate) fn map(
        &self,
        q: u64,
        attribute: u64,
        dtype: DLDataType,
        ordinal: u64,
        element_sizes: Option<&[usize]>,
        mut fill: impl FnMut(&[DLTensor]),
    ) -> Result<()> {
        let desc = ovstage_map_desc_t {
            attribute: ovx_string_or_token_t { token: attribute, string: ovx_string_t::NONE },
            dtype,
            semantic: ovstage_attribute_semantic_t(0),
            prim_mode: ovstage_prim_mode_t(0),
            attribute_mode: ovstage_attribute_mode_t(0),
        };
        let (sizes, count) = element_sizes.map_or((null(), 0), |s| (s.as_ptr(), s.len()));
        let mut map = 0;
        // SAFETY: live instance; valid descriptor, sizes and output.
        let r = unsafe { (self.vt.map_attribute.expect("slot"))(self.ctx, q, &desc, ordinal, sizes, count, &mut map) };
        let setup = self.enqueued("map_attribute", r)?;
        loop {
            // SAFETY: an all-zero group is a valid output buffer.
            let mut g: ovstage_map_group_t = unsafe { std::mem::zeroed() };
            // SAFETY: live instance, valid output.
            let status = unsafe { (self.vt.fetch_map_next.expect("slot"))(self.ctx, map, INFINITE, &mut g) };
            if status.0 == END_OF_ITERATION {
                break;
            }
            self.check("fetch_map_next", status)?;
            let tensors = if g.data.tensor_count == 0 {
                &[][..]
            } else {
                // SAFETY: `tensor_count` writable tensors until the commit.
                unsafe { std::slice::from_raw_parts(g.data.tensors, g.data.tensor_count as usize) }
            };
            fill(tensors);
        }
        self.wait(setup)?;
        // SAFETY: live instance.
        let commit = unsafe { (self.vt.unmap_attribute.expect("slot"))(self.ctx, map, ovstage_cuda_sync_t::default()) };
        let op = self.enqueued("unmap_attribute", commit)?;
        self.wait(op)
    }

    /// Enqueues an ordinal query of the oldest preserved ordinal (an op
    /// with no payload); returns (handle, op).
    pub(crate) fn oldest_preserved(&self) -> Result<(u64, u64)> {
        let mut h = 0;
        // SAFETY: live instance, valid output.
        let r = unsafe { (self.vt.get_oldest_preserved_ordinal.expect("slot"))(self.ctx, &mut h) };
        Ok((h, self.enqueued("get_oldest_preserved_ordinal", r)?))
    }

    /// Releases an ordinal query handle (and waits for the release).
    pub(crate) fn release_ordinal_query(&self, h: u64) -> Result<()> {
        // SAFETY: live instance.
        let op = self.enqueued("release_ordinal_query", unsafe {
            (self.vt.release_ordinal_query.expect("slot"))(self.ctx, h)
        })?;
        self.wait(op)
    }
}

impl Drop for Stage<'_> {
    fn drop(&mut self) {
        // SAFETY: the instance was created by `new` and is destroyed once.
        let _ = unsafe { (self.lib.destroy)(self.inst) };
    }
}

/// A query's paths: `/World/Env/P{i}` for `i` in `range`.
pub(crate) fn prim_paths(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("/World/Env/P{i}")).collect()
}

/// A mask selecting every `stride`-th of `n` elements.
pub(crate) fn every(n: usize, stride: usize) -> Vec<u64> {
    let mut bits = vec![0u64; n.div_ceil(64)];
    for i in (0..n).step_by(stride) {
        bits[i / 64] |= 1 << (i % 64);
    }
    bits
}

/// Checks a drained read saw what a workload expects.
pub(crate) fn expect_rows(what: &str, got: ReadStats, rows: u64) -> Result<()> {
    if got.rows == rows {
        Ok(())
    } else {
        Err(format!("{what}: read {} rows in {} groups, expected {rows}", got.rows, got.groups))
    }
}
