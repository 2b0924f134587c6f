//! Read groups and map groups as DLPack, without copying.
//!
//! Two forms:
//! - Borrowed `DLTensor`s ([`ReadTensors`], [`MapTensors`]): the holder
//!   owns the group and the descriptors (with their shape and stride
//!   arrays); the descriptors are valid while the holder lives. This is
//!   what the C ABI hands out in `ovstage_data_t`.
//! - Owned managed tensors ([`ExportedVersioned`], DLPack 1.x, and
//!   [`ExportedLegacy`]): one tensor of a group, with a Rust owner that
//!   keeps its memory alive (a clone of the read group, or the map group's
//!   owner). The deleter drops that owner, exactly once: either the
//!   consumer calls it after [`ExportedVersioned::into_raw`], or dropping
//!   the value does. Read data carries [`Flags::READ_ONLY`]; the legacy
//!   form cannot say so.
//!
//! Every export fills `DLDevice` from the device of the exported memory:
//! host memory (`kDLCPU`) for the CPU store.

use std::borrow::BorrowMut;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::sync::Arc;

use ovstage::{MapGroup, Prepared, ReadGroup, ReadHandle, Stage, Timeout};
use ovstage_abi::dlpack::{
    DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPACK_FLAG_BITMASK_IS_COPIED,
    DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_MAJOR_VERSION,
    DLPACK_MINOR_VERSION, DLPackVersion, DLTensor,
};
use ovstage_backend_cuda::placement::{DeviceCopy, RecordOn, synchronize};
use ovstage_backend_cuda::staging::StageError;
use ovstage_types::{DType, Device, Error, Result};
use smallvec::SmallVec;

use crate::device::dl_device;

bitflags::bitflags! {
    /// `DLManagedTensorVersioned::flags`.
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub struct Flags: u64 {
        /// The consumer must not write the tensor (read groups).
        const READ_ONLY = DLPACK_FLAG_BITMASK_READ_ONLY;
        /// The tensor is a copy the consumer owns.
        const IS_COPIED = DLPACK_FLAG_BITMASK_IS_COPIED;
        /// Sub-byte elements are padded to whole bytes.
        const IS_SUBBYTE_TYPE_PADDED = DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
    }
}

/// The DLPack element type of `d`.
pub fn dl_dtype(d: DType) -> DLDataType {
    DLDataType { code: d.code as u8, bits: d.bits, lanes: d.lanes }
}

/// The device a read group's memory lives in (a tombstone group has no
/// data; it is reported as host memory).
fn read_device(group: &ReadGroup) -> Device {
    group.data().map_or(Device::Host, |d| d.device())
}

/// The device a map group's buffer lives in.
fn map_device(group: &MapGroup) -> Device {
    group.device()
}

/// Dimensions of one tensor as `build` collects them: the shape, then the
/// strides.
type Dims = SmallVec<[i64; INLINE_DIMS]>;

/// Shape plus strides entries kept inline for a single tensor (`[n, S, S]`
/// and its strides fit).
const INLINE_DIMS: usize = 8;

/// One DLTensor and the shape and stride arrays it points into, in one
/// allocation (a fixed-size group's single tensor).
struct OneTensor {
    tensor: DLTensor,
    dims: [i64; INLINE_DIMS],
}

// SAFETY: `tensor` points into `dims` (this value's own heap memory, as it
// lives in a box, alone or in a read holder's) and into a group's image or
// buffer (heap memory the group pins); nothing is written through it by
// us, so the box can move to another thread.
unsafe impl Send for OneTensor {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for OneTensor {}

impl OneTensor {
    /// A descriptor of nothing (null pointers), to be filled in place.
    fn empty() -> OneTensor {
        let device = dl_device(Device::Host);
        OneTensor {
            tensor: dl_tensor(std::ptr::null(), device, DType::F32, 0, std::ptr::null_mut()),
            dims: [0; INLINE_DIMS],
        }
    }

    /// Whether a tensor of this shape (its length) and these strides fits
    /// in `dims`.
    fn fits(shape: usize, strides: &[i64]) -> bool {
        shape == strides.len() && 2 * strides.len() <= INLINE_DIMS
    }

