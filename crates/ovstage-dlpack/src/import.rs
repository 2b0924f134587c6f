//! DLPack inputs of writes: validation (device, dtype, ndim, shape,
//! strides, byte offset) and conversion into stage tensors without copying
//! compact payloads.
//!
//! Ownership of managed tensors passes to the library when they are taken
//! over: every distinct pointer is wrapped in one [`Managed`] owner before
//! anything is validated ([`Takeover`]), so its deleter runs exactly once,
//! when the last tensor reading it is dropped or at once when the call is
//! rejected.
//!
//! Sizes are checked before use: the shape's byte size with checked
//! arithmetic (at most `isize::MAX`), a strided tensor's reach with
//! `check_extent` before it is gathered, the rows gathered against what
//! the write can use ([`RowBound`]), and the gather buffer allocated
//! fallibly (`OUT_OF_MEMORY`, never an abort).

use std::collections::HashSet;
use std::fmt::Display;
use std::sync::Arc;

use ovstage::{ArrayRows, HostBytes, HostRows, Tensor};
use ovstage_abi::dlpack::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use ovstage_types::{DType, DTypeCode, Error, Result, Status};
use smallvec::SmallVec;

use crate::device::{Residency, residency};
pub use ovstage_backend_cuda::staging::CudaSync;
use ovstage_backend_cuda::staging::{DeviceBytes, HostCopy, stage_batch};

/// More dimensions than any attribute payload has.
pub const MAX_NDIM: i32 = 16;

/// The two forms of a managed tensor.
#[derive(Debug)]
enum Raw {
    Versioned(*mut DLManagedTensorVersioned),
    Legacy(*mut DLManagedTensor),
}

/// Owner of a managed tensor handed to the library: calls its deleter
/// exactly once, when dropped.
#[derive(Debug)]
pub struct Managed(Raw);

// SAFETY: ownership of the managed tensor passed to us; DLPack lets the
// consumer call the deleter from any thread, and its payload is only read.
unsafe impl Send for Managed {}
// SAFETY: shared access only reads the tensor's descriptor and payload.
unsafe impl Sync for Managed {}

impl Managed {
    /// Takes ownership of a versioned (DLPack 1.x) managed tensor; `None`
    /// for NULL.
    ///
    /// # Safety
    /// A non-NULL `ptr` is a valid managed tensor whose ownership the
    /// caller gives up: nothing else calls its deleter, and its descriptor
    /// and payload stay valid until the deleter runs.
    pub unsafe fn from_versioned(ptr: *mut DLManagedTensorVersioned) -> Option<Managed> {
        if ptr.is_null() { None } else { Some(Managed(Raw::Versioned(ptr))) }
    }

    /// Takes ownership of a legacy (unversioned) managed tensor; `None` for
    /// NULL.
    ///
    /// # Safety
    /// As for [`Managed::from_versioned`].
    pub unsafe fn from_legacy(ptr: *mut DLManagedTensor) -> Option<Managed> {
        if ptr.is_null() { None } else { Some(Managed(Raw::Legacy(ptr))) }
    }

    /// The tensor's descriptor.
    pub fn tensor(&self) -> &DLTensor {
        match self.0 {
            // SAFETY: the pointer was non-NULL when wrapped and stays valid
            // until our deleter call in `drop`.
            Raw::Versioned(p) => unsafe { &(*p).dl_tensor },
            // SAFETY: as above.
            Raw::Legacy(p) => unsafe { &(*p).dl_tensor },
        }
    }

    /// The versioned tensor's flags (none for a legacy tensor).
    pub fn flags(&self) -> crate::Flags {
        match self.0 {
            // SAFETY: as in `tensor`.
            Raw::Versioned(p) => crate::Flags::from_bits_retain(unsafe { (*p).flags }),
            Raw::Legacy(_) => crate::Flags::empty(),
        }
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        match self.0 {
            Raw::Versioned(p) => {
                // SAFETY: valid until its deleter runs, which happens only here.
                if let Some(deleter) = unsafe { (*p).deleter } {
                    // SAFETY: DLPack's contract: the consumer calls the
                    // deleter once with the tensor itself.
                    unsafe { deleter(p) };
                }
            }
            Raw::Legacy(p) => {
                // SAFETY: as above.
                if let Some(deleter) = unsafe { (*p).deleter } {
                    // SAFETY: as above.
                    unsafe { deleter(p) };
                }
            }
        }
    }
}

