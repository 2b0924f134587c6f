"""Groups C, F, G, H, I, J: operations, writes, reads, maps, queries, clone and hierarchy."""
import gc
import threading
import weakref

import numpy as np
import pytest

import ovstage as ov
from conftest import read_all


def seal(stage, n):
    stage.advance_write_floor(ordinal=n).wait()


def test_write_read_roundtrip_and_views(world):
    stage, paths, pl, q = world
    tok = paths.intern_token("v")
    stage.write_attribute(q, tok, 1, np.array([1, 2, 3], np.float32), is_array=False).wait()
    seal(stage, 1)
    with stage.read_attributes(q, [tok], ov.OrdinalRange.latest(1)) as r:
        g = r.wait().fetch_next()
        a = g.array(0)
        assert a.tolist() == [1, 2, 3] and a.dtype == np.float32
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a.flags.writeable = True
        assert a.__array_interface__["data"][0] == g.tensor(0).data
        assert np.shares_memory(a, g.array(0))
        d = np.from_dlpack(g.dlpack(0))
        assert d.tolist() == [1, 2, 3] and not d.flags.writeable
        with pytest.raises(BufferError):
            g.dlpack(0).__dlpack__(copy=True)
        with pytest.raises(BufferError):
            g.dlpack(0).__dlpack__(dl_device=(2, 0))
        assert g.__dlpack_device__() == (1, 0)
        stage.release_group(g)
        with pytest.raises(ov.OvstageError) as e:
            stage.release_group(g)
        assert e.value.code == ov.ErrorCode.INVALID_HANDLE
        for call in (lambda: g.array(0), lambda: g.tensor(0), lambda: g.dlpack(0), lambda: g.prim_index(0)):
            with pytest.raises(ov.OvstageError):
                call()
        assert g.prim_count == 3 and g.attribute == tok
        # Views stay valid and unchanged after release and a later write.
        stage.write_attribute(q, tok, 2, np.array([7, 8, 9], np.float32), is_array=False).wait()
        seal(stage, 2)
        assert a.tolist() == [1, 2, 3] and d.tolist() == [1, 2, 3]
        assert r.fetch_next() is None and r.fetch_next() is None
    with pytest.raises(ov.OvstageError):
        r.fetch_next()
    # Versioned snapshot (ours): latest(1) still gives the old values.
    assert read_all(stage, paths, q, tok, ov.OrdinalRange.latest(1)) == {"/A": 1, "/B": 2, "/C": 3}
    assert read_all(stage, paths, q, tok, ov.OrdinalRange.latest(2)) == {"/A": 7, "/B": 8, "/C": 9}


def test_operation_semantics(world):
    stage, paths, pl, q = world
    op = stage.write_attribute(q, "v", 1, np.zeros(3, np.float32), is_array=False)
    assert op.ok and op.status == 0 and op.op_id > 0
    assert op.wait() is op
    with pytest.raises(ov.OvstageError) as e:
        op.wait()
    assert e.value.code == ov.ErrorCode.INVALID_HANDLE
    assert stage.wait_op(op.op_id, timeout=0)[0] == ov.ErrorCode.INVALID_ARGUMENT
    seal(stage, 1)
    bad = stage.write_attribute(q, "v", 1, np.zeros(3, np.float32), is_array=False)
    assert not bad.ok and bad.status == ov.ErrorCode.WRITE_FLOOR_VIOLATION and bad.error_message()
    for _ in range(2):
        with pytest.raises(ov.OvstageError) as e:
            bad.wait()
        assert e.value.code == ov.ErrorCode.WRITE_FLOOR_VIOLATION


def test_pending_op_timeout_and_gil(world):
    stage, paths, pl, q = world
    payload = np.zeros(3, np.float32)
    op, latch = stage._pending_write(q, "p", 1, payload)
    with pytest.raises(ov.OvstageError) as e:
        op.wait(timeout=0)
    assert e.value.code == ov.ErrorCode.TIMEOUT
    code, errs, low = stage.wait_op(op.op_id, timeout=0)
    assert code == ov.ErrorCode.TIMEOUT and low > 0
    assert stage.release_op(op.op_id) != 0
    # Another thread blocked in wait() does not hold the GIL.
    done = []
    t = threading.Thread(target=lambda: done.append(op.wait(timeout=2_000_000_000)))
    t.start()
    n = 0
    for _ in range(1000):
        n += 1
    assert n == 1000
    latch.open()
    t.join()
    assert done and done[0] is op


