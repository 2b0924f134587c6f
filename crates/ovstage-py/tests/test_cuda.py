"""CUDA payloads through the Python binding, without a GPU.

Each case runs in a child interpreter whose OVSTAGE_LIBCUDA names a fake
driver (xtask/ctests/fake_cuda_host.c, built here with the C compiler): its
"device memory" is host memory, and it logs the calls that order and copy
(record, wait, copy, sync) in the environment variable OVSTAGE_FAKE_CUDA_LOG.
A child, because a process opens the driver once: this one keeps whatever
the machine has.
"""
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
FAKE_SOURCE = ROOT / "xtask" / "ctests" / "fake_cuda_host.c"

# What the child has before each case's own code: a stage, a three-prim query,
# the fake driver's log (read through libc: os.environ is a copy taken at
# start-up) and a reader of the latest values.
PRELUDE = textwrap.dedent('''
    import ctypes
    import numpy as np
    import ovstage as ov

    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_char_p

    def log():
        return (libc.getenv(b"OVSTAGE_FAKE_CUDA_LOG") or b"").decode()

    stage = ov.Stage("cuda")
    paths = ov.PathDictionary(stage)
    pl = paths.create_path_list_from_strings(["/A", "/B", "/C"])
    q = stage.query_from_path_list(pl)

    def latest(attr, ordinal):
        stage.advance_write_floor(ordinal).wait()
        tok = paths.intern_token(attr)
        with stage.read_attributes(q, [tok], ov.OrdinalRange.latest(ordinal)) as r:
            for g in r.wait().groups():
                with g:
                    return np.array(g.array(0)).tolist()

    class CudaProducer:
        """A DLPack producer of kDLCUDA tensors (over host memory, as the fake
        driver's device memory is): it records the stream it is asked for."""

        def __init__(self, array):
            self.array, self.streams = array, []

        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
            self.streams.append(stream)
            capsule = self.array.__dlpack__()
            get = ctypes.pythonapi.PyCapsule_GetPointer
            get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
            # DLManagedTensor starts with its DLTensor: data, then the device.
            ctypes.c_int32.from_address(get(capsule, b"dltensor") + 8).value = 2
            return capsule
''')


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the fake CUDA driver")
    out = tmp_path_factory.mktemp("fake_cuda") / "libfake_cuda_host.so.1"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(out), str(FAKE_SOURCE)], check=True)
    return out


def run_child(driver, body):
    """Runs PRELUDE + body in a new interpreter with OVSTAGE_LIBCUDA=driver;
    returns its stdout (the test's asserts run in the child)."""
    env = dict(os.environ, OVSTAGE_LIBCUDA=str(driver))
    env.pop("OVSTAGE_FAKE_CUDA_LOG", None)
    run = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_cuda_descriptor_waits_for_the_stream_and_event_it_is_given(fake_driver):
    run_child(fake_driver, '''
        src = np.array([1.5, 2.5, 3.5], np.float32)
        t = ov.make_dltensor(src, device_type=ov.DLDeviceType.kDLCUDA)
        # The first CUDA tensor opens the driver and makes the device's
        # context current once; the sequence below is each write's.
        stage.write_attribute(q, "first", 1, t, is_array=False).wait()
        assert "on 1234" not in log() and "wait" not in log()
        before = len(log())
        op = stage.write_attribute(q, "synced", 1, t, is_array=False, cuda_stream=0x1234, cuda_event=0x5678)
        # As for a C client: an event recorded on the caller's stream and
        # waited on by ours, then the caller's event, the copy and an event
        # that completes it, with the device's context current and the
        # caller's put back; the enqueue synchronises nothing.
        queued = ("current c0;record e100 on 1234;wait 5100 e100;wait 5100 5678;"
                  "copy 12 on 5100;record e100 on 5100;current aa;")
        # (A lane may already be running the op: its calls follow.)
        assert log()[before:].startswith(queued), log()[before:]
        op.wait()
        # The op waits for the copy when it runs.
        ran = "current c0;event sync e100;destroy e100;current aa;"
        assert log()[before:] == queued + ran, log()[before:]
        src[:] = 0  # the write holds its own copy
        assert latest("synced", 1) == [1.5, 2.5, 3.5]
    ''')


def test_cuda_descriptor_without_sync_is_copied_unordered_and_strided_rows_are_gathered(fake_driver):
    run_child(fake_driver, '''
        before = len(log())
        src = np.array([7, 8, 9], np.int32)
        stage.write_attribute(q, "plain", 1, ov.make_dltensor(src, device_type=ov.DLDeviceType.kDLCUDA),
                              is_array=False).wait()
        assert "copy 12 on 5100;" in log()[before:] and "on 1234" not in log()[before:], log()[before:]
        # Every other element of six: strides [2] over the device buffer.
        six = np.arange(6, dtype=np.float32) * 10
        t = ov.make_dltensor(six, device_type=ov.DLDeviceType.kDLCUDA, shape=[3], strides=[2])
        stage.write_attribute(q, "strided", 1, t, is_array=False).wait()
        # A record that describes more than its buffer holds is refused
        # before the device is read.
        short = ov.make_dltensor(np.zeros(2, np.float32), device_type=ov.DLDeviceType.kDLCUDA, shape=[3])
        before = len(log())
        try:
            stage.write_attribute(q, "short", 1, short, is_array=False).wait()
            raise AssertionError("accepted")
        except ov.OvstageError as e:
            assert e.code == ov.ErrorCode.INVALID_ARGUMENT and "describes 12 bytes" in str(e), e
        assert "copy" not in log()[before:]
        assert latest("plain", 1) == [7, 8, 9]
        assert latest("strided", 1) == [0.0, 20.0, 40.0]
    ''')


