//! The features' state types: the data of the handles the stage holds in
//! its tables (queries, reads, map sessions, ordinal queries, hierarchy
//! lookups, clone reports) and the types those hold.
//!
//! Only the definitions live here, below `stage`, so that `stage` names no
//! feature module (no import cycle between the stage and its features);
//! their behaviour (`impl` blocks) stays in the feature modules that own
//! them, which alone construct and read these fields.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use ovstage_types::idhash::IdBuild;
use ovstage_types::{AttributeMode, Error, OpId, Ordinal, PathList, PrimMode, PrimPath, Result, Status, Token};
use smallvec::SmallVec;

use crate::family::{Family, PendingOrdinals};
use crate::group::{AttributeMeta, PrimGroup, ReadGroup};
use crate::metadata::Reserved;
use crate::schema::Schema;
use crate::store::backend::Staging;
use crate::store::column::{Column, RowMap};
use crate::store::rows::RowSet;

// ---- Queries (`query.rs`) and their result cache (`query/cache.rs`)

/// The op of a handle's enqueue, set once right after its submission (a
/// handle's state is made before its op exists, as the op's job holds it)
/// and before the handle is published. An atomic word rather than a
/// `OnceLock`: op ids are never 0, and setting one is a store where a
/// `OnceLock` runs its one-time initialization protocol (about 180
/// instructions, on every read, map and ordinal query enqueued).
#[derive(Debug, Default)]
pub(crate) struct OpCell(AtomicU64);

impl OpCell {
    /// Records the op.
    pub(crate) fn set(&self, op: OpId) {
        self.0.store(op.get(), Ordering::Release);
    }

    /// The op, once set.
    pub(crate) fn get(&self) -> Option<OpId> {
        OpId::from_raw(self.0.load(Ordering::Acquire))
    }
}

/// The prims of a resolved query, with what is derived from them. Shared
/// by every query handle a cached filter result serves (each holds its own
/// reference to `list`), so the derived data is computed once.
pub(crate) struct Resolved {
    pub(crate) list: PathList,
    pub(crate) prims: Arc<[PrimPath]>,
    /// Attributes the prims carry (filter queries; scoped to what was asked).
    pub(crate) attributes: Vec<Token>,
    /// Shared with the unsealed log of each mutation of the whole query.
    pub(crate) prim_bits: OnceLock<Arc<RowSet>>,
    /// Whether a prim appears twice in `prims` (a path list may repeat a
    /// path); computed on first need.
    pub(crate) repeats: OnceLock<bool>,
    /// `removals + 1` of the prim table when every prim was last seen live
    /// (0: never).
    pub(crate) live_at: AtomicU64,
    /// Row maps per column (keyed by the column's address; the weak
    /// reference keeps that address from naming a later column), each
    /// valid while the column has as many rows: a column's rows are only
    /// ever appended, so deletes and revivals (which move the layout
    /// generation) leave its map as it is. A map, not a list: a batch
    /// writing many attributes through one query looks up one column per
    /// attribute.
    pub(crate) row_maps: Mutex<HashMap<usize, CachedRowMap, IdBuild>>,
}

/// A query's row map in one column, as [`Resolved::row_maps`] keeps it.
pub(crate) struct CachedRowMap {
    /// The column the map is of (weak: the map keeps no column alive).
    pub(crate) column: Weak<Column>,
    /// The column's row count when the map was made.
    pub(crate) rows: u32,
    /// The query's prims' rows.
    pub(crate) map: RowMap,
}

impl CachedRowMap {
    /// Whether the map is `column`'s as it is now, with `rows` rows (a row
    /// added since may be one of the query's prims the map has none for).
    pub(crate) fn serves(&self, column: &Arc<Column>, rows: u32) -> bool {
        self.rows == rows && std::ptr::eq(self.column.as_ptr(), Arc::as_ptr(column))
    }
}

/// A query handle's state.
pub(crate) struct QueryState {
    /// The scheduler's handle key.
    pub(crate) key: u64,
    /// The op evaluating a filter (none for path-list queries).
    pub(crate) producer: OpCell,
    pub(crate) resolved: OnceLock<std::result::Result<Arc<Resolved>, Error>>,
}

/// A predicate checked and resolved at enqueue. Value sets are sorted and
/// deduplicated, so equal filters compare equal (the cache's key).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Test {
    Has(Token, Option<Reserved>),
    PathIn(Vec<PrimPath>),
    PathPrefix(Vec<String>),
    ParentIn(Vec<PrimPath>),
    ChildrenContain(Vec<PrimPath>),
    /// A recorded token-id attribute (`usd-prim-type` IN, `usd-schemas` or
    /// `usd-ancestor-types` CONTAINS): any of its tokens is one of these.
    TokensAny(Token, Vec<u64>),
    /// A value predicate on a recorded attribute: the `FilterOp` (raw) and
    /// its values (see `query/values.rs`).
    Value(Token, u32, Vec<String>),
}