def test_dropped_operation_keeps_payload(world):
    stage, paths, pl, q = world
    for i in range(300):
        stage.write_attribute(q, "d", i + 1, np.full(3, i, np.float32), is_array=False)
    seal(stage, 300)
    assert read_all(stage, paths, q, "d", ov.OrdinalRange.latest(300)) == {"/A": 299, "/B": 299, "/C": 299}
    gc.collect()
    assert stage._stats()[0] < 300  # orphaned ops are released


def test_rejections(world):
    stage, paths, pl, q = world
    stage.write_attribute(q, "i", 1, np.zeros(3, np.int32), is_array=False).wait()
    cases = [
        (stage.write_attribute(q, "i", 2, np.zeros(3, np.float32), is_array=False), 1),
        (stage.write_attribute(q, "j", 2, np.zeros(4, np.float32), is_array=False), 1),
        (stage.write_attribute(q, "j", 2, [1.0, 2.0, 3.0], is_array=False), 1),
        (stage.write_attribute(12345, "j", 2, np.zeros(3, np.float32), is_array=False), 2),
    ]
    for op, code in cases:
        assert op.status == code, (op.status, op.error_message())
    # INSERT onto existing prims: the core proves it when the op runs (OP_FAILED naming the prim).
    ins = stage.write_attribute(q, "i", 2, np.zeros(3, np.int32), is_array=False, prim_mode=ov.PrimMode.INSERT)
    with pytest.raises(ov.OvstageError) as e:
        ins.wait()
    assert e.value.code in (ov.ErrorCode.PRIM_NOT_FOUND, ov.ErrorCode.OP_FAILED)
    stage.write_attribute(q, "i", 5, np.zeros(3, np.int32), is_array=False).wait()
    with pytest.raises(ov.OvstageError) as e:
        stage.write_attribute(q, "i", 3, np.zeros(3, np.int32), is_array=False).wait()
    assert e.value.code == ov.ErrorCode.OP_FAILED


def test_payload_forms_and_selection(world):
    stage, paths, pl, q = world
    f3 = ov.DLDataType(code=ov.DLDataTypeCode.kDLFloat, bits=32, lanes=3)
    stage.write_attribute(q, "p3", 1, ov.make_dltensor(np.arange(9, dtype=np.float32), dtype=f3, shape=[3]),
                          is_array=False, semantic=ov.AttributeSemantic.POINT).wait()
    stage.write_attribute(q, "m", 1, np.tile(np.eye(4), (3, 1, 1)), is_array=False,
                          semantic=ov.AttributeSemantic.MATRIX).wait()
    stage.write_attribute(q, "dl", 1, ov.DLTensor.from_dlpack(np.array([4, 5, 6], np.int64)), is_array=False).wait()
    stage.write_attribute(q, "raw", 1, np.array([1, 2, 3], np.uint32), is_array=False).wait()
    stage.write_attribute(q, "bc", 1, np.array([9.0], np.float64), is_array=False, index_map=[0, 0, 0]).wait()
    stage.write_attribute(q, "cnt", 1, np.array([1, 2], np.int32), is_array=False, count=2).wait()
    stage.write_attribute(q, "arr", 1, [np.arange(2, dtype=np.int32), np.arange(0, dtype=np.int32),
                                        np.arange(3, dtype=np.int32)], is_array=True).wait()
    stage.write_attribute(q, "pk", 1, np.array([[1, 2], [3, 4], [5, 6]], np.int32), is_array=True).wait()
    stage.write_attribute(q, "f16", 1, np.array([1.5, 2.5, 3.5], np.float16), is_array=False).wait()
    seal(stage, 1)
    L = ov.OrdinalRange.latest(1)
    assert read_all(stage, paths, q, "p3", L)["/B"] == [3, 4, 5]
    assert read_all(stage, paths, q, "m", L)["/C"] == np.eye(4).tolist()
    assert read_all(stage, paths, q, "dl", L) == {"/A": 4, "/B": 5, "/C": 6}
    assert read_all(stage, paths, q, "bc", L) == {"/A": 9.0, "/B": 9.0, "/C": 9.0}
    assert read_all(stage, paths, q, "cnt", L) == {"/A": 1, "/B": 2}
    assert read_all(stage, paths, q, "arr", L) == {"/A": [0, 1], "/B": [], "/C": [0, 1, 2]}
    assert read_all(stage, paths, q, "pk", L) == {"/A": [1, 2], "/B": [3, 4], "/C": [5, 6]}
    with stage.read_attributes(q, [paths.intern_token("f16")], L) as r:
        with r.wait().fetch_next() as g:
            assert g.array(0).dtype == np.float16


