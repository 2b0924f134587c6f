"""The `placement=` argument (the experimental placement extension).

Without a driver (this interpreter, unless the machine has a GPU): a host
placement behaves like none; a CUDA placement, or an availability event, is
rejected at submission with INVALID_ARGUMENT. With the fake driver (child interpreters, as in
test_cuda.py): a read placed on CUDA device 0 hands out groups in device
memory (exported as kDLCUDA, equal to the host read) and records the
availability event once; a write's event is recorded once it is accepted; a
map session there hands out device copies, and each commit waits for its
cuda_stream/cuda_event, copies the values back and records the event;
arrays are never mapped on a device (NOT_SUPPORTED).
"""
import pytest

import numpy as np
import ovstage as ov

from test_cuda import fake_driver, run_child  # noqa: F401 (a fixture)

_NO_DRIVER = None


def no_driver():
    """Whether this interpreter's process has no CUDA device (asked once)."""
    global _NO_DRIVER
    if _NO_DRIVER is None:
        s = ov.Stage("probe")
        pl = ov.PathDictionary(s).create_path_list_from_strings(["/A"])
        q = s.query_from_path_list(pl)
        op = s.write_attribute(q, "x", 1, np.zeros(1, np.float32), is_array=False,
                               placement=ov.Placement(device_type=2))
        _NO_DRIVER = op.op_id == 0
        if not _NO_DRIVER:
            op.wait()
    return _NO_DRIVER


@pytest.fixture
def staged():
    stage = ov.Stage("placement")
    paths = ov.PathDictionary(stage)
    pl = paths.create_path_list_from_strings(["/A", "/B"])
    q = stage.query_from_path_list(pl)
    return stage, paths, q


def read_values(stage, paths, q, attr, placement):
    tok = paths.intern_token(attr)
    with stage.read_attributes(q, [tok], ov.OrdinalRange.latest(1), placement=placement) as r:
        for g in r.wait().groups():
            with g:
                return np.array(g.array(0)).tolist()


def test_a_host_placement_is_no_placement(staged):
    stage, paths, q = staged
    for name, p in [("none", None), ("unspecified", ov.Placement()), ("host", ov.Placement(device_type=1))]:
        stage.write_attribute(q, name, 1, np.array([1.0, 2.0], np.float32), is_array=False, placement=p).wait()
    stage.advance_write_floor(1).wait()
    for name, p in [("none", None), ("unspecified", ov.Placement()), ("host", ov.Placement(device_type=1))]:
        assert read_values(stage, paths, q, name, p) == [1.0, 2.0]


def test_a_placement_must_be_a_placement(staged):
    stage, paths, q = staged
    with pytest.raises(TypeError, match="placement must be a Placement or None, got tuple"):
        stage.read_attributes(q, [], ov.OrdinalRange.latest(1), placement=(2, 0))


def test_without_a_driver_cuda_placements_are_rejected_at_submission(staged):
    if not no_driver():
        pytest.skip("this machine has a CUDA device")
    stage, paths, q = staged
    cuda = ov.Placement(device_type=2, device_id=0)
    op = stage.write_attribute(q, "x", 1, np.zeros(2, np.float32), is_array=False, placement=cuda)
    assert op.op_id == 0
    with pytest.raises(ov.OvstageError) as e:
        op.wait()
    assert e.value.code == 1 and "placement names CUDA device 0, but this machine has no usable CUDA driver" in str(e.value)
    r = stage.read_attributes(q, [paths.intern_token("x")], ov.OrdinalRange.latest(1), placement=cuda)
    assert r.handle == 0
    m = stage.map_attribute(q, "x", 1, placement=ov.Placement(device_type=1, availability_event=0xE1))
    assert m.handle == 0
    with pytest.raises(ov.OvstageError) as e:
        m.wait()
    assert e.value.code == 1 and "placement has an availability_event, but" in str(e.value)