/// A filter in canonical form: tests sorted and deduplicated (an AND), the
/// attribute scope sorted and deduplicated (only membership matters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FilterKey {
    pub(crate) tests: FilterTests,
    pub(crate) scope: FilterScope,
}

/// A filter's tests (usually one or two: inline, no allocation).
pub(crate) type FilterTests = SmallVec<[Test; 2]>;

/// A query's attribute scope (usually a few names: inline).
pub(crate) type FilterScope = SmallVec<[Token; 4]>;

/// The structural counters a cached result was computed under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) prims: u64,
    /// Each family's column counters, then `FAMILY_END`.
    pub(crate) columns: SmallVec<[u64; 8]>,
}

pub(crate) struct CacheEntry {
    pub(crate) key: FilterKey,
    pub(crate) stamp: Stamp,
    pub(crate) resolved: Arc<Resolved>,
}

/// The stage's cached filter results. Each entry holds one reference to
/// its result's path list, released when the entry is dropped.
#[derive(Default)]
pub(crate) struct QueryCache {
    pub(crate) entries: Mutex<VecDeque<CacheEntry>>,
}

// ---- Reads (`read.rs`)

/// A pending or finished read and its remaining groups.
pub(crate) struct ReadState {
    pub(crate) key: u64,
    pub(crate) op: OpCell,
    pub(crate) outcome: ReadOutcome,
    pub(crate) groups: Mutex<VecDeque<ReadGroup>>,
}

/// How a read ended, recorded once by its job (after its groups). A
/// success is one atomic store: a `OnceLock` costs a few hundred
/// instructions to set, on every read.
#[derive(Default)]
pub(crate) struct ReadOutcome {
    state: AtomicU8,
    error: OnceLock<Error>,
}

impl ReadOutcome {
    const PENDING: u8 = 0;
    const SUCCEEDED: u8 = 1;
    const FAILED: u8 = 2;

    /// Records a success (the groups are in place).
    pub(crate) fn succeed(&self) {
        self.state.store(Self::SUCCEEDED, Ordering::Release);
    }

    /// Records a failure.
    pub(crate) fn fail(&self, error: Error) {
        let _ = self.error.set(error);
        self.state.store(Self::FAILED, Ordering::Release);
    }

    /// How the read ended; `None` while it has not.
    pub(crate) fn get(&self) -> Option<std::result::Result<(), &Error>> {
        match self.state.load(Ordering::Acquire) {
            Self::PENDING => None,
            Self::SUCCEEDED => Some(Ok(())),
            _ => self.error.get().map(Err),
        }
    }
}

// ---- Map sessions (`map.rs`)

/// A map session.
pub(crate) struct MapState {
    pub(crate) key: u64,
    pub(crate) id: u64,
    pub(crate) op: OpCell,
    pub(crate) ordinal: u64,
    pub(crate) query: Arc<QueryState>,
    pub(crate) family: Arc<Family>,
    pub(crate) prim_mode: PrimMode,
    /// `FORCE`: commits replace a target prim's differing schema.
    pub(crate) attribute_mode: AttributeMode,
    pub(crate) setup: OnceLock<Result<Setup>>,
    pub(crate) session: Mutex<Session>,
}

/// What setup decided.
#[derive(Clone, Copy)]
pub(crate) struct Setup {
    pub(crate) schema: Schema,
}

#[derive(Default)]
pub(crate) struct Session {
    pub(crate) unfetched: VecDeque<MapGroup>,
    /// A commit failed: the session only reports it from now on.
    pub(crate) failed: Option<Error>,
    /// The session's hold on its ordinal, from admission until the commit
    /// ending it has run (nothing merges at or above it meanwhile).
    pub(crate) ticket: Option<Ticket>,
}

/// A writable group of a map session: one buffer for all its prims
/// (fixed-size rows stacked, or arrays back to back). Its contents are
/// unspecified until written. Commit it with [`Stage::unmap_group`](crate::Stage::unmap_group) or
/// [`Stage::unmap_attribute`](crate::Stage::unmap_attribute).
#[derive(Debug)]
pub struct MapGroup {
    pub(crate) session: u64,
    /// The writable buffer, in the column's memory.
    pub(crate) buf: Staging,
    /// Array sessions: byte offset of each prim's elements.
    pub(crate) offsets: Option<Arc<[u64]>>,
    pub(crate) schema: Schema,
    pub(crate) prims: PrimGroup,
    pub(crate) meta: AttributeMeta,
}

