//! Read groups: zero-copy views of one attribute over a subset of a query's
//! prims.

use std::fmt;
use std::sync::Arc;

use ovstage_types::{DType, Error, Ordinal, PathList, ReadGroupId, Result, Semantic, Token};
use smallvec::SmallVec;

use crate::store::column::Image;
use crate::tensor::Element;

/// Values or tombstones.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GroupKind {
    /// The prims' values.
    Values,
    /// The prims' cells were deleted (change-range reads only).
    Tombstones,
}

/// Which prims of the query's path list a group covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrimGroup {
    /// The query's path list (borrowed: valid while the query is).
    pub list: PathList,
    /// First covered index when `index_map` is `None`.
    pub offset: u32,
    /// Number of covered prims.
    pub count: u32,
    /// Indices into `list` of the covered prims, when they are not the
    /// contiguous run `offset..offset + count`.
    pub index_map: Option<Arc<[u32]>>,
}

impl PrimGroup {
    /// Index into the path list of the group's `i`-th prim.
    pub fn list_index(&self, i: usize) -> u32 {
        match &self.index_map {
            Some(map) => map[i],
            None => self.offset + i as u32,
        }
    }
}

/// Write floor and layout generation of the attribute when the group was
/// produced.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AttributeMeta {
    /// Everything at or below this ordinal is sealed.
    pub write_floor: Ordinal,
    /// Changes when prims are added to or removed from the attribute.
    pub layout_generation: u64,
}

/// The values of a value group: a view into pinned, immutable storage.
#[derive(Clone)]
pub struct GroupData {
    pub(crate) image: Arc<Image>,
    pub(crate) byte_offset: usize,
    pub(crate) rows: u64,
    pub(crate) row_bytes: usize,
    pub(crate) dtype: DType,
    pub(crate) shape: SmallVec<[u64; 3]>,
    pub(crate) strides: SmallVec<[i64; 3]>,
    pub(crate) index_map: Option<Arc<[u32]>>,
}

impl fmt::Debug for GroupData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupData")
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .field("index_map", &self.index_map)
            .finish_non_exhaustive()
    }
}

impl GroupData {
    /// The tensor's bytes (`rows` rows).
    pub fn bytes(&self) -> &[u8] {
        &self.image.data.bytes()[self.byte_offset..self.byte_offset + self.rows as usize * self.row_bytes]
    }

    /// Start of the tensor's bytes (for zero-copy hand-off).
    pub fn as_ptr(&self) -> *const u8 {
        self.bytes().as_ptr()
    }

    /// The values as `T` (which must match the dtype).
    pub fn values<T: Element>(&self) -> Result<&[T]> {
        if T::DTYPE != self.dtype {
            return Err(Error::invalid_argument(format!("group holds {} values, not {}", self.dtype, T::DTYPE)));
        }
        bytemuck::try_cast_slice(self.bytes()).map_err(|e| Error::internal(format!("misaligned group data: {e}")))
    }

    /// Element type of the tensor (`lanes == 1`; components are dimensions).
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Shape: `[rows]`, `[rows, C]` or `[rows, S, S]`.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// Compact row-major strides in elements.
    pub fn strides(&self) -> &[i64] {
        &self.strides
    }

    /// Rows in the tensor.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.row_bytes
    }

    /// Tensor row of each logical element, when not the identity.
    pub fn index_map(&self) -> Option<&[u32]> {
        self.index_map.as_deref()
    }

    /// The bytes of logical element `i`'s row.
    pub fn row(&self, i: usize) -> &[u8] {
        let r = self.index_map.as_ref().map_or(i, |m| m[i] as usize);
        &self.bytes()[r * self.row_bytes..(r + 1) * self.row_bytes]
    }
}

/// One read result group.
#[derive(Clone, Debug)]
pub struct ReadGroup {
    pub(crate) id: ReadGroupId,
    pub(crate) attribute: Token,
    pub(crate) ordinal: Ordinal,
    pub(crate) kind: GroupKind,
    pub(crate) semantic: Semantic,
    pub(crate) prims: PrimGroup,
    pub(crate) data: Option<GroupData>,
    pub(crate) meta: AttributeMeta,
}

impl ReadGroup {
    /// Identity of this group (unique within the stage).
    pub fn id(&self) -> ReadGroupId {
        self.id
    }

    /// The attribute.
    pub fn attribute(&self) -> Token {
        self.attribute
    }

    /// Informational ordinal: the newest change of the column the values
    /// come from.
    pub fn ordinal(&self) -> Ordinal {
        self.ordinal
    }

    /// Values or tombstones.
    pub fn kind(&self) -> GroupKind {
        self.kind
    }

    /// Whether this is a tombstone group.
    pub fn is_delete(&self) -> bool {
        self.kind == GroupKind::Tombstones
    }

    /// Whether the attribute is a variable-length array.
    pub fn is_array(&self) -> bool {
        false
    }

    /// The attribute's semantic.
    pub fn semantic(&self) -> Semantic {
        self.semantic
    }

    /// The prims covered.
    pub fn prims(&self) -> &PrimGroup {
        &self.prims
    }

    /// The values (`None` for tombstone groups).
    pub fn data(&self) -> Option<&GroupData> {
        self.data.as_ref()
    }

    /// Floor and layout generation.
    pub fn meta(&self) -> AttributeMeta {
        self.meta
    }

    /// Number of prims covered.
    pub fn len(&self) -> usize {
        self.prims.count as usize
    }

    /// Whether the group covers no prims.
    pub fn is_empty(&self) -> bool {
        self.prims.count == 0
    }

    /// `(index in the path list, row of `T` values)` for each covered prim.
    pub fn rows<T: Element>(&self) -> Result<Vec<(u32, &[T])>> {
        let Some(data) = &self.data else { return Ok(Vec::new()) };
        data.values::<T>()?;
        Ok((0..self.len()).map(|i| (self.prims.list_index(i), bytemuck::cast_slice(data.row(i)))).collect())
    }
}
