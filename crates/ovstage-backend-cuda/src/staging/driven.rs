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
    #[link_name = "cuEventSynchronize"]
    fn cu_event_synchronize(event: Handle) -> u32;
    #[link_name = "cuEventDestroy_v2"]
    fn cu_event_destroy(event: Handle) -> u32;
    #[link_name = "cuMemAlloc_v2"]
    fn cu_mem_alloc(dptr: *mut u64, bytes: usize) -> u32;
    #[link_name = "cuMemFree_v2"]
    fn cu_mem_free(dptr: u64) -> u32;
    #[link_name = "cuMemcpyHtoDAsync_v2"]
    fn cu_memcpy_htod_async(dst: u64, src: *const c_void, bytes: usize, stream: Handle) -> u32;
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
    /// Packs runs of small copies on the device (made the first time a
    /// batch has one).
    packer: Packer,
}

/// The `copy_ranges` kernel and its scratch memory, for packing runs of
/// small copies into one device-to-host copy.
enum Packer {
    /// Not needed yet.
    Untried,
    /// The kernels could not be loaded here (a fake driver, say): every
    /// copy is a copy of its own.
    Unavailable,
    Ready {
        gpu: crate::gpu::Gpu,
        /// Device scratch: a run's table (sources, lengths, offsets), then
        /// its packed bytes; `capacity` bytes, 0 before the first run.
        scratch: u64,
        capacity: usize,
    },
}

/// A run of at least this many consecutive small copies is packed on the
/// device and brought back in one copy (each copy of its own costs a few
/// microseconds of driver time).
const PACK_MIN_RUN: usize = 8;
/// A copy of at least this many bytes is a copy of its own.
const PACK_MAX_COPY: usize = 1 << 20;
/// A packed run's bytes at most (the scratch memory kept per device).
const PACK_MAX_BYTES: usize = 32 << 20;

// SAFETY: the handles are driver objects, usable from any thread once the
// context is made current there (which `stage_batch` does); the mutex around each
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
    Ok(DeviceState { context, stream, capture, packer: Packer::Untried })
}

/// Makes `stream` (of the context current on the calling thread) wait, on
/// the device, for every staging copy queued so far on any device: a fence
/// is recorded on each staging stream (in its device's context) and waited
/// for by `stream`. For a placed write's availability event, which must
/// follow the copies that read the write's CUDA sources.
///
/// # Safety
/// `stream` is a live stream (or a default one) of the current context.
pub(crate) unsafe fn follow_staging(stream: Handle) -> Result<(), StageError> {
    let devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
    if devices.iter().all(Option::is_none) {
        return Ok(());
    }
    let mut current = std::ptr::null_mut();
    // SAFETY: the driver writes one handle.
    call("cuCtxGetCurrent", unsafe { cu_ctx_get_current(&mut current) })?;
    let mut fences = Vec::new();
    // Every staging stream of every device (ours, and the packing
    // kernels'), each in its device's context; the first failure stops.
    let mut streams = devices.iter().flatten().flat_map(|state| {
        let packing = match &state.packer {
            Packer::Ready { gpu, .. } => Some(gpu.stream().as_inner().cast()),
            _ => None,
        };
        std::iter::once(state.stream).chain(packing).map(|s| (state.context, s))
    });
    let fenced = streams.try_for_each(|(context, s)| {
        // SAFETY: the state's live context and stream; the event is new.
        let event = unsafe { call("cuCtxSetCurrent", cu_ctx_set_current(context)).and_then(|()| completion(s)) }?;
        fences.push(event);
        Ok(())
    });
    // SAFETY: the calling thread's own context, put back; then `stream` per
    // the caller waits for each fence, which is destroyed (a wait queued
    // on an event keeps what it captured).
    unsafe {
        let restored = call("cuCtxSetCurrent", cu_ctx_set_current(current));
        let mut waited = fenced.and(restored);
        for f in fences {
            if waited.is_ok() {
                waited = call("cuStreamWaitEvent", cu_stream_wait_event(stream, f, 0));
            }
            cu_event_destroy(f);
        }
        waited
    }
}

