"""Script 2 (spec 17.2): write flavours.

A batched write_attributes with a scalar and a float3 column (make_dltensor with
lanes=3, COLOR semantic), a clone of a prototype and a new query over the clones,
and four writes submitted without waiting, drained with the non-blocking
wait_op/release_op poll loop.
"""
import numpy as np

import ovstage as ov

F3 = ov.DLDataType(code=ov.DLDataTypeCode.kDLFloat, bits=32, lanes=3)


def values_by_path(stage, paths, query, name, ordinal):
    token = paths.intern_token(name)
    out = {}
    with stage.read_attributes(query, [token], ov.OrdinalRange.latest(ordinal)) as read:
        for group in read.wait().groups():
            with group:
                names = paths.get_path_strings(group.prim_list)
                data = group.array(0)
                for i in range(group.prim_count):
                    row = group.data_row_index(i) if group.has_data_index_map else i
                    out[names[group.prim_index(i)]] = np.round(data[row], 3).tolist()
                sem = int(group.semantic)
    return sem, dict(sorted(out.items()))


with ov.Stage("write-flavors") as stage, ov.PathDictionary(stage) as paths:
    protos = ["/Proto", "/Proto/Body", "/Proto/Wheel"]
    with paths.create_path_list_from_strings(protos) as plist, stage.query_from_path_list(plist) as query:
        n = len(protos)
        colors = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32).reshape(-1)
        op = stage.write_attributes(query, [
            ov.WriteDesc("mass", np.array([10.0, 4.0, 1.5], np.float32), is_array=False),
            ov.WriteDesc("color", ov.make_dltensor(colors, dtype=F3, shape=[n]), is_array=False,
                         semantic=ov.AttributeSemantic.COLOR),
        ], ordinal=1)
        print("batch ok:", op.ok)
        op.wait()
        stage.advance_write_floor(ordinal=1).wait()
        for name in ("mass", "color"):
            sem, vals = values_by_path(stage, paths, query, name, 1)
            print(name, "semantic", sem, vals)

    result = stage.clone("/Proto", ["/Car0", "/Car1"], ordinal=2)
    print("cloned prims:", result.prims_cloned, "targets:", result.target_count)
    stage.advance_write_floor(ordinal=2).wait()

    clones = [f"/Car{i}{suffix}" for i in range(2) for suffix in ("", "/Body", "/Wheel")]
    with paths.create_path_list_from_strings(clones) as clist, stage.query_from_path_list(clist) as cq:
        ops = []
        for k, ordinal in enumerate(range(4, 8)):
            speed = np.arange(len(clones), dtype=np.float32) + 100 * k
            ops.append(stage.write_attribute(cq, "speed", ordinal, speed, is_array=False))
        for op in ops:
            if not op.ok:
                raise ov.OvstageError(op.status, op.error_message())
            while True:
                code, failed, lowest = stage.wait_op(op.op_id, timeout=0)
                if code != ov.ErrorCode.TIMEOUT:
                    break
            message = op.error_message() if code != ov.ErrorCode.OK else ""
            print("op drained with code", int(code), "released:", stage.release_op(op.op_id), message)
        stage.advance_write_floor(ordinal=7).wait()
        sem, speeds = values_by_path(stage, paths, cq, "speed", 7)
        for path, value in speeds.items():
            print("speed", path, value)
        sem, masses = values_by_path(stage, paths, cq, "mass", 7)
        print("cloned mass:", masses)
