//! Host tensors handed to writes (bytes, an element type and a shape), and
//! the description every tensor the stage takes or hands out has.

use std::fmt;
use std::sync::Arc;

use ovstage_types::{DType, DTypeCode, Device, Error, Result};
use smallvec::SmallVec;

use crate::schema::Schema;

/// How a tensor's elements lie in memory: the device, the element type, the
/// shape and the strides (in elements). It is what a binding needs to
/// export a tensor (DLPack's `device`, `dtype`, `shape`, `strides`), the
/// same for the tensors a write takes, a read group's and a map group's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorDesc {
    /// Where the bytes are.
    pub device: Device,
    /// Element type.
    pub dtype: DType,
    /// Shape.
    pub shape: SmallVec<[u64; 3]>,
    /// Strides in elements, one per dimension.
    pub strides: SmallVec<[i64; 3]>,
}

impl TensorDesc {
    /// A compact row-major tensor of `shape` on `device`.
    pub fn compact(device: Device, dtype: DType, shape: &[u64]) -> TensorDesc {
        TensorDesc { device, dtype, shape: SmallVec::from_slice(shape), strides: Schema::strides(shape) }
    }

    /// Number of elements (the shape's product; `None` if it overflows).
    pub fn element_count(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |acc, d| acc.checked_mul(*d))
    }

    /// Whether the strides are the compact row-major ones (dimensions of
    /// extent 1 may have any stride).
    pub fn is_compact(&self) -> bool {
        let compact = Schema::strides(&self.shape);
        self.shape.iter().zip(self.strides.iter().zip(&compact)).all(|(d, (s, c))| *d <= 1 || s == c)
    }
}

/// Bytes an op may read until it completes. Implemented for owned vectors
/// of plain numbers; bindings implement it for memory they keep alive.
pub trait HostBytes: Send + Sync + 'static {
    /// The bytes.
    fn host_bytes(&self) -> &[u8];

    /// How many bytes there are, without reading them (the payload may
    /// still be arriving: see [`HostBytes::ready`]).
    fn len(&self) -> usize {
        self.host_bytes().len()
    }

    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits until the bytes are there, or says why they never will be: a
    /// payload still being copied in (a binding's copy out of device
    /// memory, queued at enqueue) finishes here. A write's op asks before
    /// it reads its payload and fails with the reason; `host_bytes` waits
    /// too. Most payloads are there from the start.
    fn ready(&self) -> std::result::Result<(), String> {
        Ok(())
    }

    /// Whether the bytes may still be arriving (`ready` could wait): such
    /// a payload's write never runs on the submitting thread.
    fn arriving(&self) -> bool {
        false
    }
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
        let got = data.len() as u64;
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

    /// How many bytes there are, without reading them.
    pub fn byte_len(&self) -> usize {
        self.data.len()
    }

    /// Waits until the bytes are there (see [`HostBytes::ready`]).
    pub fn ready(&self) -> std::result::Result<(), String> {
        self.data.ready()
    }

    /// Whether the bytes may still be arriving (see [`HostBytes::arriving`]).
    pub fn arriving(&self) -> bool {
        self.data.arriving()
    }

    /// Where the bytes are: host memory (a device tensor is refused where a
    /// binding imports it, until a device backend is built in).
    pub fn device(&self) -> Device {
        Device::Host
    }

    /// The tensor's description (compact row-major, on the host).
    pub fn desc(&self) -> TensorDesc {
        TensorDesc::compact(self.device(), self.dtype, &self.shape)
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
    fn descriptions_tell_compact_strides() {
        let t = Tensor::from_vec(vec![0f32; 24], &[2, 3, 4]).unwrap();
        let d = t.desc();
        assert_eq!((d.device, &d.shape[..], &d.strides[..]), (Device::Host, &[2u64, 3, 4][..], &[12i64, 4, 1][..]));
        assert_eq!(d.element_count(), Some(24));
        assert!(d.is_compact());
        let strided = TensorDesc { strides: SmallVec::from_slice(&[12, 1, 3]), ..d.clone() };
        assert!(!strided.is_compact());
        let broadcast =
            TensorDesc { shape: SmallVec::from_slice(&[1, 3, 4]), strides: SmallVec::from_slice(&[0, 4, 1]), ..d };
        assert!(broadcast.is_compact(), "a dimension of extent 1 may have any stride");
    }

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
