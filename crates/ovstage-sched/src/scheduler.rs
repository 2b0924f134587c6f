//! The scheduler: submission, execution, completion, wait, poll, release.

use std::cell::Cell;
use std::collections::HashSet;
use std::num::NonZeroUsize;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{Ordering, fence};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use crossbeam_deque::{Injector, Steal};
use ovstage_types::sync::{lock, lock_brief, try_lock};
use ovstage_types::{Error, OpId, Status, Timeout};
use smallvec::SmallVec;

use crate::lanes::{LaneContext, LanePool, LaneShared};
use crate::node::{Failure, Node, Role, state};
use crate::order::{Completion, OrderState};
use crate::pool;
use crate::ring::CompletionRing;
use crate::spec::{OpSpec, Placement};
use crate::table::{OpTable, Released};
use crate::trace::{self, Tag};

/// The work of an op: runs once on some lane (or on a thread waiting for
/// it) and reports success or a [`Failure`].
pub type Job = Box<dyn FnOnce() -> Result<(), Failure> + Send + 'static>;

/// An op's work as [`Scheduler::submit_with`] takes it: a [`Job`], or an
/// [`Unboxed`] closure, which is boxed only when the op cannot run on the
/// submitting thread at once (it waits, or goes to a lane). A small op
/// that runs as it is submitted then costs no allocation for its job. It
/// pays for closures that capture little: one holding hundreds of bytes is
/// copied at each move on the way to running, which costs more than the
/// allocation (measured on the write path, whose job stays boxed).
pub trait IntoJob: Send + 'static {
    /// The work as a job to store in a node.
    fn into_job(self) -> Job;

    /// Runs the work.
    fn run(self) -> Result<(), Failure>;
}

impl IntoJob for Job {
    fn into_job(self) -> Job {
        self
    }

    fn run(self) -> Result<(), Failure> {
        self()
    }
}

/// A closure submitted unboxed (see [`IntoJob`]).
pub struct Unboxed<F>(pub F);

impl<F: FnOnce() -> Result<(), Failure> + Send + 'static> IntoJob for Unboxed<F> {
    fn into_job(self) -> Job {
        Box::new(self.0)
    }

    fn run(self) -> Result<(), Failure> {
        (self.0)()
    }
}

/// What a submitted op does: run a job, or nothing (a marker, see
/// [`Scheduler::submit_marker`]).
enum Work<J> {
    Run(J),
    Mark,
}

impl<J: IntoJob> Work<J> {
    /// The job to store in a node that waits or goes to a lane.
    fn into_job(self) -> Job {
        match self {
            Work::Run(job) => job.into_job(),
            Work::Mark => Box::new(|| Ok(())),
        }
    }
}

/// How many worker lanes to run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Lanes {
    /// One per available core.
    #[default]
    Auto,
    /// Exactly this many. One lane executes every op of the instance one at
    /// a time (a serialized lane), including ops run by waiting threads.
    Fixed(NonZeroUsize),
}

impl Lanes {
    /// The resolved lane count.
    pub fn count(self) -> usize {
        match self {
            Lanes::Auto => crate::cores(),
            Lanes::Fixed(n) => n.get(),
        }
    }

    /// A fixed count; 0 is treated as 1.
    pub fn fixed(n: usize) -> Lanes {
        Lanes::Fixed(NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN))
    }
}

/// Scheduler settings.
#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    /// Worker lane count.
    pub lanes: Lanes,
    /// Prefix of the lane threads' names.
    pub thread_name: Option<String>,
    /// The id of the first op; later ops count up from it. A stage starts
    /// each instance at its own id so that op ids of one instance are
    /// unknown to another.
    pub first_op: OpId,
    /// Most unreleased ops: a submission beyond it is refused with
    /// [`QueueFull`], except releases (they are how a client gets back
    /// under the bound).
    pub max_ops: usize,
    /// Called on the lane that completes an op with a failure (the stage
    /// logs it there). It must not block: lanes are waiting on it.
    pub on_failure: Option<FailureHook>,
}

/// What a [`FailureHook`] calls: the failed op and its failure.
pub type FailureFn = dyn Fn(OpId, &Failure) + Send + Sync;

/// A callback told of every failed op (see [`SchedulerConfig::on_failure`]).
#[derive(Clone)]
pub struct FailureHook(pub Arc<FailureFn>);

impl std::fmt::Debug for FailureHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FailureHook")
    }
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            lanes: Lanes::default(),
            thread_name: None,
            first_op: OpId::from_raw(1).expect("non-zero"),
            max_ops: usize::MAX,
            on_failure: None,
        }
    }
}

/// A submission refused because `max_ops` ops are unreleased.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueFull {
    /// The bound.
    pub max_ops: usize,
    /// The oldest unreleased op.
    pub oldest: Option<OpId>,
}

