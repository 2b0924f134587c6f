//! `ovstage/ovstage_population_export.h`: writing stage data back to USD.
//! Not supported by this library: every function returns NOT_SUPPORTED and
//! says so in `ovstage_get_last_error`.

use super::api_types::ovstage_ordinal_t;
use super::c_enum_carrier;
use super::ovx_string::ovx_string_t;
use super::population_predicate::{ovstage_population_prim_predicate_t, ovstage_population_property_predicate_t};

c_enum_carrier!(
    /// What an export selects (carrier of `ovstage_population_export_selection_t`).
    ovstage_population_export_selection_t: u32
);
c_enum_carrier!(
    /// How exported prims are authored (carrier of `ovstage_population_export_layer_mode_t`).
    ovstage_population_export_layer_mode_t: u32
);
c_enum_carrier!(
    /// How a rule's path matches prims (carrier of `ovstage_population_export_path_match_t`).
    ovstage_population_export_path_match_t: u32
);
c_enum_carrier!(
    /// How a rule's name matches attributes (carrier of `ovstage_population_export_name_match_t`).
    ovstage_population_export_name_match_t: u32
);
c_enum_carrier!(
    /// How transforms are exported (carrier of `ovstage_population_export_transform_policy_t`).
    ovstage_population_export_transform_policy_t: u32
);
c_enum_carrier!(
    /// What happens to metadata without a USD mapping (carrier of `ovstage_population_export_unknown_metadata_policy_t`).
    ovstage_population_export_unknown_metadata_policy_t: u32
);
c_enum_carrier!(
    /// Which applied API schemas are exported (carrier of `ovstage_population_export_source_api_schema_policy_t`).
    ovstage_population_export_source_api_schema_policy_t: u32
);
c_enum_carrier!(
    /// Which properties are exported (carrier of `ovstage_population_export_projection_t`).
    ovstage_population_export_projection_t: u32
);
c_enum_carrier!(
    /// Rule flags (bits) (carrier of `ovstage_population_export_rule_flags_t`).
    ovstage_population_export_rule_flags_t: u32
);
c_enum_carrier!(
    /// Kinds of property edges (carrier of `ovstage_population_export_property_kind_t`).
    ovstage_population_export_property_kind_t: u32
);
c_enum_carrier!(
    /// Where exported metadata goes (carrier of `ovstage_population_export_metadata_kind_t`).
    ovstage_population_export_metadata_kind_t: u32
);
c_enum_carrier!(
    /// How an export destination is opened (carrier of `ovstage_population_export_destination_mode_t`).
    ovstage_population_export_destination_mode_t: u32
);

/// Enum values, as emitted into the header.
pub mod values {
    /// What an export selects.
    #[repr(C)]
    pub enum ovstage_population_export_selection_t {
        /// Prims and properties matching the predicates.
        OVSTAGE_POPULATION_EXPORT_SELECTION_EXPLICIT_PREDICATE = 0,
        /// Properties changed since `since_ordinal`.
        OVSTAGE_POPULATION_EXPORT_SELECTION_CHANGED_PROPERTIES_SINCE_ORDINAL = 1,
    }

    /// How exported prims are authored.
    #[repr(C)]
    pub enum ovstage_population_export_layer_mode_t {
        /// As overs.
        OVSTAGE_POPULATION_EXPORT_LAYER_MODE_OVER = 0,
        /// As definitions.
        OVSTAGE_POPULATION_EXPORT_LAYER_MODE_DEF = 1,
    }

    /// How a rule's path matches prims.
    #[repr(C)]
    pub enum ovstage_population_export_path_match_t {
        /// The path itself.
        OVSTAGE_POPULATION_EXPORT_PATH_MATCH_EXACT = 0,
        /// The path and everything under it.
        OVSTAGE_POPULATION_EXPORT_PATH_MATCH_PREFIX = 1,
    }