    /// Describes the tensor in place, its shape and strides copied into
    /// `dims` (they must fit: [`OneTensor::fits`]). The descriptor points
    /// into this value, so it must not move while the descriptor is used:
    /// it lives in a box.
    fn fill(
        &mut self,
        device: DLDevice,
        dtype: DType,
        data: *const u8,
        shape: impl ExactSizeIterator<Item = i64>,
        strides: &[i64],
    ) {
        let ndim = strides.len();
        let mut shape = shape;
        // One loop for both (at most four dimensions): two plain copy loops
        // became two calls to `memcpy` for one to three values each.
        for (i, stride) in strides.iter().enumerate().take(INLINE_DIMS / 2) {
            self.dims[i] = shape.next().unwrap_or(0);
            self.dims[ndim + i] = *stride;
        }
        self.tensor = dl_tensor(data, device, dtype, ndim, self.dims.as_mut_ptr());
    }
}

/// DLTensors over views, with the shape and stride arrays they point into.
/// A single tensor takes one allocation; more take two (tensors and dims),
/// whatever their count.
enum Tensors {
    None,
    One(Box<OneTensor>),
    Many { tensors: Box<[DLTensor]>, _dims: Box<[i64]> },
}

fn dl_tensor(data: *const u8, device: DLDevice, dtype: DType, ndim: usize, dims: *mut i64) -> DLTensor {
    DLTensor {
        data: data.cast_mut().cast(),
        device,
        ndim: ndim as i32,
        dtype: dl_dtype(dtype),
        shape: dims,
        // `wrapping_add`: `dims` holds the shape and then `ndim` strides,
        // so the result is within it (or `dims` itself when `ndim` is 0).
        strides: dims.wrapping_add(ndim),
        byte_offset: 0,
    }
}

impl Tensors {
    /// `count` tensors of element type `dtype` on `device`;
    /// `describe(i, dims)` pushes tensor `i`'s shape and then its strides
    /// onto the empty `dims` and returns its data pointer.
    fn build(
        device: Device,
        dtype: DType,
        count: usize,
        mut describe: impl FnMut(usize, &mut Dims) -> *const u8,
    ) -> Tensors {
        let device = dl_device(device);
        let mut scratch = Dims::new();
        match count {
            0 => Tensors::None,
            1 => {
                let data = describe(0, &mut scratch);
                let (shape, strides) = scratch.split_at(scratch.len() / 2);
                Tensors::one(device, dtype, data, shape.iter().copied(), strides)
            }
            n => {
                let mut views = Vec::with_capacity(n);
                for i in 0..n {
                    scratch.clear();
                    let data = describe(i, &mut scratch);
                    views.push((data, scratch.clone()));
                }
                Tensors::many(device, dtype, views)
            }
        }
    }

    /// One tensor with `shape` and `strides` (as many), in one box; in
    /// the many-tensor form when they do not fit its inline dims.
    fn one(
        device: DLDevice,
        dtype: DType,
        data: *const u8,
        shape: impl ExactSizeIterator<Item = i64>,
        strides: &[i64],
    ) -> Tensors {
        if !OneTensor::fits(shape.len(), strides) {
            let dims = shape.chain(strides.iter().copied()).collect();
            return Tensors::many(device, dtype, vec![(data, dims)]);
        }
        let mut one = Box::new(OneTensor::empty());
        // The box's heap memory never moves, so the pointers into `dims`
        // stay valid as long as it lives.
        one.fill(device, dtype, data, shape, strides);
        Tensors::One(one)
    }

    /// One tensor per entry of `data` and `lengths`, all of element type
    /// `dtype` on `device` with the shape `[n, trailing...]` (`n` from
    /// `lengths`) and compact row-major strides: an array group's tensors.
    /// The strides do not depend on `n`, so the tensors share one strides
    /// array, and consecutive tensors of the same `n` share one shape
    /// array. Two allocations (tensors and dims) whatever the count.
    fn rows(
        device: Device,
        dtype: DType,
        trailing: &[u64],
        mut data: impl ExactSizeIterator<Item = *const u8>,
        lengths: impl ExactSizeIterator<Item = u64> + Clone,
    ) -> Tensors {
        let count = data.len();
        debug_assert_eq!(count, lengths.len());
        let ndim = 1 + trailing.len();
        if count <= 1 {
            let mut lengths = lengths;
            return Tensors::build(device, dtype, count, |_, dims| {
                let mut shape: SmallVec<[u64; 3]> = SmallVec::from_slice(&[lengths.next().unwrap_or(0)]);
                shape.extend_from_slice(trailing);
                push_compact(dims, &shape);
                data.next().unwrap_or(std::ptr::null())
            });
        }
        // `dims`: the shared strides (those of `[0, trailing...]`), then
        // the shapes, one per run of tensors with the same `n`.
        let mut first: SmallVec<[u64; 3]> = SmallVec::from_slice(&[0]);
        first.extend_from_slice(trailing);
        let mut dims = Dims::new();
        push_compact(&mut dims, &first);
        dims.drain(..ndim);
        let mut dims = dims.into_vec();
        let mut runs = Runs::default();
        for n in lengths.clone() {
            if runs.starts(n) {
                dims.push(n as i64);
                dims.extend(trailing.iter().map(|d| *d as i64));
            }
        }
        let mut dims = dims.into_boxed_slice();
        let base = dims.as_mut_ptr();
        let template = DLTensor {
            data: std::ptr::null_mut(),
            device: dl_device(device),
            ndim: ndim as i32,
            dtype: dl_dtype(dtype),
            shape: base,
            strides: base,
            byte_offset: 0,
        };
        // The same runs again: the `k`-th run's shape is at `ndim * (k + 1)`.
        let mut runs = Runs::default();
        let mut shape = base;
        let tensors = data
            .zip(lengths)
            .map(move |(bytes, n)| {
                if runs.starts(n) {
                    // `wrapping_add`: within `dims`, which this value owns
                    // and never reallocates.
                    shape = shape.wrapping_add(ndim);
                }
                DLTensor { data: bytes.cast_mut().cast(), shape, ..template }
            })
            .collect();
        Tensors::Many { tensors, _dims: dims }
    }

