"""USD population and export: not supported by this library.

Availability probes return ``False``; every function that would touch USD
raises ``OvstageError(NOT_SUPPORTED)`` at the call (the ``_async`` forms too).
"""

from __future__ import annotations

import enum
import math
import operator
import threading
from typing import Any

from ._enums import PopulationDomain
from ._errors import OvstageError

DEFAULT_TIME = float("nan")
_NS = "USD population is not part of this library (ovstage-rs has no USD support)"
_last = threading.local()


class ExportDestinationMode(enum.IntEnum):
    """How an export destination is opened."""

    EMPTY = 0
    OPEN_EXISTING = 1


def available() -> bool:
    """Whether USD population is available: ``False``."""
    return False


def descs_available() -> bool:
    """Whether descriptor-driven population is available: ``False``."""
    return False


def export_available() -> bool:
    """Whether USD export is available: ``False``."""
    return False


def last_error() -> str:
    """Text of the last population error on this thread (``""`` if none)."""
    return getattr(_last, "text", "")


def is_default_time(time: float) -> bool:
    """Whether ``time`` is ``DEFAULT_TIME`` (NaN)."""
    return math.isnan(time)


def _ns() -> None:
    _last.text = _NS
    raise OvstageError(6, _NS)


def _make(name: str, params: str):
    src = f"def {name}({params}):\n    '''Not supported: raises OvstageError(NOT_SUPPORTED).'''\n    _ns()\n"
    ns: dict = {"_ns": _ns, "DEFAULT_TIME": DEFAULT_TIME, "PopulationDomain": PopulationDomain,
                "ExportDestinationMode": ExportDestinationMode}
    exec(src, ns)  # noqa: S102 - builds exact signatures
    return ns[name]


_EXPORT_KW = ("*, since_ordinal=0, selection=0, layer_mode=0, transform_policy=0, unknown_metadata_policy=0, "
              "source_api_schema_policy=0, projection=0, prim_predicate=None, property_predicate=None, "
              "prim_rules=None, api_schema_rules=None, attribute_rules=None, property_rules=None, metadata_rules=None")
_TYPED_KW = ("*, prim_predicate=None, property_predicate=None, include_custom_namespaces=None, transform_policy=0, "
             "unknown_metadata_policy=0")
_SIGS = {
    "open_usd": "stage, path, ordinal, time=DEFAULT_TIME, domains=PopulationDomain.RENDERING, *, time_code=None",
    "open_usd_from_string": "stage, usda, ordinal, time=DEFAULT_TIME, domains=PopulationDomain.RENDERING, *, time_code=None",
    "open_usd_with_desc": "stage, path, ordinal, time, descs",
    "open_usd_from_string_with_desc": "stage, usda, ordinal, time, descs",
    "repopulate_usd_with_desc": "stage, ordinal, time, descs",
    "add_usd_reference": "stage, ref_file_path, target_path",
    "add_usd_reference_from_string": "stage, ref_str, target_path",
    "remove_usd": "stage, handle",
    "reset_usd": "stage",
    "update_from_usd_time": "stage, ordinal, time=DEFAULT_TIME, *, time_code=None",
    "apply_usd_changes": "stage, ordinal",
    "create_export_destination": "stage, identifier, mode=ExportDestinationMode.EMPTY",
    "export_to_usd_file": "stage, identifier, ordinal, " + _EXPORT_KW,
    "export_to_usd_layer": "stage, usd_layer, ordinal, " + _EXPORT_KW,
    "export_to_usd_stage": "stage, usd_stage, ordinal, " + _EXPORT_KW,
    "export_to_destination": "stage, destination, ordinal, " + _EXPORT_KW,
    "export_typed_hierarchy_to_usd_file": "stage, identifier, root_path, ordinal, " + _TYPED_KW,
    "export_typed_hierarchy_to_usd_layer": "stage, usd_layer, root_path, ordinal, " + _TYPED_KW,
}
for _n, _p in _SIGS.items():
    globals()[_n] = _make(_n, _p)
    globals()[_n + "_async"] = _make(_n + "_async", _p)


