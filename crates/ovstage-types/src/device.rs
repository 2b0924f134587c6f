//! Where a payload's bytes live.

use std::fmt;

/// The memory a tensor's or a group's bytes live in. The DLPack device
/// types map onto it: `kDLCPU`, `kDLCUDAHost` and `kDLCUDAManaged` are
/// memory the host reads directly ([`Device::Host`]); `kDLCUDA` with a device
/// id is [`Device::Cuda`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Device {
    /// Host-readable memory (the CPU store's, or a client's).
    #[default]
    Host,
    /// Memory of the CUDA device with this ordinal.
    Cuda(u32),
}

impl Device {
    /// Whether the host can read the bytes in place.
    pub const fn is_host(self) -> bool {
        matches!(self, Device::Host)
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Host => f.write_str("host"),
            Device::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_name_themselves() {
        assert_eq!(Device::default(), Device::Host);
        assert!(Device::Host.is_host() && !Device::Cuda(0).is_host());
        assert_eq!((Device::Host.to_string(), Device::Cuda(3).to_string()), ("host".into(), "cuda:3".into()));
    }
}