    fn many(device: DLDevice, dtype: DType, views: Vec<(*const u8, Dims)>) -> Tensors {
        let total = views.iter().map(|(_, d)| d.len()).sum();
        let mut dims = Vec::with_capacity(total);
        let mut parts = Vec::with_capacity(views.len());
        for (data, d) in &views {
            parts.push((*data, dims.len(), d.len() / 2));
            dims.extend_from_slice(d);
        }
        let mut dims = dims.into_boxed_slice();
        let base = dims.as_mut_ptr();
        let tensors = parts
            .into_iter()
            // SAFETY: `at + 2 * ndim` is within `dims`, which this value
            // owns and never reallocates.
            .map(|(data, at, ndim)| dl_tensor(data, device, dtype, ndim, unsafe { base.add(at) }))
            .collect();
        Tensors::Many { tensors, _dims: dims }
    }

    fn as_slice(&self) -> &[DLTensor] {
        match self {
            Tensors::None => &[],
            Tensors::One(one) => std::slice::from_ref(&one.tensor),
            Tensors::Many { tensors, .. } => tensors,
        }
    }

    fn as_ptr(&self) -> *const DLTensor {
        array_ptr(self.as_slice())
    }
}

/// The first of `tensors`, or NULL when there are none (what C is given).
fn array_ptr(tensors: &[DLTensor]) -> *const DLTensor {
    if tensors.is_empty() { std::ptr::null() } else { tensors.as_ptr() }
}

/// Runs of equal values in a sequence.
#[derive(Default)]
struct Runs(Option<u64>);

impl Runs {
    /// Whether `n`, the next value, starts a run.
    fn starts(&mut self, n: u64) -> bool {
        let new = self.0 != Some(n);
        self.0 = Some(n);
        new
    }
}

/// Pushes `shape` and its compact row-major strides onto `dims`.
fn push_compact(dims: &mut Dims, shape: &[u64]) {
    dims.extend(shape.iter().map(|d| *d as i64));
    let at = dims.len();
    dims.extend(std::iter::repeat_n(1i64, shape.len()));
    for i in (0..shape.len().saturating_sub(1)).rev() {
        dims[at + i] = dims[at + i + 1] * shape[i + 1] as i64;
    }
}

/// A read group and borrowed `DLTensor`s over its data (one per tensor of
/// the group; none for a tombstone group), valid while this lives. The
/// memory is the store's (zero-copy) and must not be written.
pub struct ReadTensors(Box<HeldRead>);

/// What a [`ReadTensors`] holds, in one allocation that never moves (a
/// group is a few hundred bytes, and its holder is moved around: into a
/// registry and out): the group and its descriptors, a fixed-size group's
/// one descriptor beside it (so a fetched group costs one allocation).
struct HeldRead {
    group: ReadGroup,
    /// A fixed-size group's descriptor, when `descriptors` says so.
    one: OneTensor,
    descriptors: Descriptors,
    /// The device copy the descriptors point into, for a read placed on a
    /// device.
    device_copy: Option<Arc<DeviceCopy>>,
}

/// Where a [`HeldRead`]'s descriptors are.
enum Descriptors {
    /// In its `one`.
    Beside,
    /// Built apart (none, an array group's, or prepared by the read).
    Built(Tensors),
}

// SAFETY: the raw pointers inside point into the group's pinned immutable
// storage and into the holder's own box or the descriptors' boxes; none is
// tied to a thread, and nothing writes through them.
unsafe impl Send for ReadTensors {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for ReadTensors {}

/// A group's descriptors built while its read ran ([`prepare`], or
/// [`point_at_device`] with the device copy they point into), carried in
/// the group until [`ReadTensors::new`] takes them.
struct PreparedTensors(Tensors, Option<Arc<DeviceCopy>>);

// SAFETY: the descriptors' pointers point into the group's image (shared,
// immutable heap memory the group pins) and into the descriptors' own
// boxes; nothing is written through them, so moving them to the fetching
// thread is sound.
unsafe impl Send for PreparedTensors {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for PreparedTensors {}

/// Builds an array group's descriptors ahead of its fetch: the C library
/// installs this as its stages' [`ovstage::GroupPreparer`], so the
/// `DLTensor`s of an array group (one per prim) are written by the read's
/// job on a lane and the fetch only hands them over. A fixed-size group's
/// one descriptor costs less to write than a box of its own: the fetch
/// ([`ReadTensors::fetch`]) writes it beside the group.
pub fn prepare(group: &ReadGroup) -> Option<Prepared> {
    match group.data() {
        // A fixed-size group's one descriptor is written at the fetch,
        // beside the group in its holder's box (one allocation per fetched
        // group, where building it here took one more); a tombstone group
        // has none.
        Some(data) if data.is_array() => Some(Box::new(PreparedTensors(describe(group), None))),
        _ => None,
    }
}

/// The bytes a copy of `group`'s values consists of, one part per tensor
/// (the fixed-size tensor, or each array row); none for a tombstone group.
pub fn device_parts(group: &ReadGroup) -> Vec<&[u8]> {
    match group.data() {
        None => Vec::new(),
        Some(data) if data.is_array() => data.array_bytes().collect(),
        Some(data) => vec![data.bytes()],
    }
}

/// Points `group`'s descriptors at `copy`, a copy of its values on a CUDA
/// device made from [`device_parts`] (part `i` is tensor `i`): what a read
/// placed on a device hands out. The group keeps the copy until released.
pub fn point_at_device(group: &mut ReadGroup, copy: Arc<DeviceCopy>) {
    let at = |i: usize, _: *const u8| copy.part(i) as usize as *const u8;
    let tensors = describe_as(group, Device::Cuda(copy.ordinal()), at);
    group.set_prepared(Box::new(PreparedTensors(tensors, Some(copy))));
}

/// `group`'s descriptors.
fn describe(group: &ReadGroup) -> Tensors {
    describe_as(group, read_device(group), |_, p| p)
}

/// `group`'s descriptors on `device`, tensor `i`'s data pointer `p` mapped
/// to `at(i, p)` (`p` itself for the group's own memory).
fn describe_as(group: &ReadGroup, device: Device, at: impl Fn(usize, *const u8) -> *const u8) -> Tensors {
    match group.data() {
        None => Tensors::None,
        Some(data) if data.is_array() => Tensors::rows(
            device,
            data.dtype(),
            data.element_dims(),
            data.array_bytes().enumerate().map(|(i, b)| at(i, b.as_ptr())),
            data.array_lengths(),
        ),
        // A fixed-size group is one tensor whose shape and strides the
        // group already holds: copied straight into the tensor's box (no
        // tensor view, no scratch list).
        Some(data) => Tensors::one(
            dl_device(device),
            data.dtype(),
            at(0, data.as_ptr()),
            data.shape().iter().map(|d| *d as i64),
            data.strides(),
        ),
    }
}

impl HeldRead {
    /// `group`, its descriptors not described yet.
    #[inline(always)]
    fn bare(group: ReadGroup) -> HeldRead {
        HeldRead { group, one: OneTensor::empty(), descriptors: Descriptors::Built(Tensors::None), device_copy: None }
    }

