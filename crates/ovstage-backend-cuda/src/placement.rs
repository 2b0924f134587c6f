//! The driver work of the `ovstage.placement` extension: device copies of
//! read groups, availability events, stream drains.
//!
//! Columns live in host memory (device-resident mirrors are not built yet):
//! a read placed on a CUDA device uploads its groups into one device
//! allocation per group ([`DeviceCopy`]), owned by the group and freed when
//! it is released; an availability event is recorded on the caller's
//! stream once the op's device work is queued.
//!
//! Every call makes the context it needs current and puts back the one the
//! thread had, on every path: these calls run on client threads (an op run
//! on the submitter) as well as on lanes.

#[cfg(driven)]
mod driven;

use crate::staging::StageError;

/// The context an availability event is recorded in when the stream is a
/// default one (0, 1 = legacy, 2 = per-thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordOn {
    /// CUDA device `n`'s primary context.
    Device(u32),
    /// The context that was current on the thread that enqueued the op
    /// ([`current_context`]); 0 when none was.
    Captured(usize),
}

/// The context current on the calling thread (0 for none), captured at
/// enqueue for a record that runs later elsewhere.
pub fn current_context() -> Result<usize, StageError> {
    #[cfg(driven)]
    let current = driven::current_context();
    #[cfg(not(driven))]
    let current = Err(no_backend());
    current
}

#[cfg(not(driven))]
fn no_backend() -> StageError {
    StageError::NoDevice(crate::probe_device(0).expect_err("no backend, no device"))
}

/// Records `event` on `stream` (in the stream's own context when it is a
/// specific stream, else in `on`).
///
/// # Safety
/// `event` is a live `CUevent` and `stream` 0, 1, 2 or a live `CUstream`,
/// both of the context the record runs in.
pub unsafe fn record(event: usize, stream: usize, on: RecordOn) -> Result<(), StageError> {
    #[cfg(driven)]
    // SAFETY: forwarded.
    let recorded = unsafe { driven::record(event, stream, on) };
    #[cfg(not(driven))]
    let recorded = {
        let _ = (event, stream, on);
        Err(no_backend())
    };
    recorded
}

/// [`record`], once `stream` follows, on the device, every copy staging
/// has queued so far (the copies that read a write's CUDA sources run
/// after its enqueue returns; a write's availability event comes after
/// them).
///
/// # Safety
/// As for [`record`].
pub unsafe fn record_after_staging(event: usize, stream: usize, on: RecordOn) -> Result<(), StageError> {
    #[cfg(driven)]
    // SAFETY: forwarded.
    let recorded = unsafe { driven::record_after_staging(event, stream, on) };
    #[cfg(not(driven))]
    let recorded = {
        let _ = (event, stream, on);
        Err(no_backend())
    };
    recorded
}

/// Waits until the work queued on `stream` (in `on`'s context when it is a
/// default stream) has run.
///
/// # Safety
/// `stream` is 0, 1, 2 or a live `CUstream`.
pub unsafe fn synchronize(stream: usize, on: RecordOn) -> Result<(), StageError> {
    #[cfg(driven)]
    // SAFETY: forwarded.
    let drained = unsafe { driven::synchronize(stream, on) };
    #[cfg(not(driven))]
    let drained = {
        let _ = (stream, on);
        Err(no_backend())
    };
    drained
}

/// Waits on the host until the work `sync` names (a client's
/// `write_done_sync`: the work queued on `sync.stream`, in its context or
/// `on`'s for a default stream, and `sync.wait_event`) has run. Nothing to
/// wait for when neither is set.
///
/// # Safety
/// `sync`'s handles, when set, are a live stream and event.
pub unsafe fn wait_host(sync: crate::staging::CudaSync, on: RecordOn) -> Result<(), StageError> {
    if !sync.is_set() {
        return Ok(());
    }
    #[cfg(driven)]
    // SAFETY: forwarded.
    let waited = unsafe { driven::wait_host(sync, on) };
    #[cfg(not(driven))]
    let waited = {
        let _ = on;
        Err(no_backend())
    };
    waited
}

/// Alignment of each part inside a [`DeviceCopy`] (the driver's own
/// allocation alignment, so every part suits any kernel).
pub const PART_ALIGN: usize = 256;

/// Host bytes copied into memory of one CUDA device: one allocation, freed
/// when this is dropped (with the device's context made current).
#[derive(Debug)]
pub struct DeviceCopy {
    ordinal: u32,
    base: u64,
    offsets: Vec<usize>,
    /// An event of ours recorded after the copies ([`DeviceCopy::mark_ready`]),
    /// 0 until then: what a later user of the copy orders behind.
    ready: usize,
}

