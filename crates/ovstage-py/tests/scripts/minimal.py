"""Script 1 (spec 17.2): the minimal pattern.

Stage and PathDictionary as context managers, a three-prim query, write, seal,
read with latest(N), a write naming the attribute by string, a clone, and a
DLPack round trip in both directions.
"""
import numpy as np

import ovstage as ov


def read_column(stage, paths, query, token, ordinal):
    """{path: value} of a snapshot read, resolving rows through the index map."""
    out = {}
    read = stage.read_attributes(query, [token], ov.OrdinalRange.latest(ordinal))
    with read:
        read.wait()
        while True:
            group = read.fetch_next()
            if group is None:
                break
            try:
                names = paths.get_path_strings(group.prim_list)
                values = np.from_dlpack(group.dlpack(0))
                for i in range(group.prim_count):
                    row = group.data_row_index(i) if group.has_data_index_map else i
                    out[names[group.prim_index(i)]] = values[row].tolist()
            finally:
                stage.release_group(group)
    return dict(sorted(out.items()))


with ov.Stage("minimal") as stage, ov.PathDictionary(stage) as paths:
    mass = paths.intern_token("mass")
    print("token round trip:", paths.token_to_string(mass))
    prims = paths.create_path_list_from_strings(["/World/A", "/World/B", "/World/C"])
    try:
        with stage.query_from_path_list(prims) as query:
            stage.write_attribute(query, mass, 1, np.array([1.0, 2.0, 3.0], np.float32), is_array=False).wait()
            stage.advance_write_floor(ordinal=1).wait()

            read = stage.read_attributes(query, [mass], ov.OrdinalRange.latest(1))
            with read:
                read.wait()
                group = read.fetch_next()
                try:
                    names = paths.get_path_strings(group.prim_list)
                    values = group.array(0)
                    for i in range(group.prim_count):
                        row = group.data_row_index(i) if group.has_data_index_map else i
                        print("ordinal 1:", names[group.prim_index(i)], float(values[row]))
                finally:
                    stage.release_group(group)

            # The attribute given by name instead of token.
            stage.write_attribute(query, "mass", 2, np.array([10.0, 20.0, 30.0], np.float32), is_array=False).wait()
            stage.advance_write_floor(ordinal=2).wait()
            print("ordinal 2:", read_column(stage, paths, query, mass, 2))

            result = stage.clone("/World/A", ["/World/A_copy1", "/World/A_copy2"], ordinal=3)
            print("clone:", result.prims_cloned, result.target_count, result.source_prim_count, result.ordinal)
            stage.advance_write_floor(ordinal=3).wait()

            # A DLPack producer in, a DLPack consumer out.
            velocity = np.array([0.5, 1.5, 2.5], np.float64)
            tensor = ov.DLTensor.from_dlpack(velocity)
            print("from_dlpack:", tensor.shape_tuple, tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
            stage.write_attribute(query, "velocity", 4, tensor, is_array=False).wait()
            stage.advance_write_floor(ordinal=4).wait()
            print("velocity:", read_column(stage, paths, query, paths.intern_token("velocity"), 4))

        with paths.create_path_list_from_strings(["/World/A", "/World/A_copy1", "/World/A_copy2"]) as clones, \
                stage.query_from_path_list(clones) as cq:
            print("clones:", read_column(stage, paths, cq, mass, 4))
    finally:
        paths.destroy_path_list(prims)
print("done")
