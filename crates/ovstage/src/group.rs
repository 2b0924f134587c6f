//! Read groups: zero-copy views of one attribute over a subset of a query's
//! prims.

use std::fmt;
use std::sync::Arc;

use ovstage_types::{DType, Device, Error, Ordinal, PathList, ReadGroupId, Result, Semantic, Token};
use smallvec::SmallVec;

use crate::store::image::{ArrayRef, Image};
use crate::tensor::{Element, TensorDesc};

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

/// One tensor of a group: a view into pinned, immutable storage, with
/// scalar lanes and the components as trailing dimensions.
#[derive(Clone, Debug)]
pub struct TensorView<'a> {
    bytes: &'a [u8],
    desc: TensorDesc,
}

impl<'a> TensorView<'a> {
    /// The bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The values as `T` (which must match the dtype).
    pub fn values<T: Element>(&self) -> Result<&'a [T]> {
        typed(self.bytes, self.desc.dtype)
    }

    /// Element type (`lanes == 1`).
    pub fn dtype(&self) -> DType {
        self.desc.dtype
    }

    /// Shape: `[n]`, `[n, C]` or `[n, S, S]`.
    pub fn shape(&self) -> &[u64] {
        &self.desc.shape
    }

    /// Compact row-major strides in elements.
    pub fn strides(&self) -> &[i64] {
        &self.desc.strides
    }

    /// Where the bytes are.
    pub fn device(&self) -> Device {
        self.desc.device
    }

    /// The view's description, as a binding exports it.
    pub fn desc(&self) -> &TensorDesc {
        &self.desc
    }
}

fn typed<T: Element>(bytes: &[u8], dtype: DType) -> Result<&[T]> {
    if T::DTYPE != dtype {
        return Err(Error::invalid_argument(format!("group holds {dtype} values, not {}", T::DTYPE)));
    }
    if bytes.is_empty() {
        return Ok(&[]);
    }
    bytemuck::try_cast_slice(bytes).map_err(|e| Error::internal(format!("misaligned group data: {e}")))
}

/// How a group's values lie in the pinned image.
#[derive(Clone, Debug)]
pub(crate) enum Layout {
    /// One tensor of `rows` rows starting at `byte_offset`; logical element
    /// `i` is row `index_map[i]` (or `i`).
    Fixed { byte_offset: usize, rows: u64, row_bytes: usize, index_map: Option<Arc<[u32]>> },
    /// One tensor per logical element.
    Array { rows: Arc<[ArrayRef]> },
    /// One tensor per logical element: rows `start..start + len` of the
    /// image's array index, shared rather than copied (a read of thousands
    /// of rows would otherwise copy 24 bytes per row and free them on
    /// release).
    ArraySpan { start: usize, len: usize },
}

/// The values of a value group: zero-copy views into pinned, immutable
/// storage. A fixed-size attribute has one tensor (rows stacked); an array
/// attribute has one tensor per prim.
#[derive(Clone)]
pub struct GroupData {
    pub(crate) image: Arc<Image>,
    /// Scalar element type.
    pub(crate) dtype: DType,
    /// Trailing dimensions of one element (`[]`, `[C]` or `[S, S]`).
    pub(crate) components: SmallVec<[u64; 2]>,
    pub(crate) layout: Layout,
    /// Shape and strides of the fixed-size tensor (empty for arrays).
    pub(crate) shape: SmallVec<[u64; 3]>,
    pub(crate) strides: SmallVec<[i64; 3]>,
}

/// Which immutable image a group's values come from: the same for groups
/// of one image, and never the same as a later image's, even one at the
/// same address (it holds a weak reference, which keeps the address from
/// being reused). What a binding keys copies of the values by (the
/// placement extension's device copies); it keeps no values alive.
#[derive(Clone)]
pub struct ImageIdentity(std::sync::Weak<Image>);

impl ImageIdentity {
    /// Whether both name the same image.
    pub fn same(&self, other: &ImageIdentity) -> bool {
        std::sync::Weak::ptr_eq(&self.0, &other.0)
    }

    /// Whether the image is still held (by a column or a group); a copy
    /// keyed by a dead image can never be asked for again.
    pub fn is_live(&self) -> bool {
        self.0.strong_count() > 0
    }