def register_usd_schemas(paths: Any) -> None:
    """Registers USD schema paths: an empty iterable does nothing; otherwise NOT_SUPPORTED."""
    if not isinstance(paths, (str, bytes)):
        paths = list(paths)
        if not paths:
            return None
    _ns()


class SourceApiSchemaPolicy(enum.IntEnum):
    """Which applied API schemas an export writes."""

    EXPLICIT_ONLY = 0
    APPLY_RECORDED = 1


class ExportProjection(enum.IntEnum):
    """How properties are projected on export."""

    EXPLICIT_RULES = 0
    SCHEMA_DECLARED = 1


class PrimPredicateKind(enum.IntEnum):
    """Kinds of prim predicates."""

    NONE = 0
    ALL = 1
    AND = 2
    OR = 3
    NOT = 4
    HAS_PARENT = 5
    HAS_ANCESTOR = 6
    HAS_PROPERTY = 7
    HAS_TYPE = 8
    IS_A_TYPE = 9
    HAS_SCHEMA = 10
    HAS_APPLIED_SCHEMA = 11
    HAS_APPLIED_SCHEMA_IN_NAMESPACE = 12
    HAS_PATH = 13
    IS_UNDER_PATH = 14
    HAS_KIND = 15
    HAS_PURPOSE = 16
    HAS_METADATA = 17


class PropertyPredicateKind(enum.IntEnum):
    """Kinds of property predicates."""

    NONE = 0
    ALL = 1
    AND = 2
    OR = 3
    NOT = 4
    DECLARED_BY_SCHEMA = 5
    HAS_NAME = 6
    IN_NAMESPACE = 7
    HAS_METADATA = 8
    IS_ATTRIBUTE = 9
    IS_RELATIONSHIP = 10
    IS_CUSTOM = 11
    IS_AUTHORED = 12


# ---- selector value classes (spec 14.1.2): immutable, validated at
# construction, usable to build descs even though population itself is not
# supported here.


def _texts(values: Any, what: str) -> tuple:
    """A tuple of non-empty strings (a bare ``str`` is not a sequence here)."""
    if isinstance(values, str):
        raise TypeError(f"{what} must be a sequence of str, not a str")
    try:
        items = tuple(values)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of str, got {type(values).__name__}") from None
    for v in items:
        if not isinstance(v, str):
            raise TypeError(f"{what} entries must be str, got {type(v).__name__}")
        if not v:
            raise ValueError(f"{what} entries must not be empty")
    return items


class _Predicate:
    """Shared shape of prim and property predicates: a kind and its one
    populated slot (strings, subpredicates or a nested predicate)."""

    __slots__ = ("kind", "strings", "subpredicates", "nested")
    _KIND: Any = None
    _STRINGS: frozenset = frozenset()
    _MANY: frozenset = frozenset()  # combinators over one or more of the same class
    _ONE: frozenset = frozenset()  # exactly one of the same class
    _NESTED: dict = {}  # kind -> class of the nested predicate

    def __init__(self, kind: Any, strings: Any = (), subpredicates: Any = (), nested: Any = None) -> None:
        try:
            kind = self._KIND(kind)
        except (TypeError, ValueError):
            raise ValueError(f"kind must be a {self._KIND.__name__} value, got {kind!r}") from None
        cls = type(self).__name__
        strings = () if strings is None else strings
        subs = () if subpredicates is None else tuple(subpredicates)
        if kind in self._STRINGS:
            if not isinstance(strings, str) and len(tuple(strings)) == 0:
                raise ValueError(f"{cls}.{kind.name} needs at least one value")
            strings = _texts(strings, f"{cls}.{kind.name} values")
        elif strings not in ((), None) and tuple(strings):
            raise TypeError(f"{cls}.{kind.name} takes no strings")
        else:
            strings = ()
        if kind in self._MANY or kind in self._ONE:
            if not subs:
                raise ValueError(f"{cls}.{kind.name} needs a subpredicate")
            if kind in self._ONE and len(subs) != 1:
                raise ValueError(f"{cls}.{kind.name} takes exactly one subpredicate, got {len(subs)}")
            for sub in subs:
                if not isinstance(sub, type(self)):
                    raise TypeError(f"{cls}.{kind.name} subpredicates must be {cls}, got {type(sub).__name__}")
        elif subs:
            raise TypeError(f"{cls}.{kind.name} takes no subpredicates")
        want = self._NESTED.get(kind)
        if want is not None:
            if not isinstance(nested, want()):
                raise TypeError(f"{cls}.{kind.name} needs a nested {want().__name__}, got {type(nested).__name__}")
        elif nested is not None:
            raise TypeError(f"{cls}.{kind.name} takes no nested predicate")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "strings", strings)
        object.__setattr__(self, "subpredicates", subs)
        object.__setattr__(self, "nested", nested)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _key(self) -> tuple:
        return (type(self), self.kind, self.strings, self.subpredicates, self.nested)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _Predicate) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        args = [repr(s) for s in self.strings] + [repr(p) for p in self.subpredicates]
        if self.nested is not None:
            args.append(repr(self.nested))
        return f"{type(self).__name__}.{self.kind.name}({', '.join(args)})"


