"""Group A and B: names, enums, errors, argument checks."""
import pytest

import ovstage as ov

SPEC_ALL = {
    "Stage", "StageConfig", "Query", "Read", "Map", "OrdinalQuery", "Hierarchy", "PathDictionary", "PathList",
    "OvstageError", "OvxError", "ErrorCode", "FilterOp", "PrimMode", "AttributeMode", "AttributeSemantic",
    "HierarchyRelation", "HierarchyComputationModel", "Scope", "OrdinalAdmissionPolicy", "LogSeverity",
    "PopulationDomain", "Placement", "OrdinalRange", "Predicate", "Filter", "Operation", "CloneOperation",
    "WriteDesc", "ReadGroup", "MapGroup", "AttributeMeta", "QueryResult", "CloneResult", "HierarchyItem",
    "HierarchyResult", "HierarchyComputationModelDesc", "DLTensor", "DLDataType", "DLDevice", "DLDeviceType",
    "DLDataTypeCode", "ManagedDLTensor", "make_dltensor", "numpy_to_dldatatype", "dltensor_to_numpy",
    "typed_tensor_to_write", "instancing", "population", "BuildInfo", "get_build_info", "library_version",
    "set_log_callback", "flush_log", "TIMEOUT_INFINITE", "OVSTAGE_TIMEOUT_INFINITE", "OVX_API_SUCCESS",
    "OVX_API_ERROR", "__version__",
}
# Documented extensions of ours (not in the published API).
EXTENSIONS = {"WriteBatch", "start_trace", "stop_trace"}


def test_all_names_importable():
    assert set(ov.__all__) == SPEC_ALL | EXTENSIONS
    for n in ov.__all__:
        assert hasattr(ov, n), n
    import ovstage.instancing
    import ovstage.population
    assert ov.gates.available() is False
    assert ov.population.available() is False and ov.instancing.available() is False


def test_enums_and_constants():
    assert ov.ErrorCode.TIMEOUT == 11 and ov.ErrorCode.INTERNAL == 99
    assert ov.LogSeverity.NONE == 3 and ov.LogSeverity.VERBOSE == -2
    assert len(list(ov.HierarchyComputationModel)) == 5
    assert len(ov.HierarchyComputationModel.__members__) == 7
    assert ov.HierarchyComputationModel.DEFAULT_GPU is ov.HierarchyComputationModel.GPU_GLOBAL
    assert issubclass(ov.PopulationDomain, __import__("enum").IntFlag)
    assert ov.TIMEOUT_INFINITE == 2**64 - 1
    assert ov.library_version() == (0, 3, 0) and ov.__version__.startswith("0.3.0")
    assert ov.get_build_info().build_string.startswith("0.3.0+")
    assert str(ov.DLDeviceType(2)) == "CUDA" and ov.DLDeviceType(1).value == 1


def test_errors():
    e = ov.OvstageError(ov.ErrorCode.TIMEOUT, "late")
    assert type(e.code) is int and e.code == 11 and str(e) == "TIMEOUT: late" and e.args == ("TIMEOUT: late",)
    assert str(ov.OvstageError(77)) == "ERROR_77"
    assert str(ov.OvxError(1, "x")) == "ovx error 1: x"
    assert not issubclass(ov.OvstageError, ov.OvxError) and not issubclass(ov.OvxError, ov.OvstageError)
    with pytest.raises(TypeError):
        ov.OvstageError(1.0)


def test_integer_rules(world):
    stage, paths, pl, q = world
    import numpy as np
    a = np.zeros(3, np.float32)
    with pytest.raises(TypeError):
        stage.write_attribute(q, "x", 5.0, a, is_array=False)
    with pytest.raises(ValueError):
        stage.write_attribute(q, "x", -1, a, is_array=False)
    with pytest.raises(ValueError):
        stage.write_attribute(q, "x", 2**64, a, is_array=False)
    stage.write_attribute(q, "x", np.uint64(5), a, is_array=False).wait()
    with pytest.raises(ValueError, match="PrimMode"):
        stage.write_attribute(q, "x", 6, a, is_array=False, prim_mode=5)
    with pytest.raises(TypeError):
        stage.write_attribute(q, 1.5, 6, a, is_array=False)
    with pytest.raises(TypeError):
        stage.read_attributes(q, ["x"], ov.OrdinalRange.latest(1))
    with pytest.raises(TypeError):
        stage.advance_write_floor(ordinal=1, scope=ov.Scope.INCLUDE, attributes=["x"])
    with pytest.raises(TypeError):
        ov.Operation(stage, 0, 1).wait(timeout=None)


def test_write_argument_rules(world):
    stage, paths, pl, q = world
    import numpy as np
    a = np.zeros(3, np.float32)
    with pytest.raises(TypeError):
        stage.write_attribute(q, "x", 1, a)
    with pytest.raises(TypeError):
        stage.write_attribute(q, "x", 1, a, is_array=1)
    with pytest.raises(ValueError):
        stage.write_attribute(q, "x", 1, a, is_array=False, count=0)
    with pytest.raises(ValueError):
        stage.write_attribute(q, "x", 1, a, is_array=False, index_map=[0], mask=[1])
    with pytest.raises(ValueError):
        stage.write_attribute(q, "x", 1, a, is_array=False, index_map=[])
    with pytest.raises(ValueError):
        stage.write_attribute(q, "x", 1, a, is_array=False, mask=[1], count=70)
    with pytest.raises(ValueError):
        stage.write_attribute(q, "x", 1, a, is_array=False, index_map=[0], count=2)
    with pytest.raises(ValueError):
        stage.write_attribute(q, "x", 1, [], is_array=False)
    assert stage._stats()[0] == 0  # nothing submitted
