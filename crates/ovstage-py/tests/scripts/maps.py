"""Script 6 (spec 17.2): mapped writes.

A fixed-size float3 map filled through array(0) and, for a second session, through
np.from_dlpack(group.dlpack(0)), committed group by group; a ragged int32 map with
element_sizes=[2, 0, 3]; a map left by an exception inside its with block (its
buffers are committed anyway); then everything is read back.
"""
import numpy as np

import ovstage as ov

PRIMS = ["/Cloth/p0", "/Cloth/p1", "/Cloth/p2"]
F3 = ov.DLDataType(code=ov.DLDataTypeCode.kDLFloat, bits=32, lanes=3)
I32 = ov.DLDataType(code=ov.DLDataTypeCode.kDLInt, bits=32, lanes=1)
F64 = ov.DLDataType(code=ov.DLDataTypeCode.kDLFloat, bits=64, lanes=1)


def by_path(stage, paths, query, name, ordinal):
    out = {}
    with stage.read_attributes(query, [paths.intern_token(name)], ov.OrdinalRange.latest(ordinal)) as read:
        for group in read.wait().groups():
            with group:
                names = paths.get_path_strings(group.prim_list)
                for i in range(group.prim_count):
                    if group.is_array:
                        value = group.array(i).tolist()
                    else:
                        row = group.data_row_index(i) if group.has_data_index_map else i
                        value = group.array(0)[row].tolist()
                    out[names[group.prim_index(i)]] = value
    return dict(sorted(out.items()))


with ov.Stage("maps") as stage, ov.PathDictionary(stage) as paths:
    with paths.create_path_list_from_strings(PRIMS) as plist, stage.query_from_path_list(plist) as query:
        with stage.map_attribute(query, "position", 1, dtype=F3, semantic=ov.AttributeSemantic.POINT) as m:
            m.wait()
            for group in m.groups():
                view = group.array(0)
                print("fixed map group:", group.prim_count, "prims, view shape", view.shape, view.dtype)
                view[:] = np.arange(view.size, dtype=np.float32).reshape(view.shape)
                m.unmap_group(group).wait()

        with stage.map_attribute(query, "velocity", 1, dtype=F3) as m:
            for group in m.wait().groups():
                buf = np.from_dlpack(group.dlpack(0))
                buf[...] = -1.0
                buf[..., 1] = np.arange(group.prim_count)
                m.unmap_group(group).wait()

        with stage.map_attribute(query, "neighbors", 1, dtype=I32, element_sizes=[2, 0, 3]) as m:
            for group in m.wait().groups():
                names = paths.get_path_strings(group.prim_list)
                for i in range(group.prim_count):
                    row = group.array(i)
                    row[:] = np.arange(len(row)) + 10 * int(names[group.prim_index(i)][-1])
                print("ragged map group tensors:", group.tensor_count)

        try:
            with stage.map_attribute(query, "temperature", 1, dtype=F64) as m:
                group = m.wait().fetch_next()
                group.array(0)[:] = 293.5
                raise RuntimeError("simulation step failed")
        except RuntimeError as e:
            print("left the map by:", e)

        stage.advance_write_floor(ordinal=1).wait()
        for name in ("position", "velocity", "neighbors", "temperature"):
            print(name, by_path(stage, paths, query, name, 1))
print("done")
