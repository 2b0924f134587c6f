"""WriteBatch, an extension of ours (not in the published API): per-prim sets
gathered natively and submitted as one write op."""
import threading

import numpy as np
import pytest

import ovstage as ov
from conftest import read_all


def seal(stage, n):
    stage.advance_write_floor(ordinal=n).wait()


def query_of(stage, paths, names):
    pl = paths.create_path_list_from_strings(names)
    return pl, stage.query_from_path_list(pl)


def read(stage, paths, names, attr, rng):
    pl, q = query_of(stage, paths, names)
    try:
        return read_all(stage, paths, q, attr, rng)
    finally:
        q.release().wait()
        pl.release()


def dtype_of(stage, paths, name, attr, ordinal):
    pl, q = query_of(stage, paths, [name])
    try:
        with stage.read_attributes(q, [paths.intern_token(attr)], ov.OrdinalRange.latest(ordinal)) as r:
            g = r.wait().fetch_next()
            with g:
                return g.array(0).dtype, g.array(0).shape
    finally:
        q.release().wait()
        pl.release()


@pytest.fixture
def paths(stage):
    return ov.PathDictionary(stage)


def test_exported_and_documented(stage):
    assert ov.WriteBatch is ov._native.WriteBatch and "WriteBatch" in ov.__all__
    b = stage.write_batch(1)
    assert isinstance(b, ov.WriteBatch)
    assert b.ordinal == 1 and len(b) == 0 and b.operation is None and not b.spent and b.prim_count == 0
    assert "extension" in ov.WriteBatch.__doc__
    with pytest.raises(TypeError):
        ov.WriteBatch()
    with pytest.raises(ValueError):
        stage.write_batch(1, prim_mode=7)
    with pytest.raises(ValueError):
        stage.write_batch(-1)


def test_values_read_back(stage, paths):
    b = stage.write_batch(1)
    names = [f"/W/P{i}" for i in range(5)]
    for i, n in enumerate(names):
        b.set(n, "mass", float(i) + 0.5)
        b.set(n, "count", i)
        b.set(n, "alive", i % 2 == 0)
        b.set(n, "vel", [i, i + 1, i + 2], dtype=np.float32)
    assert len(b) == 20 and b.prim_count == 5
    op = b.submit()
    assert isinstance(op, ov.Operation) and op.ok and b.operation is op and b.spent
    op.wait()
    seal(stage, 1)
    rng = ov.OrdinalRange.latest(1)
    assert read(stage, paths, names, "mass", rng) == {n: i + 0.5 for i, n in enumerate(names)}
    assert read(stage, paths, names, "count", rng) == {n: i for i, n in enumerate(names)}
    assert read(stage, paths, names, "alive", rng) == {n: i % 2 == 0 for i, n in enumerate(names)}
    assert read(stage, paths, names, "vel", rng) == {n: [i, i + 1, i + 2] for i, n in enumerate(names)}
    assert dtype_of(stage, paths, names[0], "mass", 1)[0] == np.float64
    assert dtype_of(stage, paths, names[0], "count", 1)[0] == np.int64
    assert dtype_of(stage, paths, names[0], "alive", 1)[0] == np.bool_
    assert dtype_of(stage, paths, names[0], "vel", 1) == (np.float32, (1, 3))


def test_numpy_values_keep_their_dtype(stage, paths):
    b = stage.write_batch(1)
    b.set("/A", "f32", np.float32(1.25))
    b.set("/A", "u8", np.uint8(200))
    b.set("/A", "i32", np.int32(-7))
    b.set("/A", "row", np.array([1, 2, 3, 4], np.uint32))
    b.set("/A", "h", np.float16(0.5))
    b.set("/A", "nb", np.bool_(True))
    b.set("/A", "zero_d", np.array(2.5, np.float32))
    b.set("/A", "strided", np.arange(8, dtype=np.float64)[::2])
    b.submit().wait()
    seal(stage, b.ordinal)
    want = {"f32": (np.float32, 1.25), "u8": (np.uint8, 200), "i32": (np.int32, -7),
            "row": (np.uint32, [1, 2, 3, 4]), "h": (np.float16, 0.5), "nb": (np.bool_, True),
            "zero_d": (np.float32, 2.5), "strided": (np.float64, [0, 2, 4, 6])}
    for attr, (dt, v) in want.items():
        assert dtype_of(stage, paths, "/A", attr, 1)[0] == dt, attr
        assert read(stage, paths, ["/A"], attr, ov.OrdinalRange.latest(1)) == {"/A": v}, attr


