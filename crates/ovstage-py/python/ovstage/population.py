"""USD population and export: not supported by this library.

Availability probes return ``False``; every function that would touch USD
raises ``OvstageError(NOT_SUPPORTED)`` at the call (the ``_async`` forms too).
"""

from __future__ import annotations

import enum
import math
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
