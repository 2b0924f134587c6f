"""The native value classes `OrdinalRange` and `WriteDesc` keep the
published dataclasses' behaviour (spec 9.5, 10, 10.1), and dropping many
unwaited operations stays cheap and releases them."""

import copy
import pickle

import numpy as np
import pytest

import ovstage as ov

from conftest import read_all


def test_ordinal_range_is_a_mutable_value():
    r = ov.OrdinalRange.latest(5)
    assert (r.end_ordinal, r.start_ordinal) == (5, None)
    assert r == ov.OrdinalRange(5) == ov.OrdinalRange(end_ordinal=5, start_ordinal=None)
    assert r != ov.OrdinalRange(5, 1)
    assert repr(r) == "OrdinalRange(end_ordinal=5, start_ordinal=None)"
    assert pickle.loads(pickle.dumps(r)) == r
    assert copy.copy(r) == r and copy.copy(r) is not r
    with pytest.raises(TypeError):
        hash(r)
    r.start_ordinal = 2
    assert r == ov.OrdinalRange.between(2, 5)
    assert (r == 5) is False


def test_ordinal_range_validation():
    with pytest.raises(ValueError, match="start_ordinal 5 is above end_ordinal 2"):
        ov.OrdinalRange.between(5, 2)
    with pytest.raises(TypeError):
        ov.OrdinalRange.latest(1.5)
    with pytest.raises(ValueError):
        ov.OrdinalRange.latest(-1)
    with pytest.raises(ValueError):
        ov.OrdinalRange.latest(1 << 64)
    # Direct construction validates nothing; the read does.
    bad = ov.OrdinalRange(5, start_ordinal=7)
    assert bad.start_ordinal == 7


def test_a_bad_range_is_rejected_by_the_read(world):
    stage, paths, pl, q = world
    with pytest.raises(ValueError, match="above"):
        stage.read_attributes(q, [], ov.OrdinalRange(5, start_ordinal=7))
    with pytest.raises(TypeError):
        stage.read_attributes(q, [], ov.OrdinalRange("5"))


def test_a_duck_typed_range_is_accepted(world):
    stage, paths, pl, q = world
    stage.write_attribute(q, "x", 1, np.arange(3, dtype=np.float32), is_array=False).wait()
    stage.advance_write_floor(ordinal=1).wait()

    class Range:
        end_ordinal = 1
        start_ordinal = None

    assert read_all(stage, paths, q, "x", Range()) == {"/A": 0.0, "/B": 1.0, "/C": 2.0}


def test_write_desc_is_a_mutable_value():
    a = np.zeros(3, np.float32)
    w = ov.WriteDesc("a", a, False)
    assert w.semantic is ov.AttributeSemantic.NONE and w.attribute_mode is ov.AttributeMode.REJECT
    assert (w.index_map, w.mask, w.count, w.cuda_event, w.cuda_stream) == (None,) * 5
    assert w == ov.WriteDesc(attribute="a", tensors=a, is_array=False)
    assert w != ov.WriteDesc("b", a, False)
    assert repr(w).startswith("WriteDesc(attribute='a', tensors=array(")
    with pytest.raises(TypeError):
        hash(w)
    with pytest.raises(TypeError):
        ov.WriteDesc("a", a)  # is_array is required
    w.attribute = "c"
    assert w.attribute == "c"
    back = pickle.loads(pickle.dumps(ov.WriteDesc("a", [1, 2], True, count=1)))
    assert (back.attribute, back.tensors, back.is_array, back.count) == ("a", [1, 2], True, 1)


def test_write_desc_fields_are_checked_when_submitted(world):
    stage, paths, pl, q = world
    w = ov.WriteDesc("a", np.zeros(3, np.float32), is_array=1)
    with pytest.raises(TypeError, match="is_array"):
        stage.write_attributes(q, [w], 1)
    with pytest.raises(TypeError, match="WriteDesc"):
        stage.write_attributes(q, [("a", np.zeros(3), False)], 1)
    w.is_array = False
    w.tensors = np.arange(3, dtype=np.float32)
    stage.write_attributes(q, [w], 1).wait()
    stage.advance_write_floor(ordinal=1).wait()
    assert read_all(stage, paths, q, "a", ov.OrdinalRange.latest(1)) == {"/A": 0.0, "/B": 1.0, "/C": 2.0}


