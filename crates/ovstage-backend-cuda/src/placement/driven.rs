//! The driver calls of the placement module.

use std::ffi::c_void;

use super::RecordOn;
use crate::staging::StageError;
use crate::staging::driven::primary_context;

type Handle = *mut c_void;

unsafe extern "C" {
    #[link_name = "cuCtxSetCurrent"]
    fn cu_ctx_set_current(ctx: Handle) -> u32;
    #[link_name = "cuCtxGetCurrent"]
    fn cu_ctx_get_current(ctx: *mut Handle) -> u32;
    #[link_name = "cuStreamGetCtx"]
    fn cu_stream_get_ctx(stream: Handle, ctx: *mut Handle) -> u32;
    #[link_name = "cuEventRecord"]
    fn cu_event_record(event: Handle, stream: Handle) -> u32;
    #[link_name = "cuStreamSynchronize"]
    fn cu_stream_synchronize(stream: Handle) -> u32;
    #[link_name = "cuMemAlloc_v2"]
    fn cu_mem_alloc(dptr: *mut u64, bytes: usize) -> u32;
    #[link_name = "cuMemFree_v2"]
    fn cu_mem_free(dptr: u64) -> u32;
    #[link_name = "cuMemcpyDtoH_v2"]
    fn cu_memcpy_dtoh(dst: *mut c_void, src: u64, bytes: usize) -> u32;
    #[link_name = "cuEventCreate"]
    fn cu_event_create(event: *mut Handle, flags: u32) -> u32;
    #[link_name = "cuEventDestroy_v2"]
    fn cu_event_destroy(event: Handle) -> u32;
    #[link_name = "cuStreamWaitEvent"]
    fn cu_stream_wait_event(stream: Handle, event: Handle, flags: u32) -> u32;
    #[link_name = "cuEventSynchronize"]
    fn cu_event_synchronize(event: Handle) -> u32;
    #[link_name = "cuMemcpyHtoDAsync_v2"]
    fn cu_memcpy_htod_async(dst: u64, src: *const c_void, bytes: usize, stream: Handle) -> u32;
}

/// Streams 0, 1 (`CU_STREAM_LEGACY`) and 2 (`CU_STREAM_PER_THREAD`) are the
/// current context's default streams; anything else names one stream.
const LAST_DEFAULT_STREAM: usize = 2;

fn call(name: &'static str, code: u32) -> Result<(), StageError> {
    if code == 0 { Ok(()) } else { Err(StageError::Failed { call: name, code }) }
}

pub(super) fn current_context() -> Result<usize, StageError> {
    crate::probe_device(0).map_err(StageError::NoDevice)?;
    let mut ctx = std::ptr::null_mut();
    // SAFETY: the driver writes one handle.
    call("cuCtxGetCurrent", unsafe { cu_ctx_get_current(&mut ctx) })?;
    Ok(ctx as usize)
}

/// Runs `f` with `context` current, then puts back the thread's own.
fn within<R>(context: Handle, f: impl FnOnce() -> Result<R, StageError>) -> Result<R, StageError> {
    let mut previous = std::ptr::null_mut();
    // SAFETY: the driver writes one handle.
    call("cuCtxGetCurrent", unsafe { cu_ctx_get_current(&mut previous) })?;
    if previous == context {
        return f();
    }
    // SAFETY: a context of the driver's (or none).
    call("cuCtxSetCurrent", unsafe { cu_ctx_set_current(context) })?;
    let result = f();
    // SAFETY: the context that was current a moment ago (or none).
    let restored = call("cuCtxSetCurrent", unsafe { cu_ctx_set_current(previous) });
    result.and_then(|r| restored.map(|()| r))
}

/// The context work on `stream` runs in: a specific stream's own, else
/// `on`'s.
///
/// # Safety
/// `stream` is a default stream or a live `CUstream`.
unsafe fn context_of(stream: usize, on: RecordOn) -> Result<Handle, StageError> {
    if stream > LAST_DEFAULT_STREAM {
        crate::probe_device(0).map_err(StageError::NoDevice)?;
        let mut ctx = std::ptr::null_mut();
        // SAFETY: a live stream per the caller; the driver writes one handle.
        call("cuStreamGetCtx", unsafe { cu_stream_get_ctx(stream as Handle, &mut ctx) })?;
        return Ok(ctx);
    }
    match on {
        RecordOn::Device(n) => primary_context(n),
        RecordOn::Captured(ctx) => {
            crate::probe_device(0).map_err(StageError::NoDevice)?;
            Ok(ctx as Handle)
        }
    }
}

pub(super) unsafe fn record(event: usize, stream: usize, on: RecordOn) -> Result<(), StageError> {
    // SAFETY: forwarded.
    let context = unsafe { context_of(stream, on)? };
    // SAFETY: the caller's handles, in their context.
    within(context, || call("cuEventRecord", unsafe { cu_event_record(event as Handle, stream as Handle) }))
}

pub(super) unsafe fn record_after_staging(event: usize, stream: usize, on: RecordOn) -> Result<(), StageError> {
    // SAFETY: forwarded.
    let context = unsafe { context_of(stream, on)? };
    within(context, || {
        // SAFETY: the caller's handles, in their context.
        unsafe {
            crate::staging::driven::follow_staging(stream as Handle)?;
            call("cuEventRecord", cu_event_record(event as Handle, stream as Handle))
        }
    })
}

