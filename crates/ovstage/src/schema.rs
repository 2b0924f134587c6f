//! Attribute schemas: element type, tuple width, kind and semantic.

use std::fmt;

use ovstage_types::{DType, Semantic};
use smallvec::SmallVec;

/// Fixed-size tuples per prim, or variable-length arrays.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// One fixed-size tuple per prim.
    Fixed,
    /// A variable-length array per prim.
    Array,
}

/// What an attribute stores, fixed when it is created on a prim: the
/// element type with the tuple width in `dtype.lanes`, the kind and the
/// semantic. Writing another schema to an existing cell is an error, unless
/// the write or map session replaces it (`ATTRIBUTE_MODE_FORCE`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Schema {
    /// Element type; `lanes` is the number of components per row.
    pub dtype: DType,
    /// Fixed or array.
    pub kind: ValueKind,
    /// Authored interpretation.
    pub semantic: Semantic,
}

/// How values are laid out: element type (tuple width in lanes) and kind.
/// Columns are keyed by storage; the semantic is a role recorded on top.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Storage {
    pub(crate) dtype: DType,
    pub(crate) kind: ValueKind,
}

impl Storage {
    pub(crate) fn row_bytes(&self) -> usize {
        self.dtype.element_bytes().unwrap_or(0)
    }
}

impl fmt::Display for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            ValueKind::Fixed => "fixed",
            ValueKind::Array => "array",
        };
        write!(f, "{} {kind}", self.dtype)
    }
}

impl Schema {
    /// Its storage (dtype and kind).
    pub(crate) fn storage(&self) -> Storage {
        Storage { dtype: self.dtype, kind: self.kind }
    }

    /// Bytes of one fixed-size row.
    pub fn row_bytes(&self) -> usize {
        self.dtype.element_bytes().unwrap_or(0)
    }

    /// Components per row.
    pub fn components(&self) -> u32 {
        u32::from(self.dtype.lanes)
    }

    /// The trailing dimensions of one element on read: `[]` for scalars,
    /// `[S, S]` for a square MATRIX, `[C]` otherwise. Lanes are always 1 on
    /// read.
    pub fn element_dims(&self) -> SmallVec<[u64; 2]> {
        let c = self.components();
        if c == 1 {
            return SmallVec::new();
        }
        if self.semantic == Semantic::Matrix {
            for side in [2u32, 3, 4] {
                if side * side == c {
                    return SmallVec::from_slice(&[u64::from(side), u64::from(side)]);
                }
            }
        }
        SmallVec::from_slice(&[u64::from(c)])
    }

    /// The shape reads expose for `rows` rows: `[N]` for scalars, `[N, S, S]`
    /// for a square MATRIX, `[N, C]` otherwise.
    pub fn read_shape(&self, rows: u64) -> SmallVec<[u64; 3]> {
        let mut shape = SmallVec::from_slice(&[rows]);
        shape.extend_from_slice(&self.element_dims());
        shape
    }

    /// Compact row-major strides (in elements) for `shape`.
    pub fn strides(shape: &[u64]) -> SmallVec<[i64; 3]> {
        let mut strides: SmallVec<[i64; 3]> = SmallVec::from_elem(1, shape.len());
        for i in (0..shape.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * shape[i + 1] as i64;
        }
        strides
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.storage())?;
        if self.semantic != Semantic::None {
            write!(f, " {}", self.semantic.name())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(dtype: DType, semantic: Semantic) -> Schema {
        Schema { dtype, kind: ValueKind::Fixed, semantic }
    }

    #[test]
    fn read_shapes() {
        assert_eq!(&fixed(DType::F32, Semantic::None).read_shape(5)[..], &[5]);
        assert_eq!(&fixed(DType::F32.with_lanes(3), Semantic::Point).read_shape(5)[..], &[5, 3]);
        assert_eq!(&fixed(DType::F64.with_lanes(16), Semantic::Matrix).read_shape(2)[..], &[2, 4, 4]);
        assert_eq!(&fixed(DType::F64.with_lanes(16), Semantic::None).read_shape(2)[..], &[2, 16]);
        assert_eq!(&fixed(DType::F64.with_lanes(6), Semantic::Matrix).read_shape(2)[..], &[2, 6]);
        assert_eq!(&Schema::strides(&[2, 4, 4])[..], &[16, 4, 1]);
        assert_eq!(fixed(DType::F32.with_lanes(3), Semantic::Point).to_string(), "f32x3 fixed POINT");
    }
}