/// Takes over the managed tensors of one call (one or more lists, as a
/// batch of writes has): one owner per distinct pointer. NULL entries, and
/// a pointer listed twice, are errors reported by [`Takeover::finish`],
/// after every other tensor has been taken over (so each is still released
/// exactly once: a repeated pointer is owned by its first entry only).
#[derive(Debug, Default)]
pub struct Takeover {
    seen: HashSet<usize>,
    problem: Option<Error>,
}

impl Takeover {
    /// An empty takeover.
    pub fn new() -> Takeover {
        Takeover::default()
    }

    /// Takes over the tensors of one list, named `{what}: managed_tensors`
    /// in messages; returns the owners of the entries that are neither NULL
    /// nor repeated.
    ///
    /// # Safety
    /// Each non-NULL entry is a valid managed tensor whose ownership the
    /// caller gives up (see [`Managed::from_versioned`]).
    pub unsafe fn take(&mut self, ptrs: &[*const DLManagedTensorVersioned], what: impl Display) -> Vec<Arc<Managed>> {
        let mut taken = Vec::with_capacity(ptrs.len());
        for (i, p) in ptrs.iter().enumerate() {
            if p.is_null() {
                self.problem
                    .get_or_insert_with(|| Error::invalid_argument(format!("{what}: managed_tensors[{i}] is NULL")));
                continue;
            }
            if !self.seen.insert(*p as usize) {
                self.problem.get_or_insert_with(|| {
                    Error::invalid_argument(format!(
                        "{what}: managed_tensors[{i}] is a DLManagedTensorVersioned already given in this call"
                    ))
                });
                continue;
            }
            // SAFETY: non-NULL, and ours per the caller.
            taken.extend(unsafe { Managed::from_versioned(p.cast_mut()) }.map(Arc::new));
        }
        taken
    }

    /// The first problem met, if any.
    pub fn finish(self) -> Result<()> {
        self.problem.map_or(Ok(()), Err)
    }
}

/// The payload bytes of an input tensor, read in place.
struct Payload {
    ptr: *const u8,
    len: usize,
    /// The managed tensor the bytes belong to (kept alive with them); `None`
    /// for a client-managed tensor.
    _owner: Option<Arc<Managed>>,
}

// SAFETY: a managed payload stays valid until its owner's deleter runs,
// which cannot happen while this holds the owner. A client-managed payload
// stays valid and unchanged until its op completes (the contract), and the
// stage reads a write's payload only while the op runs (it copies what it
// keeps). Either way the bytes are only read.
unsafe impl Send for Payload {}
// SAFETY: as above.
unsafe impl Sync for Payload {}

impl HostBytes for Payload {
    fn host_bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `len` readable bytes at `ptr` (checked non-NULL when built)
        // while the payload is alive; see the `Send` impl.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A validated tensor descriptor: where its first element is, its
/// element type and shape, and whether its elements are packed.
struct Checked {
    /// In host memory: the tensor's own, or its staged copy's. On a device
    /// until [`stage_all`] points it into the copy.
    first: *const u8,
    bytes_at: BytesAt,
    dtype: DType,
    /// `shape[..ndim]` is the shape.
    dims: [u64; MAX_NDIM as usize],
    ndim: usize,
    /// Whether the strides are not the compact row-major ones.
    strided: bool,
    bytes: usize,
}

/// Where a checked tensor's bytes are.
enum BytesAt {
    /// Host memory, read in place.
    Host,
    /// A CUDA tensor's extent, not yet staged.
    Device(OnDevice),
    /// The host copy of a CUDA tensor's extent.
    Staged(Staged),
}

impl BytesAt {
    fn on_device(&self) -> bool {
        matches!(self, BytesAt::Device(_))
    }
}

/// A CUDA tensor's byte extent on its device.
struct OnDevice {
    device: u32,
    /// The extent's first byte.
    src: u64,
    len: usize,
    /// Where the tensor's first element lies in the extent (0 unless
    /// negative strides reach below it), negated.
    low: i64,
}

/// A staged tensor's bytes: its extent in a batch's host copy, which it
/// keeps alive (the copy may still be running: see [`HostBytes::ready`]),
/// with the managed tensor it is copied from, which lives until the copy
/// is no longer needed.
struct Staged {
    copy: Arc<HostCopy>,
    offset: usize,
    len: usize,
    _owner: Option<Arc<Managed>>,
}

impl HostBytes for Staged {
    fn host_bytes(&self) -> &[u8] {
        self.copy.bytes(self.offset, self.len).expect("a staged extent lies within its batch")
    }

    fn len(&self) -> usize {
        self.len
    }

