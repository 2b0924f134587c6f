//! The transported rows of a write payload, and which query elements take
//! which row: the contract's row, count, mask and index-map rules for fixed
//! and array attributes.

use ovstage_types::{DType, Error, Result, Semantic, Status};

use crate::api::Selection;
use crate::array_rows::ArrayRows;
use crate::schema::{Storage, ValueKind};
use crate::tensor::Tensor;

/// The tensors of a write, as given.
#[derive(Debug)]
pub(crate) enum Values {
    /// Fixed-size rows stacked along the leading dimension.
    Fixed(Tensor),
    /// Array attribute, one described byte range per transported row.
    ArrayRows(ArrayRows),
    /// Array attribute, rows of equal length back to back in one tensor.
    ArrayPacked(Tensor),
}

/// Transported rows, validated: row `r`'s bytes are `row(r)`.
#[derive(Debug)]
pub(crate) struct Transport {
    values: Values,
    /// The element type (tuple width in lanes).
    pub(crate) element: DType,
    /// Bytes of every row (fixed rows, packed array rows); `None` for
    /// per-row tensors.
    uniform_row_bytes: Option<usize>,
    pub(crate) rows: u64,
}

impl Values {
    /// The payload's size in bytes (for the op timeline).
    pub(crate) fn byte_len(&self) -> u64 {
        match self {
            Values::Fixed(t) | Values::ArrayPacked(t) => t.byte_len() as u64,
            Values::ArrayRows(rows) => (0..rows.len()).map(|r| rows.row_len(r) as u64).sum(),
        }
    }

    /// Waits until the payload is there (see [`crate::HostBytes::ready`]).
    pub(crate) fn ready(&self) -> std::result::Result<(), String> {
        match self {
            Values::Fixed(t) | Values::ArrayPacked(t) => t.ready(),
            Values::ArrayRows(rows) => rows.ready(),
        }
    }
}

impl Transport {
    /// The payload's size in bytes when it is one buffer that is there
    /// already (known without a walk over rows): what decides whether a
    /// write is small enough to run on the submitting thread.
    pub(crate) fn present_bytes(&self) -> Option<u64> {
        match &self.values {
            Values::Fixed(t) | Values::ArrayPacked(t) if !t.arriving() => Some(t.byte_len() as u64),
            _ => None,
        }
    }

    /// The payload's size in bytes (for the op timeline).
    pub(crate) fn byte_len(&self) -> u64 {
        self.values.byte_len()
    }

    /// Waits until the payload is there (see [`crate::HostBytes::ready`]).
    pub(crate) fn ready(&self) -> std::result::Result<(), String> {
        self.values.ready()
    }

    pub(crate) fn kind(&self) -> ValueKind {
        match self.values {
            Values::Fixed(_) => ValueKind::Fixed,
            Values::ArrayRows(_) | Values::ArrayPacked(_) => ValueKind::Array,
        }
    }

    pub(crate) fn storage(&self) -> Storage {
        Storage { dtype: self.element, kind: self.kind() }
    }

    /// The bytes of transported row `r`.
    pub(crate) fn row(&self, r: u32) -> &[u8] {
        match (&self.values, self.uniform_row_bytes) {
            (Values::ArrayRows(rows), _) => rows.row(r as usize),
            (Values::Fixed(t) | Values::ArrayPacked(t), Some(w)) => &t.bytes()[r as usize * w..(r as usize + 1) * w],
            (Values::Fixed(_) | Values::ArrayPacked(_), None) => unreachable!("uniform transports know their width"),
        }
    }

    /// Every row's bytes back to back when rows are uniform and contiguous
    /// (row `r` is at `r * width`).
    pub(crate) fn uniform(&self) -> Option<&[u8]> {
        match (&self.values, self.uniform_row_bytes) {
            (Values::Fixed(t) | Values::ArrayPacked(t), Some(_)) => Some(t.bytes()),
            _ => None,
        }
    }

    /// The bytes of rows `0..n` when rows are uniform and contiguous.
    pub(crate) fn leading(&self, n: usize) -> Option<&[u8]> {
        match (&self.values, self.uniform_row_bytes) {
            (Values::Fixed(t) | Values::ArrayPacked(t), Some(w)) => Some(&t.bytes()[..n * w]),
            _ => None,
        }
    }
}

