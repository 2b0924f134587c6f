//! Device bytes brought to the host (phase 1 of the design): the enqueue of
//! a write from CUDA tensors queues the copy of their bytes into host
//! memory on a stream of ours, after exactly the work the caller's
//! `cuda_sync` names, and an event after the copies; the write's op waits
//! for that event when it runs, then runs as a write from host memory. So
//! the enqueue waits for nothing on the device, and the sources are no
//! longer read once the op has run.
//!
//! One call stages every CUDA tensor of a write as one batch: one capture
//! of `cuda_sync` and one completing event per device, however many tensors
//! (a per-row array payload is a tensor per prim). The bytes land in
//! page-locked memory from a pool (see `driven::pool`), which the driver
//! copies into at the bus's speed and which is reused from write to write
//! (fresh heap pages cost a page fault each on first touch: staging into
//! them ran at about 4.5 GB/s on an H200, pinned at about 55); where the
//! driver gives no page-locked memory, the heap.
//!
//! `cuda_sync` is captured when the call is made: the caller's stream gets
//! an event recorded on it and our stream waits for that event, and our
//! stream waits for the caller's event, so the copies follow the work
//! queued before the call and nothing queued after; the caller may reuse
//! or destroy its stream and event as soon as the call returns.
//!
//! The calls declare `CUresult` as a plain integer (see `driver`), so a
//! result code newer than cust's bindings is reported, not misread.

#[cfg(driven)]
pub(crate) mod driven;

/// A client's `ovstage_cuda_sync_t`: 0 for none; `stream` 1 is the legacy
/// default stream, anything else a `CUstream`; `wait_event` a `CUevent`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CudaSync {
    /// The stream whose queued work the copy must follow.
    pub stream: usize,
    /// The event the copy must wait for.
    pub wait_event: usize,
}

impl CudaSync {
    /// No synchronisation asked for.
    pub const NONE: CudaSync = CudaSync { stream: 0, wait_event: 0 };

    /// `stream`'s value for the legacy default stream (`CU_STREAM_LEGACY`).
    pub const LEGACY_STREAM: usize = 1;

    /// Whether either knob is set.
    pub fn is_set(self) -> bool {
        self.stream != 0 || self.wait_event != 0
    }
}

/// Why staging failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StageError {
    /// The device is not there (no driver, or no such ordinal).
    NoDevice(crate::NoDevice),
    /// No host memory for `bytes` staged bytes.
    HostMemory {
        /// How many bytes were asked for.
        bytes: usize,
    },
    /// A kernel of ours could not be launched (the launch's own words).
    Launch(String),
    /// A driver call failed.
    Failed {
        /// The entry point.
        call: &'static str,
        /// Its `CUresult`.
        code: u32,
    },
}

impl StageError {
    /// Whether the failure is the device (or the host) running out of
    /// memory (`CUDA_ERROR_OUT_OF_MEMORY`).
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, StageError::Failed { code: 2, .. } | StageError::HostMemory { .. })
    }
}

impl std::fmt::Display for StageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StageError::NoDevice(e) => write!(f, "{e}"),
            StageError::Launch(e) => write!(f, "a kernel launch failed: {e}"),
            StageError::HostMemory { bytes } => {
                write!(f, "could not allocate {bytes} bytes of host memory to copy into")
            }
            StageError::Failed { call, code } => write!(f, "the CUDA driver's {call} failed with CUresult {code}"),
        }
    }
}

/// `len` bytes at device address `src` on CUDA device `device`: one copy
/// of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceBytes {
    /// The device's ordinal.
    pub device: u32,
    /// The first byte's device address.
    pub src: u64,
    /// How many bytes.
    pub len: usize,
}

/// Where each copy's bytes start in a batch's host buffer (in order, each
/// at a multiple of [`BATCH_ALIGN`], so typed views of them are aligned),
/// and the buffer's length; `None` when the total overflows.
pub fn batch_offsets(copies: &[DeviceBytes]) -> Option<(Vec<usize>, usize)> {
    let mut offsets = Vec::with_capacity(copies.len());
    let mut end = 0usize;
    for c in copies {
        let start = end.checked_next_multiple_of(BATCH_ALIGN)?;
        offsets.push(start);
        end = start.checked_add(c.len)?;
    }
    (end <= isize::MAX as usize).then_some((offsets, end))
}

/// The alignment of each copy in a batch's host buffer.
pub const BATCH_ALIGN: usize = 64;

