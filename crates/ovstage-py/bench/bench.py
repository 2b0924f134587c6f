"""Python benchmark (not a test): per-call costs of ours and, when importable from
OVSTAGE_REF_PATH, the published package, side by side.

    python crates/ovstage-py/bench/bench.py          # or: cargo xtask bench-py
"""

import os
import subprocess
import sys
import time

import numpy as np

CODE = r'''
import sys, time, numpy as np
if len(sys.argv) > 1: sys.path.insert(0, sys.argv[1])
import ovstage as ov
def med(f, n):
    xs = []
    for _ in range(5):
        t = time.perf_counter(); f(n); xs.append((time.perf_counter() - t) / n)
    return sorted(xs)[2] * 1e6
s = ov.Stage("bench"); p = ov.PathDictionary(s)
pl = p.create_path_list_from_strings([f"/P{i}" for i in range(1000)]); q = s.query_from_path_list(pl)
big = p.create_path_list_from_strings([f"/B{i}" for i in range(100000)]); qb = s.query_from_path_list(big)
a = np.ones(1000, np.float32); t = p.intern_token("x"); tb = p.intern_token("y")
ops = []
o = [1]
def w(n):
    for _ in range(n):
        o[0] += 1; ops.append(s.write_attribute(q, t, o[0], a, is_array=False))
r1 = med(w, 2000)
for op in ops: op.wait()
s.advance_write_floor(ordinal=o[0]).wait()
s.write_attribute(qb, tb, o[0] + 1, np.ones(100000, np.float32), is_array=False).wait()
s.advance_write_floor(ordinal=o[0] + 1).wait(); o[0] += 1
def rd(n):
    for _ in range(n):
        r = s.read_attributes(qb, [tb], ov.OrdinalRange.latest(o[0])); r.wait()
        g = r.fetch_next(); g.array(0); s.release_group(g); r.release()
r2 = med(rd, 500)
ds = [ov.WriteDesc(f"b{i}", np.ones(1000, np.float32), is_array=False) for i in range(64)]
def bw(n):
    for _ in range(n):
        o[0] += 1; s.write_attributes(q, ds, o[0]).wait()
r3 = med(bw, 20) / 64
print(f"{r1:.2f} {r2:.2f} {r3:.3f}")
s.destroy()
'''


def run(path=None):
    args = [sys.executable, "-c", CODE] + ([path] if path else [])
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode:
        return None, out.stderr.strip().splitlines()[-1:]
    return [float(x) for x in out.stdout.split()], None


ours, err = run()
ref_path = os.environ.get("OVSTAGE_REF_PATH")
ref, rerr = run(ref_path) if ref_path else (None, None)
rows = ["write_attribute enqueue, 1k float32 (us/call, target <= 2)",
        "read + wait + fetch + array + release_group + release, 100k float32 (us, target <= 5)",
        "batched write_attributes, 64 columns x 1k float32 per op (us per column write, target <= 0.3)"]
print("| workload | ours | published | ratio |\n|---|---|---|---|")
for i, name in enumerate(rows):
    o = ours[i] if ours else float("nan")
    r = ref[i] if ref else None
    print(f"| {name} | {o:.3f} | {'-' if r is None else f'{r:.3f}'} | {'-' if r is None else f'{r / o:.1f}x'} |")
if err:
    print("ours failed:", err)
if rerr:
    print("published failed:", rerr)
