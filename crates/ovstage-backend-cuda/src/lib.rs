//! The CUDA backend of ovstage.
//!
//! The driver (`libcuda.so.1`) is never linked: every driver entry point
//! that cust calls is a trampoline of ours (see [`driver`]), resolved the
//! first time any of them runs. A process that never hands ovstage a CUDA
//! tensor or a device placement never opens the driver and never runs
//! `cuInit`; a machine without a driver loads the library all the same.

pub mod kernels;

#[cfg(all(feature = "cuda", target_arch = "x86_64", target_os = "linux"))]
pub mod driver;
