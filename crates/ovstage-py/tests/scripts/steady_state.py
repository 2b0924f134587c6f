"""Script 10 (spec 17.2): a steady-state loop.

10,000 iterations of write -> seal -> read -> copy -> release with Read and
ReadGroup context managers, with a log callback installed at WARNING and flushed
at the end. Prints the library version, the build string prefix, and whether
RSS grew by more than 64 MiB over the loop (read from /proc, Linux only). The
iteration rate varies from run to run, so it goes to stderr (with a one-second
clock: the scripts import nothing but ovstage, numpy and threading).
"""
import sys

import numpy as np

import ovstage as ov

ITERATIONS = 10_000
PRIMS = [f"/Particles/p{i}" for i in range(64)]


def rss_bytes():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096
    except OSError:
        return 0


messages = []
ov.set_log_callback(lambda severity, timestamp, message: messages.append(int(severity)),
                    severity=ov.LogSeverity.WARNING)
print("library version:", ov.library_version())
print("build string prefix:", ov.get_build_info().build_string[:6])

with ov.Stage("steady-state") as stage, ov.PathDictionary(stage) as paths:
    with paths.create_path_list_from_strings(PRIMS) as plist, stage.query_from_path_list(plist) as query:
        token = paths.intern_token("energy")
        values = np.zeros(len(PRIMS), np.float64)
        total = 0.0
        start_clock = np.datetime64("now")
        start_rss = 0
        for ordinal in range(1, ITERATIONS + 1):
            values[:] = ordinal
            stage.write_attribute(query, token, ordinal, values, is_array=False).wait()
            stage.advance_write_floor(ordinal=ordinal).wait()
            with stage.read_attributes(query, [token], ov.OrdinalRange.latest(ordinal)) as read:
                for group in read.wait().groups():
                    with group:
                        copy = np.array(group.array(0))
                        total += float(copy.sum())
            if ordinal == 1_000:  # after warm-up
                start_rss = rss_bytes()
        elapsed = (np.datetime64("now") - start_clock) / np.timedelta64(1, "s")
        grew = rss_bytes() - start_rss
        expected = len(PRIMS) * ITERATIONS * (ITERATIONS + 1) / 2
        print("iterations:", ITERATIONS, "checksum ok:", total == expected)
        print("RSS grew by more than 64 MiB:", grew > 64 * 2**20)
        print(f"iterations per second: about {ITERATIONS / max(elapsed, 1.0):.0f}", file=sys.stderr)

print("log flushed:", ov.flush_log(timeout=10_000_000_000))
ov.set_log_callback(None)
print("done")
