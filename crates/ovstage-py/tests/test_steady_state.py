"""Section 17 group M: memory and steady state over long loops."""

import gc
import weakref

import numpy as np

import ovstage as ov


def rss_bytes():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    import resource

    return pages * resource.getpagesize()


def test_m1_a_long_loop_keeps_rss_and_retained_versions_flat(world):
    stage, paths, pl, q = world
    tok = paths.intern_token("m1")
    n = 3  # the world's prims

    def run(start, count):
        for i in range(start, start + count):
            stage.write_attribute(q, tok, i, np.full(n, i, np.float32), is_array=False).wait()
            stage.advance_write_floor(i).wait()
            with stage.read_attributes(q, [tok], ov.OrdinalRange.latest(i)) as r:
                for g in r.wait().groups():
                    assert g.array(0)[0] == i
                    stage.release_group(g)

    run(1, 2000)  # warm up: pools, caches and the retention window fill
    gc.collect()
    rss0, versions0 = rss_bytes(), stage._stats()[2]
    run(2001, 8000)
    gc.collect()
    rss1, (tracked, handles, versions1, _) = rss_bytes(), stage._stats()
    assert tracked == 0, "every op was waited and released"
    assert versions1 <= versions0 + 2, (versions0, versions1)
    assert rss1 - rss0 < 8 << 20, f"RSS grew by {(rss1 - rss0) >> 10} KiB over 8000 steps"


def test_m2_no_python_objects_leak_from_a_loop(world):
    stage, paths, pl, q = world
    tok = paths.intern_token("m2")
    other = paths.intern_token("m2-unwaited")
    refs = []
    for i in range(1, 301):
        payload = np.full(3, i, np.float64)
        op = stage.write_attribute(q, tok, i, payload, is_array=False)
        refs.append(weakref.ref(payload))
        refs.append(weakref.ref(op))
        op.wait()
        stage.advance_write_floor(i).wait()
        r = stage.read_attributes(q, [tok], ov.OrdinalRange.latest(i))
        refs.append(weakref.ref(r))
        for g in r.wait().groups():
            view = g.array(0)
            assert view[0] == i
            refs.append(weakref.ref(g))
            refs.append(weakref.ref(view))
            g.release()
        r.release().wait()
        fire_and_forget = np.full(3, -i, np.float64)
        refs.append(weakref.ref(fire_and_forget))
        stage.write_attribute(q, other, i + 1, fire_and_forget, is_array=False)  # never waited
    del payload, op, r, g, view, fire_and_forget
    stage.advance_write_floor(1000).wait()  # after every unwaited write
    # Lanes drop payload references without the GIL; the binding applies
    # those drops on its next call.
    stage._stats()
    gc.collect()
    alive = [ref() for ref in refs if ref() is not None]
    assert not alive, f"{len(alive)} of {len(refs)} objects still alive, e.g. {type(alive[0]).__name__}"
    assert len(refs) == 300 * 6


def test_m3_operations_stay_out_of_the_cycle_collector(world):
    # An Operation exposes no references to the collector, so tracking it
    # could break no cycle; untracked, a loop holding thousands of them
    # costs young-generation collections nothing. It is still freed by
    # reference counting and still weak-referenceable.
    stage, paths, pl, q = world
    tok = paths.intern_token("m3")
    ops = [
        stage.write_attribute(q, tok, 1, np.ones(3, np.float32), is_array=False),
        stage.advance_write_floor(1),
    ]
    for op in ops:
        assert not gc.is_tracked(op), type(op).__name__
        op.wait()
    ref = weakref.ref(ops[0])
    del ops, op
    assert ref() is None
