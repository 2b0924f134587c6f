//! The kernels on a real device, against their CPU reference, and stream
//! ordering with a deliberately slow producer. Every test opens device 0
//! or prints SKIP and passes: on a machine without a GPU (CI) they check
//! nothing; the GPU check (`cargo xtask gpu-prepare`) runs them where one is.

use cust::memory::{CopyDestination, DeviceBuffer};
use cust::stream::{Stream, StreamFlags};
use ovstage_backend_cuda::gpu::Gpu;
use ovstage_backend_cuda::kernels::{Unit, mask_count, mask_prefix, reference};

fn gpu(test: &str) -> Option<Gpu> {
    match Gpu::new(0) {
        Ok(g) => Some(g),
        Err(e) => {
            println!("SKIP {test}: {e}");
            None
        }
    }
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn upload<T: cust::memory::DeviceCopy>(data: &[T]) -> DeviceBuffer<T> {
    DeviceBuffer::from_slice(data).expect("upload")
}

fn download(gpu: &Gpu, buf: &DeviceBuffer<u8>) -> Vec<u8> {
    // The gpu's stream does not order with the legacy stream of the copy.
    gpu.synchronize().expect("synchronize");
    let mut out = vec![0u8; buf.len()];
    buf.copy_to(&mut out[..]).expect("download");
    out
}

fn addr<T: cust::memory::DeviceCopy>(b: &DeviceBuffer<T>) -> u64 {
    b.as_device_ptr().as_raw()
}

/// Row widths of the GPU check (section 9 of the design): units of 1, 4, 8
/// and 16 bytes all occur.
const WIDTHS: [u64; 7] = [1, 3, 4, 12, 16, 24, 128];
const ROWS: u64 = 1000;

#[test]
fn row_kernels_match_the_cpu_reference() {
    let Some(gpu) = gpu("row_kernels_match_the_cpu_reference") else { return };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for width in WIDTHS {
        for pad in [0u64, width] {
            // Source rows `pitch` bytes apart (pad 0: packed; else strided).
            let pitch = width + pad;
            let unit = Unit::widest(width, [pitch, width], [0, 0]);
            let (b, upr) = (unit.bytes(), (width / unit.bytes()) as u32);
            let (src_stride, dst_stride) = (pitch / b, width / b);
            let src = rng.bytes((ROWS * pitch) as usize);
            let dsrc = upload(&src);
            let out_len = (ROWS * width) as usize;
            let label = format!("width {width}, pitch {pitch}, {unit:?}");

            // gather: a permutation with repeats.
            let idx: Vec<u64> = (0..ROWS).map(|_| rng.next() % ROWS).collect();
            let didx = upload(&idx);
            let dst = upload(&vec![0u8; out_len]);
            // SAFETY: the buffers hold every row the kernel touches.
            unsafe {
                gpu.gather_rows(unit, addr(&dst), addr(&dsrc), addr(&didx), ROWS, upr, src_stride, dst_stride).unwrap()
            };
            let mut want = vec![0u8; out_len];
            reference::gather_rows(unit, &mut want, &src, &idx, ROWS as u32, upr, src_stride, dst_stride);
            assert_eq!(download(&gpu, &dst), want, "gather, {label}");

            // scatter: a permutation (distinct targets).
            let mut perm: Vec<u64> = (0..ROWS).collect();
            for i in (1..perm.len()).rev() {
                perm.swap(i, (rng.next() % (i as u64 + 1)) as usize);
            }
            let dperm = upload(&perm);
            let dst = upload(&vec![0u8; out_len]);
            // SAFETY: as above.
            unsafe {
                gpu.scatter_rows(unit, addr(&dst), addr(&dsrc), addr(&dperm), ROWS, upr, src_stride, dst_stride)
                    .unwrap()
            };
            let mut want = vec![0u8; out_len];
            reference::scatter_rows(unit, &mut want, &src, &perm, ROWS as u32, upr, src_stride, dst_stride);
            assert_eq!(download(&gpu, &dst), want, "scatter, {label}");

            // masked compaction: about half the rows.
            let mask: Vec<u64> = (0..ROWS.div_ceil(64)).map(|_| rng.next()).collect();
            let prefix = mask_prefix(&mask);
            let (dmask, dprefix) = (upload(&mask), upload(&prefix));
            let dst = upload(&vec![0u8; out_len]);
            // SAFETY: as above (at most ROWS rows are written).
            unsafe {
                gpu.masked_compact(
                    unit,
                    addr(&dst),
                    addr(&dsrc),
                    addr(&dmask),
                    addr(&dprefix),
                    ROWS,
                    upr,
                    src_stride,
                    dst_stride,
                )
                .unwrap()
            };
            let mut want = vec![0u8; out_len];
            reference::masked_compact(unit, &mut want, &src, &mask, &prefix, ROWS as u32, upr, src_stride, dst_stride);
            assert_eq!(download(&gpu, &dst), want, "masked, {label} ({} rows set)", mask_count(&mask));

            // fill with the first source row.
            let dst = upload(&vec![0u8; out_len]);
            // SAFETY: as above.
            unsafe { gpu.fill_rows(unit, addr(&dst), addr(&dsrc), ROWS, upr, dst_stride).unwrap() };
            let mut want = vec![0u8; out_len];
            reference::fill_rows(unit, &mut want, &src, ROWS as u32, upr, dst_stride);
            assert_eq!(download(&gpu, &dst), want, "fill, {label}");

            // strided rows into compact ones.
            let dst = upload(&vec![0u8; out_len]);
            // SAFETY: as above.
            unsafe { gpu.strided_rows(unit, addr(&dst), addr(&dsrc), ROWS, upr, src_stride).unwrap() };
            let mut want = vec![0u8; out_len];
            reference::strided_rows(unit, &mut want, &src, ROWS as u32, upr, src_stride);
            assert_eq!(download(&gpu, &dst), want, "strided, {label}");
        }
    }
}

#[test]
fn ragged_rows_are_copied_by_range() {
    let Some(gpu) = gpu("ragged_rows_are_copied_by_range") else { return };
    let mut rng = Rng(7);
    let lens: Vec<u64> = (0..300).map(|i| if i % 7 == 0 { 0 } else { rng.next() % 3000 }).collect();
    let total: u64 = lens.iter().sum();
    let src = rng.bytes(total as usize);
    let dsrc = upload(&src);
    // Rows in reverse order: source offsets ascending, targets descending.
    let mut srcs = Vec::new();
    let mut offs = vec![0u64; lens.len()];
    let (mut s, mut o) = (0u64, total);
    for (r, len) in lens.iter().enumerate() {
        srcs.push(s);
        o -= len;
        offs[r] = o;
        s += len;
    }
    let abs: Vec<u64> = srcs.iter().map(|s| addr(&dsrc) + s).collect();
    let (dabs, dlens, doffs) = (upload(&abs), upload(&lens), upload(&offs));
    let dst = upload(&vec![0u8; total as usize]);
    // SAFETY: every range lies inside `dsrc` and `dst`.
    unsafe { gpu.copy_ranges(addr(&dst), addr(&dabs), addr(&dlens), addr(&doffs), lens.len() as u32).unwrap() };
    let mut want = vec![0u8; total as usize];
    reference::copy_ranges(&mut want, &src, &srcs, &lens, &offs, lens.len() as u32);
    assert_eq!(download(&gpu, &dst), want);
}

/// The ordering `cuda_sync` relies on: a copy on another stream that does
/// not wait sees the old value while a slow producer still runs (the
/// control), and one that waits on the producer's event sees the new one.
#[test]
fn a_consumer_sees_a_slow_producer_only_after_waiting() {
    let Some(gpu) = gpu("a_consumer_sees_a_slow_producer_only_after_waiting") else { return };
    let producer = Stream::new(StreamFlags::NON_BLOCKING, None).unwrap();
    let consumer = Stream::new(StreamFlags::NON_BLOCKING, None).unwrap();
    for wait in [false, true] {
        let out = upload(&[0u32]);
        // SAFETY: `out` is a device u32.
        unsafe { gpu.spin_ns(50_000_000, addr(&out), 7, &producer).unwrap() };
        if wait {
            let event = cust::event::Event::new(cust::event::EventFlags::DISABLE_TIMING).unwrap();
            event.record(&producer).unwrap();
            consumer.wait_event(event, cust::stream::StreamWaitEventFlags::DEFAULT).unwrap();
        }
        let mut seen = [0u32];
        // SAFETY: one u32 from a live device buffer into a live host one;
        // the consumer is synchronised before `seen` is read.
        let r =
            unsafe { cust::sys::cuMemcpyDtoHAsync_v2(seen.as_mut_ptr().cast(), addr(&out), 4, consumer.as_inner()) };
        assert_eq!(r, cust::sys::cudaError_enum::CUDA_SUCCESS);
        consumer.synchronize().unwrap();
        assert_eq!(seen[0], if wait { 7 } else { 0 }, "waited on the producer: {wait}");
        producer.synchronize().unwrap();
    }
}

#[test]
fn a_placed_reads_device_copy_holds_its_parts_and_the_event_follows_the_copies() {
    use ovstage_backend_cuda::placement::{self, DeviceCopy, PART_ALIGN, RecordOn};
    let Some(_gpu) = gpu("a_placed_reads_device_copy_holds_its_parts_and_the_event_follows_the_copies") else {
        return;
    };
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).unwrap();
    let mut rng = Rng(0x9E37_79B9);
    let parts = [rng.bytes(100_000), Vec::new(), rng.bytes(37), rng.bytes(4096)];
    let views: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let mut before = std::ptr::null_mut();
    // SAFETY: the driver writes one handle.
    unsafe { cust::sys::cuCtxGetCurrent(&mut before) };
    // SAFETY: a live stream of device 0's primary context; `parts` outlive
    // the copies (the event is waited for below).
    let mut copy = unsafe { DeviceCopy::upload(0, &views, stream.as_inner() as usize) }.expect("upload");
    // SAFETY: the stream the copies were queued on.
    unsafe { copy.mark_ready(stream.as_inner() as usize) }.expect("mark ready");
    // Another stream orders behind the copies on the device; the host too.
    let other = Stream::new(StreamFlags::NON_BLOCKING, None).unwrap();
    // SAFETY: a live stream of the same context.
    unsafe { copy.wait_ready(other.as_inner() as usize) }.expect("wait ready");
    other.synchronize().unwrap();
    copy.sync_ready().expect("sync ready");
    let mut event = std::ptr::null_mut();
    // SAFETY: the driver writes one handle.
    assert_eq!(unsafe { cust::sys::cuEventCreate(&mut event, 2) }, cust::sys::cudaError_enum::CUDA_SUCCESS);
    // SAFETY: a live event and stream of that context.
    unsafe { placement::record(event as usize, stream.as_inner() as usize, RecordOn::Device(0)) }.expect("record");
    // SAFETY: the event just recorded.
    assert_eq!(unsafe { cust::sys::cuEventSynchronize(event) }, cust::sys::cudaError_enum::CUDA_SUCCESS);
    let mut after = std::ptr::null_mut();
    // SAFETY: as above.
    unsafe { cust::sys::cuCtxGetCurrent(&mut after) };
    assert_eq!(before, after, "the thread's context is put back");
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(copy.part(i) % PART_ALIGN as u64, 0, "part {i} aligned");
        let mut back = vec![0u8; p.len()];
        if !p.is_empty() {
            // SAFETY: `p.len()` bytes of the copy's part `i` into `back`.
            let r = unsafe { cust::sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), copy.part(i), p.len()) };
            assert_eq!(r, cust::sys::cudaError_enum::CUDA_SUCCESS);
        }
        assert_eq!(&back, p, "part {i}");
    }
    // A drain instead of an event (a placed read without one).
    // SAFETY: a live stream.
    unsafe { placement::synchronize(stream.as_inner() as usize, RecordOn::Device(0)) }.expect("synchronize");
    drop(copy);
    // SAFETY: created above, destroyed once.
    unsafe { cust::sys::cuEventDestroy_v2(event) };
}

