//! The driver calls of [`super::stage_batch`]: our stream, the capture
//! event and the copies, per device, into page-locked memory from `pool`.

use std::ffi::c_void;
use std::sync::Mutex;

use super::{BatchError, CudaSync, DeviceBytes, HostCopy, StageError};

pub(crate) mod pool;

type Handle = *mut c_void;

unsafe extern "C" {
    #[link_name = "cuDeviceGet"]
    fn cu_device_get(device: *mut i32, ordinal: i32) -> u32;
    #[link_name = "cuDevicePrimaryCtxRetain"]
    fn cu_primary_ctx_retain(ctx: *mut Handle, device: i32) -> u32;
    #[link_name = "cuCtxSetCurrent"]
    fn cu_ctx_set_current(ctx: Handle) -> u32;
    #[link_name = "cuCtxGetCurrent"]
    fn cu_ctx_get_current(ctx: *mut Handle) -> u32;
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

/// `CU_STREAM_NON_BLOCKING`: our stream does not order with the legacy
/// default stream (the caller's `cuda_sync` says what to follow).
const STREAM_NON_BLOCKING: u32 = 1;
/// `CU_EVENT_DISABLE_TIMING`: the cheapest event.
const EVENT_DISABLE_TIMING: u32 = 2;

fn call(name: &'static str, code: u32) -> Result<(), StageError> {
    if code == 0 { Ok(()) } else { Err(StageError::Failed { call: name, code }) }
}

/// One device's primary context, our copy stream and the event that
/// captures a caller's stream. Never released (they live as long as the
/// process, as the primary context does for Warp or PyTorch).
struct DeviceState {
    context: Handle,
    stream: Handle,
    capture: Handle,
}

// SAFETY: the handles are driver objects, usable from any thread once the
// context is made current there (which `stage` does); the mutex around each
// state serialises the copies that use its stream and event.
unsafe impl Send for DeviceState {}

static DEVICES: Mutex<Vec<Option<DeviceState>>> = Mutex::new(Vec::new());

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

/// Device `ordinal`'s primary context (retained once per process, with
/// our copy stream and capture event), for the placement calls.
pub(crate) fn primary_context(ordinal: u32) -> Result<Handle, StageError> {
    crate::probe_device(ordinal).map_err(StageError::NoDevice)?;
    let mut devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
    let slot = ordinal as usize;
    if devices.len() <= slot {
        devices.resize_with(slot + 1, || None);
    }
    if devices[slot].is_none() {
        // Making the state sets the device's context current: put back the
        // thread's own (the caller switches contexts itself).
        let mut previous = std::ptr::null_mut();
        // SAFETY: the driver writes one handle.
        call("cuCtxGetCurrent", unsafe { cu_ctx_get_current(&mut previous) })?;
        let made = device_state(ordinal);
        // SAFETY: the context that was current (or none) a moment ago.
        let restored = call("cuCtxSetCurrent", unsafe { cu_ctx_set_current(previous) });
        devices[slot] = Some(made?);
        restored?;
    }
    Ok(devices[slot].as_ref().expect("just made").context)
}

/// [`super::stage_batch`] with the driver.
///
/// # Safety
/// As for [`super::stage_batch`].
pub(super) unsafe fn stage_batch(copies: &[DeviceBytes], sync: CudaSync) -> Result<HostCopy, BatchError> {
    let Some((offsets, total)) = super::batch_offsets(copies) else {
        return Err(BatchError { copy: 0, error: StageError::HostMemory { bytes: usize::MAX } });
    };
    if copies.is_empty() {
        return HostCopy::heap(0).ok_or(BatchError { copy: 0, error: StageError::HostMemory { bytes: 0 } });
    }
    for (i, c) in copies.iter().enumerate() {
        crate::probe_device(c.device).map_err(|e| BatchError { copy: i, error: StageError::NoDevice(e) })?;
    }
    // The calling thread is the client's: whatever context it has current
    // is put back afterwards, on every path.
    let mut previous = std::ptr::null_mut();
    // SAFETY: the driver writes one handle.
    call("cuCtxGetCurrent", unsafe { cu_ctx_get_current(&mut previous) })
        .map_err(|error| BatchError { copy: 0, error })?;
    // SAFETY: forwarded.
    let copied = unsafe { copy_batch(copies, &offsets, total, sync) };
    // SAFETY: the context that was current (or none) a moment ago.
    let restored = call("cuCtxSetCurrent", unsafe { cu_ctx_set_current(previous) });
    let host = copied?;
    restored.map_err(|error| BatchError { copy: 0, error })?;
    Ok(host)
}

/// [`stage_batch`] once the copies are known to be on devices that are
/// there: per device (in the order they first appear), its context made
/// current, `sync` captured, its copies queued, its stream synchronised.
///
/// # Safety
/// As for [`super::stage_batch`].
unsafe fn copy_batch(
    copies: &[DeviceBytes],
    offsets: &[usize],
    total: usize,
    sync: CudaSync,
) -> Result<HostCopy, BatchError> {
    let mut devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
    let mut done = vec![false; copies.len()];
    let mut host: Option<HostCopy> = None;
    for first in 0..copies.len() {
        if done[first] {
            continue;
        }
        let ordinal = copies[first].device;
        let at = |error| BatchError { copy: first, error };
        let slot = ordinal as usize;
        if devices.len() <= slot {
            devices.resize_with(slot + 1, || None);
        }
        if devices[slot].is_none() {
            devices[slot] = Some(device_state(ordinal).map_err(at)?);
        }
        let state = devices[slot].as_ref().expect("just made");
        // SAFETY: the state's handles are live (never released).
        call("cuCtxSetCurrent", unsafe { cu_ctx_set_current(state.context) }).map_err(at)?;
        // Page-locked memory is portable: allocated once, under the first
        // device's context, for every device's copies.
        let buffer = match &host {
            Some(h) => h,
            None => host.insert(pool::acquire(total).ok_or(at(StageError::HostMemory { bytes: total }))?),
        };
        // SAFETY: the state's handles are live; the client's handles and
        // addresses are the caller's promise; each destination lies within
        // `buffer` (the offsets are `batch_offsets`', its length `total`).
        let queued = unsafe {
            capture(state.stream, state.capture, sync).map_err(at).and_then(|()| {
                for i in first..copies.len() {
                    let c = copies[i];
                    if c.device != ordinal || done[i] {
                        continue;
                    }
                    done[i] = true;
                    if c.len > 0 {
                        let dst = buffer.as_ptr().cast_mut().add(offsets[i]).cast::<c_void>();
                        call("cuMemcpyDtoHAsync_v2", cu_memcpy_dtoh_async(dst, c.src, c.len, state.stream))
                            .map_err(|error| BatchError { copy: i, error })?;
                    }
                }
                Ok(())
            })
        };
        // SAFETY: our live stream. Drained on every path: a copy queued
        // before a failure must not land in memory that is freed or reused.
        let drained = call("cuStreamSynchronize", unsafe { cu_stream_synchronize(state.stream) });
        if queued.is_err() && drained.is_err() {
            // The stream cannot be drained: the buffer may still be written.
            std::mem::forget(host.take());
        }
        queued?;
        drained.map_err(at)?;
    }
    Ok(host.expect("at least one copy"))
}

/// Makes `stream` follow the work `sync` names, through `capture`.
///
/// # Safety
/// `stream` and `capture` are live; `sync`'s handles are the client's
/// promise.
unsafe fn capture(stream: Handle, capture: Handle, sync: CudaSync) -> Result<(), StageError> {
    // SAFETY: forwarded.
    unsafe {
        if sync.stream != 0 {
            call("cuEventRecord", cu_event_record(capture, sync.stream as Handle))?;
            call("cuStreamWaitEvent", cu_stream_wait_event(stream, capture, 0))?;
        }
        if sync.wait_event != 0 {
            call("cuStreamWaitEvent", cu_stream_wait_event(stream, sync.wait_event as Handle, 0))?;
        }
    }
    Ok(())
}