class PropertyPredicate(_Predicate):
    """Which properties a population selector takes (immutable value)."""

    __slots__ = ()
    _KIND = PropertyPredicateKind
    _STRINGS = frozenset({PropertyPredicateKind.DECLARED_BY_SCHEMA, PropertyPredicateKind.HAS_NAME,
                          PropertyPredicateKind.IN_NAMESPACE, PropertyPredicateKind.HAS_METADATA})
    _MANY = frozenset({PropertyPredicateKind.AND, PropertyPredicateKind.OR})
    _ONE = frozenset({PropertyPredicateKind.NOT})

    @staticmethod
    def none() -> "PropertyPredicate":
        """Matches no property."""
        return PropertyPredicate(PropertyPredicateKind.NONE)

    @staticmethod
    def all() -> "PropertyPredicate":
        """Matches every property."""
        return PropertyPredicate(PropertyPredicateKind.ALL)

    @staticmethod
    def and_(*subs: "PropertyPredicate") -> "PropertyPredicate":
        """Matches what every subpredicate matches."""
        return PropertyPredicate(PropertyPredicateKind.AND, subpredicates=subs)

    @staticmethod
    def or_(*subs: "PropertyPredicate") -> "PropertyPredicate":
        """Matches what any subpredicate matches."""
        return PropertyPredicate(PropertyPredicateKind.OR, subpredicates=subs)

    @staticmethod
    def not_(sub: "PropertyPredicate") -> "PropertyPredicate":
        """Matches what ``sub`` does not."""
        return PropertyPredicate(PropertyPredicateKind.NOT, subpredicates=(sub,))

    @staticmethod
    def declared_by_schema(*names: str) -> "PropertyPredicate":
        """Properties declared by one of the schemas."""
        return PropertyPredicate(PropertyPredicateKind.DECLARED_BY_SCHEMA, strings=names)

    @staticmethod
    def has_name(*names: str) -> "PropertyPredicate":
        """Properties with one of the names."""
        return PropertyPredicate(PropertyPredicateKind.HAS_NAME, strings=names)

    @staticmethod
    def in_namespace(*namespaces: str) -> "PropertyPredicate":
        """Properties in one of the namespaces."""
        return PropertyPredicate(PropertyPredicateKind.IN_NAMESPACE, strings=namespaces)

    @staticmethod
    def has_metadata(*paths: str) -> "PropertyPredicate":
        """Properties carrying one of the metadata entries."""
        return PropertyPredicate(PropertyPredicateKind.HAS_METADATA, strings=paths)

    @staticmethod
    def is_attribute() -> "PropertyPredicate":
        """Attributes."""
        return PropertyPredicate(PropertyPredicateKind.IS_ATTRIBUTE)

    @staticmethod
    def is_relationship() -> "PropertyPredicate":
        """Relationships."""
        return PropertyPredicate(PropertyPredicateKind.IS_RELATIONSHIP)

    @staticmethod
    def is_custom() -> "PropertyPredicate":
        """Custom properties."""
        return PropertyPredicate(PropertyPredicateKind.IS_CUSTOM)

    @staticmethod
    def is_authored() -> "PropertyPredicate":
        """Authored properties."""
        return PropertyPredicate(PropertyPredicateKind.IS_AUTHORED)