    fn ready(&self) -> Result<(), String> {
        self.copy.wait().map_err(|e| copy_failed(&self.copy, &e))
    }

    fn arriving(&self) -> bool {
        true
    }
}

/// Why a batch's copies did not arrive, for the op that waited for them.
fn copy_failed(copy: &HostCopy, e: &ovstage_backend_cuda::staging::StageError) -> String {
    format!("copying the write's CUDA tensors to the host ({} bytes) failed: {e}", copy.len())
}

impl Checked {
    fn shape(&self) -> &[u64] {
        &self.dims[..self.ndim]
    }

    /// Keeps only the first `rows` rows (the leading dimension), for a
    /// strided payload of which no later row can be used.
    fn truncate_rows(&mut self, rows: u64) {
        if self.ndim > 0 && rows < self.dims[0] {
            let element = self.dtype.element_bytes().expect("checked");
            self.bytes = (self.dims[1..self.ndim].iter().product::<u64>() * rows) as usize * element;
            self.dims[0] = rows;
        }
    }
}

/// How many leading rows of a strided payload a write can use, so that a
/// broadcast (zero-stride) tensor is never expanded past them.
#[derive(Copy, Clone, Debug)]
pub enum RowBound {
    /// Unknown (the query is not resolved yet, or an array payload).
    Any,
    /// A fixed-size payload without an index map: one row per addressed
    /// prim, so more rows than the query's prims is an error.
    Prims(u64),
    /// A fixed-size payload with an index map: rows past its highest entry
    /// are never read.
    Used(u64),
}

/// Names an input tensor in messages (`{what}: {list}[{index}]`); formatted
/// only when a message is needed, not once per tensor.
#[derive(Copy, Clone)]
struct Named<'a> {
    what: &'a dyn Display,
    list: &'static str,
    index: usize,
}

impl Display for Named<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}[{}]", self.what, self.list, self.index)
    }
}

/// The shape array of a descriptor: NULL is fine only when `ndim` is 0.
///
/// # Safety
/// A non-NULL `ptr` has `ndim` readable entries; `ndim` was checked to be
/// at most [`MAX_NDIM`].
unsafe fn shape_of<'a>(ptr: *const i64, ndim: usize, what: impl Display) -> Result<&'a [i64]> {
    if ndim == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Error::invalid_argument(format!("{what}: shape is NULL but its count is {ndim}")));
    }
    // SAFETY: non-NULL with `ndim` (at most `MAX_NDIM`) entries, per the
    // caller.
    Ok(unsafe { std::slice::from_raw_parts(ptr, ndim) })
}

/// `NOT_SUPPORTED` when `sync` is set for a tensor in host memory (`what`
/// names it): `cuda_sync` orders a copy out of device memory, and a host
/// tensor has none. The bindings give a host payload that is not a
/// `DLTensor` (a numpy array) the same answer.
pub fn refuse_host_sync(sync: CudaSync, what: impl Display) -> Result<()> {
    if sync.is_set() {
        return Err(Error::not_supported(format!(
            "{what}: cuda_sync is set, but the tensor is host memory: cuda_sync is only honoured for CUDA tensors"
        )));
    }
    Ok(())
}