def test_write_attributes_batch_and_delete(world):
    stage, paths, pl, q = world
    op = stage.write_attributes(q, [ov.WriteDesc("a", np.ones(3, np.float32), is_array=False),
                                    ov.WriteDesc("b", [np.arange(1), np.arange(2), np.arange(3)], is_array=True,
                                                 semantic=ov.AttributeSemantic.NONE)], ordinal=1)
    op.wait()
    assert stage.write_attributes(q, [], ordinal=2).ok
    with pytest.raises(TypeError):
        stage.write_attributes(q, [1], ordinal=2)
    dup = stage.write_attributes(q, [ov.WriteDesc("a", np.ones(3, np.float32), is_array=False)] * 2, ordinal=3)
    assert dup.status == ov.ErrorCode.INVALID_ARGUMENT
    stage.delete_attributes(q, ["a"], ordinal=4).wait()
    seal(stage, 4)
    got = read_all(stage, paths, q, "a", ov.OrdinalRange.between(2, 4))
    assert got == {"/A": "deleted", "/B": "deleted", "/C": "deleted"}


def test_read_before_floor_rejected(world):
    stage, paths, pl, q = world
    tok = paths.intern_token("u")
    stage.write_attribute(q, tok, 3, np.zeros(3, np.float32), is_array=False).wait()
    r = stage.read_attributes(q, [tok], ov.OrdinalRange.latest(3))
    with pytest.raises(ov.OvstageError) as e:
        r.wait()
    assert e.value.code == ov.ErrorCode.WRITE_FLOOR_VIOLATION
    # Submit-ahead: write, floor, read without waits sees the write.
    stage.write_attribute(q, tok, 4, np.full(3, 4, np.float32), is_array=False)
    stage.advance_write_floor(ordinal=4)
    assert read_all(stage, paths, q, tok, ov.OrdinalRange.latest(4)) == {"/A": 4, "/B": 4, "/C": 4}


def test_force_replaces_schema(world):
    """Spec F8: AttributeMode.FORCE replaces a differing schema (REJECT refuses it)."""
    stage, paths, pl, q = world
    stage.write_attribute(q, "f", 1, np.array([1, 2, 3], np.int32), is_array=False).wait()
    rejected = stage.write_attribute(q, "f", 2, np.zeros(3, np.float64), is_array=False)
    assert rejected.status == ov.ErrorCode.INVALID_ARGUMENT
    stage.write_attribute(q, "f", 2, np.array([4, 5, 6], np.float64), is_array=False,
                          attribute_mode=ov.AttributeMode.FORCE).wait()
    # A map session with FORCE replaces the schema again (float64 -> float32 triples).
    f3 = ov.DLDataType(code=2, bits=32, lanes=3)
    with stage.map_attribute(q, "f", 3, dtype=f3, attribute_mode=ov.AttributeMode.FORCE) as m:
        g = m.wait().fetch_next()
        g.array(0)[:] = 7.0
        m.unmap_group(g).wait()
    seal(stage, 3)
    assert read_all(stage, paths, q, "f", ov.OrdinalRange.latest(2)) == {"/A": 4.0, "/B": 5.0, "/C": 6.0}
    assert read_all(stage, paths, q, "f", ov.OrdinalRange.latest(3)) == {p: [7.0] * 3 for p in ("/A", "/B", "/C")}
    # A change range over the replacement: a tombstone of the old schema and the new value.
    seen = []
    with stage.read_attributes(q, [paths.intern_token("f")], ov.OrdinalRange.between(2, 2)) as r:
        for grp in r.wait().groups():
            with grp:
                kind = "deleted" if grp.is_delete else str(grp.array(0).dtype)
                seen.append((grp.ordinal, kind, grp.prim_count))
    assert sorted(seen) == [(2, "deleted", 3), (2, "float64", 3)]


