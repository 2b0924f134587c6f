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

#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
use std::ffi::c_void;
#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
use std::sync::Mutex;

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

#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
type Handle = *mut c_void;

#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
unsafe extern "C" {
    #[link_name = "cuDeviceGet"]
    fn cu_device_get(device: *mut i32, ordinal: i32) -> u32;
    #[link_name = "cuDevicePrimaryCtxRetain"]
    fn cu_primary_ctx_retain(ctx: *mut Handle, device: i32) -> u32;
    #[link_name = "cuCtxSetCurrent"]
    fn cu_ctx_set_current(ctx: Handle) -> u32;
    #[link_name = "cuStreamCreate"]
    fn cu_stream_create(stream: *mut Handle, flags: u32) -> u32;
    #[link_name = "cuEventCreate"]
    fn cu_event_create(event: *mut Handle, flags: u32) -> u32;
    #[link_name = "cuEventRecord"]
    fn cu_event_record(event: Handle, stream: Handle) -> u32;
    #[link_name = "cuStreamWaitEvent"]
    fn cu_stream_wait_event(stream: Handle, event: Handle, flags: u32) -> u32;
    #[link_name = "cuMemcpyDtoHAsync_v2"]
    fn cu_memcpy_dtoh_async(dst: *mut c_void, src: u64, bytes: usize, stream: Handle) -> u32;
    #[link_name = "cuStreamSynchronize"]
    fn cu_stream_synchronize(stream: Handle) -> u32;
}

#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
/// `CU_STREAM_NON_BLOCKING`: our stream does not order with the legacy
/// default stream (the caller's `cuda_sync` says what to follow).
#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
const STREAM_NON_BLOCKING: u32 = 1;
/// `CU_EVENT_DISABLE_TIMING`: the cheapest event.
#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
const EVENT_DISABLE_TIMING: u32 = 2;

#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
fn call(name: &'static str, code: u32) -> Result<(), StageError> {
    if code == 0 { Ok(()) } else { Err(StageError::Failed { call: name, code }) }
}

/// One device's primary context, our copy stream and the event that
/// captures a caller's stream. Never released (they live as long as the
/// process, as the primary context does for Warp or PyTorch).
#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
struct DeviceState {
    context: Handle,
    stream: Handle,
    capture: Handle,
}

// SAFETY: the handles are driver objects, usable from any thread once the
// context is made current there (which `stage` does); the mutex around each
// state serialises the copies that use its stream and event.
#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
unsafe impl Send for DeviceState {}

#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
static DEVICES: Mutex<Vec<Option<DeviceState>>> = Mutex::new(Vec::new());

#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
fn device_state(ordinal: u32) -> Result<DeviceState, StageError> {
    let mut device = 0;
    // SAFETY: the driver writes one int.
    call("cuDeviceGet", unsafe { cu_device_get(&mut device, ordinal as i32) })?;
    let mut context = std::ptr::null_mut();
    // SAFETY: the driver writes one handle.
    call("cuDevicePrimaryCtxRetain", unsafe { cu_primary_ctx_retain(&mut context, device) })?;
    // SAFETY: a context the driver just gave.
    call("cuCtxSetCurrent", unsafe { cu_ctx_set_current(context) })?;
    let (mut stream, mut capture) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: the driver writes one handle each.
    call("cuStreamCreate", unsafe { cu_stream_create(&mut stream, STREAM_NON_BLOCKING) })?;
    // SAFETY: as above.
    call("cuEventCreate", unsafe { cu_event_create(&mut capture, EVENT_DISABLE_TIMING) })?;
    Ok(DeviceState { context, stream, capture })
}

/// Copies `dst.len()` bytes from device address `src` on CUDA device
/// `ordinal` into `dst`, after the work `sync` names; returns when the bytes
/// are in `dst`.
///
/// # Safety
/// `src` is a device address on that device with `dst.len()` readable
/// bytes, and `sync`'s handles, when set, are a live stream and event of
/// that device's primary context (or the legacy stream, 1).
#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
pub unsafe fn stage(ordinal: u32, src: u64, dst: &mut [u8], sync: CudaSync) -> Result<(), StageError> {
    crate::probe_device(ordinal).map_err(StageError::NoDevice)?;
    let mut devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
    let slot = ordinal as usize;
    if devices.len() <= slot {
        devices.resize_with(slot + 1, || None);
    }
    if devices[slot].is_none() {
        devices[slot] = Some(device_state(ordinal)?);
    }
    let state = devices[slot].as_ref().expect("just made");
    // SAFETY: the state's handles are live (never released); the client's
    // handles and addresses are the caller's promise.
    unsafe {
        call("cuCtxSetCurrent", cu_ctx_set_current(state.context))?;
        if sync.stream != 0 {
            call("cuEventRecord", cu_event_record(state.capture, sync.stream as Handle))?;
            call("cuStreamWaitEvent", cu_stream_wait_event(state.stream, state.capture, 0))?;
        }
        if sync.wait_event != 0 {
            call("cuStreamWaitEvent", cu_stream_wait_event(state.stream, sync.wait_event as Handle, 0))?;
        }
        if !dst.is_empty() {
            call("cuMemcpyDtoHAsync_v2", cu_memcpy_dtoh_async(dst.as_mut_ptr().cast(), src, dst.len(), state.stream))?;
        }
        call("cuStreamSynchronize", cu_stream_synchronize(state.stream))
    }
}

/// Without the CUDA backend there is no device to stage from.
///
/// # Safety
/// None needed; `unsafe` as the backend's variant.
#[cfg(not(all(feature = "cuda", target_arch = "x86_64", target_os = "linux")))]
pub unsafe fn stage(_ordinal: u32, _src: u64, _dst: &mut [u8], _sync: CudaSync) -> Result<(), StageError> {
    Err(StageError::NoDevice(crate::probe_device(0).expect_err("no backend, no device")))
}
