//! The op table: op id -> node, for lookups by id.
//!
//! Ids are allocated from a counter, increase monotonically and are never
//! reused, so the table is a window of slots indexed by `id - base`: a
//! lookup is an index, not a hash. Released ids leave an empty slot; the
//! window's front advances past released ids.
//!
//! An id is allocated (an atomic increment, under the ordering lock for
//! ordered ops, so id order stays registration order) before its node is
//! inserted, after that lock is released: the window's lock is never held
//! inside the ordering lock, and ids may arrive slightly out of order.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use ovstage_types::OpId;

use crate::node::Node;
use ovstage_types::sync::{read, write};

/// A window this many slots long or shorter is never compacted.
const MIN_COMPACTED_WINDOW: usize = 1024;

pub(crate) struct OpWindow {
    /// Id of `slots[0]`.
    base: u64,
    /// Slots from `base` up to the highest id inserted; an empty slot is
    /// a released id or one allocated and not inserted yet.
    slots: VecDeque<Option<Arc<Node>>>,
    /// Unreleased ops below `base`: moved out of the window when it was
    /// mostly released slots, so one op a client never releases does not
    /// keep a slot for every op submitted after it (and, rarely, an op
    /// inserted after the front moved past its id).
    old: BTreeMap<u64, Arc<Node>>,
    /// Unreleased ops (in `slots` and `old`).
    live: usize,
    /// The node every born-complete op's slot holds (see
    /// [`OpWindow::insert_done`]): complete, with no job, relations or
    /// dependents, and never pooled. Its own id is not theirs: nothing
    /// reads the id of a node found by id but the timeline, which such an
    /// op is never in.
    done: Arc<Node>,
}

impl OpWindow {
    /// An empty window whose first op gets `first`.
    pub(crate) fn starting_at(first: OpId) -> OpWindow {
        OpWindow {
            base: first.get(),
            slots: VecDeque::new(),
            old: BTreeMap::new(),
            live: 0,
            done: Arc::new(Node::done(first)),
        }
    }

    pub(crate) fn get(&self, id: OpId) -> Option<&Arc<Node>> {
        match id.get().checked_sub(self.base) {
            Some(idx) => self.slots.get(usize::try_from(idx).ok()?)?.as_ref(),
            None => self.old.get(&id.get()),
        }
    }

    /// Inserts the node of an id allocated for it and not inserted yet.
    pub(crate) fn insert(&mut self, node: Arc<Node>) {
        self.put(node.id, node);
    }

    /// Inserts an op that is complete as it is submitted (a marker with
    /// nothing to wait for, a born-complete op), given its allocated id:
    /// its slot holds the shared complete node, so no node is taken,
    /// reset, completed and pooled for it.
    pub(crate) fn insert_done(&mut self, id: OpId) {
        self.put(id, self.done.clone());
    }

    /// Fills the slot of `id`, allocated and not inserted yet.
    fn put(&mut self, id: OpId, node: Arc<Node>) {
        let raw = id.get();
        match raw.checked_sub(self.base) {
            // The front moved past it before it came (ids allocated by
            // racing submitters arrive slightly out of order).
            None => {
                self.old.insert(raw, node);
            }
            Some(_) if self.slots.is_empty() => {
                // Nothing below it is kept: the window starts at it.
                self.base = raw;
                self.slots.push_back(Some(node));
            }
            Some(idx) => {
                let idx = usize::try_from(idx).expect("the window spans fewer ids than memory has bytes");
                let len = self.slots.len();
                if idx == len {
                    // The usual case: the id after the newest.
                    self.slots.push_back(Some(node));
                } else if idx > len {
                    // Ids between were allocated by racing submitters.
                    self.slots.extend(std::iter::repeat_n(None, idx - len));
                    self.slots.push_back(Some(node));
                } else {
                    debug_assert!(self.slots[idx].is_none(), "{id} inserted twice");
                    self.slots[idx] = Some(node);
                }
            }
        }
        self.live += 1;
        if self.slots.len() > MIN_COMPACTED_WINDOW && self.slots.len() > 4 * self.live {
            self.compact();
        }
    }

    /// Moves the window's front past its released slots, keeping the live
    /// ops met on the way in `old`, until at most half the window is
    /// released slots. Amortized O(1) per insertion.
    fn compact(&mut self) {
        while self.slots.len() > 2 * self.live.max(1) {
            let Some(front) = self.slots.pop_front() else { break };
            if let Some(node) = front {
                self.old.insert(self.base, node);
            }
            self.base += 1;
        }
    }