/// Checks a tensor descriptor; `what` names it in errors. A CUDA tensor's
/// extent is noted for [`stage_all`]; `sync` on a host tensor is refused.
///
/// # Safety
/// `t.shape` and `t.strides`, when not NULL, have `t.ndim` readable entries;
/// a CUDA tensor's extent is readable on its device, and `sync`'s handles
/// are live.
unsafe fn check(t: &DLTensor, sync: CudaSync, what: impl Display + Copy) -> Result<Checked> {
    let place = residency(t.device, what)?;
    if place == Residency::Host {
        refuse_host_sync(sync, what)?;
    }
    let code = DTypeCode::from_raw(t.dtype.code).ok_or_else(|| {
        Error::invalid_argument(format!("{what}: dtype code {} is not a DLPack type code", t.dtype.code))
    })?;
    let dtype = DType::new(code, t.dtype.bits, t.dtype.lanes);
    let element = dtype.element_bytes().ok_or_else(|| {
        Error::invalid_argument(format!(
            "{what}: dtype {{code {}, bits {}, lanes {}}} has no whole-byte element size",
            t.dtype.code, t.dtype.bits, t.dtype.lanes
        ))
    })?;
    if !(0..=MAX_NDIM).contains(&t.ndim) {
        return Err(Error::invalid_argument(format!("{what}: ndim {} is not between 0 and {MAX_NDIM}", t.ndim)));
    }
    let ndim = t.ndim as usize;
    // SAFETY: `ndim` entries when not NULL, per the caller.
    let shape = unsafe { shape_of(t.shape.cast_const(), ndim, what) }?;
    if let Some((i, d)) = shape.iter().enumerate().find(|(_, d)| **d < 0) {
        return Err(Error::invalid_argument(format!("{what}: shape[{i}] is negative ({d})")));
    }
    let mut dims = [0u64; MAX_NDIM as usize];
    for (out, d) in dims.iter_mut().zip(shape) {
        *out = *d as u64;
    }
    let count = dims[..ndim].iter().try_fold(1u64, |acc, d| acc.checked_mul(*d));
    let bytes = count
        .and_then(|c| c.checked_mul(element as u64))
        .filter(|b| *b <= isize::MAX as u64)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| Error::invalid_argument(format!("{what}: shape {:?} is too large", &dims[..ndim])))?;
    // The byte extent the tensor's elements span around its first element
    // (compact: exactly its bytes).
    let mut extent = (0i64, bytes as i64);
    let strided = if t.strides.is_null() || bytes == 0 {
        false
    } else {
        // SAFETY: `ndim` entries, per the caller.
        let strides = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
        let compact = row_major(dims[..ndim].iter().copied(), strides);
        if !compact {
            extent = check_extent(&dims[..ndim], strides, element, what)?;
        }
        !compact
    };
    if t.data.is_null() && bytes > 0 {
        return Err(Error::invalid_argument(format!("{what}: data is NULL but the tensor holds {bytes} bytes")));
    }
    let first = (t.data as *const u8).wrapping_add(t.byte_offset as usize);
    let bytes_at = match place {
        Residency::Cuda(device) => BytesAt::Device(OnDevice {
            device,
            src: (first as u64).wrapping_add_signed(extent.0),
            len: (extent.1 - extent.0) as usize,
            low: extent.0,
        }),
        Residency::Host => BytesAt::Host,
    };
    Ok(Checked { first, bytes_at, dtype, dims, ndim, strided, bytes })
}

/// Copies the extents of `pending`'s CUDA tensors (each named by its
/// second field in errors) into one host buffer, after the work `sync`
/// names, in one batch (see `ovstage_backend_cuda::staging`), and points
/// each at its copy.
///
/// # Safety
/// As for [`check`], which each tensor passed.
unsafe fn stage_all(pending: &mut [(&mut Checked, &dyn Display)], sync: CudaSync) -> Result<()> {
    let extent = |c: &Checked| match &c.bytes_at {
        BytesAt::Device(d) => DeviceBytes { device: d.device, src: d.src, len: d.len },
        _ => unreachable!("only tensors on a device are staged"),
    };
    let copies: Vec<DeviceBytes> = pending.iter().map(|(c, _)| extent(c)).collect();
    // SAFETY: each extent is its tensor's, readable on its device per the
    // caller, as are `sync`'s handles.
    let (host, offsets) = unsafe { stage_batch(&copies, sync) }.map_err(|e| {
        let (what, copy) = (pending[e.copy].1, copies[e.copy]);
        let status = if e.error.is_out_of_memory() { Status::OutOfMemory } else { Status::InvalidArgument };
        Error::new(
            status,
            format!("{what}: copying {} bytes from CUDA device {} failed: {}", copy.len, copy.device, e.error),
        )
    })?;
    let host = Arc::new(host);
    for ((c, _), offset) in pending.iter_mut().zip(offsets) {
        let (low, len) = match &c.bytes_at {
            BytesAt::Device(d) => (d.low, d.len),
            _ => unreachable!("only tensors on a device are staged"),
        };
        c.first = host.as_ptr().wrapping_add(offset).wrapping_offset(-low as isize);
        c.bytes_at = BytesAt::Staged(Staged { copy: host.clone(), offset, len, _owner: None });
    }
    Ok(())
}

/// Whether `strides` (in elements) are the compact row-major ones for the
/// extents `dims`; a dimension of extent 0 or 1 may have any stride.
pub fn row_major(dims: impl DoubleEndedIterator<Item = u64> + ExactSizeIterator, strides: &[i64]) -> bool {
    let mut expect = 1i64;
    for (d, s) in dims.zip(strides).rev() {
        if d > 1 && *s != expect {
            return false;
        }
        expect = expect.saturating_mul(d as i64);
    }
    true
}