def test_later_values_convert_to_the_first_type(stage, paths):
    b = stage.write_batch(1)
    b.set("/A", "x", np.float32(1.0))          # float32
    b.set("/B", "x", 2)                        # int -> float32
    b.set("/C", "x", np.float64(3.5))          # float64 -> float32
    b.set("/D", "x", True)                     # bool -> float32
    b.set("/A", "n", 1, dtype=np.int32)        # int32
    b.set("/B", "n", np.int64(-5))
    b.set("/C", "n", np.uint8(9))
    b.set("/A", "r", (1.0, 2.0))               # float64 x2
    b.set("/B", "r", np.array([3, 4], np.int16))
    b.submit().wait()
    seal(stage, b.ordinal)
    rng = ov.OrdinalRange.latest(1)
    assert read(stage, paths, ["/A", "/B", "/C", "/D"], "x", rng) == {"/A": 1.0, "/B": 2.0, "/C": 3.5, "/D": 1.0}
    assert read(stage, paths, ["/A", "/B", "/C"], "n", rng) == {"/A": 1, "/B": -5, "/C": 9}
    assert read(stage, paths, ["/A", "/B"], "r", rng) == {"/A": [1.0, 2.0], "/B": [3.0, 4.0]}
    assert dtype_of(stage, paths, "/A", "x", 1)[0] == np.float32
    assert dtype_of(stage, paths, "/A", "n", 1)[0] == np.int32


def test_float16_conversion_matches_numpy(stage, paths):
    rng = np.random.default_rng(5)
    vals = list(rng.normal(0, 100, 200)) + list(rng.normal(0, 1e-5, 100)) + [
        0.0, -0.0, 65504.0, 65520.0, 1e6, -1e6, 6.0e-8, 2.9802322387695312e-08, 5.960464477539063e-08,
        1.0009765625, 1.00048828125, 1.000732421875, 2048.5, float("inf"), float("-inf")]
    names = [f"/H{i}" for i in range(len(vals))]
    b = stage.write_batch(1)
    b.set(names[0], "h", vals[0], dtype=np.float16)
    for n, v in zip(names[1:], vals[1:]):
        b.set(n, "h", float(v))
    b.submit().wait()
    seal(stage, b.ordinal)
    got = read(stage, paths, names, "h", ov.OrdinalRange.latest(1))
    with np.errstate(over="ignore"):
        want = np.array(vals, np.float64).astype(np.float16)
    for n, w in zip(names, want):
        assert np.float16(got[n]).tobytes() == w.tobytes(), (n, got[n], w)


def test_last_set_wins(stage, paths):
    b = stage.write_batch(1)
    b.set("/A", "v", 1.0)
    b.set("/B", "v", 2.0)
    b.set("/A", "v", 3.0)
    b.set(paths.intern_path("/A"), paths.intern_token("v"), 4.0)
    assert len(b) == 2 and b.prim_count == 2
    b.submit().wait()
    seal(stage, b.ordinal)
    assert read(stage, paths, ["/A", "/B"], "v", ov.OrdinalRange.latest(1)) == {"/A": 4.0, "/B": 2.0}


def test_attributes_over_different_prim_sets(stage, paths):
    names = ["/A", "/B", "/C", "/D"]
    pl, q = query_of(stage, paths, names)
    stage.write_attribute(q, "a", 1, np.array([1, 2, 3, 4], np.float64), is_array=False).wait()
    stage.write_attribute(q, "b", 1, np.array([10, 20, 30, 40], np.float64), is_array=False).wait()
    q.release().wait()
    pl.release()
    b = stage.write_batch(2)
    b.set("/A", "a", 100.0)
    b.set("/C", "b", 300.0)
    b.set("/D", "b", 400.0)
    b.set("/E", "c", 5.0)  # a new prim, only for a new attribute
    assert len(b) == 4 and b.prim_count == 4
    b.submit().wait()
    seal(stage, 2)
    everyone = names + ["/E"]
    latest = ov.OrdinalRange.latest(2)
    # Prims not set for an attribute keep their earlier values.
    assert read(stage, paths, everyone, "a", latest) == {"/A": 100.0, "/B": 2.0, "/C": 3.0, "/D": 4.0}
    assert read(stage, paths, everyone, "b", latest) == {"/A": 10.0, "/B": 20.0, "/C": 300.0, "/D": 400.0}
    assert read(stage, paths, everyone, "c", latest) == {"/E": 5.0}
    # At the batch's ordinal exactly the set prims changed.
    at = ov.OrdinalRange.between(2, 2)
    assert read(stage, paths, everyone, "a", at) == {"/A": 100.0}
    assert read(stage, paths, everyone, "b", at) == {"/C": 300.0, "/D": 400.0}
    assert read(stage, paths, everyone, "c", at) == {"/E": 5.0}
    # The earlier snapshot is unchanged.
    assert read(stage, paths, everyone, "a", ov.OrdinalRange.latest(1)) == {"/A": 1.0, "/B": 2.0, "/C": 3.0, "/D": 4.0}


