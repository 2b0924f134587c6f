//! Built-in metadata attributes.
//!
//! `usd-path`, `usd-parent` and `usd-children` are derived on demand from the
//! stage's own prims (path ids as `u64`) and cannot be written, deleted or
//! mapped. `usd-prim-type` (one token id per prim), `usd-schemas` and
//! `usd-ancestor-types` (token-id arrays) are recorded columns with fixed
//! schemas. `usd-active` is not supported.

use ovstage_types::{DType, Error, Result, Semantic, Status, Token};

use crate::paths::PathDictionary;
use crate::schema::{Storage, ValueKind};

/// A built-in metadata attribute.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reserved {
    Path,
    Parent,
    Children,
    Active,
    PrimType,
    Schemas,
    AncestorTypes,
}

impl Reserved {
    const ALL: [Reserved; 7] = [
        Reserved::Path,
        Reserved::Parent,
        Reserved::Children,
        Reserved::Active,
        Reserved::PrimType,
        Reserved::Schemas,
        Reserved::AncestorTypes,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Reserved::Path => "usd-path",
            Reserved::Parent => "usd-parent",
            Reserved::Children => "usd-children",
            Reserved::Active => "usd-active",
            Reserved::PrimType => "usd-prim-type",
            Reserved::Schemas => "usd-schemas",
            Reserved::AncestorTypes => "usd-ancestor-types",
        }
    }

    /// Derived from the prims, not stored.
    pub(crate) fn is_derived(self) -> bool {
        matches!(self, Reserved::Path | Reserved::Parent | Reserved::Children | Reserved::Active)
    }

    /// The storage a recorded metadata attribute must be written with.
    fn required(self) -> Option<Storage> {
        match self {
            Reserved::PrimType => Some(Storage { dtype: DType::U64, kind: ValueKind::Fixed }),
            Reserved::Schemas | Reserved::AncestorTypes => Some(Storage { dtype: DType::U64, kind: ValueKind::Array }),
            _ => None,
        }
    }
}

/// The tokens of the built-in names in one stage's dictionary.
pub(crate) struct ReservedTokens {
    tokens: [Token; 7],
}

impl ReservedTokens {
    pub(crate) fn intern(paths: &PathDictionary) -> ReservedTokens {
        let tokens = Reserved::ALL.map(|r| paths.intern_token(r.name()).expect("built-in names are valid tokens"));
        ReservedTokens { tokens }
    }

    pub(crate) fn lookup(&self, token: Token) -> Option<Reserved> {
        self.tokens.iter().position(|t| *t == token).map(|i| Reserved::ALL[i])
    }
}

fn not_supported(r: Reserved, call: &str, what: &str) -> Error {
    let why = if r == Reserved::Active {
        "usd-active is not supported: a live prim is always active".to_owned()
    } else {
        format!("{} is derived from the stage's prims and cannot be {what}", r.name())
    };
    Error::new(Status::NotSupported, format!("{call}: {why}")).with_attribute(r.name())
}

/// Checks a write (or map) of a reserved attribute: derived names are
/// `NOT_SUPPORTED`; recorded ones must use their schema. Returns the
/// semantic to record (`TOKEN_ID`).
pub(crate) fn check_write(r: Reserved, call: &str, storage: Storage, semantic: Semantic) -> Result<Semantic> {
    if r.is_derived() {
        return Err(not_supported(r, call, "written"));
    }
    let required = r.required().expect("recorded metadata has a schema");
    // The published library takes no declared semantic here (not even
    // TOKEN_ID): the role is implied.
    if storage != required || semantic != Semantic::None {
        let kind =
            if required.kind == ValueKind::Array { "token-id array (u64, array)" } else { "token id (u64, fixed)" };
        return Err(Error::new(
            Status::InvalidArgument,
            format!("{call}: {} holds a {kind}; this write is {storage} {}", r.name(), semantic.name()),
        )
        .with_attribute(r.name()));
    }
    Ok(Semantic::TokenId)
}

/// Checks a delete of a reserved attribute.
pub(crate) fn check_delete(r: Reserved, call: &str) -> Result<()> {
    if r.is_derived() { Err(not_supported(r, call, "deleted")) } else { Ok(()) }
}

/// Checks a read of a reserved attribute (only `usd-active` is refused).
pub(crate) fn check_read(r: Reserved, call: &str) -> Result<()> {
    if r == Reserved::Active { Err(not_supported(r, call, "read")) } else { Ok(()) }
}