    /// Takes the descriptors the read built, or describes the group: a
    /// fixed-size group in `one`.
    fn describe(&mut self) {
        let HeldRead { group, one, descriptors, device_copy } = self;
        if let Some(Ok(prepared)) = group.take_prepared().map(|p| p.downcast::<PreparedTensors>()) {
            let PreparedTensors(tensors, copy) = *prepared;
            *descriptors = Descriptors::Built(tensors);
            *device_copy = copy;
            return;
        }
        *descriptors = match group.data() {
            Some(data) if !data.is_array() && OneTensor::fits(data.shape().len(), data.strides()) => {
                let device = dl_device(read_device(group));
                one.fill(device, data.dtype(), data.as_ptr(), data.shape().iter().map(|d| *d as i64), data.strides());
                Descriptors::Beside
            }
            _ => Descriptors::Built(describe(group)),
        };
    }
}

impl ReadTensors {
    /// Describes `group`'s tensors, with the descriptors [`prepare`] built
    /// when there are some.
    pub fn new(group: ReadGroup) -> ReadTensors {
        let mut held = Box::new(HeldRead::bare(group));
        held.describe();
        ReadTensors(held)
    }

    /// The next group of `read` and its descriptors
    /// ([`ovstage::Stage::fetch_read_next`]): the group goes from the
    /// read's queue into this holder's box in one copy, and a fixed-size
    /// group's descriptor is written beside it, one allocation in all.
    pub fn fetch(stage: &Stage, read: ReadHandle, timeout: Timeout) -> Result<Option<ReadTensors>> {
        let fetched = stage.fetch_read_next_into(read, timeout, HeldRead::bare)?;
        Ok(fetched.map(|mut held| {
            held.describe();
            ReadTensors(held)
        }))
    }