/// Which query elements a write addresses and which row each takes.
#[derive(Debug)]
pub(crate) enum ElementPlan {
    /// Elements `0..count`, element `i` from row `i`.
    Identity { count: u32 },
    /// Elements `0..sources.len()`, element `i` from row `sources[i]`.
    Gather { sources: Vec<u32> },
    /// Elements `0..count` whose bit is set, element `i` from row `i`.
    Masked { count: u32, bits: Vec<u64> },
}

impl ElementPlan {
    /// `(element, row)` of every element written, in element order. A mask
    /// is scanned a word at a time, so a sparse mask costs about its set
    /// bits, not its element count.
    pub(crate) fn selected(&self) -> Selected<'_> {
        match self {
            ElementPlan::Identity { count } => Selected::Range(0..*count as usize),
            ElementPlan::Gather { sources } => Selected::Gather(sources.iter().enumerate()),
            ElementPlan::Masked { count, bits } => {
                let words = &bits[..(*count as usize).div_ceil(64)];
                Selected::Mask { words, count: *count as usize, base: 0, word: words.first().copied().unwrap_or(0) }
            }
        }
    }

    /// Whether the elements written are exactly `0..n`, in order (the
    /// rows they take may be any): a gather of `n` rows writes every prim
    /// of an `n`-prim query, as an identity plan of `n` does.
    pub(crate) fn writes_first(&self, n: usize) -> bool {
        match self {
            ElementPlan::Identity { count } => *count as usize == n,
            ElementPlan::Gather { sources } => sources.len() == n,
            ElementPlan::Masked { .. } => false,
        }
    }

    /// How many elements are written.
    pub(crate) fn selected_count(&self) -> usize {
        match self {
            ElementPlan::Identity { count } => *count as usize,
            ElementPlan::Gather { sources } => sources.len(),
            ElementPlan::Masked { count, bits } => {
                // Set bits below `count`, a word at a time.
                let (full, rest) = (*count as usize / 64, *count % 64);
                let whole: u32 = bits.iter().take(full).map(|w| w.count_ones()).sum();
                let partial = match bits.get(full) {
                    Some(w) if rest > 0 => (w & ((1u64 << rest) - 1)).count_ones(),
                    _ => 0,
                };
                (whole + partial) as usize
            }
        }
    }

    fn logical_count(&self) -> u32 {
        match self {
            ElementPlan::Identity { count } | ElementPlan::Masked { count, .. } => *count,
            ElementPlan::Gather { sources } => sources.len() as u32,
        }
    }
}

/// The iterator of [`ElementPlan::selected`].
#[derive(Clone)]
pub(crate) enum Selected<'a> {
    Range(std::ops::Range<usize>),
    Gather(std::iter::Enumerate<std::slice::Iter<'a, u32>>),
    /// The set bits below `count` of `words`; `word` holds the bits of the
    /// word at `base` not yet returned.
    Mask {
        words: &'a [u64],
        count: usize,
        base: usize,
        word: u64,
    },
}

impl Iterator for Selected<'_> {
    type Item = (usize, u32);

    fn next(&mut self) -> Option<(usize, u32)> {
        match self {
            Selected::Range(r) => r.next().map(|i| (i, i as u32)),
            Selected::Gather(g) => g.next().map(|(i, s)| (i, *s)),
            Selected::Mask { words, count, base, word } => loop {
                if *word != 0 {
                    let i = *base + word.trailing_zeros() as usize;
                    *word &= *word - 1;
                    // Bits at or above `count` in the last word are ignored.
                    return (i < *count).then_some((i, i as u32));
                }
                *base += 64;
                *word = *words.get(*base / 64)?;
            },
        }
    }
}

/// Turns a tensor's shape into `(leading dimension, element type with
/// every trailing dimension folded into lanes)`.
fn fold(t: &Tensor, what: &str) -> std::result::Result<(u64, DType), String> {
    let (rows, dtype) = t.as_rows().map_err(|e| format!("{what}: {}", e.message()))?;
    if dtype.element_bytes().is_none() {
        return Err(format!("{what}: dtype {dtype} has no whole-byte element size"));
    }
    Ok((rows, dtype))
}

