//! `ovstage-gpu-check`: the preflight and throughput figures of the GPU
//! check (`cargo xtask gpu-prepare` bundles it; `gpu-check.sh` runs it).
//!
//! `ovstage-gpu-check preflight` opens the driver, lists its devices and the
//! entry points it lacks, and loads the kernels on device 0. Exit status: 0
//! ready, 2 no GPU (the rest of the check is skipped), 1 anything else.
//!
//! `ovstage-gpu-check throughput` times, with CUDA events, the median of 15
//! runs for 64k and 1M rows of 128 bytes (a 4x4 f64 matrix per row): the
//! driver's own device copy next to gather, scatter and masked compaction
//! (half the rows), and host-to-device / device-to-host copies from
//! pageable and pinned memory. Both print one JSON object.

use std::process::ExitCode;

use cust::event::{Event, EventFlags};
use cust::memory::{DeviceBuffer, LockedBuffer};
use ovstage_backend_cuda::driver;
use ovstage_backend_cuda::gpu::Gpu;
use ovstage_backend_cuda::kernels::{Unit, mask_prefix};

fn json_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn preflight() -> ExitCode {
    let info = match driver::init() {
        Ok(info) => info,
        Err(e) => {
            println!("{{\"status\": \"no_gpu\", \"reason\": {}}}", json_str(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let missing: Vec<String> = driver::missing().iter().map(|m| json_str(m)).collect();
    let mut names = Vec::new();
    for d in 0..info.devices.max(0) as u32 {
        let name = cust::device::Device::get_device(d).and_then(|d| d.name()).unwrap_or_else(|e| format!("{e:?}"));
        names.push(json_str(&name));
    }
    let gpu = Gpu::new(0).map(|g| g.sm_count());
    let status = if info.devices == 0 {
        "no_gpu"
    } else if gpu.is_ok() {
        "ready"
    } else {
        "failed"
    };
    println!(
        "{{\"status\": {}, \"library\": {}, \"driver_version\": {}, \"devices\": [{}], \"missing_entry_points\": [{}], \
         \"device0\": {}}}",
        json_str(status),
        json_str(&info.library),
        info.version,
        names.join(", "),
        missing.join(", "),
        match &gpu {
            Ok(sms) => format!("{{\"kernels_loaded\": true, \"sm_count\": {sms}}}"),
            Err(e) => format!("{{\"kernels_loaded\": false, \"error\": {}}}", json_str(&e.to_string())),
        }
    );
    match (status, gpu) {
        ("no_gpu", _) => ExitCode::from(2),
        (_, Ok(_)) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

/// The median of `runs` timings of `work` (queued on the gpu's stream), in
/// microseconds.
fn median_us(gpu: &Gpu, runs: usize, mut work: impl FnMut()) -> f64 {
    let (start, stop) = (Event::new(EventFlags::DEFAULT).unwrap(), Event::new(EventFlags::DEFAULT).unwrap());
    work(); // warm-up (and JIT of the kernel)
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            start.record(gpu.stream()).unwrap();
            work();
            stop.record(gpu.stream()).unwrap();
            stop.synchronize().unwrap();
            f64::from(stop.elapsed_time_f32(&start).unwrap()) * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}

fn gbps(bytes: u64, us: f64) -> f64 {
    bytes as f64 / us / 1000.0
}

fn throughput() -> ExitCode {
    let gpu = match Gpu::new(0) {
        Ok(g) => g,
        Err(e) => {
            println!("{{\"status\": \"no_gpu\", \"reason\": {}}}", json_str(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    const ROW: u64 = 128;
    const RUNS: usize = 15;
    let mut figures = Vec::new();
    for rows in [65_536u64, 1 << 20] {
        let bytes = rows * ROW;
        let src = DeviceBuffer::from_slice(&vec![1u8; bytes as usize]).unwrap();
        let dst = DeviceBuffer::from_slice(&vec![0u8; bytes as usize]).unwrap();
        let (s, d) = (src.as_device_ptr().as_raw(), dst.as_device_ptr().as_raw());
        // A permutation: a multiplicative step coprime with the row count.
        let perm: Vec<u64> = (0..rows).map(|i| (i * 40_503 + 17) % rows).collect();
        let idx = DeviceBuffer::from_slice(&perm).unwrap();
        let mask: Vec<u64> = vec![0x5555_5555_5555_5555; rows.div_ceil(64) as usize];
        let (dmask, dprefix) =
            (DeviceBuffer::from_slice(&mask).unwrap(), DeviceBuffer::from_slice(&mask_prefix(&mask)).unwrap());
        let (i, m, p) =
            (idx.as_device_ptr().as_raw(), dmask.as_device_ptr().as_raw(), dprefix.as_device_ptr().as_raw());
        let upr = (ROW / 16) as u32;
        let stream = gpu.stream().as_inner();
        let memcpy = median_us(&gpu, RUNS, || {
            // SAFETY: both buffers hold `bytes`.
            unsafe { cust::sys::cuMemcpyDtoDAsync_v2(d, s, bytes as usize, stream) };
        });
        let gather = median_us(&gpu, RUNS, || {
            // SAFETY: the buffers hold every row the kernel touches.
            unsafe { gpu.gather_rows(Unit::U128, d, s, i, rows, upr, u64::from(upr), u64::from(upr)).unwrap() }
        });
        let scatter = median_us(&gpu, RUNS, || {
            // SAFETY: the buffers hold every row the kernel touches.
            unsafe { gpu.scatter_rows(Unit::U128, d, s, i, rows, upr, u64::from(upr), u64::from(upr)).unwrap() }
        });
        let masked = median_us(&gpu, RUNS, || {
            // SAFETY: the buffers hold every row the kernel touches.
            unsafe { gpu.masked_compact(Unit::U128, d, s, m, p, rows, upr, u64::from(upr), u64::from(upr)).unwrap() }
        });
        let pageable = vec![2u8; bytes as usize];
        let h2d_pageable = median_us(&gpu, RUNS, || {
            // SAFETY: `pageable` and `dst` hold `bytes`; the async copy from
            // pageable memory is staged by the driver before it returns.
            unsafe { cust::sys::cuMemcpyHtoDAsync_v2(d, pageable.as_ptr().cast(), bytes as usize, stream) };
        });
        let mut pinned = LockedBuffer::new(&0u8, bytes as usize).unwrap();
        let h2d_pinned = median_us(&gpu, RUNS, || {
            // SAFETY: as above; `pinned` outlives the synchronised run.
            unsafe { cust::sys::cuMemcpyHtoDAsync_v2(d, pinned.as_ptr().cast(), bytes as usize, stream) };
        });
        let d2h_pinned = median_us(&gpu, RUNS, || {
            // SAFETY: as above.
            unsafe { cust::sys::cuMemcpyDtoHAsync_v2(pinned.as_mut_ptr().cast(), s, bytes as usize, stream) };
        });
        let moved = 2 * bytes; // read + write
        figures.push(format!(
            "{{\"rows\": {rows}, \"row_bytes\": {ROW}, \
             \"dtod_memcpy_us\": {memcpy:.1}, \"dtod_memcpy_gbps\": {:.1}, \
             \"gather_us\": {gather:.1}, \"gather_gbps\": {:.1}, \
             \"scatter_us\": {scatter:.1}, \"scatter_gbps\": {:.1}, \
             \"masked_half_us\": {masked:.1}, \"masked_half_gbps_moved\": {:.1}, \
             \"htod_pageable_gbps\": {:.1}, \"htod_pinned_gbps\": {:.1}, \"dtoh_pinned_gbps\": {:.1}}}",
            gbps(moved, memcpy),
            gbps(moved, gather),
            gbps(moved, scatter),
            gbps(moved / 2, masked),
            gbps(bytes, h2d_pageable),
            gbps(bytes, h2d_pinned),
            gbps(bytes, d2h_pinned),
        ));
    }
    println!(
        "{{\"status\": \"ok\", \"device\": {}, \"runs\": {RUNS}, \"figures\": [{}]}}",
        json_str(&gpu.name().unwrap_or_default()),
        figures.join(", ")
    );
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    match std::env::args().nth(1).as_deref() {
        Some("preflight") => preflight(),
        Some("throughput") => throughput(),
        _ => {
            println!("usage: ovstage-gpu-check preflight|throughput");
            ExitCode::FAILURE
        }
    }
}
