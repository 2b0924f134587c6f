//! The prims of a stage and their lifecycle history.

use ovstage_types::PrimPath;
use smallvec::SmallVec;

#[derive(Default, Clone)]
struct PrimSlot {
    live: bool,
    /// `(ordinal, alive)` lifecycle changes, oldest first.
    events: SmallVec<[(u64, bool); 2]>,
}

/// Prim lifecycles, indexed by path index.
#[derive(Default)]
pub(crate) struct PrimTable {
    slots: Vec<PrimSlot>,
    live: usize,
    /// Bumped whenever a prim stops being live.
    removals: u64,
}

fn index(p: PrimPath) -> usize {
    (p.get() - 1) as usize
}

impl PrimTable {
    pub(crate) fn is_live(&self, p: PrimPath) -> bool {
        self.slots.get(index(p)).is_some_and(|s| s.live)
    }

    fn record(&mut self, p: PrimPath, ordinal: u64, alive: bool) {
        let i = index(p);
        if i >= self.slots.len() {
            self.slots.resize(i + 1, PrimSlot::default());
        }
        let slot = &mut self.slots[i];
        if slot.live != alive {
            if alive {
                self.live += 1;
            } else {
                self.live -= 1;
                self.removals += 1;
            }
        }
        slot.live = alive;
        let pos = slot.events.partition_point(|(o, _)| *o <= ordinal);
        slot.events.insert(pos, (ordinal, alive));
        // A short history is enough: admission works on accepted changes.
        if slot.events.len() > 4 {
            slot.events.remove(0);
        }
    }

    pub(crate) fn create(&mut self, p: PrimPath, ordinal: u64) {
        self.record(p, ordinal, true);
    }

    pub(crate) fn remove(&mut self, p: PrimPath, ordinal: u64) {
        self.record(p, ordinal, false);
    }

    pub(crate) fn removals(&self) -> u64 {
        self.removals
    }

    pub(crate) fn live_count(&self) -> usize {
        self.live
    }
}
