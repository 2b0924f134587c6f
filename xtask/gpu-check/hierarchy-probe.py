"""What the hierarchy computation models do, printed the same way on either package.

Run by gpu-check.sh on the published package and on ours, on a machine with a
GPU, and the two outputs compared: which models `get_hierarchy_computation_models`
lists, and for each model id 1-4 whether `compute_hierarchy` succeeds, the
world translations it leaves and which rows it records at its output ordinal.
The tree: /W (top level), /W/A, /W/A/B, /W/C with local translations; every
prim carries an identity world matrix written at ordinal 1; one input changes
at 2 (/W/A) and the computation records at 3.
"""
import numpy as np

import ovstage as ov

TREE = ["/W", "/W/A", "/W/A/B", "/W/C"]
F64x16 = ov.DLDataType(code=ov.DLDataTypeCode.kDLFloat, bits=64, lanes=16)


def translation(x, y, z):
    m = np.eye(4)
    m[3, :3] = (x, y, z)
    return m


def matrices(stage, query, name, ordinal, ms):
    flat = np.stack(ms).reshape(-1)
    stage.write_attribute(query, name, ordinal, ov.make_dltensor(flat, dtype=F64x16, shape=[len(ms)]),
                          is_array=False, semantic=ov.AttributeSemantic.MATRIX).wait()


def worlds(stage, paths, query, rng):
    tok = paths.intern_token("omni:fabric:worldMatrix")
    out = []
    with stage.read_attributes(query, [tok], rng) as r:
        for g in r.wait().groups():
            with g:
                a = np.array(g.array(0)).reshape(-1, 16)
                for i in range(g.prim_count):
                    row = g.data_row_index(i) if g.has_data_index_map else i
                    out.append((TREE[g.prim_index(i)], tuple(float(v) for v in a[row, 12:15])))
    return sorted(out)


with ov.Stage("probe") as stage:
    print("models:", sorted((int(m.model_id), m.name) for m in stage.get_hierarchy_computation_models()))

for model in (1, 2, 3, 4):
    with ov.Stage(f"probe-{model}") as stage, ov.PathDictionary(stage) as paths:
        with paths.create_path_list_from_strings(TREE) as plist, stage.query_from_path_list(plist) as query:
            locals_ = [translation(1, 0, 0), translation(0, 2, 0), translation(0, 0, 3), translation(5, 0, 0)]
            matrices(stage, query, "omni:xform", 1, locals_)
            matrices(stage, query, "omni:fabric:worldMatrix", 1, [np.eye(4)] * 4)
            with paths.create_path_list_from_strings(["/W/A"]) as alist, stage.query_from_path_list(alist) as aq:
                matrices(stage, aq, "omni:xform", 2, [translation(0, 7, 0)])
            try:
                stage.compute_hierarchy(2, 3, model=model)
                outcome = "ok"
            except ov.OvstageError as e:
                outcome = f"error {e.code}"
            print(f"model {model}: {outcome}")
            stage.advance_write_floor(3).wait()
            print(f"  latest: {worlds(stage, paths, query, ov.OrdinalRange.latest(3))}")
            print(f"  recorded at 3: {worlds(stage, paths, query, ov.OrdinalRange.between(3, 3))}")