def test_sparse_attribute_over_many_prims(stage, paths):
    names = [f"/S{i}" for i in range(300)]
    b = stage.write_batch(1)
    for i, n in enumerate(names):
        b.set(n, "all", float(i))
        if i % 3 == 0:
            b.set(n, "some", i)
    b.submit().wait()
    seal(stage, b.ordinal)
    rng = ov.OrdinalRange.latest(1)
    assert read(stage, paths, names, "all", rng) == {n: float(i) for i, n in enumerate(names)}
    assert read(stage, paths, names, "some", rng) == {n: i for i, n in enumerate(names) if i % 3 == 0}
    # An attribute set only on the first of many prims (its mask is shorter than the union).
    b = stage.write_batch(2)
    b.set(names[0], "first", 1.0)
    for n in names:
        b.set(n, "all", -1.0)
    b.submit().wait()
    seal(stage, 2)
    assert read(stage, paths, names, "first", ov.OrdinalRange.latest(2)) == {names[0]: 1.0}


def test_strings_and_handles_name_the_same_things(stage, paths):
    b = stage.write_batch(1)
    h = paths.intern_path("/World/A")
    t = paths.intern_token("m")
    b.set("/World/A", "m", 1.0)
    b.set(h, "m", 2.0)
    b.set(h, t, 3.0)
    b.set(np.uint64(h), np.int64(t), 4.0)  # integer-likes through __index__
    assert len(b) == 1 and b.prim_count == 1
    b.set("/World/B", t, 5.0)  # the string interns the path
    assert paths.path_to_string(paths.intern_path("/World/B")) == "/World/B"
    b.submit().wait()
    seal(stage, b.ordinal)
    assert read(stage, paths, ["/World/A", "/World/B"], "m", ov.OrdinalRange.latest(1)) == {
        "/World/A": 4.0, "/World/B": 5.0}


def test_bad_prims_and_attributes(stage, paths):
    b = stage.write_batch(1)
    b.set("/A", "v", 1.0)
    for bad in ("/W//A", "W/A", "", "/A/1x"):
        with pytest.raises(ov.OvxError) as e:
            b.set(bad, "v", 1.0)
        with pytest.raises(ov.OvxError) as want:
            paths.intern_path(bad)
        assert str(e.value) == str(want.value)
    with pytest.raises(ValueError, match="prim path handle"):
        b.set(0, "v", 1.0)
    with pytest.raises(ValueError, match="prim path handle"):
        b.set(10**9, "v", 1.0)
    with pytest.raises(ValueError):
        b.set(-1, "v", 1.0)
    with pytest.raises(TypeError):
        b.set(1.0, "v", 1.0)
    with pytest.raises(TypeError):
        b.set(None, "v", 1.0)
    with pytest.raises(ValueError, match="attribute token"):
        b.set("/A", 10**9, 1.0)
    with pytest.raises(ValueError, match="attribute token"):
        b.set("/A", 0, 1.0)
    with pytest.raises(TypeError):
        b.set("/A", 1.5, 1.0)
    with pytest.raises(TypeError):
        b.set("/A", None, 1.0)
    assert len(b) == 1 and b.prim_count == 1