impl From<QueueFull> for Error {
    fn from(q: QueueFull) -> Error {
        let oldest = q.oldest.map_or_else(String::new, |op| format!(" (the oldest is {op})"));
        Error::new(
            Status::QueueFull,
            format!(
                "{} ops are submitted and not released{oldest}: release completed ops with release_op before submitting more",
                q.max_ops
            ),
        )
    }
}

/// Why a wait did not report success.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitError {
    /// The op is still pending; `lowest_pending` is the lowest pending op id
    /// in its dependency chain (possibly the op itself).
    Timeout {
        /// Lowest pending op of the chain.
        lowest_pending: OpId,
    },
    /// The op failed. `ops` lists the failed ops to report: the op whose
    /// failure caused this one first (when known and still tracked), then
    /// the op itself. Messages come from [`Scheduler::failure`].
    Failed {
        /// Failed op ids, root cause first.
        ops: SmallVec<[OpId; 2]>,
    },
    /// The id is unknown, released, or invalid.
    Unknown(Error),
}

impl WaitError {
    /// The contract status of this outcome.
    pub fn status(&self) -> Status {
        match self {
            WaitError::Timeout { .. } => Status::Timeout,
            WaitError::Failed { .. } => Status::OpFailed,
            WaitError::Unknown(e) => e.status(),
        }
    }
}

thread_local! {
    static ON_LANE: Cell<bool> = const { Cell::new(false) };
}

const WAIT_SHARDS: usize = 64;
/// Polls of the state word before a waiter blocks on a condvar.
const WAIT_SPINS: u32 = 256;
/// Upper bound on ops inspected per walk of a dependency chain (helping
/// waiters, lowest pending op on timeout).
const CHAIN_SEARCH_LIMIT: usize = 4096;
/// Completed ops waiting to be unfiled beyond which a submission unfiles
/// them itself (each holds its node; normally the lanes keep it near 0).
const UNFILED_BACKLOG: usize = 256;

struct Shared {
    table: OpTable,
    /// Successful completions, for polls without the table's lock.
    ring: CompletionRing,
    order: Mutex<OrderState>,
    /// Completed ops still filed in `order`. A completion publishes its
    /// state under the node's own `dependents` lock (which a registration
    /// takes before waiting for it), so removing its entries from the
    /// ordering state can wait when the ordering lock is taken: the next
    /// completion that finds it free unfiles them (a submission does once
    /// more than [`UNFILED_BACKLOG`] wait). Lanes no longer queue for the
    /// ordering lock behind submissions and each other.
    unfiled: Injector<Arc<Node>>,
    waits: Box<[(Mutex<()>, Condvar)]>,
    /// Present with one lane: every execution holds it, so ops never overlap.
    serial: Option<Mutex<()>>,
    on_failure: Option<FailureHook>,
}

/// The right to run a node on this thread: with one lane, the serial lock
/// held (every execution holds it, so ops never overlap); otherwise nothing.
struct Turn<'a> {
    _serial: Option<MutexGuard<'a, ()>>,
}

/// The failure of an op whose job panicked.
fn panicked(op: OpId, payload: &(dyn std::any::Any + Send)) -> Failure {
    Failure::from(Error::internal(format!("{op} panicked while executing: {}", panic_message(payload))))
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    }
}

impl Shared {
    fn shard(&self, id: OpId) -> &(Mutex<()>, Condvar) {
        &self.waits[(id.get() as usize) % WAIT_SHARDS]
    }

    /// Whether work may run on the thread submitting it: not with one
    /// lane (its executions never overlap) and not from a lane.
    fn may_run_on_submitter(&self) -> bool {
        self.serial.is_none() && !ON_LANE.with(Cell::get)
    }

