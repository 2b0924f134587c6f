//! Attribute families: everything stored under one canonical attribute name
//! (its columns, one per schema, and its write floor), and the stage-wide
//! floors and admission records over them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use ovstage_types::{PrimPath, Semantic, Token};
use smallvec::SmallVec;

use crate::ordmap::OrdinalMap;
use crate::schema::Storage;
use crate::store::column::{Column, Limits, MergeBound};
use crate::store::rows::RowSet;
use ovstage_types::sync::{lock, read, write};

/// Mutations accepted above the submitted floor and not yet sealed, by
/// ordinal: what admission checks new mutations against and what a read of
/// unsealed data would overlap. Each ordinal keeps the union of the prims
/// its mutations target (a bitset over prim indices) and whether one of
/// them targets prims unknown at submission, so a check costs one bitset
/// intersection per ordinal in range, however many mutations share it.
#[derive(Default)]
pub(crate) struct UnsealedLog {
    by_ordinal: OrdinalMap<OrdinalChanges>,
}

/// The prims changed at one ordinal.
#[derive(Default)]
struct OrdinalChanges {
    /// Shared with the query (and other ordinals) until a second mutation
    /// at the ordinal adds prims to it.
    prims: Arc<RowSet>,
    /// A mutation whose prims were unknown when it was submitted: it
    /// counts as touching every prim.
    unknown: bool,
    /// Mutations logged at the ordinal.
    mutations: u32,
}

/// Ordinals of mutations submitted and not yet run (a multiset). Nothing can
/// still be published below the lowest of them (later submissions at lower
/// ordinals are rejected by admission where they would overlap), which is
/// what lets a column merge older versions safely.
///
/// Every write asks whether any are pending and which is lowest, so both
/// answers are kept in atomics next to the map (set under its lock after
/// each change) and read without the lock.
pub(crate) struct PendingOrdinals {
    counts: Mutex<OrdinalMap<u32>>,
    /// Mutations pending (the multiset's size).
    total: AtomicUsize,
    /// The lowest pending ordinal; `u64::MAX` when none is pending (or
    /// when that is the lowest: the map then decides).
    lowest: AtomicU64,
}

impl Default for PendingOrdinals {
    fn default() -> PendingOrdinals {
        PendingOrdinals { counts: Mutex::default(), total: AtomicUsize::new(0), lowest: AtomicU64::new(u64::MAX) }
    }
}

impl PendingOrdinals {
    fn lock(&self) -> std::sync::MutexGuard<'_, OrdinalMap<u32>> {
        lock(&self.counts)
    }

    /// Publishes the map's summary; called with its lock held.
    fn summarize(&self, counts: &OrdinalMap<u32>, total: usize) {
        self.lowest.store(counts.first().unwrap_or(u64::MAX), Ordering::Release);
        self.total.store(total, Ordering::Release);
    }

    pub(crate) fn add(&self, ordinal: u64) {
        let mut counts = self.lock();
        *counts.entry_or_insert_with(ordinal, || 0) += 1;
        self.summarize(&counts, self.total.load(Ordering::Relaxed) + 1);
    }

    pub(crate) fn remove(&self, ordinal: u64) {
        let mut counts = self.lock();
        if let Some(n) = counts.get_mut(ordinal) {
            *n -= 1;
            if *n == 0 {
                counts.remove(ordinal);
            }
            self.summarize(&counts, self.total.load(Ordering::Relaxed) - 1);
        }
    }

    pub(crate) fn lowest(&self) -> Option<u64> {
        match self.lowest.load(Ordering::Acquire) {
            // Nothing pending, the usual case for whole-stage mutations:
            // no lock (the total is published after the lowest, so a
            // racing addition shows as a total above 0 and takes the lock).
            u64::MAX if self.total.load(Ordering::Acquire) == 0 => None,
            u64::MAX => self.lock().first(),
            lowest => Some(lowest),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.total.load(Ordering::Acquire) == 0
    }
}

impl UnsealedLog {
    /// Records a mutation at `ordinal` of the prims in `prims` (a bitset
    /// over prim indices; `None` when unknown at submission).
    pub(crate) fn push(&mut self, ordinal: u64, prims: Option<&Arc<RowSet>>) {
        let mut fresh = false;
        let changes = self.by_ordinal.entry_or_insert_with(ordinal, || {
            fresh = true;
            // A new ordinal shares the bits: no copy, no merge.
            OrdinalChanges { prims: prims.cloned().unwrap_or_default(), unknown: prims.is_none(), mutations: 1 }
        });
        if fresh {
            return;
        }
        changes.mutations = changes.mutations.saturating_add(1);
        match prims {
            Some(bits) if !Arc::ptr_eq(bits, &changes.prims) => Arc::make_mut(&mut changes.prims).union_with(bits),
            Some(_) => {}
            None => changes.unknown = true,
        }
    }