/// Checks that the byte offsets a strided tensor's shape and strides
/// address, relative to its first element, are representable, and returns
/// them as a byte range around the first element: the lowest
/// (every negative stride at its last index) and the highest (every
/// positive one) fit in an `isize`. Every offset `gather` computes lies
/// between them.
fn check_extent(dims: &[u64], strides: &[i64], element: usize, what: impl Display) -> Result<(i64, i64)> {
    let (mut low, mut high) = (0i64, 0i64);
    for (d, s) in dims.iter().zip(strides) {
        let reach = i64::try_from(d.saturating_sub(1)).ok().and_then(|last| last.checked_mul(*s));
        let fits = match reach {
            Some(r) if r < 0 => low.checked_add(r).map(|l| low = l).is_some(),
            Some(r) => high.checked_add(r).map(|h| high = h).is_some(),
            None => false,
        };
        if !fits {
            return Err(Error::invalid_argument(format!(
                "{what}: shape {dims:?} with strides {strides:?} addresses elements beyond the address space"
            )));
        }
    }
    let element = element as i64;
    let bytes = low
        .checked_mul(element)
        .filter(|l| isize::try_from(*l).is_ok())
        .zip(high.checked_add(1).and_then(|h| h.checked_mul(element)).filter(|h| isize::try_from(*h).is_ok()));
    bytes.ok_or_else(|| {
        Error::invalid_argument(format!(
            "{what}: shape {dims:?} with strides {strides:?} addresses bytes beyond the address space"
        ))
    })
}

