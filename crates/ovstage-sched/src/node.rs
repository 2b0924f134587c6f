//! One op: its state word, job, dependency edges and failure.

use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ovstage_types::{Error, OpId};
use smallvec::SmallVec;

use crate::spec::{HandleKey, Order};
use crate::trace::Tag;
use ovstage_types::sync::lock;

/// Why an op failed: the error, and the op that caused it when the failure
/// comes from a failed input (a consumer of a handle whose producer failed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The error reported for this op.
    pub error: Error,
    /// The failed op this failure stems from, if any.
    pub caused_by: Option<OpId>,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure { error, caused_by: None }
    }
}

/// The work of an op.
pub(crate) type BoxedJob = Box<dyn FnOnce() -> Result<(), Failure> + Send + 'static>;

/// Lifecycle of a node. Only forward transitions happen:
/// `WAITING -> READY -> RUNNING -> DONE | FAILED`.
pub(crate) mod state {
    /// Dependencies outstanding.
    pub(crate) const WAITING: u8 = 0;
    /// Queued; whoever wins the CAS to `RUNNING` runs it.
    pub(crate) const READY: u8 = 1;
    /// Being executed.
    pub(crate) const RUNNING: u8 = 2;
    /// Finished successfully.
    pub(crate) const DONE: u8 = 3;
    /// Finished with a failure.
    pub(crate) const FAILED: u8 = 4;
}

/// What the ordering bookkeeping must undo when the op completes.
#[derive(Debug, Default)]
pub(crate) struct Role {
    pub(crate) mutation_ordinal: Option<u64>,
    pub(crate) barrier: bool,
    pub(crate) floor_advance: bool,
    pub(crate) uses: SmallVec<[HandleKey; 2]>,
    pub(crate) produces: Option<HandleKey>,
}

impl Role {
    /// Whether the ordering state keeps a reference to the node (as a
    /// bucket's, a barrier's or the floor chain's tail, or as a handle's
    /// user or producer) that its completion must remove, and so whether
    /// any later op can depend on it. An op that only releases a handle or
    /// only follows the floor chain is neither: its completion needs no
    /// ordering lock.
    pub(crate) fn is_recorded(&self) -> bool {
        self.mutation_ordinal.is_some()
            || self.barrier
            || self.floor_advance
            || !self.uses.is_empty()
            || self.produces.is_some()
    }

    pub(crate) fn new(order: &Order, uses: &[HandleKey], produces: Option<HandleKey>) -> Role {
        Role {
            mutation_ordinal: match order {
                Order::Mutation { ordinal, .. } | Order::Barrier { ordinal, .. } => Some(*ordinal),
                _ => None,
            },
            barrier: matches!(order, Order::Barrier { .. }),
            floor_advance: matches!(order, Order::FloorAdvance { .. }),
            uses: SmallVec::from_slice(uses),
            produces,
        }
    }
}

pub(crate) struct Node {
    pub(crate) id: OpId,
    pub(crate) state: AtomicU8,
    /// Outstanding dependencies, plus one held during registration so the
    /// node cannot become ready before all its edges exist.
    pub(crate) pending: AtomicU32,
    /// Threads blocked waiting for this node; completion notifies only when
    /// non-zero.
    pub(crate) waiters: AtomicU32,
    pub(crate) job: Mutex<Option<BoxedJob>>,
    /// Ids this node waited for when it was submitted (for the lowest
    /// pending op of a chain). Set once, during submission; left unset (read
    /// as none) when there are none.
    pub(crate) deps: OnceLock<Box<[OpId]>>,
    /// Nodes waiting for this one. Completion sets the final state and
    /// drains them under this lock; a registration pushes to it under this
    /// lock only while the state is not final, so no edge is added after
    /// completion.
    pub(crate) dependents: Mutex<SmallVec<[Arc<Node>; 2]>>,
    pub(crate) failure: OnceLock<Failure>,
    /// `None` for ops without ordering relations: they skip the ordering
    /// lock entirely.
    pub(crate) role: Option<Role>,
    /// What the op timeline shows of it; only for ops submitted while a
    /// trace is being recorded (so nothing is built or copied otherwise).
    pub(crate) tag: Option<Box<Tag>>,
}

impl Node {
    /// A waiting node. `job` is `None` when the submitter keeps the job to
    /// run it itself (see `Scheduler::submit_with`); it is then stored
    /// before the node can become ready, if it has to wait.
    pub(crate) fn new(id: OpId, job: Option<BoxedJob>, role: Option<Role>, tag: Option<Box<Tag>>) -> Node {
        Node {
            id,
            state: AtomicU8::new(state::WAITING),
            pending: AtomicU32::new(1),
            waiters: AtomicU32::new(0),
            job: Mutex::new(job),
            deps: OnceLock::new(),
            dependents: Mutex::new(SmallVec::new()),
            failure: OnceLock::new(),
            role,
            tag,
        }
    }

    /// A node that is complete from the start, with nothing to run: the
    /// op table's shared node of born-complete ops.
    pub(crate) fn done(id: OpId) -> Node {
        let node = Node::new(id, None, None, None);
        node.state.store(state::DONE, Ordering::Relaxed);
        node.pending.store(0, Ordering::Relaxed);
        node
    }

    /// Makes a released node nobody else holds the new node of op `id`,
    /// as [`Node::new`] builds it, field by field (building a node and
    /// moving it in copied a few hundred bytes per op). The pattern names
    /// every field, so a field added to `Node` must be reset here too.
    pub(crate) fn reset(&mut self, id: OpId, job: Option<BoxedJob>, role: Option<Role>, tag: Option<Box<Tag>>) {
        let Node {
            id: node_id,
            state,
            pending,
            waiters,
            job: node_job,
            deps,
            dependents,
            failure,
            role: node_role,
            tag: node_tag,
        } = self;
        *node_id = id;
        *state.get_mut() = state::WAITING;
        *pending.get_mut() = 1;
        *waiters.get_mut() = 0;
        *node_job.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner) = job;
        deps.take();
        dependents.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
        failure.take();
        *node_role = role;
        *node_tag = tag;
    }

    pub(crate) fn load_state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.load_state() >= state::DONE
    }

    /// Drops one outstanding dependency; true when this made the node ready.
    pub(crate) fn release_dependency(&self) -> bool {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.state.store(state::READY, Ordering::Release);
            true
        } else {
            false
        }
    }

    /// Starts running a node that nothing else can claim: one still
    /// waiting, of which no op was registered as a dependency (so no
    /// completion can make it ready) and which no lane queue holds.
    pub(crate) fn start_unqueued(&self) {
        debug_assert_eq!(self.load_state(), state::WAITING);
        self.state.store(state::RUNNING, Ordering::Release);
    }

    /// Claims the node for execution; false when someone else did.
    pub(crate) fn claim(&self) -> bool {
        self.state.compare_exchange(state::READY, state::RUNNING, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    pub(crate) fn take_job(&self) -> Option<BoxedJob> {
        lock(&self.job).take()
    }

    pub(crate) fn deps(&self) -> &[OpId] {
        self.deps.get().map(|d| &d[..]).unwrap_or(&[])
    }
}
