"""Script 8 (spec 17.2): a tour of the error channels.

Each case prints the exception class and code it produced. Enqueue rejections
come back through the returned Operation (ok is False, wait() raises);
execution failures raise OP_FAILED from wait(); bad Python arguments raise
TypeError/ValueError at the call; path-dictionary errors raise OvxError.
"""
import numpy as np

import ovstage as ov


def outcome(label, fn):
    try:
        fn()
        print(f"{label}: ok")
    except ov.OvstageError as e:
        print(f"{label}: OvstageError {ov.ErrorCode(e.code).name}")
    except ov.OvxError as e:
        print(f"{label}: OvxError {e.code}")
    except (TypeError, ValueError) as e:
        print(f"{label}: {type(e).__name__}")


with ov.Stage("error-tour") as stage, ov.PathDictionary(stage) as paths:
    with paths.create_path_list_from_strings(["/A", "/B", "/C"]) as plist, stage.query_from_path_list(plist) as q:
        x = paths.intern_token("x")
        stage.write_attribute(q, x, 2, np.zeros(3, np.float32), is_array=False).wait()

        read = stage.read_attributes(q, [x], ov.OrdinalRange.latest(2))
        print("read above the floor: handle is 0:", read.handle == 0)
        outcome("read above the floor, wait", read.wait)
        stage.advance_write_floor(ordinal=2).wait()

        op = stage.write_attribute(q, x, 1, np.zeros(3, np.float32), is_array=False)
        print("write below the floor: ok =", op.ok, "status =", ov.ErrorCode(op.status).name,
              "has message:", bool(op.error_message()))
        outcome("write below the floor, wait", op.wait)
        outcome("write below the floor, wait again", op.wait)

        # INSERT onto existing prims: PRIM_NOT_FOUND at enqueue on both.
        insert = stage.write_attribute(q, "y", 3, np.zeros(3, np.float32), is_array=False,
                                       prim_mode=ov.PrimMode.INSERT)
        print("INSERT on existing prims: ok =", insert.ok, "status =", ov.ErrorCode(insert.status).name)
        outcome("INSERT on existing prims, wait", insert.wait)

        outcome("dtype change", stage.write_attribute(q, x, 3, np.zeros(3, np.int32), is_array=False).wait)
        stage.write_attribute(q, x, 5, np.ones(3, np.float32), is_array=False).wait()
        outcome("older ordinal than a committed change",
                stage.write_attribute(q, x, 4, np.ones(3, np.float32), is_array=False).wait)
        outcome("too many rows", stage.write_attribute(q, x, 6, np.ones(4, np.float32), is_array=False).wait)

        done = stage.write_attribute(q, x, 6, np.ones(3, np.float32), is_array=False)
        print("wait returns the operation:", done.wait() is done)
        outcome("double wait", done.wait)
        print("wait_op on a consumed op:", stage.wait_op(done.op_id, timeout=0)[0])

        # A long queue of writes: the last one may or may not be done at once.
        ops = [stage.write_attribute(q, "bulk", 10 + k, np.full(3, k, np.float32), is_array=False) for k in range(500)]
        try:
            ops[-1].wait(timeout=0)
            state = "done"
        except ov.OvstageError as e:
            state = "pending" if e.code == ov.ErrorCode.TIMEOUT else ov.ErrorCode(e.code).name
        print("wait(0) on the last of a queue: done or pending:", state in ("done", "pending"))
        for op in ops[:-1]:
            op.wait()
        if state == "pending":
            ops[-1].wait()

        outcome("ordinal as float", lambda: stage.write_attribute(q, x, 7.0, np.ones(3, np.float32), is_array=False))
        outcome("negative ordinal", lambda: stage.write_attribute(q, x, -7, np.ones(3, np.float32), is_array=False))
        outcome("is_array not a bool", lambda: stage.write_attribute(q, x, 7, np.ones(3, np.float32), is_array=1))
        outcome("count=0", lambda: stage.write_attribute(q, x, 7, np.ones(3, np.float32), is_array=False, count=0))
        outcome("attrs as names", lambda: stage.read_attributes(q, ["x"], ov.OrdinalRange.latest(1)))
        outcome("range start after end", lambda: ov.OrdinalRange.between(5, 2))
        outcome("prim_mode out of range", lambda: stage.write_attribute(q, x, 7, np.ones(3, np.float32),
                                                                        is_array=False, prim_mode=9))

        stage.advance_write_floor(ordinal=6).wait()
        read = stage.read_attributes(q, [x], ov.OrdinalRange.latest(6))
        group = read.wait().fetch_next()
        stage.release_group(group)
        outcome("released group: release again", lambda: stage.release_group(group))
        outcome("released group: array", lambda: group.array(0))
        print("released group keeps its scalars:", group.prim_count)
        read.release().wait()
        outcome("released read: fetch_next", read.fetch_next)

    outcome("released query: write", lambda: stage.write_attribute(q, x, 8, np.ones(3, np.float32), is_array=False))
    outcome("released query: result", q.result)

    outcome("invalid path", lambda: paths.intern_path("/A//B"))
    outcome("empty token", lambda: paths.intern_token(""))
    outcome("unknown path list", lambda: paths.get_paths(987654321))
    print("unknown token text:", repr(paths.token_to_string(987654321)))
print("done")
