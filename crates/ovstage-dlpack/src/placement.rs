//! The experimental `ovstage.placement` extension's rules, shared by the C
//! ABI and the Python binding: what a placement names, when a placed call
//! is exactly the unplaced one, where and when the availability event is
//! recorded, and a placed read's device copies.
//!
//! Columns stay in host memory (device-resident mirrors are not built
//! yet), so:
//! - a write placed on a CUDA device lands in the host store, as the
//!   unplaced write does (a CUDA source is staged: copies queued at
//!   enqueue); the op's only device work is reading its CUDA sources, so
//!   its availability event is recorded at enqueue, once the op is
//!   accepted, on a stream made to follow those copies on the device;
//! - a read placed on CUDA device `n` points each group at a copy of its
//!   values there: one kept from an earlier placed read of the same image
//!   (`cache`; its stream waits for that copy's ready event of ours), or
//!   a new one queued on the placement's stream (and kept). Then it records
//!   the event on that stream (or, without one, waits on the host) before
//!   the read reports complete; so the event covers the copies the groups
//!   point at, and no write leaves device work running that it would have
//!   to cover;
//! - a host placement with an availability event records it on the calling
//!   thread's current context (captured at enqueue for a read).
//!
//! The event is recorded exactly once per accepted op, also when the op
//! fails; an enqueue rejected synchronously leaves it untouched. Nothing
//! here touches the driver unless a placement names a CUDA device or an
//! availability event: host-only clients stay CUDA-free.

use std::sync::Arc;

use ovstage::{ReadFinisher, ReadGroup, Stage};
use ovstage_abi::dlpack::DLDevice;
use ovstage_backend_cuda::placement::{self as driver, DeviceCopy, RecordOn};
use ovstage_backend_cuda::staging::StageError;
use ovstage_types::{Error, OpId, Result, Status, Timeout};

use crate::device::{CPU, CUDA, CUDA_HOST, CUDA_MANAGED};
use crate::export::{device_parts, point_at_device};

mod cache;

/// Which device's copy a placed op produces or selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `{0, 0}`: not asked (a write follows its source, a read and a map use
    /// the host).
    Unspecified,
    /// `kDLCPU`.
    Host,
    /// `kDLCUDA` device `n`, which the driver has.
    Cuda(u32),
}

/// An `ovstage_placement_t`, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The device.
    pub target: Target,
    /// The stream the op's device work runs on (0, 1 and 2 are default
    /// streams).
    pub stream: usize,
    /// The caller's `CUevent` to record, or 0.
    pub availability_event: usize,
}

/// A placed map session's placement and where its commits record
/// ([`Placement::map_record`]), kept by a binding from the map call to the
/// session's end.
#[derive(Clone, Copy, Debug)]
pub struct PlacedMap {
    /// The session's placement.
    pub placement: Placement,
    /// Where each commit records the availability event.
    pub record: Option<RecordOn>,
}

impl PlacedMap {
    /// The CUDA device the session is mapped on, if any.
    pub fn device(&self) -> Option<u32> {
        match self.placement.target {
            Target::Cuda(n) => Some(n),
            _ => None,
        }
    }
}

/// `{0, 0}`, the unspecified device.
const UNSPECIFIED: i32 = 0;

impl Placement {
    /// No placement: the unplaced call.
    pub const NONE: Placement = Placement { target: Target::Unspecified, stream: 0, availability_event: 0 };