class PrimPredicate(_Predicate):
    """Which prims a population selector takes (immutable value)."""

    __slots__ = ()
    _KIND = PrimPredicateKind
    _STRINGS = frozenset({
        PrimPredicateKind.HAS_TYPE, PrimPredicateKind.IS_A_TYPE, PrimPredicateKind.HAS_SCHEMA,
        PrimPredicateKind.HAS_APPLIED_SCHEMA, PrimPredicateKind.HAS_APPLIED_SCHEMA_IN_NAMESPACE,
        PrimPredicateKind.HAS_PATH, PrimPredicateKind.IS_UNDER_PATH, PrimPredicateKind.HAS_KIND,
        PrimPredicateKind.HAS_PURPOSE, PrimPredicateKind.HAS_METADATA})
    _MANY = frozenset({PrimPredicateKind.AND, PrimPredicateKind.OR})
    _ONE = frozenset({PrimPredicateKind.NOT, PrimPredicateKind.HAS_PARENT, PrimPredicateKind.HAS_ANCESTOR})
    _NESTED = {PrimPredicateKind.HAS_PROPERTY: lambda: PropertyPredicate}

    @staticmethod
    def none() -> "PrimPredicate":
        """Matches no prim."""
        return PrimPredicate(PrimPredicateKind.NONE)

    @staticmethod
    def all() -> "PrimPredicate":
        """Matches every prim."""
        return PrimPredicate(PrimPredicateKind.ALL)

    @staticmethod
    def and_(*subs: "PrimPredicate") -> "PrimPredicate":
        """Matches what every subpredicate matches."""
        return PrimPredicate(PrimPredicateKind.AND, subpredicates=subs)

    @staticmethod
    def or_(*subs: "PrimPredicate") -> "PrimPredicate":
        """Matches what any subpredicate matches."""
        return PrimPredicate(PrimPredicateKind.OR, subpredicates=subs)

    @staticmethod
    def not_(sub: "PrimPredicate") -> "PrimPredicate":
        """Matches what ``sub`` does not."""
        return PrimPredicate(PrimPredicateKind.NOT, subpredicates=(sub,))

    @staticmethod
    def has_parent(sub: "PrimPredicate") -> "PrimPredicate":
        """Prims whose parent ``sub`` matches."""
        return PrimPredicate(PrimPredicateKind.HAS_PARENT, subpredicates=(sub,))

    @staticmethod
    def has_ancestor(sub: "PrimPredicate") -> "PrimPredicate":
        """Prims with an ancestor ``sub`` matches."""
        return PrimPredicate(PrimPredicateKind.HAS_ANCESTOR, subpredicates=(sub,))

    @staticmethod
    def has_property(property_predicate: PropertyPredicate) -> "PrimPredicate":
        """Prims with a property ``property_predicate`` matches."""
        return PrimPredicate(PrimPredicateKind.HAS_PROPERTY, nested=property_predicate)

    @staticmethod
    def has_type(*names: str) -> "PrimPredicate":
        """Prims of one of the types."""
        return PrimPredicate(PrimPredicateKind.HAS_TYPE, strings=names)

    @staticmethod
    def is_a_type(*names: str) -> "PrimPredicate":
        """Prims of one of the types or a type derived from one."""
        return PrimPredicate(PrimPredicateKind.IS_A_TYPE, strings=names)

    @staticmethod
    def has_schema(*names: str) -> "PrimPredicate":
        """Prims with one of the schemas."""
        return PrimPredicate(PrimPredicateKind.HAS_SCHEMA, strings=names)

    @staticmethod
    def has_applied_schema(*names: str) -> "PrimPredicate":
        """Prims with one of the applied schemas."""
        return PrimPredicate(PrimPredicateKind.HAS_APPLIED_SCHEMA, strings=names)

    @staticmethod
    def has_applied_schema_in_namespace(*names: str) -> "PrimPredicate":
        """Prims with an applied schema in one of the namespaces."""
        return PrimPredicate(PrimPredicateKind.HAS_APPLIED_SCHEMA_IN_NAMESPACE, strings=names)

    @staticmethod
    def has_path(*paths: str) -> "PrimPredicate":
        """Prims at one of the paths."""
        return PrimPredicate(PrimPredicateKind.HAS_PATH, strings=paths)

    @staticmethod
    def is_under_path(*paths: str) -> "PrimPredicate":
        """Prims under one of the paths."""
        return PrimPredicate(PrimPredicateKind.IS_UNDER_PATH, strings=paths)

    @staticmethod
    def has_kind(*kinds: str) -> "PrimPredicate":
        """Prims of one of the kinds."""
        return PrimPredicate(PrimPredicateKind.HAS_KIND, strings=kinds)

    @staticmethod
    def has_metadata(*paths: str) -> "PrimPredicate":
        """Prims carrying one of the metadata entries."""
        return PrimPredicate(PrimPredicateKind.HAS_METADATA, strings=paths)

    @staticmethod
    def has_purpose(*purposes: str) -> "PrimPredicate":
        """Prims with one of the purposes."""
        return PrimPredicate(PrimPredicateKind.HAS_PURPOSE, strings=purposes)