    /// This thread's turn to run a node, waiting for it with one lane.
    fn turn(&self) -> Turn<'_> {
        Turn { _serial: self.serial.as_ref().map(lock) }
    }

    /// A waiting thread's turn to run a node, if it can have one at once.
    /// With one lane, only while the lane is parked (the waiter then saves
    /// the lane's wake-up) and the serial lock is free. A waiter that took
    /// nodes while the lane ran, then slept on the lock, made the two hand
    /// it back and forth through futex wakes (64 writes of 64 KB with one
    /// lane: 14-15 context switches an iteration, 9-10 without).
    fn waiter_turn(&self, lanes: &LaneShared) -> Option<Turn<'_>> {
        match &self.serial {
            None => Some(Turn { _serial: None }),
            Some(serial) if lanes.all_parked() => try_lock(serial).map(|held| Turn { _serial: Some(held) }),
            Some(_) => None,
        }
    }

    /// Runs a node if it can still be claimed, then completes it.
    fn execute(&self, node: &Arc<Node>, ctx: &LaneContext<'_>) {
        self.execute_in(node, ctx, self.turn());
    }

    /// As [`Self::execute`], in a turn this thread already has.
    fn execute_in(&self, node: &Arc<Node>, ctx: &LaneContext<'_>, turn: Turn<'_>) {
        if !node.claim() {
            return;
        }
        let job = node.take_job();
        self.run_in(node, job, ctx, turn);
    }

    /// Runs the job of a node this thread has started, then completes it.
    fn run<J: IntoJob>(&self, node: &Arc<Node>, job: Option<J>, ctx: &LaneContext<'_>) {
        self.run_in(node, job, ctx, self.turn());
    }

    /// As [`Self::run`], in a turn this thread already has; the turn ends
    /// before the completion.
    fn run_in<J: IntoJob>(&self, node: &Arc<Node>, job: Option<J>, ctx: &LaneContext<'_>, turn: Turn<'_>) {
        if let Some(tag) = &node.tag {
            trace::began(node.id, tag);
        }
        let result = {
            let _turn = turn;
            match job {
                Some(job) => catch_unwind(AssertUnwindSafe(|| job.run()))
                    .unwrap_or_else(|payload| Err(panicked(node.id, &*payload))),
                None => Err(Failure::from(Error::internal(format!("{} had no job to run", node.id)))),
            }
        };
        if let Some(tag) = &node.tag {
            trace::ended(node.id, tag, result.as_ref().err().map(|f| &f.error));
        }
        self.complete(node, result, ctx);
    }

    /// Completes a marker this thread has started (it has no job).
    fn mark(&self, node: &Arc<Node>, ctx: &LaneContext<'_>) {
        if let Some(tag) = &node.tag {
            trace::began(node.id, tag);
            trace::ended(node.id, tag, None);
        }
        self.complete(node, Ok(()), ctx);
    }

    fn complete(&self, node: &Arc<Node>, result: Result<(), Failure>, ctx: &LaneContext<'_>) {
        let final_state = match result {
            Ok(()) => state::DONE,
            Err(failure) => {
                if let Some(hook) = &self.on_failure {
                    (hook.0)(node.id, &failure);
                }
                let _ = node.failure.set(failure);
                state::FAILED
            }
        };
        let dependents = if node.role.as_ref().is_some_and(Role::is_recorded) {
            let dependents = {
                let mut dependents = lock(&node.dependents);
                node.state.store(final_state, Ordering::Release);
                std::mem::take(&mut *dependents)
            };
            match try_lock(&self.order) {
                // The usual case, the lock free: unfiled at once, without
                // the queue's push and steal.
                Some(mut order) => {
                    order.complete(node);
                    if !self.unfiled.is_empty() {
                        self.unfile(&mut order);
                    }
                }
                None => {
                    self.unfiled.push(node.clone());
                    // The holder may have looked at the queue already.
                    if let Some(mut order) = try_lock(&self.order) {
                        self.unfile(&mut order);
                    }
                }
            }
            dependents
        } else {
            node.state.store(final_state, Ordering::Release);
            SmallVec::new()
        };
        if final_state == state::DONE {
            self.ring.done(node.id);
        }
        for dependent in dependents {
            if dependent.release_dependency() {
                ctx.push(dependent);
            }
        }
        fence(Ordering::SeqCst);
        if node.waiters.load(Ordering::SeqCst) > 0 {
            let (m, cv) = self.shard(node.id);
            let _guard = lock(m);
            cv.notify_all();
        }
    }

    /// The ordering lock, for a submission: taken with `lock_brief`, and
    /// the unfiling backlog cleared when the lanes found the lock taken
    /// too often to unfile their completions themselves.
    fn lock_order_to_submit(&self) -> MutexGuard<'_, OrderState> {
        let mut order = lock_brief(&self.order);
        if self.unfiled.len() > UNFILED_BACKLOG {
            self.unfile(&mut order);
        }
        order
    }

    /// Removes the completed ops' entries from the ordering state.
    fn unfile(&self, order: &mut OrderState) {
        loop {
            match self.unfiled.steal() {
                Steal::Success(node) => order.complete(&node),
                Steal::Empty => return,
                Steal::Retry => {}
            }
        }
    }

    /// A ready node in `root`'s dependency chain (or `root` itself).
    fn find_ready(&self, root: &Arc<Node>) -> Option<Arc<Node>> {
        // The common cases (the op is queued, running or done) need no walk.
        match root.load_state() {
            state::READY => return Some(root.clone()),
            state::WAITING => {}
            _ => return None,
        }
        let mut stack: SmallVec<[Arc<Node>; 8]> = smallvec::smallvec![root.clone()];
        let mut seen: HashSet<OpId> = HashSet::new();
        while let Some(node) = stack.pop() {
            if seen.len() >= CHAIN_SEARCH_LIMIT {
                return None;
            }
            match node.load_state() {
                state::READY => return Some(node),
                state::WAITING => {
                    let table = self.table.read();
                    for dep in node.deps() {
                        if let Some(d) = table.get(*dep).filter(|d| !d.is_complete())
                            && seen.insert(*dep)
                        {
                            stack.push(d.clone());
                        }
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// The lowest pending op id in `root`'s dependency chain (among the
    /// first [`CHAIN_SEARCH_LIMIT`] pending ops examined).
    fn lowest_pending(&self, root: &Arc<Node>) -> OpId {
        let mut lowest = root.id;
        let mut stack: Vec<OpId> = root.deps().to_vec();
        let mut seen: HashSet<OpId> = HashSet::new();
        let table = self.table.read();
        while let Some(id) = stack.pop() {
            if seen.len() >= CHAIN_SEARCH_LIMIT {
                break;
            }
            if !seen.insert(id) {
                continue;
            }
            if let Some(node) = table.get(id)
                && !node.is_complete()
            {
                lowest = lowest.min(id);
                stack.extend(node.deps().iter().filter(|d| !seen.contains(*d)));
            }
        }
        lowest
    }

    /// Blocks until `node` completes or `deadline` passes.
    fn block(&self, node: &Node, deadline: Option<Instant>) {
        for _ in 0..WAIT_SPINS {
            if node.is_complete() {
                return;
            }
            std::hint::spin_loop();
        }
        node.waiters.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let (m, cv) = self.shard(node.id);
        let mut guard = lock(m);
        while !node.is_complete() {
            match deadline {
                None => guard = cv.wait(guard).unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        break;
                    }
                    guard = cv.wait_timeout(guard, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
                }
            }
        }
        drop(guard);
        node.waiters.fetch_sub(1, Ordering::SeqCst);
    }

    fn outcome(&self, node: &Node) -> Result<(), WaitError> {
        match node.load_state() {
            state::DONE => Ok(()),
            state::FAILED => {
                let mut ops = SmallVec::new();
                if let Some(cause) = node.failure.get().and_then(|f| f.caused_by)
                    && cause != node.id
                    && self.table.read().get(cause).is_some()
                {
                    ops.push(cause);
                }
                // (Callers never hold the table lock here: a second read lock
                // on the same thread can deadlock behind a queued writer.)
                ops.push(node.id);
                Err(WaitError::Failed { ops })
            }
            _ => Err(WaitError::Timeout { lowest_pending: node.id }),
        }
    }
}

/// The scheduler of one stage: an op table, ordering bookkeeping and a pool
/// of worker lanes.
pub struct Scheduler {
    shared: Arc<Shared>,
    pool: LanePool,
    lanes: usize,
    max_ops: usize,
}

impl Scheduler {
    /// Starts a scheduler and its lanes.
    pub fn new(config: &SchedulerConfig) -> Scheduler {
        let lanes = config.lanes.count().max(1);
        let shared = Arc::new(Shared {
            table: OpTable::starting_at(config.first_op),
            ring: CompletionRing::default(),
            order: Mutex::new(OrderState::default()),
            unfiled: Injector::new(),
            waits: (0..WAIT_SHARDS).map(|_| (Mutex::new(()), Condvar::new())).collect(),
            serial: (lanes == 1).then(|| Mutex::new(())),
            on_failure: config.on_failure.clone(),
        });
        let runner = shared.clone();
        let name = config.thread_name.as_deref().unwrap_or("ovstage");
        let pool = LanePool::new(lanes, name, move |node, ctx| {
            ON_LANE.with(|on| on.set(true));
            runner.execute(&node, ctx);
        });
        trace::scheduler_started();
        Scheduler { shared, pool, lanes, max_ops: config.max_ops }
    }

    /// The number of worker lanes.
    pub fn lanes(&self) -> usize {
        self.lanes
    }

    fn injector(&self) -> &LaneShared {
        &self.pool.shared
    }

    /// Submits an op. It runs once every op it depends on (per `spec`) has
    /// completed; the returned id is valid at once.
    /// Beyond `max_ops` unreleased ops, a submission that releases no
    /// handle is refused.
    pub fn submit(&self, spec: &OpSpec, job: Job) -> Result<OpId, QueueFull> {
        self.submit_with(spec, || Ok(job))
    }

    /// [`Scheduler::submit`] of a closure that is boxed only if the op
    /// cannot run on this thread at once (see [`Unboxed`]).
    pub fn submit_unboxed(
        &self,
        spec: &OpSpec,
        job: impl FnOnce() -> Result<(), Failure> + Send + 'static,
    ) -> Result<OpId, QueueFull> {
        self.submit_with(spec, || Ok(Unboxed(job)))
    }

    /// Refuses a submission that would exceed `max_ops` unreleased ops,
    /// unless it releases a handle. Racing submitters may overshoot the
    /// bound by their number: it bounds memory, not an exact count.
    fn room_for(&self, spec: &OpSpec) -> Result<(), QueueFull> {
        if spec.releases.is_some() || self.max_ops == usize::MAX {
            return Ok(());
        }
        if self.shared.table.live_approx() < self.max_ops {
            return Ok(());
        }
        Err(QueueFull { max_ops: self.max_ops, oldest: self.shared.table.read().oldest() })
    }

    /// Submits an op after `check` accepts it, atomically with respect to
    /// every other ordered submission (see [`Scheduler::submit_with`], which
    /// this is with a job built in advance). On rejection nothing is
    /// submitted and `job` is dropped.
    pub fn submit_checked<E: From<QueueFull>>(
        &self,
        spec: &OpSpec,
        job: Job,
        check: impl FnOnce() -> Result<(), E>,
    ) -> Result<OpId, E> {
        self.submit_with(spec, move || check().map(|()| job))
    }

    /// Submits the op that `build` makes, atomically with respect to every
    /// other ordered submission: for an ordered op, `build` runs while the
    /// ordering state is locked, so what it decides and records (the
    /// stage's admission: submitted write floors, unsealed changes) agrees
    /// with the order ops are registered in, and the job it returns can
    /// carry those decisions itself (no slot filled in later). When `build`
    /// fails nothing is submitted and nothing it made outlives the call.
    /// Keep `build` short: every other ordered submission and completion
    /// waits for it. It must not submit ops to this scheduler.
    ///
    /// Beyond `max_ops` unreleased ops, a submission that releases no
    /// handle is refused with [`QueueFull`] before `build` runs.
    ///
    /// `build` may return an [`Unboxed`] closure: an op that runs on the
    /// submitting thread at once then never boxes it.
    pub fn submit_with<J: IntoJob, E: From<QueueFull>>(
        &self,
        spec: &OpSpec,
        build: impl FnOnce() -> Result<J, E>,
    ) -> Result<OpId, E> {
        self.submit_work(spec, || build().map(Work::Run))
    }

    /// Submits an op with no work of its own, which completes once every
    /// op it depends on (per `spec`) has: a handle's release. When it has
    /// nothing to wait for it is complete when this returns, and nothing
    /// runs (no job is built, boxed or called); a marker that only
    /// releases a handle then gets no node of its own either (see the
    /// op table's born-complete ops), unless a trace is recording. Beyond
    /// `max_ops` unreleased ops, one that releases no handle is refused.
    pub fn submit_marker(&self, spec: &OpSpec) -> Result<OpId, QueueFull> {
        if let Some(handle) = spec.releases
            && spec.releases_only()
            && spec.traced.is_none()
        {
            // The usual release: nothing pending uses or produces the
            // handle, so the op is complete as it is submitted. It gets an
            // id (under the ordering lock, as every ordered op, so id order
            // stays registration order) and, the lock released, a slot
            // holding the table's shared complete node: no node of its own,
            // no completion.
            let shared = &self.shared;
            let mut order = shared.lock_order_to_submit();
            if order.release_if_idle(handle) {
                let id = shared.table.allocate();
                drop(order);
                shared.table.insert_done(id);
                shared.ring.born_done(id);
                return Ok(id);
            }
        }
        self.submit_work(spec, || Ok::<_, QueueFull>(Work::<Job>::Mark))
    }

    /// Submits an op whose work is cheap and cannot fail: an answer read
    /// from state the stage keeps current (a floor, the oldest preserved
    /// ordinal). When nothing holds it back it is born complete: under the
    /// ordering lock it gets an id, then a slot holding the table's shared
    /// complete node, as a release with nothing to wait for, and no node,
    /// registration or completion of its own; then the work runs on this
    /// thread, outside the lock, before the call returns (nothing can name
    /// the op before that, so nothing sees it complete before its work
    /// has run). Otherwise it is submitted as [`Scheduler::submit_unboxed`]
    /// with `spec`'s placement. A spec that uses or releases a handle, an
    /// ordering other than [`Order::Independent`] or
    /// [`Order::AfterFloors`], one lane (its executions never overlap),
    /// a lane submitting and a trace recording (an op it times needs a
    /// node) all take the usual path.
    ///
    /// Should `work` panic anyway, the op is failed (a node of its own
    /// takes the slot, failed with the panic's message), as any job's
    /// panic fails its op.
    ///
    /// [`Order::Independent`]: crate::Order::Independent
    /// [`Order::AfterFloors`]: crate::Order::AfterFloors
    pub fn submit_brief(&self, spec: &OpSpec, work: impl FnOnce() + Send + 'static) -> Result<OpId, QueueFull> {
        let shared = &*self.shared;
        let eligible =
            spec.uses.is_empty() && spec.releases.is_none() && spec.traced.is_none() && shared.may_run_on_submitter();
        if eligible {
            // Outside the lock the work may wait for other locks (a
            // column's, behind a long image build) without holding up
            // every other submission.
            let born = {
                let order = shared.lock_order_to_submit();
                self.room_for(spec)?;
                order.holds_back_nothing_of(&spec.order).then(|| shared.table.allocate())
            };
            if let Some(id) = born {
                shared.table.insert_done(id);
                match catch_unwind(AssertUnwindSafe(work)) {
                    Ok(()) => shared.ring.born_done(id),
                    Err(payload) => self.fail_born(id, panicked(id, &*payload)),
                }
                return Ok(id);
            }
        }
        self.submit_unboxed(spec, move || {
            work();
            Ok(())
        })
    }

    /// Runs the work of an op born complete (given its id and the table's
    /// shared complete node, nothing filed for it) on this thread, before
    /// the id is handed out: nothing can name the op until then, so
    /// nothing sees it complete before its work has run.
    fn run_born<J: IntoJob>(&self, id: OpId, work: Work<J>) {
        let result = match work {
            Work::Run(job) => {
                catch_unwind(AssertUnwindSafe(|| job.run())).unwrap_or_else(|payload| Err(panicked(id, &*payload)))
            }
            Work::Mark => Ok(()),
        };
        match result {
            Ok(()) => self.shared.ring.born_done(id),
            Err(failure) => self.fail_born(id, failure),
        }
    }

    /// Fails an op born complete whose work failed: a node of its own,
    /// failed with `failure`, takes its slot. It was never registered, so
    /// nothing orders after it.
    fn fail_born(&self, id: OpId, failure: Failure) {
        let shared = &*self.shared;
        let node = Arc::new(Node::new(id, None, None, None));
        node.start_unqueued();
        shared.table.replace_born(id, node.clone());
        shared.complete(&node, Err(failure), &LaneContext { local: None, shared: self.injector() });
    }

    fn submit_work<J: IntoJob, E: From<QueueFull>>(
        &self,
        spec: &OpSpec,
        build: impl FnOnce() -> Result<Work<J>, E>,
    ) -> Result<OpId, E> {
        let shared = &self.shared;
        // An op that may run on this thread keeps its job here: when no op
        // holds it back it then runs without the node's job lock, its
        // readiness count and the claim (four atomic operations fewer).
        // A marker has nothing to run, so it completes on this thread
        // wherever its spec would place work. Such an op with nothing to
        // wait for is born complete (`run_born`): it gets an id and the
        // table's shared complete node, and no node, registration or
        // completion of its own (about 800 instructions fewer for a small
        // read), unless a trace is recording (an op it times needs a node).
        let on_submitter = |work: &Work<J>| match work {
            Work::Mark => true,
            Work::Run(_) => spec.placement == Placement::SubmitterWhenReady && shared.may_run_on_submitter(),
        };
        let mut held: Option<Work<J>> = None;
        let mut stored = |work: Work<J>| {
            if on_submitter(&work) {
                held = Some(work);
                None
            } else {
                Some(work.into_job())
            }
        };
        let tag = Tag::when_tracing(spec);
        let (node, waits) = if spec.is_ordered() {
            let mut order = shared.lock_order_to_submit();
            self.room_for(spec)?;
            let job = stored(build()?);
            if let Some(work) = held.take_if(|_| tag.is_none() && order.admits_born(spec)) {
                let id = shared.table.allocate();
                drop(order);
                shared.table.insert_done(id);
                self.run_born(id, work);
                return Ok(id);
            }
            let role = Role::new(&spec.order, &spec.uses, spec.produces);
            // The node is this thread's (no shared lock); it goes into the
            // table once the ordering lock is released, before the op can
            // run or its id be handed out.
            let node = pool::node(shared.table.allocate(), job, Some(role), tag);
            let completion = if held.is_some() { Completion::HereWhenFree } else { Completion::Later };
            let deps = order.register_as(&node, spec, completion);
            let mut ids = Vec::with_capacity(deps.len());
            for dep in deps {
                let mut dependents = lock(&dep.dependents);
                if dep.is_complete() {
                    // Completed, not yet unfiled: nothing to wait for.
                    continue;
                }
                dependents.push(node.clone());
                node.pending.fetch_add(1, Ordering::AcqRel);
                ids.push(dep.id);
            }
            let waits = !ids.is_empty();
            // Unset reads as no dependencies: most ops have none, and
            // setting costs a `Once`.
            if waits {
                let _ = node.deps.set(ids.into_boxed_slice());
            }
            (node, waits)
        } else {
            self.room_for(spec)?;
            let job = stored(build()?);
            if let Some(work) = held.take_if(|_| tag.is_none()) {
                let id = shared.table.allocate();
                shared.table.insert_done(id);
                self.run_born(id, work);
                return Ok(id);
            }
            (pool::node(shared.table.allocate(), job, None, tag), false)
        };
        shared.table.insert(node.clone());
        let id = node.id;
        // Before the op can run: its completion finds the slot pending.
        shared.ring.submitted(id);
        if let Some(tag) = &node.tag {
            trace::enqueued(id, tag);
        }
        let ctx = || LaneContext { local: None, shared: self.injector() };
        match held {
            // Nothing to wait for, so nothing else can make it ready or
            // claim it: it runs (or, a marker, completes) here at once.
            Some(work) if !waits => {
                node.start_unqueued();
                match work {
                    Work::Run(job) => shared.run(&node, Some(job), &ctx()),
                    Work::Mark => shared.mark(&node, &ctx()),
                }
            }
            Some(work) => {
                // Stored before the node can become ready (the count still
                // holds the registration's one).
                *lock(&node.job) = Some(work.into_job());
                if node.release_dependency() {
                    shared.execute(&node, &ctx());
                }
            }
            None => {
                if node.release_dependency() {
                    self.injector().push(node);
                }
            }
        }
        Ok(id)
    }

    /// Waits for `op` (and so for everything it depends on).
    ///
    /// `Timeout::POLL` only looks; `Timeout::INFINITE` runs ready ops of the
    /// chain on the calling thread while it waits, then, while the op runs
    /// elsewhere, ops queued for the lanes; a finite timeout blocks at
    /// most that long.
    pub fn wait(&self, op: OpId, timeout: Timeout) -> Result<(), WaitError> {
        let shared = &*self.shared;
        if shared.ring.is_done(op) {
            return Ok(());
        }
        let node = {
            let table = shared.table.read();
            let Some(node) = table.get(op) else {
                return Err(WaitError::Unknown(unknown_op(op)));
            };
            if node.load_state() == state::DONE {
                return Ok(());
            }
            node.clone()
        };
        if node.is_complete() {
            return shared.outcome(&node);
        }
        if timeout.is_poll() {
            return Err(WaitError::Timeout { lowest_pending: shared.lowest_pending(&node) });
        }
        let deadline = timeout.as_duration().map(|d| Instant::now() + d);
        if deadline.is_none() && !ON_LANE.with(Cell::get) {
            let ctx = LaneContext { local: None, shared: self.injector() };
            while !node.is_complete() {
                let Some(turn) = shared.waiter_turn(self.injector()) else { break };
                match shared.find_ready(&node) {
                    Some(ready) => shared.execute_in(&ready, &ctx, turn),
                    None => break,
                }
            }
            // The op (or what it waits for) runs elsewhere. Rather than
            // sleep and have a parked lane woken for the work queued behind
            // it (on a VM that wake often took 30-60 us, at times over 250), this
            // thread runs that work, one op at a time, until its op is done.
            while !node.is_complete() {
                let Some(turn) = shared.waiter_turn(self.injector()) else { break };
                match self.injector().take_queued() {
                    Some(queued) => shared.execute_in(&queued, &ctx, turn),
                    None => break,
                }
            }
        }
        if !node.is_complete() {
            self.injector().wake_spare();
        }
        shared.block(&node, deadline);
        match shared.outcome(&node) {
            Err(WaitError::Timeout { .. }) => Err(WaitError::Timeout { lowest_pending: shared.lowest_pending(&node) }),
            other => other,
        }
    }

    /// Whether `op` has completed (successfully or not); `None` when the id
    /// is unknown or released. One atomic load for an op that completed
    /// successfully (the completion ring), else a lookup and one more.
    pub fn is_complete(&self, op: OpId) -> Option<bool> {
        if self.shared.ring.is_done(op) {
            return Some(true);
        }
        self.shared.table.read().get(op).map(|n| n.is_complete())
    }

    /// The failure recorded for `op`, if it failed and is not released.
    pub fn failure(&self, op: OpId) -> Option<Failure> {
        self.shared.table.read().get(op).and_then(|n| n.failure.get().cloned())
    }

    /// Forgets a completed op. Releasing a pending op is `OP_FAILED` (as in
    /// the reference) and an unknown or already released id is
    /// `INVALID_HANDLE`.
    pub fn release(&self, op: OpId) -> Result<(), Error> {
        let mut table = self.shared.table.write();
        match table.get(op) {
            None => Err(Error::invalid_handle(format!("release_op: {op} is unknown or already released"))),
            Some(node) if !node.is_complete() => Err(Error::new(
                Status::OpFailed,
                format!("release_op: {op} has not completed; wait for it before releasing it"),
            )),
            Some(_) => {
                let released = self.shared.table.remove(&mut table, op);
                drop(table);
                self.shared.ring.released(op);
                if let Some(Released::Own(node)) = released {
                    pool::recycle(node);
                }
                Ok(())
            }
        }
    }

    /// Number of ops that are tracked (submitted and not released).
    pub fn tracked_ops(&self) -> usize {
        self.shared.table.read().len()
    }

    /// Number of tracked ops that have not completed.
    pub fn pending_ops(&self) -> usize {
        self.shared.table.read().live().filter(|n| !n.is_complete()).count()
    }

    /// Runs every outstanding op to completion. Returns at once when called
    /// from a lane (a lane cannot wait for the op it is running).
    pub fn drain(&self) {
        if ON_LANE.with(Cell::get) {
            return;
        }
        loop {
            let pending: Vec<OpId> =
                self.shared.table.read().live().filter(|n| !n.is_complete()).map(|n| n.id).collect();
            if pending.is_empty() {
                return;
            }
            for id in pending {
                let _ = self.wait(id, Timeout::INFINITE);
            }
        }
    }
}

impl Drop for Scheduler {
    /// Finishes every outstanding op, then stops and joins the lanes.
    fn drop(&mut self) {
        self.drain();
        self.pool.shutdown();
        trace::scheduler_stopped();
    }
}

fn unknown_op(op: OpId) -> Error {
    Error::invalid_argument(format!("wait_op: {op} is unknown or was released"))
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;
    use std::time::Duration;

    use super::*;
    use crate::spec::{Cells, Order};

    fn mutation(ordinal: u64, key: u64) -> OpSpec {
        OpSpec::new(Order::Mutation { ordinal, cells: Cells::one(key) })
    }

    /// Spins until `done` holds, for at most ten seconds.
    fn eventually(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "{what}");
            std::thread::yield_now();
        }
    }

    /// The lanes' threads start with the first op queued for them: a
    /// scheduler whose ops all ran on their submitters started none, and
    /// one dropped before any op was queued joins none.
    #[test]
    fn lanes_start_with_the_first_op_queued_for_them() {
        let config =
            SchedulerConfig { lanes: Lanes::fixed(2), thread_name: Some("lazy".into()), ..SchedulerConfig::default() };
        drop(Scheduler::new(&config));
        let s = Scheduler::new(&config);
        let inline =
            s.submit_unboxed(&OpSpec::independent().on_submitter_when_ready(), || Ok(())).expect("no op bound");
        assert!(s.wait(inline, Timeout::INFINITE).is_ok());
        assert!(!s.injector().has_started(), "an op run on its submitter starts no lane");
        let (ran_on, names) = channel();
        let job: Job = Box::new(move || {
            let _ = ran_on.send(std::thread::current().name().map(str::to_owned));
            Ok(())
        });
        s.submit(&OpSpec::independent(), job).expect("no op bound");
        assert!(s.injector().has_started());
        // Not waited for (a waiter may run it itself): a lane runs it.
        let name = names.recv_timeout(Duration::from_secs(10)).expect("a lane ran the op");
        assert!(name.as_deref().is_some_and(|n| n.starts_with("lazy-lane")), "ran on {name:?}");
    }

    /// A completion that finds the ordering lock taken leaves its entries
    /// for later; a registration that meets the completed op there waits
    /// for nothing, and the next completion with the lock free unfiles both.
    #[test]
    fn a_completed_op_not_yet_unfiled_is_not_waited_for() {
        let s = Scheduler::new(&SchedulerConfig { lanes: Lanes::fixed(2), ..SchedulerConfig::default() });
        let (go, gate) = channel::<()>();
        let job: Job = Box::new(move || {
            let _ = gate.recv();
            Ok(())
        });
        let first = s.submit(&mutation(1, 7), job).expect("no op bound");
        let held = lock(&s.shared.order);
        go.send(()).expect("the job waits");
        eventually("the first op completes", || s.is_complete(first) == Some(true));
        eventually("its completion queues it", || s.shared.unfiled.len() == 1);
        drop(held);
        // Same ordinal, same key: it follows the first op's chain, whose
        // tail is the completed op.
        let second = s.submit(&mutation(1, 7), Box::new(|| Ok(()))).expect("no op bound");
        // Finite: an edge to the completed op would never be released (and
        // dropping the scheduler would then wait for it forever).
        let ran = s.wait(second, Timeout::from_nanos(10_000_000_000));
        if let Err(e) = ran {
            std::mem::forget(s);
            panic!("the second op waited for the completed first: {e:?}");
        }
        let deps = s.shared.table.read().get(second).expect("unreleased").deps().to_vec();
        assert!(deps.is_empty(), "waited for {deps:?}");
        eventually("both are unfiled", || s.shared.unfiled.is_empty());
    }

    /// An op placed on its submitter with nothing to wait for gets the
    /// table's shared complete node (no node of its own is taken, filed
    /// and completed); one that waits for a producer gets its own.
    #[test]
    fn an_op_on_its_submitter_with_nothing_to_wait_for_takes_no_node() {
        let s = Scheduler::new(&SchedulerConfig { lanes: Lanes::fixed(2), ..SchedulerConfig::default() });
        // The shared node carries the table's first id.
        let first = s.submit(&OpSpec::independent(), Box::new(|| Ok(()))).expect("no op bound");
        let shared_node = |op: OpId| s.shared.table.read().get(op).expect("unreleased").id == first;
        let spec = OpSpec::new(Order::AfterFloors).on_submitter_when_ready();
        let born = s.submit_unboxed(&spec, || Ok(())).expect("no op bound");
        assert!(shared_node(born), "born complete");
        let (go, gate) = channel::<()>();
        let producer = s
            .submit(
                &OpSpec::independent().producing(5),
                Box::new(move || {
                    let _ = gate.recv();
                    Ok(())
                }),
            )
            .expect("no op bound");
        let user = s.submit_unboxed(&spec.using(5), || Ok(())).expect("no op bound");
        assert!(!shared_node(user), "waits for its producer: a node of its own");
        go.send(()).expect("the producer waits");
        s.wait(user, Timeout::INFINITE).expect("runs once the producer has");
        assert!(s.wait(producer, Timeout::POLL).is_ok());
    }
}