    /// The device the descriptors point into: the group's own memory, or
    /// the device a placed read copied it to.
    pub fn device(&self) -> Device {
        self.0.device_copy.as_ref().map_or_else(|| read_device(&self.0.group), |c| Device::Cuda(c.ordinal()))
    }

    /// The group.
    pub fn group(&self) -> &ReadGroup {
        &self.0.group
    }

    /// Gives the group back (the descriptors are gone).
    pub fn into_group(self) -> ReadGroup {
        self.0.group
    }

    /// The descriptors.
    pub fn tensors(&self) -> &[DLTensor] {
        match &self.0.descriptors {
            Descriptors::Beside => std::slice::from_ref(&self.0.one.tensor),
            Descriptors::Built(tensors) => tensors.as_slice(),
        }
    }

    /// The descriptors' array, or NULL when there are none.
    pub fn as_ptr(&self) -> *const DLTensor {
        array_ptr(self.tensors())
    }
}

/// A writable map group and borrowed `DLTensor`s over its buffer (one per
/// tensor of the group), valid while this lives. Writing through them
/// fills the group.
pub struct MapTensors {
    group: MapGroup,
    tensors: Tensors,
    /// A session mapped on a CUDA device: the copy of the buffer the
    /// descriptors point into, brought back by [`MapTensors::download`].
    device_copy: Option<DeviceCopy>,
}

// SAFETY: the raw pointers point into `group`'s buffer (heap memory that
// does not move with the struct) and `tensors`' own boxes.
unsafe impl Send for MapTensors {}

impl MapTensors {
    /// Describes `group`'s tensors.
    pub fn new(mut group: MapGroup) -> MapTensors {
        let device = map_device(&group);
        let dtype = group.dtype();
        if group.is_array() {
            // One tensor per prim, sharing strides and shapes (see
            // `Tensors::rows`): a session over thousands of prims builds
            // its descriptors without a vector per tensor.
            let base = group.bytes_mut().as_mut_ptr().cast_const();
            let tensors = Tensors::rows(
                device,
                dtype,
                &group.element_dims(),
                // `wrapping_add`: each offset is within the buffer.
                group.array_tensors().map(|(at, _)| base.wrapping_add(at as usize)),
                group.array_tensors().map(|(_, rows)| rows),
            );
            return MapTensors { group, tensors, device_copy: None };
        }
        let n = group.tensor_count();
        let tensors = Tensors::build(device, dtype, n, |i, dims| {
            push_compact(dims, &group.shape(i));
            group.tensor_bytes_mut(i).as_mut_ptr().cast_const()
        });
        MapTensors { group, tensors, device_copy: None }
    }

    /// Describes `group`'s tensors over a copy of its buffer on CUDA device
    /// `ordinal` (a map placed there, see [`map_group_on_device`]). The
    /// client writes the device copy; [`MapTensors::download`] brings it
    /// back before the commit. A failure gives the group back.
    ///
    /// # Safety
    /// As for [`map_group_on_device`].
    pub unsafe fn on_device(
        mut group: MapGroup,
        ordinal: u32,
        stream: usize,
    ) -> std::result::Result<MapTensors, Box<(StageError, MapGroup)>> {
        // SAFETY: forwarded.
        let copy = match unsafe { map_group_on_device(&mut group, ordinal, stream) } {
            Ok(c) => c,
            Err(e) => return Err(Box::new((e, group))),
        };
        let dtype = group.dtype();
        let n = group.tensor_count();
        let tensors = Tensors::build(Device::Cuda(ordinal), dtype, n, |i, dims| {
            push_compact(dims, &group.shape(i));
            copy.part(i) as usize as *const u8
        });
        Ok(MapTensors { group, tensors, device_copy: Some(copy) })
    }

    /// Copies a device session's buffer back from the device (the client's
    /// `write_done_sync` must have been waited for); nothing for a host
    /// session.
    pub fn download(&mut self) -> std::result::Result<(), StageError> {
        match &self.device_copy {
            Some(copy) => download_map_group(copy, &mut self.group),
            None => Ok(()),
        }
    }

    /// The device the descriptors point into.
    pub fn device(&self) -> Device {
        self.device_copy.as_ref().map_or_else(|| map_device(&self.group), |c| Device::Cuda(c.ordinal()))
    }

    /// The group.
    pub fn group(&self) -> &MapGroup {
        &self.group
    }

    /// Gives the group back (the descriptors are gone).
    pub fn into_group(self) -> MapGroup {
        self.group
    }

    /// The descriptors.
    pub fn tensors(&self) -> &[DLTensor] {
        self.tensors.as_slice()
    }

