"""What the hierarchy computation models do, printed the same way on either package.

Run by gpu-check.sh on the published package and on ours, on a machine with a
GPU, and the two outputs compared: which models `get_hierarchy_computation_models`
lists, and for each model id 1-4 whether `compute_hierarchy` succeeds, the
world translations it leaves and which rows it records at its output ordinal.
The tree (TREE below): prims with local and world matrices, one with a local
matrix only (/W/D, with a child), one with a world matrix only (/W/E), and a
top-level prim without a local matrix (/X, with a child); inputs written at 1,
one changed at 2 (/W/A); a computation records at 3, and another, with
nothing changed, at 4.
"""
import numpy as np

import ovstage as ov

TREE = ["/W", "/W/A", "/W/A/B", "/W/C", "/W/D", "/W/D/F", "/W/E", "/X", "/X/G"]
# Local translations (every prim but /W/E and /X) and identity world
# matrices (every prim but /W/D).
LOCALS = {"/W": (1, 0, 0), "/W/A": (0, 2, 0), "/W/A/B": (0, 0, 3), "/W/C": (5, 0, 0), "/W/D": (0, 0, 9),
          "/W/D/F": (0, 4, 0), "/X/G": (3, 3, 0)}
WORLDS = [p for p in TREE if p != "/W/D"]
F64x16 = ov.DLDataType(code=ov.DLDataTypeCode.kDLFloat, bits=64, lanes=16)


def translation(x, y, z):
    m = np.eye(4)
    m[3, :3] = (x, y, z)
    return m


def matrices(stage, paths, prims, name, ordinal, ms):
    flat = np.stack(ms).reshape(-1)
    with paths.create_path_list_from_strings(prims) as plist, stage.query_from_path_list(plist) as query:
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
            matrices(stage, paths, list(LOCALS), "omni:xform", 1, [translation(*t) for t in LOCALS.values()])
            matrices(stage, paths, WORLDS, "omni:fabric:worldMatrix", 1, [np.eye(4)] * len(WORLDS))
            matrices(stage, paths, ["/W/A"], "omni:xform", 2, [translation(0, 7, 0)])
            outcomes = []
            # Once after /W/A's change, then again with nothing changed.
            for inp, out in ((2, 3), (3, 4)):
                try:
                    stage.compute_hierarchy(inp, out, model=model)
                    outcomes.append("ok")
                except ov.OvstageError as e:
                    outcomes.append(f"error {e.code}")
            print(f"model {model}: {outcomes}")
            stage.advance_write_floor(4).wait()
            print(f"  latest: {worlds(stage, paths, query, ov.OrdinalRange.latest(4))}")
            for at in (3, 4):
                print(f"  recorded at {at}: {worlds(stage, paths, query, ov.OrdinalRange.between(at, at))}")