    /// How a rule's name matches attributes.
    #[repr(C)]
    pub enum ovstage_population_export_name_match_t {
        /// The name itself.
        OVSTAGE_POPULATION_EXPORT_NAME_MATCH_EXACT = 0,
        /// A glob pattern.
        OVSTAGE_POPULATION_EXPORT_NAME_MATCH_GLOB = 1,
    }

    /// How transforms are exported.
    #[repr(C)]
    pub enum ovstage_population_export_transform_policy_t {
        /// As USD xform ops.
        OVSTAGE_POPULATION_EXPORT_TRANSFORM_USD_XFORM_OP = 0,
        /// Not at all.
        OVSTAGE_POPULATION_EXPORT_TRANSFORM_NONE = 1,
        /// As one USD matrix op.
        OVSTAGE_POPULATION_EXPORT_TRANSFORM_USD_MATRIX_OP = 2,
    }

    /// What happens to metadata without a USD mapping.
    #[repr(C)]
    pub enum ovstage_population_export_unknown_metadata_policy_t {
        /// Dropped.
        OVSTAGE_POPULATION_EXPORT_UNKNOWN_METADATA_DROP = 0,
        /// Kept in custom data.
        OVSTAGE_POPULATION_EXPORT_UNKNOWN_METADATA_PRESERVE = 1,
        /// The export fails.
        OVSTAGE_POPULATION_EXPORT_UNKNOWN_METADATA_FAIL = 2,
    }

    /// Which applied API schemas are exported.
    #[repr(C)]
    pub enum ovstage_population_export_source_api_schema_policy_t {
        /// Only those named by rules.
        OVSTAGE_POPULATION_EXPORT_SOURCE_API_SCHEMAS_EXPLICIT_ONLY = 0,
        /// Also those recorded on the prims.
        OVSTAGE_POPULATION_EXPORT_SOURCE_API_SCHEMAS_APPLY_RECORDED = 1,
    }

    /// Which properties are exported.
    #[repr(C)]
    pub enum ovstage_population_export_projection_t {
        /// Those named by rules.
        OVSTAGE_POPULATION_EXPORT_PROJECTION_EXPLICIT_RULES = 0,
        /// Those the prims' schemas declare.
        OVSTAGE_POPULATION_EXPORT_PROJECTION_SCHEMA_DECLARED = 1,
    }

    /// Rule flags (bits).
    #[repr(C)]
    pub enum ovstage_population_export_rule_flags_t {
        /// No flag.
        OVSTAGE_POPULATION_EXPORT_RULE_NONE = 0,
        /// Export default values too.
        OVSTAGE_POPULATION_EXPORT_RULE_EXPORT_DEFAULT_VALUE = 1,
        /// Derived values may be exported.
        OVSTAGE_POPULATION_EXPORT_RULE_DERIVED_ALLOWED = 2,
        /// Infer the USD type of custom attributes.
        OVSTAGE_POPULATION_EXPORT_RULE_INFER_CUSTOM_TYPE = 8,
        /// A miss fails the export.
        OVSTAGE_POPULATION_EXPORT_RULE_REQUIRED = 16,
    }

    /// Kinds of property edges.
    #[repr(C)]
    pub enum ovstage_population_export_property_kind_t {
        /// Not a kind.
        OVSTAGE_POPULATION_EXPORT_PROPERTY_INVALID = 0,
        /// Relationship.
        OVSTAGE_POPULATION_EXPORT_PROPERTY_RELATIONSHIP = 1,
        /// Attribute connection.
        OVSTAGE_POPULATION_EXPORT_PROPERTY_CONNECTION = 2,
        /// Material binding.
        OVSTAGE_POPULATION_EXPORT_PROPERTY_MATERIAL_BINDING = 3,
    }