    /// Checks a placement's fields; `call` names the call in errors. A CUDA
    /// device must be there (the driver is asked, and opened the first
    /// time): otherwise `INVALID_ARGUMENT`, as the published library
    /// answers on a machine without a GPU. Pinned or managed host memory
    /// is not a place a copy is kept: `NOT_SUPPORTED`.
    pub fn parse(device: DLDevice, stream: usize, availability_event: usize, call: &str) -> Result<Placement> {
        let (kind, id) = (device.device_type.0, device.device_id);
        let target = match kind {
            UNSPECIFIED if id == 0 => Target::Unspecified,
            CPU if id == 0 => Target::Host,
            UNSPECIFIED | CPU => {
                let what = if kind == CPU { "the host (kDLCPU)" } else { "the unspecified device (type 0)" };
                return Err(Error::invalid_argument(format!(
                    "{call}: placement device {{{kind}, {id}}}: {what} has device id 0 only"
                )));
            }
            CUDA => {
                let n = u32::try_from(id).map_err(|_| {
                    Error::invalid_argument(format!("{call}: placement names CUDA device {id}, a negative id"))
                })?;
                ovstage_backend_cuda::probe_device(n).map_err(|e| {
                    Error::invalid_argument(format!("{call}: placement names CUDA device {n}, but {e}"))
                })?;
                Target::Cuda(n)
            }
            CUDA_MANAGED
                if let Err(e) = u32::try_from(id)
                    .map_err(|_| None)
                    .and_then(|n| ovstage_backend_cuda::probe_device(n).map_err(Some)) =>
            {
                // As for a CUDA device: the device is judged first.
                return Err(Error::invalid_argument(match e {
                    Some(e) => format!("{call}: placement names CUDA-managed memory of device {id}, but {e}"),
                    None => format!("{call}: placement names CUDA device {id}, a negative id"),
                }));
            }
            CUDA_HOST | CUDA_MANAGED => {
                return Err(Error::not_supported(format!(
                    "{call}: placement on device type {kind} (pinned or managed host memory) is not supported: \
                     place on the host (kDLCPU) or on a CUDA device (kDLCUDA)"
                )));
            }
            _ => {
                return Err(Error::not_supported(format!(
                    "{call}: placement on device type {kind} is not supported (kDLCPU or kDLCUDA)"
                )));
            }
        };
        Ok(Placement { target, stream, availability_event })
    }

    /// Whether the placed call is exactly the unplaced one: no device named
    /// and no event to record (a stream alone carries no work then).
    pub fn is_unplaced(&self) -> bool {
        !matches!(self.target, Target::Cuda(_)) && self.availability_event == 0
    }

    /// Where a write's record on a default stream runs, decided at
    /// enqueue: the placed device; with none, the device of the write's
    /// CUDA sources (`sources`, distinct ordinals); otherwise the calling
    /// thread's current context. `None` when there is no event. Sources
    /// on several devices with no device named and a default stream
    /// cannot be covered by one record: `INVALID_ARGUMENT`.
    pub fn write_record(&self, sources: &[u32], call: &str) -> Result<Option<RecordOn>> {
        if self.availability_event == 0 {
            return Ok(None);
        }
        let on = match (self.target, sources) {
            (Target::Cuda(n), _) => RecordOn::Device(n),
            (Target::Unspecified, [d]) => RecordOn::Device(*d),
            (Target::Unspecified, [_, _, ..]) if self.stream <= 2 => {
                return Err(Error::invalid_argument(format!(
                    "{call}: the write's CUDA tensors are on {} devices and the placement names no device and a \
                     default stream: one availability_event record on a default stream cannot cover them (name a \
                     device or a stream)",
                    sources.len()
                )));
            }
            _ => self.captured(call)?,
        };
        Ok(Some(on))
    }

    /// Where a read's transfer and record run: the placed CUDA device, or
    /// the calling thread's current context for a host read with an event.
    pub fn read_record(&self, call: &str) -> Result<RecordOn> {
        match self.target {
            Target::Cuda(n) => Ok(RecordOn::Device(n)),
            Target::Host | Target::Unspecified => self.captured(call),
        }
    }

    /// The calling thread's current context, for a record on a default
    /// stream with no device to take one from. A thread with none current
    /// cannot name that stream's device: `INVALID_ARGUMENT` at enqueue
    /// (a specific stream carries its own context).
    fn captured(&self, call: &str) -> Result<RecordOn> {
        let ctx = driver::current_context().map_err(|e| {
            Error::invalid_argument(format!("{call}: placement has an availability_event, but {}", driver_text(&e)))
        })?;
        if ctx == 0 && self.stream <= 2 {
            return Err(Error::invalid_argument(format!(
                "{call}: placement has an availability_event on a default stream and names no CUDA device, and no \
                 CUDA context is current on the calling thread to take the device from: name a device or a stream"
            )));
        }
        Ok(RecordOn::Captured(ctx))
    }

