"""The typed public surface: stubs agree with the runtime, every public name
is documented, and signatures match the spec (section 17 group A3)."""

import ast
import enum
import inspect
import math
import pathlib
import types

import pytest

import ovstage as ov
from ovstage import _native, gates, instancing, population

PKG = pathlib.Path(ov.__file__).parent
MODULES = {"ovstage": ov, "ovstage._native": _native, "ovstage.population": population,
           "ovstage.instancing": instancing, "ovstage.gates": gates}
STUBS = {"ovstage": "__init__.pyi", "ovstage._native": "_native.pyi", "ovstage.population": "population.pyi",
         "ovstage.instancing": "instancing.pyi", "ovstage.gates": "gates.pyi"}

# Spec section 2.1, frozen.
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

# Extensions of ours beyond section 2.1, each documented as ours (README,
# docstring, stubs); nothing else may join `__all__`.
EXTENSIONS = {"WriteBatch", "start_trace", "stop_trace"}

# Dunders whose signatures the stubs describe (construction and protocols).
CHECKED_DUNDERS = {"__init__", "__new__", "__enter__", "__exit__", "__dlpack__", "__dlpack_device__"}


# ---- the stubs, parsed


class Stub:
    """One parsed stub module: top-level nodes by name, imported aliases."""

    def __init__(self, module):
        self.module = module
        self.tree = ast.parse((PKG / STUBS[module]).read_text(), STUBS[module])
        self.names = {}
        self.aliases = {}
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                self.names[node.name] = node
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                self.names[node.target.id] = node
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.names[t.id] = node
            elif isinstance(node, ast.ImportFrom) and node.level == 1:
                for a in node.names:
                    if a.asname == a.name:  # an explicit re-export
                        if node.module:
                            self.aliases[a.name] = (f"ovstage.{node.module}", a.name)
                        else:  # a submodule
                            self.aliases[a.name] = (f"ovstage.{a.name}", None)


STUB = {m: Stub(m) for m in STUBS}


def stub_node(module, name):
    s = STUB[module]
    if name in s.names:
        return module, s.names[name]
    if name in s.aliases:
        src, orig = s.aliases[name]
        if orig is not None and src in STUB:
            return stub_node(src, orig)
        return src, None  # a re-exported submodule
    return module, None


def class_members(module, cls_node):
    """name -> FunctionDef of a stub class and its stub bases (nearest first)."""
    out = {}
    for base in cls_node.bases:
        if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id == "_native":
            bm, bn = stub_node("ovstage._native", base.attr)
        elif isinstance(base, ast.Name):
            bm, bn = stub_node(module, base.id)
        else:
            continue
        if isinstance(bn, ast.ClassDef):
            out.update(class_members(bm, bn))
    for node in cls_node.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = node
    return out


def decorators(fn):
    return {d.id if isinstance(d, ast.Name) else getattr(d, "attr", None) for d in fn.decorator_list}


def is_dataclass_node(cls_node):
    for d in cls_node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Name) and target.id == "dataclass":
            return True
    return False


def evaluate(node, module):
    """A stub default's value, evaluated in the runtime module's namespace."""
    ns = dict(vars(ov))
    ns.update(vars(MODULES[module]))
    return eval(compile(ast.Expression(node), "<stub>", "eval"), ns)  # noqa: S307 - our own stub text


def stub_params(fn, module, drop_first):
    """[(name, kind, default)] of a stub function."""
    a = fn.args
    out = []
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for i, (arg, d) in enumerate(zip(pos, defaults)):
        kind = inspect.Parameter.POSITIONAL_ONLY if i < len(a.posonlyargs) else inspect.Parameter.POSITIONAL_OR_KEYWORD
        out.append((arg.arg, kind, inspect.Parameter.empty if d is None else evaluate(d, module)))
    if a.vararg:
        out.append((a.vararg.arg, inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.empty))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((arg.arg, inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.empty if d is None else evaluate(d, module)))
    if a.kwarg:
        out.append((a.kwarg.arg, inspect.Parameter.VAR_KEYWORD, inspect.Parameter.empty))
    return out[1:] if drop_first else out