/// Validates `values` and `selection` against a query of `query_len` prims.
/// Errors are plain messages; the caller adds the context.
pub(crate) fn plan(
    query_len: usize,
    values: Values,
    selection: Selection,
) -> std::result::Result<(Transport, ElementPlan), String> {
    let selection = element_plan(query_len, selection)?;
    let logical = u64::from(selection.logical_count());
    let gather_rows = match &selection {
        ElementPlan::Gather { sources } => Some(sources.iter().map(|s| u64::from(*s) + 1).max().unwrap_or(0)),
        _ => None,
    };
    let transport = match values {
        Values::Fixed(t) => {
            let (rows, element) = fold(&t, "the tensor")?;
            let w = element.element_bytes().unwrap_or(0);
            Transport { values: Values::Fixed(t), element, uniform_row_bytes: Some(w), rows }
        }
        Values::ArrayRows(rows) => {
            let element = rows.element()?;
            let count = rows.len() as u64;
            Transport { values: Values::ArrayRows(rows), element, uniform_row_bytes: None, rows: count }
        }
        Values::ArrayPacked(t) => {
            let (elements, element) = fold(&t, "the packed array tensor")?;
            // Packed transport declares no row count: the index map's highest
            // entry plus one, or the logical element count.
            let rows = gather_rows.unwrap_or(logical);
            if rows == 0 {
                if elements != 0 {
                    return Err(format!("{elements} packed elements cannot be split over 0 rows"));
                }
            } else if !elements.is_multiple_of(rows) {
                return Err(format!("{elements} packed elements do not divide evenly into {rows} rows"));
            }
            let per_row = elements.checked_div(rows).unwrap_or(0) as usize;
            let w = per_row * element.element_bytes().unwrap_or(0);
            Transport { values: Values::ArrayPacked(t), element, uniform_row_bytes: Some(w), rows }
        }
    };
    match &selection {
        ElementPlan::Gather { sources } => {
            if let Some((i, s)) = sources.iter().enumerate().find(|(_, s)| u64::from(**s) >= transport.rows) {
                return Err(format!("index_map[{i}] = {s} is out of range for a payload of {} rows", transport.rows));
            }
        }
        _ if transport.rows != logical => {
            return Err(format!(
                "the payload has {} rows but the write addresses {logical} prims; without an index_map there must be one row per prim",
                transport.rows
            ));
        }
        _ => {}
    }
    Ok((transport, selection))
}

fn element_plan(query_len: usize, selection: Selection) -> std::result::Result<ElementPlan, String> {
    let too_many = |count: usize| format!("the write addresses {count} prims but the query has only {query_len}");
    Ok(match selection {
        Selection::All => ElementPlan::Identity { count: query_len as u32 },
        Selection::Leading(count) if count as usize > query_len => return Err(too_many(count as usize)),
        Selection::Leading(count) => ElementPlan::Identity { count },
        Selection::IndexMap(sources) if sources.len() > query_len => return Err(too_many(sources.len())),
        Selection::IndexMap(sources) => ElementPlan::Gather { sources },
        Selection::Mask { count, .. } if count as usize > query_len => return Err(too_many(count as usize)),
        Selection::Mask { count, bits } => {
            let words = (count as usize).div_ceil(64);
            if bits.len() < words {
                return Err(format!("a mask over {count} elements needs {words} words but has {}", bits.len()));
            }
            ElementPlan::Masked { count, bits }
        }
    })
}

