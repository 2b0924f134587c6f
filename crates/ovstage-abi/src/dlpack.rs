//! `ovx/dlpack/dlpack.h`: the DLPack 1.x tensor exchange types, with
//! DLPack's names and layout (our own definitions).

use core::ffi::{c_char, c_int, c_void};

use super::c_enum_carrier;

/// DLPack major version these definitions follow.
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// DLPack minor version these definitions follow.
pub const DLPACK_MINOR_VERSION: u32 = 3;

/// `DLManagedTensorVersioned::flags`: the tensor must not be written.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// `DLManagedTensorVersioned::flags`: the tensor is a copy the consumer owns.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;
/// `DLManagedTensorVersioned::flags`: sub-byte elements are padded to bytes.
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

/// A DLPack ABI version.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DLPackVersion {
    /// Major version; a change breaks the ABI.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

c_enum_carrier!(
    /// Where a tensor's memory lives (carrier of the `DLDeviceType` enum).
    DLDeviceType: i32
);

/// Enum values, as emitted into the header.
pub mod values {
    /// Where a tensor's memory lives.
    #[repr(C)]
    pub enum DLDeviceType {
        /// Host memory.
        kDLCPU = 1,
        /// CUDA device memory.
        kDLCUDA = 2,
        /// Page-locked host memory allocated through CUDA.
        kDLCUDAHost = 3,
        /// OpenCL device memory.
        kDLOpenCL = 4,
        /// Vulkan buffer.
        kDLVulkan = 7,
        /// Metal buffer.
        kDLMetal = 8,
        /// Verilog simulator buffer.
        kDLVPI = 9,
        /// ROCm device memory.
        kDLROCM = 10,
        /// Page-locked host memory allocated through ROCm.
        kDLROCMHost = 11,
        /// Reserved for extension devices.
        kDLExtDev = 12,
        /// CUDA managed (unified) memory.
        kDLCUDAManaged = 13,
        /// oneAPI unified shared memory.
        kDLOneAPI = 14,
        /// WebGPU buffer.
        kDLWebGPU = 15,
        /// Hexagon DSP memory.
        kDLHexagon = 16,
        /// Microsoft MAIA memory.
        kDLMAIA = 17,
        /// AWS Trainium memory.
        kDLTrn = 18,
    }

    /// Element type families (`DLDataType::code`).
    #[repr(C)]
    pub enum DLDataTypeCode {
        /// Signed integer.
        kDLInt = 0,
        /// Unsigned integer.
        kDLUInt = 1,
        /// IEEE floating point.
        kDLFloat = 2,
        /// Opaque handle; `bits` gives its width.
        kDLOpaqueHandle = 3,
        /// bfloat16.
        kDLBfloat = 4,
        /// Complex number (two floats).
        kDLComplex = 5,
        /// Boolean.
        kDLBool = 6,
        /// 8-bit float, e3m4.
        kDLFloat8_e3m4 = 7,
        /// 8-bit float, e4m3.
        kDLFloat8_e4m3 = 8,
        /// 8-bit float, e4m3b11fnuz.
        kDLFloat8_e4m3b11fnuz = 9,
        /// 8-bit float, e4m3fn.
        kDLFloat8_e4m3fn = 10,
        /// 8-bit float, e4m3fnuz.
        kDLFloat8_e4m3fnuz = 11,
        /// 8-bit float, e5m2.
        kDLFloat8_e5m2 = 12,
        /// 8-bit float, e5m2fnuz.
        kDLFloat8_e5m2fnuz = 13,
        /// 8-bit float, e8m0fnu.
        kDLFloat8_e8m0fnu = 14,
        /// 6-bit float, e2m3fn.
        kDLFloat6_e2m3fn = 15,
        /// 6-bit float, e3m2fn.
        kDLFloat6_e3m2fn = 16,
        /// 4-bit float, e2m1fn.
        kDLFloat4_e2m1fn = 17,
    }
}

/// A device: its type and ordinal.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DLDevice {
    /// The device type.
    pub device_type: DLDeviceType,
    /// Ordinal of the device among those of its type.
    pub device_id: i32,
}