    /// Where exported metadata goes.
    #[repr(C)]
    pub enum ovstage_population_export_metadata_kind_t {
        /// Prim metadata.
        OVSTAGE_POPULATION_EXPORT_METADATA_PRIM = 0,
        /// The layer's custom data.
        OVSTAGE_POPULATION_EXPORT_METADATA_LAYER_CUSTOM_DATA = 1,
        /// References.
        OVSTAGE_POPULATION_EXPORT_METADATA_REFERENCES = 2,
        /// Standard layer metadata.
        OVSTAGE_POPULATION_EXPORT_METADATA_LAYER_STANDARD = 3,
    }

    /// How an export destination is opened.
    #[repr(C)]
    pub enum ovstage_population_export_destination_mode_t {
        /// A new, empty layer.
        OVSTAGE_POPULATION_EXPORT_DESTINATION_EMPTY = 0,
        /// An existing layer.
        OVSTAGE_POPULATION_EXPORT_DESTINATION_OPEN_EXISTING = 1,
    }
}
/// Handle of an export destination (a USD layer being written).
pub type ovstage_population_export_destination_handle_t = u64;
/// No destination.
pub const OVSTAGE_POPULATION_EXPORT_INVALID_DESTINATION_HANDLE: ovstage_population_export_destination_handle_t =
    0 as ovstage_population_export_destination_handle_t;

/// How attributes are exported.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_population_export_attribute_rule_t {
    /// Prims the rule applies to.
    pub path: ovx_string_t,
    /// How `path` matches.
    pub path_match: ovstage_population_export_path_match_t,
    /// Attribute name in the stage.
    pub source_attribute_name: ovx_string_t,
    /// How `source_attribute_name` matches.
    pub source_attribute_name_match: ovstage_population_export_name_match_t,
    /// Attribute name in USD.
    pub destination_attribute_name: ovx_string_t,
    /// USD value type name.
    pub usd_type_name: ovx_string_t,
    /// Schema the prim must have.
    pub required_schema_name: ovx_string_t,
    /// `ovstage_population_export_rule_flags_t` bits.
    pub flags: u32,
}

/// How prims are typed in the export.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_population_export_prim_rule_t {
    /// Prims the rule applies to.
    pub path: ovx_string_t,
    /// How `path` matches.
    pub path_match: ovstage_population_export_path_match_t,
    /// USD prim type name.
    pub usd_type_name: ovx_string_t,
    /// Custom data key recording an unknown type.
    pub unknown_type_metadata_key: ovx_string_t,
}

/// Which API schemas are applied in the export.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_population_export_api_schema_rule_t {
    /// Prims the rule applies to.
    pub path: ovx_string_t,
    /// How `path` matches.
    pub path_match: ovstage_population_export_path_match_t,
    /// API schema name.
    pub schema_name: ovx_string_t,
    /// Instance name of a multiple-apply schema.
    pub instance_name: ovx_string_t,
    /// `ovstage_population_export_rule_flags_t` bits.
    pub flags: u32,
}

/// How relationships and connections are exported.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_population_export_property_edge_rule_t {
    /// Prims the rule applies to.
    pub path: ovx_string_t,
    /// How `path` matches.
    pub path_match: ovstage_population_export_path_match_t,
    /// Property name in the stage.
    pub source_property_name: ovx_string_t,
    /// Property name in USD.
    pub destination_property_name: ovx_string_t,
    /// USD value type name (connections).
    pub usd_type_name: ovx_string_t,
    /// Kind of edge.
    pub property_kind: ovstage_population_export_property_kind_t,
    /// `ovstage_population_export_rule_flags_t` bits.
    pub flags: u32,
}

/// How metadata is exported.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct ovstage_population_export_metadata_rule_t {
    /// Prims the rule applies to.
    pub path: ovx_string_t,
    /// How `path` matches.
    pub path_match: ovstage_population_export_path_match_t,
    /// Metadata name in the stage.
    pub source_metadata_name: ovx_string_t,
    /// Metadata name in USD.
    pub destination_metadata_name: ovx_string_t,
    /// Where it goes.
    pub metadata_kind: ovstage_population_export_metadata_kind_t,
    /// `ovstage_population_export_rule_flags_t` bits.
    pub flags: u32,
}

