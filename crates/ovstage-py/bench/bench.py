"""Python benchmark (not a test): per-call costs of ours and, when importable
from OVSTAGE_REF_PATH, the published package, side by side, for the calls
of spec section 15.4 and issue 11's targets.

    python crates/ovstage-py/bench/bench.py          # or: cargo xtask bench-py
    OVSTAGE_REF_PATH=/tmp/ovstage-ref/pkg python crates/ovstage-py/bench/bench.py

Each figure is the median over 7 loops of the time per call (wall clock).
The engine's own work (copying payloads, running reads) happens on worker
lanes and is not part of an enqueue figure, except where it is small enough
to run inside the call (reads of at most 16k cells, writes of at most 16
KiB: the 1k-float32 write_attribute row includes its copy and commit), and
in the batched row,
which measures throughput: enqueue plus completion of every write, and
the WriteBatch rows (an extension of ours, "-" for the published package),
which measure per set from the first set to the write's completion.
"""

import os
import subprocess
import sys

CODE = r'''
import sys, time
if len(sys.argv) > 1: sys.path.insert(0, sys.argv[1])
import numpy as np
import ovstage as ov

def med(f, n):
    xs = []
    for _ in range(7):
        t = time.perf_counter(); f(n); xs.append((time.perf_counter() - t) / n)
    return sorted(xs)[3] * 1e6

s = ov.Stage("bench"); p = ov.PathDictionary(s)
q = s.query_from_path_list(p.create_path_list_from_strings([f"/P{i}" for i in range(1000)]))
qb = s.query_from_path_list(p.create_path_list_from_strings([f"/B{i}" for i in range(100000)]))
a = np.ones(1000, np.float32); t = p.intern_token("x"); tb = p.intern_token("y")
o = [1]
out = {}

ops = []
def write(n):
    for _ in range(n):
        o[0] += 1; ops.append(s.write_attribute(q, t, o[0], a, is_array=False))
out["write"] = med(write, 2000)
def wait_done(n):
    for op in ops[:n]: op.wait()
    del ops[:n]
s.advance_write_floor(ordinal=o[0]).wait()
out["wait"] = med(wait_done, 1000)
for op in ops: op.wait()

fl = []
def floor(n):
    for _ in range(n):
        o[0] += 1; fl.append(s.advance_write_floor(ordinal=o[0]))
out["floor"] = med(floor, 1000)
for op in fl: op.wait()

def intern(n):
    for _ in range(n): p.intern_token("x")
out["intern"] = med(intern, 5000)

o[0] += 1
s.write_attribute(qb, tb, o[0], np.ones(100000, np.float32), is_array=False).wait()
s.advance_write_floor(ordinal=o[0]).wait()
rng = ov.OrdinalRange.latest(o[0])
def read(n):
    for _ in range(n):
        r = s.read_attributes(qb, [tb], rng); r.wait()
        g = r.fetch_next(); g.array(0); s.release_group(g); r.release()
out["read"] = med(read, 1000)
r = s.read_attributes(qb, [tb], rng); r.wait(); g = r.fetch_next()
def array(n):
    for _ in range(n): g.array(0)
out["array"] = med(array, 5000)
s.release_group(g); r.release()

# Many small writes: ticks of 64 attributes x 16 float32, each tick sealed
# by a floor advance, submitted without waiting, then waited: time per
# attribute write, enqueue to completion. Batched: one write_attributes per
# tick; single: one write_attribute per attribute.
small = np.ones(16, np.float32)
qs = s.query_from_path_list(p.create_path_list_from_strings([f"/S{i}" for i in range(16)]))
descs = [ov.WriteDesc(p.intern_token(f"b{i}"), small, is_array=False) for i in range(64)]
def batched(n):
    pending = []
    for _ in range(n // 64):
        o[0] += 1
        pending.append(s.write_attributes(qs, descs, o[0]))
        pending.append(s.advance_write_floor(ordinal=o[0]))
    for op in pending: op.wait()
out["batched"] = med(batched, 64 * 100)
def single(n):
    pending = []
    for _ in range(n // 64):
        o[0] += 1
        for d in descs:
            pending.append(s.write_attribute(qs, d.attribute, o[0], small, is_array=False))
        pending.append(s.advance_write_floor(ordinal=o[0]))
    for op in pending: op.wait()
out["single"] = med(single, 64 * 30)

# WriteBatch (an extension of ours; the published package has none): per
# set, from the first set to the write's completion (sets + submit + wait,
# plus an unwaited floor advance per batch). Batches of n sets over three
# attributes (n/3 prims each).
if hasattr(s, "write_batch"):
    wb_paths = [f"/WB{i}" for i in range(34000)]
    wb_hs = [p.intern_path(x) for x in wb_paths]
    wb_names = ["wb0", "wb1", "wb2"]
    wb_toks = [p.intern_token(x) for x in wb_names]
    def wb(size, strings):
        prims = (wb_paths if strings else wb_hs)[:size // 3]
        attrs = wb_names if strings else wb_toks
        def f(n):
            for _ in range(n // size):
                o[0] += 1
                b = s.write_batch(o[0])
                for a in attrs:
                    for h in prims:
                        b.set(h, a, 1.5)
                b.submit().wait()
                s.advance_write_floor(ordinal=o[0])
        return f
    out["wb1k"] = med(wb(999, False), 999 * 20)
    out["wb30k"] = med(wb(30000, False), 30000 * 2)
    out["wb100k"] = med(wb(100002, False), 100002)
    out["wb30k_str"] = med(wb(30000, True), 30000 * 2)
print(" ".join(f"{k}={v:.4f}" for k, v in out.items()))
s.destroy()
'''