/// Copies a strided tensor's elements into row-major order, into a buffer
/// allocated fallibly (its size is the client's choice).
///
/// # Safety
/// Every element the shape and strides address is readable; `strides`
/// has `ndim` entries and passed [`check_extent`].
unsafe fn gather(c: &Checked, strides: *const i64, what: impl Display) -> Result<Vec<u8>> {
    // SAFETY: `ndim` entries, per the caller.
    let strides = unsafe { std::slice::from_raw_parts(strides, c.ndim) };
    let element = c.dtype.element_bytes().expect("checked");
    let mut out = Vec::new();
    out.try_reserve_exact(c.bytes).map_err(|_| {
        Error::new(
            Status::OutOfMemory,
            format!("{what}: could not allocate {} bytes to gather the strided tensor", c.bytes),
        )
    })?;
    if c.bytes == 0 {
        return Ok(out);
    }
    let shape = c.shape();
    // The innermost dimension is copied as one run when its elements are
    // adjacent, one element at a time otherwise.
    let (inner, inner_stride) = (shape[c.ndim - 1] as usize, strides[c.ndim - 1]);
    let run = (inner_stride == 1).then_some(inner * element);
    let mut index = vec![0u64; c.ndim];
    while out.len() < c.bytes {
        // Within the extent `check_extent` accepted: no overflow.
        let base: i64 = index.iter().zip(strides).map(|(i, s)| *i as i64 * s).sum();
        let at = c.first.wrapping_offset(base as isize * element as isize);
        match run {
            // SAFETY: the run of `inner` elements at `index` is readable
            // per the caller.
            Some(len) => out.extend_from_slice(unsafe { std::slice::from_raw_parts(at, len) }),
            None => {
                for k in 0..inner {
                    let e = at.wrapping_offset(k as isize * inner_stride as isize * element as isize);
                    // SAFETY: element `k` of the run at `index` is readable
                    // per the caller.
                    out.extend_from_slice(unsafe { std::slice::from_raw_parts(e, element) });
                }
            }
        }
        for d in (0..c.ndim - 1).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Ok(out)
}

/// A stage tensor over an input tensor, zero-copy when compact. A strided
/// payload is gathered now, once its shape has passed every check that
/// needs no copy: rows that fold (see [`Tensor::row_shape`]) and, when
/// known, no more rows than the write can use.
/// `owner` is the managed tensor `t` belongs to; `bound` is asked only for
/// a strided payload.
///
/// # Safety
/// The tensor's descriptor and payload are valid as the contract requires
/// (client tensors until their op completes; managed ones while `owner`
/// lives).
pub unsafe fn tensor(
    t: &DLTensor,
    owner: Option<&Arc<Managed>>,
    bound: &dyn Fn() -> RowBound,
    sync: CudaSync,
    what: impl Display + Copy,
) -> Result<Tensor> {
    // SAFETY: forwarded.
    let mut c = unsafe { check(t, sync, what) }?;
    if c.bytes_at.on_device() {
        // SAFETY: forwarded.
        unsafe { stage_all(&mut [(&mut c, &what)], sync) }?;
    }
    // SAFETY: forwarded; staged when on a device.
    unsafe { finish(c, t, owner, bound, what) }
}

/// The stage tensor of a checked (and, on a device, staged) tensor.
///
/// # Safety
/// As for [`tensor`]; `c` is `t`'s, and staged when `t` is on a device.
unsafe fn finish(
    mut c: Checked,
    t: &DLTensor,
    owner: Option<&Arc<Managed>>,
    bound: &dyn Fn() -> RowBound,
    what: impl Display + Copy,
) -> Result<Tensor> {
    if c.strided {
        // SAFETY: forwarded; `check` saw non-NULL strides (of a staged
        // tensor: relative to its host copy, which `c` holds and which is
        // waited for).
        let bytes = unsafe { gather_checked(&mut c, t.strides, bound(), what) }?;
        return Tensor::new(bytes, c.dtype, c.shape());
    }
    if let BytesAt::Staged(mut staged) = std::mem::replace(&mut c.bytes_at, BytesAt::Host) {
        // Compact: the host copy is exactly the tensor's bytes, maybe still
        // arriving; the managed source lives as long.
        staged._owner = owner.cloned();
        return Tensor::new(staged, c.dtype, c.shape());
    }
    Tensor::new(Payload { ptr: c.first, len: c.bytes, _owner: owner.cloned() }, c.dtype, c.shape())
}

/// Checks a strided payload's shape against what the write can use, then
/// gathers it.
///
/// # Safety
/// As for [`gather`].
unsafe fn gather_checked(
    c: &mut Checked,
    strides: *const i64,
    bound: RowBound,
    what: impl Display + Copy,
) -> Result<Vec<u8>> {
    let (rows, _) = Tensor::row_shape(c.dtype, c.shape())
        .map_err(|e| Error::new(e.status(), format!("{what}: {}", e.message())))?;
    if let BytesAt::Staged(staged) = &c.bytes_at {
        // The gather reads the host copy: wait for it.
        staged.copy.wait().map_err(|e| {
            let status = if e.is_out_of_memory() { Status::OutOfMemory } else { Status::InvalidArgument };
            Error::new(status, format!("{what}: {}", copy_failed(&staged.copy, &e)))
        })?;
    }
    match bound {
        RowBound::Prims(prims) if rows > prims => {
            return Err(Error::invalid_argument(format!(
                "{what}: the tensor has {rows} rows but the write addresses at most {prims} prims (one row per prim without an index_map)"
            )));
        }
        RowBound::Used(used) => c.truncate_rows(used),
        _ => {}
    }
    // SAFETY: forwarded.
    unsafe { gather(c, strides, what) }
}

/// The rows of a per-row array payload, read in place: one byte range per
/// row (compact rows in the caller's memory, strided ones gathered at
/// enqueue), with the managed tensors they belong to.
struct RowSpans {
    spans: Vec<(*const u8, usize)>,
    /// Gathered copies of strided rows (spans point into their heap
    /// buffers, which do not move).
    _gathered: Vec<Vec<u8>>,
    /// The host copy of the rows that were on a device.
    _staged: Option<Arc<HostCopy>>,
    _owners: Vec<Arc<Managed>>,
}

// SAFETY: as for `Payload`: client rows stay valid and unchanged until the
// op completes and managed rows until their owners (held here) are
// dropped; the bytes are only read.
unsafe impl Send for RowSpans {}
// SAFETY: as above.
unsafe impl Sync for RowSpans {}

impl HostRows for RowSpans {
    fn row_count(&self) -> usize {
        self.spans.len()
    }

    fn row_len(&self, i: usize) -> usize {
        self.spans[i].1
    }

    fn ready(&self) -> Result<(), String> {
        self._staged.as_ref().map_or(Ok(()), |s| s.wait().map_err(|e| copy_failed(s, &e)))
    }

    fn row_bytes(&self, i: usize) -> &[u8] {
        let (ptr, len) = self.spans[i];
        if len == 0 {
            return &[];
        }
        if let Some(s) = &self._staged {
            // Rows copied from a device may still be arriving.
            let _ = s.wait();
        }
        // SAFETY: `len` readable bytes at `ptr` (non-NULL when `len` > 0,
        // checked) while this is alive; see the `Send` impl.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// The input tensors of a write: client descriptors, or managed tensors
/// taken over at call entry.
#[derive(Copy, Clone, Debug)]
pub enum Inputs<'a> {
    /// Tensors the client keeps valid until the op completes.
    Client(&'a [DLTensor]),
    /// Managed tensors the library owns.
    Managed(&'a [Arc<Managed>]),
}

impl<'a> Inputs<'a> {
    /// Number of tensors.
    pub fn len(self) -> usize {
        match self {
            Inputs::Client(t) => t.len(),
            Inputs::Managed(m) => m.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Tensor `i`, its owner and its name in messages.
    fn get(self, i: usize, what: &'a dyn Display) -> (&'a DLTensor, Option<&'a Arc<Managed>>, Named<'a>) {
        match self {
            Inputs::Client(t) => (&t[i], None, Named { what, list: "tensors", index: i }),
            Inputs::Managed(m) => (m[i].tensor(), Some(&m[i]), Named { what, list: "managed_tensors", index: i }),
        }
    }
}

/// One stage tensor per input (one inline: the usual payload allocates no
/// list), named `{what}: tensors[i]` (or
/// `managed_tensors[i]`) in messages.
///
/// # Safety
/// As for [`tensor`].
pub unsafe fn tensors(
    inputs: Inputs<'_>,
    bound: &dyn Fn() -> RowBound,
    sync: CudaSync,
    what: &dyn Display,
) -> Result<SmallVec<[Tensor; 1]>> {
    if inputs.len() == 1 {
        // The usual payload: one tensor, without the lists and the
        // collect below (about 500 instructions of a small write).
        let (t, owner, name) = inputs.get(0, what);
        // SAFETY: forwarded.
        let mut c = unsafe { check(t, sync, name) }?;
        if c.bytes_at.on_device() {
            // SAFETY: forwarded.
            unsafe { stage_all(&mut [(&mut c, &name as &dyn Display)], sync) }?;
        }
        // SAFETY: forwarded; staged above when on a device.
        let tensor = unsafe { finish(c, t, owner, bound, name) }?;
        let mut one = SmallVec::new();
        one.push(tensor);
        return Ok(one);
    }
    let mut checked: SmallVec<[Checked; 1]> = SmallVec::with_capacity(inputs.len());
    for i in 0..inputs.len() {
        let (t, _, name) = inputs.get(i, what);
        // SAFETY: forwarded.
        checked.push(unsafe { check(t, sync, name) }?);
    }
    if checked.iter().any(|c| c.bytes_at.on_device()) {
        // Every CUDA tensor of the write in one batch.
        let names: SmallVec<[Named<'_>; 1]> = (0..inputs.len()).map(|i| inputs.get(i, what).2).collect();
        let mut pending: Vec<(&mut Checked, &dyn Display)> = checked
            .iter_mut()
            .zip(&names)
            .filter(|(c, _)| c.bytes_at.on_device())
            .map(|(c, n)| (c, n as &dyn Display))
            .collect();
        // SAFETY: forwarded.
        unsafe { stage_all(&mut pending, sync) }?;
    }
    checked
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let (t, owner, name) = inputs.get(i, what);
            // SAFETY: forwarded; staged above when on a device.
            unsafe { finish(c, t, owner, bound, name) }
        })
        .collect()
}

/// The rows of a per-row array payload, described without a tensor per
/// row; `owners` are kept alive with the rows.
///
/// # Safety
/// As for [`tensor`].
pub unsafe fn array_rows(
    inputs: Inputs<'_>,
    owners: Vec<Arc<Managed>>,
    sync: CudaSync,
    what: &dyn Display,
) -> Result<ArrayRows> {
    let n = inputs.len();
    let mut rows = ArrayRows::builder(n);
    let mut spans = Vec::with_capacity(n);
    let mut gathered: Vec<Vec<u8>> = Vec::new();
    let mut like: Option<LikePrevious<'_>> = None;
    // Rows on a device (their index and checked descriptor), staged in one
    // batch once every row is checked; their spans are filled in then.
    let mut on_device: Vec<(usize, Checked)> = Vec::new();
    for i in 0..n {
        let (t, _, name) = inputs.get(i, what);
        // SAFETY: forwarded.
        if let Some((first, bytes)) = like.as_ref().and_then(|l| unsafe { l.span(t) }) {
            spans.push((first, bytes));
            rows.push_like_last(bytes as u64)?;
            continue;
        }
        // SAFETY: forwarded.
        let mut c = unsafe { check(t, sync, name) }?;
        rows.push(c.dtype, c.shape()).map_err(|e| Error::new(e.status(), format!("{name}: {}", e.message())))?;
        if c.bytes_at.on_device() {
            spans.push((std::ptr::null(), 0));
            on_device.push((i, c));
            like = None;
        } else if c.strided {
            // SAFETY: forwarded; `check` saw non-NULL strides.
            let copy = unsafe { gather_checked(&mut c, t.strides, RowBound::Any, name) }?;
            spans.push((copy.as_ptr(), copy.len()));
            gathered.push(copy);
            like = None;
        } else {
            spans.push((c.first, c.bytes));
            // SAFETY: forwarded.
            like = unsafe { LikePrevious::of(t, &c) };
        }
    }
    let mut staged = None;
    if !on_device.is_empty() {
        let names: Vec<Named<'_>> = on_device.iter().map(|(i, _)| inputs.get(*i, what).2).collect();
        let mut pending: Vec<(&mut Checked, &dyn Display)> =
            on_device.iter_mut().zip(&names).map(|((_, c), n)| (c, n as &dyn Display)).collect();
        // SAFETY: forwarded.
        unsafe { stage_all(&mut pending, sync) }?;
        for (i, c) in &mut on_device {
            let (t, _, name) = inputs.get(*i, what);
            spans[*i] = if c.strided {
                // SAFETY: forwarded; `check` saw non-NULL strides, now
                // relative to the row's host copy.
                let copy = unsafe { gather_checked(c, t.strides, RowBound::Any, name) }?;
                let span = (copy.as_ptr(), copy.len());
                gathered.push(copy);
                span
            } else {
                (c.first, c.bytes)
            };
            if let BytesAt::Staged(s) = &c.bytes_at {
                staged = Some(s.copy.clone());
            }
        }
    }
    rows.over(RowSpans { spans, _gathered: gathered, _staged: staged, _owners: owners })
}

/// A compact tensor that passed [`check`]: a later one with the same
/// device, dtype, dimension count and trailing dimensions needs only its
/// leading dimension, strides and data pointer looked at. Per-row array
/// payloads are runs of such tensors (one per prim).
struct LikePrevious<'a> {
    tensor: &'a DLTensor,
    /// Its dimensions after the first.
    trailing: &'a [i64],
    /// Bytes per index of the leading dimension.
    row_bytes: u64,
}

impl<'a> LikePrevious<'a> {
    /// # Safety
    /// As for [`check`], which `c` is the result of for `t`.
    unsafe fn of(t: &'a DLTensor, c: &Checked) -> Option<LikePrevious<'a>> {
        if c.ndim == 0 {
            return None;
        }
        // SAFETY: `check` saw `ndim` entries at a non-NULL `shape`.
        let shape = unsafe { std::slice::from_raw_parts(t.shape.cast_const(), c.ndim) };
        let element = c.dtype.element_bytes()? as u64;
        let row_bytes = c.dims[1..c.ndim].iter().try_fold(element, |acc, d| acc.checked_mul(*d))?;
        Some(LikePrevious { tensor: t, trailing: &shape[1..], row_bytes })
    }

    /// Where `t`'s bytes start and how many there are, when `t` is compact
    /// and like the previous tensor; `None` sends it through [`check`],
    /// which decides everything else (errors included).
    ///
    /// # Safety
    /// As for [`check`].
    unsafe fn span(&self, t: &DLTensor) -> Option<(*const u8, usize)> {
        let p = self.tensor;
        if t.ndim != p.ndim || t.dtype != p.dtype || t.device != p.device || t.shape.is_null() {
            return None;
        }
        // SAFETY: `ndim` (checked when the previous tensor was) entries at
        // a non-NULL `shape`, per the caller.
        let shape = unsafe { std::slice::from_raw_parts(t.shape.cast_const(), t.ndim as usize) };
        let (&lead, trailing) = shape.split_first()?;
        if lead < 0 || trailing != self.trailing {
            return None;
        }
        let bytes = (lead as u64).checked_mul(self.row_bytes).filter(|b| *b <= isize::MAX as u64)? as usize;
        if bytes > 0 && !t.strides.is_null() {
            // SAFETY: `ndim` entries, per the caller.
            let strides = unsafe { std::slice::from_raw_parts(t.strides, shape.len()) };
            // (Every extent is non-negative: the lead was checked above,
            // the rest equal the previous tensor's.)
            if !row_major(shape.iter().map(|d| *d as u64), strides) {
                return None;
            }
        }
        if t.data.is_null() && bytes > 0 {
            return None;
        }
        Some(((t.data as *const u8).wrapping_add(t.byte_offset as usize), bytes))
    }
}
