"""Spec 17.1 groups F-L: what test_surface.py and test_data.py leave out."""
import gc
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import ovstage as ov
from conftest import read_all

E = ov.ErrorCode


def seal(stage, n):
    stage.advance_write_floor(ordinal=n).wait()


def code_of(fn):
    with pytest.raises(ov.OvstageError) as e:
        fn()
    return e.value.code


class Producer:
    """A foreign DLPack producer (not a numpy array): it only has the protocol."""

    def __init__(self, array):
        self._a = array

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


# ---- F: writes


def test_f1_foreign_dlpack_producers_and_from_dlpack(world):
    stage, paths, pl, q = world
    src = np.array([1.5, 2.5, 3.5], np.float32)
    prod = Producer(src)
    stage.write_attribute(q, "direct", 1, prod, is_array=False).wait()
    t = ov.DLTensor.from_dlpack(Producer(np.arange(6, dtype=np.int32).reshape(3, 2)))
    assert t.shape_tuple == (3, 2) and (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (0, 32, 1)
    assert t.device.device_type.value == ov.DLDeviceType.kDLCPU
    stage.write_attribute(q, "viat", 1, t, is_array=False).wait()
    # The tensor keeps its producer alive.
    owner = np.array([7, 8, 9], np.int64)
    ref = weakref.ref(owner)
    kept = ov.DLTensor.from_dlpack(Producer(owner))
    del owner
    gc.collect()
    assert ref() is not None and kept.data == ref().__array_interface__["data"][0]
    del kept
    gc.collect()
    assert ref() is None
    with pytest.raises(TypeError):
        ov.DLTensor.from_dlpack([1, 2, 3])
    # Other accepted forms: 0-d, a Python scalar broadcast by index_map, nested list, list of rows.
    stage.write_attribute(q, "zd", 1, np.array(4.0), is_array=False, index_map=[0, 0, 0]).wait()
    stage.write_attribute(q, "nest", 1, np.array([[1, 2], [3, 4], [5, 6]], np.int32), is_array=False).wait()
    stage.write_attribute(q, "rows", 1, [np.array([1.0]), np.array([2.0, 3.0]), np.array([], np.float64)],
                          is_array=True).wait()
    seal(stage, 1)
    L = ov.OrdinalRange.latest(1)
    assert read_all(stage, paths, q, "direct", L) == {"/A": 1.5, "/B": 2.5, "/C": 3.5}
    assert read_all(stage, paths, q, "viat", L) == {"/A": [0, 1], "/B": [2, 3], "/C": [4, 5]}
    assert read_all(stage, paths, q, "zd", L) == {"/A": 4.0, "/B": 4.0, "/C": 4.0}
    assert read_all(stage, paths, q, "nest", L)["/C"] == [5, 6]
    assert read_all(stage, paths, q, "rows", L) == {"/A": [1.0], "/B": [2.0, 3.0], "/C": []}


def test_f5_prim_modes_and_only_targets_are_created(stage):
    paths = ov.PathDictionary(stage)
    with paths.create_path_list_from_strings(["/Z/Y/X"]) as pl, stage.query_from_path_list(pl) as q:
        stage.write_attribute(q, "v", 1, np.array([1], np.int32), is_array=False,
                              prim_mode=ov.PrimMode.INSERT).wait()
        again = stage.write_attribute(q, "v", 2, np.array([2], np.int32), is_array=False,
                                      prim_mode=ov.PrimMode.INSERT)
        # Refused at enqueue, as the reference does.
        assert again.status == E.PRIM_NOT_FOUND
        assert code_of(again.wait) == E.PRIM_NOT_FOUND
    probe = ["/Z/Y/X", "/Z/Y", "/Z"]
    with paths.create_path_list_from_strings(probe) as hl:
        items = stage.get_hierarchy(hl, 2, ov.HierarchyRelation.PARENT).items
        assert items[0].status == 0 and items[0].paths == ()
        assert [i.status for i in items[1:]] == [3, 3]
        with stage.query_from_path_list(hl) as q:  # UPSERT creates the ancestors
            stage.write_attribute(q, "w", 2, np.zeros(3, np.uint8), is_array=False).wait()
        parents = stage.get_hierarchy(hl, 2, ov.HierarchyRelation.PARENT).items
        assert [i.paths for i in parents] == [("/Z/Y",), ("/Z",), ()]
        children = stage.get_hierarchy(hl, 2, ov.HierarchyRelation.CHILDREN).items
        assert [i.paths for i in children] == [(), ("/Z/Y/X",), ("/Z/Y",)]


def test_f6_batches(world):
    stage, paths, pl, q = world
    f3 = ov.DLDataType(2, 32, 3)
    op = stage.write_attributes(q, [
        ov.WriteDesc("col", ov.make_dltensor(np.arange(9, dtype=np.float32), dtype=f3, shape=[3]), is_array=False,
                     semantic=ov.AttributeSemantic.COLOR),
        ov.WriteDesc("tags", [np.array([1], np.uint64), np.array([], np.uint64), np.array([2, 3], np.uint64)],
                     is_array=True),
    ], ordinal=1)
    assert op.wait() is op
    empty = stage.write_attributes(q, [], ordinal=1)
    assert empty.ok and empty.op_id > 0 and empty.wait() is empty
    assert code_of(empty.wait) == E.INVALID_HANDLE  # consumed like any other op
    with pytest.raises(TypeError):
        stage.write_attributes(q, [("col", np.zeros(3))], ordinal=2)
    assert stage.write_attributes(q, [ov.WriteDesc("z", np.ones(3), is_array=False),
                                      ov.WriteDesc("z", np.ones(3), is_array=False)], ordinal=2).status == \
        E.INVALID_ARGUMENT
    seal(stage, 1)
    with stage.read_attributes(q, [paths.intern_token("col")], ov.OrdinalRange.latest(1)) as r:
        with r.wait().fetch_next() as g:
            assert g.semantic == ov.AttributeSemantic.COLOR and g.array(0).shape == (3, 3)
    assert read_all(stage, paths, q, "tags", ov.OrdinalRange.latest(1)) == {"/A": [1], "/B": [], "/C": [2, 3]}


def test_f7_large_write_is_zero_copy(stage):
    paths = ov.PathDictionary(stage)
    n = 1 << 20
    with paths.create_path_list_from_strings(["/Big"]) as pl, stage.query_from_path_list(pl) as q:
        payload = np.ones(16 * n, np.float32)  # 64 MiB, one array row
        tracemalloc.start()
        try:
            op = stage.write_attribute(q, "big", 1, [payload], is_array=True)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        op.wait()
        assert peak < payload.nbytes // 64, peak
        rows = 1 << 16
        dense = np.ones((rows, 64), np.float32)  # 16 MiB over 65536 prims
        with paths.create_path_list_from_strings([f"/P{i}" for i in range(rows)]) as pl2, \
                stage.query_from_path_list(pl2) as q2:
            tracemalloc.start()
            try:
                op = stage.write_attribute(q2, "v64", 1, dense, is_array=False)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            op.wait()
            assert peak < dense.nbytes // 64, peak


# ---- G: reads and groups


def test_g2_versioned_snapshots(world):
    stage, paths, pl, q = world
    for k in (1, 2, 3):
        stage.write_attribute(q, "s", k, np.full(3, 10 * k, np.int32), is_array=False).wait()
    seal(stage, 3)
    for k in (1, 2, 3):
        assert read_all(stage, paths, q, "s", ov.OrdinalRange.latest(k)) == {"/A": 10 * k, "/B": 10 * k,
                                                                             "/C": 10 * k}
    assert read_all(stage, paths, q, "s", ov.OrdinalRange.latest(ov.TIMEOUT_INFINITE))["/A"] == 30


def test_g3_change_ranges_and_tombstones(world):
    stage, paths, pl, q = world
    stage.write_attributes(q, [ov.WriteDesc("a", np.array([1, 2, 3], np.int32), is_array=False),
                               ov.WriteDesc("b", np.array([4, 5, 6], np.int32), is_array=False)], ordinal=1).wait()
    with paths.create_path_list_from_strings(["/B"]) as one, stage.query_from_path_list(one) as qb:
        stage.write_attribute(qb, "a", 2, np.array([20], np.int32), is_array=False).wait()
        with paths.create_path_list_from_strings(["/C"]) as c, stage.query_from_path_list(c) as qc:
            stage.delete_attributes(qc, [], 3).wait()
    seal(stage, 3)
    assert read_all(stage, paths, q, "a", ov.OrdinalRange.between(2, 2)) == {"/B": 20}
    assert read_all(stage, paths, q, "b", ov.OrdinalRange.between(2, 2)) == {}
    assert read_all(stage, paths, q, "a", ov.OrdinalRange.between(2, 3)) == {"/B": 20, "/C": "deleted"}
    assert read_all(stage, paths, q, "b", ov.OrdinalRange.between(3, 3)) == {"/C": "deleted"}
    with stage.read_attributes(q, [paths.intern_token("b")], ov.OrdinalRange.between(3, 3)) as r:
        with r.wait().fetch_next() as g:
            assert g.is_delete and g.tensor_count == 0 and g.prim_count == 1 and g.data_count == 0
            with pytest.raises(IndexError):
                g.array(0)


def test_g6_shapes_dtypes_and_views(world):
    stage, paths, pl, q = world
    stage.write_attribute(q, "m16", 1, np.zeros((3, 16)), is_array=False).wait()
    stage.write_attribute(q, "m4", 1, np.zeros((3, 2, 2), np.float32), is_array=False,
                          semantic=ov.AttributeSemantic.MATRIX).wait()
    stage.write_attribute(q, "fr", 1, np.zeros((3, 16)), is_array=False, semantic=ov.AttributeSemantic.FRAME).wait()
    stage.write_attribute(q, "h", 1, np.array([0.5, 1.5, 2.5], np.float16), is_array=False).wait()
    stage.write_attribute(q, "ar3", 1, [np.zeros((2, 3), np.float32), np.zeros((0, 3), np.float32),
                                        np.zeros((1, 3), np.float32)], is_array=True).wait()
    seal(stage, 1)
    shapes = {}
    for name in ("m16", "m4", "fr", "h"):
        with stage.read_attributes(q, [paths.intern_token(name)], ov.OrdinalRange.latest(1)) as r:
            with r.wait().fetch_next() as g:
                a = g.array(0)
                shapes[name] = a.shape
                assert a.__array_interface__["data"][0] == g.tensor(0).data
                assert np.shares_memory(a, g.array(0)) and not a.flags.writeable
                assert g.tensor(0).dtype.lanes == 1
                if name == "h":
                    assert a.dtype == np.float16 and a.tolist() == [0.5, 1.5, 2.5]
    assert shapes == {"m16": (3, 16), "m4": (3, 2, 2), "fr": (3, 16), "h": (3,)}
    with stage.read_attributes(q, [paths.intern_token("ar3")], ov.OrdinalRange.latest(1)) as r:
        with r.wait().fetch_next() as g:
            assert g.is_array and [g.array(i).shape for i in range(g.tensor_count)] == [(2, 3), (0, 3), (1, 3)]


def test_g7_dlpack_exports(world):
    stage, paths, pl, q = world
    stage.write_attribute(q, "d", 1, np.array([1, 2, 3], np.int64), is_array=False).wait()
    seal(stage, 1)
    with stage.read_attributes(q, [paths.intern_token("d")], ov.OrdinalRange.latest(1)) as r:
        with r.wait().fetch_next() as g:
            m = g.dlpack(0, readonly=False)  # ignored: read data is always exported read-only
            assert m.shape == (3,) and m.__dlpack_device__() == (1, 0)
            v = np.from_dlpack(m)
            assert not v.flags.writeable and v.tolist() == [1, 2, 3]
            with pytest.raises(TypeError):
                m.__dlpack__(dl_device="cpu")
    assert v.tolist() == [1, 2, 3]  # the export outlives the group
    with stage.map_attribute(q, "w", 2, dtype=ov.DLDataType(0, 64, 1)) as mp:
        mg = mp.wait().fetch_next()
        w = np.from_dlpack(mg.dlpack(0))
        assert w.flags.writeable
        w[:] = [7, 8, 9]
    seal(stage, 2)
    assert read_all(stage, paths, q, "w", ov.OrdinalRange.latest(2)) == {"/A": 7, "/B": 8, "/C": 9}


def test_g8_release_semantics(world):
    stage, paths, pl, q = world
    stage.write_attribute(q, "r", 1, np.array([1, 2, 3], np.int32), is_array=False).wait()
    seal(stage, 1)
    r = stage.read_attributes(q, [paths.intern_token("r")], ov.OrdinalRange.latest(1))
    g = r.wait().fetch_next()
    view = g.array(0)
    g.release()
    assert code_of(g.release) == E.INVALID_HANDLE
    for call in (lambda: g.tensor(0), lambda: g.data_row_index(0), lambda: g.dlpack(0)):
        assert code_of(call) == E.INVALID_HANDLE
    assert (g.prim_count, g.tensor_count, g.is_delete, g.ordinal) == (3, 1, False, 1)
    r.release().wait()
    assert code_of(r.release) == E.INVALID_HANDLE
    stage.write_attribute(q, "r", 2, np.array([9, 9, 9], np.int32), is_array=False).wait()
    seal(stage, 2)
    assert view.tolist() == [1, 2, 3]


# ---- H: maps


def test_h2_h3_h4_map_sessions(world):
    stage, paths, pl, q = world
    with stage.map_attribute(q, "rag", 1, dtype=ov.DLDataType(2, 32, 3), element_sizes=[0, 2, 0]) as m:
        g = m.wait().fetch_next()
        assert [g.array(i).shape for i in range(3)] == [(0, 3), (2, 3), (0, 3)]
        g.array(1)[:] = [[1, 2, 3], [4, 5, 6]]
    m2 = stage.map_attribute(q, "u", 1, dtype=ov.DLDataType(1, 8, 1))
    with m2:
        m2.wait().fetch_next().array(0)[:] = 5
        m2.unmap().wait()  # explicit unmap: the exit does nothing more
    assert code_of(m2.unmap) == E.INVALID_HANDLE
    assert code_of(m2.fetch_next) == E.INVALID_HANDLE
    with stage.map_attribute(q, "nodtype", 1) as bad:  # rejected: the exit does nothing
        assert bad.handle == 0
    assert code_of(bad.fetch_next) != 0
    conflict = stage.map_attribute(q, "u", 2, dtype=ov.DLDataType(2, 32, 1))
    # The reference rejects at enqueue (handle 0, INVALID_ARGUMENT); ours finds
    # the conflict when the session runs: a known divergence (issue 12).
    if conflict.handle == 0:
        assert code_of(conflict.wait) == E.INVALID_ARGUMENT
    else:
        assert code_of(conflict.wait) in (E.INVALID_ARGUMENT, E.OP_FAILED)
    with stage.map_attribute(q, "u", 2) as m3:  # existing schema adopted
        g3 = m3.wait().fetch_next()
        assert g3.array(0).dtype == np.uint8
        g3.array(0)[:] = 6
        m3.unmap_group(g3).wait()
        assert code_of(lambda: m3.unmap_group(g3)) == E.INVALID_HANDLE
        assert code_of(lambda: g3.array(0)) == E.INVALID_HANDLE
    seal(stage, 2)
    assert read_all(stage, paths, q, "rag", ov.OrdinalRange.latest(1)) == {"/A": [], "/B": [[1, 2, 3], [4, 5, 6]],
                                                                           "/C": []}
    assert read_all(stage, paths, q, "u", ov.OrdinalRange.latest(1)) == {"/A": 5, "/B": 5, "/C": 5}
    assert read_all(stage, paths, q, "u", ov.OrdinalRange.latest(2)) == {"/A": 6, "/B": 6, "/C": 6}


# ---- I: queries and floors


def hierarchy(stage, paths):
    prims = ["/W", "/W/R", "/W/R/L0", "/W/R/L1", "/W/Rx"]
    with paths.create_path_list_from_strings(prims) as pl, stage.query_from_path_list(pl) as q:
        t = paths.intern_token
        stage.write_attribute(q, "usd-prim-type", 1, np.array([t("Xform"), t("Xform"), t("Mesh"), t("Mesh"),
                                                               t("Scope")], np.uint64), is_array=False).wait()
        stage.write_attribute(q, "usd-schemas", 1, [np.array([], np.uint64)] * 2 + [np.array([t("Rigid")], np.uint64)]
                              + [np.array([t("Rigid"), t("Coll")], np.uint64), np.array([], np.uint64)],
                              is_array=True).wait()
        stage.write_attribute(q, "n", 1, np.arange(5, dtype=np.int32), is_array=False).wait()
    seal(stage, 1)


def matched(stage, paths, predicates, attrs=None):
    with stage.query(filter=ov.Filter(predicates), attrs=attrs) as fq:
        res = fq.wait().result()
        names = []
        with stage.read_attributes(res.all_handle, [paths.intern_token("n")], ov.OrdinalRange.latest(1)) as r:
            for g in r.wait().groups():
                with g:
                    names += [paths.get_path_strings(g.prim_list)[g.prim_index(i)] for i in range(g.prim_count)]
        assert res.total_prim_count == len(names) and res.all_handle == fq.handle
        return sorted(names), sorted(paths.token_to_string(a) for a in res.attributes)


def test_i1_i2_predicates_and_results(stage):
    paths = ov.PathDictionary(stage)
    hierarchy(stage, paths)
    P, F = ov.Predicate, ov.FilterOp
    assert matched(stage, paths, [P("usd-path", F.IN, ["/W/R", "/Nope"])])[0] == ["/W/R"]
    assert matched(stage, paths, [P("usd-path", F.PREFIX, ["/W/R/"])])[0] == ["/W/R/L0", "/W/R/L1"]
    assert matched(stage, paths, [P("usd-parent", F.IN, ["/W"])])[0] == ["/W/R", "/W/Rx"]
    assert matched(stage, paths, [P("usd-children", F.CONTAINS, ["/W/R/L1"])])[0] == ["/W/R"]
    assert matched(stage, paths, [P("usd-prim-type", F.IN, ["Mesh", "Scope"])])[0] == ["/W/R/L0", "/W/R/L1", "/W/Rx"]
    assert matched(stage, paths, [P("usd-schemas", F.CONTAINS, ["Coll"])])[0] == ["/W/R/L1"]
    assert matched(stage, paths, [P(paths.intern_token("n"), F.HAS)])[0] == ["/W", "/W/R", "/W/R/L0", "/W/R/L1",
                                                                           "/W/Rx"]
    # Attributes: recorded metadata only when requested (regression: ours listed it always).
    assert matched(stage, paths, [])[1] == ["n"]
    t = paths.intern_token
    assert matched(stage, paths, [], attrs=[t("usd-prim-type")])[1] == ["usd-prim-type"]
    assert matched(stage, paths, [P("usd-path", F.IN, ["/W"])], attrs=[t("n")])[1] == ["n"]
    bad = stage.query(filter=ov.Filter([P("usd-parent", F.GE, ["1"])]))
    assert bad.handle == 0 and bad.op.status == E.NOT_SUPPORTED
    assert code_of(bad.wait) == E.NOT_SUPPORTED
    assert code_of(bad.result) == E.INVALID_ARGUMENT
    with pytest.raises(ValueError):
        stage.query(filter=ov.Filter([P("n", 42, ["1"])]))


def test_i3_floors(world):
    stage, paths, pl, q = world
    a, b = paths.intern_token("fa"), paths.intern_token("fb")

    def floor(attr):
        with stage.get_attribute_write_floor(attr) as fq:
            return fq.fetch()

    stage.advance_write_floor(ordinal=3, scope=ov.Scope.INCLUDE, attributes=[a]).wait()
    assert (floor(None), floor(a), floor("fa"), floor(b), floor("never-seen")) == (0, 3, 3, 0, 0)
    stage.advance_write_floor(ordinal=5, scope=ov.Scope.EXCLUDE, attributes=[a]).wait()
    assert floor(b) == 5 and floor(a) == 3
    assert code_of(stage.write_attribute(q, a, 3, np.zeros(3), is_array=False).wait) == E.WRITE_FLOOR_VIOLATION
    stage.write_attribute(q, a, 4, np.zeros(3), is_array=False).wait()
    stage.advance_write_floor(ordinal=6).wait()
    stage.advance_write_floor(ordinal=2).wait()  # below the floor: a no-op
    assert (floor(None), floor(a), floor(b)) == (6, 6, 6)
    with pytest.raises(TypeError):
        stage.advance_write_floor(ordinal=7, scope=ov.Scope.INCLUDE, attributes=["fa"])
    with stage.get_oldest_preserved_ordinal() as oq:
        oldest = oq.fetch()
    assert 0 <= oldest <= 6


# ---- J: clone and hierarchy


def test_j1_j2_clone_and_hierarchy(stage):
    paths = ov.PathDictionary(stage)
    with paths.create_path_list_from_strings(["/S", "/S/K"]) as pl, stage.query_from_path_list(pl) as q:
        stage.write_attribute(q, "v", 1, np.array([1, 2], np.int32), is_array=False).wait()
    # Zero targets: as on the reference, nothing cloned, the source still counted.
    assert stage.clone("/S", [], ordinal=2) == ov.CloneResult(prims_cloned=0, target_count=0, source_prim_count=2,
                                                               ordinal=2)
    assert code_of(lambda: stage.clone("/Missing", ["/T"], ordinal=2)) == E.OP_FAILED
    op = stage.clone_async("/S", ["/T"], ordinal=3)
    report = stage.fetch_clone_result(op.op_id)
    assert (report.prims_cloned, report.target_count, report.source_prim_count) == (2, 1, 2)
    assert op.wait() is op and op.result() == report
    assert code_of(lambda: stage.fetch_clone_result(op.op_id)) == E.INVALID_HANDLE
    failed = stage.clone_async("/S", ["/T"], ordinal=4)
    assert code_of(failed.wait) == E.OP_FAILED
    assert code_of(failed.result) == E.OP_FAILED
    with paths.create_path_list_from_strings(["/T/K", "/T", "/Gone"]) as hl:
        h = stage.get_hierarchy_async(hl, 4, ov.HierarchyRelation.SIBLINGS)
        with h:
            res = h.wait().result()
            assert res == h.result()
        assert [i.status for i in res.items] == [0, 0, 3]
        parents = stage.get_hierarchy(hl, 4, ov.HierarchyRelation.PARENT)
        assert parents.items[0].paths == ("/T",) and parents.ordinal == 4
        assert code_of(lambda: stage.get_hierarchy(hl, 4, 3)) == E.INVALID_ARGUMENT
    assert code_of(lambda: stage.compute_hierarchy_async(1, 5, 99).wait()) == E.INVALID_ARGUMENT


# ---- L: threads


def test_l1_blocked_wait_of_a_read_does_not_hold_the_gil(world):
    stage, paths, pl, q = world
    op, latch = stage._pending_write(q, "lp", 1, np.zeros(3, np.float32))
    stage.advance_write_floor(ordinal=1)
    read = stage.read_attributes(q, [paths.intern_token("lp")], ov.OrdinalRange.latest(1))
    got = []
    t = threading.Thread(target=lambda: got.append(read.wait().fetch_next()))
    t.start()
    counted = sum(1 for _ in range(1000))
    assert counted == 1000 and not got
    latch.open()
    t.join(timeout=10)
    op.wait()
    assert got and got[0].array(0).tolist() == [0, 0, 0]
    got[0].release()
    read.release().wait()


def test_l3_concurrent_release_of_a_group(world):
    stage, paths, pl, q = world
    stage.write_attribute(q, "c", 1, np.zeros(3, np.float32), is_array=False).wait()
    seal(stage, 1)
    for _ in range(20):
        with stage.read_attributes(q, [paths.intern_token("c")], ov.OrdinalRange.latest(1)) as r:
            g = r.wait().fetch_next()
            results = []
            barrier = threading.Barrier(2)

            def go():
                barrier.wait()
                try:
                    stage.release_group(g)
                    results.append("ok")
                except ov.OvstageError as e:
                    results.append(e.code)

            ts = [threading.Thread(target=go) for _ in range(2)]
            [t.start() for t in ts]
            [t.join() for t in ts]
            assert sorted(results, key=str) == sorted(["ok", E.INVALID_HANDLE], key=str)


# ---- regressions


def test_relative_paths_are_rejected_in_path_lists(stage):
    paths = ov.PathDictionary(stage)
    for bad in (["W/A"], ["/A", "B"]):
        with pytest.raises(ov.OvxError):
            paths.create_path_list_from_strings(bad)
