//! One CUDA device through cust: its primary context (the one Warp, PyTorch
//! and CuPy use, so their pointers, streams and events are valid here), the
//! kernels of [`crate::kernels`] loaded from PTX (the driver compiles them
//! for the device), a stream, and the launches of each kernel, split as
//! [`kernels::split`] says.
//!
//! Addresses are raw device addresses (`CUdeviceptr`), as the bindings
//! receive them from clients; the caller vouches that they are valid for
//! what each launch touches, hence every launch is `unsafe`.

use std::ffi::c_void;

use cust::context::{Context, CurrentContext};
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::function::Function;
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};

use crate::NoDevice;
use crate::kernels::{self, Kernel, Unit};

/// Why a device cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuError {
    /// No driver, the driver failed to initialise, or it has no device of
    /// that ordinal (as [`crate::probe_device`] says).
    NoDevice(NoDevice),
    /// A cust call failed (formatted with `Debug`: cust's `Display` asks the
    /// driver for the text, and fails without one).
    Cuda {
        /// What was being done.
        what: &'static str,
        /// cust's error.
        error: String,
    },
    /// A launch too large to split (one row over the per-launch unit limit).
    TooLarge,
}

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuError::NoDevice(e) => write!(f, "{e}"),
            GpuError::Cuda { what, error } => write!(f, "{what} failed: {error}"),
            GpuError::TooLarge => f.write_str("a row is too large for one kernel launch"),
        }
    }
}

impl std::error::Error for GpuError {}

fn cuda<T>(what: &'static str, r: Result<T, CudaError>) -> Result<T, GpuError> {
    r.map_err(|e| GpuError::Cuda { what, error: format!("{e:?}") })
}

/// A kernel argument, as the kernel declares it.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    /// A `u32` (counts, units per row).
    U32(u32),
    /// A `u64` (device addresses, strides).
    U64(u64),
}

/// One device, ready to launch the kernels on its stream.
pub struct Gpu {
    // Field order is drop order: the stream and module before the context.
    stream: Stream,
    module: Module,
    context: Context,
    device: Device,
    sm_count: u32,
}

impl Gpu {
    /// Device `ordinal`: opens and initialises the driver if needed,
    /// retains the device's primary context, makes it current on this
    /// thread and loads the kernels.
    pub fn new(ordinal: u32) -> Result<Gpu, GpuError> {
        crate::probe_device(ordinal).map_err(GpuError::NoDevice)?;
        let device = cuda("cuDeviceGet", Device::get_device(ordinal))?;
        let context = cuda("retaining the primary context", Context::new(device))?;
        cuda("making the context current", CurrentContext::set_current(&context))?;
        let module = cuda("loading the kernels' PTX", Module::from_ptx(kernels::PTX, &[]))?;
        let stream = cuda("creating a stream", Stream::new(StreamFlags::NON_BLOCKING, None))?;
        let sms = cuda("asking the SM count", device.get_attribute(DeviceAttribute::MultiprocessorCount))?;
        Ok(Gpu { stream, module, context, device, sm_count: sms.max(1) as u32 })
    }

    /// Makes the device's context current on the calling thread (each
    /// thread that launches must).
    pub fn make_current(&self) -> Result<(), GpuError> {
        cuda("making the context current", CurrentContext::set_current(&self.context))
    }

    /// The device's name.
    pub fn name(&self) -> Result<String, GpuError> {
        cuda("cuDeviceGetName", self.device.name())
    }