    /// The descriptors' array, or NULL when there are none.
    pub fn as_ptr(&self) -> *const DLTensor {
        self.tensors.as_ptr()
    }
}

/// A copy of a map group's buffer on CUDA device `ordinal` (one part per
/// tensor), uploaded and finished on `stream` before this returns, so the
/// client may write it at once: a map session placed on a device.
///
/// # Safety
/// `stream` is 0, 1, 2 or a live `CUstream` of that device's primary
/// context.
pub unsafe fn map_group_on_device(
    group: &mut MapGroup,
    ordinal: u32,
    stream: usize,
) -> std::result::Result<DeviceCopy, StageError> {
    let n = group.tensor_count();
    let parts: Vec<&[u8]> = (0..n)
        .map(|i| {
            let bytes = group.tensor_bytes_mut(i);
            // SAFETY: reborrowed shared for the upload; nothing writes the
            // buffer meanwhile (the caller's `&mut` is held throughout).
            unsafe { std::slice::from_raw_parts(bytes.as_ptr(), bytes.len()) }
        })
        .collect();
    // SAFETY: forwarded; the parts are the group's buffer, alive here.
    let copy = unsafe { DeviceCopy::upload(ordinal, &parts, stream)? };
    // SAFETY: as above: the copies finish before the buffer is used again.
    unsafe { synchronize(stream, RecordOn::Device(ordinal))? };
    Ok(copy)
}

/// Copies `copy` (made by [`map_group_on_device`]) back into `group`'s
/// buffer; the device work that wrote it must have run.
pub fn download_map_group(copy: &DeviceCopy, group: &mut MapGroup) -> std::result::Result<(), StageError> {
    for i in 0..group.tensor_count() {
        copy.download(i, group.tensor_bytes_mut(i))?;
    }
    Ok(())
}

/// One tensor to export: where its memory is and how it is laid out.
struct View {
    data: *mut u8,
    device: DLDevice,
    dtype: DLDataType,
    /// The shape, then the strides.
    dims: Dims,
}

/// The managed struct of a form of export.
trait Form: Sized {
    /// The managed tensor for `tensor`, whose deleter frees the
    /// `Ctx<Self, O>` at `ctx`.
    fn new<O: Send + 'static>(tensor: DLTensor, flags: Flags, ctx: *mut c_void) -> Self;
}

/// What a managed export allocates: the managed struct handed out, the
/// shape and stride arrays it points into, and the owner of the memory.
struct Ctx<M, O> {
    managed: Option<M>,
    dims: Box<[i64]>,
    owner: O,
}

impl Form for DLManagedTensorVersioned {
    fn new<O: Send + 'static>(tensor: DLTensor, flags: Flags, ctx: *mut c_void) -> Self {
        DLManagedTensorVersioned {
            version: DLPackVersion { major: DLPACK_MAJOR_VERSION, minor: DLPACK_MINOR_VERSION },
            manager_ctx: ctx,
            deleter: Some(delete_versioned::<O>),
            flags: flags.bits(),
            dl_tensor: tensor,
        }
    }
}

impl Form for DLManagedTensor {
    fn new<O: Send + 'static>(tensor: DLTensor, _: Flags, ctx: *mut c_void) -> Self {
        DLManagedTensor { dl_tensor: tensor, manager_ctx: ctx, deleter: Some(delete_legacy::<O>) }
    }
}

/// Frees the `Ctx` at `manager_ctx`, dropping the owner; never unwinds
/// into the caller.
///
/// # Safety
/// `ctx` is the `Box<Ctx<M, O>>` an export leaked, freed only here, once.
unsafe fn free<M, O>(ctx: *mut c_void) {
    // SAFETY: per the caller.
    let ctx = unsafe { Box::from_raw(ctx.cast::<Ctx<M, O>>()) };
    // An owner's drop must not unwind into C; if one panics, the rest of
    // it is leaked.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(ctx)));
}

/// The deleter of a versioned export owned by an `O`.
unsafe extern "C" fn delete_versioned<O: Send + 'static>(t: *mut DLManagedTensorVersioned) {
    if t.is_null() {
        return;
    }
    // SAFETY: a tensor of ours (the deleter is only reachable through
    // it): its `manager_ctx` is its `Ctx`, freed once (DLPack: the deleter
    // is called once).
    unsafe { free::<DLManagedTensorVersioned, O>((*t).manager_ctx) }
}

/// The deleter of a legacy export owned by an `O`.
unsafe extern "C" fn delete_legacy<O: Send + 'static>(t: *mut DLManagedTensor) {
    if t.is_null() {
        return;
    }
    // SAFETY: as for `delete_versioned`.
    unsafe { free::<DLManagedTensor, O>((*t).manager_ctx) }
}

/// Refused to export: why, and the owner given back.
#[derive(Debug)]
pub struct Refused<O> {
    /// Why.
    pub error: Error,
    /// The owner that was passed in.
    pub owner: O,
}

