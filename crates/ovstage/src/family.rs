//! Attribute families: everything stored under one canonical attribute name
//! (its columns, one per schema, and its write floor).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use ovstage_types::{PrimPath, Token};
use smallvec::SmallVec;

use crate::schema::Storage;
use crate::store::column::{Column, Limits};
use crate::store::rows::RowSet;

/// Mutations accepted above the submitted floor and not yet sealed, by
/// ordinal: what admission checks new mutations against and what a read of
/// unsealed data would overlap. Each entry holds the prims it targets
/// (`None` when unknown at submission).
#[derive(Default)]
pub(crate) struct UnsealedLog {
    by_ordinal: BTreeMap<u64, SmallVec<[TargetPrims; 1]>>,
}

/// Ordinals of mutations submitted and not yet run (a multiset). Nothing can
/// still be published below the lowest of them (later submissions at lower
/// ordinals are rejected by admission where they would overlap), which is
/// what lets a column merge older versions safely.
#[derive(Default)]
pub(crate) struct PendingOrdinals {
    counts: Mutex<BTreeMap<u64, u32>>,
}

impl PendingOrdinals {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, u32>> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn add(&self, ordinal: u64) {
        *self.lock().entry(ordinal).or_default() += 1;
    }

    pub(crate) fn remove(&self, ordinal: u64) {
        let mut counts = self.lock();
        if let Some(n) = counts.get_mut(&ordinal) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&ordinal);
            }
        }
    }

    pub(crate) fn lowest(&self) -> Option<u64> {
        self.lock().keys().next().copied()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// The prims a mutation targets; `None` when not known at submission.
type TargetPrims = Option<Arc<[PrimPath]>>;

impl UnsealedLog {
    pub(crate) fn push(&mut self, ordinal: u64, prims: TargetPrims) {
        self.by_ordinal.entry(ordinal).or_default().push(prims);
    }

    /// Forgets everything at or below `floor` (sealed).
    pub(crate) fn prune(&mut self, floor: u64) {
        self.by_ordinal = self.by_ordinal.split_off(&floor.saturating_add(1));
        if floor == u64::MAX {
            self.by_ordinal.clear();
        }
    }

    /// The first entry in `(after, through]` overlapping the prims in
    /// `bits` (a bitset over prim indices; `None`: every prim): its ordinal
    /// and a prim in common (`None` when either side's prims are unknown).
    pub(crate) fn overlap(&self, after: u64, through: u64, bits: Option<&RowSet>) -> Option<(u64, Option<PrimPath>)> {
        // Nothing overlaps no prims at all.
        if after >= through || bits.is_some_and(RowSet::is_empty) {
            return None;
        }
        self.by_ordinal.range(after + 1..=through).find_map(|(ordinal, entries)| {
            entries.iter().find_map(|prims| match (prims, bits) {
                (Some(prims), Some(bits)) => {
                    prims.iter().find(|p| bits.contains(prim_bit(**p))).map(|p| (*ordinal, Some(*p)))
                }
                (Some(prims), None) => prims.first().map(|p| (*ordinal, Some(*p))),
                (None, _) => Some((*ordinal, None)),
            })
        })
    }
}

pub(crate) struct Family {
    /// The scheduler's cell key for this attribute.
    pub(crate) id: u64,
    pub(crate) name: Token,
    pub(crate) name_text: Arc<str>,
    /// The family's own floor as submitted (updated under the scheduler's
    /// ordering lock) and as committed (updated when advances execute). The
    /// effective floor is the max of this and the stage's base floor.
    pub(crate) own_floor_submitted: AtomicU64,
    pub(crate) own_floor_committed: AtomicU64,
    pub(crate) columns: RwLock<Vec<Arc<Column>>>,
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
            name_text,
            own_floor_submitted: AtomicU64::new(0),
            own_floor_committed: AtomicU64::new(0),
            columns: RwLock::new(Vec::new()),
            pending: PendingOrdinals::default(),
            unsealed: Mutex::new(UnsealedLog::default()),
        }
    }

    pub(crate) fn columns(&self) -> Vec<Arc<Column>> {
        self.columns.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn has_columns(&self) -> bool {
        !self.columns.read().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// The column of `storage`, created when missing.
    pub(crate) fn column_for(&self, storage: Storage, limits: Limits) -> Arc<Column> {
        if let Some(c) = self.columns.read().unwrap_or_else(|e| e.into_inner()).iter().find(|c| c.storage == storage) {
            return c.clone();
        }
        let mut columns = self.columns.write().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = columns.iter().find(|c| c.storage == storage) {
            return c.clone();
        }
        let c = Arc::new(Column::new(storage, limits));
        columns.push(c.clone());
        c
    }

    pub(crate) fn raise_submitted(&self, ordinal: u64) {
        self.own_floor_submitted.fetch_max(ordinal, Ordering::AcqRel);
    }

    pub(crate) fn raise_committed(&self, ordinal: u64) {
        self.own_floor_committed.fetch_max(ordinal, Ordering::AcqRel);
    }

    pub(crate) fn unsealed(&self) -> std::sync::MutexGuard<'_, UnsealedLog> {
        self.unsealed.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A prim's bit in prim bitsets.
pub(crate) fn prim_bit(p: PrimPath) -> u32 {
    (p.get() - 1) as u32
}
