//! Small enums of the contract: prim creation mode, schema mode, floor scope
//! and ordinal admission policy.

/// Whether a write may create prims, update them, or both.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum PrimMode {
    /// Create prims that do not exist; update those that do (the default).
    #[default]
    Upsert = 0,
    /// Only create prims; an existing target prim fails the write with
    /// `PRIM_NOT_FOUND`.
    Insert = 1,
}

impl PrimMode {
    /// The mode for a raw contract value.
    pub const fn from_raw(raw: u32) -> Option<PrimMode> {
        match raw {
            0 => Some(PrimMode::Upsert),
            1 => Some(PrimMode::Insert),
            _ => None,
        }
    }
}

/// What a write does when a prim already has the attribute with another
/// schema.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum AttributeMode {
    /// A differing schema fails the write (the default).
    #[default]
    Reject = 0,
    /// A differing schema is replaced by the written one.
    Force = 1,
}

impl AttributeMode {
    /// The mode for a raw contract value.
    pub const fn from_raw(raw: u32) -> Option<AttributeMode> {
        match raw {
            0 => Some(AttributeMode::Reject),
            1 => Some(AttributeMode::Force),
            _ => None,
        }
    }
}

/// Which attributes a write-floor advance affects.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Scope {
    /// Every attribute, and the floor new attributes start from.
    #[default]
    All = 0,
    /// Only the listed attributes.
    Include = 1,
    /// Every known attribute except the listed ones (`All` when the list is
    /// empty).
    Exclude = 2,
}

impl Scope {
    /// The scope for a raw contract value.
    pub const fn from_raw(raw: u32) -> Option<Scope> {
        match raw {
            0 => Some(Scope::All),
            1 => Some(Scope::Include),
            2 => Some(Scope::Exclude),
            _ => None,
        }
    }
}

/// How a mutation's ordinal is checked against the retained history of each
/// (prim, attribute) cell it touches. Write floors are enforced under every
/// policy.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum AdmissionPolicy {
    /// Only the write floors are checked.
    FloorOnly = 1,
    /// An ordinal below a retained change of the same cell is rejected; equal
    /// ordinals are allowed and the later submission wins (the default).
    #[default]
    NonDecreasing = 2,
    /// An ordinal at or below a retained change of the same cell is rejected.
    StrictlyIncreasing = 3,
}

impl AdmissionPolicy {
    /// The policy for a raw contract value; 0 (`DEFAULT`, "no override") is
    /// not a policy and maps to `None`.
    pub const fn from_raw(raw: u32) -> Option<AdmissionPolicy> {
        match raw {
            1 => Some(AdmissionPolicy::FloorOnly),
            2 => Some(AdmissionPolicy::NonDecreasing),
            3 => Some(AdmissionPolicy::StrictlyIncreasing),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_round_trip() {
        for m in [PrimMode::Upsert, PrimMode::Insert] {
            assert_eq!(PrimMode::from_raw(m as u32), Some(m));
        }
        for m in [AttributeMode::Reject, AttributeMode::Force] {
            assert_eq!(AttributeMode::from_raw(m as u32), Some(m));
        }
        for s in [Scope::All, Scope::Include, Scope::Exclude] {
            assert_eq!(Scope::from_raw(s as u32), Some(s));
        }
        for p in [AdmissionPolicy::FloorOnly, AdmissionPolicy::NonDecreasing, AdmissionPolicy::StrictlyIncreasing] {
            assert_eq!(AdmissionPolicy::from_raw(p as u32), Some(p));
        }
        assert_eq!(AdmissionPolicy::from_raw(0), None);
        assert_eq!(AdmissionPolicy::default(), AdmissionPolicy::NonDecreasing);
        assert_eq!(PrimMode::from_raw(2), None);
        assert_eq!(Scope::from_raw(3), None);
    }
}

/// Which relation a hierarchy lookup returns for each prim.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum HierarchyRelation {
    /// The parent prim (none for a root, or when no prim exists at the
    /// parent path).
    Parent = 0,
    /// The direct child prims.
    Children = 1,
    /// The other children of the parent prim.
    Siblings = 2,
}

impl HierarchyRelation {
    /// The relation for a raw contract value.
    pub const fn from_raw(raw: u32) -> Option<HierarchyRelation> {
        match raw {
            0 => Some(HierarchyRelation::Parent),
            1 => Some(HierarchyRelation::Children),
            2 => Some(HierarchyRelation::Siblings),
            _ => None,
        }
    }
}

#[cfg(test)]
mod relation_tests {
    use super::*;

    #[test]
    fn relation_values() {
        for r in [HierarchyRelation::Parent, HierarchyRelation::Children, HierarchyRelation::Siblings] {
            assert_eq!(HierarchyRelation::from_raw(r as u32), Some(r));
        }
        assert_eq!(HierarchyRelation::from_raw(3), None);
    }
}

/// How a filter predicate tests an attribute.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum FilterOp {
    /// The prim carries the attribute.
    Has = 0,
    /// The value is one of the given values.
    In = 1,
    /// The composite value contains one of the given values.
    Contains = 2,
    /// The string value starts with one of the given values (bytes).
    Prefix = 3,
    /// Less than.
    Lt = 4,
    /// Less than or equal.
    Le = 5,
    /// Greater than.
    Gt = 6,
    /// Greater than or equal.
    Ge = 7,
}

impl FilterOp {
    /// The operator for a raw contract value.
    pub const fn from_raw(raw: u32) -> Option<FilterOp> {
        Some(match raw {
            0 => FilterOp::Has,
            1 => FilterOp::In,
            2 => FilterOp::Contains,
            3 => FilterOp::Prefix,
            4 => FilterOp::Lt,
            5 => FilterOp::Le,
            6 => FilterOp::Gt,
            7 => FilterOp::Ge,
            _ => return None,
        })
    }

    /// The contract's name without prefix, e.g. `PREFIX`.
    pub const fn name(self) -> &'static str {
        match self {
            FilterOp::Has => "HAS",
            FilterOp::In => "IN",
            FilterOp::Contains => "CONTAINS",
            FilterOp::Prefix => "PREFIX",
            FilterOp::Lt => "LT",
            FilterOp::Le => "LE",
            FilterOp::Gt => "GT",
            FilterOp::Ge => "GE",
        }
    }
}

#[cfg(test)]
mod filter_tests {
    use super::*;

    #[test]
    fn filter_op_values() {
        for raw in 0..8 {
            assert_eq!(FilterOp::from_raw(raw).map(|o| o as u32), Some(raw));
        }
        assert_eq!(FilterOp::from_raw(8), None);
    }
}