def dataclass_params(cls_node, module):
    out = []
    for node in cls_node.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if "ClassVar" in ast.unparse(node.annotation):
                continue
            d = inspect.Parameter.empty if node.value is None else evaluate(node.value, module)
            out.append((node.target.id, inspect.Parameter.POSITIONAL_OR_KEYWORD, d))
    return out


def runtime_params(obj, drop_first):
    ps = [(p.name, p.kind, p.default) for p in inspect.signature(obj).parameters.values()]
    if drop_first:
        ps = ps[1:]
    # A positional-only `self` is how native methods spell it; the rest keeps its kind.
    return ps


def same_default(a, b):
    if a is inspect.Parameter.empty or b is inspect.Parameter.empty:
        return a is b
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def assert_params_equal(where, got, want):
    assert [(n, k) for n, k, _ in got] == [(n, k) for n, k, _ in want], where
    for (n, _, dg), (_, _, dw) in zip(got, want):
        assert same_default(dg, dw), f"{where}: default of {n}: runtime {dg!r}, expected {dw!r}"


# ---- public runtime surface


def public_callables():
    """(where, runtime object, module, stub node, drop_first) for every public callable with a stub."""
    out = []
    for module, mod in MODULES.items():
        names = ov.__all__ if module == "ovstage" else [n for n in vars(mod) if not n.startswith("_")]
        for name in names:
            obj = getattr(mod, name)
            if isinstance(obj, types.ModuleType) or not callable(obj):
                continue
            if module != "ovstage" and getattr(obj, "__module__", None) not in (None, module) and not isinstance(obj, type):
                continue  # an import, not part of this module
            if isinstance(obj, type) and not (obj.__module__ or "").startswith("ovstage"):
                continue
            if isinstance(obj, type) and module != "ovstage" and obj.__module__ != module and module != "ovstage._native":
                continue
            out.append((module, name, obj))
    return out


def runtime_members(cls):
    """name -> raw attribute of a class and its ovstage bases (nearest wins)."""
    out = {}
    for k in reversed(cls.__mro__):
        if not (k.__module__ or "").startswith("ovstage"):
            continue
        out.update(vars(k))
    return out


def test_stub_files_are_installed_with_the_package():
    for rel in list(STUBS.values()) + ["py.typed"]:
        assert (PKG / rel).is_file(), rel


def test_all_matches_spec_and_every_name_has_a_stub():
    assert set(ov.__all__) == SPEC_ALL | EXTENSIONS
    for name in EXTENSIONS:
        assert "extension" in (getattr(ov, name).__doc__ or ""), f"{name} must say it is an extension of ours"
    for name in ov.__all__:
        assert hasattr(ov, name), name
        m, node = stub_node("ovstage", name)
        assert node is not None or m in STUB or name in ("instancing", "population"), f"no stub for {name}"
        if name in ("instancing", "population"):
            assert ("ovstage." + name) in STUB


def test_every_public_name_of_the_submodules_has_a_stub():
    for module in ("ovstage.population", "ovstage.instancing", "ovstage.gates", "ovstage._native"):
        mod = MODULES[module]
        for name, obj in vars(mod).items():
            if name.startswith("_") or isinstance(obj, types.ModuleType):
                continue
            if module == "ovstage.population" and name in ("Any", "annotations", "enum", "math", "operator", "threading",
                                                           "PopulationDomain", "OvstageError"):
                continue  # the module's own imports
            if module == "ovstage.instancing" and name in ("Any", "List", "annotations", "OvstageError"):
                continue
            if module == "ovstage.gates" and name in ("contextlib", "annotations"):
                continue
            if module == "ovstage._native" and not isinstance(obj, type):
                continue  # injected namespace values (see __init__.py)
            assert stub_node(module, name)[1] is not None, f"{module}.{name} has no stub"