    /// Takes back one mutation logged at `ordinal` that failed before
    /// publishing anything. The last one there removes the entry; with
    /// others left, the union of their prims stays (it may keep a prim only
    /// the failed one named: conservative, until the floor passes).
    pub(crate) fn retract(&mut self, ordinal: u64) {
        let Some(changes) = self.by_ordinal.get_mut(ordinal) else { return };
        if changes.mutations > 1 {
            changes.mutations -= 1;
        } else {
            self.by_ordinal.remove(ordinal);
        }
    }

    /// How many distinct ordinals above `floor` this log and `other` hold,
    /// counting `extra` as one of them. This log must hold nothing at or
    /// below `floor` (it is pruned there); `other` may, and is usually
    /// empty.
    pub(crate) fn distinct_with(&self, other: &UnsealedLog, floor: u64, extra: u64) -> usize {
        let from_other =
            other.by_ordinal.range(floor.saturating_add(1)..=u64::MAX).filter(|(o, _)| !self.by_ordinal.contains(*o));
        let mut n = self.by_ordinal.len();
        let mut extra_seen = self.by_ordinal.contains(extra);
        for (o, _) in from_other {
            n += 1;
            extra_seen |= o == extra;
        }
        n + usize::from(!extra_seen)
    }

    /// Forgets everything at or below `floor` (sealed).
    pub(crate) fn prune(&mut self, floor: u64) {
        self.by_ordinal.drop_through(floor);
    }

    /// The first ordinal in `(after, through]` with a change of a prim in
    /// `bits` (a bitset over prim indices; `None`: every prim), and the
    /// lowest such prim (`None` when the change's prims are unknown).
    pub(crate) fn overlap(&self, after: u64, through: u64, bits: Option<&RowSet>) -> Option<(u64, Option<PrimPath>)> {
        // Nothing overlaps no prims at all.
        if after >= through || bits.is_some_and(RowSet::is_empty) {
            return None;
        }
        // Writes usually go to a new highest ordinal: nothing lies above it.
        if self.by_ordinal.last().is_none_or(|last| last <= after) {
            return None;
        }
        self.by_ordinal.range(after + 1..=through).find_map(|(ordinal, changes)| {
            if changes.unknown {
                return Some((ordinal, None));
            }
            let hit = match bits {
                Some(bits) => changes.prims.first_common(bits),
                None => changes.prims.first(),
            };
            hit.map(|bit| (ordinal, Some(prim_of_bit(bit))))
        })
    }
}

pub(crate) struct Family {
    /// The scheduler's cell key for this attribute.
    pub(crate) id: u64,
    pub(crate) name: Token,
    pub(crate) name_text: Arc<str>,
    /// An input or the output of the world-matrix computation.
    pub(crate) is_transform: bool,
    /// The family's own floor as submitted (updated under the scheduler's
    /// ordering lock) and as committed (updated when advances execute). The
    /// effective floor is the max of this and the stage's base floor.
    pub(crate) own_floor_submitted: AtomicU64,
    pub(crate) own_floor_committed: AtomicU64,
    pub(crate) columns: RwLock<Vec<Arc<Column>>>,
    /// The highest ordinal a change of any column was published at (see
    /// [`Column::last_change`]): lets a change read skip an attribute that
    /// did not change in its range with one load.
    last_change: AtomicU64,
    /// The last change of the newest column dropped by
    /// [`Family::retire_dead_columns`] (0: none): reads reaching back to it
    /// would miss that column's history, so they are out of range.
    retired_through: AtomicU64,
    /// Ordinals of this family's mutations submitted and not yet run.
    pub(crate) pending: PendingOrdinals,
    /// Changed under the scheduler's ordering lock.
    pub(crate) unsealed: Mutex<UnsealedLog>,
}

impl Family {
    pub(crate) fn new(id: u64, name: Token, name_text: Arc<str>) -> Family {
        Family {
            id,
            name,
            is_transform: crate::xform::is_transform(&name_text),
            name_text,
            own_floor_submitted: AtomicU64::new(0),
            own_floor_committed: AtomicU64::new(0),
            columns: RwLock::new(Vec::new()),
            last_change: AtomicU64::new(0),
            retired_through: AtomicU64::new(0),
            pending: PendingOrdinals::default(),
            unsealed: Mutex::new(UnsealedLog::default()),
        }
    }