/// A batch's failure: the copy it is about (its index; the first copy for
/// an allocation failure) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchError {
    /// The index of the copy in the batch.
    pub copy: usize,
    /// Why.
    pub error: StageError,
}

/// Host memory holding a batch's bytes: page-locked and returned to the
/// pool when dropped, or the heap's. The copies into it may still be
/// running when the batch returns: [`HostCopy::wait`] (which
/// [`HostCopy::bytes`] and dropping call) waits for them; read-only after.
pub struct HostCopy {
    ptr: *mut u8,
    len: usize,
    #[cfg_attr(not(driven), allow(dead_code))]
    block: Block,
    /// The events that complete the copies (context, event: one per
    /// device), waited for once.
    #[cfg_attr(not(driven), allow(dead_code))]
    pending: Vec<(usize, usize)>,
    /// Memory the copies read (packing tables), freed after them.
    #[cfg_attr(not(driven), allow(dead_code))]
    keep: Vec<HostCopy>,
    settled: std::sync::OnceLock<Result<(), StageError>>,
}

/// Where a [`HostCopy`]'s memory came from, so that dropping it puts it
/// back there.
pub(crate) enum Block {
    /// Nothing was allocated (an empty batch).
    Empty,
    /// `std::alloc` with `layout`.
    Heap(std::alloc::Layout),
    /// Page-locked, from the pool (`capacity` bytes).
    #[cfg_attr(not(driven), allow(dead_code))]
    Pinned {
        /// The block's size.
        capacity: usize,
    },
}

// SAFETY: the memory is owned by the `HostCopy` alone and only read after
// the batch that filled it returned; page-locked memory is ordinary host
// memory to every thread.
unsafe impl Send for HostCopy {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for HostCopy {}

impl HostCopy {
    /// The first byte (dangling for an empty batch).
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    /// The buffer's length (the last copy's end).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the bytes are in page-locked memory.
    pub fn is_pinned(&self) -> bool {
        matches!(self.block, Block::Pinned { .. })
    }

    /// Waits until every copy into the buffer is done; why not, when one
    /// failed (the buffer then reads as zeros). Waits once: later calls
    /// answer at once.
    pub fn wait(&self) -> Result<(), StageError> {
        self.settled
            .get_or_init(|| {
                #[cfg(driven)]
                // SAFETY: the events are the batch's own, recorded after its
                // copies; waited for once.
                let settled = unsafe { driven::settle(&self.pending) };
                #[cfg(not(driven))]
                let settled = Ok(());
                if settled.is_err() && self.len > 0 {
                    // SAFETY: the buffer's `len` bytes are ours, and no copy
                    // writes them any more (the stream was drained, or its
                    // context is lost).
                    unsafe { std::ptr::write_bytes(self.ptr, 0, self.len) };
                }
                settled
            })
            .clone()
    }

    /// `len` bytes at `offset` (within the buffer, or `None`), once the
    /// copies are done.
    pub fn bytes(&self, offset: usize, len: usize) -> Option<&[u8]> {
        if offset.checked_add(len)? > self.len {
            return None;
        }
        if len == 0 {
            return Some(&[]);
        }
        let _ = self.wait();
        // SAFETY: within the buffer, which the batch filled before it was
        // handed out and which lives as long as `self`.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.add(offset), len) })
    }

    /// Heap memory for `len` bytes (uninitialised), or `None`.
    pub(crate) fn heap(len: usize) -> Option<HostCopy> {
        if len == 0 {
            return Some(HostCopy::over(std::ptr::dangling_mut(), 0, Block::Empty));
        }
        let layout = std::alloc::Layout::from_size_align(len, BATCH_ALIGN).ok()?;
        // SAFETY: a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        (!ptr.is_null()).then(|| HostCopy::over(ptr, len, Block::Heap(layout)))
    }

    /// A pooled page-locked block's first `len` bytes.
    #[cfg(driven)]
    pub(crate) fn pinned(ptr: *mut u8, len: usize, capacity: usize) -> HostCopy {
        HostCopy::over(ptr, len, Block::Pinned { capacity })
    }

    fn over(ptr: *mut u8, len: usize, block: Block) -> HostCopy {
        HostCopy { ptr, len, block, pending: Vec::new(), keep: Vec::new(), settled: std::sync::OnceLock::new() }
    }

