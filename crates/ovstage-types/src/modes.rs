//! Small enums of the contract: prim creation mode, schema mode, floor scope
//! and ordinal admission policy.

raw_enum! {
    /// Whether a write may create prims, update them, or both.
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub enum PrimMode: u32 {
        /// Create prims that do not exist; update those that do (the default).
        #[default]
        Upsert = 0,
        /// Only create prims; an existing target prim fails the write with
        /// `PRIM_NOT_FOUND`.
        Insert = 1,
    }
}

raw_enum! {
    /// What a write does when a prim already has the attribute with another
    /// schema.
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub enum AttributeMode: u32 {
        /// A differing schema fails the write (the default).
        #[default]
        Reject = 0,
        /// A differing schema is replaced by the written one.
        Force = 1,
    }
}

raw_enum! {
    /// Which attributes a write-floor advance affects.
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub enum Scope: u32 {
        /// Every attribute, and the floor new attributes start from.
        #[default]
        All = 0,
        /// Only the listed attributes.
        Include = 1,
        /// Every known attribute except the listed ones (`All` when the list is
        /// empty).
        Exclude = 2,
    }
}

raw_enum! {
    /// How a mutation's ordinal is checked against the retained history of each
    /// (prim, attribute) cell it touches. Write floors are enforced under every
    /// policy. The contract's 0 (`DEFAULT`, "no override") is not a policy:
    /// `from_raw(0)` is `None`.
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
    pub enum AdmissionPolicy: u32 {
        /// Only the write floors are checked.
        FloorOnly = 1,
        /// An ordinal below a retained change of the same cell is rejected; equal
        /// ordinals are allowed and the later submission wins (the default).
        #[default]
        NonDecreasing = 2,
        /// An ordinal at or below a retained change of the same cell is rejected.
        StrictlyIncreasing = 3,
    }
}

raw_enum! {
    /// Which relation a hierarchy lookup returns for each prim.
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
    pub enum HierarchyRelation: u32 {
        /// The parent prim (none for a root, or when no prim exists at the
        /// parent path).
        Parent = 0,
        /// The direct child prims.
        Children = 1,
        /// The other children of the parent prim.
        Siblings = 2,
    }
}

raw_enum! {
    /// How a filter predicate tests an attribute.
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
    pub enum FilterOp: u32 {
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
}

impl FilterOp {
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
