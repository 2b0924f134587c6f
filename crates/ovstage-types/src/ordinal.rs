//! Ordinals (the ordering key of every mutation) and ordinal ranges for reads.

use std::fmt;

use crate::{Error, Status};

/// The ordering key of a mutation, usually a simulation tick.
///
/// Any `u64` is a valid ordinal; there is no sentinel. `Ordinal::MAX` used as
/// the end of a snapshot read means "current values" (see [`OrdinalRange`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ordinal(pub u64);

impl Ordinal {
    /// The lowest ordinal, 0. Also where every write floor starts.
    pub const ZERO: Ordinal = Ordinal(0);
    /// The highest ordinal; as a snapshot end it requests current values.
    pub const MAX: Ordinal = Ordinal(u64::MAX);

    /// The raw value.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl From<u64> for Ordinal {
    fn from(value: u64) -> Self {
        Ordinal(value)
    }
}

impl From<Ordinal> for u64 {
    fn from(value: Ordinal) -> Self {
        value.0
    }
}

impl fmt::Display for Ordinal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Ordinal::MAX { f.write_str("MAX") } else { write!(f, "{}", self.0) }
    }
}

/// What a read asks for: the values at one ordinal, or the changes in a range.
///
/// The two shapes are separate variants and the range variant can only be
/// built through [`OrdinalRange::changes`], which rejects `start > end`, so
/// an ill-formed range cannot reach the store.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum OrdinalRange {
    /// Values as of `end` for every queried prim; `Ordinal::MAX` means the
    /// current sealed values.
    Snapshot {
        /// The ordinal the snapshot is taken at.
        end: Ordinal,
    },
    /// The prims whose cells changed in `[start, end]` (both ends included),
    /// with their values as of `end`, or a tombstone when the cell is gone at
    /// `end`.
    Changes {
        /// First ordinal of the range, inclusive.
        start: Ordinal,
        /// Last ordinal of the range, inclusive.
        end: Ordinal,
    },
}

impl OrdinalRange {
    /// The current sealed values (`Snapshot` at `Ordinal::MAX`).
    pub const LATEST: OrdinalRange = OrdinalRange::Snapshot { end: Ordinal::MAX };

    /// A snapshot at `end`.
    pub fn snapshot(end: impl Into<Ordinal>) -> OrdinalRange {
        OrdinalRange::Snapshot { end: end.into() }
    }

    /// The changes in `[start, end]`; `start > end` is `INVALID_ARGUMENT`.
    pub fn changes(start: impl Into<Ordinal>, end: impl Into<Ordinal>) -> Result<OrdinalRange, Error> {
        let (start, end) = (start.into(), end.into());
        if start > end {
            return Err(Error::new(
                Status::InvalidArgument,
                format!("ordinal range start {start} is greater than its end {end}"),
            )
            .with_ordinal(start));
        }
        Ok(OrdinalRange::Changes { start, end })
    }

    /// The inclusive upper bound of the read.
    pub fn end(&self) -> Ordinal {
        match *self {
            OrdinalRange::Snapshot { end } | OrdinalRange::Changes { end, .. } => end,
        }
    }

    /// The inclusive lower bound of a change range; `None` for a snapshot.
    pub fn start(&self) -> Option<Ordinal> {
        match *self {
            OrdinalRange::Snapshot { .. } => None,
            OrdinalRange::Changes { start, .. } => Some(start),
        }
    }
}

impl fmt::Display for OrdinalRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OrdinalRange::Snapshot { end } => write!(f, "snapshot at {end}"),
            OrdinalRange::Changes { start, end } => write!(f, "changes in [{start}, {end}]"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_range_rejects_start_after_end() {
        let err = OrdinalRange::changes(5u64, 4u64).unwrap_err();
        assert_eq!(err.status(), Status::InvalidArgument);
        assert_eq!(err.context().ordinal, Some(Ordinal(5)));
        assert!(OrdinalRange::changes(4u64, 4u64).is_ok());
    }

    #[test]
    fn bounds() {
        let r = OrdinalRange::changes(2u64, 9u64).unwrap();
        assert_eq!((r.start(), r.end()), (Some(Ordinal(2)), Ordinal(9)));
        assert_eq!(OrdinalRange::LATEST.end(), Ordinal::MAX);
        assert_eq!(OrdinalRange::snapshot(3u64).start(), None);
        assert_eq!(Ordinal::MAX.to_string(), "MAX");
    }
}