def test_an_empty_batch_is_an_op_that_changes_nothing(world):
    stage, paths, pl, q = world
    op = stage.write_attributes(q, [], 3)
    assert op.ok
    op.wait()


def test_many_dropped_pending_operations_are_released(world):
    stage, paths, pl, q = world
    # Thousands of unwaited ops, most still pending when dropped: each drop
    # stays cheap and every one is released once done.
    n = 5000
    for i in range(n):
        stage.write_attribute(q, "d", i + 1, np.full(3, i, np.float32), is_array=False)
    stage.advance_write_floor(ordinal=n).wait()
    # The next drops sweep the finished ones.
    for i in range(600):
        stage.write_attribute(q, "e", n + 1 + i, np.full(3, i, np.float32), is_array=False)
    stage.advance_write_floor(ordinal=n + 600).wait()
    stage.write_attribute(q, "e", n + 601, np.full(3, 0, np.float32), is_array=False).wait()
    assert stage._stats()[0] < 1000
    assert read_all(stage, paths, q, "d", ov.OrdinalRange.latest(n)) == {"/A": n - 1, "/B": n - 1, "/C": n - 1}


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint16])
def test_dtypes_the_contract_does_not_store_are_not_supported(world, dtype):
    stage, paths, pl, q = world
    op = stage.write_attribute(q, "t", 1, np.zeros(3, dtype), is_array=False)
    assert op.status == ov.ErrorCode.NOT_SUPPORTED
    assert "not supported for attributes" in op.error_message()


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.uint32, np.uint64, np.float16, np.float32,
                                   np.float64, np.bool_])
def test_dtypes_the_contract_stores(world, dtype):
    stage, paths, pl, q = world
    stage.write_attribute(q, "t", 1, np.ones(3, dtype), is_array=False).wait()


def test_integer_arguments_take_exact_ints_subclasses_and_index(world):
    """Exact ints take a shortcut; bounds, signs, int subclasses and
    `__index__` objects must read the same as through the general path."""
    stage, paths, _, q = world
    x = paths.intern_token("x")
    a = np.ones(3, np.float32)

    class Ordinal(int):
        pass

    # An exact int, an int subclass and a numpy integer are all ordinals.
    for o in (5, Ordinal(6), np.uint64(7)):
        stage.write_attribute(q, x, o, a * int(o), is_array=False).wait()
    stage.advance_write_floor(ordinal=7).wait()
    for o in (5, 6, 7):
        assert read_all(stage, paths, q, "x", ov.OrdinalRange.between(o, o)) == {p: float(o) for p in ("/A", "/B", "/C")}
    # The full uint64 range of a 64-bit argument (2**64 - 1 is also what
    # the shortcut's error value looks like), and nothing past it.
    op = stage.write_attribute(q, x, 8, a, is_array=False)
    assert op.wait(timeout=(1 << 64) - 1) is op
    for bad, msg in ((-1, "ordinal must not be negative, got -1"), (1 << 64, f"ordinal must fit in 64 bits, got {1 << 64}")):
        with pytest.raises(ValueError, match=msg):
            stage.write_attribute(q, x, bad, a, is_array=False)
    # A 32-bit argument: its bound, checked on the shortcut too.
    for bad, msg in ((1 << 32, f"count must fit in 32 bits, got {1 << 32}"), (-3, "count must not be negative, got -3")):
        with pytest.raises(ValueError, match=msg):
            stage.write_attribute(q, x, 9, a, is_array=False, count=bad)
    with pytest.raises(TypeError, match="ordinal must be an int, got float"):
        stage.write_attribute(q, x, 9.0, a, is_array=False)