pub(super) unsafe fn synchronize(stream: usize, on: RecordOn) -> Result<(), StageError> {
    // SAFETY: forwarded.
    let context = unsafe { context_of(stream, on)? };
    // SAFETY: the caller's stream, in its context.
    within(context, || call("cuStreamSynchronize", unsafe { cu_stream_synchronize(stream as Handle) }))
}

pub(super) unsafe fn upload(
    ordinal: u32,
    parts: &[&[u8]],
    offsets: &[usize],
    total: usize,
    stream: usize,
) -> Result<u64, StageError> {
    let context = primary_context(ordinal)?;
    within(context, || {
        let mut base = 0u64;
        // SAFETY: the driver writes one address.
        call("cuMemAlloc_v2", unsafe { cu_mem_alloc(&mut base, total) })?;
        for (p, at) in parts.iter().zip(offsets) {
            if p.is_empty() {
                continue;
            }
            // SAFETY: `at + p.len() <= total`, within the allocation; the
            // source is `p`, which the caller keeps until the stream ran.
            let queued = call("cuMemcpyHtoDAsync_v2", unsafe {
                cu_memcpy_htod_async(base + *at as u64, p.as_ptr().cast(), p.len(), stream as Handle)
            });
            if let Err(e) = queued {
                // SAFETY: just allocated; nothing queued reads it once this
                // copy failed to queue (earlier parts' copies only write it).
                unsafe { cu_stream_synchronize(stream as Handle) };
                // SAFETY: as above.
                unsafe { cu_mem_free(base) };
                return Err(e);
            }
        }
        Ok(base)
    })
}

pub(super) unsafe fn wait_host(sync: crate::staging::CudaSync, on: RecordOn) -> Result<(), StageError> {
    if sync.stream != 0 {
        // SAFETY: forwarded.
        unsafe { synchronize(sync.stream, on)? };
    }
    if sync.wait_event != 0 {
        crate::probe_device(0).map_err(StageError::NoDevice)?;
        // SAFETY: the caller's live event.
        call("cuEventSynchronize", unsafe { cu_event_synchronize(sync.wait_event as Handle) })?;
    }
    Ok(())
}

/// # Safety
/// `src` has `dst.len()` readable bytes on device `ordinal`.
pub(super) unsafe fn download(ordinal: u32, src: u64, dst: &mut [u8]) -> Result<(), StageError> {
    let context = primary_context(ordinal)?;
    // SAFETY: per the caller; `dst` is writable for its length.
    within(context, || call("cuMemcpyDtoH_v2", unsafe { cu_memcpy_dtoh(dst.as_mut_ptr().cast(), src, dst.len()) }))
}

/// `CU_EVENT_DISABLE_TIMING`: the cheapest event.
const EVENT_DISABLE_TIMING: u32 = 2;

/// Records `ready` (created in device `ordinal`'s primary context when 0)
/// on `stream`; returns it.
///
/// # Safety
/// `stream` is a default stream or a live `CUstream` of that context.
pub(super) unsafe fn record_ready(ordinal: u32, ready: usize, stream: usize) -> Result<usize, StageError> {
    let context = primary_context(ordinal)?;
    within(context, || {
        let mut event = ready as Handle;
        if event.is_null() {
            // SAFETY: the driver writes one handle.
            call("cuEventCreate", unsafe { cu_event_create(&mut event, EVENT_DISABLE_TIMING) })?;
        }
        // SAFETY: our event and the caller's stream, in that context.
        call("cuEventRecord", unsafe { cu_event_record(event, stream as Handle) })?;
        Ok(event as usize)
    })
}

/// # Safety
/// `stream` is a default stream or a live `CUstream`, `event` a live event,
/// both of device `ordinal`'s primary context.
pub(super) unsafe fn stream_wait(ordinal: u32, stream: usize, event: usize) -> Result<(), StageError> {
    let context = primary_context(ordinal)?;
    // SAFETY: per the caller.
    within(context, || call("cuStreamWaitEvent", unsafe { cu_stream_wait_event(stream as Handle, event as Handle, 0) }))
}

/// # Safety
/// `event` is a live event of device `ordinal`'s primary context.
pub(super) unsafe fn event_sync(ordinal: u32, event: usize) -> Result<(), StageError> {
    let context = primary_context(ordinal)?;
    // SAFETY: per the caller.
    within(context, || call("cuEventSynchronize", unsafe { cu_event_synchronize(event as Handle) }))
}

pub(super) fn free(ordinal: u32, base: u64, ready: usize) {
    // A failure here leaks device memory; there is nobody to report it to
    // (a release cannot fail).
    let Ok(context) = primary_context(ordinal) else { return };
    let _ = within(context, || {
        if ready != 0 {
            // SAFETY: our event, destroyed once (work it marks may still be
            // queued: the driver releases it when that completes).
            let _ = unsafe { cu_event_destroy(ready as Handle) };
        }
        // SAFETY: `base` came from cuMemAlloc_v2 in this context and is
        // freed once.
        call("cuMemFree_v2", unsafe { cu_mem_free(base) })
    });
}