impl DeviceCopy {
    /// The device.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// The device address of part `i` (0 for every part of an empty copy).
    pub fn part(&self, i: usize) -> u64 {
        if self.base == 0 { 0 } else { self.base + self.offsets[i] as u64 }
    }

    /// Copies `parts` into one new allocation on device `ordinal`, each at
    /// a multiple of [`PART_ALIGN`], on `stream`. The copies are queued,
    /// not finished: the bytes must stay put until `stream` has run them
    /// (a record or [`synchronize`] after this tells when).
    ///
    /// # Safety
    /// `stream` is 0, 1, 2 or a live `CUstream` of that device's primary
    /// context.
    pub unsafe fn upload(ordinal: u32, parts: &[&[u8]], stream: usize) -> Result<DeviceCopy, StageError> {
        let mut offsets = Vec::with_capacity(parts.len());
        let mut total = 0usize;
        for p in parts {
            offsets.push(total);
            let end = total.checked_add(p.len()).and_then(|e| e.checked_next_multiple_of(PART_ALIGN));
            total = end.ok_or(StageError::Failed { call: "cuMemAlloc_v2", code: 2 })?;
        }
        if total == 0 {
            return Ok(DeviceCopy { ordinal, base: 0, offsets, ready: 0 });
        }
        #[cfg(driven)]
        // SAFETY: forwarded.
        let base = unsafe { driven::upload(ordinal, parts, &offsets, total, stream) };
        #[cfg(not(driven))]
        let base = {
            let _ = stream;
            Err(no_backend())
        };
        Ok(DeviceCopy { ordinal, base: base?, offsets, ready: 0 })
    }

    /// Records an event of ours on `stream` after the copies queued there,
    /// so later users of the copy (other reads, on other streams) can order
    /// behind them ([`DeviceCopy::wait_ready`], [`DeviceCopy::sync_ready`]).
    ///
    /// # Safety
    /// `stream` is the stream the copies were queued on.
    pub unsafe fn mark_ready(&mut self, stream: usize) -> Result<(), StageError> {
        if self.base == 0 {
            return Ok(());
        }
        #[cfg(driven)]
        {
            // SAFETY: forwarded.
            self.ready = unsafe { driven::record_ready(self.ordinal, self.ready, stream)? };
            Ok(())
        }
        #[cfg(not(driven))]
        {
            let _ = stream;
            Err(no_backend())
        }
    }

    /// Makes `stream` wait (on the device) for the copies; nothing when
    /// they were not marked ([`DeviceCopy::mark_ready`]).
    ///
    /// # Safety
    /// `stream` is 0, 1, 2 or a live `CUstream` of the device's primary
    /// context.
    pub unsafe fn wait_ready(&self, stream: usize) -> Result<(), StageError> {
        if self.ready == 0 {
            return Ok(());
        }
        #[cfg(driven)]
        // SAFETY: forwarded; our event is live while `self` is.
        let waited = unsafe { driven::stream_wait(self.ordinal, stream, self.ready) };
        #[cfg(not(driven))]
        let waited = {
            let _ = stream;
            Err(no_backend())
        };
        waited
    }

    /// Waits on the host until the copies have run; nothing when they were
    /// not marked.
    pub fn sync_ready(&self) -> Result<(), StageError> {
        if self.ready == 0 {
            return Ok(());
        }
        #[cfg(driven)]
        // SAFETY: our event, live while `self` is.
        let waited = unsafe { driven::event_sync(self.ordinal, self.ready) };
        #[cfg(not(driven))]
        let waited = Err(no_backend());
        waited
    }

    /// Copies part `i` (its first `dst.len()` bytes) back into `dst`;
    /// returns when the bytes are there. The device work that wrote the
    /// part must have run (the caller waited for it).
    pub fn download(&self, i: usize, dst: &mut [u8]) -> Result<(), StageError> {
        if dst.is_empty() {
            return Ok(());
        }
        #[cfg(driven)]
        // SAFETY: the part has at least `dst.len()` bytes: it was uploaded
        // from a slice of that length (the caller's contract).
        let copied = unsafe { driven::download(self.ordinal, self.part(i), dst) };
        #[cfg(not(driven))]
        let copied = {
            let _ = i;
            Err(no_backend())
        };
        copied
    }
}

impl Drop for DeviceCopy {
    fn drop(&mut self) {
        #[cfg(driven)]
        if self.base != 0 {
            driven::free(self.ordinal, self.base, self.ready);
        }
    }
}