    /// A number to hash by (equal for the same image; two live images never
    /// share one).
    pub fn addr(&self) -> usize {
        self.0.as_ptr() as *const () as usize
    }
}

impl fmt::Debug for ImageIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ImageIdentity({:#x})", self.addr())
    }
}

impl fmt::Debug for GroupData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupData")
            .field("dtype", &self.dtype)
            .field("components", &self.components)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl GroupData {
    fn element_bytes(&self) -> usize {
        self.dtype.lane_bytes().unwrap_or(0) * self.components.iter().product::<u64>() as usize
    }

    fn view<'a>(&'a self, bytes: &'a [u8], leading: u64) -> TensorView<'a> {
        let mut shape: SmallVec<[u64; 3]> = SmallVec::from_slice(&[leading]);
        shape.extend_from_slice(&self.components);
        TensorView { bytes, desc: TensorDesc::compact(self.device(), self.dtype, &shape) }
    }

    /// Whether this is an array attribute's group (one tensor per prim).
    pub fn is_array(&self) -> bool {
        matches!(self.layout, Layout::Array { .. } | Layout::ArraySpan { .. })
    }

    /// Number of tensors: 1 for fixed-size attributes, one per prim for
    /// arrays.
    pub fn tensor_count(&self) -> usize {
        match &self.layout {
            Layout::Fixed { .. } => 1,
            Layout::Array { .. } | Layout::ArraySpan { .. } => self.array_refs().len(),
        }
    }

    /// Tensor `i`.
    pub fn tensor(&self, i: usize) -> TensorView<'_> {
        match &self.layout {
            Layout::Fixed { rows, .. } => self.view(self.fixed_bytes(), *rows),
            Layout::Array { .. } | Layout::ArraySpan { .. } => {
                let bytes = self.row(i);
                let n = bytes.len().checked_div(self.element_bytes()).unwrap_or(0) as u64;
                self.view(bytes, n)
            }
        }
    }

    /// Trailing dimensions of one element: `[]`, `[C]` or `[S, S]`. Every
    /// tensor of the group has the shape `[n]` followed by these, with
    /// compact row-major strides.
    pub fn element_dims(&self) -> &[u64] {
        &self.components
    }

    /// The leading dimension of each tensor of an array group (its row's
    /// element count), in tensor order; nothing for a fixed-size group.
    /// Reads no element bytes.
    pub fn array_lengths(&self) -> impl ExactSizeIterator<Item = u64> + Clone + '_ {
        let element = self.element_bytes() as u64;
        // Rows of one group mostly have one length: remember the last
        // division.
        let mut last = (0u64, 0u64);
        self.array_refs().iter().map(move |r| {
            if r.len != last.0 {
                last = (r.len, r.len.checked_div(element).unwrap_or(0));
            }
            last.1
        })
    }

    /// The bytes of each tensor of an array group (each row's elements),
    /// in tensor order; nothing for a fixed-size group. Tensor `i` has the
    /// shape `[n, element_dims()...]`, `n` from
    /// [`GroupData::array_lengths`], with compact row-major strides: the
    /// same tensors as [`GroupData::tensor`], without building a
    /// description per tensor, for bindings that describe thousands of
    /// them at once.
    pub fn array_bytes(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.image.array_rows(self.array_refs())
    }

    fn array_refs(&self) -> &[ArrayRef] {
        match &self.layout {
            Layout::Array { rows } => rows,
            Layout::ArraySpan { start, len } => {
                self.image.arrays.as_ref().map_or(&[], |index| &index.refs[*start..*start + *len])
            }
            Layout::Fixed { .. } => &[],
        }
    }

    fn fixed_bytes(&self) -> &[u8] {
        match &self.layout {
            Layout::Fixed { byte_offset, rows, row_bytes, .. } => {
                &self.image.fixed_bytes()[*byte_offset..*byte_offset + *rows as usize * row_bytes]
            }
            Layout::Array { .. } | Layout::ArraySpan { .. } => &[],
        }
    }

    /// The bytes of logical element `i` (its row, or its whole array).
    pub fn row(&self, i: usize) -> &[u8] {
        match &self.layout {
            Layout::Fixed { row_bytes, index_map, .. } => {
                let r = index_map.as_ref().map_or(i, |m| m[i] as usize);
                &self.fixed_bytes()[r * row_bytes..(r + 1) * row_bytes]
            }
            Layout::Array { .. } | Layout::ArraySpan { .. } => self.image.array_row(self.array_refs()[i]),
        }
    }

    /// Tensor row of each logical element, when not the identity (fixed-size
    /// groups only).
    pub fn index_map(&self) -> Option<&[u32]> {
        match &self.layout {
            Layout::Fixed { index_map, .. } => index_map.as_deref(),
            Layout::Array { .. } | Layout::ArraySpan { .. } => None,
        }
    }

    /// The fixed-size tensor's bytes (empty for arrays).
    pub fn bytes(&self) -> &[u8] {
        self.fixed_bytes()
    }

    /// Start of the fixed-size tensor's bytes (for zero-copy hand-off).
    pub fn as_ptr(&self) -> *const u8 {
        self.fixed_bytes().as_ptr()
    }

    /// The fixed-size tensor's values as `T` (which must match the dtype).
    pub fn values<T: Element>(&self) -> Result<&[T]> {
        if self.is_array() {
            return Err(Error::invalid_argument("an array group has one tensor per prim; use tensor(i)"));
        }
        typed(self.fixed_bytes(), self.dtype)
    }

    /// Element type (`lanes == 1`; components are dimensions).
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Shape of the fixed-size tensor: `[rows]`, `[rows, C]` or
    /// `[rows, S, S]` (empty for arrays: see [`GroupData::tensor`]).
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// Compact row-major strides of the fixed-size tensor, in elements.
    pub fn strides(&self) -> &[i64] {
        &self.strides
    }

    /// The image the values come from (see [`ImageIdentity`]).
    pub fn image_identity(&self) -> ImageIdentity {
        ImageIdentity(Arc::downgrade(&self.image))
    }

    /// Where the values are: the memory of the image the group pins.
    pub fn device(&self) -> Device {
        self.image.device
    }

    /// Bytes of one fixed-size row.
    pub fn row_bytes(&self) -> usize {
        match &self.layout {
            Layout::Fixed { row_bytes, .. } => *row_bytes,
            Layout::Array { .. } | Layout::ArraySpan { .. } => 0,
        }
    }

    /// Rows in the fixed-size tensor.
    pub fn rows(&self) -> u64 {
        match &self.layout {
            Layout::Fixed { rows, .. } => *rows,
            Layout::Array { .. } | Layout::ArraySpan { .. } => self.array_refs().len() as u64,
        }
    }
}

