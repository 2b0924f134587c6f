//! Per-row array payloads: one byte range per row in memory one owner keeps
//! alive, with each row's element type, and no tensor (no allocation) per
//! row. A binding writing 100 000 rows describes them in one vector instead
//! of 100 000 boxed tensors, and the store copies them in one pass.

use ovstage_types::{DType, Error, Result};

use crate::tensor::{Tensor, fold_shape};

/// Memory holding the rows of an array payload, readable until the write
/// op that carries it completes (it is dropped then).
pub trait HostRows: Send + Sync + 'static {
    /// Number of rows.
    fn row_count(&self) -> usize;
    /// The bytes of row `i` (`i < row_count()`).
    fn row_bytes(&self, i: usize) -> &[u8];

    /// How many bytes row `i` has, without reading them.
    fn row_len(&self, i: usize) -> usize {
        self.row_bytes(i).len()
    }

    /// Waits until the rows are there (see [`crate::HostBytes::ready`]).
    fn ready(&self) -> std::result::Result<(), String> {
        Ok(())
    }
}

impl HostRows for Vec<Tensor> {
    fn row_count(&self) -> usize {
        self.len()
    }

    fn row_bytes(&self, i: usize) -> &[u8] {
        self[i].bytes()
    }

    fn row_len(&self, i: usize) -> usize {
        self[i].byte_len()
    }

    fn ready(&self) -> std::result::Result<(), String> {
        self.iter().try_for_each(Tensor::ready)
    }
}

/// The rows of an array write: each row's bytes and element type (with
/// trailing dimensions folded into lanes). Built with
/// [`ArrayRows::builder`]; written with [`crate::WriteData::array_row_set`].
pub struct ArrayRows {
    data: Box<dyn HostRows>,
    /// Each row's element type.
    elements: Vec<DType>,
    /// The first row whose shape does not fold into an element type, and
    /// why; reported when the write is planned, as for row tensors.
    fold_error: Option<(usize, String)>,
}

impl std::fmt::Debug for ArrayRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayRows").field("rows", &self.elements.len()).finish_non_exhaustive()
    }
}

/// Describes the rows of an [`ArrayRows`] one by one.
#[derive(Debug, Default)]
pub struct ArrayRowsBuilder {
    elements: Vec<DType>,
    /// Byte length each row must have.
    lens: Vec<u64>,
    fold_error: Option<(usize, String)>,
}

impl ArrayRows {
    /// A builder expecting about `rows` rows.
    pub fn builder(rows: usize) -> ArrayRowsBuilder {
        ArrayRowsBuilder { elements: Vec::with_capacity(rows), lens: Vec::with_capacity(rows), fold_error: None }
    }

    /// Rows from tensors, one per row.
    pub(crate) fn from_tensors(tensors: Vec<Tensor>) -> ArrayRows {
        let mut fold_error = None;
        let elements = tensors
            .iter()
            .enumerate()
            .map(|(i, t)| match t.as_rows() {
                Ok((_, element)) => element,
                Err(e) => {
                    fold_error.get_or_insert((i, e.message().to_owned()));
                    t.dtype()
                }
            })
            .collect();
        ArrayRows { data: Box::new(tensors), elements, fold_error }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.elements.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.elements.is_empty()
    }

    /// The bytes of row `i`.
    pub(crate) fn row(&self, i: usize) -> &[u8] {
        self.data.row_bytes(i)
    }

    /// How many bytes row `i` has, without reading them.
    pub(crate) fn row_len(&self, i: usize) -> usize {
        self.data.row_len(i)
    }

    /// Waits until the rows are there (see [`crate::HostBytes::ready`]).
    pub(crate) fn ready(&self) -> std::result::Result<(), String> {
        self.data.ready()
    }

    /// The element type every row shares, or why there is none (messages
    /// name the first offending row, `what` what is written).
    pub(crate) fn element(&self) -> std::result::Result<DType, String> {
        let checked = self.fold_error.as_ref().map_or(self.elements.len(), |(i, _)| *i);
        let first = self.elements.first().copied();
        if let Some((i, e)) = self.elements[..checked].iter().enumerate().find(|(_, e)| Some(**e) != first) {
            let first = first.expect("a row differs from the first");
            return Err(format!("array row tensors mix element types {first} and {e} (tensor {i})"));
        }
        if let Some((i, message)) = &self.fold_error {
            return Err(format!("array row tensor {i}: {message}"));
        }
        first.ok_or_else(|| "an array write needs at least one row tensor".to_owned())
    }
}

