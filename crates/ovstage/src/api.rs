//! Small argument types of the stage API.

use ovstage_types::{AttributeMode, OpId, Semantic, Token};

use crate::array_rows::ArrayRows;
use crate::tensor::Tensor;
use crate::transport::Values;

/// An attribute named by an interned token or by its text.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AttrRef<'a> {
    /// An interned token.
    Token(Token),
    /// The name's text, interned on use.
    Name(&'a str),
}

impl From<Token> for AttrRef<'_> {
    fn from(t: Token) -> Self {
        AttrRef::Token(t)
    }
}

impl<'a> From<&'a str> for AttrRef<'a> {
    fn from(s: &'a str) -> Self {
        AttrRef::Name(s)
    }
}

impl<'a> From<&'a String> for AttrRef<'a> {
    fn from(s: &'a String) -> Self {
        AttrRef::Name(s)
    }
}

/// The result of an enqueue that reserves a handle: the handle (usable at
/// once as input to later enqueues) and the op that produces its result.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Enqueued<H> {
    /// The reserved handle.
    pub handle: H,
    /// The op producing it.
    pub op: OpId,
}

/// Which of the query's prims a write addresses and which payload row each
/// takes. Logical element `i` is the query's `i`-th prim.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Selection {
    /// Every prim of the query; payload row `i` for element `i`.
    #[default]
    All,
    /// The first `count` prims; payload row `i` for element `i`.
    Leading(u32),
    /// The first `index_map.len()` prims; element `i` takes payload row
    /// `index_map[i]` (gather, reorder, broadcast).
    IndexMap(Vec<u32>),
    /// The first `count` prims, of which only those whose bit is set (bit
    /// `i % 64` of word `i / 64`) are written; the payload still has a row
    /// for every element.
    Mask {
        /// Logical element count.
        count: u32,
        /// At least `ceil(count / 64)` words.
        bits: Vec<u64>,
    },
}

/// The payload of a write: the values (fixed-size rows or arrays), which
/// prims take which row, the semantic and the schema mode.
#[derive(Debug)]
pub struct WriteData {
    pub(crate) values: Values,
    pub(crate) selection: Selection,
    pub(crate) semantic: Semantic,
    pub(crate) attribute_mode: AttributeMode,
}

impl WriteData {
    fn new(values: Values) -> WriteData {
        WriteData { values, selection: Selection::All, semantic: Semantic::None, attribute_mode: AttributeMode::Reject }
    }

    /// Fixed-size rows: `tensor`'s leading dimension is the row count and
    /// its tuple width is `dtype.lanes` times any trailing dimensions.
    pub fn fixed(tensor: Tensor) -> WriteData {
        WriteData::new(Values::Fixed(tensor))
    }

    /// An array attribute, one tensor per row (a row's leading dimension is
    /// its element count, possibly 0; trailing dimensions fold into lanes).
    pub fn array_rows(rows: Vec<Tensor>) -> WriteData {
        WriteData::new(Values::ArrayRows(ArrayRows::from_tensors(rows)))
    }

    /// An array attribute, rows described over one owner of their memory
    /// (see [`ArrayRows`]): what [`WriteData::array_rows`] does without a
    /// tensor per row.
    pub fn array_row_set(rows: ArrayRows) -> WriteData {
        WriteData::new(Values::ArrayRows(rows))
    }

    /// An array attribute whose rows all have the same length, back to back
    /// in one tensor. The row count is the number of prims addressed, or the
    /// highest index-map entry plus one.
    pub fn array_packed(tensor: Tensor) -> WriteData {
        WriteData::new(Values::ArrayPacked(tensor))
    }

    /// UTF-8 strings, one per row (the `STRING` semantic: `u8` arrays).
    pub fn strings<S: AsRef<str>>(rows: &[S]) -> WriteData {
        let tensors = rows
            .iter()
            .map(|r| {
                let bytes = r.as_ref().as_bytes().to_vec();
                let n = bytes.len() as u64;
                Tensor::new(bytes, ovstage_types::DType::U8, &[n]).expect("byte length matches")
            })
            .collect();
        WriteData::array_rows(tensors).with_semantic(Semantic::String)
    }

    /// Sets the semantic recorded when the attribute is created.
    #[inline]
    pub fn with_semantic(mut self, semantic: Semantic) -> WriteData {
        self.semantic = semantic;
        self
    }

    /// Sets which prims are written and from which rows.
    #[inline]
    pub fn with_selection(mut self, selection: Selection) -> WriteData {
        self.selection = selection;
        self
    }

    /// Sets what happens on a schema mismatch.
    #[inline]
    pub fn with_attribute_mode(mut self, mode: AttributeMode) -> WriteData {
        self.attribute_mode = mode;
        self
    }
}

/// One entry of a multi-attribute write.
#[derive(Debug)]
pub struct AttributeWrite<'a> {
    /// The attribute.
    pub attribute: AttrRef<'a>,
    /// Its payload.
    pub data: WriteData,
}

/// Which attributes a write-floor advance affects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FloorScope<'a> {
    /// Every attribute, and the floor new attributes start at.
    All,
    /// Only these.
    Include(Vec<AttrRef<'a>>),
    /// Every known attribute but these (`All` when empty).
    Exclude(Vec<AttrRef<'a>>),
}