    /// Records the availability event (when there is one) in `on`. A
    /// refused record is `OP_FAILED` naming the event.
    ///
    /// # Safety
    /// The placement's event and stream are the caller's live handles of
    /// that context, as the contract requires.
    pub unsafe fn record(&self, on: RecordOn, call: &str) -> Result<()> {
        // SAFETY: forwarded.
        unsafe { self.record_by(driver::record, on, call) }
    }

    /// [`Placement::record`] with `record` (the driver's call).
    ///
    /// # Safety
    /// As for [`Placement::record`].
    unsafe fn record_by(
        &self,
        record: unsafe fn(usize, usize, RecordOn) -> std::result::Result<(), StageError>,
        on: RecordOn,
        call: &str,
    ) -> Result<()> {
        if self.availability_event == 0 {
            return Ok(());
        }
        // SAFETY: forwarded.
        unsafe { record(self.availability_event, self.stream, on) }.map_err(|e| {
            Error::new(
                Status::OpFailed,
                format!(
                    "{call}: the op ran, but recording its availability_event {:#x} on stream {:#x} failed: {}",
                    self.availability_event,
                    self.stream,
                    driver_text(&e)
                ),
            )
        })
    }

    /// Checks a map session's placement: a CUDA device maps fixed-size
    /// attributes only (an array session, `element_sizes` given, is
    /// `NOT_SUPPORTED`, as the published library answers).
    pub fn check_map(&self, is_array: bool, call: &str) -> Result<()> {
        if let Target::Cuda(n) = self.target
            && is_array
        {
            return Err(Error::not_supported(format!(
                "{call}: array attributes cannot be mapped on a CUDA device (placement names CUDA device {n}): map \
                 fixed-size attributes there, or map arrays on the host"
            )));
        }
        Ok(())
    }

    /// Where a map session's commits record the event, decided when the
    /// session is mapped: the placed device, else the calling thread's
    /// current context. `None` when there is no event and no device.
    pub fn map_record(&self, call: &str) -> Result<Option<RecordOn>> {
        match self.target {
            Target::Cuda(n) => Ok(Some(RecordOn::Device(n))),
            _ if self.availability_event != 0 => self.captured(call).map(Some),
            _ => Ok(None),
        }
    }

    /// Records a write's availability event (at `record`, from
    /// [`Placement::write_record`]) once the write `op` was accepted: its
    /// device work is reading its CUDA sources, queued by the enqueue, and
    /// the record follows those copies on the device. A
    /// refused record fails the call after the write ran (the contract:
    /// "an operation that completes during the enqueue is rejected
    /// synchronously, after it ran"): the write is waited for, its op
    /// released, and the error names the event.
    ///
    /// # Safety
    /// As for [`Placement::record`].
    pub unsafe fn after_write(&self, stage: &Stage, op: OpId, record: Option<RecordOn>, call: &str) -> Result<OpId> {
        let Some(on) = record else { return Ok(op) };
        // SAFETY: forwarded.
        match unsafe { self.record_by(driver::record_after_staging, on, call) } {
            Ok(()) => Ok(op),
            Err(e) => {
                // The write's own outcome does not change the answer: it
                // ran, and the event was not recorded.
                let _ = stage.wait(op, Timeout::INFINITE);
                let _ = stage.release_op(op);
                Err(e)
            }
        }
    }

