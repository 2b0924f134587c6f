//! Released op nodes kept for reuse, one pool per thread.
//!
//! A steady stream of ops then allocates no nodes. The pool is the
//! releasing thread's own, not the stage's: a producer that submits, waits
//! and releases gets its own nodes back, still in its core's cache, and
//! two producers on one stage no longer hand nodes (and the cache lines
//! under them) to each other, nor take a shared lock to do it.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use ovstage_types::OpId;

use crate::node::{BoxedJob, Node, Role};
use crate::trace::Tag;

/// Most released nodes a thread keeps: enough for a client that submits a
/// batch of a thousand or two ops before waiting for and releasing them.
pub(crate) const NODE_POOL: usize = 2048;

thread_local! {
    /// Released nodes, oldest first. A node may still be held when it is
    /// released (by a waiter, or by the ordering state until a later op
    /// replaces it); by the time a later submission reaches it, it usually
    /// is not.
    static POOL: RefCell<VecDeque<Arc<Node>>> = const { RefCell::new(VecDeque::new()) };
}

/// The node of a new op `id`: a released one of this thread's that
/// nothing holds any more, reset, or a new one.
pub(crate) fn node(id: OpId, job: Option<BoxedJob>, role: Option<Role>, tag: Option<Box<Tag>>) -> Arc<Node> {
    if let Ok(Some(mut pooled)) = POOL.try_with(|pool| pool.borrow_mut().pop_front()) {
        // One uniqueness check (an atomic compare-and-swap) per reuse.
        match Arc::get_mut(&mut pooled) {
            Some(slot) => {
                slot.reset(id, job, role, tag);
                return pooled;
            }
            // Still held: it waits its turn again.
            None => recycle(pooled),
        }
    }
    Arc::new(Node::new(id, job, role, tag))
}

/// Keeps a released node for this thread's later ops while its pool has
/// room (held elsewhere or not); otherwise drops this reference.
pub(crate) fn recycle(node: Arc<Node>) {
    // During the thread's teardown the pool is gone: the node is dropped.
    let _ = POOL.try_with(|pool| {
        let mut pool = pool.borrow_mut();
        if pool.len() < NODE_POOL {
            pool.push_back(node);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::state;

    fn fresh(id: u64) -> Arc<Node> {
        node(OpId::from_raw(id).unwrap(), Some(Box::new(|| Ok(()))), None, None)
    }

    /// A released node nothing else holds is reused, fully reset; one
    /// that someone still holds is not.
    #[test]
    fn released_nodes_are_reused_only_when_unshared_and_come_back_fresh() {
        use crate::node::Failure;
        use ovstage_types::Error;
        let a = fresh(1);
        a.state.store(state::FAILED, std::sync::atomic::Ordering::Release);
        let _ = a.failure.set(Failure::from(Error::internal("boom")));
        let _ = a.take_job();
        let a_ptr = Arc::as_ptr(&a);
        let held = a.clone();
        recycle(a);
        let b = fresh(2);
        assert_ne!(Arc::as_ptr(&b), a_ptr, "a node someone holds is not reused");
        drop(held);
        // Everything a completed op leaves in its node.
        let other = fresh(3);
        assert_eq!(Arc::as_ptr(&other), a_ptr, "reused once its last holder let go");
        assert!(other.failure.get().is_none() && other.load_state() == state::WAITING, "and reset");
        assert_eq!(other.id.get(), 3);
        b.state.store(state::FAILED, std::sync::atomic::Ordering::Release);
        let _ = b.failure.set(Failure::from(Error::internal("boom")));
        let _ = b.take_job();
        let _ = b.deps.set(Box::new([other.id]));
        b.dependents.lock().unwrap().push(other);
        b.pending.store(0, std::sync::atomic::Ordering::Release);
        b.waiters.store(3, std::sync::atomic::Ordering::Release);
        let b_ptr = Arc::as_ptr(&b);
        recycle(b);
        let c = node(OpId::from_raw(4).unwrap(), Some(Box::new(|| Ok(()))), Some(Role::default()), None);
        assert_eq!(Arc::as_ptr(&c), b_ptr, "an unshared node is reused");
        assert_eq!(c.id.get(), 4);
        assert_eq!(c.load_state(), state::WAITING);
        assert_eq!(c.pending.load(std::sync::atomic::Ordering::Acquire), 1, "the registration's count");
        assert_eq!(c.waiters.load(std::sync::atomic::Ordering::Acquire), 0);
        assert!(c.failure.get().is_none() && c.take_job().is_some(), "fresh failure and job");
        assert!(c.deps().is_empty() && c.dependents.lock().unwrap().is_empty(), "no edges of the old op");
        assert!(c.role.is_some() && c.tag.is_none(), "the new op's role and tag");
    }

    /// A client that submits a batch, then waits for and releases all of
    /// it, gets the batch's nodes back for its next batch; another thread
    /// does not.
    #[test]
    fn a_batch_of_released_ops_is_reused_by_the_same_threads_next_batch() {
        let batch = NODE_POOL - 48;
        let first: Vec<Arc<Node>> = (0..batch as u64).map(|i| fresh(i + 1)).collect();
        let ptrs: std::collections::HashSet<*const Node> = first.iter().map(Arc::as_ptr).collect();
        // Released while the client still holds them (as a waiter would).
        for n in &first {
            recycle(n.clone());
        }
        drop(first);
        let elsewhere = std::thread::spawn(|| Arc::as_ptr(&fresh(1)) as usize).join().unwrap();
        assert!(!ptrs.contains(&(elsewhere as *const Node)), "another thread's pool is its own");
        let second: Vec<Arc<Node>> = (0..batch as u64).map(|i| fresh(i + 1)).collect();
        assert!(second.iter().all(|n| ptrs.contains(&Arc::as_ptr(n))), "every node of the second batch is reused");
    }
}