impl ArrayRowsBuilder {
    /// Describes the next row: the element type and shape of its tensor
    /// (leading dimension: the row's element count; trailing dimensions fold
    /// into lanes). A shape that does not fold is reported when the write is
    /// planned, like a row tensor's.
    pub fn push(&mut self, dtype: DType, shape: &[u64]) -> Result<()> {
        let element = dtype
            .element_bytes()
            .ok_or_else(|| Error::invalid_argument(format!("tensor dtype {dtype} has no whole-byte element size")))?;
        let len = shape
            .iter()
            .try_fold(element as u64, |acc, d| acc.checked_mul(*d))
            .ok_or_else(|| Error::invalid_argument(format!("tensor shape {shape:?} is too large")))?;
        let folded = match fold_shape(dtype, shape) {
            Ok((_, folded)) => folded,
            Err(e) => {
                self.fold_error.get_or_insert((self.elements.len(), e.message().to_owned()));
                dtype
            }
        };
        self.elements.push(folded);
        self.lens.push(len);
        Ok(())
    }

    /// Describes the next row as having the previous row's element type and
    /// trailing dimensions, and `len` bytes: cheaper than
    /// [`ArrayRowsBuilder::push`] for a run of like tensors.
    pub fn push_like_last(&mut self, len: u64) -> Result<()> {
        let last = *self
            .elements
            .last()
            .ok_or_else(|| Error::invalid_argument("push_like_last: no row was described before"))?;
        self.elements.push(last);
        self.lens.push(len);
        Ok(())
    }

    /// The rows described so far over `data`, which must hold exactly those
    /// rows with those byte lengths.
    pub fn over(self, data: impl HostRows) -> Result<ArrayRows> {
        if data.row_count() != self.elements.len() {
            return Err(Error::invalid_argument(format!(
                "{} array rows are described but the data holds {}",
                self.elements.len(),
                data.row_count()
            )));
        }
        if let Some((i, len)) = self.lens.iter().enumerate().find(|(i, len)| data.row_len(*i) as u64 != **len) {
            return Err(Error::invalid_argument(format!(
                "array row {i} needs {len} bytes but {} were given",
                data.row_len(i)
            )));
        }
        Ok(ArrayRows { data: Box::new(data), elements: self.elements, fold_error: self.fold_error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows back to back in one vector.
    struct Packed {
        bytes: Vec<u8>,
        bounds: Vec<usize>,
    }

    impl HostRows for Packed {
        fn row_count(&self) -> usize {
            self.bounds.len() - 1
        }

        fn row_bytes(&self, i: usize) -> &[u8] {
            &self.bytes[self.bounds[i]..self.bounds[i + 1]]
        }
    }

    fn packed(rows: &[&[f32]]) -> Packed {
        let mut bytes = Vec::new();
        let mut bounds = vec![0];
        for r in rows {
            bytes.extend_from_slice(bytemuck::cast_slice(r));
            bounds.push(bytes.len());
        }
        Packed { bytes, bounds }
    }

    #[test]
    fn rows_are_described_and_checked() {
        let mut b = ArrayRows::builder(2);
        b.push(DType::F32, &[2]).unwrap();
        b.push(DType::F32, &[0]).unwrap();
        let rows = b.over(packed(&[&[1., 2.], &[]])).unwrap();
        assert_eq!((rows.len(), rows.element()), (2, Ok(DType::F32)));
        assert_eq!(rows.row(0), bytemuck::cast_slice::<f32, u8>(&[1., 2.]));
        // (n, 3) rows fold into 3 lanes; mixing with 1 lane is an error.
        let mut b = ArrayRows::builder(2);
        b.push(DType::F32, &[1, 3]).unwrap();
        b.push(DType::F32, &[3]).unwrap();
        let rows = b.over(packed(&[&[1., 2., 3.], &[4., 5., 6.]])).unwrap();
        assert!(
            rows.element().unwrap_err().contains("mix element types f32x3 and f32 (tensor 1)"),
            "{:?}",
            rows.element()
        );
        // Lengths and counts must match the data.
        let mut b = ArrayRows::builder(1);
        b.push(DType::F32, &[3]).unwrap();
        assert!(b.over(packed(&[&[1.]])).unwrap_err().message().contains("needs 12 bytes but 4"));
        assert!(ArrayRows::builder(0).over(packed(&[&[1.]])).is_err());
        assert!(ArrayRows::builder(0).over(packed(&[])).unwrap().element().unwrap_err().contains("at least one"));
    }

    #[test]
    fn a_shape_that_does_not_fold_is_reported_with_its_row() {
        let mut b = ArrayRows::builder(2);
        b.push(DType::F32, &[1]).unwrap();
        b.push(DType::F32, &[]).unwrap();
        let rows = b.over(packed(&[&[1.], &[2.]])).unwrap();
        assert!(rows.element().unwrap_err().starts_with("array row tensor 1: "), "{:?}", rows.element());
    }
}
