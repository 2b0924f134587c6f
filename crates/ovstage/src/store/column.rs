//! A column: the values of one attribute schema over the prims that carry
//! it, kept as ordinal-keyed versions.
//!
//! Each prim that ever had a cell in the column owns one row, assigned in
//! first-write order and never moved, so a query whose prims were created
//! together maps to one contiguous run of rows. A version holds what changed
//! at its ordinal as parts (written rows with their bytes, or deleted rows);
//! its *image* is the full state of the column at that ordinal (every row's
//! bytes plus which rows are live). Images are built only for sealed
//! versions, when a read or the retention trim needs them: a write covering
//! every row becomes the image directly (no copy), a partial write is folded
//! onto the previous image, in place when nothing else holds that image.
//! A read pins an image through its `Arc`, so the bytes it sees never change
//! while it holds them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use ovstage_types::{AdmissionPolicy, PrimPath, Semantic};
use smallvec::SmallVec;

use super::backend::{AllocFailed, Buffer, ColumnMemory, StorageBackend};
use super::image::{ArrayIndex, ArrayRef, Image, compact, recycle, recycle_part};
use super::liveness::Liveness;
use super::rows::{RowSet, Rows};
use crate::schema::{Schema, Storage, ValueKind};
use ovstage_types::sorted::prefix_len;
use ovstage_types::sync::lock;

/// Row index of a prim without a row.
const NO_ROW: u32 = u32::MAX;

/// Most bytes of freed buffers a column's pool keeps.
const POOL_MAX_BYTES: usize = 8 << 20;

/// One change applied at a version's ordinal, in submission order.
#[derive(Debug)]
pub(crate) enum Part {
    /// `data` holds one row of bytes per entry of `rows`, in that order.
    Write {
        rows: Rows,
        data: Arc<Buffer>,
    },
    /// Array rows: row `i` of `rows` is `data[offsets[i]..offsets[i + 1]]`.
    WriteArray {
        rows: Rows,
        data: Arc<Buffer>,
        offsets: Arc<[u64]>,
    },
    Delete {
        rows: Rows,
    },
}

impl Part {
    /// Heap bytes the part holds (payload and array offsets).
    fn bytes(&self) -> usize {
        self.rows().heap_bytes()
            + match self {
                Part::Write { data, .. } => data.len(),
                Part::WriteArray { data, offsets, .. } => data.len() + std::mem::size_of_val(&**offsets),
                Part::Delete { .. } => 0,
            }
    }

    pub(super) fn rows(&self) -> &Rows {
        match self {
            Part::Write { rows, .. } | Part::WriteArray { rows, .. } | Part::Delete { rows } => rows,
        }
    }

    fn data(&self) -> Option<&Arc<Buffer>> {
        match self {
            Part::Write { data, .. } | Part::WriteArray { data, .. } => Some(data),
            Part::Delete { .. } => None,
        }
    }
}

/// The parts of a version: usually one write, kept inline.
pub(super) type Parts = SmallVec<[Part; 1]>;

#[cfg(test)]
thread_local! {
    /// Tests: `merge_below_head` off, so its result can be compared with
    /// the slow path's.
    static SLOW_MERGES_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[derive(Debug)]
pub(crate) struct Version {
    pub(crate) ordinal: u64,
    /// Lowest ordinal whose changes this version holds: below `ordinal` when
    /// older versions were merged into it (see [`ColumnGuard::publish`]);
    /// snapshots strictly inside `[from, ordinal)` are not exact.
    pub(super) from: u64,
    pub(super) parts: Parts,
    /// Where each part sorts: its ordinal, or 0 for the parts a merge
    /// compacted (they precede every later arrival). A change published
    /// into a merged span after the merge (its ordinal inside the span,
    /// its cells changed by nothing newer when it was admitted) goes after
    /// the compacted parts but before later arrivals at higher ordinals,
    /// which may change the same cells and may have run first.
    pub(super) keys: SmallVec<[u64; 1]>,
    /// Sum of the parts' [`Part::bytes`].
    pub(super) bytes: usize,
    /// Rows whose last change at this ordinal is a write.
    pub(super) written: RowSet,
    /// Rows whose last change at this ordinal is a delete.
    pub(super) deleted: RowSet,
    pub(super) nrows: u32,
    pub(super) image: Option<Arc<Image>>,
}

impl Version {
    /// Whether its first part writes every row, so that its state folds
    /// from its own parts alone.
    pub(super) fn stands_alone(&self) -> bool {
        matches!(
            self.parts.first(),
            Some(Part::Write { rows, .. } | Part::WriteArray { rows, .. }) if rows.covers_all(self.nrows)
        )
    }

    fn new(ordinal: u64, nrows: u32) -> Version {
        Version {
            ordinal,
            from: ordinal,
            parts: Parts::new(),
            keys: SmallVec::new(),
            bytes: 0,
            written: RowSet::new(),
            deleted: RowSet::new(),
            nrows,
            image: None,
        }
    }

    fn merged(&self) -> bool {
        self.from < self.ordinal
    }

    /// A version at `ordinal`: the column's spare box when it has one (its
    /// row sets' words reused), else a new one.
    fn boxed(spare: &mut Option<Box<Version>>, ordinal: u64, nrows: u32) -> Box<Version> {
        let Some(mut v) = spare.take() else { return Box::new(Version::new(ordinal, nrows)) };
        debug_assert!(v.parts.is_empty() && v.image.is_none(), "a spare version holds no data");
        // A new version, but with the old one's (emptied) allocations.
        let (mut keys, mut written, mut deleted) =
            (std::mem::take(&mut v.keys), std::mem::take(&mut v.written), std::mem::take(&mut v.deleted));
        keys.clear();
        written.clear();
        deleted.clear();
        *v = Version { keys, written, deleted, ..Version::new(ordinal, nrows) };
        v
    }
}

/// The rows of a query's prims in a column: `None` for prims without a row.
#[derive(Debug, Clone)]
pub(crate) enum RowMap {
    /// Every prim has a row and they are consecutive.
    Run {
        start: u32,
        len: u32,
    },
    Sparse(Arc<SparseRows>),
}

/// A row map that is not one run: each element's row, and (built on first
/// use) the elements of each row, so a change read visits only the rows
/// that changed.
#[derive(Debug)]
pub(crate) struct SparseRows {
    rows: Box<[Option<u32>]>,
    any: bool,
    by_row: OnceLock<Box<[(u32, u32)]>>,
    spanned: OnceLock<Option<Spanned>>,
}

/// A sparse row map in which every element has a row, as a span of rows
/// and each element's offset into it: a read of such a map whose rows are
/// all live is a view of the span through this index map, shared by every
/// read instead of rebuilt by each.
#[derive(Debug)]
pub(crate) struct Spanned {
    /// The lowest row.
    pub(crate) first: u32,
    /// Rows from `first` to the highest row, inclusive.
    pub(crate) len: u32,
    /// Element `i` is row `first + offsets[i]`; `None` when that is `i`.
    pub(crate) offsets: Option<Arc<[u32]>>,
}

impl SparseRows {
    /// [`SparseRows::spanned`] if a read built it already (it walks every
    /// element once).
    pub(crate) fn spanned_if_built(&self) -> Option<&Spanned> {
        self.spanned.get().and_then(Option::as_ref)
    }

    /// The map as a [`Spanned`], when every element has a row (built once).
    pub(crate) fn spanned(&self) -> Option<&Spanned> {
        self.spanned
            .get_or_init(|| {
                let rows: Option<Vec<u32>> = self.rows.iter().copied().collect();
                let rows = rows?;
                let first = *rows.iter().min()?;
                let last = *rows.iter().max()?;
                let in_order = rows.iter().enumerate().all(|(i, r)| *r == first + i as u32);
                let offsets = (!in_order).then(|| rows.iter().map(|r| r - first).collect());
                Some(Spanned { first, len: last - first + 1, offsets })
            })
            .as_ref()
    }
}

impl RowMap {
    pub(crate) fn len(&self) -> usize {
        match self {
            RowMap::Run { len, .. } => *len as usize,
            RowMap::Sparse(sparse) => sparse.rows.len(),
        }
    }

    pub(crate) fn get(&self, i: usize) -> Option<u32> {
        match self {
            RowMap::Run { start, .. } => Some(start + i as u32),
            RowMap::Sparse(sparse) => sparse.rows[i],
        }
    }

    /// Whether no element has a row.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            RowMap::Run { len, .. } => *len == 0,
            RowMap::Sparse(sparse) => !sparse.any,
        }
    }

    /// `(element, row)` for every element whose row is in `rows`, in
    /// element order. Costs the size of `rows`, not of the map.
    pub(crate) fn elements_of(&self, rows: impl Iterator<Item = u32>) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        match self {
            RowMap::Run { start, len } => {
                out.extend(rows.filter(|r| r.wrapping_sub(*start) < *len).map(|r| (r - start, r)));
            }
            RowMap::Sparse(sparse) => {
                let by_row = sparse.by_row.get_or_init(|| {
                    let mut pairs: Vec<(u32, u32)> =
                        sparse.rows.iter().enumerate().filter_map(|(i, r)| r.map(|r| (r, i as u32))).collect();
                    pairs.sort_unstable();
                    pairs.into()
                });
                for r in rows {
                    let first = by_row.partition_point(|p| p.0 < r);
                    out.extend(by_row[first..].iter().take_while(|p| p.0 == r).map(|p| (p.1, r)));
                }
                out.sort_unstable();
            }
        }
        out
    }
}

/// How many unsealed versions a column keeps exact before it merges the
/// newest.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Never more than this many (at least 2: merging takes two).
    pub(crate) max_versions: usize,
    /// Up to this many (or `max_versions` when lower) whatever their size.
    pub(crate) min_versions: usize,
    /// More than `min_versions` only while their parts' bytes fit in this.
    pub(crate) max_bytes: usize,
}

impl Limits {
    /// Limits of a count cap alone.
    #[cfg(test)]
    pub(crate) fn versions(max_versions: usize) -> Limits {
        Limits { max_versions, min_versions: max_versions, max_bytes: usize::MAX }
    }

    /// Whether `count` unsealed versions holding `bytes()` bytes are too
    /// many.
    fn exceeded(&self, count: usize, bytes: impl FnOnce() -> usize) -> bool {
        count > self.max_versions || (count > self.min_versions && bytes() > self.max_bytes)
    }
}

/// Which versions a publish may merge: those above `floor` (the submitted
/// floor: a read may be admitted at any ordinal up to it) and below `below`
/// (the lowest ordinal still to be published: a change published inside a
/// merged span would land after newer changes of the span).
#[derive(Copy, Clone, Debug)]
pub(crate) struct MergeBound {
    pub(crate) floor: u64,
    pub(crate) below: u64,
}