    /// The device's multiprocessor count (which caps grids).
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }

    /// The stream every launch of this value goes on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Waits for everything queued on the stream.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        cuda("cuStreamSynchronize", self.stream.synchronize())
    }

    fn function(&self, kernel: Kernel, unit: Unit) -> Result<Function<'_>, GpuError> {
        let name = kernel.entry(unit).expect("callers pass a unit the kernel has");
        cuda("looking up a kernel", self.module.get_function(name))
    }

    /// Launches `kernel` for `unit` with `args` on `stream` (the value's own
    /// when `None`).
    ///
    /// # Safety
    /// `args` are the kernel's parameters in order, and every address among
    /// them is valid on this device for what the kernel reads and writes.
    pub unsafe fn launch(
        &self,
        kernel: Kernel,
        unit: Unit,
        grid: u32,
        block: u32,
        args: &[Arg],
        stream: Option<&Stream>,
    ) -> Result<(), GpuError> {
        let f = self.function(kernel, unit)?;
        let mut values: Vec<Arg> = args.to_vec();
        let pointers: Vec<*mut c_void> = values
            .iter_mut()
            .map(|a| match a {
                Arg::U32(v) => (v as *mut u32).cast::<c_void>(),
                Arg::U64(v) => (v as *mut u64).cast::<c_void>(),
            })
            .collect();
        let stream = stream.unwrap_or(&self.stream);
        // SAFETY: the pointers point at `values`, which outlive the call (the
        // driver copies the parameters at launch); the kernel's own accesses
        // are the caller's promise.
        cuda("cuLaunchKernel", unsafe { stream.launch(&f, grid, block, 0, &pointers) })
    }

    /// A row kernel over `rows` rows, split into launches of fewer than
    /// 2^31 units; `args` builds one launch's arguments from its first row
    /// and row count.
    ///
    /// # Safety
    /// As [`Gpu::launch`], for every launch `args` makes.
    unsafe fn rows(
        &self,
        kernel: Kernel,
        unit: Unit,
        rows: u64,
        units_per_row: u32,
        row_align: u64,
        args: impl Fn(u64, u32) -> Vec<Arg>,
    ) -> Result<(), GpuError> {
        let splits = kernels::split(rows, u64::from(units_per_row), row_align).ok_or(GpuError::TooLarge)?;
        for l in splits {
            let grid = kernels::grid(u64::from(l.rows) * u64::from(units_per_row), self.sm_count);
            // SAFETY: forwarded to the caller.
            unsafe { self.launch(kernel, unit, grid, kernels::THREADS, &args(l.first_row, l.rows), None)? };
        }
        Ok(())
    }

    /// `gather_rows`: dst row i ← src row `idx[i]`, for i < `rows`
    /// (strides in units).
    ///
    /// # Safety
    /// The addresses hold what the kernel reads and writes.
    #[allow(clippy::too_many_arguments)] // the kernel's parameters
    pub unsafe fn gather_rows(
        &self,
        unit: Unit,
        dst: u64,
        src: u64,
        idx: u64,
        rows: u64,
        units_per_row: u32,
        src_stride: u64,
        dst_stride: u64,
    ) -> Result<(), GpuError> {
        let strides = (src_stride, dst_stride);
        // SAFETY: forwarded.
        unsafe { self.indexed(Kernel::GatherRows, unit, dst, src, idx, rows, units_per_row, strides) }
    }

    /// `scatter_rows`: dst row `idx[i]` ← src row i, for i < `rows`.
    ///
    /// # Safety
    /// The addresses hold what the kernel reads and writes.
    #[allow(clippy::too_many_arguments)] // the kernel's parameters
    pub unsafe fn scatter_rows(
        &self,
        unit: Unit,
        dst: u64,
        src: u64,
        idx: u64,
        rows: u64,
        units_per_row: u32,
        src_stride: u64,
        dst_stride: u64,
    ) -> Result<(), GpuError> {
        let strides = (src_stride, dst_stride);
        // SAFETY: forwarded.
        unsafe { self.indexed(Kernel::ScatterRows, unit, dst, src, idx, rows, units_per_row, strides) }
    }

    /// A gather or scatter: each launch starts at its first row of `idx`
    /// and of the side whose rows follow `idx`'s order (dst for a gather,
    /// src for a scatter); the other side is addressed through `idx`.
    ///
    /// # Safety
    /// As for [`Gpu::gather_rows`].
    #[allow(clippy::too_many_arguments)] // the kernels' parameters
    unsafe fn indexed(
        &self,
        kernel: Kernel,
        unit: Unit,
        dst: u64,
        src: u64,
        idx: u64,
        rows: u64,
        units_per_row: u32,
        (src_stride, dst_stride): (u64, u64),
    ) -> Result<(), GpuError> {
        let b = unit.bytes();
        let gather = kernel == Kernel::GatherRows;
        // SAFETY: forwarded.
        unsafe {
            self.rows(kernel, unit, rows, units_per_row, 1, |first, n| {
                let (dst, src) =
                    if gather { (dst + first * dst_stride * b, src) } else { (dst, src + first * src_stride * b) };
                vec![
                    Arg::U64(dst),
                    Arg::U64(src),
                    Arg::U64(idx + first * 8),
                    Arg::U32(n),
                    Arg::U32(units_per_row),
                    Arg::U64(src_stride),
                    Arg::U64(dst_stride),
                ]
            })
        }
    }

    /// `masked_compact`: the rows of the set bits of `mask`, packed into
    /// dst in order; `prefix` is [`kernels::mask_prefix`] of the mask.
    ///
    /// # Safety
    /// The addresses hold what the kernel reads and writes.
    #[allow(clippy::too_many_arguments)] // the kernel's parameters
    pub unsafe fn masked_compact(
        &self,
        unit: Unit,
        dst: u64,
        src: u64,
        mask: u64,
        prefix: u64,
        rows: u64,
        units_per_row: u32,
        src_stride: u64,
        dst_stride: u64,
    ) -> Result<(), GpuError> {
        let b = unit.bytes();
        // SAFETY: forwarded. Launches start on mask words (row_align 64),
        // and the prefix counts from the first word, so ranks are global.
        unsafe {
            self.rows(Kernel::MaskedCompact, unit, rows, units_per_row, 64, |first, n| {
                vec![
                    Arg::U64(dst),
                    Arg::U64(src + first * src_stride * b),
                    Arg::U64(mask + first / 64 * 8),
                    Arg::U64(prefix + first / 64 * 4),
                    Arg::U32(n),
                    Arg::U32(units_per_row),
                    Arg::U64(src_stride),
                    Arg::U64(dst_stride),
                ]
            })
        }
    }

    /// `fill_rows`: every dst row ← the pattern row.
    ///
    /// # Safety
    /// The addresses hold what the kernel reads and writes.
    pub unsafe fn fill_rows(
        &self,
        unit: Unit,
        dst: u64,
        pattern: u64,
        rows: u64,
        units_per_row: u32,
        dst_stride: u64,
    ) -> Result<(), GpuError> {
        let b = unit.bytes();
        // SAFETY: forwarded.
        unsafe {
            self.rows(Kernel::FillRows, unit, rows, units_per_row, 1, |first, n| {
                vec![
                    Arg::U64(dst + first * dst_stride * b),
                    Arg::U64(pattern),
                    Arg::U32(n),
                    Arg::U32(units_per_row),
                    Arg::U64(dst_stride),
                ]
            })
        }
    }

    /// `strided_rows`: compact dst rows ← src rows `src_stride` units apart.
    ///
    /// # Safety
    /// The addresses hold what the kernel reads and writes.
    pub unsafe fn strided_rows(
        &self,
        unit: Unit,
        dst: u64,
        src: u64,
        rows: u64,
        units_per_row: u32,
        src_stride: u64,
    ) -> Result<(), GpuError> {
        let b = unit.bytes();
        // SAFETY: forwarded.
        unsafe {
            self.rows(Kernel::StridedRows, unit, rows, units_per_row, 1, |first, n| {
                vec![
                    Arg::U64(dst + first * u64::from(units_per_row) * b),
                    Arg::U64(src + first * src_stride * b),
                    Arg::U32(n),
                    Arg::U32(units_per_row),
                    Arg::U64(src_stride),
                ]
            })
        }
    }

    /// `copy_ranges`: row r's `lens[r]` bytes at address `srcs[r]` → `dst +
    /// offs[r]` (the three arrays are device arrays of `rows` u64).
    ///
    /// # Safety
    /// The addresses hold what the kernel reads and writes.
    pub unsafe fn copy_ranges(&self, dst: u64, srcs: u64, lens: u64, offs: u64, rows: u32) -> Result<(), GpuError> {
        let grid = kernels::grid_rows(u64::from(rows), self.sm_count);
        let args = [Arg::U64(dst), Arg::U64(srcs), Arg::U64(lens), Arg::U64(offs), Arg::U32(rows)];
        // SAFETY: forwarded.
        unsafe { self.launch(Kernel::CopyRanges, Unit::U8, grid, kernels::THREADS, &args, None) }
    }

    /// `spin_ns` on `stream`: holds it for `ns` nanoseconds, then writes
    /// `value` to the u32 at `out`.
    ///
    /// # Safety
    /// `out` is a device u32.
    pub unsafe fn spin_ns(&self, ns: u64, out: u64, value: u32, stream: &Stream) -> Result<(), GpuError> {
        let args = [Arg::U64(ns), Arg::U64(out), Arg::U32(value)];
        // SAFETY: forwarded.
        unsafe { self.launch(Kernel::SpinNs, Unit::U8, 1, 1, &args, Some(stream)) }
    }
}