    /// The columns (an attribute rarely has more than two schemas, so this
    /// does not allocate).
    pub(crate) fn columns(&self) -> SmallVec<[Arc<Column>; 2]> {
        read(&self.columns).iter().cloned().collect()
    }

    /// Whether a change was published at or above `ordinal` in any column
    /// (see [`Column::last_change`]).
    pub(crate) fn changed_since(&self, ordinal: u64) -> bool {
        self.last_change.load(Ordering::Acquire) >= ordinal
    }

    /// Records a change published at `ordinal` in one of the columns;
    /// called by the one commit path right after the publish.
    pub(crate) fn published(&self, ordinal: u64) {
        self.last_change.fetch_max(ordinal, Ordering::Release);
    }

    /// Whether a write of `storage` and `semantic` lands in the family's
    /// one column (or makes its first) with no schema conflict possible:
    /// at most one column, and it fits.
    pub(crate) fn fits_its_only_column(&self, storage: Storage, semantic: Semantic) -> bool {
        // Not through `only_fit`: no column handle taken (two atomic
        // read-modify-writes, a tenth of a small write's time here).
        match &read(&self.columns)[..] {
            [] => true,
            [only] => only.fits(storage, semantic),
            _ => false,
        }
    }

    /// Where a write of `storage` and `semantic` lands when no schema
    /// decision is needed (at most one column, and it fits): `Some(None)`
    /// with no column yet (the write makes the first), `Some(Some(c))` into
    /// the only one. `None`: there is a choice or a conflict to decide.
    pub(crate) fn only_fit(&self, storage: Storage, semantic: Semantic) -> Option<Option<Arc<Column>>> {
        match &read(&self.columns)[..] {
            [] => Some(None),
            [only] if only.fits(storage, semantic) => Some(Some(only.clone())),
            _ => None,
        }
    }

    pub(crate) fn has_columns(&self) -> bool {
        !read(&self.columns).is_empty()
    }

    /// The column of `storage` whose role is `semantic`, created (with
    /// that role) when missing. An attribute has one column per schema its
    /// prims carry: usually one, more after a schema replacement or when
    /// prims author different roles under one name.
    pub(crate) fn column_for(&self, storage: Storage, semantic: Semantic, limits: Limits) -> Arc<Column> {
        let matches = |c: &&Arc<Column>| c.storage == storage && c.semantic() == semantic;
        if let Some(c) = read(&self.columns).iter().find(matches) {
            return c.clone();
        }
        let mut columns = write(&self.columns);
        if let Some(c) = columns.iter().find(matches) {
            return c.clone();
        }
        let c = Arc::new(Column::new(storage, limits));
        // A new column has no role yet: this one always fits.
        let _ = c.adopt_semantic(semantic);
        columns.push(c.clone());
        c
    }

    /// Drops the columns that hold nothing a retained read can see (see
    /// [`ColumnGuard::dead_through`] at the trim `bound`), keeping at least
    /// one column, so a loop that replaces an attribute's schema with ever
    /// new ones (a new tuple width each tick) holds a bounded number of
    /// columns instead of one per schema it ever wrote. Reads that reach
    /// back to a dropped column's last change are out of range
    /// ([`Family::retired_through`]). Called after a trim; does nothing
    /// while a mutation of the family (or of every attribute) is pending,
    /// since it may publish into a column it already holds. A mutation
    /// admitted later registers as pending before it looks for its column,
    /// and looks under the column list's lock, which this holds while it
    /// checks and drops, so it finds the column dropped and makes a new one.
    ///
    /// [`ColumnGuard::dead_through`]: crate::store::column::ColumnGuard::dead_through
    pub(crate) fn retire_dead_columns(&self, bound: u64, pending_all: &PendingOrdinals) {
        // World matrices are published by the floor advance itself, not by
        // admitted mutations; their few columns stay.
        if self.is_transform || read(&self.columns).len() < 2 {
            return;
        }
        // Checked without the list's lock: a column lock is never taken
        // under it here, whatever order other paths take the two in.
        let dead: SmallVec<[(Arc<Column>, u64); 2]> = self
            .columns()
            .into_iter()
            .filter_map(|c| {
                let last = c.lock().dead_through(bound)?;
                Some((c, last))
            })
            .collect();
        if dead.is_empty() {
            return;
        }
        let mut columns = write(&self.columns);
        if !self.pending.is_empty() || !pending_all.is_empty() {
            return;
        }
        let mut retired = 0;
        for (column, last) in dead {
            // Nothing was published into it since it was checked: a
            // publish raises its last change above `bound`, beyond `last`.
            if columns.len() < 2 || column.last_change() > last {
                continue;
            }
            if let Some(i) = columns.iter().position(|c| Arc::ptr_eq(c, &column)) {
                columns.remove(i);
                retired = retired.max(last);
            }
        }
        self.retired_through.fetch_max(retired, Ordering::AcqRel);
    }