/// How many versions without an image a snapshot read of a few rows walks
/// back through before it builds the image instead.
const MAX_PICK_WALK: usize = 32;

/// What [`ColumnGuard::pick_at`] found.
pub(crate) enum Picked {
    /// The column had no version at or below the ordinal: no values.
    Empty,
    /// History at the ordinal was trimmed or merged; exact snapshots start
    /// at `oldest` (or above).
    Trimmed { oldest: u64 },
    /// The live picked rows' values, packed in the order asked, as of the
    /// version at `ordinal`; `live[i]` says whether the `i`-th row asked was
    /// live there.
    Rows { image: Arc<Image>, ordinal: u64, live: Vec<bool> },
}

/// What a snapshot lookup found.
pub(crate) enum Snapshot {
    /// The column had no version at or below the ordinal: no values.
    Empty,
    /// The image of the newest version at or below the ordinal.
    Image { image: Arc<Image>, ordinal: u64 },
    /// History at the ordinal was trimmed or merged; exact snapshots start
    /// at `oldest` (or above).
    Trimmed { oldest: u64 },
}

pub(crate) struct ColumnState {
    /// Each prim's row (`NO_ROW`: none yet). Rows are only ever appended
    /// (a deleted prim keeps its row), so a prim's row never changes once
    /// given and the row count tells whether any was given since (what a
    /// query's cached row map is checked against).
    row_of: Vec<u32>,
    /// Each row's prim.
    prim_of: Vec<PrimPath>,
    /// Boxed: a merge removes from the middle, and shifting pointers is
    /// much cheaper than shifting whole versions.
    pub(super) versions: VecDeque<Box<Version>>,
    /// A version removed by a merge or a trim, emptied of its data, for the
    /// next publish: a write loop creates one version and drops one per
    /// tick, and this saves both allocations and the row sets' words.
    spare: Option<Box<Version>>,
    /// Sum of the versions' `bytes`: with a thousand unsealed versions,
    /// summing them at every publish would cost more than the write.
    bytes: usize,
    /// Highest ordinal of a version dropped by the retention trim.
    trimmed_through: Option<u64>,
    layout_generation: u64,
    /// Rows whose most recently published change was a delete; a write to
    /// one of them is a structural change (layout generation).
    dead: RowSet,
    /// Rows that may not be live at the newest version (for `structure`).
    liveness: Liveness,
}

impl ColumnState {
    /// The bytes of the versions from `first` (the unsealed ones): the
    /// total less the (usually few) sealed versions', or the unsealed
    /// ones' when they are fewer.
    fn unsealed_bytes(&self, first: usize) -> usize {
        if first <= self.versions.len() - first {
            self.bytes - self.versions.range(..first).map(|v| v.bytes).sum::<usize>()
        } else {
            self.versions.range(first..).map(|v| v.bytes).sum()
        }
    }
}

/// A column of one attribute storage (dtype and kind). Its semantic is
/// fixed once a write records a role other than `NONE`; prims of another
/// role under the same name live in another column of the family.
pub(crate) struct Column {
    pub(crate) storage: Storage,
    semantic: AtomicU32,
    pub(crate) row_bytes: usize,
    /// The memory the column's buffers live in.
    pub(crate) memory: ColumnMemory,
    /// Unsealed versions kept exact before the newest are merged.
    limits: Limits,
    /// Bumped (under the state lock, after the change) by every publish
    /// that may change which rows are live at the newest version; read
    /// without the lock to validate cached filter-query results.
    structure: AtomicU64,
    /// The highest ordinal any change was published at (raised under the
    /// state lock); read without the lock, so a change read's cost can be
    /// estimated at enqueue without locking columns it has nothing to read in.
    last_change: AtomicU64,
    state: Mutex<ColumnState>,
}

impl Column {
    pub(crate) fn new(storage: Storage, limits: Limits) -> Column {
        let max_versions = limits.max_versions.max(2);
        let limits = Limits { max_versions, min_versions: limits.min_versions.clamp(2, max_versions), ..limits };
        Column {
            row_bytes: storage.row_bytes(),
            limits,
            structure: AtomicU64::new(0),
            last_change: AtomicU64::new(0),
            storage,
            semantic: AtomicU32::new(Semantic::None as u32),
            // Freed buffers a column keeps for reuse: enough for a write
            // loop that merges or trims as it goes to find its next buffer
            // there, not the whole unsealed budget.
            memory: ColumnMemory::new(limits.max_bytes.min(POOL_MAX_BYTES)),
            state: Mutex::new(ColumnState {
                row_of: Vec::new(),
                prim_of: Vec::new(),
                versions: VecDeque::new(),
                spare: None,
                bytes: 0,
                trimmed_through: None,
                layout_generation: 1,
                dead: RowSet::new(),
                liveness: Liveness::default(),
            }),
        }
    }

    /// Changes whenever the rows live at the newest version may have
    /// changed (monotonic).
    pub(crate) fn structure(&self) -> u64 {
        self.structure.load(Ordering::Acquire)
    }

    pub(crate) fn semantic(&self) -> Semantic {
        Semantic::from_raw(self.semantic.load(Ordering::Acquire)).unwrap_or_default()
    }

    /// The full schema (storage plus current semantic).
    pub(crate) fn schema(&self) -> Schema {
        Schema { dtype: self.storage.dtype, kind: self.storage.kind, semantic: self.semantic() }
    }

    /// Records `semantic` unless the column already has another role.
    /// `NONE` requests no role and always fits. Returns the conflicting role.
    pub(crate) fn adopt_semantic(&self, semantic: Semantic) -> Result<(), Semantic> {
        if semantic == Semantic::None {
            return Ok(());
        }
        match self.semantic.compare_exchange(
            Semantic::None as u32,
            semantic as u32,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => Ok(()),
            Err(current) if current == semantic as u32 => Ok(()),
            Err(current) => Err(Semantic::from_raw(current).unwrap_or_default()),
        }
    }

    /// Whether a write of `storage` with `semantic` fits this column: the
    /// same storage, and a role it fits.
    pub(crate) fn fits(&self, storage: Storage, semantic: Semantic) -> bool {
        let current = self.semantic();
        self.storage == storage && (semantic == Semantic::None || current == Semantic::None || current == semantic)
    }

    pub(crate) fn lock(&self) -> ColumnGuard<'_> {
        ColumnGuard { column: self, state: lock(&self.state) }
    }

    /// The highest ordinal a change was published at (0 before any). Every
    /// change at or below an ordinal a read runs after is counted: the
    /// publish happens before the advance the read waits for completes. A
    /// trim or merge needs a change at or above the ordinals it affects, so
    /// a column with `last_change() < start` has nothing to report in a
    /// change range from `start`, not even an `OUT_OF_RANGE`.
    pub(crate) fn last_change(&self) -> u64 {
        self.last_change.load(Ordering::Acquire)
    }

    /// An upper bound on the rows changed in `[start, end]`, counted up to
    /// `cap` (a cost estimate, not a result: a change published meanwhile
    /// may be missed). Takes no lock when nothing changed at or above
    /// `start`, the usual case for most attributes of a wide change read.
    pub(crate) fn changed_rows_hint(&self, start: u64, end: u64, cap: usize) -> usize {
        if start > end || self.last_change() < start {
            return 0;
        }
        self.lock().changed_count_between(start, end, cap)
    }
}

/// The locked state of a column, with the column's constants at hand.
pub(crate) struct ColumnGuard<'a> {
    pub(super) column: &'a Column,
    pub(super) state: MutexGuard<'a, ColumnState>,
}

fn prim_index(p: PrimPath) -> usize {
    (p.get() - 1) as usize
}

/// A row [`ColumnGuard::cells_at`] has still to resolve, and the range of
/// its sorted `(row, slot)` list that the row's value fills (the row's own
/// slot when the rows asked for strictly increase, and there is no list).
struct Pending {
    row: u32,
    slots_start: u32,
    slots_end: u32,
    done: bool,
}