def test_a_read_placed_on_the_device_hands_out_device_memory(fake_driver):  # noqa: F811
    run_child(fake_driver, '''
        # No kept copies: the group's copy is freed once nothing points at it.
        import os
        os.environ["OVSTAGE_DEVICE_CACHE_MB"] = "0"
        stage.write_attribute(q, "x", 1, np.array([1.5, 2.5, 3.5], np.float32), is_array=False).wait()
        stage.advance_write_floor(1).wait()
        tok = paths.intern_token("x")
        on_device = ov.Placement(device_type=2, device_id=0, stream=0x5200, availability_event=0xE200)
        before = len(log())
        with stage.read_attributes(q, [tok], ov.OrdinalRange.latest(1), placement=on_device) as r:
            groups = list(r.wait().groups())
            assert len(groups) == 1
            g = groups[0]
            assert g.__dlpack_device__() == (2, 0)
            try:
                g.array(0)
                raise AssertionError("array() of device memory")
            except NotImplementedError as e:
                assert "use dlpack()" in str(e)
            t = g.tensor(0)
            # The fake driver's device memory is host memory: read it back.
            values = (ctypes.c_float * 3).from_address(t.data)
            assert list(values) == [1.5, 2.5, 3.5]
            capsule = g.__dlpack__(max_version=(1, 0))
            assert capsule is not None
            g.release()
            # The descriptor and the capsule keep the device copy alive.
            assert "free;" not in log()[before:]
            del t, values, capsule, g, groups
            import gc
            gc.collect()
        got = log()[before:]
        # The device's context for the copies, and the thread's own put back.
        assert got.count("current aa;") == got.count("current c0;") > 0 and got.endswith("current aa;"), got
        assert "alloc 256;upload 12 on 5200;" in got and got.index("upload") < got.index("record"), got
        assert got.count("alloc") == 1 and got.count("upload 12 on 5200;") == 1, got
        assert got.count("record e200 on 5200;") == 1 and "sync" not in got, got
        assert got.count("free;") == 1, got
    ''')


def test_a_second_placed_read_of_the_same_version_copies_nothing(fake_driver):  # noqa: F811
    run_child(fake_driver, '''
        stage.write_attribute(q, "x", 1, np.array([1.5, 2.5, 3.5], np.float32), is_array=False).wait()
        stage.advance_write_floor(1).wait()
        tok = paths.intern_token("x")
        on_device = ov.Placement(device_type=2, device_id=0, stream=0x5200)

        def read_on_device(end):
            with stage.read_attributes(q, [tok], ov.OrdinalRange.latest(end), placement=on_device) as r:
                for g in r.wait().groups():
                    with g:
                        t = g.tensor(0)
                        return list((ctypes.c_float * 3).from_address(t.data))

        before = len(log())
        assert read_on_device(1) == [1.5, 2.5, 3.5]
        first = log()[before:]
        assert first.count("upload 12 on 5200;") == 1 and "sync 5200;" in first, first
        before = len(log())
        assert read_on_device(1) == [1.5, 2.5, 3.5]
        second = log()[before:]
        assert "upload" not in second and "alloc" not in second and "event sync e100;" in second, second
        # A new version is copied again.
        stage.write_attribute(q, "x", 2, np.array([4.0, 5.0, 6.0], np.float32), is_array=False).wait()
        stage.advance_write_floor(2).wait()
        before = len(log())
        assert read_on_device(2) == [4.0, 5.0, 6.0]
        assert log()[before:].count("upload 12 on 5200;") == 1, log()[before:]
    ''')


def test_a_write_records_its_event_once_it_is_accepted(fake_driver):  # noqa: F811
    run_child(fake_driver, '''
        before = len(log())
        p = ov.Placement(device_type=2, device_id=0, stream=0x5300, availability_event=0xE300)
        stage.write_attribute(q, "y", 1, np.array([4.0, 5.0, 6.0], np.float32), is_array=False, placement=p).wait()
        assert log()[before:].count("record e300 on 5300;") == 1, log()[before:]
        assert latest("y", 1) == [4.0, 5.0, 6.0]
        refused = ov.Placement(device_type=2, stream=0x5300, availability_event=0xBAD)
        op = stage.write_attribute(q, "y", 2, np.array([7.0, 8.0, 9.0], np.float32), is_array=False,
                                   placement=refused)
        try:
            op.wait()
            raise AssertionError("a refused record is an error")
        except ov.OvstageError as e:
            assert e.code == 12 and "availability_event 0xbad" in str(e), str(e)
        # The write itself ran.
        assert latest("y", 2) == [7.0, 8.0, 9.0]
    ''')


