"""The GPU check's Python step: ovstage's Python package against PyTorch's CUDA tensors.

Run by gpu-check.sh (`python3 gpu-check.py OUTDIR`) with the bundle's wheel
on PYTHONPATH, where `import torch` works and sees a CUDA device; prints SKIP
and exits 0 otherwise. Each check prints one line, `ok NAME ...` or
`FAIL NAME: why`; figures go to OUTDIR/python.json. Exit status 1 when a
check failed.

What it checks, on device 0:
- writes from torch CUDA tensors (dense, index map, mask) read back equal to
  the same writes from host copies;
- `cuda_stream` orders a write after a slow producer on that stream (the
  producer sleeps about 100 ms on the GPU before it fills the tensor); a
  write naming no stream is recorded as a control, not judged (what it sees
  depends on which stream torch's DLPack export follows);
- a read placed on the device hands out CUDA memory that torch imports
  without a copy and that equals the host read, its availability event
  recorded on the caller's stream;
- a map session on the device commits what a torch kernel wrote there;
- figures: enqueue of a CUDA write, write + wait, placed and host reads.
"""
import json
import statistics
import sys
import time

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
failures = []
figures = {}


def check(name, ok, detail=""):
    print(("ok " if ok else "FAIL ") + name + (": " + detail if detail else ""), flush=True)
    if not ok:
        failures.append(name)


try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(0)
if not torch.cuda.is_available():
    print("SKIP: torch sees no CUDA device")
    sys.exit(0)

import ovstage as ov

dev = torch.device("cuda", 0)
torch.cuda.init()
stream = torch.cuda.current_stream(dev)
CUDA = ov.DLDeviceType.kDLCUDA


def stage_of(n, name):
    stage = ov.Stage(name)
    paths = ov.PathDictionary(stage)
    pl = paths.create_path_list_from_strings([f"/World/P{i}" for i in range(n)])
    return stage, paths, stage.query_from_path_list(pl)


def host_rows(stage, paths, q, attr, ordinal):
    tok = paths.intern_token(attr)
    out = []
    with stage.read_attributes(q, [tok], ov.OrdinalRange.latest(ordinal)) as r:
        for g in r.wait().groups():
            with g:
                out.append(np.array(g.array(0)))
    return np.concatenate(out) if out else np.zeros(0)


def equal_writes():
    n = 4096
    stage, paths, q = stage_of(n, "equal-writes")
    src = torch.randn(n, 4, 4, dtype=torch.float64, device=dev)
    host = src.cpu().numpy()
    perm = np.random.default_rng(1).permutation(n).astype(np.int64)
    # Every third of the n prims (bit i % 64 of word i // 64); one payload row per prim.
    bits = np.packbits((np.arange(n) % 3 == 0).astype(np.uint8), bitorder="little")
    mask = [int(w) for w in bits.view(np.uint64)]
    cases = {
        "dense": ({}, src, host),
        "index_map": ({"index_map": perm.tolist()}, src, host),
        "mask": ({"mask": mask, "count": n}, src, host),
    }
    for name, (kw, dsrc, hsrc) in cases.items():
        torch.cuda.synchronize()
        stage.write_attribute(q, "dev_" + name, 1, dsrc, is_array=False, cuda_stream=stream.cuda_stream, **kw).wait()
        stage.write_attribute(q, "host_" + name, 1, np.ascontiguousarray(hsrc), is_array=False, **kw).wait()
    stage.advance_write_floor(1).wait()
    for name in cases:
        a = host_rows(stage, paths, q, "dev_" + name, 1)
        b = host_rows(stage, paths, q, "host_" + name, 1)
        check(f"cuda-write-{name}-equals-host-write", a.shape == b.shape and np.array_equal(a, b),
              f"{a.shape} vs {b.shape}")


def ordering():
    n = 1 << 16
    stage, paths, q = stage_of(n, "ordering")
    for attr, sync in [("synced", True), ("control", False)]:
        side = torch.cuda.Stream(dev)
        x = torch.zeros(n, 4, dtype=torch.float32, device=dev)
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            torch.cuda._sleep(200_000_000)  # ~100 ms of GPU cycles
            x.fill_(7.0)
        kw = {"cuda_stream": side.cuda_stream} if sync else {}
        stage.write_attribute(q, attr, 1, x, is_array=False, **kw).wait()
        torch.cuda.synchronize()
    stage.advance_write_floor(1).wait()
    synced = host_rows(stage, paths, q, "synced", 1)
    check("cuda-stream-orders-after-a-slow-producer", bool((synced == 7.0).all()),
          f"{int((synced == 7.0).sum())} of {synced.size} values new")
    control = host_rows(stage, paths, q, "control", 1)
    fresh = int((control == 7.0).sum())
    figures["control_without_stream_new_values"] = fresh
    print(f"info control-without-cuda-stream: {fresh} of {control.size} values new "
          f"({'stale, as expected' if fresh < control.size else 'new: the export itself synchronised'})")