/// Device `ordinal`'s primary context (retained once per process, with
/// our copy stream and capture event), for the placement calls.
pub(crate) fn primary_context(ordinal: u32) -> Result<Handle, StageError> {
    crate::probe_device(ordinal).map_err(StageError::NoDevice)?;
    let mut devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
    let mut restored = Ok(());
    let context = state_of(&mut devices, ordinal, || {
        // Making the state sets the device's context current: put back the
        // thread's own (the caller switches contexts itself).
        let mut previous = std::ptr::null_mut();
        // SAFETY: the driver writes one handle.
        call("cuCtxGetCurrent", unsafe { cu_ctx_get_current(&mut previous) })?;
        let made = device_state(ordinal);
        // SAFETY: the context that was current (or none) a moment ago.
        restored = call("cuCtxSetCurrent", unsafe { cu_ctx_set_current(previous) });
        made
    })?
    .context;
    // A state made before the context could be put back is kept.
    restored?;
    Ok(context)
}

/// Device `ordinal`'s state in `devices`, made by `make` on first use.
fn state_of(
    devices: &mut Vec<Option<DeviceState>>,
    ordinal: u32,
    make: impl FnOnce() -> Result<DeviceState, StageError>,
) -> Result<&mut DeviceState, StageError> {
    let slot = ordinal as usize;
    if devices.len() <= slot {
        devices.resize_with(slot + 1, || None);
    }
    if devices[slot].is_none() {
        devices[slot] = Some(make()?);
    }
    Ok(devices[slot].as_mut().expect("just made"))
}

/// [`super::stage_batch`] with the driver, once the copies are laid out
/// (`offsets`, `total` from [`super::batch_offsets`]; at least one copy).
///
/// # Safety
/// As for [`super::stage_batch`].
pub(super) unsafe fn stage_batch(
    copies: &[DeviceBytes],
    offsets: &[usize],
    total: usize,
    sync: CudaSync,
) -> Result<HostCopy, BatchError> {
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
    let copied = unsafe { copy_batch(copies, offsets, total, sync) };
    // SAFETY: the context that was current (or none) a moment ago.
    let restored = call("cuCtxSetCurrent", unsafe { cu_ctx_set_current(previous) });
    let host = copied?;
    restored.map_err(|error| BatchError { copy: 0, error })?;
    Ok(host)
}