// ---- Mutation tickets (`mutation.rs`), held by map sessions

/// One value per entry of a mutation: almost always one attribute, so kept
/// inline (a write op allocates no per-entry vectors).
pub(crate) type PerEntry<T> = SmallVec<[T; 1]>;

/// `items` mapped by `f`, one per entry. A single entry (the usual case)
/// is placed inline directly, not through the generic collection path
/// (its reserve and capacity checks cost about 80 instructions a vector,
/// and a write builds several).
pub(crate) fn per_entry<I: ExactSizeIterator, T>(items: I, f: impl FnMut(I::Item) -> T) -> PerEntry<T> {
    let mut mapped = items.map(f);
    if mapped.len() == 1
        && let Some(one) = mapped.next()
    {
        return PerEntry::from_buf([one]);
    }
    mapped.collect()
}

/// An admitted mutation's hold on its ordinal: while it lives, the ordinal
/// is pending for the attributes it changes (columns merge nothing at or
/// above it). Dropping it releases the ordinal, so every path (published,
/// failed, never run, refused at submission) releases it exactly once.
pub(crate) struct Ticket {
    pub(crate) ordinal: u64,
    pub(crate) held: Held,
}

pub(crate) enum Held {
    Families(PerEntry<Arc<Family>>),
    /// Every attribute (whole-prim deletes, clones), with the submitted
    /// floors at admission: the attributes the op changes are known only
    /// when it runs, and it must be checked against the floors it was
    /// admitted under (a later advance waits for it, and must not fail it).
    All {
        pending: Arc<PendingOrdinals>,
        floors: Vec<(u64, u64)>,
        base: u64,
    },
}

// ---- Ordinal queries (`floor.rs`)

/// A pending or answered ordinal query.
pub(crate) struct OrdinalQueryState {
    pub(crate) key: u64,
    pub(crate) op: OpCell,
    /// The answer, set once by the query's job (a failed op sets none).
    pub(crate) value: AnswerCell,
}

/// An ordinal query's answer: a word and a flag set after it (Release), so
/// that setting it costs two stores, not a `OnceLock`'s initialization.
#[derive(Debug, Default)]
pub(crate) struct AnswerCell {
    value: AtomicU64,
    set: AtomicBool,
}

impl AnswerCell {
    /// Records the answer (once: only the query's job sets it).
    pub(crate) fn set(&self, value: u64) {
        self.value.store(value, Ordering::Relaxed);
        self.set.store(true, Ordering::Release);
    }

    /// The answer, once set.
    pub(crate) fn get(&self) -> Option<u64> {
        self.set.load(Ordering::Acquire).then(|| self.value.load(Ordering::Relaxed))
    }
}

// ---- Hierarchy lookups (`hierarchy.rs`)

/// The relation of one input prim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HierarchyItem {
    /// `Ok`, or `NotFound` when no prim exists at the input path.
    pub status: Status,
    /// The related prims (empty for none).
    pub paths: Vec<PrimPath>,
}

/// The result of a hierarchy lookup: one item per input path, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HierarchyResult {
    /// The ordinal given at enqueue (a tag; not a historical snapshot).
    pub ordinal: Ordinal,
    /// One item per input path.
    pub items: Vec<HierarchyItem>,
}

pub(crate) struct HierarchyState {
    pub(crate) key: u64,
    pub(crate) op: OpCell,
    pub(crate) result: OnceLock<HierarchyResult>,
}

// ---- Clone reports (`clone.rs`)

/// Clone reports by clone id, and clone ops' ids, until the op is released.
#[derive(Default)]
pub(crate) struct CloneReports {
    pub(crate) results: Mutex<HashMap<u64, Result<CloneResult>>>,
    pub(crate) ops: Mutex<HashMap<OpId, u64>>,
    /// `ops.len()`, so releasing an op when no clone is held (nearly
    /// always) takes no lock. Raised before a clone's id is returned, so
    /// its release sees it.
    pub(crate) held: std::sync::atomic::AtomicUsize,
}

/// What a finished clone did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CloneResult {
    /// The ordinal the clone was recorded at.
    pub ordinal: Ordinal,
    /// Number of target paths given.
    pub target_count: usize,
    /// Prims in the source subtree, root included.
    pub source_prim_count: usize,
    /// Prims in all target subtrees after cloning.
    pub prims_cloned: usize,
}