impl ColumnGuard<'_> {
    pub(crate) fn nrows(&self) -> u32 {
        self.state.prim_of.len() as u32
    }

    pub(crate) fn layout_generation(&self) -> u64 {
        self.state.layout_generation
    }

    pub(crate) fn row_of(&self, prim: PrimPath) -> Option<u32> {
        self.state.row_of.get(prim_index(prim)).copied().filter(|r| *r != NO_ROW)
    }

    pub(crate) fn prim_of(&self, row: u32) -> PrimPath {
        self.state.prim_of[row as usize]
    }

    /// Rows of `prims`, assigning new rows (in order) to prims without one.
    pub(crate) fn assign_rows(&mut self, prims: impl Iterator<Item = PrimPath>) -> Rows {
        let st = &mut *self.state;
        let mut out = Vec::with_capacity(prims.size_hint().0);
        let mut added = false;
        let first_new = st.prim_of.len() as u32;
        for p in prims {
            let idx = prim_index(p);
            if idx >= st.row_of.len() {
                st.row_of.resize(idx + 1, NO_ROW);
            }
            if st.row_of[idx] == NO_ROW {
                st.row_of[idx] = st.prim_of.len() as u32;
                st.prim_of.push(p);
                added = true;
            }
            out.push(st.row_of[idx]);
        }
        if added {
            st.layout_generation += 1;
            st.liveness.assigned(first_new, st.prim_of.len() as u32 - first_new);
        }
        Rows::from_vec(out)
    }

    /// Rows of `prims` without assigning any.
    pub(crate) fn row_map(&self, prims: &[PrimPath]) -> RowMap {
        let rows: Vec<Option<u32>> = prims.iter().map(|p| self.row_of(*p)).collect();
        match rows.first() {
            Some(Some(start)) if rows.iter().enumerate().all(|(i, r)| *r == Some(start + i as u32)) => {
                RowMap::Run { start: *start, len: rows.len() as u32 }
            }
            None => RowMap::Run { start: 0, len: 0 },
            _ => {
                let any = rows.iter().any(Option::is_some);
                RowMap::Sparse(Arc::new(SparseRows {
                    rows: rows.into(),
                    any,
                    by_row: OnceLock::new(),
                    spanned: OnceLock::new(),
                }))
            }
        }
    }

    /// A copy of `row`'s bytes at the newest published version (sealed or
    /// not), or `None` when it is not live there.
    pub(crate) fn latest_row(&self, row: u32) -> Option<Vec<u8>> {
        self.row_at(row, u64::MAX)
    }

    /// A copy of `row`'s bytes as of `at`: at the newest version at or
    /// below it (sealed or not), or `None` when it is not live there.
    pub(crate) fn row_at(&self, row: u32, at: u64) -> Option<Vec<u8>> {
        self.cell_at(row, at).map(<[u8]>::to_vec)
    }

    /// `row`'s bytes as of `at`, found without building an image: in the
    /// newest version at or below `at` that has an image or changed the
    /// row. `None` when the row is not live there.
    fn cell_at(&self, row: u32, at: u64) -> Option<&[u8]> {
        let row_bytes = self.column.row_bytes;
        let newest = self.newest_at(at)?;
        for v in self.state.versions.range(..=newest).rev() {
            if let Some(image) = &v.image {
                if row >= image.nrows || !image.live.contains(row) {
                    return None;
                }
                return Some(match &image.arrays {
                    Some(arrays) => arrays.bytes(arrays.refs[row as usize]),
                    None => &image.data.bytes()[row as usize * row_bytes..(row as usize + 1) * row_bytes],
                });
            }
            if v.written.contains(row) {
                // The last part naming the row is a write (`written`).
                for part in v.parts.iter().rev() {
                    let Some(i) = part.rows().last_position(row) else { continue };
                    return match part {
                        Part::Write { data, .. } => Some(&data.bytes()[i * row_bytes..(i + 1) * row_bytes]),
                        Part::WriteArray { data, offsets, .. } => {
                            Some(&data.bytes()[offsets[i] as usize..offsets[i + 1] as usize])
                        }
                        Part::Delete { .. } => None,
                    };
                }
            }
            if v.deleted.contains(row) {
                return None;
            }
        }
        None
    }

    /// Each of `rows`' bytes as of `at` (`None` where not live there),
    /// found in one walk of the versions (see [`Self::cells_at`]).
    pub(crate) fn cells_as_of(&self, rows: &[u32], at: u64) -> Vec<Option<&[u8]>> {
        match self.newest_at(at) {
            Some(idx) => self.cells_at(rows, idx),
            None => vec![None; rows.len()],
        }
    }

    /// Each of `rows`' bytes at the version at `idx` (`None` where not
    /// live), found by walking back from it until every row is resolved by
    /// a version's image or by the last part that names it. Costs the parts
    /// walked, which for rows changed in a range are the range's.
    fn cells_at(&self, rows: &[u32], idx: usize) -> Vec<Option<&[u8]>> {
        let row_bytes = self.column.row_bytes;
        let mut cells: Vec<Option<&[u8]>> = vec![None; rows.len()];
        // `(row, slot)` sorted: the slots a resolved row fills. Rows strictly
        // increasing (a path list in creation order, the usual case) fill
        // one slot each, their own index: no list is needed then (empty).
        let strictly_increasing = rows.windows(2).all(|w| w[0] < w[1]);
        let slots: Vec<(u32, u32)> = if strictly_increasing {
            Vec::new()
        } else {
            let mut slots: Vec<(u32, u32)> = rows.iter().enumerate().map(|(i, r)| (*r, i as u32)).collect();
            slots.sort_unstable();
            slots
        };
        // The distinct rows still to resolve, sorted, each with the range of
        // `slots` it fills (of `cells`, when there is no list). Lookups are
        // merges or binary searches over them: sized by the rows asked for,
        // never by the column (a bitset over row indices costs the column's
        // size to build when the rows lie far apart).
        let mut pending: Vec<Pending> = Vec::with_capacity(rows.len());
        if strictly_increasing {
            pending.extend(rows.iter().zip(0u32..).map(|(&row, i)| Pending {
                row,
                slots_start: i,
                slots_end: i + 1,
                done: false,
            }));
        } else {
            for (i, s) in slots.iter().enumerate() {
                match pending.last_mut() {
                    Some(p) if p.row == s.0 => p.slots_end = i as u32 + 1,
                    _ => {
                        pending.push(Pending { row: s.0, slots_start: i as u32, slots_end: i as u32 + 1, done: false })
                    }
                }
            }
        }
        fn fill<'a>(slots: &[(u32, u32)], cells: &mut [Option<&'a [u8]>], p: &mut Pending, cell: Option<&'a [u8]>) {
            p.done = true;
            if slots.is_empty() {
                cells[p.slots_start as usize] = cell;
                return;
            }
            for s in &slots[p.slots_start as usize..p.slots_end as usize] {
                cells[s.1 as usize] = cell;
            }
        }
        for v in self.state.versions.range(..=idx).rev() {
            if pending.is_empty() {
                break;
            }
            if let Some(image) = &v.image {
                for p in &mut pending {
                    let live = p.row < image.nrows && image.live.contains(p.row);
                    let cell = live.then(|| match &image.arrays {
                        Some(arrays) => arrays.bytes(arrays.refs[p.row as usize]),
                        None => &image.data.bytes()[p.row as usize * row_bytes..(p.row as usize + 1) * row_bytes],
                    });
                    fill(&slots, &mut cells, p, cell);
                }
                break;
            }
            // A version changing none of the pending rows (its `written`
            // and `deleted` sets) is passed over without walking its parts.
            if !pending.iter().any(|p| v.written.contains(p.row) || v.deleted.contains(p.row)) {
                continue;
            }
            for part in v.parts.iter().rev() {
                let cell = |i: usize| match part {
                    Part::Write { data, .. } => Some(&data.bytes()[i * row_bytes..(i + 1) * row_bytes]),
                    Part::WriteArray { data, offsets, .. } => {
                        Some(&data.bytes()[offsets[i] as usize..offsets[i + 1] as usize])
                    }
                    Part::Delete { .. } => None,
                };
                match part.rows() {
                    Rows::Run { start, len } => {
                        // The pending rows inside the run, found by bisection.
                        let from = pending.partition_point(|p| p.row < *start);
                        let end = u64::from(*start) + u64::from(*len);
                        let to = pending.partition_point(|p| u64::from(p.row) < end);
                        for p in &mut pending[from..to] {
                            if !p.done {
                                let c = cell((p.row - start) as usize);
                                fill(&slots, &mut cells, p, c);
                            }
                        }
                    }
                    Rows::List(list) if list.windows(2).all(|w| w[0] < w[1]) => {
                        // Increasing without repeats (a path list in
                        // creation order): one merge with the pending rows.
                        let mut k = 0;
                        for (i, &row) in list.iter().enumerate() {
                            while k < pending.len() && pending[k].row < row {
                                k += 1;
                            }
                            if k == pending.len() {
                                break;
                            }
                            if pending[k].row == row && !pending[k].done {
                                fill(&slots, &mut cells, &mut pending[k], cell(i));
                            }
                        }
                    }
                    Rows::List(list) => {
                        // The last entry naming a row is its value.
                        for (i, &row) in list.iter().enumerate().rev() {
                            if let Ok(k) = pending.binary_search_by_key(&row, |p| p.row)
                                && !pending[k].done
                            {
                                fill(&slots, &mut cells, &mut pending[k], cell(i));
                            }
                        }
                    }
                }
            }
            pending.retain(|p| !p.done);
        }
        cells
    }

    /// Whether picking a few rows as of `at` ([`Self::pick_at`]) is cheaper
    /// than the image there: the image is not built yet, and at most
    /// [`MAX_PICK_WALK`] versions lie between it and the newest older image
    /// (beyond that, building the image once serves every later read).
    pub(crate) fn cheap_to_pick(&self, at: u64) -> bool {
        let Some(idx) = self.newest_at(at) else { return true };
        let walk = self.state.versions.range(..=idx).rev().take_while(|v| v.image.is_none()).count();
        walk > 0 && walk <= MAX_PICK_WALK
    }

    /// The values of a few `rows` as of `at`, without building the column's
    /// image there (a copy of every row): the live ones packed back to back
    /// in a small image (with its own array index for array columns), in
    /// the order given, and which were live. A change read picking a handful of rows out of a large column
    /// costs what it returns.
    pub(crate) fn pick_at(&self, rows: &[u32], at: u64) -> Result<Picked, AllocFailed> {
        if let Some(exact_from) = self.inside_merge(at) {
            return Ok(Picked::Trimmed { oldest: exact_from });
        }
        let Some(idx) = self.newest_at(at) else {
            return Ok(match (self.state.trimmed_through, self.state.versions.front()) {
                (Some(_), Some(oldest)) => Picked::Trimmed { oldest: oldest.ordinal },
                _ => Picked::Empty,
            });
        };
        let cells = self.cells_at(rows, idx);
        let live: Vec<bool> = cells.iter().map(Option::is_some).collect();
        let count = cells.iter().flatten().count();
        let len = cells.iter().flatten().map(|c| c.len()).sum();
        let data = Arc::new(self.column.memory.upload_ranges(cells.iter().flatten().copied(), len)?);
        let device = self.column.memory.device();
        let (data, arrays) = match self.column.storage.kind {
            ValueKind::Fixed => (data, None),
            ValueKind::Array => {
                let mut start = 0u64;
                let refs = (cells.iter().flatten())
                    .map(|c| {
                        let r = ArrayRef { buf: 0, start, len: c.len() as u64 };
                        start += c.len() as u64;
                        r
                    })
                    .collect();
                (Arc::new(self.column.memory.empty()), Some(ArrayIndex { bufs: vec![data], refs, kept: 1 }))
            }
        };
        let image = Image { data, arrays, live: RowSet::full(count as u32), nrows: count as u32, device };
        Ok(Picked::Rows { image: Arc::new(image), ordinal: self.state.versions[idx].ordinal, live })
    }

    /// The newest retained change to one of `rows` that a change at
    /// `ordinal` may not precede under `policy` (for ops ordered with every
    /// mutation, whose checks run when they execute).
    pub(crate) fn changed_above(&self, rows: &Rows, ordinal: u64, policy: AdmissionPolicy) -> Option<u64> {
        let strict = match policy {
            AdmissionPolicy::FloorOnly => return None,
            AdmissionPolicy::NonDecreasing => false,
            AdmissionPolicy::StrictlyIncreasing => true,
        };
        self.state
            .versions
            .iter()
            .rev()
            .take_while(|v| v.ordinal > ordinal || (strict && v.ordinal == ordinal))
            .find(|v| v.written.first_hit(rows).is_some() || v.deleted.first_hit(rows).is_some())
            .map(|v| v.ordinal)
    }

    /// Adds to `out` (bits over prim indices) every prim whose row is live
    /// at the newest published version: one pass over the newest image's
    /// live set and the versions after it, instead of a lookup per prim.
    pub(crate) fn add_live_prims(&self, out: &mut RowSet) {
        let st = &*self.state;
        let base = st.versions.iter().rposition(|v| v.image.is_some());
        let mut live = base.and_then(|b| st.versions[b].image.as_ref()).map_or_else(RowSet::new, |i| i.live.clone());
        for v in st.versions.range(base.map_or(0, |b| b + 1)..) {
            live.subtract(&v.deleted);
            live.union_with(&v.written);
        }
        for row in live.iter() {
            if let Some(p) = st.prim_of.get(row as usize) {
                out.insert(prim_index(*p) as u32);
            }
        }
    }

    /// Whether `row` is live at the newest published version.
    pub(crate) fn live_at_latest(&self, row: u32) -> bool {
        for v in self.state.versions.iter().rev() {
            if v.written.contains(row) {
                return true;
            }
            if v.deleted.contains(row) {
                return false;
            }
            if let Some(image) = &v.image {
                return image.live.contains(row);
            }
        }
        false
    }

    /// Publishes a change at `ordinal`: into the version at that ordinal, or
    /// the merged version whose span holds it, or a new version. When the
    /// versions above the bound's floor exceed the column's [`Limits`] (a
    /// producer running ahead of its seals, or never sealing: more than
    /// `max_versions` of them, or more than `min_versions` holding more
    /// than `max_bytes`), the newest of them are merged (see
    /// [`ColumnGuard::merge_excess`]) and the buffers the merge drops go
    /// back to the pool, so memory stays bounded and a write loop reuses
    /// its buffers; snapshots strictly inside a merged span become
    /// `OUT_OF_RANGE`. The oldest unsealed versions, which the next floor
    /// advances seal, stay exact. Versions at or below the bound's floor
    /// are never merged, nor versions at or above the lowest ordinal still
    /// to be published.
    pub(crate) fn publish(&mut self, ordinal: u64, part: Part, bound: MergeBound) {
        let nrows = self.nrows();
        let st = &mut *self.state;
        let mut pos = prefix_len(&st.versions, |v| v.ordinal < ordinal);
        if st.versions.get(pos).is_none_or(|v| v.from > ordinal) {
            if pos == st.versions.len() {
                self.merge_below_head(ordinal, part.bytes(), bound);
                pos = self.state.versions.len();
            }
            let st = &mut *self.state;
            let v = Version::boxed(&mut st.spare, ordinal, nrows);
            st.versions.insert(pos, v);
        }
        self.publish_into(pos, nrows, ordinal, part, bound)
    }

    /// The first merge [`ColumnGuard::merge_excess`] would make once a
    /// new newest version at `ordinal` is in place, made before it is, and
    /// cheaply, when the newest version holds one write of every row: in a
    /// write loop that never seals (or runs far ahead of its seals) the
    /// previous tick then replaces the head span's data with its own (the
    /// span's buffers go back to the pool) instead of being merged into
    /// the span and compacted with it (a tenth of a one-value write's
    /// instructions). The result is the slow merge's: that write covers
    /// every row the span held, so the span's rows and deletes all give
    /// way to it. Nothing happens when the slow path would merge other
    /// versions or none (not over the limits, either version sealed or
    /// still receiving changes below the bound), or the newest version
    /// holds anything else.
    fn merge_below_head(&mut self, ordinal: u64, incoming: usize, bound: MergeBound) {
        #[cfg(test)]
        if SLOW_MERGES_ONLY.with(std::cell::Cell::get) {
            return;
        }
        let limits = self.column.limits;
        let st = &mut *self.state;
        let n = st.versions.len();
        if n < 2 || ordinal < bound.below {
            // With `ordinal` below the bound the new version itself is the
            // first the slow path merges.
            return;
        }
        let (span, newest) = (&st.versions[n - 2], &st.versions[n - 1]);
        let covering = matches!(
            newest.parts.as_slice(),
            [Part::Write { rows, .. } | Part::WriteArray { rows, .. }] if newest.nrows > 0 && rows.covers_all(newest.nrows)
        );
        if !covering || span.ordinal <= bound.floor || newest.ordinal >= bound.below {
            return;
        }
        let first = prefix_len(&st.versions, |v| v.ordinal <= bound.floor);
        // Counted as the slow path counts them, the new version included.
        let unsealed = n + 1 - first;
        if !limits.exceeded(unsealed, || st.unsealed_bytes(first) + incoming) {
            return;
        }
        let Some(mut newest) = st.versions.pop_back() else { return };
        let span = st.versions.back_mut().expect("two versions");
        debug_assert!(span.image.is_none() && newest.image.is_none(), "unsealed versions have no image");
        debug_assert!(newest.deleted.is_empty(), "one write deletes nothing");
        let dropped = span.bytes;
        span.ordinal = newest.ordinal;
        span.nrows = span.nrows.max(newest.nrows);
        std::mem::swap(&mut span.written, &mut newest.written);
        std::mem::swap(&mut span.deleted, &mut newest.deleted);
        std::mem::swap(&mut span.parts, &mut newest.parts);
        span.keys.clear();
        span.keys.push(0);
        span.bytes = newest.bytes;
        st.bytes -= dropped;
        newest.parts.drain(..).for_each(|p| recycle_part(&self.column.memory, p));
        st.spare = Some(newest);
    }

    /// [`ColumnGuard::publish`] into the version at `pos`, which holds
    /// `ordinal` in its span, of a column of `nrows` rows.
    fn publish_into(&mut self, pos: usize, nrows: u32, ordinal: u64, part: Part, bound: MergeBound) {
        let st = &mut *self.state;
        // Row counts never decrease with ordinal: a version sees every row
        // an older version may have made live.
        for later in st.versions.range_mut(pos..) {
            later.nrows = later.nrows.max(nrows);
        }
        let is_newest_version = pos + 1 == st.versions.len();
        let v = &mut st.versions[pos];
        // Parts only ever join unsealed versions, which have no image yet.
        debug_assert!(v.image.is_none(), "publishing into a materialized version");
        v.image = None;
        // In ordinal order: before parts that arrived earlier at higher
        // ordinals of a merged span (see `Version::keys`). Rows those parts
        // change keep the status they give.
        let at = v.keys.partition_point(|k| *k <= ordinal);
        let hidden = (at < v.parts.len()).then(|| {
            let mut later = RowSet::new();
            v.parts[at..].iter().for_each(|p| later.insert_rows(p.rows()));
            later
        });
        let newest = is_newest_version && hidden.is_none();
        let visible = |rows| visible_rows(rows, hidden.as_ref());
        let structural = match &part {
            Part::Write { rows, .. } | Part::WriteArray { rows, .. } => {
                let shown = visible(rows);
                v.written.insert_rows(&shown);
                v.deleted.remove_rows(&shown);
                if st.dead.first_hit(rows).is_some() {
                    st.dead.remove_rows(rows);
                    st.layout_generation += 1;
                }
                st.liveness.written(rows, newest)
            }
            Part::Delete { rows } => {
                let shown = visible(rows);
                v.deleted.insert_rows(&shown);
                v.written.remove_rows(&shown);
                st.dead.insert_rows(rows);
                st.layout_generation += 1;
                st.liveness.deleted(rows);
                true
            }
        };
        if structural {
            self.column.structure.fetch_add(1, Ordering::Release);
        }
        self.column.last_change.fetch_max(ordinal, Ordering::Release);
        let v = &mut st.versions[pos];
        v.bytes += part.bytes();
        st.bytes += part.bytes();
        v.parts.insert(at, part);
        v.keys.insert(at, ordinal);
        self.merge_excess(bound);
    }

    /// Merges unsealed versions while they exceed the limits, newest
    /// first: each step merges the two newest versions below `bound.below`
    /// (a version at or above it may still receive a change at a lower
    /// ordinal than its own, which must not land after it inside a span).
    /// Merging at the head keeps the oldest unsealed versions, those a
    /// reader chasing the floor asks for next, exact; and in a write loop
    /// that never seals, the previous tick joins the head span, whose
    /// compaction frees its older buffer at once, so the loop cycles
    /// through a few buffers.
    fn merge_excess(&mut self, bound: MergeBound) {
        let limits = self.column.limits;
        loop {
            let st = &mut *self.state;
            let first = prefix_len(&st.versions, |v| v.ordinal <= bound.floor);
            let unsealed = st.versions.range(first..);
            // The unsealed bytes: the total less the (usually few) sealed
            // versions', or the unsealed ones' when they are fewer.
            if !limits.exceeded(unsealed.len(), || st.unsealed_bytes(first)) {
                return;
            }
            let end = prefix_len(&st.versions, |v| v.ordinal < bound.below);
            if end < first + 2 {
                return;
            }
            let i = end - 2;
            debug_assert!(st.versions[i].image.is_none() && st.versions[i + 1].image.is_none());
            let mut newer = st.versions.remove(i + 1).expect("i + 1 is in range");
            let v = &mut st.versions[i];
            v.ordinal = newer.ordinal;
            v.nrows = v.nrows.max(newer.nrows);
            v.written.subtract(&newer.deleted);
            v.written.union_with(&newer.written);
            v.deleted.subtract(&newer.written);
            v.deleted.union_with(&newer.deleted);
            v.parts.extend(newer.parts.drain(..));
            let newer_bytes = newer.bytes;
            st.spare = Some(newer);
            let parts = std::mem::take(&mut v.parts);
            v.keys.clear();
            let nrows = v.nrows;
            let merged = compact(parts, nrows, self.column.row_bytes, &self.column.memory);
            let st = &mut *self.state;
            let v = &mut st.versions[i];
            let before = v.bytes + newer_bytes;
            v.bytes = merged.iter().map(Part::bytes).sum();
            st.bytes = st.bytes + v.bytes - before;
            v.keys = merged.iter().map(|_| 0).collect();
            v.parts = merged;
        }
    }

    /// The lowest ordinal from which snapshots up to `floor` are exact as
    /// far as merging goes: the end of the newest merged span that starts
    /// at or below `floor` (0 when none does). Spans wholly above `floor`
    /// hold unsealed data no read can ask for yet.
    pub(crate) fn oldest_exact(&self, floor: u64) -> u64 {
        self.state.versions.iter().filter(|v| v.merged() && v.from <= floor).map(|v| v.ordinal).max().unwrap_or(0)
    }

    /// Index of the newest version at or below `ordinal`.
    fn newest_at(&self, ordinal: u64) -> Option<usize> {
        prefix_len(&self.state.versions, |v| v.ordinal <= ordinal).checked_sub(1)
    }

    /// The merged version whose span strictly contains `ordinal`, if any.
    fn inside_merge(&self, ordinal: u64) -> Option<u64> {
        let next = prefix_len(&self.state.versions, |v| v.ordinal <= ordinal);
        self.state.versions.get(next).filter(|v| v.from <= ordinal).map(|v| v.ordinal)
    }

    /// Whether the column's state as of `from` is still its state as of
    /// `to` (`from <= to`, both sealed): no retained change lies in
    /// `(from, to]`, `from` is not inside a merged span, and, when nothing
    /// is retained at or below `from`, nothing older was trimmed away.
    pub(crate) fn unchanged_between(&self, from: u64, to: u64) -> bool {
        if self.inside_merge(from).is_some() {
            return false;
        }
        let at = self.newest_at(from);
        if at.is_none() && self.state.trimmed_through.is_some() {
            return false;
        }
        at == self.newest_at(to)
    }

    /// Whether a snapshot of the rows `map` names as of `at` is a view of
    /// an image built already, with no row to walk or copy (what a read's
    /// snapshot then hands out): a fixed-size column (an array read
    /// describes each row) whose image at `at` exists and holds every row
    /// of the map's run, or of its span built already, live.
    pub(crate) fn view_ready(&self, at: u64, map: &RowMap) -> bool {
        if self.inside_merge(at).is_some() {
            return false;
        }
        let Some(image) = self.newest_at(at).and_then(|idx| self.state.versions[idx].image.as_ref()) else {
            return false;
        };
        let (first, len) = match map {
            RowMap::Run { start, len } => (*start, *len),
            RowMap::Sparse(sparse) => match sparse.spanned_if_built() {
                Some(span) => (span.first, span.len),
                None => return false,
            },
        };
        image.arrays.is_none() && image.holds_live(first, len)
    }

    /// The column's state as of `ordinal` (which must be sealed).
    pub(crate) fn snapshot(&mut self, ordinal: u64) -> Snapshot {
        if let Some(exact_from) = self.inside_merge(ordinal) {
            return Snapshot::Trimmed { oldest: exact_from };
        }
        match self.newest_at(ordinal) {
            Some(idx) => {
                let image = self.image_at(idx, false);
                Snapshot::Image { image, ordinal: self.state.versions[idx].ordinal }
            }
            None => match (self.state.trimmed_through, self.state.versions.front()) {
                (Some(_), Some(oldest)) => Snapshot::Trimmed { oldest: oldest.ordinal },
                _ => Snapshot::Empty,
            },
        }
    }

    /// An upper bound on the rows changed in `[start, end]` (a row changed
    /// at several ordinals counts once per ordinal), counted up to `cap`.
    fn changed_count_between(&self, start: u64, end: u64, cap: usize) -> usize {
        let versions = &self.state.versions;
        // A merged version covers `[from, ordinal]`: it is in the range
        // when its ordinal is at or above `start`.
        let first = versions.partition_point(|v| v.ordinal < start);
        let mut count = 0usize;
        for v in versions.range(first..).take_while(|v| v.from <= end) {
            // The parts' row counts, not the versions' row sets: a set's
            // count walks words up to its highest row, which on a large
            // column costs more than the read being placed.
            count = count.saturating_add(v.parts.iter().map(|p| p.rows().len()).sum());
            if count >= cap {
                return cap;
            }
        }
        count
    }

    /// Rows changed in `[start, end]`, or `Err(oldest retained ordinal)` when
    /// history in that range was trimmed.
    pub(crate) fn changed_between(&self, start: u64, end: u64) -> Result<RowSet, u64> {
        if self.state.trimmed_through.is_some_and(|t| t >= start) {
            return Err(self.state.versions.front().map_or(end, |v| v.ordinal));
        }
        // A merged span must lie wholly inside or outside the range.
        if let Some(v) = self
            .state
            .versions
            .iter()
            .find(|v| v.merged() && v.from <= end && v.ordinal >= start && (v.from < start || v.ordinal > end))
        {
            return Err(v.ordinal);
        }
        let mut changed = RowSet::new();
        for v in self.state.versions.iter().filter(|v| v.ordinal >= start && v.ordinal <= end) {
            changed.union_with(&v.written);
            changed.union_with(&v.deleted);
        }
        Ok(changed)
    }

    /// Drops versions no snapshot at or above `frontier` needs: every
    /// version older than the newest one at or below it, whose image is
    /// built first (reusing the older buffer in place when nothing else
    /// holds it) unless it stands alone. Freed buffers go back to the
    /// column's pool.
    pub(crate) fn trim(&mut self, frontier: u64) {
        let Some(base) = self.newest_at(frontier) else { return };
        // A version whose first part writes every row folds from nothing
        // older: it stands alone without an image (a read builds one when it
        // asks). Building it here cost a trim most of its time, spent on
        // the writers' cache lines, for an image no read may ever ask for.
        if !self.state.versions[base].stands_alone() {
            self.image_at(base, true);
        }
        if base == 0 {
            return;
        }
        let memory = &self.column.memory;
        let st = &mut *self.state;
        for mut v in st.versions.drain(..base) {
            st.bytes -= v.bytes;
            st.trimmed_through = Some(st.trimmed_through.map_or(v.ordinal, |t| t.max(v.ordinal)));
            // Parts first: a full write's buffer is also its version's image.
            v.parts.drain(..).for_each(|p| recycle_part(memory, p));
            if let Some(image) = v.image.take().and_then(|i| Arc::try_unwrap(i).ok()) {
                recycle(memory, image.data);
                // An array image's buffers are its versions' parts: without
                // this they went back to the allocator, and the next writes
                // took fresh (page-faulting) ones.
                image.arrays.into_iter().flat_map(|index| index.bufs).for_each(|b| recycle(memory, b));
            }
            st.spare = Some(v);
        }
    }

    /// The ordinal of the column's last change when, as far as snapshots
    /// at or above `bound` go, it holds nothing: no version above `bound`
    /// and no row live in the one version it keeps (after [`trim`]), or
    /// no version at all (0 then). `None` otherwise.
    ///
    /// [`trim`]: ColumnGuard::trim
    pub(crate) fn dead_through(&self, bound: u64) -> Option<u64> {
        match self.state.versions.len() {
            0 => Some(0),
            1 => {
                let v = &self.state.versions[0];
                (v.ordinal < bound && v.image.as_ref().is_some_and(|i| i.live.is_empty())).then_some(v.ordinal)
            }
            _ => None,
        }
    }

    /// Number of retained versions and their distinct buffer bytes.
    pub(crate) fn retained(&self) -> (usize, usize) {
        let mut bytes = 0;
        let mut seen: Vec<*const Buffer> = Vec::new();
        let mut count = |b: &Arc<Buffer>| {
            let p = Arc::as_ptr(b);
            if !seen.contains(&p) {
                seen.push(p);
                bytes += b.len();
            }
        };
        for v in &self.state.versions {
            if let Some(i) = &v.image {
                count(&i.data);
            }
            for part in &v.parts {
                if let Some(data) = part.data() {
                    count(data);
                }
            }
        }
        (self.state.versions.len(), bytes)
    }
}

