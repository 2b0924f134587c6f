"""Script 5 (spec 17.2): migrating from per-prim USD habits.

The same column written three ways: one write per prim in a loop, one
vectorized write over a query, and one batched write_attributes for several
columns; each read back by path through get_paths(group.prim_list) and
path_to_string. Errors of either kind are caught at top level.
"""
import sys

import numpy as np

import ovstage as ov

PRIMS = [f"/Scene/Ball{i}" for i in range(5)]


def by_path(stage, paths, query, name, ordinal):
    token = paths.intern_token(name)
    out = {}
    with stage.read_attributes(query, [token], ov.OrdinalRange.latest(ordinal)) as read:
        for group in read.wait().groups():
            with group:
                handles = paths.get_paths(group.prim_list)
                if group.is_array:
                    for i in range(group.prim_count):
                        out[paths.path_to_string(handles[group.prim_index(i)])] = group.array(i).tolist()
                    continue
                data = group.array(0)
                for i in range(group.prim_count):
                    row = group.data_row_index(i) if group.has_data_index_map else i
                    out[paths.path_to_string(handles[group.prim_index(i)])] = data[row].tolist()
    return [out[p] for p in sorted(out)]


def main():
    with ov.Stage("migration") as stage, ov.PathDictionary(stage) as paths:
        # 1. The USD habit: one prim at a time.
        for i, prim in enumerate(PRIMS):
            with paths.create_path_list_from_strings([prim]) as one, stage.query_from_path_list(one) as q:
                stage.write_attribute(q, "radius", 1, np.array([0.5 + i], np.float32), is_array=False).wait()
        stage.advance_write_floor(ordinal=1).wait()

        with paths.create_path_list_from_strings(PRIMS) as plist, stage.query_from_path_list(plist) as query:
            print("per-prim loop:", by_path(stage, paths, query, "radius", 1))

            # 2. One vectorized write over the whole query.
            stage.write_attribute(query, "radius", 2, np.linspace(1.0, 3.0, len(PRIMS), dtype=np.float32),
                                  is_array=False).wait()
            stage.advance_write_floor(ordinal=2).wait()
            print("vectorized:", by_path(stage, paths, query, "radius", 2))

            # 3. Several columns in one op.
            stage.write_attributes(query, [
                ov.WriteDesc("radius", np.full(len(PRIMS), 4.0, np.float32), is_array=False),
                ov.WriteDesc("bounces", np.arange(len(PRIMS), dtype=np.int64) * 2, is_array=False),
                ov.WriteDesc("history", [np.arange(k, dtype=np.int32) for k in range(len(PRIMS))], is_array=True),
            ], ordinal=3).wait()
            stage.advance_write_floor(ordinal=3).wait()
            for name in ("radius", "bounces", "history"):
                print("batched", name + ":", by_path(stage, paths, query, name, 3))

            # A USD habit that fails: a relative path. Ours rejects it with
            # OvxError; the reference accepts it (spec section 15.3 item 9).
            # The expected output records ours.
            try:
                paths.create_path_list_from_strings(["Scene/Ball0"])
                print("relative path accepted")
            except ov.OvxError as e:
                print("relative path rejected: OvxError", e.code)
            try:
                stage.write_attribute(query, "radius", 3, np.zeros(len(PRIMS), np.float32), is_array=False).wait()
            except ov.OvstageError as e:
                print("rewrite of a sealed ordinal:", ov.ErrorCode(e.code).name)


try:
    main()
except ov.OvstageError as e:
    print("OvstageError:", ov.ErrorCode(e.code).name)
    sys.exit(1)
except ov.OvxError as e:
    print("OvxError:", e.code)
    sys.exit(1)
print("done")
