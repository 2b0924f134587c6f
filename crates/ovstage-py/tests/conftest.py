import numpy as np
import pytest

import ovstage as ov


@pytest.fixture
def stage():
    s = ov.Stage("test")
    yield s
    s.destroy()


@pytest.fixture
def world(stage):
    """A stage, its dictionary, a three-prim list and a query over it."""
    paths = ov.PathDictionary(stage)
    pl = paths.create_path_list_from_strings(["/A", "/B", "/C"])
    q = stage.query_from_path_list(pl)
    yield stage, paths, pl, q
    if stage._alive:
        q.release().wait()
        pl.release()


def read_all(stage, paths, q, attr, rng):
    """{path: value} of every value group of a read."""
    tok = paths.intern_token(attr) if isinstance(attr, str) else attr
    out = {}
    with stage.read_attributes(q, [tok], rng) as r:
        for g in r.wait().groups():
            with g:
                names = paths.get_path_strings(g.prim_list)
                if g.is_delete:
                    for i in range(g.prim_count):
                        out[names[g.prim_index(i)]] = "deleted"
                    continue
                if g.is_array:
                    for i in range(g.prim_count):
                        out[names[g.prim_index(i)]] = np.array(g.array(i)).tolist()
                    continue
                vals = g.array(0)
                for i in range(g.prim_count):
                    row = g.data_row_index(i) if g.has_data_index_map else i
                    out[names[g.prim_index(i)]] = np.array(vals[row]).tolist()
    return out