def test_value_errors_name_attribute_and_prim_and_leave_the_batch(stage, paths):
    b = stage.write_batch(1)
    b.set("/A", "v3", [1.0, 2.0, 3.0], dtype=np.float32)
    b.set("/A", "i", 7, dtype=np.int32)
    b.set("/A", "flag", True)
    cases = [
        (ValueError, "/B", "v3", [1.0, 2.0]),                 # lanes
        (ValueError, "/A", "v3", 1.0),                        # scalar for a row
        (ValueError, "/B", "i", [1, 2]),                      # row for a scalar
        (TypeError, "/B", "i", 1.5),                          # float -> int
        (TypeError, "/B", "i", np.float32(1)),
        (ValueError, "/B", "i", 2**31),                       # out of int32
        (ValueError, "/B", "i", 2**70),
        (TypeError, "/B", "flag", 1),                         # int -> bool
        (TypeError, "/B", "flag", 1.0),
        (TypeError, "/B", "i", "7"),                          # strings are not numbers
        (TypeError, "/B", "v3", [1.0, "x", 2.0]),
        (TypeError, "/B", "v3", [1.0, [2.0], 3.0]),
        (ValueError, "/B", "v3", np.ones((1, 3), np.float32)),  # 2-D
        (TypeError, "/B", "i", np.array(["a"])),
        (TypeError, "/B", "i", None),
        (TypeError, "/B", "i", 1 + 2j),
    ]
    for exc, prim, attr, value in cases:
        with pytest.raises(exc) as e:
            b.set(prim, attr, value)
        assert repr(attr) in str(e.value) or f'"{attr}"' in str(e.value), (attr, value, str(e.value))
        if exc is not TypeError or "items" not in str(e.value):
            assert prim in str(e.value), (prim, value, str(e.value))
    with pytest.raises(ValueError, match="differs"):
        b.set("/B", "i", 1, dtype=np.int64)
    b.set("/B", "i", 1, dtype=np.int32)  # the same type is fine
    # New attributes: no lanes, a type the store cannot hold, an unknown dtype.
    with pytest.raises(ValueError):
        b.set("/B", "empty", [])
    with pytest.raises(TypeError, match="storable"):
        b.set("/B", "i16", np.int16(1))
    with pytest.raises(TypeError, match="storable"):
        b.set("/B", "i16", 1, dtype=np.int16)
    with pytest.raises(TypeError):
        b.set("/B", "c", 1.0, dtype=np.complex64)
    with pytest.raises(TypeError):
        b.set("/B", "u", 1.0, dtype="U3")
    # Nothing above changed the batch: /A's values stand, /B only has "i".
    assert len(b) == 4 and b.prim_count == 2
    b.submit().wait()
    seal(stage, b.ordinal)
    rng = ov.OrdinalRange.latest(1)
    assert read(stage, paths, ["/A", "/B"], "v3", rng) == {"/A": [1.0, 2.0, 3.0]}
    assert read(stage, paths, ["/A", "/B"], "i", rng) == {"/A": 7, "/B": 1}
    for attr in ("empty", "i16", "c", "u"):
        assert read(stage, paths, ["/A", "/B"], attr, rng) == {}


def test_ints_fit_their_type(stage, paths):
    b = stage.write_batch(1)
    b.set("/A", "u", 2**64 - 1)  # beyond int64: uint64, as numpy
    b.set("/A", "u8", 255, dtype=np.uint8)
    with pytest.raises(ValueError):
        b.set("/B", "u8", 256)
    with pytest.raises(ValueError):
        b.set("/B", "u8", -1)
    with pytest.raises(ValueError):
        b.set("/B", "u", -1)
    b.set("/B", "u8", np.int64(0))
    b.submit().wait()
    seal(stage, b.ordinal)
    rng = ov.OrdinalRange.latest(1)
    assert read(stage, paths, ["/A"], "u", rng) == {"/A": 2**64 - 1}
    assert read(stage, paths, ["/A", "/B"], "u8", rng) == {"/A": 255, "/B": 0}


def test_use_after_submit(stage, paths):
    b = stage.write_batch(1)
    b.set("/A", "v", 1.0)
    op = b.submit()
    with pytest.raises(ov.OvstageError) as e:
        b.set("/A", "v", 2.0)
    assert e.value.code == ov.ErrorCode.INVALID_HANDLE and "submitted" in str(e.value)
    with pytest.raises(ov.OvstageError) as e:
        b.submit()
    assert e.value.code == ov.ErrorCode.INVALID_HANDLE
    assert b.operation is op and len(b) == 0 and "submitted" in repr(b)
    op.wait()
    seal(stage, b.ordinal)
    assert read(stage, paths, ["/A"], "v", ov.OrdinalRange.latest(1)) == {"/A": 1.0}


def test_empty_batch(stage):
    b = stage.write_batch(1)
    with pytest.raises(ValueError, match="nothing was set"):
        b.submit()
    assert not b.spent  # still usable
    b.set("/A", "v", 1.0)
    b.submit().wait()
    seal(stage, b.ordinal)
    with stage.write_batch(2) as e:
        pass
    assert e.operation is None and e.spent
    with pytest.raises(ov.OvstageError):
        e.set("/A", "v", 1.0)


def test_with_block_submits_on_clean_exit(stage, paths):
    with stage.write_batch(1) as b:
        for i, n in enumerate(["/A", "/B"]):
            b.set(n, "v", float(i))
    assert b.spent and b.operation is not None
    b.operation.wait()
    seal(stage, b.ordinal)
    assert read(stage, paths, ["/A", "/B"], "v", ov.OrdinalRange.latest(1)) == {"/A": 0.0, "/B": 1.0}