/// The element types the ID and string semantics require.
pub(crate) fn check_semantic(semantic: Semantic, storage: Storage) -> Result<()> {
    use ovstage_types::DTypeCode::UInt;
    let (dtype, kind) = (storage.dtype, storage.kind);
    let need = |want: DType, only: Option<ValueKind>, what: &str| -> Result<()> {
        if dtype == want && only.is_none_or(|k| k == kind) {
            Ok(())
        } else {
            Err(Error::new(
                Status::InvalidArgument,
                format!("semantic {} requires {what}; this write is {storage}", semantic.name()),
            ))
        }
    };
    match semantic {
        Semantic::TokenId | Semantic::RelationshipPathId | Semantic::PathExpressionString => {
            need(DType::new(UInt, 64, 1), None, "u64 ids (dtype u64, one lane)")
        }
        Semantic::AssetPathId | Semantic::ConnectionPathId => {
            need(DType::new(UInt, 64, 2), Some(ValueKind::Fixed), "one (u64, u64) pair per prim (dtype u64x2, fixed)")
        }
        Semantic::String => need(DType::U8, Some(ValueKind::Array), "UTF-8 bytes (dtype u8, one lane, array)"),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows_of(t: &Transport) -> Vec<Vec<u8>> {
        (0..t.rows as u32).map(|r| t.row(r).to_vec()).collect()
    }

    #[test]
    fn fixed_rows_must_match_the_prims() {
        let t = Tensor::from_vec(vec![1u8, 2, 3, 4], &[2, 2]).unwrap();
        let (tr, plan) = plan(2, Values::Fixed(t), Selection::All).unwrap();
        assert_eq!(rows_of(&tr), vec![vec![1, 2], vec![3, 4]]);
        assert_eq!(plan.selected().collect::<Vec<_>>(), vec![(0, 0), (1, 1)]);
        let t = Tensor::from_vec(vec![1u8, 2], &[2]).unwrap();
        assert!(plan_err(3, Values::Fixed(t), Selection::All).contains("2 rows but the write addresses 3"));
    }

    fn plan_err(n: usize, v: Values, s: Selection) -> String {
        plan(n, v, s).unwrap_err()
    }

    #[test]
    fn packed_arrays_infer_their_rows() {
        let t = Tensor::from_vec(vec![1u32, 2, 3, 4, 5, 6], &[6]).unwrap();
        let (tr, _) = plan(3, Values::ArrayPacked(t), Selection::All).unwrap();
        assert_eq!(tr.rows, 3);
        assert_eq!(tr.row(1), bytemuck::cast_slice::<u32, u8>(&[3, 4]));
        // An index map declares the partition: highest entry + 1 rows.
        let t = Tensor::from_vec(vec![1u32, 2, 3, 4, 5, 6], &[6]).unwrap();
        let (tr, plan) = plan(2, Values::ArrayPacked(t), Selection::IndexMap(vec![5, 0])).unwrap();
        assert_eq!((tr.rows, tr.row(5).len()), (6, 4));
        assert_eq!(plan.selected().collect::<Vec<_>>(), vec![(0, 5), (1, 0)]);
        let t = Tensor::from_vec(vec![1u32; 5], &[5]).unwrap();
        assert!(plan_err(2, Values::ArrayPacked(t), Selection::All).contains("do not divide evenly"));
    }

    #[test]
    fn per_row_arrays_may_be_empty_but_share_a_type() {
        let rows = vec![
            Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap(),
            Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap(),
        ];
        let (tr, _) = plan(2, Values::ArrayRows(ArrayRows::from_tensors(rows)), Selection::All).unwrap();
        assert_eq!((tr.row(0).len(), tr.row(1).len()), (8, 0));
        let mixed = vec![Tensor::from_vec(vec![1.0f32], &[1]).unwrap(), Tensor::from_vec(vec![1.0f64], &[1]).unwrap()];
        assert!(
            plan_err(2, Values::ArrayRows(ArrayRows::from_tensors(mixed)), Selection::All)
                .contains("mix element types")
        );
    }

    proptest::proptest! {
        /// The word-wise mask scan selects exactly the set bits below the
        /// count, in order, whatever lies past it.
        #[test]
        fn masks_select_their_set_bits(count in 0u32..300, words in proptest::collection::vec(proptest::num::u64::ANY, 5)) {
            let plan = ElementPlan::Masked { count, bits: words.clone() };
            let expect: Vec<(usize, u32)> = (0..count as usize)
                .filter(|i| words[i / 64] & (1 << (i % 64)) != 0)
                .map(|i| (i, i as u32))
                .collect();
            proptest::prop_assert_eq!(plan.selected_count(), expect.len());
            proptest::prop_assert_eq!(plan.selected().collect::<Vec<_>>(), expect);
        }
    }

    #[test]
    fn id_semantics_need_their_types() {
        let fixed = |dtype| Storage { dtype, kind: ValueKind::Fixed };
        assert!(check_semantic(Semantic::TokenId, fixed(DType::U64)).is_ok());
        assert!(check_semantic(Semantic::TokenId, fixed(DType::U32)).is_err());
        assert!(check_semantic(Semantic::String, Storage { dtype: DType::U8, kind: ValueKind::Array }).is_ok());
        assert!(check_semantic(Semantic::String, fixed(DType::U8)).is_err());
        assert!(check_semantic(Semantic::AssetPathId, fixed(DType::U64.with_lanes(2))).is_ok());
        assert!(check_semantic(Semantic::Point, fixed(DType::F32.with_lanes(3))).is_ok());
    }
}
