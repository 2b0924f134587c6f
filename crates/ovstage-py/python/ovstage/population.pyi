# Type stubs of `ovstage.population` (USD population and export; NOT_SUPPORTED in this library).
import enum
from typing import Any, Optional

from . import PopulationDomain

DEFAULT_TIME: float
OVSTAGE_POPULATION_EXPORT_DESTINATION_EMPTY: int
OVSTAGE_POPULATION_EXPORT_DESTINATION_OPEN_EXISTING: int
OVSTAGE_POPULATION_EXPORT_LAYER_MODE_DEF: int
OVSTAGE_POPULATION_EXPORT_LAYER_MODE_OVER: int
OVSTAGE_POPULATION_EXPORT_METADATA_LAYER_CUSTOM_DATA: int
OVSTAGE_POPULATION_EXPORT_METADATA_LAYER_STANDARD: int
OVSTAGE_POPULATION_EXPORT_METADATA_PRIM: int
OVSTAGE_POPULATION_EXPORT_METADATA_REFERENCES: int
OVSTAGE_POPULATION_EXPORT_NAME_MATCH_EXACT: int
OVSTAGE_POPULATION_EXPORT_NAME_MATCH_GLOB: int
OVSTAGE_POPULATION_EXPORT_PATH_MATCH_EXACT: int
OVSTAGE_POPULATION_EXPORT_PATH_MATCH_PREFIX: int
OVSTAGE_POPULATION_EXPORT_PROJECTION_EXPLICIT_RULES: int
OVSTAGE_POPULATION_EXPORT_PROJECTION_SCHEMA_DECLARED: int
OVSTAGE_POPULATION_EXPORT_PROPERTY_CONNECTION: int
OVSTAGE_POPULATION_EXPORT_PROPERTY_MATERIAL_BINDING: int
OVSTAGE_POPULATION_EXPORT_PROPERTY_RELATIONSHIP: int
OVSTAGE_POPULATION_EXPORT_RULE_DERIVED_ALLOWED: int
OVSTAGE_POPULATION_EXPORT_RULE_EXPORT_DEFAULT_VALUE: int
OVSTAGE_POPULATION_EXPORT_RULE_INFER_CUSTOM_TYPE: int
OVSTAGE_POPULATION_EXPORT_RULE_NONE: int
OVSTAGE_POPULATION_EXPORT_RULE_REQUIRED: int
OVSTAGE_POPULATION_EXPORT_SELECTION_CHANGED_PROPERTIES_SINCE_ORDINAL: int
OVSTAGE_POPULATION_EXPORT_SELECTION_EXPLICIT_PREDICATE: int
OVSTAGE_POPULATION_EXPORT_SOURCE_API_SCHEMAS_APPLY_RECORDED: int
OVSTAGE_POPULATION_EXPORT_SOURCE_API_SCHEMAS_EXPLICIT_ONLY: int
OVSTAGE_POPULATION_EXPORT_TRANSFORM_NONE: int
OVSTAGE_POPULATION_EXPORT_TRANSFORM_USD_MATRIX_OP: int
OVSTAGE_POPULATION_EXPORT_TRANSFORM_USD_XFORM_OP: int
OVSTAGE_POPULATION_EXPORT_UNKNOWN_APPLIED_API_SCHEMAS_CUSTOM_DATA_KEY: str
OVSTAGE_POPULATION_EXPORT_UNKNOWN_METADATA_DROP: int
OVSTAGE_POPULATION_EXPORT_UNKNOWN_METADATA_FAIL: int
OVSTAGE_POPULATION_EXPORT_UNKNOWN_METADATA_PRESERVE: int

def available() -> bool: ...
def descs_available() -> bool: ...
def export_available() -> bool: ...
def is_default_time(time: float) -> bool: ...
def last_error() -> str: ...
def register_usd_schemas(paths: Any) -> None: ...
def add_usd_reference(stage: Any, ref_file_path: str, target_path: str) -> Any: ...
def add_usd_reference_async(stage: Any, ref_file_path: str, target_path: str) -> Any: ...
def add_usd_reference_from_string(stage: Any, ref_str: str, target_path: str) -> Any: ...
def add_usd_reference_from_string_async(stage: Any, ref_str: str, target_path: str) -> Any: ...
def apply_usd_changes(stage: Any, ordinal: int) -> Any: ...
def apply_usd_changes_async(stage: Any, ordinal: int) -> Any: ...
def create_export_destination(stage: Any, identifier: str, mode: int = ExportDestinationMode.EMPTY) -> Any: ...
def create_export_destination_async(stage: Any, identifier: str, mode: int = ExportDestinationMode.EMPTY) -> Any: ...
def export_to_destination(stage: Any, destination: Any, ordinal: int, *,
                          since_ordinal: int = 0, selection: int = 0, layer_mode: int = 0, transform_policy: int = 0, unknown_metadata_policy: int = 0, source_api_schema_policy: int = 0, projection: int = 0, prim_predicate: Any = None, property_predicate: Any = None, prim_rules: Any = None, api_schema_rules: Any = None, attribute_rules: Any = None, property_rules: Any = None, metadata_rules: Any = None) -> Any: ...