/// A write's CUDA tensors are staged as one batch: few copies each on
/// their own, runs of small ones packed on the device (several runs when
/// they span more than the scratch), large ones on their own within a run;
/// every byte lands at its batch offset in page-locked memory.
#[test]
fn a_staged_batch_lands_every_copy_at_its_offset() {
    use ovstage_backend_cuda::staging::{CudaSync, DeviceBytes, batch_offsets, pinned_pool_stats, stage_batch};
    let Some(gpu) = gpu("a_staged_batch_lands_every_copy_at_its_offset") else { return };
    let mut rng = Rng(0x5eed);
    let source = rng.bytes(48 << 20);
    let on_device = upload(&source);
    gpu.synchronize().expect("synchronize");
    let base = addr(&on_device);
    // (offset in the source, length) lists: 3 small; 200 small with a zero
    // length and a 2 MiB one among them; 40 of just under 1 MiB (two runs).
    let mut cases: Vec<Vec<(usize, usize)>> = vec![vec![(5, 3), (1000, 4096), (7, 1)]];
    let mut small: Vec<(usize, usize)> = (0..200).map(|i| ((i * 7919) % (1 << 20), 1 + (i * 37) % 3000)).collect();
    small[17].1 = 0;
    small[100] = (3 << 20, 2 << 20);
    cases.push(small);
    cases.push((0..40).map(|i| (i << 20, (1 << 20) - 1 - i)).collect());
    for (k, case) in cases.iter().enumerate() {
        let copies: Vec<DeviceBytes> =
            case.iter().map(|&(at, len)| DeviceBytes { device: 0, src: base + at as u64, len }).collect();
        // SAFETY: every range lies in `on_device`, whose upload finished.
        let (host, offsets) = unsafe { stage_batch(&copies, CudaSync::NONE) }.expect("staged");
        let (laid_out, total) = batch_offsets(&copies).unwrap();
        assert_eq!(offsets, laid_out);
        assert_eq!(host.len(), total);
        assert!(host.is_pinned(), "case {k}: staged into the heap");
        for (i, (&(at, len), off)) in case.iter().zip(offsets).enumerate() {
            assert!(host.bytes(off, len).unwrap() == &source[at..at + len], "case {k}, copy {i} ({len} bytes)");
        }
    }
    let (given, _) = pinned_pool_stats();
    // SAFETY: as above.
    drop(unsafe { stage_batch(&[DeviceBytes { device: 0, src: base, len: 100 }], CudaSync::NONE) }.unwrap());
    assert_eq!(pinned_pool_stats().0, given, "a block of a size used before is reused");
}
