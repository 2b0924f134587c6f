//! `ovstage/ovstage_population_predicate.h`: prim and property predicates
//! that select what USD population reads (builders are inline in the
//! header). USD population is not supported by this library; the types are
//! here so that code written against them compiles.

use super::c_enum_carrier;
use super::ovx_string::ovx_string_t;

c_enum_carrier!(
    /// Prim predicate kind (carrier of
    /// `ovstage_population_prim_predicate_kind_t`).
    ovstage_population_prim_predicate_kind_t: u32
);
c_enum_carrier!(
    /// Property predicate kind (carrier of
    /// `ovstage_population_property_predicate_kind_t`).
    ovstage_population_property_predicate_kind_t: u32
);

/// Enum values, as emitted into the header.
pub mod values {
    /// What a prim predicate tests.
    #[repr(C)]
    pub enum ovstage_population_prim_predicate_kind_t {
        /// Matches nothing.
        OVSTAGE_POPULATION_PRIM_PREDICATE_NONE = 0,
        /// Matches every prim.
        OVSTAGE_POPULATION_PRIM_PREDICATE_ALL = 1,
        /// All sub-predicates hold.
        OVSTAGE_POPULATION_PRIM_PREDICATE_AND = 2,
        /// One sub-predicate holds.
        OVSTAGE_POPULATION_PRIM_PREDICATE_OR = 3,
        /// The sub-predicate does not hold.
        OVSTAGE_POPULATION_PRIM_PREDICATE_NOT = 4,
        /// The parent matches the sub-predicate.
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PARENT = 5,
        /// An ancestor matches the sub-predicate.
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_ANCESTOR = 6,
        /// A property matches the property predicate.
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PROPERTY = 7,
        /// The prim type is one of the names.
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_TYPE = 8,
        /// The prim type is or derives from one of the names.
        OVSTAGE_POPULATION_PRIM_PREDICATE_IS_A_TYPE = 9,
        /// The prim has one of the schemas (typed or applied).
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_SCHEMA = 10,
        /// The prim has one of the applied schemas.
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_APPLIED_SCHEMA = 11,
        /// The prim has an applied schema in one of the namespaces.
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_APPLIED_SCHEMA_IN_NAMESPACE = 12,
        /// The prim's path is one of the paths.
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PATH = 13,
        /// The prim lies under one of the paths.
        OVSTAGE_POPULATION_PRIM_PREDICATE_IS_UNDER_PATH = 14,
        /// The prim's kind is one of the names.
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_KIND = 15,
        /// The prim's purpose is one of the names.
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PURPOSE = 16,
        /// The prim has one of the metadata paths.
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_METADATA = 17,
    }

    /// What a property predicate tests.
    #[repr(C)]
    pub enum ovstage_population_property_predicate_kind_t {
        /// Matches nothing.
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_NONE = 0,
        /// Matches every property.
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_ALL = 1,
        /// All sub-predicates hold.
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_AND = 2,
        /// One sub-predicate holds.
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_OR = 3,
        /// The sub-predicate does not hold.
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_NOT = 4,
        /// One of the schemas declares the property.
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_DECLARED_BY_SCHEMA = 5,
        /// The name is one of the names.
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_HAS_NAME = 6,
        /// The name lies in one of the namespaces.
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IN_NAMESPACE = 7,
        /// The property has one of the metadata paths.
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_HAS_METADATA = 8,
        /// The property is an attribute.
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_ATTRIBUTE = 9,
        /// The property is a relationship.
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_RELATIONSHIP = 10,
        /// The property is custom.
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_CUSTOM = 11,
        /// The property has an authored value.
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_AUTHORED = 12,
    }
}

/// The operands of a prim predicate; `kind` says which member is valid.
#[repr(C)]
#[derive(Copy, Clone)]
pub union ovstage_population_prim_predicate_values_t {
    /// Names, paths or namespaces.
    pub strings: *const ovx_string_t,
    /// Sub-predicates (AND, OR, NOT, HAS_PARENT, HAS_ANCESTOR).
    pub subpredicates: *const ovstage_population_prim_predicate_t,
    /// The property predicate (HAS_PROPERTY).
    pub property_predicate: *const ovstage_population_property_predicate_t,
}

/// A predicate over prims.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ovstage_population_prim_predicate_t {
    /// What it tests.
    pub kind: ovstage_population_prim_predicate_kind_t,
    /// Its operands.
    pub values: ovstage_population_prim_predicate_values_t,
    /// Number of operands.
    pub value_count: usize,
}

/// The operands of a property predicate; `kind` says which member is valid.
#[repr(C)]
#[derive(Copy, Clone)]
pub union ovstage_population_property_predicate_values_t {
    /// Names, namespaces or metadata paths.
    pub strings: *const ovx_string_t,
    /// Sub-predicates (AND, OR, NOT).
    pub subpredicates: *const ovstage_population_property_predicate_t,
}

/// A predicate over properties.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ovstage_population_property_predicate_t {
    /// What it tests.
    pub kind: ovstage_population_property_predicate_kind_t,
    /// Its operands.
    pub values: ovstage_population_property_predicate_values_t,
    /// Number of operands.
    pub value_count: usize,
}