/// [`stage_batch`] once the copies are known to be on devices that are
/// there: per device (in the order they first appear), its context made
/// current, `sync` captured, its copies queued, then an event that
/// completes them, noted in the returned buffer (no host wait).
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
    let one_device = copies.iter().all(|c| c.device == copies[0].device);
    let mut done = vec![false; copies.len()];
    let mut host: Option<HostCopy> = None;
    for first in 0..copies.len() {
        if done[first] {
            continue;
        }
        let ordinal = copies[first].device;
        let at = |error| BatchError { copy: first, error };
        let state = state_of(&mut devices, ordinal, || device_state(ordinal)).map_err(at)?;
        // SAFETY: the state's handles are live (never released).
        call("cuCtxSetCurrent", unsafe { cu_ctx_set_current(state.context) }).map_err(at)?;
        // Page-locked memory is portable: allocated once, under the first
        // device's context, for every device's copies.
        let buffer = match &host {
            Some(h) => h,
            None => host.insert(pool::acquire(total).ok_or(at(StageError::HostMemory { bytes: total }))?),
        };
        let mine: Vec<usize> = (first..copies.len()).filter(|&i| copies[i].device == ordinal && !done[i]).collect();
        // Runs of small copies are packed where the copies are all on one
        // device (a run's bytes are then one range of the host buffer).
        let packing = one_device && runs(copies, &mine).any(|r| r.len() >= PACK_MIN_RUN);
        if packing && matches!(state.packer, Packer::Untried) {
            state.packer = match crate::gpu::Gpu::new(ordinal) {
                Ok(gpu) => Packer::Ready { gpu, scratch: 0, capacity: 0 },
                Err(_) => Packer::Unavailable,
            };
        }
        let packer = match &mut state.packer {
            Packer::Ready { gpu, scratch, capacity } if packing => Some((gpu, scratch, capacity)),
            _ => None,
        };
        // The packing work goes on the kernels' stream, the rest on ours.
        let stream = match &packer {
            Some((gpu, ..)) => gpu.stream().as_inner().cast::<c_void>(),
            None => state.stream,
        };
        let mut tables = Vec::new();
        // SAFETY: the state's handles are live; the client's handles and
        // addresses are the caller's promise; each destination lies within
        // `buffer` (the offsets are `batch_offsets`', its length `total`).
        let queued = unsafe {
            capture(stream, state.capture, sync).map_err(at).and_then(|()| {
                let dst = |i: usize| buffer.as_ptr().cast_mut().add(offsets[i]).cast::<c_void>();
                let direct = |i: usize| {
                    let c = copies[i];
                    match c.len {
                        0 => Ok(()),
                        len => call("cuMemcpyDtoHAsync_v2", cu_memcpy_dtoh_async(dst(i), c.src, len, stream))
                            .map_err(|error| BatchError { copy: i, error }),
                    }
                };
                match packer {
                    Some((gpu, scratch, capacity)) => {
                        for run in runs(copies, &mine) {
                            if run.len() < PACK_MIN_RUN {
                                run.iter().try_for_each(|&i| direct(i))?;
                                continue;
                            }
                            let base = offsets[run[0]];
                            let end = offsets[run[run.len() - 1]] + copies[run[run.len() - 1]].len;
                            match pack(gpu, scratch, capacity, copies, offsets, run, &mut tables) {
                                Ok(packed) => call(
                                    "cuMemcpyDtoHAsync_v2",
                                    cu_memcpy_dtoh_async(dst(run[0]), packed, end - base, stream),
                                )
                                .map_err(|error| BatchError { copy: run[0], error })?,
                                // No scratch (device memory short) or no
                                // launch: the run's copies one by one.
                                Err(_) => run.iter().try_for_each(|&i| direct(i))?,
                            }
                        }
                    }
                    None => mine.iter().try_for_each(|&i| direct(i))?,
                }
                Ok(())
            })
        };
        for &i in &mine {
            done[i] = true;
        }
        // Queued: an event completes the device's copies, waited for when
        // the bytes are read. Not queued: the stream is drained now, as a
        // copy queued before the failure must not land in memory that is
        // freed or reused.
        let completed = queued.and_then(|()| {
            // SAFETY: a live stream; the driver writes one handle.
            unsafe { completion(stream) }.map_err(at)
        });
        match completed {
            Ok(event) => {
                let host = host.as_mut().expect("made above");
                host.pending_on(state.context as usize, event as usize);
                // The packing tables are read by uploads that complete
                // before the event: they live as long as the buffer.
                tables.into_iter().for_each(|t| host.keep(t));
            }
            Err(e) => {
                // SAFETY: a live stream.
                if call("cuStreamSynchronize", unsafe { cu_stream_synchronize(stream) }).is_err() {
                    // The stream cannot be drained: the buffer may still be
                    // written, the tables still read.
                    std::mem::forget(host.take());
                    std::mem::forget(tables);
                }
                return Err(e);
            }
        }
    }
    Ok(host.expect("at least one copy"))
}

/// An event recorded on `stream` now.
///
/// # Safety
/// `stream` is live and its context current.
unsafe fn completion(stream: Handle) -> Result<Handle, StageError> {
    let mut event = std::ptr::null_mut();
    // SAFETY: the driver writes one handle; `stream` per the caller.
    unsafe {
        call("cuEventCreate", cu_event_create(&mut event, EVENT_DISABLE_TIMING))?;
        if let Err(e) = call("cuEventRecord", cu_event_record(event, stream)) {
            cu_event_destroy(event);
            return Err(e);
        }
    }
    Ok(event)
}

/// Waits for each `(context, event)` on the host and destroys the events;
/// the calling thread's current context is put back. The first failure is
/// the answer (every event is still waited for and destroyed).
///
/// # Safety
/// Each event is live, of that context, and not waited for elsewhere.
pub(super) unsafe fn settle(pending: &[(usize, usize)]) -> Result<(), StageError> {
    if pending.is_empty() {
        return Ok(());
    }
    let mut previous = std::ptr::null_mut();
    // SAFETY: the driver writes one handle.
    call("cuCtxGetCurrent", unsafe { cu_ctx_get_current(&mut previous) })?;
    let mut result = Ok(());
    for &(context, event) in pending {
        // SAFETY: a primary context, never destroyed; the event per the caller.
        let waited = unsafe {
            call("cuCtxSetCurrent", cu_ctx_set_current(context as Handle))
                .and_then(|()| call("cuEventSynchronize", cu_event_synchronize(event as Handle)))
        };
        // SAFETY: as above; destroyed once.
        unsafe { cu_event_destroy(event as Handle) };
        if result.is_ok() {
            result = waited;
        }
    }
    // SAFETY: the context that was current (or none) a moment ago.
    let restored = call("cuCtxSetCurrent", unsafe { cu_ctx_set_current(previous) });
    result.and(restored)
}