/// Builds a managed export: `describe` is called once, on the owner at its
/// final address, and gives the memory the owner keeps alive.
///
/// # Safety
/// The memory `describe` returns stays valid, at the same address, as long
/// as the owner lives and is not used (the export never touches it again
/// before dropping it).
unsafe fn export<M: Form, O: Send + 'static>(
    owner: O,
    flags: Flags,
    describe: impl FnOnce(&mut O) -> Result<View>,
) -> std::result::Result<NonNull<M>, Refused<O>> {
    let mut ctx = Box::new(Ctx::<M, O> { managed: None, dims: Box::new([]), owner });
    let view = match describe(&mut ctx.owner) {
        Ok(v) => v,
        Err(error) => return Err(Refused { error, owner: ctx.owner }),
    };
    let ndim = view.dims.len() / 2;
    ctx.dims = view.dims.as_slice().into();
    let base = ctx.dims.as_mut_ptr();
    let tensor = DLTensor {
        data: view.data.cast(),
        device: view.device,
        ndim: ndim as i32,
        dtype: view.dtype,
        shape: base,
        // `dims` holds the shape and then `ndim` strides.
        strides: base.wrapping_add(ndim),
        byte_offset: 0,
    };
    let raw = Box::into_raw(ctx);
    // SAFETY: `raw` is the box just leaked, valid and unaliased; the
    // managed struct lives inside it until the deleter frees it.
    unsafe {
        (*raw).managed = Some(M::new::<O>(tensor, flags, raw.cast()));
        Ok(NonNull::from((*raw).managed.as_mut().expect("just set")))
    }
}

/// The view of tensor `i` of a read group.
fn read_view(group: &ReadGroup, i: usize) -> Result<View> {
    let data = group.data().ok_or_else(|| {
        Error::invalid_argument("a tombstone group (deleted cells) has no tensors to export".to_owned())
    })?;
    let n = data.tensor_count();
    if i >= n {
        return Err(Error::invalid_argument(format!("tensor index {i} is out of range: the group has {n} tensors")));
    }
    let t = data.tensor(i);
    let mut dims = Dims::new();
    dims.extend(t.shape().iter().map(|d| *d as i64));
    dims.extend_from_slice(t.strides());
    let (device, dtype) = (dl_device(read_device(group)), dl_dtype(t.dtype()));
    Ok(View { data: t.bytes().as_ptr().cast_mut(), device, dtype, dims })
}

/// The view of tensor `i` of a map group.
fn map_view(group: &mut MapGroup, i: usize) -> Result<View> {
    let n = group.tensor_count();
    if i >= n {
        return Err(Error::invalid_argument(format!("tensor index {i} is out of range: the group has {n} tensors")));
    }
    let mut dims = Dims::new();
    push_compact(&mut dims, &group.shape(i));
    let (device, dtype) = (dl_device(map_device(group)), dl_dtype(group.dtype()));
    Ok(View { data: group.tensor_bytes_mut(i).as_mut_ptr(), device, dtype, dims })
}

macro_rules! exported {
    ($(#[$doc:meta])* $name:ident, $managed:ty) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name(NonNull<$managed>);

        // SAFETY: the owner inside is `Send`, DLPack deleters may run on
        // any thread, and the descriptor is only read through `&self`.
        unsafe impl Send for $name {}

        impl $name {
            /// The managed tensor (still owned by this value).
            pub fn as_ptr(&self) -> *mut $managed {
                self.0.as_ptr()
            }

            /// Hands the managed tensor to a consumer, which must call its
            /// deleter exactly once.
            pub fn into_raw(self) -> *mut $managed {
                let p = self.0.as_ptr();
                std::mem::forget(self);
                p
            }

            /// The tensor's descriptor.
            pub fn tensor(&self) -> &DLTensor {
                // SAFETY: valid until the deleter runs, which only `drop`
                // (or a consumer after `into_raw`) does.
                unsafe { &self.0.as_ref().dl_tensor }
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: ours and valid; the deleter runs only here.
                if let Some(deleter) = unsafe { self.0.as_ref().deleter } {
                    // SAFETY: called once, with the tensor itself.
                    unsafe { deleter(self.0.as_ptr()) };
                }
            }
        }
    };
}

exported!(
    /// An owned DLPack 1.x managed tensor (`DLManagedTensorVersioned`):
    /// its deleter drops the Rust owner of the memory. Dropping this value
    /// runs the deleter; [`ExportedVersioned::into_raw`] hands that duty to
    /// a consumer (for example in a `dltensor_versioned` capsule).
    ExportedVersioned,
    DLManagedTensorVersioned
);

exported!(
    /// An owned legacy managed tensor (`DLManagedTensor`, DLPack before
    /// 1.0, with no version or flags), for consumers that do not ask for a
    /// versioned one; otherwise as [`ExportedVersioned`].
    ExportedLegacy,
    DLManagedTensor
);

impl ExportedVersioned {
    /// The tensor's flags.
    pub fn flags(&self) -> Flags {
        // SAFETY: as in `tensor`.
        Flags::from_bits_retain(unsafe { self.0.as_ref().flags })
    }

    /// The DLPack version the tensor follows.
    pub fn version(&self) -> DLPackVersion {
        // SAFETY: as in `tensor`.
        unsafe { self.0.as_ref().version }
    }
}

/// Tensor `i` of a read group as a versioned managed tensor, read-only
/// ([`Flags::READ_ONLY`]). It holds a clone of the group, so its memory
/// stays valid after the group itself is dropped or released.
pub fn read_group_versioned(group: &ReadGroup, i: usize) -> Result<ExportedVersioned> {
    // SAFETY: the owner is a clone of the group, which pins the immutable
    // storage its views point into (an `Arc` of the image).
    unsafe { export(group.clone(), Flags::READ_ONLY, |g| read_view(g, i)) }.map(ExportedVersioned).map_err(|r| r.error)
}

/// Tensor `i` of a read group as a legacy managed tensor (see
/// [`read_group_versioned`]; the legacy form has no read-only flag).
pub fn read_group_legacy(group: &ReadGroup, i: usize) -> Result<ExportedLegacy> {
    // SAFETY: as for `read_group_versioned`.
    unsafe { export(group.clone(), Flags::empty(), |g| read_view(g, i)) }.map(ExportedLegacy).map_err(|r| r.error)
}

/// Tensor `i` of a map group as a writable versioned managed tensor. The
/// export keeps `owner` (the group, a box of it, or anything else owning
/// it) until its deleter runs; a refused export gives the owner back.
pub fn map_group_versioned<O: BorrowMut<MapGroup> + Send + 'static>(
    owner: O,
    i: usize,
) -> std::result::Result<ExportedVersioned, Refused<O>> {
    // SAFETY: the buffer belongs to the group `owner` owns; the export
    // holds `owner` and never uses it again, so nothing moves, frees or
    // commits the buffer before the deleter drops it.
    unsafe { export(owner, Flags::empty(), |o| map_view(o.borrow_mut(), i)) }.map(ExportedVersioned)
}

