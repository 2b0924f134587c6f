//! Host tensors handed to writes: bytes, an element type and a shape.

use std::fmt;
use std::sync::Arc;

use ovstage_types::{DType, DTypeCode, Error, Result};
use smallvec::SmallVec;

/// Bytes an op may read until it completes. Implemented for owned vectors
/// of plain numbers; bindings implement it for memory they keep alive.
pub trait HostBytes: Send + Sync + 'static {
    /// The bytes.
    fn host_bytes(&self) -> &[u8];
}

impl<T: bytemuck::Pod + Send + Sync> HostBytes for Vec<T> {
    fn host_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }
}

impl HostBytes for Box<[u8]> {
    fn host_bytes(&self) -> &[u8] {
        self
    }
}

impl HostBytes for Arc<[u8]> {
    fn host_bytes(&self) -> &[u8] {
        self
    }
}

/// A Rust number type with its DLPack element type.
pub trait Element: bytemuck::Pod + Send + Sync {
    /// The one-lane element type.
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $code:ident $bits:literal),* $(,)?) => {
        $(impl Element for $t {
            const DTYPE: DType = DType::new(DTypeCode::$code, $bits, 1);
        })*
    };
}

element!(
    f32 => Float 32, f64 => Float 64,
    i8 => Int 8, i16 => Int 16, i32 => Int 32, i64 => Int 64,
    u8 => UInt 8, u16 => UInt 16, u32 => UInt 32, u64 => UInt 64,
);

/// A dense, row-major host tensor.
pub struct Tensor {
    data: Box<dyn HostBytes>,
    dtype: DType,
    shape: SmallVec<[u64; 4]>,
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor").field("dtype", &self.dtype).field("shape", &self.shape).finish_non_exhaustive()
    }
}

impl Tensor {
    /// A tensor over `data` with `dtype` and `shape`; the byte length must
    /// be exactly the shape's element count times the element size.
    pub fn new(data: impl HostBytes, dtype: DType, shape: &[u64]) -> Result<Tensor> {
        let element = dtype
            .element_bytes()
            .ok_or_else(|| Error::invalid_argument(format!("tensor dtype {dtype} has no whole-byte element size")))?;
        let count = shape.iter().try_fold(1u64, |acc, d| acc.checked_mul(*d));
        let expected = count.and_then(|c| c.checked_mul(element as u64));
        let got = data.host_bytes().len() as u64;
        if expected != Some(got) {
            return Err(Error::invalid_argument(format!(
                "tensor of shape {shape:?} and dtype {dtype} needs {} bytes but {got} were given",
                expected.map_or_else(|| "too many".to_owned(), |e| e.to_string())
            )));
        }
        Ok(Tensor { data: Box::new(data), dtype, shape: SmallVec::from_slice(shape) })
    }

    /// A tensor of `values` with `shape`; the dtype comes from `T`.
    pub fn from_vec<T: Element>(values: Vec<T>, shape: &[u64]) -> Result<Tensor> {
        Tensor::new(values, T::DTYPE, shape)
    }

    /// Rows of `lanes` components each, in the canonical layout (one
    /// dimension, tuple width in `dtype.lanes`).
    pub fn rows<T: Element>(values: Vec<T>, lanes: u16) -> Result<Tensor> {
        if lanes == 0 || !values.len().is_multiple_of(usize::from(lanes)) {
            return Err(Error::invalid_argument(format!(
                "{} values do not split into rows of {lanes} lanes",
                values.len()
            )));
        }
        let rows = (values.len() / usize::from(lanes)) as u64;
        Tensor::new(values, T::DTYPE.with_lanes(lanes), &[rows])
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The shape.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        self.data.host_bytes()
    }

    /// Reads a tensor shape as the store does: the row count (leading
    /// dimension) and the element type of a row, every trailing dimension
    /// folded into the lanes of `dtype` (between 1 and 65535). Every write
    /// payload's tensors must read this way; a binding checks it before it
    /// copies a strided payload, so a shape the write would refuse costs
    /// no copy.
    pub fn row_shape(dtype: DType, shape: &[u64]) -> Result<(u64, DType)> {
        fold_shape(dtype, shape)
    }

    /// Reads the tensor as fixed-size rows: the row count (leading
    /// dimension) and the row's element type with every trailing dimension
    /// folded into the lanes.
    pub(crate) fn as_rows(&self) -> Result<(u64, DType)> {
        fold_shape(self.dtype, &self.shape)
    }
}

/// A tensor shape read as fixed-size rows: the row count (leading
/// dimension) and the row's element type with every trailing dimension
/// folded into the lanes of `dtype`.
pub(crate) fn fold_shape(dtype: DType, shape: &[u64]) -> Result<(u64, DType)> {
    let (&rows, rest) = shape
        .split_first()
        .ok_or_else(|| Error::invalid_argument("a fixed-size write needs a tensor with at least one dimension"))?;
    let folded = rest.iter().try_fold(u64::from(dtype.lanes), |acc, d| acc.checked_mul(*d));
    let lanes = folded.and_then(|l| u16::try_from(l).ok()).filter(|l| *l > 0).ok_or_else(|| {
        Error::invalid_argument(format!(
            "tensor shape {shape:?} with {} lanes does not give a row width between 1 and {}",
            dtype.lanes,
            u16::MAX
        ))
    })?;
    Ok((rows, dtype.with_lanes(lanes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_fold_into_lanes() {
        let t = Tensor::from_vec(vec![0f32; 12], &[4, 3]).unwrap();
        assert_eq!(t.as_rows().unwrap(), (4, DType::F32.with_lanes(3)));
        let t = Tensor::new(vec![0f64; 32], DType::F64.with_lanes(4), &[2, 4]).unwrap();
        assert_eq!(t.as_rows().unwrap(), (2, DType::F64.with_lanes(16)));
        let t = Tensor::rows(vec![1u32, 2, 3, 4], 2).unwrap();
        assert_eq!(t.shape(), &[2]);
        assert_eq!(t.as_rows().unwrap(), (2, DType::U32.with_lanes(2)));
        assert!(Tensor::rows(vec![1u32, 2, 3], 2).is_err());
    }

    #[test]
    fn byte_length_must_match() {
        let err = Tensor::from_vec(vec![0f32; 5], &[2, 3]).unwrap_err();
        assert!(err.to_string().contains("needs 24 bytes but 20"), "{err}");
        assert!(Tensor::from_vec(vec![0f32; 1], &[]).unwrap().as_rows().is_err());
    }
}