class Selector:
    """One population selector: prim and property predicates and metadata paths (immutable value)."""

    __slots__ = ("prim_predicate", "property_predicate", "prim_metadata_paths", "property_metadata_paths")

    def __init__(self, prim_predicate: Any = None, property_predicate: Any = None, prim_metadata_paths: Any = (),
                 property_metadata_paths: Any = ()) -> None:
        prim = PrimPredicate.none() if prim_predicate is None else prim_predicate
        prop = PropertyPredicate.none() if property_predicate is None else property_predicate
        if not isinstance(prim, PrimPredicate):
            raise TypeError(f"prim_predicate must be a PrimPredicate, got {type(prim).__name__}")
        if not isinstance(prop, PropertyPredicate):
            raise TypeError(f"property_predicate must be a PropertyPredicate, got {type(prop).__name__}")
        object.__setattr__(self, "prim_predicate", prim)
        object.__setattr__(self, "property_predicate", prop)
        object.__setattr__(self, "prim_metadata_paths", _texts(prim_metadata_paths, "prim_metadata_paths"))
        object.__setattr__(self, "property_metadata_paths",
                           _texts(property_metadata_paths, "property_metadata_paths"))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Selector is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Selector is immutable")

    def _key(self) -> tuple:
        return (self.prim_predicate, self.property_predicate, self.prim_metadata_paths, self.property_metadata_paths)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Selector) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Selector(prim_predicate={self.prim_predicate!r}, property_predicate={self.property_predicate!r}, "
                f"prim_metadata_paths={self.prim_metadata_paths!r}, "
                f"property_metadata_paths={self.property_metadata_paths!r})")