/// The runs of `mine` (indices into `copies`, in order) that packing
/// considers: consecutive copies under [`PACK_MAX_COPY`] bytes whose bytes
/// span at most [`PACK_MAX_BYTES`]; a larger copy is a run of its own.
fn runs<'a>(copies: &'a [DeviceBytes], mine: &'a [usize]) -> impl Iterator<Item = &'a [usize]> + 'a {
    let mut rest = mine;
    std::iter::from_fn(move || {
        let (&first, _) = rest.split_first()?;
        let mut n = 1;
        if copies[first].len < PACK_MAX_COPY {
            let mut bytes = copies[first].len;
            while let Some(&i) = rest.get(n) {
                bytes += copies[i].len + super::BATCH_ALIGN;
                if copies[i].len >= PACK_MAX_COPY || bytes > PACK_MAX_BYTES {
                    break;
                }
                n += 1;
            }
        }
        let (run, tail) = rest.split_at(n);
        rest = tail;
        Some(run)
    })
}

/// Queues the packing of `run` on the kernels' stream: its table uploaded
/// to the scratch memory (grown when short), then `copy_ranges` packing the
/// run's bytes after it at their batch offsets relative to the run's first;
/// returns where the packed bytes start. The table is uploaded from
/// page-locked memory (an upload from pageable memory may wait for the
/// stream, which waits for the client's work), pushed to `tables`, which
/// must live until the upload is done.
///
/// # Safety
/// The run's sources are readable on the device; the gpu's context is
/// current; the scratch memory is only used on the gpu's stream.
unsafe fn pack(
    gpu: &crate::gpu::Gpu,
    scratch: &mut u64,
    capacity: &mut usize,
    copies: &[DeviceBytes],
    offsets: &[usize],
    run: &[usize],
    tables: &mut Vec<HostCopy>,
) -> Result<u64, StageError> {
    let n = run.len();
    let base = offsets[run[0]];
    let bytes = offsets[run[n - 1]] + copies[run[n - 1]].len - base;
    let table_bytes = (3 * n * 8).next_multiple_of(256);
    let needed = table_bytes + bytes;
    let stream = gpu.stream().as_inner().cast::<c_void>();
    if needed > *capacity {
        let grown = needed.max(*capacity * 2).max(1 << 20);
        if *scratch != 0 {
            // Earlier runs on the stream may still read it.
            // SAFETY: our stream; the scratch came from `cuMemAlloc`.
            unsafe {
                call("cuStreamSynchronize", cu_stream_synchronize(stream))?;
                cu_mem_free(*scratch);
            }
            (*scratch, *capacity) = (0, 0);
        }
        let mut fresh = 0;
        // SAFETY: the driver writes one address.
        call("cuMemAlloc_v2", unsafe { cu_mem_alloc(&mut fresh, grown) })?;
        (*scratch, *capacity) = (fresh, grown);
    }
    let table = pool::acquire(3 * n * 8).ok_or(StageError::HostMemory { bytes: 3 * n * 8 })?;
    let entries = run
        .iter()
        .map(|&i| copies[i].src)
        .chain(run.iter().map(|&i| copies[i].len as u64))
        .chain(run.iter().map(|&i| (offsets[i] - base) as u64));
    for (k, v) in entries.enumerate() {
        // SAFETY: 3n u64 slots in the table's memory, which is ours and
        // 64-byte aligned; nothing reads it yet.
        unsafe { table.as_ptr().cast_mut().cast::<u64>().add(k).write(v) };
    }
    let packed = *scratch + table_bytes as u64;
    // SAFETY: the table fits the scratch's head; `tables` keeps it alive
    // until the upload is done; the run's bytes fit after it; the sources
    // are the caller's promise.
    unsafe {
        call("cuMemcpyHtoDAsync_v2", cu_memcpy_htod_async(*scratch, table.as_ptr().cast(), 3 * n * 8, stream))?;
        let (srcs, lens, offs) = (*scratch, *scratch + 8 * n as u64, *scratch + 16 * n as u64);
        gpu.copy_ranges(packed, srcs, lens, offs, n as u32)
            .map_err(|e| StageError::Launch(format!("copy_ranges: {e}")))?;
    }
    tables.push(table);
    Ok(packed)
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