ROWS = [
    ("write", "write_attribute enqueue, 1k float32", "<= 2"),
    ("wait", "Operation.wait() of a completed op", "<= 1"),
    ("floor", "advance_write_floor enqueue", "<= 1.5"),
    ("intern", "intern_token of a known string", "<= 0.5"),
    ("read", "read + wait + fetch_next + array(0) + release_group + release, 100k float32", "<= 5 (spec: <= 8)"),
    ("array", "array(0) of a fetched group", "<= 1"),
    ("batched", "small writes batched: write_attributes of 64 attributes x 16 float32 + floor advance per tick; per attribute, to completion", "<= 0.3"),
    ("single", "the same ticks with one write_attribute per attribute; per write, to completion", "-"),
    ("wb1k", "WriteBatch (ours only): set(handle, token, float) x 1k over 3 attributes + submit + wait; per set", "<= 0.3"),
    ("wb30k", "WriteBatch (ours only): the same, 30k sets per batch; per set", "<= 0.3"),
    ("wb100k", "WriteBatch (ours only): the same, 100k sets per batch; per set", "<= 0.3"),
    ("wb30k_str", "WriteBatch (ours only): set(path string, name, float), 30k sets per batch; per set", "-"),
]


def run(path=None):
    args = [sys.executable, "-c", CODE] + ([path] if path else [])
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run(args, capture_output=True, text=True, env=env)
    if out.returncode:
        return None, out.stderr.strip().splitlines()[-1:]
    return {k: float(v) for k, v in (kv.split("=") for kv in out.stdout.split())}, None


def main():
    ours, err = run()
    ref_path = os.environ.get("OVSTAGE_REF_PATH")
    ref, rerr = run(ref_path) if ref_path else (None, None)
    print("| call (µs per call) | target | ours | published | published / ours |\n|---|---|---:|---:|---:|")
    for key, name, target in ROWS:
        o = ours.get(key) if ours else None
        r = ref.get(key) if ref else None
        cell = lambda v: "-" if v is None else f"{v:.3f}"
        ratio = f"{r / o:.0f}×" if (o and r) else "-"
        print(f"| {name} | {target} | {cell(o)} | {cell(r)} | {ratio} |")
    if err:
        print("ours failed:", err)
    if rerr:
        print("published failed:", rerr)


if __name__ == "__main__":
    main()