def export_to_destination_async(stage: Any, destination: Any, ordinal: int, *,
                                since_ordinal: int = 0, selection: int = 0, layer_mode: int = 0, transform_policy: int = 0, unknown_metadata_policy: int = 0, source_api_schema_policy: int = 0, projection: int = 0, prim_predicate: Any = None, property_predicate: Any = None, prim_rules: Any = None, api_schema_rules: Any = None, attribute_rules: Any = None, property_rules: Any = None, metadata_rules: Any = None) -> Any: ...
def export_to_usd_file(stage: Any, identifier: str, ordinal: int, *,
                       since_ordinal: int = 0, selection: int = 0, layer_mode: int = 0, transform_policy: int = 0, unknown_metadata_policy: int = 0, source_api_schema_policy: int = 0, projection: int = 0, prim_predicate: Any = None, property_predicate: Any = None, prim_rules: Any = None, api_schema_rules: Any = None, attribute_rules: Any = None, property_rules: Any = None, metadata_rules: Any = None) -> Any: ...
def export_to_usd_file_async(stage: Any, identifier: str, ordinal: int, *,
                             since_ordinal: int = 0, selection: int = 0, layer_mode: int = 0, transform_policy: int = 0, unknown_metadata_policy: int = 0, source_api_schema_policy: int = 0, projection: int = 0, prim_predicate: Any = None, property_predicate: Any = None, prim_rules: Any = None, api_schema_rules: Any = None, attribute_rules: Any = None, property_rules: Any = None, metadata_rules: Any = None) -> Any: ...
def export_to_usd_layer(stage: Any, usd_layer: Any, ordinal: int, *,
                        since_ordinal: int = 0, selection: int = 0, layer_mode: int = 0, transform_policy: int = 0, unknown_metadata_policy: int = 0, source_api_schema_policy: int = 0, projection: int = 0, prim_predicate: Any = None, property_predicate: Any = None, prim_rules: Any = None, api_schema_rules: Any = None, attribute_rules: Any = None, property_rules: Any = None, metadata_rules: Any = None) -> Any: ...
def export_to_usd_layer_async(stage: Any, usd_layer: Any, ordinal: int, *,
                              since_ordinal: int = 0, selection: int = 0, layer_mode: int = 0, transform_policy: int = 0, unknown_metadata_policy: int = 0, source_api_schema_policy: int = 0, projection: int = 0, prim_predicate: Any = None, property_predicate: Any = None, prim_rules: Any = None, api_schema_rules: Any = None, attribute_rules: Any = None, property_rules: Any = None, metadata_rules: Any = None) -> Any: ...
def export_to_usd_stage(stage: Any, usd_stage: Any, ordinal: int, *,
                        since_ordinal: int = 0, selection: int = 0, layer_mode: int = 0, transform_policy: int = 0, unknown_metadata_policy: int = 0, source_api_schema_policy: int = 0, projection: int = 0, prim_predicate: Any = None, property_predicate: Any = None, prim_rules: Any = None, api_schema_rules: Any = None, attribute_rules: Any = None, property_rules: Any = None, metadata_rules: Any = None) -> Any: ...
def export_to_usd_stage_async(stage: Any, usd_stage: Any, ordinal: int, *,
                              since_ordinal: int = 0, selection: int = 0, layer_mode: int = 0, transform_policy: int = 0, unknown_metadata_policy: int = 0, source_api_schema_policy: int = 0, projection: int = 0, prim_predicate: Any = None, property_predicate: Any = None, prim_rules: Any = None, api_schema_rules: Any = None, attribute_rules: Any = None, property_rules: Any = None, metadata_rules: Any = None) -> Any: ...
