//! One definition of the contract's enums: the `#[repr]` enum with its
//! numeric values, the list of every value, and the checked conversion from
//! a raw number (anything a client passes is checked, never cast).

/// Defines an enum carried across the C ABI as a number of type `$repr`:
/// the enum itself, `ALL` (every value, in declaration order) and
/// `from_raw` (`None` for a number that names no value).
macro_rules! raw_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident: $repr:ty {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[repr($repr)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant = $value, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value for a raw contract number, or `None` when it names
            /// none.
            pub const fn from_raw(raw: $repr) -> Option<$name> {
                match raw {
                    $( $value => Some($name::$variant), )+
                    _ => None,
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::{
        AdmissionPolicy, AttributeMode, DTypeCode, FilterOp, HierarchyRelation, PrimMode, Scope, Semantic, Status,
    };

    /// Every value converts back from its number, and the numbers around
    /// them name nothing.
    macro_rules! round_trips {
        ($($t:ty: $repr:ty),*) => {$(
            for v in <$t>::ALL {
                assert_eq!(<$t>::from_raw(*v as $repr), Some(*v));
            }
            let max = <$t>::ALL.iter().map(|v| *v as $repr).max().unwrap();
            assert_eq!(<$t>::from_raw(max + 1), None, stringify!($t));
        )*};
    }

    #[test]
    fn every_contract_enum_round_trips_its_raw_values() {
        round_trips!(
            PrimMode: u32, AttributeMode: u32, Scope: u32, AdmissionPolicy: u32, HierarchyRelation: u32,
            FilterOp: u32, Status: u32, Semantic: u32, DTypeCode: u8
        );
        assert_eq!(AdmissionPolicy::from_raw(0), None, "0 is DEFAULT (no override), not a policy");
        assert_eq!(AdmissionPolicy::default(), AdmissionPolicy::NonDecreasing);
        assert_eq!(FilterOp::ALL.iter().map(|o| *o as u32).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
        assert_eq!(Status::from_raw(14), None);
        assert_eq!(Status::ALL.len(), 15);
        assert_eq!(Semantic::ALL.len(), 16);
    }
}