/// An element type: family, bit width and vector lanes.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DLDataType {
    /// A `DLDataTypeCode` value.
    pub code: u8,
    /// Bits of one lane.
    pub bits: u8,
    /// Lanes per element (1 for scalars).
    pub lanes: u16,
}

/// A tensor: memory, device, element type, shape and strides. The memory
/// and the shape and stride arrays belong to whoever produced it.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct DLTensor {
    /// Start of the memory; add `byte_offset` to reach the first element.
    pub data: *mut c_void,
    /// Where the memory lives.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or NULL for compact row-major.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// A tensor with an owner (DLPack 0.x form, without a version).
#[repr(C)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// The owner's context.
    pub manager_ctx: *mut c_void,
    /// Called once by the consumer when it no longer needs the tensor.
    pub deleter: Option<unsafe extern "C" fn(self_: *mut DLManagedTensor)>,
}

/// A tensor with an owner, a version and flags (DLPack 1.x form).
#[repr(C)]
pub struct DLManagedTensorVersioned {
    /// The DLPack version the producer follows.
    pub version: DLPackVersion,
    /// The owner's context.
    pub manager_ctx: *mut c_void,
    /// Called once by the consumer when it no longer needs the tensor.
    pub deleter: Option<unsafe extern "C" fn(self_: *mut DLManagedTensorVersioned)>,
    /// `DLPACK_FLAG_BITMASK_*` bits.
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

/// Allocates a managed tensor shaped like `prototype`; reports errors
/// through `set_error`.
pub type DLPackManagedTensorAllocator = Option<
    unsafe extern "C" fn(
        prototype: *mut DLTensor,
        out: *mut *mut DLManagedTensorVersioned,
        error_ctx: *mut c_void,
        set_error: Option<unsafe extern "C" fn(error_ctx: *mut c_void, kind: *const c_char, message: *const c_char)>,
    ) -> c_int,
>;

/// Exports a Python object as a managed tensor without synchronizing.
pub type DLPackManagedTensorFromPyObjectNoSync =
    Option<unsafe extern "C" fn(py_object: *mut c_void, out: *mut *mut DLManagedTensorVersioned) -> c_int>;

/// Views a Python object as a tensor without synchronizing.
pub type DLPackDLTensorFromPyObjectNoSync =
    Option<unsafe extern "C" fn(py_object: *mut c_void, out: *mut DLTensor) -> c_int>;

/// Gives the current work stream of a device.
pub type DLPackCurrentWorkStream = Option<
    unsafe extern "C" fn(device_type: DLDeviceType, device_id: i32, out_current_stream: *mut *mut c_void) -> c_int,
>;

/// Wraps a managed tensor into a Python object without synchronizing.
pub type DLPackManagedTensorToPyObjectNoSync =
    Option<unsafe extern "C" fn(tensor: *mut DLManagedTensorVersioned, out_py_object: *mut *mut c_void) -> c_int>;

/// Header of a DLPack exchange API table.
#[repr(C)]
pub struct DLPackExchangeAPIHeader {
    /// Version of the table.
    pub version: DLPackVersion,
    /// An older table this one extends, or NULL.
    pub prev_api: *mut DLPackExchangeAPIHeader,
}

/// The DLPack exchange API table a framework publishes.
#[repr(C)]
pub struct DLPackExchangeAPI {
    /// Version and chain.
    pub header: DLPackExchangeAPIHeader,
    /// See [`DLPackManagedTensorAllocator`].
    pub managed_tensor_allocator: DLPackManagedTensorAllocator,
    /// See [`DLPackManagedTensorFromPyObjectNoSync`].
    pub managed_tensor_from_py_object_no_sync: DLPackManagedTensorFromPyObjectNoSync,
    /// See [`DLPackManagedTensorToPyObjectNoSync`].
    pub managed_tensor_to_py_object_no_sync: DLPackManagedTensorToPyObjectNoSync,
    /// See [`DLPackDLTensorFromPyObjectNoSync`].
    pub dltensor_from_py_object_no_sync: DLPackDLTensorFromPyObjectNoSync,
    /// See [`DLPackCurrentWorkStream`].
    pub current_work_stream: DLPackCurrentWorkStream,
}