def export_typed_hierarchy_to_usd_file(stage: Any, identifier: str, root_path: str, ordinal: int, *,
                                       prim_predicate: Any = None, property_predicate: Any = None, include_custom_namespaces: Any = None, transform_policy: int = 0, unknown_metadata_policy: int = 0) -> Any: ...
def export_typed_hierarchy_to_usd_file_async(stage: Any, identifier: str, root_path: str, ordinal: int, *,
                                             prim_predicate: Any = None, property_predicate: Any = None, include_custom_namespaces: Any = None, transform_policy: int = 0, unknown_metadata_policy: int = 0) -> Any: ...
def export_typed_hierarchy_to_usd_layer(stage: Any, usd_layer: Any, root_path: str, ordinal: int, *,
                                        prim_predicate: Any = None, property_predicate: Any = None, include_custom_namespaces: Any = None, transform_policy: int = 0, unknown_metadata_policy: int = 0) -> Any: ...
def export_typed_hierarchy_to_usd_layer_async(stage: Any, usd_layer: Any, root_path: str, ordinal: int, *,
                                              prim_predicate: Any = None, property_predicate: Any = None, include_custom_namespaces: Any = None, transform_policy: int = 0, unknown_metadata_policy: int = 0) -> Any: ...
def open_usd(stage: Any, path: str, ordinal: int, time: float = DEFAULT_TIME, domains: int = PopulationDomain.RENDERING, *,
             time_code: Optional[float] = None) -> Any: ...
def open_usd_async(stage: Any, path: str, ordinal: int, time: float = DEFAULT_TIME, domains: int = PopulationDomain.RENDERING, *,
                   time_code: Optional[float] = None) -> Any: ...
def open_usd_from_string(stage: Any, usda: str, ordinal: int, time: float = DEFAULT_TIME, domains: int = PopulationDomain.RENDERING, *,
                         time_code: Optional[float] = None) -> Any: ...
def open_usd_from_string_async(stage: Any, usda: str, ordinal: int, time: float = DEFAULT_TIME, domains: int = PopulationDomain.RENDERING, *,
                               time_code: Optional[float] = None) -> Any: ...
def open_usd_from_string_with_desc(stage: Any, usda: str, ordinal: int, time: float, descs: Any) -> Any: ...
def open_usd_from_string_with_desc_async(stage: Any, usda: str, ordinal: int, time: float, descs: Any) -> Any: ...
def open_usd_with_desc(stage: Any, path: str, ordinal: int, time: float, descs: Any) -> Any: ...
def open_usd_with_desc_async(stage: Any, path: str, ordinal: int, time: float, descs: Any) -> Any: ...
def remove_usd(stage: Any, handle: int) -> Any: ...
def remove_usd_async(stage: Any, handle: int) -> Any: ...
def repopulate_usd_with_desc(stage: Any, ordinal: int, time: float, descs: Any) -> Any: ...
def repopulate_usd_with_desc_async(stage: Any, ordinal: int, time: float, descs: Any) -> Any: ...
def reset_usd(stage: Any) -> Any: ...
def reset_usd_async(stage: Any) -> Any: ...
def update_from_usd_time(stage: Any, ordinal: int, time: float = DEFAULT_TIME, *,
                         time_code: Optional[float] = None) -> Any: ...
def update_from_usd_time_async(stage: Any, ordinal: int, time: float = DEFAULT_TIME, *,
                               time_code: Optional[float] = None) -> Any: ...

class ExportDestinationMode(enum.IntEnum):
    EMPTY = 0
    OPEN_EXISTING = 1

class SourceApiSchemaPolicy(enum.IntEnum):
    EXPLICIT_ONLY = 0
    APPLY_RECORDED = 1

class ExportProjection(enum.IntEnum):
    EXPLICIT_RULES = 0
    SCHEMA_DECLARED = 1

class PrimPredicateKind(enum.IntEnum):
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
    def wait(self, timeout: int = 18446744073709551615) -> Any: ...

class ExportOperation(Operation): ...
class DestinationOperation(Operation): ...
class DestinationCreateOperation(Operation): ...

class ExportDestination:
    @classmethod
    def create(cls, stage: Any, identifier: str, mode: int = ExportDestinationMode.EMPTY) -> ExportDestination: ...
    @classmethod
    def create_async(cls, stage: Any, identifier: str,
                     mode: int = ExportDestinationMode.EMPTY) -> DestinationCreateOperation: ...