    /// The last change of the newest dropped column (0: none dropped): a
    /// snapshot below it or a change read starting at or below it would
    /// miss that column's history.
    pub(crate) fn retired_through(&self) -> u64 {
        self.retired_through.load(Ordering::Acquire)
    }

    pub(crate) fn raise_submitted(&self, ordinal: u64) {
        self.own_floor_submitted.fetch_max(ordinal, Ordering::AcqRel);
    }

    pub(crate) fn raise_committed(&self, ordinal: u64) {
        self.own_floor_committed.fetch_max(ordinal, Ordering::AcqRel);
    }

    pub(crate) fn unsealed(&self) -> std::sync::MutexGuard<'_, UnsealedLog> {
        lock(&self.unsealed)
    }
}

/// Stage-wide floors. Submitted values change under the scheduler's
/// ordering lock (so enqueue checks agree with registration order);
/// committed values change when advances execute.
#[derive(Default)]
pub(crate) struct Floors {
    pub(crate) base_submitted: AtomicU64,
    pub(crate) base_committed: AtomicU64,
    /// Distinct global floors, oldest first; its front is the frontier.
    pub(crate) history: Mutex<VecDeque<u64>>,
    pub(crate) frontier: AtomicU64,
    /// Unsealed whole-prim deletes and clones (they touch every attribute).
    pub(crate) unsealed_all: Mutex<UnsealedLog>,
    /// Ordinals of whole-prim deletes and clones submitted and not run
    /// (shared with their tickets, which release them).
    pub(crate) pending_all: Arc<PendingOrdinals>,
}

impl Floors {
    /// The effective submitted floor of a family.
    pub(crate) fn submitted(&self, family: &Family) -> u64 {
        family.own_floor_submitted.load(Ordering::Acquire).max(self.base_submitted.load(Ordering::Acquire))
    }

    /// The effective committed floor of a family.
    pub(crate) fn committed(&self, family: &Family) -> u64 {
        family.own_floor_committed.load(Ordering::Acquire).max(self.base_committed.load(Ordering::Acquire))
    }

    /// Versions of a family's columns below this may be merged: above the
    /// submitted floor and below every mutation still to run (so nothing
    /// lands inside a merged span out of ordinal order). The submitted
    /// floor, not the committed one: a read enqueued after an advance to F
    /// reads at F once the advance runs, so versions up to F must stay
    /// exact from the moment the advance is accepted.
    pub(crate) fn merge_bound(&self, family: &Family) -> MergeBound {
        let lowest = [family.pending.lowest(), self.pending_all.lowest()].into_iter().flatten().min();
        MergeBound { floor: self.submitted(family), below: lowest.unwrap_or(u64::MAX) }
    }
}

/// A prim's bit in prim bitsets.
pub(crate) fn prim_bit(p: PrimPath) -> u32 {
    (p.get() - 1) as u32
}

