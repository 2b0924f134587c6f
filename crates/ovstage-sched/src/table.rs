//! The op table: op id -> node, for lookups by id.
//!
//! Ids are allocated from a counter, increase monotonically and are never
//! reused, so the table is a window of slots indexed by `id - base`: a
//! lookup is an index, not a hash. Released ids leave an empty slot; the
//! window's front advances past released ids.

use std::collections::VecDeque;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use ovstage_types::OpId;

use crate::node::Node;

pub(crate) struct OpWindow {
    /// Id of `slots[0]`.
    base: u64,
    /// The id the next insertion gets.
    next: u64,
    slots: VecDeque<Option<Arc<Node>>>,
}

impl Default for OpWindow {
    fn default() -> Self {
        OpWindow { base: 1, next: 1, slots: VecDeque::new() }
    }
}

impl OpWindow {
    pub(crate) fn get(&self, id: OpId) -> Option<&Arc<Node>> {
        let idx = id.get().checked_sub(self.base)?;
        self.slots.get(usize::try_from(idx).ok()?)?.as_ref()
    }

    /// Allocates the next id and inserts the node built for it. Ids are
    /// allocated here, under the table's write lock, so they are inserted in
    /// order and the window never has to grow at its front.
    pub(crate) fn insert_new(&mut self, make: impl FnOnce(OpId) -> Node) -> Arc<Node> {
        let raw = self.next;
        self.next += 1;
        let id = OpId::from_raw(raw).expect("op ids start at 1");
        if self.slots.is_empty() {
            self.base = raw;
        }
        let node = Arc::new(make(id));
        self.slots.push_back(Some(node.clone()));
        debug_assert_eq!(self.base + self.slots.len() as u64, self.next);
        node
    }

    pub(crate) fn remove(&mut self, id: OpId) -> Option<Arc<Node>> {
        let idx = usize::try_from(id.get().checked_sub(self.base)?).ok()?;
        let node = self.slots.get_mut(idx)?.take();
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
        node
    }

    pub(crate) fn live(&self) -> impl Iterator<Item = &Arc<Node>> {
        self.slots.iter().flatten()
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.iter().flatten().count()
    }
}

#[derive(Default)]
pub(crate) struct OpTable {
    window: RwLock<OpWindow>,
}

impl OpTable {
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, OpWindow> {
        self.window.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, OpWindow> {
        self.window.write().unwrap_or_else(|e| e.into_inner())
    }
}