def check_class(module, name, cls, node):
    members = class_members(module, node)
    if issubclass(cls, enum.Enum):
        want = {t.id: evaluate(n.value, module) for n in node.body if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)}
        assert {k: int(v) for k, v in cls.__members__.items()} == want, name
        return 1
    checked = 0
    # construction
    if is_dataclass_node(node):
        assert_params_equal(f"{module}.{name}()", runtime_params(cls, False), dataclass_params(node, module))
        checked += 1
    else:
        own = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
        ctor = own.get("__init__") or own.get("__new__") or members.get("__init__") or members.get("__new__")
        if ctor is not None:
            assert_params_equal(f"{module}.{name}()", runtime_params(cls, False), stub_params(ctor, module, True))
            checked += 1
    rt = runtime_members(cls)
    for attr, raw in rt.items():
        if attr.startswith("_") and attr not in CHECKED_DUNDERS:
            continue
        if attr in ("__init__", "__new__"):
            continue
        is_prop = isinstance(raw, (property, types.GetSetDescriptorType, types.MemberDescriptorType))
        if not is_prop and not callable(raw) and not isinstance(raw, (classmethod, staticmethod)):
            continue
        if is_prop:
            fields = {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
            fn = members.get(attr)
            assert (fn is not None and "property" in decorators(fn)) or attr in fields, f"{name}.{attr}: no stub"
            continue
        fn = members.get(attr)
        assert fn is not None, f"{module}.{name}.{attr}: no stub"
        decs = decorators(fn)
        if "property" in decs:
            raise AssertionError(f"{name}.{attr}: stub says property, runtime has a method")
        static = isinstance(raw, staticmethod) or "staticmethod" in decs
        klass = isinstance(raw, classmethod) or "classmethod" in decs
        obj = getattr(cls, attr)
        assert_params_equal(f"{module}.{name}.{attr}", runtime_params(obj, not (static or klass)),
                            stub_params(fn, module, not static))
        checked += 1
    # everything the stub promises exists at runtime
    for attr, fn in members.items():
        if not attr.startswith("_") or attr in CHECKED_DUNDERS:
            assert hasattr(cls, attr), f"stub {name}.{attr} is missing at runtime"
    return checked


def test_stub_signatures_agree_with_the_runtime():
    checked = 0
    for module, name, obj in public_callables():
        m, node = stub_node(module, name)
        assert node is not None, f"{module}.{name}: no stub"
        if isinstance(obj, type):
            assert isinstance(node, ast.ClassDef), name
            checked += check_class(m, name, obj, node)
        else:
            assert isinstance(node, ast.FunctionDef), name
            assert_params_equal(f"{module}.{name}", runtime_params(obj, False), stub_params(node, m, False))
            checked += 1
    # the walk really visited the surface (a broken walk must not pass vacuously)
    assert checked > 150, checked


def test_stub_parameter_mismatch_is_detected():
    # The comparison itself can fail: a renamed parameter and a changed default.
    fn = ast.parse("def f(self, timeout: int = 0) -> None: ...").body[0]
    with pytest.raises(AssertionError):
        assert_params_equal("x", runtime_params(ov.Operation.wait, True), stub_params(fn, "ovstage", True))
    fn = ast.parse("def f(self, tmo: int = TIMEOUT_INFINITE) -> None: ...").body[0]
    with pytest.raises(AssertionError):
        assert_params_equal("x", runtime_params(ov.Operation.wait, True), stub_params(fn, "ovstage", True))


# ---- docstrings


def public_objects():
    """(where, object) of every public class, function, method and property."""
    seen = set()
    for module, mod in MODULES.items():
        if mod.__doc__ is None and module != "ovstage._native":
            yield module, mod
        names = ov.__all__ if module == "ovstage" else [n for n in vars(mod) if not n.startswith("_")]
        for name in names:
            obj = getattr(mod, name)
            if isinstance(obj, types.ModuleType) or not (callable(obj) or isinstance(obj, type)):
                continue
            if isinstance(obj, type) and not (obj.__module__ or "").startswith("ovstage"):
                continue
            if not isinstance(obj, type) and module != "ovstage" and getattr(obj, "__module__", None) not in (None, module):
                continue
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            yield f"{module}.{name}", obj
            if not isinstance(obj, type) or issubclass(obj, enum.Enum):
                continue
            for attr, raw in runtime_members(obj).items():
                if attr.startswith("_") and attr not in ("__enter__", "__exit__"):
                    continue
                if isinstance(raw, (types.MemberDescriptorType,)) or not (
                        callable(raw) or isinstance(raw, (property, types.GetSetDescriptorType, classmethod,
                                                          staticmethod))):
                    continue  # data fields (dataclass and slot fields, class constants)
                yield f"{module}.{name}.{attr}", raw


def test_every_public_name_has_a_docstring():
    missing = []
    count = 0
    for where, obj in public_objects():
        count += 1
        target = obj.__func__ if isinstance(obj, (classmethod, staticmethod)) else obj
        doc = target.__doc__
        # A native method's __doc__ starts with its text signature; the rest must be prose.
        if doc and doc.startswith(where.rsplit(".", 1)[-1] + "("):
            doc = doc.split("\n--\n\n", 1)[-1]
        if not doc or not doc.strip():
            missing.append(where)
    assert not missing, "missing docstrings: " + ", ".join(missing)
    assert count > 200, count


# ---- spec section 17 group A3: signatures of the public callables, frozen from the spec

T = "TIMEOUT_INFINITE"
SPEC_SIGNATURES = {
    # section 5
    "Operation": "(stage, status, op_id, keepalive=None)",
    "Operation.wait": f"(timeout={T})",
    "Operation.error_message": "()",
    "CloneOperation.wait": f"(timeout={T})",
    "CloneOperation.result": f"(timeout={T})",
    # section 6
    "Stage": "(name=None, config=None)",
    "Stage.get_version": "()",
    "Stage.destroy": "()",
    "Stage.wait_op": f"(op_id, timeout={T})",
    "Stage.wait_op_raw": f"(op_id, timeout={T})",
    "Stage.release_op": "(op_id)",
    "Stage.query": "(filter=None, attrs=None)",
    "Stage.query_from_path_list": "(path_list)",
    "Stage.fetch_query_result": f"(query, timeout={T})",
    "Stage.release_query": "(query)",
    "Stage.read_attributes": "(query, attrs, ordinal_range, *, placement=None)",
    "Stage.fetch_read_next": f"(read, timeout={T})",
    "Stage.release_group": "(group)",
    "Stage.release_read": "(read)",
    "Stage.write_attribute": "(query, attribute, ordinal, tensors, *, is_array, prim_mode=PrimMode.UPSERT, semantic=0, "
                             "attribute_mode=AttributeMode.REJECT, index_map=None, mask=None, count=None, "
                             "cuda_event=None, cuda_stream=None, placement=None)",
    "Stage.write_attributes": "(query, writes, ordinal, *, prim_mode=PrimMode.UPSERT, placement=None)",
    "Stage.delete_attributes": "(query, attributes, ordinal)",
    "Stage.map_attribute": "(query, attribute, ordinal, *, prim_mode=PrimMode.UPSERT, dtype=None, semantic=0, "
                           "element_sizes=None, attribute_mode=AttributeMode.REJECT, placement=None)",
    "Stage.fetch_map_next": f"(mapping, timeout={T})",
    "Stage.unmap_group": "(mapping, group, cuda_event=None, cuda_stream=None)",
    "Stage.unmap_attribute": "(mapping, cuda_event=None, cuda_stream=None)",
    "Stage.advance_write_floor": "(ordinal, scope=Scope.ALL, attributes=None)",
    "Stage.get_attribute_write_floor": "(attribute=None)",
    "Stage.get_oldest_preserved_ordinal": "()",
    "Stage.fetch_ordinal": f"(ordinal_query, timeout={T})",
    "Stage.release_ordinal_query": "(ordinal_query)",
    "Stage.clone": "(source_path, target_paths, ordinal)",
    "Stage.clone_async": "(source_path, target_paths, ordinal)",
    "Stage.fetch_clone_result": f"(op_or_id, timeout={T})",
    "Stage.get_hierarchy": "(path_list, ordinal, relation)",
    "Stage.get_hierarchy_async": "(path_list, ordinal, relation)",
    "Stage.fetch_hierarchy_result": "(hierarchy)",
    "Stage.release_hierarchy": "(hierarchy)",
    "Stage.get_hierarchy_computation_models": "()",
    "Stage.compute_hierarchy": "(input_ordinal, output_ordinal, model=HierarchyComputationModel.DEFAULT_CPU)",
    "Stage.compute_hierarchy_async": "(input_ordinal, output_ordinal, model=HierarchyComputationModel.DEFAULT_CPU)",
    "Stage.get_path_dictionary": "()",
    # section 7
    "Query.wait": f"(timeout={T})", "Query.result": f"(timeout={T})", "Query.release": "()",
    "Read.wait": f"(timeout={T})", "Read.fetch_next": f"(timeout={T})", "Read.groups": f"(timeout={T})",
    "Read.release": "()",
    "Map.wait": f"(timeout={T})", "Map.fetch_next": f"(timeout={T})", "Map.groups": f"(timeout={T})",
    "Map.unmap_group": "(group, cuda_event=None, cuda_stream=None)", "Map.unmap": "(cuda_event=None, cuda_stream=None)",
    "OrdinalQuery.wait": f"(timeout={T})", "OrdinalQuery.fetch": f"(timeout={T})", "OrdinalQuery.release": "()",
    "Hierarchy.wait": f"(timeout={T})", "Hierarchy.result": "()", "Hierarchy.release": "()",
    # section 8
    "ReadGroup.prim_index": "(local)", "ReadGroup.data_row_index": "(local)", "ReadGroup.tensor": "(index)",
    "ReadGroup.array": "(index)", "ReadGroup.dlpack": "(index, *, readonly=True)", "ReadGroup.release": "()",
    "MapGroup.prim_index": "(local)", "MapGroup.data_row_index": "(local)", "MapGroup.tensor": "(index)",
    "MapGroup.array": "(index)", "MapGroup.dlpack": "(index, *, readonly=False)",
    # sections 9, 10
    "WriteDesc": "(attribute, tensors, is_array, index_map=None, mask=None, count=None, cuda_event=None, "
                 "cuda_stream=None, semantic=AttributeSemantic.NONE, attribute_mode=AttributeMode.REJECT)",
    "OrdinalRange": "(end_ordinal, start_ordinal=None)",
    "OrdinalRange.latest": "(end_ordinal)",
    "OrdinalRange.between": "(start_ordinal, end_ordinal)",
    "Predicate": "(attribute, op, values=())",
    "Filter": "(predicates)",
    "StageConfig": "(runtime_default_hierarchy_computation_model=None, runtime_default_ordinal_admission_policy=None)",
    "Placement": "(device_type=0, device_id=0, stream=0, availability_event=0)",
    "Placement.from_dlpack_device": "(obj, *, stream=0, availability_event=0)",
    "QueryResult": "(attributes, total_prim_count, all_handle)",
    "CloneResult": "(prims_cloned, target_count, source_prim_count, ordinal)",
    "HierarchyItem": "(status, paths)",
    "HierarchyResult": "(ordinal, items)",
    "HierarchyResult.item_paths": "(index)",
    "HierarchyComputationModelDesc": "(model_id, name, description)",
    "BuildInfo": "(struct_size, build_number, build_string, git_branch, git_hash, build_location)",
    # section 4
    "OvstageError": "(code, message='')",
    "OvxError": "(code, message='')",
    # section 11
    "PathDictionary": "(stage)",
    "PathDictionary.destroy": "()",
    "PathDictionary.intern_token": "(string)",
    "PathDictionary.token_to_string": "(token)",
    "PathDictionary.intern_path": "(path)",
    "PathDictionary.path_to_string": "(primpath)",
    "PathDictionary.create_path_list": "(primpaths)",
    "PathDictionary.create_path_list_from_strings": "(paths)",
    "PathDictionary.add_path_list_reference": "(path_list)",
    "PathDictionary.destroy_path_list": "(path_list)",
    "PathDictionary.path_list_count": "(path_list)",
    "PathDictionary.get_paths": "(path_list)",
    "PathDictionary.get_path_strings": "(path_list)",
    "PathList.release": "()",
    # section 12
    "DLDataType": "(code=0, bits=0, lanes=0)",
    "DLTensor.from_dlpack": "(obj, stream=None)",
    "make_dltensor": "(array, *, dtype=None, shape=None, ndim=None, strides=None, device_type=DLDeviceType.kDLCPU, "
                     "device_id=0)",
    "numpy_to_dldatatype": "(np_dtype, lanes=1)",
    "dltensor_to_numpy": "(tensor, *, readonly=False)",
    "typed_tensor_to_write": "(source)",
    "ManagedDLTensor": "(dl_tensor, manager_ctx, deleter_callback=None, readonly=True)",
    "ManagedDLTensor.numpy": "()",
    "ManagedDLTensor.__dlpack__": "(*, stream=None, max_version=None, dl_device=None, copy=None)",
    "ManagedDLTensor.__dlpack_device__": "()",
    # section 13
    "set_log_callback": "(callback, severity=None, channel_filter=None)",
    "flush_log": f"(timeout={T})",
    "get_build_info": "()",
    "library_version": "()",
    # section 14
    "instancing.available": "()",
    "instancing.get_instance_roots": "(stage, prototype_root)",
    "instancing.get_prototype_root": "(stage, instance_root)",
    "instancing.get_prototype_roots": "(stage)",
    "population.available": "()",
    "population.descs_available": "()",
    "population.export_available": "()",
    "population.last_error": "()",
    "population.is_default_time": "(time)",
    "population.open_usd_with_desc": "(stage, path, ordinal, time, descs)",
    "population.open_usd_from_string_with_desc": "(stage, usda, ordinal, time, descs)",
    "population.repopulate_usd_with_desc": "(stage, ordinal, time, descs)",
    "population.add_usd_reference": "(stage, ref_file_path, target_path)",
    "population.add_usd_reference_from_string": "(stage, ref_str, target_path)",
    "population.remove_usd": "(stage, handle)",
    "population.reset_usd": "(stage)",
    "population.apply_usd_changes": "(stage, ordinal)",
    "population.register_usd_schemas": "(paths)",
    "population.create_export_destination": "(stage, identifier, mode=population.ExportDestinationMode.EMPTY)",
    "gates.available": "()",
}

# Our extensions (not in the spec), frozen the same way.
EXTENSION_SIGNATURES = {
    "Stage.write_batch": "(ordinal, *, prim_mode=PrimMode.UPSERT)",
    "WriteBatch.set": "(prim, attribute, value, *, dtype=None)",
    "WriteBatch.submit": "()",
}


def resolve(dotted):
    obj = ov
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", sorted(SPEC_SIGNATURES) + sorted(EXTENSION_SIGNATURES))
def test_signature_matches_spec(name):
    obj = resolve(name)
    fn = ast.parse(f"def f{SPEC_SIGNATURES.get(name) or EXTENSION_SIGNATURES[name]}: pass").body[0]
    want = stub_params(fn, "ovstage", False)
    owner = resolve(name.rsplit(".", 1)[0]) if "." in name else None
    raw = inspect.getattr_static(owner, name.rsplit(".", 1)[1]) if isinstance(owner, type) else None
    # Methods looked up on the class still carry `self`; class- and static methods do not.
    class_level = (classmethod, staticmethod, types.ClassMethodDescriptorType)
    drop = isinstance(owner, type) and not isinstance(raw, class_level)
    assert_params_equal(name, runtime_params(obj, drop), want)


def test_enum_defaults_are_members_not_ints():
    # The spec writes enum defaults as members; None or a bare 0 would not be one.
    p = inspect.signature(ov.Stage.write_attribute).parameters
    assert type(p["prim_mode"].default) is ov.PrimMode and p["prim_mode"].default is ov.PrimMode.UPSERT
    assert type(p["attribute_mode"].default) is ov.AttributeMode
    assert type(p["semantic"].default) is int and p["semantic"].default == 0
    assert inspect.signature(ov.Stage.advance_write_floor).parameters["scope"].default is ov.Scope.ALL
    assert inspect.signature(ov.Operation.wait).parameters["timeout"].default == ov.TIMEOUT_INFINITE
