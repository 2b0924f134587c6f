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

/// The one place an input on a device this build cannot read is refused:
/// `Ok` for memory the host reads in place. CUDA memory (`kDLCUDA`, and
/// `kDLCUDAManaged`, which only exists with a driver) first asks the CUDA
/// backend whether its device is there, which opens the driver the first
/// time (only a process that hands ovstage CUDA memory ever does): without
/// the device the tensor names an invalid device (`INVALID_ARGUMENT`, as the
/// reference answers on a machine without a GPU); with it, device writes
/// are `NOT_SUPPORTED` (not implemented yet) and managed memory is read on
/// the host.
pub(crate) fn require_host(d: DLDevice, what: impl std::fmt::Display) -> Result<()> {
    let cuda = d.device_type.0 == CUDA || d.device_type.0 == CUDA_MANAGED;
    if cuda && let Err(e) = u32::try_from(d.device_id).map_err(|_| None).and_then(|id| probe(id).map_err(Some)) {
        return Err(Error::invalid_argument(match e {
            Some(e) => format!("{what}: the tensor is on CUDA device {}, but {e}", d.device_id),
            None => format!("{what}: CUDA device id {} is negative", d.device_id),
        }));
    }
    match from_dl_device(d) {
        Some(Device::Host) => Ok(()),
        _ if d.device_type.0 == CUDA => Err(Error::not_supported(format!(
            "{what}: writes from CUDA device memory are not implemented yet (CUDA device {} is there; \
             copy the tensor to host memory, kDLCPU or kDLCUDAHost, and write that)",
            d.device_id
        ))),
        _ => Err(Error::not_supported(format!(
            "{what}: device type {} is not supported (host memory: kDLCPU, kDLCUDAHost or kDLCUDAManaged)",
            d.device_type.0
        ))),
    }
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
    fn only_host_memory_is_imported() {
        assert!(require_host(dl(CPU, 0), "t").is_ok());
        assert!(require_host(dl(CUDA_HOST, 0), "t").is_ok());
        let cuda = require_host(dl(CUDA, 0), "t").unwrap_err();
        let managed = require_host(dl(CUDA_MANAGED, 0), "t");
        match probe(0) {
            Err(no_device) => {
                assert_eq!(cuda.status(), ovstage_types::Status::InvalidArgument);
                assert_eq!(cuda.to_string(), format!("t: the tensor is on CUDA device 0, but {no_device}"));
                let managed = managed.unwrap_err();
                assert_eq!(managed.status(), ovstage_types::Status::InvalidArgument);
                assert_eq!(managed.to_string(), cuda.to_string());
            }
            Ok(()) => {
                assert_eq!(cuda.status(), ovstage_types::Status::NotSupported);
                assert!(cuda.to_string().contains("writes from CUDA device memory are not implemented yet"), "{cuda}");
                assert!(managed.is_ok(), "managed memory is read on the host");
            }
        }
        let bad_id = require_host(dl(CUDA, -4), "t").unwrap_err();
        assert_eq!(bad_id.status(), ovstage_types::Status::InvalidArgument);
        assert_eq!(bad_id.to_string(), "t: CUDA device id -4 is negative");
        let other = require_host(dl(4, 0), "t").unwrap_err();
        assert_eq!(
            other.to_string(),
            "t: device type 4 is not supported (host memory: kDLCPU, kDLCUDAHost or kDLCUDAManaged)"
        );
    }
}