def test_exception_inside_with_discards(stage, paths):
    with pytest.raises(KeyError):
        with stage.write_batch(1) as b:
            b.set("/A", "v", 1.0)
            raise KeyError("boom")
    assert b.spent and b.operation is None and len(b) == 0 and "discarded" in repr(b)
    with pytest.raises(ov.OvstageError) as e:
        b.set("/A", "v", 1.0)
    assert "discarded" in str(e.value)
    seal(stage, 1)
    assert read(stage, paths, ["/A"], "v", ov.OrdinalRange.latest(1)) == {}


def test_two_threads_set_into_one_batch(stage, paths):
    b = stage.write_batch(1)
    n = 4000
    tok = paths.intern_token("v")
    errors = []

    def work(k):
        try:
            for i in range(n):
                b.set(f"/T{k}_{i}", tok, float(k * n + i))
                b.set(f"/T{k}_{i}", "w", [k, i])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    assert len(b) == 4 * n and b.prim_count == 2 * n
    b.submit().wait()
    seal(stage, b.ordinal)
    names = [f"/T{k}_{i}" for k in range(2) for i in range(n)]
    rng = ov.OrdinalRange.latest(1)
    assert read(stage, paths, names, "v", rng) == {f"/T{k}_{i}": float(k * n + i) for k in range(2) for i in range(n)}
    assert read(stage, paths, names, "w", rng) == {f"/T{k}_{i}": [k, i] for k in range(2) for i in range(n)}


def test_write_floor_violation_as_write_attributes(stage, paths):
    seal(stage, 5)
    pl, q = query_of(stage, paths, ["/A"])
    want = stage.write_attributes(q, [ov.WriteDesc("v", np.ones(1), is_array=False)], 5)
    for ordinal in (3, 5):
        b = stage.write_batch(ordinal)
        b.set("/A", "v", 1.0)
        op = b.submit()
        assert not op.ok and op.status == want.status == ov.ErrorCode.WRITE_FLOOR_VIOLATION
        assert op.error_message()
        with pytest.raises(ov.OvstageError) as e:
            op.wait()
        assert e.value.code == ov.ErrorCode.WRITE_FLOOR_VIOLATION
        assert b.spent and b.operation is op
    with pytest.raises(ov.OvstageError) as e:
        with stage.write_batch(4) as b:
            b.set("/A", "v", 1.0)
    assert e.value.code == ov.ErrorCode.WRITE_FLOOR_VIOLATION and b.operation.status == e.value.code
    q.release().wait()
    pl.release()


def test_nothing_leaks(stage, paths):
    d = stage._stats()
    for k in range(20):
        b = stage.write_batch(k + 1)
        b.set("/A", "v", float(k))
        b.submit().wait()
    seal(stage, 20)
    stage.write_batch(21).set("/A", "v", 1.0)  # dropped unsubmitted: nothing enqueued
    tracked, handles = stage._stats()[:2]
    assert handles <= d[1] + 1, (d, stage._stats())


def test_existing_schema_and_insert_rejections_as_write_attributes(stage, paths):
    pl, q = query_of(stage, paths, ["/A"])
    stage.write_attribute(q, "v", 1, np.ones(1, np.float32), is_array=False).wait()
    want = stage.write_attributes(q, [ov.WriteDesc("v", np.ones(1, np.float64), is_array=False)], 2)
    b = stage.write_batch(2)
    b.set("/A", "v", 1.0)  # float64 onto a float32 column
    op = b.submit()
    assert op.status == want.status == ov.ErrorCode.INVALID_ARGUMENT
    want = stage.write_attributes(q, [ov.WriteDesc("w", np.ones(1), is_array=False)], 3,
                                  prim_mode=ov.PrimMode.INSERT)
    b = stage.write_batch(3, prim_mode=ov.PrimMode.INSERT)
    b.set("/A", "w", 1.0)
    op = b.submit()
    assert op.status == want.status == ov.ErrorCode.PRIM_NOT_FOUND
    b = stage.write_batch(3, prim_mode=ov.PrimMode.INSERT)
    b.set("/New", "w", 1.0)
    b.submit().wait()
    seal(stage, b.ordinal)
    q.release().wait()
    pl.release()


def test_destroyed_stage():
    s = ov.Stage("gone")
    b = s.write_batch(1)
    b.set("/A", "v", 1.0)
    s.destroy()
    with pytest.raises(ov.OvstageError) as e:
        b.submit()
    assert e.value.code == ov.ErrorCode.INVALID_HANDLE
    with pytest.raises(ov.OvstageError) as e:
        s.write_batch(1)
    assert e.value.code == ov.ErrorCode.INVALID_HANDLE