def test_map_sessions(world):
    stage, paths, pl, q = world
    f3 = ov.DLDataType(code=2, bits=32, lanes=3)
    with stage.map_attribute(q, "pos", 1, dtype=f3) as m:
        g = m.wait().fetch_next()
        view = g.array(0)
        assert view.shape == (3, 3) and view.flags.writeable
        view[:] = 1.0
        m.unmap_group(g).wait()
        with pytest.raises(ov.OvstageError):
            g.array(0)
        view[:] = 42.0  # after the commit: memory-safe, no effect on committed data
    with pytest.raises(ov.OvstageError):
        m.unmap()
    with stage.map_attribute(q, "rag", 1, dtype=ov.DLDataType(0, 32, 1), element_sizes=[2, 0, 3]) as m:
        g = m.wait().fetch_next()
        assert g.tensor_count == 3 and g.array(1).shape == (0,)
        g.array(0)[:] = [1, 2]
        np.from_dlpack(g.dlpack(2))[:] = [3, 4, 5]
    with pytest.raises(RuntimeError):
        with stage.map_attribute(q, "exc", 1, dtype=ov.DLDataType(2, 64, 1)) as m:
            m.wait().fetch_next().array(0)[:] = 5.0
            raise RuntimeError("leave")
    bad = stage.map_attribute(q, "new_without_dtype", 1)
    assert bad.handle == 0
    with pytest.raises(ov.OvstageError) as e:
        bad.wait()
    assert e.value.code == ov.ErrorCode.NOT_SUPPORTED
    seal(stage, 1)
    L = ov.OrdinalRange.latest(1)
    assert read_all(stage, paths, q, "pos", L)["/A"] == [1.0, 1.0, 1.0]
    assert read_all(stage, paths, q, "rag", L) == {"/A": [1, 2], "/B": [], "/C": [3, 4, 5]}
    assert read_all(stage, paths, q, "exc", L) == {"/A": 5.0, "/B": 5.0, "/C": 5.0}


def test_queries_clone_hierarchy(stage):
    paths = ov.PathDictionary(stage)
    with paths.create_path_list_from_strings(["/W", "/W/A", "/W/B"]) as pl, stage.query_from_path_list(pl) as q:
        assert q.op is None and q.wait() is q
        stage.write_attribute(q, "n", 1, np.arange(3, dtype=np.int32), is_array=False).wait()
        res = stage.clone("/W", ["/X", "/Y"], ordinal=2)
        assert res == ov.CloneResult(prims_cloned=6, target_count=2, source_prim_count=3, ordinal=2)
        with pytest.raises(ov.OvstageError) as e:
            stage.clone("/W", ["/X"], ordinal=3)
        assert e.value.code == ov.ErrorCode.OP_FAILED
        h = stage.get_hierarchy(pl, 2, ov.HierarchyRelation.CHILDREN)
        assert sorted(h.items[0].paths) == ["/W/A", "/W/B"] and h.input_count == 3
        with pytest.raises(ov.OvstageError):
            stage.get_hierarchy(pl, 2, 7)
        with stage.query(filter=ov.Filter([ov.Predicate("usd-path", ov.FilterOp.PREFIX, ["/X"])])) as fq:
            r = fq.wait().result()
            assert r.total_prim_count == 3 and r.all_handle == fq.handle
        nq = stage.query(filter=ov.Filter([ov.Predicate("usd-path", ov.FilterOp.LT, ["1"])]))
        assert nq.handle == 0
        with pytest.raises(ov.OvstageError) as e:
            nq.wait()
        assert e.value.code == ov.ErrorCode.NOT_SUPPORTED
        # Nothing carries world matrices here: a computation changes nothing.
        stage.compute_hierarchy(1, 5)
        models = stage.get_hierarchy_computation_models()
        M = ov.HierarchyComputationModel
        assert [(m.model_id, m.name) for m in models] == [
            (M.CPU_INCREMENTAL, "cpu-incremental"), (M.GPU_INCREMENTAL, "gpu-incremental"),
            (M.GPU_GLOBAL, "gpu-global"), (M.RUNTIME_DEFAULT, "runtime-default")]
        with pytest.raises(ov.OvstageError) as e:
            stage.compute_hierarchy(1, 6, model=0)
        assert e.value.code == ov.ErrorCode.INVALID_ARGUMENT
        with stage.get_attribute_write_floor(None) as fq:
            assert fq.fetch() == 0