def test_dlpack_producer_is_asked_for_the_callers_stream(fake_driver):
    out = run_child(fake_driver, '''
        p = CudaProducer(np.array([4.0, 5.0, 6.0], np.float64))
        before = len(log())
        stage.write_attribute(q, "produced", 1, p, is_array=False, cuda_stream=0x1234).wait()
        assert "record e100 on 1234;" in log()[before:] and "wait 5100 e100;" in log()[before:], log()[before:]
        # Without a stream the producer is asked for none, and the copy
        # follows the legacy default stream, where DLPack then puts its work.
        before = len(log())
        stage.write_attribute(q, "produced", 2, p, is_array=False).wait()
        assert "record e100 on 1;" in log()[before:], log()[before:]
        print(p.streams)
        assert latest("produced", 2) == [4.0, 5.0, 6.0]
    ''')
    assert out.strip() == str([0x1234, None])


def test_cuda_sync_on_host_payloads_is_not_supported(fake_driver):
    out = run_child(fake_driver, '''
        for payload in (np.zeros(3, np.float32), ov.make_dltensor(np.zeros(3, np.float32)), [np.zeros(3, np.float32)]):
            for sync in ({"cuda_stream": 0x1234}, {"cuda_event": 0x5678}):
                # Refused at enqueue: the op has no handle, and its wait raises.
                op = stage.write_attribute(q, "host", 1, payload, is_array=isinstance(payload, list), **sync)
                assert op.op_id == 0 and not op.ok and op.status == ov.ErrorCode.NOT_SUPPORTED
                try:
                    op.wait()
                except ov.OvstageError as e:
                    assert e.code == ov.ErrorCode.NOT_SUPPORTED, e
                    assert "cuda_sync is only honoured for CUDA tensors" in str(e), e
                    print("refused")
        # 0 is no sync: accepted.
        stage.write_attribute(q, "host", 1, np.zeros(3, np.float32), is_array=False, cuda_stream=0).wait()
    ''')
    assert out.split() == ["refused"] * 6


def test_cuda_descriptor_without_a_driver_names_the_device(tmp_path):
    out = run_child(tmp_path / "no-such-libcuda.so.1", '''
        t = ov.make_dltensor(np.zeros(3, np.float32), device_type=ov.DLDeviceType.kDLCUDA)
        try:
            stage.write_attribute(q, "x", 1, t, is_array=False).wait()
        except ov.OvstageError as e:
            assert e.code == ov.ErrorCode.INVALID_ARGUMENT, e
            print(e)
    ''')
    assert "CUDA device 0" in out and "no usable CUDA driver" in out, out


def test_descriptor_devices_are_judged_as_in_c(fake_driver, tmp_path):
    # Managed memory is read in place on the host once the driver is there...
    run_child(fake_driver, '''
        t = ov.make_dltensor(np.array([1, 2, 3], np.int32), device_type=ov.DLDeviceType.kDLCUDAManaged)
        stage.write_attribute(q, "managed", 1, t, is_array=False).wait()
        assert "copy" not in log(), log()
        assert latest("managed", 1) == [1, 2, 3]
    ''')
    # ...is INVALID_ARGUMENT without one, and a device type that is neither
    # host nor CUDA memory is NOT_SUPPORTED: the C library's answers.
    out = run_child(tmp_path / "no-such-libcuda.so.1", '''
        for device_type in (ov.DLDeviceType.kDLCUDAManaged, ov.DLDeviceType.kDLOpenCL):
            t = ov.make_dltensor(np.zeros(3, np.float32), device_type=device_type)
            try:
                stage.write_attribute(q, "x", 1, t, is_array=False).wait()
            except ov.OvstageError as e:
                print(ov.ErrorCode(e.code).name, "|", e)
    ''')
    managed, opencl = out.strip().splitlines()
    assert managed.startswith("INVALID_ARGUMENT |") and "no usable CUDA driver" in managed, managed
    assert opencl.startswith("NOT_SUPPORTED |") and "device type 4 is not supported" in opencl, opencl


def test_a_list_of_cuda_rows_is_staged_as_one_batch(fake_driver):
    run_child(fake_driver, '''
        pl = paths.create_path_list_from_strings([f"/R{i}" for i in range(12)])
        q12 = stage.query_from_path_list(pl)
        rows = [CudaProducer(np.arange(i + 1, dtype=np.float32)) for i in range(12)]
        before = len(log())
        stage.write_attribute(q12, "rows", 1, rows, is_array=True, cuda_stream=0x1234).wait()
        got = log()[before:]
        # One capture and one synchronisation (on the completing event, when
        # the op runs) for the twelve copies.
        assert got.count("on 1234") == 1 and got.count("copy ") == 12, got
        assert got.count("sync ") == 1 and got.count("event sync ") == 1, got
        assert all(r.streams == [0x1234] for r in rows)
        stage.advance_write_floor(1).wait()
        tok = paths.intern_token("rows")
        with stage.read_attributes(q12, [tok], ov.OrdinalRange.latest(1)) as r:
            for g in r.wait().groups():
                with g:
                    got = {g.prim_index(i): np.array(g.array(i)).tolist() for i in range(g.tensor_count)}
        assert got == {i: list(range(i + 1)) for i in range(12)}, got
    ''')