/// Tensor `i` of a map group as a writable legacy managed tensor (see
/// [`map_group_versioned`]).
pub fn map_group_legacy<O: BorrowMut<MapGroup> + Send + 'static>(
    owner: O,
    i: usize,
) -> std::result::Result<ExportedLegacy, Refused<O>> {
    // SAFETY: as for `map_group_versioned`.
    unsafe { export(owner, Flags::empty(), |o| map_view(o.borrow_mut(), i)) }.map(ExportedLegacy)
}

/// A versioned managed tensor over any memory described by `view` (its
/// shape and strides are copied; NULL strides become compact row-major
/// ones), kept alive by `owner`.
///
/// # Safety
/// `view.shape` has `view.ndim` (at least 0) readable entries and
/// `view.strides` as many or is NULL; the memory `view` describes stays
/// valid and unmoved while `owner` lives.
pub unsafe fn versioned_from_view<O: Send + 'static>(view: &DLTensor, flags: Flags, owner: O) -> ExportedVersioned {
    // SAFETY: forwarded.
    let v = unsafe { view_of(view) };
    // SAFETY: forwarded.
    let r = unsafe { export(owner, flags, |_| Ok(v)) };
    ExportedVersioned(r.unwrap_or_else(|_| unreachable!("describe never fails")))
}

/// A legacy managed tensor over any memory (see [`versioned_from_view`]).
///
/// # Safety
/// As for [`versioned_from_view`].
pub unsafe fn legacy_from_view<O: Send + 'static>(view: &DLTensor, owner: O) -> ExportedLegacy {
    // SAFETY: forwarded.
    let v = unsafe { view_of(view) };
    // SAFETY: forwarded.
    let r = unsafe { export(owner, Flags::empty(), |_| Ok(v)) };
    ExportedLegacy(r.unwrap_or_else(|_| unreachable!("describe never fails")))
}

/// A copy of a descriptor's layout (the byte offset folded into the data
/// pointer).
///
/// # Safety
/// As for [`versioned_from_view`].
unsafe fn view_of(t: &DLTensor) -> View {
    let ndim = usize::try_from(t.ndim).unwrap_or(0);
    let mut dims = Dims::new();
    if ndim > 0 {
        // SAFETY: `ndim` readable entries, per the caller.
        let shape = unsafe { std::slice::from_raw_parts(t.shape, ndim) };
        if t.strides.is_null() {
            let shape: SmallVec<[u64; 4]> = shape.iter().map(|d| *d as u64).collect();
            push_compact(&mut dims, &shape);
        } else {
            dims.extend_from_slice(shape);
            // SAFETY: as above.
            dims.extend_from_slice(unsafe { std::slice::from_raw_parts(t.strides, ndim) });
        }
    }
    View { data: t.data.cast::<u8>().wrapping_add(t.byte_offset as usize), device: t.device, dtype: t.dtype, dims }
}
