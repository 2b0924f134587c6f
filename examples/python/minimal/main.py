"""Minimal ovstage program: write a column, seal it, read it back; then poll an op without blocking."""

import numpy as np

import ovstage as ov

with ov.Stage("minimal") as stage, ov.PathDictionary(stage) as paths:
    with paths.create_path_list_from_strings(["/World/A", "/World/B", "/World/C"]) as prims, \
            stage.query_from_path_list(prims) as query:
        # [snippet:minimal-write-read]
        mass = paths.intern_token("mass")
        stage.write_attribute(query, mass, 1, np.array([1.0, 2.0, 3.0], np.float32), is_array=False).wait()
        stage.advance_write_floor(ordinal=1).wait()  # seal ordinal 1: it becomes readable
        with stage.read_attributes(query, [mass], ov.OrdinalRange.latest(1)) as read:
            for group in read.wait().groups():
                with group:  # releases the group on exit
                    names = paths.get_path_strings(group.prim_list)
                    values = group.array(0)  # zero-copy, read-only view of the store's memory
                    for i in range(group.prim_count):
                        row = group.data_row_index(i) if group.has_data_index_map else i
                        print(names[group.prim_index(i)], float(values[row]))
        # [/snippet:minimal-write-read]

        # [snippet:nonblocking-poll]
        op = stage.write_attribute(query, mass, 2, np.array([4.0, 5.0, 6.0], np.float32), is_array=False)
        if not op.ok:
            raise ov.OvstageError(op.status, op.error_message())
        while True:
            code, failed, lowest_pending = stage.wait_op(op.op_id, timeout=0)  # never blocks
            if code != ov.ErrorCode.TIMEOUT:
                break
            # ... do other work while the op runs ...
        if code != ov.ErrorCode.OK:
            print("write failed:", op.error_message())
        stage.release_op(op.op_id)
        # [/snippet:nonblocking-poll]
        print("poll finished with code", int(code))