    /// Keeps `other` until this buffer's copies are done (it is dropped
    /// with this one, after the wait).
    #[cfg(driven)]
    pub(crate) fn keep(&mut self, other: HostCopy) {
        self.keep.push(other);
    }

    /// Notes an event (of `context`) that completes copies into the buffer.
    #[cfg(driven)]
    pub(crate) fn pending_on(&mut self, context: usize, event: usize) {
        self.pending.push((context, event));
    }
}

impl Drop for HostCopy {
    fn drop(&mut self) {
        // No copy may still write the memory when it is freed or reused.
        let _ = self.wait();
        match self.block {
            Block::Empty => {}
            // SAFETY: allocated by `heap` with this layout.
            Block::Heap(layout) => unsafe { std::alloc::dealloc(self.ptr, layout) },
            #[cfg(driven)]
            Block::Pinned { capacity } => driven::pool::release(self.ptr, capacity),
            #[cfg(not(driven))]
            Block::Pinned { .. } => unreachable!("no page-locked memory without the driver"),
        }
    }
}

impl std::fmt::Debug for HostCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostCopy").field("len", &self.len).field("pinned", &self.is_pinned()).finish()
    }
}

/// Copies each of `copies` into one host buffer, at [`batch_offsets`]
/// (returned with it), after the work `sync` names (captured once per
/// device). Returns once the copies are queued: [`HostCopy::wait`] waits
/// for them (into page-locked memory they run on; into the heap the driver
/// finishes them before returning). An error here is one of queueing, and
/// nothing is left running. Without the CUDA backend there is no device to
/// copy from.
///
/// # Safety
/// Each copy's `len` bytes at `src` are readable on its device, and `sync`'s
/// handles, when set, are a live stream and event of the devices' primary
/// contexts (or the legacy stream, 1).
pub unsafe fn stage_batch(copies: &[DeviceBytes], sync: CudaSync) -> Result<(HostCopy, Vec<usize>), BatchError> {
    let Some((offsets, total)) = batch_offsets(copies) else {
        return Err(BatchError { copy: 0, error: StageError::HostMemory { bytes: usize::MAX } });
    };
    if copies.is_empty() {
        let empty = HostCopy::heap(0).expect("an empty buffer allocates nothing");
        return Ok((empty, offsets));
    }
    #[cfg(driven)]
    // SAFETY: forwarded.
    let staged = unsafe { driven::stage_batch(copies, &offsets, total, sync) };
    #[cfg(not(driven))]
    let staged = {
        let _ = (total, sync);
        Err(BatchError { copy: 0, error: StageError::NoDevice(crate::probe_device(0).expect_err("no backend")) })
    };
    staged.map(|host| (host, offsets))
}

/// How many page-locked staging blocks the driver gave so far, and how
/// many bytes the pool holds free now.
#[cfg(driven)]
pub fn pinned_pool_stats() -> (usize, usize) {
    driven::pool::stats()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batchs_copies_are_aligned_and_in_order() {
        let c = |len| DeviceBytes { device: 0, src: 0x1000, len };
        let (offsets, total) = batch_offsets(&[c(3), c(0), c(64), c(1)]).unwrap();
        assert_eq!(offsets, [0, 64, 64, 128]);
        assert_eq!(total, 129);
        assert_eq!(batch_offsets(&[]).unwrap(), (vec![], 0));
        assert!(batch_offsets(&[c(usize::MAX - 10), c(1)]).is_none());
        assert!(batch_offsets(&[c(isize::MAX as usize + 1)]).is_none());
    }

    #[test]
    fn heap_copies_hand_out_their_bytes_within_bounds() {
        let h = HostCopy::heap(0).unwrap();
        assert!(h.is_empty() && !h.is_pinned());
        assert_eq!(h.bytes(0, 0), Some(&[][..]));
        assert_eq!(h.bytes(0, 1), None);
        let h = HostCopy::heap(100).unwrap();
        assert_eq!(h.as_ptr() as usize % BATCH_ALIGN, 0);
        // SAFETY: 100 bytes of the buffer, written before they are read.
        unsafe { std::ptr::write_bytes(h.as_ptr().cast_mut(), 7, 100) };
        assert_eq!(h.bytes(90, 10), Some(&[7u8; 10][..]));
        assert_eq!(h.bytes(91, 10), None);
        assert_eq!(h.bytes(usize::MAX, 2), None);
        assert!(HostCopy::heap(usize::MAX).is_none());
    }
}
