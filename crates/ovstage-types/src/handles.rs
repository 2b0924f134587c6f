//! Typed handle ids. Each is a non-zero `u64`: the contract's invalid value 0
//! is `None` of an `Option`, and a handle of one kind cannot be passed where
//! another kind is expected.

use std::fmt;
use std::num::NonZeroU64;

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident, $label:literal) => {
        $(#[$doc])*
        ///
        /// `repr(transparent)`: it has the layout of a `u64`, so the C
        /// binding can read an array of C's ids, once checked non-zero, as
        /// handles without copying it.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(transparent)]
        pub struct $name(NonZeroU64);

        impl $name {
            /// The handle for a raw value; `None` for the invalid value 0.
            pub const fn from_raw(raw: u64) -> Option<Self> {
                match NonZeroU64::new(raw) {
                    Some(v) => Some(Self(v)),
                    None => None,
                }
            }

            /// The raw value (never 0).
            pub const fn get(self) -> u64 {
                self.0.get()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($label, " {:#x}"), self.0)
            }
        }
    };
}

handle!(
    /// An interned string (attribute names, path components). Lives as long
    /// as its path dictionary.
    Token,
    "token"
);
handle!(
    /// An interned absolute prim path. Lives as long as its path dictionary.
    PrimPath,
    "prim path"
);
handle!(
    /// A reference-counted list of prim paths.
    PathList,
    "path list"
);
handle!(
    /// A logical set of prims that reads, writes and deletes target.
    QueryHandle,
    "query handle"
);
handle!(
    /// An enqueued multi-attribute read whose groups are fetched in turn.
    ReadHandle,
    "read handle"
);
handle!(
    /// An enqueued mapped-write session.
    MapHandle,
    "map handle"
);
handle!(
    /// An enqueued read of an ordinal scalar (a write floor, the retention
    /// frontier).
    OrdinalQueryHandle,
    "ordinal query handle"
);
handle!(
    /// An enqueued hierarchy lookup (parent / children / siblings).
    HierarchyHandle,
    "hierarchy handle"
);
handle!(
    /// Identity of one fetched read group, for `release_group`.
    ReadGroupId,
    "read group"
);
handle!(
    /// Identity of one fetched query result, for `release_query_result`.
    QueryResultId,
    "query result"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_invalid() {
        assert_eq!(Token::from_raw(0), None);
        assert_eq!(QueryHandle::from_raw(9).map(QueryHandle::get), Some(9));
        assert_eq!(ReadHandle::from_raw(255).unwrap().to_string(), "read handle 0xff");
    }
}