def test_a_map_session_on_the_device_commits_what_the_client_wrote_there(fake_driver):  # noqa: F811
    run_child(fake_driver, '''
        f32 = ov.DLDataType(code=2, bits=32, lanes=1)
        p = ov.Placement(device_type=2, device_id=0, stream=0x5200, availability_event=0xE200)
        with stage.map_attribute(q, "m", 1, dtype=f32, placement=p) as m:
            before = len(log())
            g = m.wait().fetch_next()
            got = log()[before:]
            assert "upload 12 on 5200;" in got and got.index("upload") < got.index("sync 5200;"), got
            assert g.__dlpack_device__() == (2, 0)
            try:
                g.array(0)
                raise AssertionError("array() of device memory")
            except NotImplementedError:
                pass
            # The client's kernel writes the device copy (host memory here).
            values = (ctypes.c_float * 3).from_address(g.tensor(0).data)
            values[:] = [7.0, 8.0, 9.0]
            before = len(log())
            m.unmap_group(g, cuda_stream=0x5400, cuda_event=0x5500).wait()
            got = log()[before:]
            assert got.index("sync 5400;") < got.index("download 12;"), got
            assert got.index("event sync 5500;") < got.index("download 12;") < got.index("record e200 on 5200;"), got
            assert got.count("record e200") == 1, got
            before = len(log())
            m.unmap().wait()
            assert log()[before:].count("record e200 on 5200;") == 1, log()[before:]
        assert latest("m", 1) == [7.0, 8.0, 9.0]
        # Arrays are never mapped on a device.
        bad = stage.map_attribute(q, "rag", 2, dtype=f32, element_sizes=[1, 2, 0], placement=p)
        assert bad.handle == 0
        try:
            bad.wait()
            raise AssertionError("an array session on a device")
        except ov.OvstageError as e:
            assert e.code == 6 and "array attributes cannot be mapped on a CUDA device" in str(e), str(e)
    ''')


def test_the_gpu_consumer_example_reads_on_the_device(fake_driver):  # noqa: F811
    import os
    import pathlib
    import subprocess
    import sys
    example = pathlib.Path(__file__).resolve().parents[3] / "examples" / "python" / "gpu-consumer" / "main.py"
    env = dict(os.environ, OVSTAGE_LIBCUDA=str(fake_driver))
    run = subprocess.run([sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "4 rows on CUDA device 0\n", run.stdout


def test_a_write_naming_no_device_records_on_its_cuda_sources_device(fake_driver):  # noqa: F811
    run_child(fake_driver, '''
        src = np.array([1.0, 2.0, 3.0], np.float32)
        before = len(log())
        stage.write_attribute(q, "s", 1, CudaProducer(src), is_array=False,
                              placement=ov.Placement(availability_event=0xE400)).wait()
        got = log()[before:]
        # The source's device (0), its default stream, after the copy out of it.
        assert got.count("record e400 on 0;") == 1 and got.index("copy 12") < got.index("record e400"), got
        assert latest("s", 1) == [1.0, 2.0, 3.0]
    ''')


def test_the_gpu_hierarchy_models_run_where_there_is_a_device(fake_driver):  # noqa: F811
    run_child(fake_driver, '''
        M = ov.HierarchyComputationModel
        for out, model in ((5, M.GPU_INCREMENTAL), (6, M.GPU_GLOBAL), (7, M.DEFAULT_GPU)):
            stage.compute_hierarchy(1, out, model=model)
    ''')


def test_without_a_device_the_gpu_hierarchy_models_fail_when_they_run(staged):
    if not no_driver():
        pytest.skip("this machine has a CUDA device")
    stage, _, _ = staged
    op = stage.compute_hierarchy_async(1, 2, model=ov.HierarchyComputationModel.GPU_GLOBAL)
    assert op.op_id != 0
    with pytest.raises(ov.OvstageError) as e:
        op.wait()
    assert "the GPU hierarchy computation models need a CUDA device" in str(e.value), str(e.value)