/// A binding's own description of a group (for the C ABI, its `DLTensor`s),
/// built by the stage's [`GroupPreparer`] when the read ran.
pub type Prepared = Box<dyn std::any::Any + Send + Sync>;

/// Builds a binding's description of each group of a read while the read
/// runs (on a lane, off the fetching thread), so that fetching a group only
/// hands it over. Set with [`crate::Stage::set_group_preparer`].
pub type GroupPreparer = Box<dyn Fn(&ReadGroup) -> Option<Prepared> + Send + Sync>;

/// What a preparer built for one group. A clone of the group carries none
/// (a binding builds its own again when it needs it).
#[derive(Debug, Default)]
pub(crate) struct PreparedSlot(pub(crate) Option<Prepared>);

impl Clone for PreparedSlot {
    fn clone(&self) -> Self {
        PreparedSlot(None)
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
    pub(crate) is_array: bool,
    /// What the stage's preparer built for this group, until taken.
    pub(crate) prepared: PreparedSlot,
}

impl ReadGroup {
    /// Identity of this group (unique within the stage).
    pub fn id(&self) -> ReadGroupId {
        self.id
    }

    /// Takes what the stage's [`GroupPreparer`] built for this group, if
    /// one is set and built something (once: later calls give `None`).
    pub fn take_prepared(&mut self) -> Option<Prepared> {
        self.prepared.0.take()
    }

    /// Replaces what the binding's preparer built for this group (a
    /// [`crate::ReadFinisher`] that moved the group's data elsewhere
    /// describes it anew).
    pub fn set_prepared(&mut self, prepared: Prepared) {
        self.prepared = PreparedSlot(Some(prepared));
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
        self.is_array
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
        (0..self.len()).map(|i| Ok((self.prims.list_index(i), typed(data.row(i), data.dtype)?))).collect()
    }
}