def placed_read_and_map():
    n = 1 << 16
    stage, paths, q = stage_of(n, "placed")
    src = torch.randn(n, 4, 4, dtype=torch.float64, device=dev)
    stage.write_attribute(q, "xf", 1, src, is_array=False, cuda_stream=stream.cuda_stream).wait()
    stage.advance_write_floor(1).wait()
    tok = paths.intern_token("xf")
    ev = torch.cuda.Event()
    ev.record(stream)  # creates the event
    p = ov.Placement(device_type=CUDA, device_id=0, stream=stream.cuda_stream, availability_event=ev.cuda_event)
    got = []
    with stage.read_attributes(q, [tok], ov.OrdinalRange.latest(1), placement=p) as r:
        for g in r.wait().groups():
            with g:
                check("placed-read-group-on-device", g.__dlpack_device__() == (2, 0), str(g.__dlpack_device__()))
                t = torch.from_dlpack(g)
                check("placed-read-imports-as-cuda-tensor", t.is_cuda, str(t.device))
                stream.wait_event(ev)
                got.append(t.clone())
    # A group's tensor is one row of 16 values a prim.
    a = torch.cat(got).reshape(src.shape)
    check("placed-read-equals-the-written-tensor", bool(torch.equal(a, src)), f"{tuple(a.shape)}")

    f32 = ov.DLDataType(code=2, bits=32, lanes=1)
    want = torch.arange(n, dtype=torch.float32, device=dev) * 0.5
    with stage.map_attribute(q, "m", 2, dtype=f32, placement=p) as m:
        off = 0
        for g in m.wait().groups():
            t = torch.from_dlpack(g)
            check("map-group-on-device", t.is_cuda, str(t.device))
            rows = t.shape[0]
            t.view(-1).copy_(want[off:off + rows])
            off += rows
            m.unmap_group(g, cuda_stream=stream.cuda_stream).wait()
        m.unmap(cuda_stream=stream.cuda_stream).wait()
    stage.advance_write_floor(2).wait()
    back = host_rows(stage, paths, q, "m", 2).reshape(-1)
    check("map-on-device-commits-what-torch-wrote", np.array_equal(back, want.cpu().numpy()),
          f"{back.size} values")


def timings():
    for n in (1 << 16, 1 << 20):
        stage, paths, q = stage_of(n, f"timings-{n}")
        src = torch.randn(n, 4, 4, dtype=torch.float64, device=dev)
        torch.cuda.synchronize()
        enq, total = [], []
        for i in range(1, 31):
            t0 = time.perf_counter()
            op = stage.write_attribute(q, "xf", i, src, is_array=False, cuda_stream=stream.cuda_stream)
            t1 = time.perf_counter()
            op.wait()
            t2 = time.perf_counter()
            enq.append((t1 - t0) * 1e6)
            total.append((t2 - t0) * 1e6)
        stage.advance_write_floor(30).wait()
        tok = paths.intern_token("xf")
        p = ov.Placement(device_type=CUDA, device_id=0, stream=stream.cuda_stream)

        def read(placement, to_torch):
            t0 = time.perf_counter()
            kw = {"placement": placement} if placement else {}
            with stage.read_attributes(q, [tok], ov.OrdinalRange.latest(30), **kw) as r:
                for g in r.wait().groups():
                    with g:
                        if to_torch:
                            torch.from_dlpack(g).sum()
                        else:
                            np.asarray(g.array(0)).sum()
            torch.cuda.synchronize()
            return (time.perf_counter() - t0) * 1e6

        first_placed = read(p, True)
        placed = [read(p, True) for _ in range(10)]
        host = [read(None, False) for _ in range(10)]
        mib = n * 128 / (1 << 20)
        figures[f"{n}"] = {
            "mib": mib,
            "cuda_write_enqueue_us_p50": statistics.median(enq),
            "cuda_write_plus_wait_us_p50": statistics.median(total),
            "cuda_write_plus_wait_gbps": mib / (1 << 10) / (statistics.median(total) / 1e6),
            "placed_read_first_us": first_placed,
            "placed_read_again_us_p50": statistics.median(placed),
            "host_read_us_p50": statistics.median(host),
        }
        print(f"info {n} rows x 4x4 f64 ({mib:.0f} MiB): {json.dumps(figures[str(n)])}", flush=True)


for fn in (equal_writes, ordering, placed_read_and_map, timings):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (one failing check must not hide the rest)
        import traceback
        traceback.print_exc()
        check(fn.__name__, False, f"{type(e).__name__}: {e}")

figures["torch"] = torch.__version__
figures["device"] = torch.cuda.get_device_name(0)
with open(f"{OUT}/python.json", "w") as f:
    json.dump({"failures": failures, "figures": figures}, f, indent=1)
print("python GPU check:", "all passed" if not failures else f"{len(failures)} failed: {failures}")
sys.exit(1 if failures else 0)