class Desc:
    """A population description: domains, selectors and stage metadata paths (immutable value)."""

    __slots__ = ("domains", "selectors", "stage_metadata_paths")

    def __init__(self, domains: int = PopulationDomain.NONE, selectors: Any = (),
                 stage_metadata_paths: Any = ()) -> None:
        if isinstance(domains, (bool, float, str)) or not hasattr(domains, "__index__"):
            raise TypeError(f"domains must be an int, got {type(domains).__name__}")
        d = operator.index(domains)
        if not 0 <= d < 1 << 32:
            raise ValueError(f"domains must fit in 32 bits, got {d}")
        if isinstance(selectors, Selector):
            raise TypeError("selectors must be a sequence of Selector, not a Selector")
        sels = tuple(selectors)
        for sel in sels:
            if not isinstance(sel, Selector):
                raise TypeError(f"selectors entries must be Selector, got {type(sel).__name__}")
        object.__setattr__(self, "domains", int(d))
        object.__setattr__(self, "selectors", sels)
        object.__setattr__(self, "stage_metadata_paths", _texts(stage_metadata_paths, "stage_metadata_paths"))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Desc is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Desc is immutable")

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Desc) and (self.domains, self.selectors, self.stage_metadata_paths) == (
            other.domains, other.selectors, other.stage_metadata_paths)

    def __hash__(self) -> int:
        return hash((self.domains, self.selectors, self.stage_metadata_paths))

    def __repr__(self) -> str:
        return (f"Desc(domains={self.domains}, selectors={self.selectors!r}, "
                f"stage_metadata_paths={self.stage_metadata_paths!r})")


class Operation:
    """A population operation (never produced by this library)."""

    def wait(self, timeout: int = (1 << 64) - 1):
        """Not supported."""
        _ns()


class ExportOperation(Operation):
    """An export operation (never produced by this library)."""


class DestinationOperation(Operation):
    """A destination operation (never produced by this library)."""


class DestinationCreateOperation(Operation):
    """A destination-create operation (never produced by this library)."""


class ExportDestination:
    """An export destination (cannot be created: NOT_SUPPORTED)."""

    @classmethod
    def create(cls, stage, identifier, mode=ExportDestinationMode.EMPTY):
        """Not supported."""
        _ns()

    @classmethod
    def create_async(cls, stage, identifier, mode=ExportDestinationMode.EMPTY):
        """Not supported."""
        _ns()


_PFX = "OVSTAGE_POPULATION_EXPORT_"
for _k, _v in {
    "SELECTION_EXPLICIT_PREDICATE": 0, "SELECTION_CHANGED_PROPERTIES_SINCE_ORDINAL": 1, "LAYER_MODE_OVER": 0,
    "LAYER_MODE_DEF": 1, "DESTINATION_EMPTY": 0, "DESTINATION_OPEN_EXISTING": 1, "PATH_MATCH_EXACT": 0,
    "PATH_MATCH_PREFIX": 1, "NAME_MATCH_EXACT": 0, "NAME_MATCH_GLOB": 1, "TRANSFORM_USD_XFORM_OP": 0,
    "TRANSFORM_NONE": 1, "TRANSFORM_USD_MATRIX_OP": 2, "UNKNOWN_METADATA_DROP": 0, "UNKNOWN_METADATA_PRESERVE": 1,
    "UNKNOWN_METADATA_FAIL": 2, "SOURCE_API_SCHEMAS_EXPLICIT_ONLY": 0, "SOURCE_API_SCHEMAS_APPLY_RECORDED": 1,
    "PROJECTION_EXPLICIT_RULES": 0, "PROJECTION_SCHEMA_DECLARED": 1,
    "UNKNOWN_APPLIED_API_SCHEMAS_CUSTOM_DATA_KEY": "ovpopulation:unknownAppliedAPISchemas", "RULE_NONE": 0,
    "RULE_EXPORT_DEFAULT_VALUE": 1, "RULE_DERIVED_ALLOWED": 2, "RULE_INFER_CUSTOM_TYPE": 8, "RULE_REQUIRED": 16,
    "PROPERTY_RELATIONSHIP": 1, "PROPERTY_CONNECTION": 2, "PROPERTY_MATERIAL_BINDING": 3, "METADATA_PRIM": 0,
    "METADATA_LAYER_CUSTOM_DATA": 1, "METADATA_REFERENCES": 2, "METADATA_LAYER_STANDARD": 3,
}.items():
    globals()[_PFX + _k] = _v