    /// Puts `node` in the slot of the born-complete op `id` (one whose
    /// work failed after it was given its id: see
    /// `Scheduler::submit_brief`), wherever the window has moved it.
    pub(crate) fn replace_born(&mut self, id: OpId, node: Arc<Node>) {
        let slot = match id.get().checked_sub(self.base) {
            Some(idx) => usize::try_from(idx).ok().and_then(|idx| self.slots.get_mut(idx)).and_then(Option::as_mut),
            None => self.old.get_mut(&id.get()),
        };
        debug_assert!(slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, &self.done)), "{id} is not born complete");
        if let Some(slot) = slot {
            *slot = node;
        }
    }

    /// Removes a released op; `None` when it was not live. What it gives
    /// back is the op's own node, for the releasing thread's pool (see
    /// `pool`), or `Released::Shared` for a born-complete op.
    pub(crate) fn remove(&mut self, id: OpId) -> Option<Released> {
        let node = match id.get().checked_sub(self.base) {
            Some(idx) => usize::try_from(idx).ok().and_then(|idx| self.slots.get_mut(idx)).and_then(Option::take),
            None => self.old.remove(&id.get()),
        };
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
        let node = node?;
        self.live -= 1;
        Some(if Arc::ptr_eq(&node, &self.done) { Released::Shared } else { Released::Own(node) })
    }

    pub(crate) fn live(&self) -> impl Iterator<Item = &Arc<Node>> {
        self.old.values().chain(self.slots.iter().flatten())
    }

    /// Number of unreleased ops.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// The oldest unreleased op (by its slot: a born-complete op's node
    /// is shared).
    pub(crate) fn oldest(&self) -> Option<OpId> {
        let in_window = || self.slots.iter().position(Option::is_some).map(|i| self.base + i as u64);
        self.old.keys().next().copied().or_else(in_window).and_then(OpId::from_raw)
    }

    /// Slots the window holds, released ones included (for tests).
    #[cfg(test)]
    pub(crate) fn window_len(&self) -> usize {
        self.slots.len()
    }
}

/// What a release took out of the table.
pub(crate) enum Released {
    /// The op's own node.
    Own(Arc<Node>),
    /// The shared complete node of born-complete ops.
    Shared,
}

pub(crate) struct OpTable {
    window: RwLock<OpWindow>,
    /// The id the next op gets.
    next: AtomicU64,
    /// The window's unreleased op count, readable without its lock (the
    /// submission bound reads it on every submission).
    live: AtomicUsize,
}

impl OpTable {
    /// An empty table whose first op gets `first`.
    pub(crate) fn starting_at(first: OpId) -> OpTable {
        OpTable {
            window: RwLock::new(OpWindow::starting_at(first)),
            next: AtomicU64::new(first.get()),
            live: AtomicUsize::new(0),
        }
    }

    /// Allocates the next id. An ordered op's is allocated under the
    /// ordering lock, so id order is registration order; its node is
    /// inserted once that lock is released, before the id is handed out.
    pub(crate) fn allocate(&self) -> OpId {
        let raw = self.next.fetch_add(1, Ordering::Relaxed);
        OpId::from_raw(raw).expect("op ids start above 0 and do not run out")
    }

    /// Inserts an allocated op's node (see [`OpWindow::insert`]).
    pub(crate) fn insert(&self, node: Arc<Node>) {
        let mut window = self.write();
        window.insert(node);
        self.live.store(window.len(), Ordering::Relaxed);
    }

    /// Inserts an allocated born-complete op (see [`OpWindow::insert_done`]).
    pub(crate) fn insert_done(&self, id: OpId) {
        let mut window = self.write();
        window.insert_done(id);
        self.live.store(window.len(), Ordering::Relaxed);
    }

    /// See [`OpWindow::replace_born`].
    pub(crate) fn replace_born(&self, id: OpId, node: Arc<Node>) {
        self.write().replace_born(id, node);
    }

    /// Removes an op (see [`OpWindow::remove`]) from the locked window.
    pub(crate) fn remove(&self, window: &mut OpWindow, id: OpId) -> Option<Released> {
        let removed = window.remove(id);
        self.live.store(window.len(), Ordering::Relaxed);
        removed
    }