/// The prim of a bit in prim bitsets.
pub(crate) fn prim_of_bit(bit: u32) -> PrimPath {
    PrimPath::from_raw(u64::from(bit) + 1).expect("bit + 1 is never 0")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(prims: &[u64]) -> RowSet {
        let mut b = RowSet::new();
        prims.iter().for_each(|p| b.insert(prim_bit(PrimPath::from_raw(*p).unwrap())));
        b
    }

    fn prim(p: u64) -> Option<PrimPath> {
        PrimPath::from_raw(p)
    }

    #[test]
    fn pending_ordinals_are_a_multiset_whose_summary_reads_without_the_lock() {
        let p = PendingOrdinals::default();
        assert!(p.is_empty() && p.lowest().is_none());
        for o in [5, 5, 3] {
            p.add(o);
        }
        assert_eq!((p.is_empty(), p.lowest()), (false, Some(3)));
        p.remove(3);
        p.remove(5);
        assert_eq!(p.lowest(), Some(5), "5 was added twice");
        p.remove(7);
        assert_eq!(p.lowest(), Some(5), "removing an ordinal not pending changes nothing");
        p.remove(5);
        assert!(p.is_empty() && p.lowest().is_none());
        // Every u64 is an ordinal: the summary's "none" value is one too.
        p.add(u64::MAX);
        assert_eq!((p.is_empty(), p.lowest()), (false, Some(u64::MAX)));
        p.add(1);
        assert_eq!(p.lowest(), Some(1));
        p.remove(1);
        p.remove(u64::MAX);
        assert!(p.is_empty() && p.lowest().is_none());
    }

    #[test]
    fn pending_ordinals_stay_consistent_under_concurrent_mutations() {
        let p = PendingOrdinals::default();
        // A floor that is always pending: the lowest never reads above it.
        p.add(10);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let p = &p;
                s.spawn(move || {
                    for i in 0..2000u64 {
                        let o = 11 + (i * 7 + t) % 50;
                        p.add(o);
                        let lowest = p.lowest().expect("10 is pending");
                        assert!(lowest <= 10 && !p.is_empty());
                        p.remove(o);
                    }
                });
            }
        });
        assert_eq!(p.lowest(), Some(10));
        p.remove(10);
        assert!(p.is_empty() && p.lowest().is_none());
    }

    #[test]
    fn overlap_finds_the_first_ordinal_and_lowest_common_prim() {
        let mut log = UnsealedLog::default();
        for p in 1..=1000 {
            log.push(7, Some(&Arc::new(bits(&[p]))));
        }
        log.push(9, Some(&Arc::new(bits(&[5, 2000]))));
        assert_eq!(log.overlap(6, u64::MAX, Some(&bits(&[2000, 500]))), Some((7, prim(500))));
        assert_eq!(log.overlap(7, u64::MAX, Some(&bits(&[2000, 500]))), Some((9, prim(2000))));
        assert_eq!(log.overlap(6, u64::MAX, Some(&bits(&[3000]))), None);
        assert_eq!(log.overlap(6, 8, Some(&bits(&[2000]))), None, "`through` bounds the range");
        assert_eq!(log.overlap(8, u64::MAX, None), Some((9, prim(5))), "every prim: the lowest changed one");
        assert_eq!(log.overlap(6, u64::MAX, Some(&RowSet::new())), None, "no prims overlap nothing");
        log.push(12, None);
        assert_eq!(log.overlap(9, u64::MAX, Some(&bits(&[3000]))), Some((12, None)), "unknown prims touch all");
        log.prune(9);
        assert_eq!(log.overlap(0, u64::MAX, Some(&bits(&[5]))), Some((12, None)));
        log.prune(u64::MAX);
        assert_eq!(log.overlap(0, u64::MAX, None), None);
    }

    #[test]
    fn a_retracted_mutation_leaves_the_log_when_it_was_alone_at_its_ordinal() {
        let mut log = UnsealedLog::default();
        log.push(5, Some(&Arc::new(bits(&[1]))));
        log.push(6, Some(&Arc::new(bits(&[1]))));
        log.push(6, Some(&Arc::new(bits(&[2]))));
        log.retract(5);
        assert_eq!(log.overlap(0, 5, Some(&bits(&[1]))), None, "the only mutation at 5 is gone");
        log.retract(6);
        // Another mutation at 6 is left: the union stays, conservatively.
        assert_eq!(log.overlap(0, u64::MAX, Some(&bits(&[1]))), Some((6, prim(1))));
        log.retract(6);
        assert_eq!(log.overlap(0, u64::MAX, None), None, "the last one takes the entry");
        log.retract(6);
        log.retract(99);
        assert_eq!(log.overlap(0, u64::MAX, None), None, "retracting nothing changes nothing");
    }

    #[test]
    fn a_shared_prim_set_is_copied_before_another_mutation_adds_to_it() {
        // The log shares a query's bits; a second mutation at the same
        // ordinal must not add its prims to the query's set.
        let query = Arc::new(bits(&[1, 2]));
        let mut log = UnsealedLog::default();
        log.push(4, Some(&query));
        log.push(4, Some(&query));
        log.push(4, Some(&Arc::new(bits(&[900]))));
        assert_eq!(query.iter().collect::<Vec<_>>(), bits(&[1, 2]).iter().collect::<Vec<_>>(), "the query's set");
        assert_eq!(log.overlap(0, u64::MAX, Some(&bits(&[900]))), Some((4, prim(900))));
        assert_eq!(log.overlap(0, u64::MAX, Some(&bits(&[2]))), Some((4, prim(2))));
    }
}
