"""GPU consumer: read a column onto CUDA device 0 with a placement, and fall back to the host.

A producer writes positions and seals them; a consumer asks for them on the device
(`placement=`) and gets groups whose tensors are CUDA memory, exported through DLPack to
torch, CuPy or Warp without a copy (a later placed read of the same version copies
nothing either). On a machine without a CUDA device the placed read is rejected at
submission (INVALID_ARGUMENT, as the published library answers) and the consumer reads
on the host instead.
"""

import numpy as np

import ovstage as ov

with ov.Stage("gpu-consumer") as stage, ov.PathDictionary(stage) as paths:
    with paths.create_path_list_from_strings([f"/World/Env{i}" for i in range(4)]) as prims, \
            stage.query_from_path_list(prims) as query:
        pos = paths.intern_token("pos")
        stage.write_attribute(query, pos, 1, np.arange(12, dtype=np.float32).reshape(4, 3), is_array=False).wait()
        stage.advance_write_floor(ordinal=1).wait()

        # [snippet:placed-read]
        on_gpu = ov.Placement(device_type=ov.DLDeviceType.kDLCUDA, device_id=0)
        read = stage.read_attributes(query, [pos], ov.OrdinalRange.latest(1), placement=on_gpu)
        if read.handle == 0:
            # Rejected at submission: no CUDA device here (or no driver).
            print("no CUDA device:", read.op.error_message().split(": ", 1)[-1])
            read = stage.read_attributes(query, [pos], ov.OrdinalRange.latest(1))
        with read:
            for group in read.wait().groups():
                with group:
                    device = group.__dlpack_device__()  # (2, 0): CUDA device 0; (1, 0): the host
                    if device[0] == ov.DLDeviceType.kDLCUDA:
                        # Zero-copy into any DLPack consumer on the device, e.g.
                        # torch.from_dlpack(group.dlpack(0)) or cupy.from_dlpack(...).
                        print(f"{group.prim_count} rows on CUDA device {device[1]}")
                    else:
                        print(f"{group.prim_count} rows on the host:", group.array(0)[:, 0].tolist())
        # [/snippet:placed-read]