    /// Unreleased ops, as of some recent moment.
    pub(crate) fn live_approx(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, OpWindow> {
        read(&self.window)
    }

    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, OpWindow> {
        write(&self.window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window with its id counter, as the table keeps them.
    struct Window {
        w: OpWindow,
        next: u64,
    }

    impl Window {
        fn starting_at(first: OpId) -> Window {
            Window { w: OpWindow::starting_at(first), next: first.get() }
        }

        fn allocate(&mut self) -> OpId {
            self.next += 1;
            OpId::from_raw(self.next - 1).unwrap()
        }

        fn insert(&mut self) -> Arc<Node> {
            let node = Arc::new(Node::new(self.allocate(), Some(Box::new(|| Ok(()))), None, None));
            self.w.insert(node.clone());
            node
        }

        fn insert_done(&mut self) -> OpId {
            let id = self.allocate();
            self.w.insert_done(id);
            id
        }
    }

    /// A born-complete op that failed after all gets its own node in its
    /// slot, also after the window has moved it out (to `old`), and keeps
    /// it until released; the shared complete node is untouched.
    #[test]
    fn a_born_complete_slot_takes_a_node_of_its_own_wherever_it_is() {
        use crate::node::state;
        let mut w = Window::starting_at(OpId::from_raw(1).unwrap());
        let inside = w.insert_done();
        let kept = w.insert_done();
        // Enough released ops after them that the window compacts past
        // `kept` (live) into `old`.
        for _ in 0..4 * MIN_COMPACTED_WINDOW {
            let n = w.insert();
            assert!(matches!(w.w.remove(n.id), Some(Released::Own(_))));
        }
        assert!(w.w.window_len() < 4 * MIN_COMPACTED_WINDOW, "the window compacted");
        let late = w.insert_done();
        for id in [inside, kept, late] {
            let own = Arc::new(Node::new(id, None, None, None));
            own.state.store(state::FAILED, std::sync::atomic::Ordering::Release);
            w.w.replace_born(id, own.clone());
            assert!(Arc::ptr_eq(w.w.get(id).unwrap(), &own), "{id}");
        }
        assert!(w.w.done.is_complete() && w.w.done.load_state() == state::DONE, "the shared node stays done");
        assert_eq!(w.w.len(), 3);
        for id in [inside, kept, late] {
            assert!(matches!(w.w.remove(id), Some(Released::Own(_))));
        }
        assert_eq!(w.w.len(), 0);
    }

    /// Ids allocated by racing submitters may be inserted out of order,
    /// also after releases moved the window's front past an id not yet
    /// inserted: each is found, counted and released exactly once.
    #[test]
    fn ids_inserted_out_of_order_are_found_and_released_once() {
        let mut w = Window::starting_at(OpId::from_raw(1).unwrap());
        let a = w.allocate();
        let b = w.allocate();
        let c = w.allocate();
        let node = |id| Arc::new(Node::new(id, None, None, None));
        w.w.insert(node(a));
        w.w.insert(node(c));
        assert!(w.w.get(b).is_none(), "allocated, not inserted");
        // Released before `b` arrives: the front moves past `b`'s slot.
        assert!(w.w.remove(a).is_some());
        assert_eq!(w.w.window_len(), 1, "the front is at `c`");
        w.w.insert_done(b);
        assert!(w.w.get(b).is_some_and(|n| n.is_complete()) && w.w.get(c).is_some_and(|n| n.id == c));
        assert_eq!(w.w.len(), 2);
        assert!(matches!(w.w.remove(b), Some(Released::Shared)));
        assert!(matches!(w.w.remove(c), Some(Released::Own(n)) if n.id == c));
        assert!(w.w.remove(b).is_none() && w.w.remove(c).is_none(), "released twice");
        assert_eq!((w.w.len(), w.w.oldest()), (0, None));
        // A later op starts the window again.
        let d = w.insert();
        assert_eq!(w.w.get(d.id).map(|n| n.id), Some(d.id));
    }

    #[test]
    fn one_unreleased_op_does_not_pin_a_slot_for_every_later_op() {
        let first = OpId::from_raw(7 << 32).unwrap();
        let mut w = Window::starting_at(first);
        let pinned = w.insert().id;
        assert_eq!(pinned, first, "ids start at the configured first id");
        let mut kept = Vec::new();
        for i in 0..100_000u64 {
            let id = w.insert().id;
            assert_eq!(id.get(), first.get() + 1 + i, "ids stay consecutive");
            if i % 10_000 == 0 {
                kept.push(id);
            } else {
                assert!(w.w.remove(id).is_some(), "live");
            }
        }
        assert_eq!(w.w.len(), 1 + kept.len());
        assert!(w.w.window_len() <= 2 * MIN_COMPACTED_WINDOW, "the window was compacted: {}", w.w.window_len());
        // Ops moved out of the window are still found and released.
        assert_eq!(w.w.get(pinned).map(|n| n.id), Some(pinned));
        assert_eq!(w.w.oldest(), Some(pinned));
        for id in kept.iter().chain([&pinned]) {
            assert!(w.w.remove(*id).is_some());
            assert!(w.w.get(*id).is_none(), "released");
        }
        assert_eq!((w.w.len(), w.w.oldest()), (0, None));
        assert!(w.w.remove(pinned).is_none(), "released twice");
    }
}