def test_value_predicates_and_filter_names(stage):
    """Spec 10.2 / 17 I1: value tests on recorded columns select by the
    latest value (ours; the published package refuses them); values that
    are not paths or tokens match nothing; an unscoped query reports the
    names its filter tests."""
    P = ov.Predicate
    paths = ov.PathDictionary(stage)
    with paths.create_path_list_from_strings(["/W", "/W/A", "/W/B"]) as pl, stage.query_from_path_list(pl) as q:
        stage.write_attribute(q, "i", 1, np.array([-1, 0, 7], np.int32), is_array=False).wait()
        stage.write_attribute(q, "u", 1, np.array([0, 255, 7], np.uint8), is_array=False).wait()
        stage.write_attribute(q, "d", 1, np.array([0.5, -2.0, 7.0]), is_array=False).wait()
        stage.write_attribute(q, "v", 1, np.zeros((3, 3), np.float32), is_array=False).wait()
        rows = [np.array([7.0], np.float32), np.zeros(0, np.float32), np.array([1.0, 7.0], np.float32)]
        stage.write_attribute(q, "a", 1, rows, is_array=True).wait()
        stage.advance_write_floor(ordinal=1).wait()

        def selected(name, op, values):
            # The matched prims, through a read of usd-path over the query.
            with stage.query(filter=ov.Filter([P(name, op, values)])) as vq:
                r = vq.wait().result()
                found = []
                with stage.read_attributes(vq, [paths.intern_token("usd-path")], ov.OrdinalRange.latest(1)) as rd:
                    for g in rd.wait().groups():
                        with g:
                            found += [paths.get_path_strings(g.prim_list)[g.prim_index(i)] for i in range(g.prim_count)]
                assert len(found) == r.total_prim_count
                return sorted(found)

        F = ov.FilterOp
        assert selected("i", F.IN, ["7", "-1"]) == ["/W", "/W/B"]
        assert selected("i", F.LT, ["0"]) == ["/W"]
        assert selected("u", F.GE, ["7"]) == ["/W/A", "/W/B"]
        assert selected("d", F.GT, ["0"]) == ["/W", "/W/B"]
        assert selected("v", F.IN, ["0, 0, 0"]) == ["/W", "/W/A", "/W/B"]
        assert selected("a", F.CONTAINS, ["7"]) == ["/W", "/W/B"]
        assert selected("i", F.IN, ["x"]) == []
        assert selected("missing", F.IN, ["7"]) == []
        with stage.query(filter=ov.Filter([P("usd-path", ov.FilterOp.IN, ["/W/A", "not a path", ""])])) as fq:
            assert fq.wait().result().total_prim_count == 1
        with stage.query(filter=ov.Filter([P("usd-prim-type", ov.FilterOp.IN, [""])])) as fq:
            assert fq.wait().result().total_prim_count == 0
        with stage.query(filter=ov.Filter([P("nope", ov.FilterOp.HAS)])) as fq:
            r = fq.wait().result()
            assert r.total_prim_count == 0
            assert [paths.token_to_string(t) for t in r.attributes] == ["nope"]
        with stage.query(filter=ov.Filter([P("usd-path", ov.FilterOp.HAS)])) as fq:
            r = fq.wait().result()
            assert r.total_prim_count == 3
            assert [paths.token_to_string(t) for t in r.attributes] == ["usd-path"]
        with stage.query(filter=ov.Filter([P("usd-parent", ov.FilterOp.IN, ["/W"])])) as fq:
            r = fq.wait().result()
            assert r.total_prim_count == 2
            assert sorted(paths.token_to_string(t) for t in r.attributes) == ["a", "d", "i", "u", "usd-parent", "v"]


def test_destroy_semantics():
    s = ov.Stage("d")
    paths = ov.PathDictionary(s)
    pl = paths.create_path_list_from_strings(["/A"])
    q = s.query_from_path_list(pl)
    s.write_attribute(q, "v", 1, np.array([3.0], np.float32), is_array=False).wait()
    s.advance_write_floor(ordinal=1).wait()
    r = s.read_attributes(q, [paths.intern_token("v")], ov.OrdinalRange.latest(1))
    g = r.wait().fetch_next()
    s.destroy()
    s.destroy()
    assert g.array(0).tolist() == [3.0]
    with pytest.raises(ov.OvstageError) as e:
        s.release_group(g)
    assert e.value.code == ov.ErrorCode.INVALID_HANDLE
    with pytest.raises(ov.OvxError):
        paths.intern_token("x")
    with pytest.raises(ov.OvstageError):
        s.write_attribute(q, "v", 2, np.zeros(1, np.float32), is_array=False)


