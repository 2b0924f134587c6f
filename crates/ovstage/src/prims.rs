//! The prims of a stage: which exist, and the scene hierarchy among them.
//!
//! Hierarchy is implied by paths: a prim's parent is the prim at its parent
//! path, when that prim exists (no ancestor is created implicitly).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ovstage_types::PrimPath;

#[derive(Default, Clone)]
struct PrimSlot {
    live: bool,
    /// The parent path (whether or not a prim exists there).
    parent: Option<PrimPath>,
    /// Live prims whose parent path is this one, in creation order.
    children: Vec<PrimPath>,
}

/// Live prims and their hierarchy, indexed by path index.
#[derive(Default)]
pub(crate) struct PrimTable {
    slots: Vec<PrimSlot>,
    live: usize,
    /// Bumped (under the table's lock) whenever a prim stops being live.
    /// Shared, so a write can see that nothing was removed without the
    /// table's lock (see [`PrimTable::removals_counter`]).
    removals: Arc<AtomicU64>,
    /// Bumped (under the table's lock) whenever a prim is created or
    /// removed: cached filter results are valid while it stays the same.
    /// Shared, so it is read without the table's lock (see
    /// [`PrimTable::generation_counter`]).
    generation: Arc<AtomicU64>,
}

fn index(p: PrimPath) -> usize {
    (p.get() - 1) as usize
}

impl PrimTable {
    fn slot_mut(&mut self, p: PrimPath) -> &mut PrimSlot {
        let i = index(p);
        if i >= self.slots.len() {
            self.slots.resize(i + 1, PrimSlot::default());
        }
        &mut self.slots[i]
    }

    pub(crate) fn is_live(&self, p: PrimPath) -> bool {
        self.slots.get(index(p)).is_some_and(|s| s.live)
    }

    /// Makes `p` (whose parent path is `parent`) a live prim.
    pub(crate) fn create(&mut self, p: PrimPath, parent: Option<PrimPath>) {
        if self.is_live(p) {
            return;
        }
        let slot = self.slot_mut(p);
        slot.live = true;
        slot.parent = parent;
        self.live += 1;
        self.bump_generation();
        if let Some(parent) = parent {
            self.slot_mut(parent).children.push(p);
        }
    }

    /// Removes the prim at `p`.
    pub(crate) fn remove(&mut self, p: PrimPath) {
        if !self.is_live(p) {
            return;
        }
        let slot = self.slot_mut(p);
        slot.live = false;
        let parent = slot.parent;
        self.live -= 1;
        self.removals.store(self.removals.load(Ordering::Relaxed) + 1, Ordering::Release);
        self.bump_generation();
        if let Some(parent) = parent {
            self.slot_mut(parent).children.retain(|c| *c != p);
        }
    }

    /// The parent prim of a live prim (`None` for a root, or when no prim
    /// exists at the parent path).
    pub(crate) fn parent(&self, p: PrimPath) -> Option<PrimPath> {
        let slot = self.slots.get(index(p)).filter(|s| s.live)?;
        slot.parent.filter(|par| self.is_live(*par))
    }

    /// The children of a live prim, in creation order.
    pub(crate) fn children(&self, p: PrimPath) -> &[PrimPath] {
        match self.slots.get(index(p)) {
            Some(slot) if slot.live => &slot.children,
            _ => &[],
        }
    }

    /// The other children of a live prim's parent prim.
    pub(crate) fn siblings(&self, p: PrimPath) -> Vec<PrimPath> {
        self.parent(p).map_or_else(Vec::new, |par| self.children(par).iter().copied().filter(|c| *c != p).collect())
    }

    /// Every live prim, in path-index order.
    pub(crate) fn live_prims(&self) -> impl Iterator<Item = PrimPath> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.live)
            .map(|(i, _)| PrimPath::from_raw(i as u64 + 1).expect("index + 1 is never 0"))
    }

    /// A live prim and its descendants through the hierarchy, depth first.
    pub(crate) fn subtree(&self, root: PrimPath) -> Vec<PrimPath> {
        let mut out = Vec::new();
        if !self.is_live(root) {
            return out;
        }
        let mut stack = vec![root];
        while let Some(p) = stack.pop() {
            out.push(p);
            stack.extend(self.children(p).iter().rev());
        }
        out
    }

    pub(crate) fn removals(&self) -> u64 {
        self.removals.load(Ordering::Relaxed)
    }

    /// The removal count, readable without the table's lock.
    pub(crate) fn removals_counter(&self) -> Arc<AtomicU64> {
        self.removals.clone()
    }

    /// Changes whenever the live prims or the hierarchy change.
    #[cfg(test)]
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The generation, readable without the table's lock (a filter
    /// query's cache check reads it twice per query).
    pub(crate) fn generation_counter(&self) -> Arc<AtomicU64> {
        self.generation.clone()
    }

    /// A load and a store, not a read-modify-write: only holders of the
    /// table's lock change it.
    fn bump_generation(&self) {
        self.generation.store(self.generation.load(Ordering::Relaxed) + 1, Ordering::Release);
    }

    pub(crate) fn live_count(&self) -> usize {
        self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(i: u64) -> PrimPath {
        PrimPath::from_raw(i).unwrap()
    }

    #[test]
    fn hierarchy_follows_live_prims() {
        // 1 = /W, 2 = /W/A, 3 = /W/A/B, 4 = /W/A/C, 5 = /W/D/E (parent 6 = /W/D)
        let mut t = PrimTable::default();
        t.create(p(1), None);
        t.create(p(2), Some(p(1)));
        t.create(p(3), Some(p(2)));
        t.create(p(4), Some(p(2)));
        t.create(p(5), Some(p(6)));
        assert_eq!(t.parent(p(3)), Some(p(2)));
        assert_eq!(t.parent(p(5)), None, "no prim at /W/D");
        assert_eq!(t.children(p(2)), &[p(3), p(4)]);
        assert_eq!(t.siblings(p(3)), vec![p(4)]);
        assert_eq!(t.subtree(p(1)), vec![p(1), p(2), p(3), p(4)]);
        t.remove(p(3));
        assert_eq!(t.children(p(2)), &[p(4)]);
        assert_eq!((t.live_count(), t.removals(), t.generation()), (4, 1, 6));
        t.create(p(6), Some(p(1)));
        assert_eq!(t.parent(p(5)), Some(p(6)), "a parent created later is found");
        assert_eq!(t.live_prims().count(), 5);
    }
}
