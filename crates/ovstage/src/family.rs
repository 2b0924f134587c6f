//! Attribute families: everything stored under one canonical attribute name
//! (its columns, one per schema, and its write floor).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use ovstage_types::{PrimPath, Token};

use crate::schema::Storage;
use crate::store::column::Column;
use crate::store::rows::RowSet;

/// A mutation accepted above the submitted floor and not yet sealed: what a
/// read of unsealed data would overlap.
pub(crate) struct Unsealed {
    pub(crate) ordinal: u64,
    /// The prims it targets; `None` when not known at submission.
    pub(crate) prims: Option<Arc<[PrimPath]>>,
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
    /// Mutations of this family submitted and not yet completed: while
    /// non-zero, committed state may still change under an enqueue check.
    pub(crate) pending: std::sync::atomic::AtomicUsize,
    /// Guarded in practice by the scheduler's ordering lock.
    pub(crate) unsealed: Mutex<Vec<Unsealed>>,
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
            pending: std::sync::atomic::AtomicUsize::new(0),
            unsealed: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn columns(&self) -> Vec<Arc<Column>> {
        self.columns.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn has_columns(&self) -> bool {
        !self.columns.read().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// The column of `storage`, created when missing.
    pub(crate) fn column_for(&self, storage: Storage) -> Arc<Column> {
        if let Some(c) = self.columns.read().unwrap_or_else(|e| e.into_inner()).iter().find(|c| c.storage == storage) {
            return c.clone();
        }
        let mut columns = self.columns.write().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = columns.iter().find(|c| c.storage == storage) {
            return c.clone();
        }
        let c = Arc::new(Column::new(storage));
        columns.push(c.clone());
        c
    }

    pub(crate) fn raise_submitted(&self, ordinal: u64) {
        self.own_floor_submitted.fetch_max(ordinal, Ordering::AcqRel);
    }

    pub(crate) fn raise_committed(&self, ordinal: u64) {
        self.own_floor_committed.fetch_max(ordinal, Ordering::AcqRel);
    }

    pub(crate) fn unsealed(&self) -> std::sync::MutexGuard<'_, Vec<Unsealed>> {
        self.unsealed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The first unsealed mutation in `(after, through]` overlapping the
    /// prims in `bits`: its ordinal and a prim in common.
    pub(crate) fn unsealed_overlap(&self, after: u64, through: u64, bits: &RowSet) -> Option<(u64, Option<PrimPath>)> {
        overlap(&self.unsealed(), after, through, bits)
    }
}

/// The first entry of `list` in `(after, through]` overlapping the prims in
/// `bits` (a bitset over prim indices): its ordinal and a prim in common
/// (`None` when the entry's prims are unknown).
pub(crate) fn overlap(list: &[Unsealed], after: u64, through: u64, bits: &RowSet) -> Option<(u64, Option<PrimPath>)> {
    list.iter().filter(|u| u.ordinal > after && u.ordinal <= through).find_map(|u| match &u.prims {
        Some(prims) => prims.iter().find(|p| bits.contains(prim_bit(**p))).map(|p| (u.ordinal, Some(*p))),
        None => Some((u.ordinal, None)),
    })
}

/// A prim's bit in prim bitsets.
pub(crate) fn prim_bit(p: PrimPath) -> u32 {
    (p.get() - 1) as u32
}