def test_path_dictionary(stage):
    import copy
    import pickle
    paths = ov.PathDictionary(stage)
    assert paths.token_to_string(999999) == ""
    assert paths.path_to_string(paths.intern_path("/")) == "/"
    for bad in ("", "/W//A", "W/A"):
        with pytest.raises(ov.OvxError):
            paths.intern_path(bad)
    with pytest.raises(TypeError):
        paths.create_path_list_from_strings("/A")
    pl = paths.create_path_list_from_strings(["/A", "/A"])
    assert isinstance(pl, int) and str(pl) == str(int(pl)) and repr(pl).endswith("owned)")
    assert type(copy.copy(pl)) is int and type(pickle.loads(pickle.dumps(pl))) is int
    assert paths.get_path_strings(pl) == ["/A", "/A"]
    paths.destroy_path_list(pl)
    assert pl.released
    with pytest.raises(ov.OvxError):
        pl.release()
    paths.destroy_path_list(0)


def test_concurrent_release_one_wins(world):
    stage, paths, pl, q2 = world
    q = stage.query_from_path_list(pl)
    results = []

    def go():
        try:
            q.release()
            results.append("ok")
        except ov.OvstageError:
            results.append("err")

    ts = [threading.Thread(target=go) for _ in range(2)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert sorted(results) == ["err", "ok"]


def test_resource_warning_and_no_leaks(world):
    stage, paths, pl, q = world
    stage.write_attribute(q, "v", 1, np.zeros(3, np.float32), is_array=False).wait()
    seal(stage, 1)
    r = stage.read_attributes(q, [paths.intern_token("v")], ov.OrdinalRange.latest(1))
    with pytest.warns(ResourceWarning):
        del r
        gc.collect()
    arr = np.zeros(3, np.float32)
    ref = weakref.ref(arr)
    stage.write_attribute(q, "v", 2, arr, is_array=False).wait()
    del arr
    gc.collect()
    assert ref() is None


def test_producer_consumer_threads(world):
    stage, paths, pl, q = world
    tok = paths.intern_token("tick")
    seen = []
    N = 200

    def producer():
        for t in range(1, N + 1):
            stage.write_attribute(q, tok, t, np.full(3, t, np.int64), is_array=False)
            stage.advance_write_floor(ordinal=t)

    def consumer():
        last = 0
        while last < N:
            with stage.get_attribute_write_floor(None) as fq:
                floor = fq.fetch()
            if floor <= last:
                continue
            with stage.get_oldest_preserved_ordinal() as oq:
                start = max(last + 1, oq.fetch())
            if start > floor:
                # The history window moved past the floor read above: read
                # the floor again.
                continue
            try:
                with stage.read_attributes(q, [tok], ov.OrdinalRange.between(start, floor)) as r:
                    got = []
                    for g in r.wait().groups():
                        with g:
                            got.append(int(g.array(0)[0]))
            except ov.OvstageError as e:
                # The producer sealed past the window since the floor was read
                # (history starts at the highest sealed floor): a consumer
                # that falls behind reads the floor again.
                assert e.code == ov.ErrorCode.OUT_OF_RANGE, e
                continue
            seen.extend(got)
            last = floor

    ts = [threading.Thread(target=producer), threading.Thread(target=consumer)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert seen == sorted(seen) and seen[-1] == N and len(set(seen)) == len(seen)


def test_world_matrices_follow_the_hierarchy(stage):
    """Spec 17 J3 (ours): world = local x parent world for prims carrying a
    world matrix under a parent that does; an advance covering the world
    matrices recomputes them after a local change."""
    def translate(x, y, z):
        m = np.eye(4)
        m[3, :3] = (x, y, z)
        return m

    paths = ov.PathDictionary(stage)
    with paths.create_path_list_from_strings(["/W", "/W/A", "/W/A/B"]) as pl, stage.query_from_path_list(pl) as q:
        locals_ = np.stack([translate(1, 0, 0), translate(0, 2, 0), translate(0, 0, 3)])
        stage.write_attribute(q, "omni:xform", 1, locals_, is_array=False,
                              semantic=ov.AttributeSemantic.MATRIX).wait()
        stage.write_attribute(q, "omni:fabric:worldMatrix", 1, np.stack([np.eye(4)] * 3), is_array=False,
                              semantic=ov.AttributeSemantic.MATRIX).wait()
        stage.advance_write_floor(ordinal=1).wait()
        got = read_all(stage, paths, q, "omni:fabric:worldMatrix", ov.OrdinalRange.latest(1))
        assert [got[p][3][:3] for p in ("/W", "/W/A", "/W/A/B")] == [[0, 0, 0], [0, 2, 0], [0, 2, 3]]