    /// The finisher of a read placed here (see the module doc): device
    /// copies of its groups for a CUDA target (kept ones reused, see
    /// `cache`), then the record, or a drain when there is no event. Runs
    /// once per accepted read.
    ///
    /// # Safety
    /// The placement's event and stream are the caller's live handles of
    /// `on`'s context, and stay so until the read has run.
    pub unsafe fn read_finisher(self, on: RecordOn, call: &'static str) -> ReadFinisher {
        Box::new(move |given: std::result::Result<&mut [ReadGroup], &Error>| {
            let copied = match (self.target, given) {
                // SAFETY: the caller's stream, per this function's contract.
                (Target::Cuda(n), Ok(groups)) => unsafe { copy_groups(groups, n, self.stream, call) },
                _ => Ok(Copied::default()),
            };
            let order = |c: &Copied| -> Result<()> {
                if self.availability_event != 0 {
                    // Kept copies were made on other streams: this one
                    // waits for them on the device, then the record covers
                    // them and this read's own copies.
                    for k in &c.kept {
                        // SAFETY: the caller's stream, per this function's
                        // contract.
                        unsafe { k.wait_ready(self.stream) }.map_err(|e| failed_order(call, &e))?;
                    }
                } else if matches!(self.target, Target::Cuda(_)) {
                    if c.uploaded {
                        // SAFETY: as above.
                        unsafe { driver::synchronize(self.stream, on) }.map_err(|e| failed_order(call, &e))?;
                    }
                    for k in &c.kept {
                        k.sync_ready().map_err(|e| failed_order(call, &e))?;
                    }
                }
                Ok(())
            };
            let ordered = copied.as_ref().map_err(Clone::clone).and_then(order);
            // The record comes last, and on every path.
            // SAFETY: per this function's contract.
            let recorded = unsafe { self.record(on, call) };
            if copied.is_err() && self.availability_event == 0 && matches!(self.target, Target::Cuda(_)) {
                // A failed read's queued copies must be done before its
                // groups (and their copies) go.
                // SAFETY: as above.
                let _ = unsafe { driver::synchronize(self.stream, on) };
            }
            ordered.and(recorded)
        })
    }
}

/// What copying a read's groups did: whether anything was uploaded on the
/// read's stream, and the kept copies it reused (made on other streams).
#[derive(Default)]
struct Copied {
    uploaded: bool,
    kept: Vec<Arc<DeviceCopy>>,
}

fn failed_order(call: &str, e: &StageError) -> Error {
    Error::new(
        Status::OpFailed,
        format!("{call}: ordering the read after its device copies failed: {}", driver_text(e)),
    )
}

/// Points every group of a read at a copy of its values on device `n`: a
/// kept copy of the same image and parts, or a new one uploaded on
/// `stream` (and kept).
///
/// # Safety
/// `stream` is a live stream of the device's primary context (or a default
/// one).
unsafe fn copy_groups(groups: &mut [ReadGroup], n: u32, stream: usize, call: &str) -> Result<Copied> {
    let cache = cache::device_copies();
    let mut copied = Copied::default();
    for g in groups {
        let Some(image) = g.data().map(|d| d.image_identity()) else { continue };
        let parts = device_parts(g);
        let key = cache::parts_of(&parts);
        let copy = match cache.get(n, &image, &key) {
            Some(kept) => {
                if !copied.kept.iter().any(|k| Arc::ptr_eq(k, &kept)) {
                    copied.kept.push(kept.clone());
                }
                kept
            }
            None => {
                let bytes: usize = parts.iter().map(|p| p.len()).sum();
                // SAFETY: forwarded; each group pins its memory.
                let mut copy = unsafe { DeviceCopy::upload(n, &parts, stream) }.map_err(|e| {
                    let status = if e.is_out_of_memory() { Status::OutOfMemory } else { Status::OpFailed };
                    Error::new(
                        status,
                        format!("{call}: copying the read's values to CUDA device {n} failed: {}", driver_text(&e)),
                    )
                })?;
                copied.uploaded = true;
                // SAFETY: the stream the copies were queued on.
                if let Err(e) = unsafe { copy.mark_ready(stream) } {
                    // The copy is freed on return: its queued copies must
                    // have run by then.
                    // SAFETY: as above.
                    let _ = unsafe { driver::synchronize(stream, RecordOn::Device(n)) };
                    return Err(failed_order(call, &e));
                }
                let copy = Arc::new(copy);
                cache.insert(n, &image, key, bytes, copy.clone());
                copy
            }
        };
        point_at_device(g, copy);
    }
    Ok(copied)
}

fn driver_text(e: &StageError) -> String {
    e.to_string()
}
