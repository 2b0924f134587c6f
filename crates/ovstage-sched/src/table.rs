//! The op table: op id -> node, for lookups by id.
//!
//! Ids are allocated from a counter, increase monotonically and are never
//! reused, so the table is a window of slots indexed by `id - base`: a
//! lookup is an index, not a hash. Released ids leave an empty slot; the
//! window's front advances past released ids.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use ovstage_types::OpId;

use crate::node::{BoxedJob, Node, Role};
use crate::trace::Tag;
use ovstage_types::sync::{read, write};

/// A window this many slots long or shorter is never compacted.
const MIN_COMPACTED_WINDOW: usize = 1024;

/// Most released nodes kept for reuse: enough for a client that submits a
/// batch of a thousand or two ops before waiting for and releasing them.
const NODE_POOL: usize = 2048;

pub(crate) struct OpWindow {
    /// Id of `slots[0]`.
    base: u64,
    /// The id the next insertion gets.
    next: u64,
    slots: VecDeque<Option<Arc<Node>>>,
    /// Unreleased ops below `base`: moved out of the window when it was
    /// mostly released slots, so one op a client never releases does not
    /// keep a slot for every op submitted after it.
    old: BTreeMap<u64, Arc<Node>>,
    /// Unreleased ops (in `slots` and `old`).
    live: usize,
    /// Released nodes, oldest first, reused by later insertions (under the
    /// same lock) once nothing else holds them, so a steady stream of ops
    /// allocates no nodes. A node may still be held when it is released
    /// (by a waiter, or by the ordering state until a later op replaces
    /// it); by the time a later insertion reaches it, it usually is not.
    pool: VecDeque<Arc<Node>>,
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
            next: first.get(),
            slots: VecDeque::new(),
            old: BTreeMap::new(),
            live: 0,
            pool: VecDeque::new(),
            done: Arc::new(Node::done(first)),
        }
    }

    pub(crate) fn get(&self, id: OpId) -> Option<&Arc<Node>> {
        match id.get().checked_sub(self.base) {
            Some(idx) => self.slots.get(usize::try_from(idx).ok()?)?.as_ref(),
            None => self.old.get(&id.get()),
        }
    }

    /// Allocates the next id and inserts the node built for it. Ids are
    /// allocated here, under the table's write lock, so they are inserted in
    /// order and the window never has to grow at its front.
    pub(crate) fn insert_new(&mut self, job: Option<BoxedJob>, role: Option<Role>, tag: Option<Box<Tag>>) -> Arc<Node> {
        let id = self.next_id();
        let node = match self.pool.pop_front() {
            Some(mut pooled) => match Arc::get_mut(&mut pooled) {
                Some(slot) => {
                    slot.reset(id, job, role, tag);
                    pooled
                }
                None => {
                    // Still held: it waits its turn again.
                    self.pool.push_back(pooled);
                    Arc::new(Node::new(id, job, role, tag))
                }
            },
            None => Arc::new(Node::new(id, job, role, tag)),
        };
        self.push(node.clone());
        node
    }

    /// Allocates the next id for an op that is complete as it is
    /// submitted (a marker with nothing to wait for): its slot holds the
    /// shared complete node, so no node is taken from the pool, reset,
    /// completed and pooled again for it.
    pub(crate) fn insert_done(&mut self) -> OpId {
        let id = self.next_id();
        self.push(self.done.clone());
        id
    }

    fn next_id(&mut self) -> OpId {
        let raw = self.next;
        self.next = raw.checked_add(1).expect("op ids do not run out");
        if self.slots.is_empty() {
            self.base = raw;
        }
        OpId::from_raw(raw).expect("op ids start above 0")
    }

    /// Fills the slot of the id just allocated.
    fn push(&mut self, node: Arc<Node>) {
        self.slots.push_back(Some(node));
        self.live += 1;
        debug_assert_eq!(self.base + self.slots.len() as u64, self.next);
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

    /// Removes a released op; true when it was live. Its node goes to the
    /// pool while the pool has room, held elsewhere or not (see `pool`).
    pub(crate) fn remove(&mut self, id: OpId) -> bool {
        let node = match id.get().checked_sub(self.base) {
            Some(idx) => usize::try_from(idx).ok().and_then(|idx| self.slots.get_mut(idx)).and_then(Option::take),
            None => self.old.remove(&id.get()),
        };
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
        let Some(node) = node else { return false };
        self.live -= 1;
        if self.pool.len() < NODE_POOL && !Arc::ptr_eq(&node, &self.done) {
            self.pool.push_back(node);
        }
        true
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

pub(crate) struct OpTable {
    window: RwLock<OpWindow>,
    /// The window's unreleased op count, readable without its lock (the
    /// submission bound reads it on every submission).
    live: AtomicUsize,
}

impl OpTable {
    /// An empty table whose first op gets `first`.
    pub(crate) fn starting_at(first: OpId) -> OpTable {
        OpTable { window: RwLock::new(OpWindow::starting_at(first)), live: AtomicUsize::new(0) }
    }

    /// Allocates a born-complete op's id (see [`OpWindow::insert_done`]).
    pub(crate) fn insert_done(&self) -> OpId {
        let mut window = self.write();
        let id = window.insert_done();
        self.live.store(window.len(), Ordering::Relaxed);
        id
    }

    /// See [`OpWindow::replace_born`].
    pub(crate) fn replace_born(&self, id: OpId, node: Arc<Node>) {
        self.write().replace_born(id, node);
    }

    /// Inserts a new op (see [`OpWindow::insert_new`]).
    pub(crate) fn insert_new(&self, job: Option<BoxedJob>, role: Option<Role>, tag: Option<Box<Tag>>) -> Arc<Node> {
        let mut window = self.write();
        let node = window.insert_new(job, role, tag);
        self.live.store(window.len(), Ordering::Relaxed);
        node
    }

    /// Removes an op (see [`OpWindow::remove`]) from the locked window.
    pub(crate) fn remove(&self, window: &mut OpWindow, id: OpId) -> bool {
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

    fn insert(w: &mut OpWindow) -> Arc<Node> {
        w.insert_new(Some(Box::new(|| Ok(()))), None, None)
    }

    /// A born-complete op that failed after all gets its own node in its
    /// slot, also after the window has moved it out (to `old`), and keeps
    /// it until released; the shared complete node is untouched.
    #[test]
    fn a_born_complete_slot_takes_a_node_of_its_own_wherever_it_is() {
        use crate::node::state;
        let mut w = OpWindow::starting_at(OpId::from_raw(1).unwrap());
        let inside = w.insert_done();
        let kept = w.insert_done();
        // Enough released ops after them that the window compacts past
        // `kept` (live) into `old`.
        for _ in 0..4 * MIN_COMPACTED_WINDOW {
            let n = insert(&mut w);
            assert!(w.remove(n.id));
        }
        assert!(w.window_len() < 4 * MIN_COMPACTED_WINDOW, "the window compacted");
        let late = w.insert_done();
        for id in [inside, kept, late] {
            let own = Arc::new(Node::new(id, None, None, None));
            own.state.store(state::FAILED, std::sync::atomic::Ordering::Release);
            w.replace_born(id, own.clone());
            assert!(Arc::ptr_eq(w.get(id).unwrap(), &own), "{id}");
        }
        assert!(w.done.is_complete() && w.done.load_state() == state::DONE, "the shared node stays done");
        assert_eq!(w.len(), 3);
        for id in [inside, kept, late] {
            assert!(w.remove(id));
        }
        assert_eq!(w.len(), 0);
    }

    /// A released node nothing else holds is reused, fully reset; one
    /// that someone still holds is not.
    #[test]
    fn released_nodes_are_reused_only_when_unshared_and_come_back_fresh() {
        use crate::node::{Failure, state};
        use ovstage_types::Error;
        let mut w = OpWindow::starting_at(OpId::from_raw(1).unwrap());
        let a = insert(&mut w);
        a.state.store(state::FAILED, std::sync::atomic::Ordering::Release);
        let _ = a.failure.set(Failure::from(Error::internal("boom")));
        let _ = a.take_job();
        let a_ptr = Arc::as_ptr(&a);
        let held = a.clone();
        drop(a);
        assert!(w.remove(held.id));
        let b = insert(&mut w);
        assert_ne!(Arc::as_ptr(&b), a_ptr, "a node someone holds is not reused");
        drop(held);
        // Everything a completed op leaves in its node.
        let other = insert(&mut w);
        assert_eq!(Arc::as_ptr(&other), a_ptr, "reused once its last holder let go");
        assert!(other.failure.get().is_none() && other.load_state() == state::WAITING, "and reset");
        b.state.store(state::FAILED, std::sync::atomic::Ordering::Release);
        let _ = b.failure.set(Failure::from(Error::internal("boom")));
        let _ = b.take_job();
        let _ = b.deps.set(Box::new([other.id]));
        b.dependents.lock().unwrap().push(other.clone());
        b.pending.store(0, std::sync::atomic::Ordering::Release);
        b.waiters.store(3, std::sync::atomic::Ordering::Release);
        let b_ptr = Arc::as_ptr(&b);
        let b_id = b.id;
        drop(b);
        assert!(w.remove(b_id));
        let c = w.insert_new(Some(Box::new(|| Ok(()))), Some(Role::default()), None);
        assert_eq!(Arc::as_ptr(&c), b_ptr, "an unshared node is reused");
        assert_eq!(c.id.get(), other.id.get() + 1);
        assert_eq!(c.load_state(), state::WAITING);
        assert_eq!(c.pending.load(std::sync::atomic::Ordering::Acquire), 1, "the registration's count");
        assert_eq!(c.waiters.load(std::sync::atomic::Ordering::Acquire), 0);
        assert!(c.failure.get().is_none() && c.take_job().is_some(), "fresh failure and job");
        assert!(c.deps().is_empty() && c.dependents.lock().unwrap().is_empty(), "no edges of the old op");
        assert!(c.role.is_some() && c.tag.is_none(), "the new op's role and tag");
    }

    /// A client that submits a batch, then waits for and releases all of
    /// it, gets the batch's nodes back for its next batch.
    #[test]
    fn a_batch_of_released_ops_is_reused_by_the_next_batch() {
        let mut w = OpWindow::starting_at(OpId::from_raw(1).unwrap());
        let batch = NODE_POOL - 48;
        let first: Vec<Arc<Node>> = (0..batch).map(|_| insert(&mut w)).collect();
        let ptrs: std::collections::HashSet<*const Node> = first.iter().map(Arc::as_ptr).collect();
        // Released while the client still holds them (as a waiter would).
        for n in &first {
            assert!(w.remove(n.id));
        }
        drop(first);
        let second: Vec<Arc<Node>> = (0..batch).map(|_| insert(&mut w)).collect();
        assert!(second.iter().all(|n| ptrs.contains(&Arc::as_ptr(n))), "every node of the second batch is reused");
    }

    #[test]
    fn one_unreleased_op_does_not_pin_a_slot_for_every_later_op() {
        let first = OpId::from_raw(7 << 32).unwrap();
        let mut w = OpWindow::starting_at(first);
        let pinned = insert(&mut w).id;
        assert_eq!(pinned, first, "ids start at the configured first id");
        let mut kept = Vec::new();
        for i in 0..100_000u64 {
            let id = insert(&mut w).id;
            assert_eq!(id.get(), first.get() + 1 + i, "ids stay consecutive");
            if i % 10_000 == 0 {
                kept.push(id);
            } else {
                assert!(w.remove(id), "live");
            }
        }
        assert_eq!(w.len(), 1 + kept.len());
        assert!(w.window_len() <= 2 * MIN_COMPACTED_WINDOW, "the window was compacted: {}", w.window_len());
        // Ops moved out of the window are still found and released.
        assert_eq!(w.get(pinned).map(|n| n.id), Some(pinned));
        assert_eq!(w.oldest(), Some(pinned));
        for id in kept.iter().chain([&pinned]) {
            assert!(w.remove(*id));
            assert!(w.get(*id).is_none(), "released");
        }
        assert_eq!((w.len(), w.oldest()), (0, None));
        assert!(!w.remove(pinned), "released twice");
    }
}
