//! DLPack device types and ovstage's [`Device`].
//!
//! `kDLCPU`, `kDLCUDAHost` and `kDLCUDAManaged` are memory the host reads
//! in place ([`Device::Host`]); `kDLCUDA` with device id `n` is
//! [`Device::Cuda`]`(n)`. Every other device type is unknown to ovstage.

use ovstage_abi::dlpack::{DLDevice, DLDeviceType};
use ovstage_types::{Device, Error, Result};

/// `kDLCPU`.
pub const CPU: i32 = 1;
/// `kDLCUDA`.
pub const CUDA: i32 = 2;
/// `kDLCUDAHost`.
pub const CUDA_HOST: i32 = 3;
/// `kDLCUDAManaged`.
pub const CUDA_MANAGED: i32 = 13;

/// The device a DLPack device names, or `None` for a device type ovstage
/// does not know (and for `kDLCUDA` with a negative device id).
pub fn from_dl_device(d: DLDevice) -> Option<Device> {
    match d.device_type.0 {
        CPU | CUDA_HOST | CUDA_MANAGED => Some(Device::Host),
        CUDA => u32::try_from(d.device_id).ok().map(Device::Cuda),
        _ => None,
    }
}

/// The DLPack device of `device` (`kDLCPU` for host memory).
pub fn dl_device(device: Device) -> DLDevice {
    match device {
        Device::Host => DLDevice { device_type: DLDeviceType(CPU), device_id: 0 },
        Device::Cuda(n) => DLDevice { device_type: DLDeviceType(CUDA), device_id: n as i32 },
    }
}

/// Where an input tensor's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Residency {
    /// Memory the host reads in place.
    Host,
    /// Memory of CUDA device `n`, brought to the host at enqueue.
    Cuda(u32),
}

/// The one place an input's device is decided: host memory is read in
/// place; CUDA memory (`kDLCUDA`, and `kDLCUDAManaged`, which only exists
/// with a driver) first asks the CUDA backend whether its device is there,
/// which opens the driver the first time (only a process that hands ovstage
/// CUDA memory ever does). Without the device the tensor names an invalid
/// device (`INVALID_ARGUMENT`, as the reference answers on a machine without
/// a GPU); with it, device memory is staged to the host and managed memory
/// is read on the host.
pub(crate) fn residency(d: DLDevice, what: impl std::fmt::Display) -> Result<Residency> {
    let cuda = d.device_type.0 == CUDA || d.device_type.0 == CUDA_MANAGED;
    if cuda && let Err(e) = u32::try_from(d.device_id).map_err(|_| None).and_then(|id| probe(id).map_err(Some)) {
        return Err(Error::invalid_argument(match e {
            Some(e) => format!("{what}: the tensor is on CUDA device {}, but {e}", d.device_id),
            None => format!("{what}: CUDA device id {} is negative", d.device_id),
        }));
    }
    match from_dl_device(d) {
        Some(Device::Host) => Ok(Residency::Host),
        Some(Device::Cuda(n)) => Ok(Residency::Cuda(n)),
        None => Err(Error::not_supported(format!(
            "{what}: device type {} is not supported (host memory: kDLCPU, kDLCUDAHost or kDLCUDAManaged; \
             CUDA memory: kDLCUDA)",
            d.device_type.0
        ))),
    }
}

/// Whether an input on device `d` is CUDA device memory (`true`: staged to
/// the host at enqueue) or host memory (`false`: read in place), decided as
/// for every `DLTensor` input (the same function decides), errors included. For
/// bindings whose tensors are not `DLTensor`s.
pub fn input_is_device_memory(d: DLDevice, what: impl std::fmt::Display) -> Result<bool> {
    Ok(matches!(residency(d, what)?, Residency::Cuda(_)))
}

fn probe(ordinal: u32) -> std::result::Result<(), ovstage_backend_cuda::NoDevice> {
    ovstage_backend_cuda::probe_device(ordinal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dl(device_type: i32, device_id: i32) -> DLDevice {
        DLDevice { device_type: DLDeviceType(device_type), device_id }
    }

    #[test]
    fn device_types_map_onto_devices() {
        for host in [CPU, CUDA_HOST, CUDA_MANAGED] {
            assert_eq!(from_dl_device(dl(host, 0)), Some(Device::Host));
            assert_eq!(from_dl_device(dl(host, 5)), Some(Device::Host));
        }
        assert_eq!(from_dl_device(dl(CUDA, 3)), Some(Device::Cuda(3)));
        assert_eq!(from_dl_device(dl(CUDA, -1)), None);
        for other in [0, 4, 7, 10, 12, 14, 18, 99] {
            assert_eq!(from_dl_device(dl(other, 0)), None);
        }
        assert_eq!(dl_device(Device::Host), dl(CPU, 0));
        assert_eq!(dl_device(Device::Cuda(2)), dl(CUDA, 2));
        assert_eq!(from_dl_device(dl_device(Device::Cuda(7))), Some(Device::Cuda(7)));
    }

    #[test]
    fn inputs_are_host_memory_or_a_cuda_device_that_is_there() {
        assert_eq!(residency(dl(CPU, 0), "t"), Ok(Residency::Host));
        assert_eq!(residency(dl(CUDA_HOST, 0), "t"), Ok(Residency::Host));
        let cuda = residency(dl(CUDA, 0), "t");
        let managed = residency(dl(CUDA_MANAGED, 0), "t");
        match probe(0) {
            Err(no_device) => {
                let cuda = cuda.unwrap_err();
                assert_eq!(cuda.status(), ovstage_types::Status::InvalidArgument);
                assert_eq!(cuda.to_string(), format!("t: the tensor is on CUDA device 0, but {no_device}"));
                let managed = managed.unwrap_err();
                assert_eq!(managed.status(), ovstage_types::Status::InvalidArgument);
                assert_eq!(managed.to_string(), cuda.to_string());
            }
            Ok(()) => {
                assert_eq!(cuda, Ok(Residency::Cuda(0)));
                assert_eq!(managed, Ok(Residency::Host), "managed memory is read on the host");
            }
        }
        let bad_id = residency(dl(CUDA, -4), "t").unwrap_err();
        assert_eq!(bad_id.status(), ovstage_types::Status::InvalidArgument);
        assert_eq!(bad_id.to_string(), "t: CUDA device id -4 is negative");
        let other = residency(dl(4, 0), "t").unwrap_err();
        assert_eq!(
            other.to_string(),
            "t: device type 4 is not supported (host memory: kDLCPU, kDLCUDAHost or kDLCUDAManaged; CUDA memory: kDLCUDA)"
        );
    }
}