/// `rows` less those in `hidden` (borrowed when there are none).
fn visible_rows<'a>(rows: &'a Rows, hidden: Option<&RowSet>) -> std::borrow::Cow<'a, Rows> {
    match hidden {
        None => std::borrow::Cow::Borrowed(rows),
        Some(h) => std::borrow::Cow::Owned(Rows::from_vec(
            (0..rows.len()).map(|i| rows.get(i)).filter(|r| !h.contains(*r)).collect(),
        )),
    }
}

#[cfg(test)]
mod tests {
    //! The column against a per-row model: random writes and deletes at
    //! random ordinals, trims to a moving frontier, snapshots and change
    //! ranges at every retained ordinal, with read groups held across trims.

    use super::super::buf::Buf;
    use super::*;
    use crate::schema::ValueKind;
    use crate::store::backend::StorageBackend;
    use ovstage_types::DType;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Clone, Debug)]
    enum Step {
        /// With `defer`, admitted now and published at the next `Flush`,
        /// `Seal` or `Hold`: a mutation still to run, whose ordinal bounds
        /// merging (`MergeBound::below`) meanwhile.
        Write {
            ordinal: u64,
            rows: Vec<u32>,
            value: u32,
            defer: bool,
        },
        /// Publishes the deferred writes, newest submission first.
        Flush,
        Delete {
            ordinal: u64,
            rows: Vec<u32>,
        },
        /// Seal up to `back` below the highest ordinal so far (a floor
        /// advance may leave unsealed versions, and merged spans, above it)
        /// and trim `lag` behind it.
        Seal {
            lag: u64,
            back: u64,
        },
        /// Read a snapshot and hold its image.
        Hold {
            back: u64,
        },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            5 => (0u64..6, prop::collection::vec(0u32..12, 0..8), 1u32..1000, prop::bool::weighted(0.2))
                .prop_map(|(ordinal, rows, value, defer)| Step::Write { ordinal, rows, value, defer }),
            1 => Just(Step::Flush),
            2 => (0u64..6, prop::collection::vec(0u32..12, 1..4)).prop_map(|(ordinal, rows)| Step::Delete { ordinal, rows }),
            2 => (0u64..4, prop_oneof![3 => Just(0u64), 1 => 1u64..4]).prop_map(|(lag, back)| Step::Seal { lag, back }),
            1 => (0u64..4).prop_map(|back| Step::Hold { back }),
        ]
    }

    /// Everything a column's versions say, for comparing two columns.
    #[allow(clippy::type_complexity)]
    fn versions_of(col: &Column) -> (usize, Vec<(u64, u64, u32, Vec<u32>, Vec<u32>, Vec<u64>, usize, Vec<Vec<u32>>)>) {
        let g = col.lock();
        let versions = g
            .state
            .versions
            .iter()
            .map(|v| {
                let parts = v.parts.iter().map(|p| (0..p.rows().len()).map(|i| p.rows().get(i)).collect()).collect();
                (v.ordinal, v.from, v.nrows, v.written.ones(), v.deleted.ones(), v.keys.to_vec(), v.bytes, parts)
            })
            .collect();
        (g.state.bytes, versions)
    }

    /// Steps whose writes mostly write rows `0..4` in order: once the
    /// column has those four rows, every row it has.
    fn covering_step() -> impl Strategy<Value = Step> {
        prop_oneof![
            6 => (0u64..6, 1u32..1000, prop::bool::weighted(0.1))
                .prop_map(|(ordinal, value, defer)| Step::Write { ordinal, rows: vec![0, 1, 2, 3], value, defer }),
            1 => step(),
        ]
    }

    /// Per row: events `(ordinal, Some(value) | None)` in application order.
    type Model = BTreeMap<u32, Vec<(u64, Option<u32>)>>;

    fn state_at(model: &Model, row: u32, at: u64) -> Option<u32> {
        let events = model.get(&row)?;
        // Newest ordinal at or below `at`; same ordinal: last applied.
        let mut best: Option<(u64, usize)> = None;
        for (i, (o, _)) in events.iter().enumerate() {
            if *o <= at && best.is_none_or(|(bo, bi)| (*o, i) >= (bo, bi)) {
                best = Some((*o, i));
            }
        }
        best.and_then(|(_, i)| events[i].1)
    }

    fn column_with(limits: Limits, kind: ValueKind) -> Column {
        Column::new(Storage { dtype: DType::U32, kind }, limits)
    }

    fn column() -> Column {
        column_with(Limits::versions(1000), ValueKind::Fixed)
    }

    /// What a row holds for a model value `v`: `[v]` for fixed columns,
    /// `v % 3` copies of `v` for array columns (so some rows are empty).
    fn expected(v: Option<u32>, kind: ValueKind) -> Option<Vec<u32>> {
        v.map(|v| match kind {
            ValueKind::Fixed => vec![v],
            ValueKind::Array => vec![v; (v % 3) as usize],
        })
    }

    fn prim(row: u32) -> PrimPath {
        PrimPath::from_raw(u64::from(row) + 1).unwrap()
    }

    /// What a row holds (`None`: not live).
    type RowContents = Option<Vec<u32>>;

    /// `n` u32 rows, each `value`.
    fn filled(n: usize, value: u32) -> Arc<Buf> {
        let mut buf = Buf::zeroed(4 * n);
        buf.bytes_mut().copy_from_slice(bytemuck::cast_slice(&vec![value; n]));
        Arc::new(buf)
    }

    fn row_value(image: &Image, row: u32) -> RowContents {
        (row < image.nrows && image.live.contains(row)).then(|| {
            let b = match &image.arrays {
                Some(arrays) => arrays.bytes(arrays.refs[row as usize]),
                None => &image.data.bytes()[row as usize * 4..row as usize * 4 + 4],
            };
            b.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
        })
    }

    /// A part writing `rows` of `kind`, `len` bytes each, every byte
    /// `value`.
    fn filled_part(col: &Column, kind: ValueKind, rows: Rows, len: usize, value: u8) -> Part {
        let n = rows.len();
        let mut buf = col.memory.alloc(n * len).unwrap();
        buf.bytes_mut().fill(value);
        let data = Arc::new(buf);
        match kind {
            ValueKind::Fixed => Part::Write { rows, data },
            ValueKind::Array => Part::WriteArray { rows, data, offsets: (0..=n).map(|i| (i * len) as u64).collect() },
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn column_matches_model(steps in prop::collection::vec(step(), 1..60)) {
            run_model(&steps, 1000)?;
        }

        #[test]
        fn column_matches_model_with_merging(steps in prop::collection::vec(step(), 1..60), cap in 2usize..4) {
            run_model(&steps, cap)?;
        }

        #[test]
        fn array_column_matches_model(steps in prop::collection::vec(step(), 1..60), cap in prop_oneof![Just(2usize), Just(1000)]) {
            run_model_of(&steps, Limits::versions(cap), ValueKind::Array)?;
        }

        /// Writes of every row, as a loop that never seals makes them,
        /// merged into the head span (`merge_below_head`) among deletes,
        /// deferred writes and seals: the same answers as the model.
        #[test]
        fn column_matches_model_with_covering_writes(
            steps in prop::collection::vec(covering_step(), 1..60),
            cap in 2usize..4,
            array in any::<bool>(),
        ) {
            run_model_of(&steps, Limits::versions(cap), if array { ValueKind::Array } else { ValueKind::Fixed })?;
        }

        /// `merge_below_head` leaves the versions exactly as the slow
        /// path's merge does: same spans, rows, deletes, parts and bytes.
        #[test]
        fn merging_below_the_head_is_the_slow_merge(
            steps in prop::collection::vec((0u64..3, 0u8..6, 0u64..3, any::<bool>()), 1..80),
            cap in 2usize..5,
            max_bytes in prop_oneof![Just(usize::MAX), 0usize..64],
        ) {
            let limits = Limits { max_versions: cap, min_versions: 2, max_bytes };
            let fast = column_with(limits, ValueKind::Fixed);
            let slow = column_with(limits, ValueKind::Fixed);
            let (mut top, mut sealed) = (0u64, 0u64);
            for (i, &(ahead, kind, seal_lag, own_bound)) in steps.iter().enumerate() {
                top += ahead;
                let ordinal = top.max(sealed + 1);
                top = ordinal;
                // Mostly writes of rows 0..4 (every row once they exist),
                // some of fewer rows or a new one, some deletes.
                let prims: Vec<u32> = match kind {
                    0..=2 => vec![0, 1, 2, 3],
                    3 => vec![1, 2],
                    4 => vec![0, 1, 2, 3, 4 + i as u32 % 3],
                    _ => vec![2],
                };
                let bound = MergeBound { floor: sealed, below: if own_bound { ordinal } else { u64::MAX } };
                for (col, slow_only) in [(&fast, false), (&slow, true)] {
                    SLOW_MERGES_ONLY.with(|s| s.set(slow_only));
                    let mut g = col.lock();
                    let part = if kind == 5 {
                        match g.row_of(prim(2)) {
                            Some(r) => Part::Delete { rows: Rows::from_vec(vec![r]) },
                            None => continue,
                        }
                    } else {
                        let rows = g.assign_rows(prims.iter().map(|p| prim(*p)));
                        Part::Write { rows, data: filled(prims.len(), i as u32) }
                    };
                    g.publish(ordinal, part, bound);
                }
                SLOW_MERGES_ONLY.with(|s| s.set(false));
                prop_assert_eq!(versions_of(&fast), versions_of(&slow), "after step {}", i);
                sealed = sealed.max(top.saturating_sub(seal_lag));
            }
        }

        /// A byte budget merges like a version cap: never wrong, refused
        /// only below the merged-through ordinal.
        #[test]
        fn column_matches_model_with_byte_budget(
            steps in prop::collection::vec(step(), 1..60),
            min_versions in 2usize..4,
            max_bytes in 0usize..64,
            array in any::<bool>(),
        ) {
            let limits = Limits { max_versions: 1000, min_versions, max_bytes };
            run_model_of(&steps, limits, if array { ValueKind::Array } else { ValueKind::Fixed })?;
        }
    }

    /// Runs `steps` against the model. With a small `max_versions`, unsealed
    /// versions get merged: a snapshot or range may then be refused, but
    /// only strictly inside a merged span (below the oldest exact ordinal
    /// at the floor), and never wrong.
    /// Merging relies on admission (no change below a newer change of the
    /// same row), so with merging on, steps breaking it are skipped, as the
    /// stage rejects them.
    fn run_model(steps: &[Step], max_versions: usize) -> Result<(), TestCaseError> {
        run_model_of(steps, Limits::versions(max_versions), ValueKind::Fixed)
    }

    /// A write admitted and not yet published.
    struct Deferred {
        ordinal: u64,
        rows: Vec<u32>,
        value: u32,
    }

    /// Publishes one write of `rows` (prim indices) at `ordinal`, holding
    /// `value + i` in its `i`th row, and records it in the model.
    fn publish_write(
        col: &Column,
        model: &mut Model,
        kind: ValueKind,
        (ordinal, rows, value): (u64, &[u32], u32),
        bound: MergeBound,
    ) {
        let mut g = col.lock();
        let rows = g.assign_rows(rows.iter().map(|r| prim(*r)));
        let contents: Vec<Vec<u32>> =
            (0..rows.len()).map(|i| expected(Some(value + i as u32), kind).unwrap()).collect();
        let flat: Vec<u32> = contents.iter().flatten().copied().collect();
        let mut buf = Buf::zeroed(flat.len() * 4);
        buf.bytes_mut().copy_from_slice(bytemuck::cast_slice(&flat));
        for i in 0..rows.len() {
            let r = g.prim_of(rows.get(i)).get() as u32 - 1;
            model.entry(r).or_default().push((ordinal, Some(value + i as u32)));
        }
        let part = match kind {
            ValueKind::Fixed => Part::Write { rows, data: Arc::new(buf) },
            ValueKind::Array => {
                let mut offsets = vec![0u64];
                for c in &contents {
                    offsets.push(offsets.last().unwrap() + c.len() as u64 * 4);
                }
                Part::WriteArray { rows, data: Arc::new(buf), offsets: offsets.into() }
            }
        };
        g.publish(ordinal, part, bound);
    }

    fn run_model_of(steps: &[Step], limits: Limits, kind: ValueKind) -> Result<(), TestCaseError> {
        let admission = limits.max_versions < 1000 || limits.max_bytes < usize::MAX;
        // As the stage's admission: no change below (or, while it is still
        // to run, at) a newer change of the same row.
        let blocked = |model: &Model, pending: &[Deferred], rows: &[u32], ordinal: u64| {
            let pending_hit = pending.iter().any(|d| d.ordinal >= ordinal && d.rows.iter().any(|r| rows.contains(r)));
            pending_hit
                || (admission
                    && rows.iter().any(|r| model.get(r).is_some_and(|ev| ev.iter().any(|(o, _)| *o > ordinal))))
        };
        let col = column_with(limits, kind);
        let mut model: Model = BTreeMap::new();
        let mut sealed = 0u64; // everything at or below is sealed
        let mut frontier = 0u64; // trimmed to here
        let mut pending: Vec<Deferred> = Vec::new();
        let mut held: Vec<(Arc<Image>, Vec<RowContents>)> = Vec::new();
        let (mut live_before, mut structure_before) = (Vec::new(), col.structure());
        // Merging may not reach the lowest ordinal still to be published:
        // the publishing change's own and the deferred ones'.
        let bound = |sealed: u64, own: u64, pending: &[Deferred]| MergeBound {
            floor: sealed,
            below: pending.iter().map(|d| d.ordinal).chain([own]).min().unwrap_or(u64::MAX),
        };
        let flush = |model: &mut Model, pending: &mut Vec<Deferred>, sealed: u64| {
            while let Some(d) = pending.pop() {
                let b = bound(sealed, d.ordinal, pending);
                publish_write(&col, model, kind, (d.ordinal, &d.rows, d.value), b);
            }
        };
        for step in steps.iter().cloned() {
            match step {
                Step::Write { ordinal, rows, value, defer } => {
                    let ordinal = sealed + 1 + ordinal;
                    if blocked(&model, &pending, &rows, ordinal) {
                        continue;
                    }
                    if defer {
                        pending.push(Deferred { ordinal, rows, value });
                    } else {
                        let b = bound(sealed, ordinal, &pending);
                        publish_write(&col, &mut model, kind, (ordinal, &rows, value), b);
                    }
                }
                Step::Flush => flush(&mut model, &mut pending, sealed),
                Step::Delete { ordinal, rows } => {
                    let ordinal = sealed + 1 + ordinal;
                    if blocked(&model, &pending, &rows, ordinal) {
                        continue;
                    }
                    let mut g = col.lock();
                    let known: Vec<u32> = rows.iter().filter_map(|r| g.row_of(prim(*r))).collect();
                    if known.is_empty() {
                        continue;
                    }
                    for r in &known {
                        let p = g.prim_of(*r).get() as u32 - 1;
                        model.entry(p).or_default().push((ordinal, None));
                    }
                    g.publish(ordinal, Part::Delete { rows: Rows::from_vec(known) }, bound(sealed, ordinal, &pending));
                }
                Step::Seal { lag, back } => {
                    // An advance runs after every mutation at or below it.
                    flush(&mut model, &mut pending, sealed);
                    let top = model.values().flatten().map(|(o, _)| *o).max().unwrap_or(sealed);
                    sealed = sealed.max(top.saturating_sub(back));
                    let f = sealed.saturating_sub(lag).max(frontier);
                    col.lock().trim(f);
                    frontier = f;
                }
                Step::Hold { back } => {
                    flush(&mut model, &mut pending, sealed);
                    let at = sealed.saturating_sub(back).max(frontier);
                    let mut g = col.lock();
                    if let Snapshot::Image { image, .. } = g.snapshot(at) {
                        let expect = (0..12u32).map(|r| row_value(&image, r)).collect();
                        held.push((image, expect));
                    }
                }
            }
            // The live prims at the newest version, and the structure
            // counter moves whenever they change.
            let mut g = col.lock();
            let sum: usize = g.state.versions.iter().map(|v| v.bytes).sum();
            prop_assert_eq!(g.state.bytes, sum, "the running byte total");
            let mut live = RowSet::new();
            g.add_live_prims(&mut live);
            let live: Vec<u32> = live.iter().collect();
            let expect: Vec<u32> = (0..12u32).filter(|p| state_at(&model, *p, u64::MAX).is_some()).collect();
            prop_assert_eq!(&live, &expect, "live prims at the newest version");
            for p in 0..12u32 {
                let per_row = g.row_of(prim(p)).is_some_and(|r| g.live_at_latest(r));
                prop_assert_eq!(per_row, expect.contains(&p), "row {} live at latest", p);
            }
            if live != live_before {
                prop_assert_ne!(col.structure(), structure_before, "the live set changed without a structure bump");
            }
            (live_before, structure_before) = (live, col.structure());
            // Picking a few rows (any order, repeats) reads what the model
            // says, as the image would: before any image is built there: the walk back over versions,
            // skipping versions that change none of them.
            let mut shuffled: Vec<(u32, u32)> =
                (0..12u32).rev().filter_map(|p| g.row_of(prim(p)).map(|r| (p, r))).collect();
            if let Some(first) = shuffled.first().copied() {
                shuffled.push(first);
            }
            // And in increasing row order without repeats (a path list in
            // creation order), which needs no slot list.
            let mut increasing = shuffled.clone();
            increasing.sort_by_key(|a| a.1);
            increasing.dedup();
            for (asked, at) in
                [&shuffled, &increasing].into_iter().flat_map(|a| (frontier..=sealed).map(move |at| (a, at)))
            {
                let rows: Vec<u32> = asked.iter().map(|a| a.1).collect();
                match g.pick_at(&rows, at).expect("small") {
                    Picked::Rows { image, live, .. } => {
                        prop_assert_eq!(live.len(), asked.len());
                        let mut packed = 0u32;
                        for ((p, _), is_live) in asked.iter().zip(&live) {
                            let got = is_live.then(|| row_value(&image, packed)).flatten();
                            packed += u32::from(*is_live);
                            prop_assert_eq!(
                                got,
                                expected(state_at(&model, *p, at), kind),
                                "picked row {} at {}",
                                p,
                                at
                            );
                        }
                    }
                    Picked::Empty => {
                        for (p, _) in asked {
                            prop_assert_eq!(state_at(&model, *p, at), None, "picked row {} at {}", p, at);
                        }
                    }
                    Picked::Trimmed { .. } => {
                        prop_assert!(at < g.oldest_exact(sealed), "pick at {} inside the window reported trimmed", at);
                    }
                }
            }
            // Every sealed ordinal at or above the frontier reads exactly.
            for at in frontier..=sealed {
                match g.snapshot(at) {
                    Snapshot::Image { image, .. } => {
                        for p in 0..12u32 {
                            let got = g.row_of(prim(p)).and_then(|r| row_value(&image, r));
                            prop_assert_eq!(got, expected(state_at(&model, p, at), kind), "row {} at {}", p, at);
                        }
                    }
                    Snapshot::Empty => {
                        for p in 0..12u32 {
                            prop_assert_eq!(state_at(&model, p, at), None, "row {} at {}", p, at);
                        }
                    }
                    Snapshot::Trimmed { oldest } => {
                        // Refused only strictly inside a merged span, which
                        // the oldest exact ordinal at the floor reports.
                        prop_assert!(
                            at < g.oldest_exact(sealed),
                            "snapshot at {} inside the window reported trimmed (oldest {})",
                            at,
                            oldest
                        );
                    }
                }
            }
            // Change ranges inside the window name exactly the changed rows.
            if sealed > frontier {
                let changed = match g.changed_between(frontier + 1, sealed) {
                    Ok(changed) => changed,
                    Err(o) if frontier < g.oldest_exact(sealed) => {
                        let _ = o;
                        continue;
                    }
                    Err(o) => return Err(TestCaseError::fail(format!("trimmed {o}"))),
                };
                for p in 0..12u32 {
                    let expect = model.get(&p).is_some_and(|ev| ev.iter().any(|(o, _)| *o > frontier && *o <= sealed));
                    let got = g.row_of(prim(p)).is_some_and(|r| changed.contains(r));
                    prop_assert_eq!(got, expect, "row {} changed in ({}, {}]", p, frontier, sealed);
                }
            }
            // `last_change` is at least the newest changed ordinal (a write
            // of no rows publishes too); a change range starting above it
            // reads nothing and is never refused (reads skip such columns
            // without locking them), and the estimate of changed rows
            // bounds what a change range finds.
            let newest = col.last_change();
            prop_assert!(newest >= model.values().flatten().map(|(o, _)| *o).max().unwrap_or(0), "last change");
            for start in frontier + 1..=sealed + 1 {
                for end in start..=sealed.max(start) {
                    let hint = g.changed_count_between(start, end, usize::MAX);
                    match g.changed_between(start, end) {
                        Ok(changed) => prop_assert!(
                            hint >= changed.count(),
                            "estimate {} below the {} rows changed in [{}, {}]",
                            hint,
                            changed.count(),
                            start,
                            end
                        ),
                        Err(o) => {
                            prop_assert!(newest >= start, "[{}, {}] refused ({}) above the last change", start, end, o)
                        }
                    }
                    if newest < start {
                        prop_assert_eq!(hint, 0);
                        prop_assert!(g.changed_between(start, end).is_ok_and(|c| c.is_empty()));
                    }
                    prop_assert_eq!(g.changed_count_between(start, end, 1).min(1), hint.min(1), "capped estimate");
                }
            }
            drop(g);
            // Held images never change.
            for (image, expect) in &held {
                let now: Vec<RowContents> = (0..12u32).map(|r| row_value(image, r)).collect();
                prop_assert_eq!(&now, expect);
            }
        }
        Ok(())
    }

    #[test]
    fn the_byte_budget_merges_the_newest_unsealed_versions_and_recycles_their_buffers() {
        // Four rows of u32 per write (16 bytes): three versions always
        // kept, more while they fit in 40 bytes.
        let col = column_with(Limits { max_versions: 64, min_versions: 3, max_bytes: 40 }, ValueKind::Fixed);
        let mut g = col.lock();
        let rows = g.assign_rows((0..4).map(prim));
        let mut ptrs = Vec::new();
        for t in 1..=10u64 {
            let mut buf = col.memory.alloc(16).unwrap();
            buf.bytes_mut().copy_from_slice(bytemuck::cast_slice(&[t as u32; 4]));
            ptrs.push(buf.bytes().as_ptr());
            // The write's own ordinal is still to be published (`below`).
            g.publish(t, Part::Write { rows: rows.clone(), data: Arc::new(buf) }, MergeBound { floor: 0, below: t });
            assert!(g.retained().0 <= 3, "the oldest, the merged head and the newest: {:?}", g.retained());
        }
        // Each merge folded the previous tick into the head span and freed
        // the span's older buffer, which the next write took back: the
        // oldest version's buffer plus a ring of three.
        ptrs.sort();
        ptrs.dedup();
        assert!(ptrs.len() <= 4, "{} buffers", ptrs.len());
        // Sealed: the oldest version stays exact, the head span [2, 9] is
        // refused strictly inside, and its end and the newest are exact.
        assert_eq!(g.oldest_exact(10), 9);
        for t in [1, 9, 10] {
            let Snapshot::Image { image, .. } = g.snapshot(t) else { panic!("no image at {t}") };
            assert_eq!(row_value(&image, 3), Some(vec![t as u32]));
        }
        for t in 2..9 {
            assert!(matches!(g.snapshot(t), Snapshot::Trimmed { oldest: 9 }), "at {t}");
        }
        assert_eq!(g.oldest_exact(1), 0, "a floor below the span reads exactly");
    }

    #[test]
    fn a_version_reused_after_a_merge_starts_empty() {
        let col = column_with(Limits::versions(3), ValueKind::Fixed);
        let mut g = col.lock();
        let rows = g.assign_rows((0..100).map(prim));
        for t in 1..=12u64 {
            let data = Arc::new(Buf::zeroed(400));
            g.publish(t, Part::Write { rows: rows.clone(), data }, MergeBound { floor: 0, below: t });
        }
        // Three versions kept, one created and one merged away per tick:
        // the merged one holds the next tick's version.
        assert_eq!(g.state.versions.len(), 3);
        // A reused version starts empty. Rows 0..50 deleted at 13 and
        // written again at 14 (13 is merged into the head span by the slow
        // path, its version kept spare; the span's deletes then move into
        // the version of 14 when 14 replaces the span's data at 15), which
        // comes back for 15, writing only rows 50..100: rows 0..50 keep
        // their values of 14, not the deletion the box once held.
        g.publish(13, Part::Delete { rows: Rows::Run { start: 0, len: 50 } }, MergeBound { floor: 0, below: 13 });
        assert!(g.state.spare.is_none(), "the version merged away at 13 holds 13");
        g.publish(14, Part::Write { rows, data: filled(100, 14) }, MergeBound { floor: 0, below: 14 });
        assert!(g.state.spare.as_ref().is_some_and(|v| v.parts.is_empty()), "a merge keeps the version it removed");
        let of_14 = g.state.versions.back().map(|v| &**v as *const Version);
        let upper = g.assign_rows((50..100).map(prim));
        g.publish(15, Part::Write { rows: upper, data: filled(50, 15) }, MergeBound { floor: 0, below: 15 });
        let v = g.state.versions.back().expect("a version");
        assert_eq!((v.ordinal, Some(&**v as *const Version)), (15, of_14), "15 reuses the version of 14");
        assert!(v.deleted.is_empty(), "nothing is deleted at 15");
        let Snapshot::Image { image, .. } = g.snapshot(15) else { panic!("no image at 15") };
        assert_eq!((row_value(&image, 7), row_value(&image, 70)), (Some(vec![14]), Some(vec![15])));
    }

    #[test]
    fn late_changes_inside_a_merged_span_apply_in_ordinal_order() {
        // Span [1, 4] merged while nothing was pending. Then writes of one
        // row at 1 and at 2, admitted in that order (nothing newer changed
        // the row), run in the other order: both land in the span, and the
        // one at 2 must stay the row's value.
        let col = column_with(Limits::versions(2), ValueKind::Fixed);
        let mut g = col.lock();
        let rows = g.assign_rows([prim(0)].into_iter());
        let put = |g: &mut ColumnGuard<'_>, t: u64, rows: &Rows, value: u32, below: u64| {
            g.publish(
                t,
                Part::Write { rows: rows.clone(), data: filled(rows.len(), value) },
                MergeBound { floor: 0, below },
            );
        };
        put(&mut g, 1, &rows, 1, 1);
        put(&mut g, 4, &rows, 4, 4);
        put(&mut g, 5, &rows, 5, 5);
        assert!(matches!(g.snapshot(2), Snapshot::Trimmed { oldest: 4 }), "[1, 4] is merged");
        let other = g.assign_rows([prim(1)].into_iter());
        put(&mut g, 2, &other, 20, 1);
        put(&mut g, 1, &other, 10, 1);
        let Snapshot::Image { image, .. } = g.snapshot(4) else { panic!("no image at 4") };
        assert_eq!(row_value(&image, 1), Some(vec![20]), "the change at 2 follows the one at 1");
        assert_eq!(row_value(&image, 0), Some(vec![4]));
        drop(image);
        assert!(g.latest_row(1) == Some(20u32.to_le_bytes().to_vec()));
    }

    #[test]
    fn versions_at_or_below_the_floor_are_never_merged() {
        let col = column_with(Limits::versions(3), ValueKind::Fixed);
        let mut g = col.lock();
        let rows = g.assign_rows((0..2).map(prim));
        for t in 1..=12u64 {
            let data = Arc::new(Buf::zeroed(8));
            // A floor submitted at 6 (not yet committed): 1..=6 stay exact.
            g.publish(t, Part::Write { rows: rows.clone(), data }, MergeBound { floor: 6, below: t });
        }
        assert_eq!(g.oldest_exact(6), 0);
        for t in 1..=6 {
            assert!(matches!(g.snapshot(t), Snapshot::Image { .. }), "at {t}");
        }
        // Above it, the oldest unsealed version stays exact too.
        assert!(matches!(g.snapshot(7), Snapshot::Image { .. }));
        assert!(matches!(g.snapshot(8), Snapshot::Trimmed { .. }));
    }

    #[test]
    fn full_writes_are_adopted_and_trims_recycle() {
        let col = column();
        let mut g = col.lock();
        let rows = g.assign_rows((0..4).map(prim));
        for t in 1..=10u64 {
            let mut buf = col.memory.alloc(16).unwrap();
            buf.bytes_mut().copy_from_slice(bytemuck::cast_slice(&[t as u32; 4]));
            let ptr = buf.bytes().as_ptr();
            g.publish(
                t,
                Part::Write { rows: rows.clone(), data: Arc::new(buf) },
                MergeBound { floor: t - 1, below: u64::MAX },
            );
            g.trim(t);
            let Snapshot::Image { image, .. } = g.snapshot(t) else { panic!("no image at {t}") };
            assert_eq!(image.data.bytes().as_ptr(), ptr, "a full write is the image itself");
            assert_eq!(g.retained().0, 1, "only the newest sealed version stays");
        }
        drop(g);
        assert!(col.memory.pooled() >= 1, "trimmed buffers return to the pool");
    }

    #[test]
    fn array_write_loops_reuse_their_buffers() {
        // A sealed loop of whole-row array writes: each write's buffer is
        // referenced by the row table of the images after it, and it is when
        // the table drops it (a prune) that it must go back to the pool, so
        // the loop cycles through a few buffers instead of allocating (and
        // page-faulting) a new one per write.
        let col = column_with(Limits::versions(1000), ValueKind::Array);
        let mut g = col.lock();
        let rows = g.assign_rows([prim(0)].into_iter());
        let mut reused = 0;
        for t in 1..=64u64 {
            reused += usize::from(col.memory.pooled() > 0);
            let part = filled_part(&col, ValueKind::Array, rows.clone(), 4096, t as u8);
            g.publish(t, part, MergeBound { floor: t - 1, below: u64::MAX });
            g.trim(t);
            let Snapshot::Image { image, .. } = g.snapshot(t) else { panic!("no image at {t}") };
            let row = image.array_row(image.array_refs()[0]);
            assert!(row.len() == 4096 && row.iter().all(|b| *b == t as u8), "row at {t}");
        }
        // The row table prunes once its dead buffers outnumber the live ones
        // (at most 8 buffers here), so nearly every write finds one kept.
        assert!(reused >= 48, "only {reused} of 64 writes found a freed buffer to reuse");
    }

    #[test]
    fn a_trim_keeps_a_version_that_writes_every_row_without_building_its_image() {
        // A sealed loop that nobody reads between seals (a producer running
        // ahead): each trim keeps a version whose one part writes every row,
        // which needs no image to stand alone; the dropped versions' buffers
        // still go back to the pool, and a read then builds the image.
        for kind in [ValueKind::Fixed, ValueKind::Array] {
            let col = column_with(Limits::versions(1000), kind);
            let mut g = col.lock();
            let rows = g.assign_rows((0..2).map(prim));
            // A u32 per row, or two in an array row.
            let len = if kind == ValueKind::Fixed { 4 } else { 8 };
            let mut reused = 0;
            for t in 1..=32u64 {
                reused += usize::from(col.memory.pooled() > 0);
                let part = filled_part(&col, kind, rows.clone(), len, t as u8);
                g.publish(t, part, MergeBound { floor: t - 1, below: u64::MAX });
                g.trim(t - 1);
                assert!(g.state.versions.len() <= 2, "{kind:?}: {} versions at {t}", g.state.versions.len());
                assert!(g.state.versions.iter().all(|v| v.image.is_none()), "{kind:?}: an image was built at {t}");
            }
            // The first three find none: the first trim drops a version at
            // the third write's seal.
            assert_eq!(reused, 29, "{kind:?}: writes that found a trimmed buffer to reuse");
            assert!(matches!(g.snapshot(30), Snapshot::Trimmed { oldest: 31 }), "{kind:?}: 30 was trimmed");
            for t in [31u8, 32] {
                let Snapshot::Image { image, .. } = g.snapshot(u64::from(t)) else { panic!("no image at {t}") };
                for row in 0..2 {
                    let want = vec![u32::from_le_bytes([t; 4]); len / 4];
                    assert_eq!(row_value(&image, row), Some(want), "{kind:?}: row {row} at {t}");
                }
            }
        }
    }

    #[test]
    fn a_version_kept_without_an_image_is_the_start_of_the_next_fold() {
        // A full write sealed and kept without an image, then a one-row
        // write sealed: the trim to it folds the change into the full
        // write's buffer in place (it was the previous image's, taken over
        // the same way), not into a copy of it.
        for kind in [ValueKind::Fixed, ValueKind::Array] {
            let col = column_with(Limits::versions(1000), kind);
            let mut g = col.lock();
            let rows = g.assign_rows((0..4).map(prim));
            let full = filled_part(&col, kind, rows.clone(), 4, 1);
            let (Part::Write { data, .. } | Part::WriteArray { data, .. }) = &full else { unreachable!() };
            let start = data.bytes().as_ptr();
            g.publish(1, full, MergeBound { floor: 0, below: u64::MAX });
            g.trim(1);
            g.publish(
                2,
                filled_part(&col, kind, Rows::from_vec(vec![2]), 4, 2),
                MergeBound { floor: 1, below: u64::MAX },
            );
            g.trim(2);
            assert_eq!(g.state.versions.len(), 1, "{kind:?}");
            let Snapshot::Image { image, .. } = g.snapshot(2) else { panic!("no image at 2") };
            let values: Vec<_> = (0..4).map(|row| row_value(&image, row)).collect();
            let [one, two] = [1u8, 2].map(|v| Some(vec![u32::from_le_bytes([v; 4])]));
            assert_eq!(values, [one.clone(), one.clone(), two, one], "{kind:?}");
            if kind == ValueKind::Fixed {
                assert_eq!(image.data.bytes().as_ptr(), start, "the full write's buffer is folded in place");
            }
        }
    }

    #[test]
    fn merging_drops_the_parts_later_ones_overwrite() {
        // A producer that never seals, writing the same few of 16 array rows
        // each tick: once versions merge, each tick's part is wholly
        // overwritten by the next one's, so it can go (and its buffer back
        // to the pool) instead of piling up until the merged parts hold
        // more rows than the column.
        let col = column_with(Limits::versions(4), ValueKind::Array);
        let mut g = col.lock();
        let all = g.assign_rows((0..16).map(prim));
        let some = Rows::from_vec(vec![2, 5, 11]);
        let mut reused = 0;
        for t in 1..=40u64 {
            reused += usize::from(col.memory.pooled() > 0);
            let rows = if t == 1 { all.clone() } else { some.clone() };
            let part = filled_part(&col, ValueKind::Array, rows, 4, t as u8);
            g.publish(t, part, MergeBound { floor: 0, below: u64::MAX });
            let parts: usize = g.state.versions.iter().map(|v| v.parts.len()).sum();
            assert!(parts <= 6, "{parts} parts kept after {t} ticks");
        }
        assert!(reused >= 30, "only {reused} of 40 writes found a freed buffer to reuse");
        // What is left reads as the last write of each row.
        let Snapshot::Image { image, .. } = g.snapshot(40) else { panic!("no image at 40") };
        assert_eq!(image.array_refs().len(), 16);
        for (row, r) in image.array_refs().iter().enumerate() {
            let want = if [2, 5, 11].contains(&row) { 40 } else { 1 };
            assert_eq!(image.array_row(*r), &[want; 4], "row {row}");
        }
    }

    #[test]
    fn a_part_overwritten_only_in_part_is_kept() {
        // Rows {0, 1} written, {1} deleted, {0} written again: the first
        // write is wholly overwritten (by the delete and the second write)
        // and goes; the delete is not, and row 1 stays deleted.
        let col = column_with(Limits::versions(1), ValueKind::Fixed);
        let mut g = col.lock();
        let _ = g.assign_rows((0..4).map(prim));
        let write = |t: u64, rows: Vec<u32>, g: &mut ColumnGuard<'_>| {
            let part = filled_part(&col, ValueKind::Fixed, Rows::from_vec(rows), 4, t as u8);
            g.publish(t, part, MergeBound { floor: 0, below: u64::MAX });
        };
        write(1, vec![0, 1], &mut g);
        g.publish(2, Part::Delete { rows: Rows::from_vec(vec![1]) }, MergeBound { floor: 0, below: u64::MAX });
        write(3, vec![0], &mut g);
        let Snapshot::Image { image, .. } = g.snapshot(3) else { panic!("no image at 3") };
        assert!(image.live.contains(0) && !image.live.contains(1), "row 0 written, row 1 deleted");
        assert_eq!(&image.data.bytes()[..4], &[3; 4]);
    }
}
