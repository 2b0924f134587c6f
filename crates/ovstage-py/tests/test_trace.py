"""The op timeline from Python (an extension of ours): start_trace/stop_trace
write a Chrome trace with one enqueue, begin and end per op."""

import json
from collections import defaultdict

import numpy as np
import pytest

import ovstage as ov


def test_a_trace_records_each_op_once_with_its_call_and_is_valid_json(tmp_path):
    path = tmp_path / "ops.json"
    assert ov.stop_trace() is None, "no trace is being recorded yet"
    ov.start_trace(path)
    with pytest.raises(ov.OvstageError) as e:
        ov.start_trace(tmp_path / "other.json")
    assert e.value.code == ov.ErrorCode.INVALID_ARGUMENT and "already being recorded" in str(e.value)
    stage = ov.Stage("traced")
    paths = ov.PathDictionary(stage)
    q = stage.query_from_path_list(paths.create_path_list_from_strings(["/A", "/B"]))
    stage.write_attribute(q, "x", 1, np.ones(2, np.float32), is_array=False).wait()
    stage.advance_write_floor(ordinal=1).wait()
    stage.destroy()
    assert ov.stop_trace() == str(path)

    events = json.loads(path.read_text())["traceEvents"]
    per_op = defaultdict(lambda: defaultdict(int))
    names = {}
    for ev in events:
        if ev["ph"] in ("i", "B", "E"):
            per_op[ev["args"]["op"]][ev["ph"]] += 1
        if ev["ph"] == "B":
            names[ev["args"]["op"]] = (ev["name"], ev["args"]["ordinal"], ev["args"]["bytes"])
    assert per_op and all(dict(c) == {"i": 1, "B": 1, "E": 1} for c in per_op.values()), dict(per_op)
    assert ("write_attribute", 1, 8) in names.values(), names
    assert ("advance_write_floor", 1, 0) in names.values(), names


def test_bad_paths_are_refused():
    with pytest.raises(TypeError):
        ov.start_trace(42)
    with pytest.raises(ov.OvstageError) as e:
        ov.start_trace("/nonexistent-dir/ovstage/trace.json")
    assert e.value.code == ov.ErrorCode.INVALID_ARGUMENT
    assert ov.stop_trace() is None
