"""Script 4 (spec 17.2): authoring a prim tree without USD.

INSERT-writes a dummy column to create the prims, writes usd-prim-type tokens
and usd-schemas token arrays, writes omni:xform as 16-lane float64 matrices with
the MATRIX semantic, clones the prototype into three environments, prints the
hierarchy relations (sorted) and reads the matrices back as (N, 4, 4).
compute_hierarchy computes world matrices on both packages (nothing carries
world matrices here, so it changes nothing); the script prints the outcome.
"""
import numpy as np

import ovstage as ov

PROTO = ["/Env", "/Env/Robot", "/Env/Robot/Arm", "/Env/Robot/Base", "/Env/Table"]
TYPES = {"/Env": "Xform", "/Env/Robot": "Xform", "/Env/Robot/Arm": "Mesh", "/Env/Robot/Base": "Mesh",
         "/Env/Table": "Cube"}
SCHEMAS = {"/Env/Robot/Arm": ["PhysicsRigidBodyAPI", "PhysicsCollisionAPI"], "/Env/Robot/Base": ["PhysicsRigidBodyAPI"]}
F64x16 = ov.DLDataType(code=ov.DLDataTypeCode.kDLFloat, bits=64, lanes=16)


def translation(x, y, z):
    m = np.eye(4)
    m[3, :3] = (x, y, z)
    return m


with ov.Stage("authoring") as stage, ov.PathDictionary(stage) as paths:
    with paths.create_path_list_from_strings(PROTO) as plist, stage.query_from_path_list(plist) as query:
        n = len(PROTO)
        stage.write_attribute(query, "authored", 1, np.ones(n, np.uint8), is_array=False,
                              prim_mode=ov.PrimMode.INSERT).wait()
        type_tokens = np.array([paths.intern_token(TYPES[p]) for p in PROTO], np.uint64)
        stage.write_attribute(query, "usd-prim-type", 1, type_tokens, is_array=False).wait()
        rows = [np.array([paths.intern_token(s) for s in SCHEMAS.get(p, [])], np.uint64) for p in PROTO]
        stage.write_attribute(query, "usd-schemas", 1, rows, is_array=True).wait()
        mats = np.stack([translation(i, 0, 0) for i in range(n)]).reshape(-1)
        stage.write_attribute(query, "omni:xform", 1, ov.make_dltensor(mats, dtype=F64x16, shape=[n]),
                              is_array=False, semantic=ov.AttributeSemantic.MATRIX).wait()


    report = stage.clone("/Env", ["/Env_1", "/Env_2", "/Env_3"], ordinal=2)
    print("clone:", report.prims_cloned, report.target_count, report.source_prim_count)
    everything = PROTO + [p.replace("/Env", f"/Env_{k}", 1) for k in (1, 2, 3) for p in PROTO]
    with paths.create_path_list_from_strings(everything) as alist, stage.query_from_path_list(alist) as aq:
        # Tag every prim with its environment. (The reference links cloned prims
        # into get_hierarchy only once they are written after the clone; ours
        # links them at the clone. Writing them keeps this script's output the
        # same on both.)
        env = np.array([int(p[5]) if p.startswith("/Env_") else 0 for p in everything], np.int32)
        stage.write_attribute(aq, "env", 3, env, is_array=False).wait()
    stage.advance_write_floor(ordinal=3).wait()

    probe = ["/Env/Robot", "/Env_2/Robot/Arm", "/Env_3", "/Missing"]
    with paths.create_path_list_from_strings(probe) as hlist:
        for relation in (ov.HierarchyRelation.PARENT, ov.HierarchyRelation.CHILDREN, ov.HierarchyRelation.SIBLINGS):
            result = stage.get_hierarchy(hlist, 3, relation)
            for path, item in zip(probe, result.items):
                print(relation.name, path, "status", item.status, sorted(item.paths))

    with paths.create_path_list_from_strings(everything) as alist, stage.query_from_path_list(alist) as aq:
        xform = paths.intern_token("omni:xform")
        found = {}
        semantics = set()
        with stage.read_attributes(aq, [xform], ov.OrdinalRange.latest(3)) as read:
            for group in read.wait().groups():
                with group:
                    data = group.array(0)
                    assert data.ndim == 3 and data.shape[1:] == (4, 4), data.shape
                    names = paths.get_path_strings(group.prim_list)
                    semantics.add(ov.AttributeSemantic(group.semantic).name)
                    for i in range(group.prim_count):
                        row = group.data_row_index(i) if group.has_data_index_map else i
                        found[names[group.prim_index(i)]] = data[row][3, :3].tolist()
        print("group semantics:", sorted(semantics))
        for path in sorted(found):
            print("translation", path, found[path])

        ptype = paths.intern_token("usd-prim-type")
        with stage.read_attributes(aq, [ptype], ov.OrdinalRange.latest(3)) as read:
            types = {}
            for group in read.wait().groups():
                with group:
                    names = paths.get_path_strings(group.prim_list)
                    data = group.array(0)
                    for i in range(group.prim_count):
                        row = group.data_row_index(i) if group.has_data_index_map else i
                        types[names[group.prim_index(i)]] = paths.token_to_string(int(data[row]))
        print("types:", sorted(types.items())[:6])

    try:
        stage.compute_hierarchy(3, 4)
        print("compute_hierarchy: computed")
    except ov.OvstageError as e:
        print("compute_hierarchy:", ov.ErrorCode(e.code).name)
print("done")
