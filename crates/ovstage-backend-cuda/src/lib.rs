//! The CUDA backend of ovstage.
//!
//! The driver (`libcuda.so.1`) is never linked: every driver entry point
//! that cust calls is a trampoline of ours (see the `driver` module), resolved the
//! first time any of them runs. A process that never hands ovstage a CUDA
//! tensor or a device placement never opens the driver and never runs
//! `cuInit`; a machine without a driver loads the library all the same.

pub mod kernels;
pub mod placement;
pub mod staging;

#[cfg(driven)]
pub mod driver;

#[cfg(driven)]
pub mod gpu;

/// cust, for tests and tools that need device memory of their own.
#[cfg(driven)]
pub use cust;

/// Why CUDA device memory cannot be used here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoDevice {
    /// What is missing, as a sentence fragment for messages ("this machine
    /// has no usable CUDA driver (...)", "CUDA device 3 does not exist
    /// (...)").
    pub reason: String,
}

impl std::fmt::Display for NoDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// Whether CUDA device `ordinal` is there: opens and initialises the
/// driver the first time it is asked (so only a process that hands ovstage
/// CUDA memory ever does), then answers from what the driver said.
#[cfg(driven)]
pub fn probe_device(ordinal: u32) -> Result<(), NoDevice> {
    static INIT: std::sync::OnceLock<Result<driver::DriverInfo, driver::DriverError>> = std::sync::OnceLock::new();
    match INIT.get_or_init(driver::init) {
        Err(driver::DriverError::Unavailable { reason, .. }) => {
            Err(NoDevice { reason: format!("this machine has no usable CUDA driver ({reason})") })
        }
        Err(e) => Err(NoDevice { reason: format!("{e}") }),
        Ok(info) if i64::from(ordinal) >= i64::from(info.devices) => Err(NoDevice {
            reason: format!("CUDA device {ordinal} does not exist (the driver sees {} devices)", info.devices),
        }),
        Ok(_) => Ok(()),
    }
}

/// Without the CUDA backend (a build without the `cuda` feature, or a
/// platform the driver trampolines do not cover) there is no device.
#[cfg(not(driven))]
pub fn probe_device(_ordinal: u32) -> Result<(), NoDevice> {
    Err(NoDevice { reason: "this build of ovstage has no CUDA backend".to_owned() })
}