/// An export request.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ovstage_population_export_desc_t {
    /// Size of this struct in bytes.
    pub struct_size: u32,
    /// Which applied API schemas are exported.
    pub source_api_schema_policy: ovstage_population_export_source_api_schema_policy_t,
    /// Which properties are exported.
    pub projection: ovstage_population_export_projection_t,
    /// Snapshot ordinal exported.
    pub ordinal: ovstage_ordinal_t,
    /// Start of the change selection.
    pub since_ordinal: ovstage_ordinal_t,
    /// What is selected.
    pub selection: ovstage_population_export_selection_t,
    /// Overs or definitions.
    pub layer_mode: ovstage_population_export_layer_mode_t,
    /// How transforms are exported.
    pub transform_policy: ovstage_population_export_transform_policy_t,
    /// What happens to unknown metadata.
    pub unknown_metadata_policy: ovstage_population_export_unknown_metadata_policy_t,
    /// Prims exported.
    pub prim_predicate: ovstage_population_prim_predicate_t,
    /// Properties exported.
    pub property_predicate: ovstage_population_property_predicate_t,
    /// Prim rules.
    pub prim_rules: *const ovstage_population_export_prim_rule_t,
    /// Entries of `prim_rules`.
    pub prim_rule_count: usize,
    /// API schema rules.
    pub api_schema_rules: *const ovstage_population_export_api_schema_rule_t,
    /// Entries of `api_schema_rules`.
    pub api_schema_rule_count: usize,
    /// Attribute rules.
    pub attribute_rules: *const ovstage_population_export_attribute_rule_t,
    /// Entries of `attribute_rules`.
    pub attribute_rule_count: usize,
    /// Property edge rules.
    pub property_rules: *const ovstage_population_export_property_edge_rule_t,
    /// Entries of `property_rules`.
    pub property_rule_count: usize,
    /// Metadata rules.
    pub metadata_rules: *const ovstage_population_export_metadata_rule_t,
    /// Entries of `metadata_rules`.
    pub metadata_rule_count: usize,
}

/// What an export did (counters).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct ovstage_population_export_report_t {
    /// Prims looked at.
    pub prims_examined: usize,
    /// Prims written.
    pub prims_exported: usize,
    /// Prims skipped.
    pub prims_skipped: usize,
    /// Attributes looked at.
    pub attributes_examined: usize,
    /// Attributes written.
    pub attributes_exported: usize,
    /// Attributes skipped.
    pub attributes_skipped: usize,
    /// Attributes with no USD mapping.
    pub attributes_unsupported: usize,
    /// API schemas looked at.
    pub api_schemas_examined: usize,
    /// API schemas applied.
    pub api_schemas_applied: usize,
    /// API schemas skipped.
    pub api_schemas_skipped: usize,
    /// Custom attributes whose type was inferred.
    pub custom_attributes_inferred: usize,
    /// Unknown metadata kept.
    pub unknown_metadata_preserved: usize,
    /// Transforms looked at.
    pub transforms_examined: usize,
    /// Transforms written.
    pub transforms_exported: usize,
    /// Property edges looked at.
    pub property_edges_examined: usize,
    /// Property edges written.
    pub property_edges_exported: usize,
    /// Property edges skipped.
    pub property_edges_skipped: usize,
    /// Property edges with no USD mapping.
    pub property_edges_unsupported: usize,
    /// Metadata looked at.
    pub metadata_examined: usize,
    /// Metadata written.
    pub metadata_exported: usize,
    /// Metadata skipped.
    pub metadata_skipped: usize,
    /// Metadata with no USD mapping.
    pub metadata_unsupported: usize,
    /// Source states that could not be read.
    pub source_states_unavailable: usize,
}
