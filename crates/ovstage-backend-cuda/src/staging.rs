//! Device bytes brought to the host at enqueue (phase 1 of the design):
//! a write from a CUDA tensor copies the tensor's bytes into a host buffer
//! on a stream of ours, after exactly the work the caller's `cuda_sync`
//! names, and the write then runs as a write from host memory. So the
//! source is no longer read when the enqueue returns (long before the op
//! completes), and a managed tensor can be released as soon as it is.
//!
//! `cuda_sync` is captured when the call is made: the caller's stream gets
//! an event recorded on it and our stream waits for that event, and our
//! stream waits for the caller's event, so the copy follows the work queued
//! before the call and nothing queued after; the caller may reuse or
//! destroy its stream and event as soon as the call returns.
//!
//! The calls declare `CUresult` as a plain integer (see `driver`), so a
//! result code newer than cust's bindings is reported, not misread.

use std::mem::MaybeUninit;

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
        matches!(self, StageError::Failed { code: 2, .. })
    }
}

impl std::fmt::Display for StageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StageError::NoDevice(e) => write!(f, "{e}"),
            StageError::Failed { call, code } => write!(f, "the CUDA driver's {call} failed with CUresult {code}"),
        }
    }
}

/// Copies `dst.len()` bytes from device address `src` on CUDA device
/// `ordinal` into `dst`, after the work `sync` names; returns when the bytes
/// are in `dst` (all of them, when it returns `Ok`: `dst` may start
/// uninitialised). Without the CUDA backend there is no device to copy from.
///
/// # Safety
/// `src` is a device address on that device with `dst.len()` readable
/// bytes, and `sync`'s handles, when set, are a live stream and event of
/// that device's primary context (or the legacy stream, 1).
pub unsafe fn stage(ordinal: u32, src: u64, dst: &mut [MaybeUninit<u8>], sync: CudaSync) -> Result<(), StageError> {
    #[cfg(driven)]
    // SAFETY: forwarded.
    let staged = unsafe { driven::stage(ordinal, src, dst, sync) };
    #[cfg(not(driven))]
    let staged = {
        let _ = (ordinal, src, dst, sync);
        Err(StageError::NoDevice(crate::probe_device(0).expect_err("no backend, no device")))
    };
    staged
}
