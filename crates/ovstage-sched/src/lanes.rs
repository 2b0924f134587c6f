//! Worker lanes: threads that run ready nodes, with work stealing. Their
//! threads start with the first node queued for them (a stage whose work
//! all runs on its callers starts none).
//!
//! Ready nodes submitted from outside go to the shared injector; nodes made
//! ready by a completion on a lane go to that lane's own deque, where other
//! lanes can steal them. One idle lane at a time keeps searching (spinning)
//! for a short while before it parks (how long adapts to how work arrives:
//! see `search_window`); the others park at once. A submitter
//! wakes a parked lane only when no lane is searching, so a stream of
//! submissions costs no wake-up syscalls while one lane searches, and a
//! lane that finds work wakes another when more is queued.
//!
//! Once the cores less one run nodes, a push wakes no other lane and an
//! idle lane parks instead of searching: threads outside that submit need
//! a core too, and a lane woken onto a submitter's core preempts it, runs
//! a few microseconds and sleeps again (measured on 2 cores, 64 KB writes at distinct
//! ordinals: 57,000-85,000 context switches a second and every enqueue
//! past the first few stalled 5 us; with the limit 7,700 and 1.8 us at
//! p90). A thread waiting without a timeout on an op that runs elsewhere
//! first runs the work queued for the lanes itself
//! ([`LaneShared::take_queued`]: waking a parked lane often took 30-60 us on
//! this project's VMs, at times over 250; with one lane only while that
//! lane is parked, see `Shared::waiter_turn`), and one that goes to sleep on
//! an op gives its core back ([`LaneShared::wake_spare`]), a lane that finishes a node takes the
//! next one queued without being woken, and a lane parked while others
//! run looks for work every millisecond, for a submitter that sleeps
//! outside the library.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_deque::{Injector, Steal, Stealer, Worker};

use crate::node::Node;
use crate::search_window::SearchWindow;
use ovstage_types::sync::lock;

/// Pauses between two looks of the searching lane.
const SEARCH_PAUSES: u32 = 8;
/// How long a parked lane sleeps between looks while other lanes run.
const BUSY_NAP: Duration = Duration::from_millis(1);
/// How long a parked lane sleeps between looks while no lane runs.
const IDLE_NAP: Duration = Duration::from_millis(100);

pub(crate) struct LaneShared {
    injector: Injector<Arc<Node>>,
    stealers: Vec<Stealer<Arc<Node>>>,
    sleep_lock: Mutex<()>,
    wake: Condvar,
    sleepers: AtomicUsize,
    spinning: AtomicUsize,
    /// How long the next search lasts at most.
    window: SearchWindow,
    /// Lanes running a node now (counted before a lane that found work
    /// wakes another, so that wake sees it busy).
    running: AtomicUsize,
    /// How many lanes may run nodes before a push wakes no more and an idle
    /// lane parks instead of searching: the cores less one, at least one.
    busy_limit: usize,
    /// A wake-up was sent that no parked lane has acted on yet. A woken
    /// lane takes microseconds to run again, during which it still counts
    /// as a sleeper: without this, every push in that window paid another
    /// futex wake (measured: 1,471 wake syscalls from 14,000 Python writes).
    waking: AtomicBool,
    shutdown: AtomicBool,
    /// Whether the lanes' threads have been started. They start with the
    /// first node queued for them: a stage whose work all runs on its
    /// callers (path dictionaries, small reads and writes) starts none,
    /// and creating and destroying one costs no thread spawns and joins
    /// (about 150 us of each create + destroy here).
    started: AtomicBool,
    threads: Mutex<Threads>,
    /// Lanes whose thread was spawned (0 until they start; fewer than the
    /// lanes if a spawn failed: the work then runs on the others, or on
    /// the threads that wait for it).
    live: AtomicUsize,
}

/// The lanes' threads: not started yet (what starts them), running, or
/// stopped (joined, or never started before the shutdown).
enum Threads {
    NotStarted(Start),
    Running(Vec<JoinHandle<()>>),
    Stopped,
}

/// What the first node queued for the lanes needs to start them: each
/// lane's own deque, and how a lane's thread is spawned.
struct Start {
    workers: Vec<Worker<Arc<Node>>>,
    spawn: SpawnLane,
}

/// Spawns lane `i`'s thread, which takes nodes from its own `Worker`.
type SpawnLane = Box<dyn Fn(usize, Worker<Arc<Node>>) -> std::io::Result<JoinHandle<()>> + Send>;

impl LaneShared {
    /// The state shared by the lanes that own `workers` (their threads not
    /// started: see [`LaneShared::ensure_started`]).
    fn new(workers: &[Worker<Arc<Node>>]) -> LaneShared {
        LaneShared {
            injector: Injector::new(),
            stealers: workers.iter().map(Worker::stealer).collect(),
            sleep_lock: Mutex::new(()),
            wake: Condvar::new(),
            sleepers: AtomicUsize::new(0),
            spinning: AtomicUsize::new(0),
            window: SearchWindow::new(),
            running: AtomicUsize::new(0),
            busy_limit: crate::cores().saturating_sub(1).max(1),
            waking: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            started: AtomicBool::new(false),
            threads: Mutex::new(Threads::Stopped),
            live: AtomicUsize::new(0),
        }
    }

    /// Queues a ready node from a thread that is not a lane.
    pub(crate) fn push(&self, node: Arc<Node>) {
        self.ensure_started();
        self.injector.push(node);
        self.notify();
    }

    /// Starts the lanes' threads unless they run (or have stopped). Every
    /// node for the lanes is queued through [`LaneShared::push`] or by a
    /// lane itself, so the first one starts them.
    fn ensure_started(&self) {
        if !self.started.load(Ordering::Acquire) {
            self.start_threads();
        }
    }

    #[cold]
    fn start_threads(&self) {
        let mut threads = lock(&self.threads);
        *threads = match std::mem::replace(&mut *threads, Threads::Stopped) {
            Threads::NotStarted(start) => {
                // A lane whose thread cannot be spawned (the process is out
                // of threads) is left out, its deque with it: nothing is
                // queued there but by its own thread, and its stealer finds
                // it empty.
                let spawned: Vec<JoinHandle<()>> =
                    start.workers.into_iter().enumerate().filter_map(|(i, w)| (start.spawn)(i, w).ok()).collect();
                self.live.store(spawned.len(), Ordering::SeqCst);
                Threads::Running(spawned)
            }
            // Started by another push meanwhile, or shut down.
            running_or_stopped => running_or_stopped,
        };
        self.started.store(true, Ordering::Release);
    }

    /// Whether the lanes' threads have been started (for tests).
    #[cfg(test)]
    pub(crate) fn has_started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    fn notify(&self) {
        // Pairs with the fence in `park`: either the parking lane sees the
        // pushed node, or this sees the lane counted as a sleeper.
        fence(Ordering::SeqCst);
        if self.spinning.load(Ordering::SeqCst) == 0
            && self.running.load(Ordering::SeqCst) < self.busy_limit
            && self.sleepers.load(Ordering::SeqCst) > 0
            && !self.waking.swap(true, Ordering::SeqCst)
        {
            self.wake_one();
        }
    }

    fn wake_one(&self) {
        // Taking the lock orders this after the parking lane's check (it
        // holds the lock until it waits); notifying after releasing it lets
        // the woken lane take it back at once instead of sleeping again on
        // it (measured: 187 of 443 lane sleeps in a Python write loop were
        // that second sleep).
        drop(lock(&self.sleep_lock));
        self.wake.notify_one();
    }

    /// Wakes a parked lane when work is queued, however many lanes are
    /// busy: the calling thread is about to sleep on an op, which leaves
    /// its core to a lane.
    pub(crate) fn wake_spare(&self) {
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 && self.has_work() && !self.waking.swap(true, Ordering::SeqCst) {
            self.wake_one();
        }
    }

    /// Wakes another lane when work remains after this one took a node, so
    /// a burst spreads over the lanes instead of waiting for the next push.
    fn spread(&self) {
        if self.has_work() {
            self.notify();
        }
    }

    /// Takes a queued node, if any (for a thread waiting on an op that
    /// runs elsewhere: see `Scheduler::wait`): one queued from outside the
    /// lanes, else one from a lane's own deque. A lane that finds work
    /// takes a batch of the queued nodes into its deque, so without the
    /// second look a waiter would leave most of a burst to that one lane.
    pub(crate) fn take_queued(&self) -> Option<Arc<Node>> {
        self.steal_with(Injector::steal)
    }

    /// Whether every lane is parked (or woken but not yet running).
    pub(crate) fn all_parked(&self) -> bool {
        // Counted against the lanes that run: none before they start (a
        // waiter then runs what it waits for), fewer after a failed spawn.
        self.sleepers.load(Ordering::SeqCst) >= self.live.load(Ordering::SeqCst)
    }

    fn has_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }

    fn find(&self, local: &Worker<Arc<Node>>) -> Option<Arc<Node>> {
        if let Some(node) = local.pop() {
            return Some(node);
        }
        self.steal_with(|injector| injector.steal_batch_and_pop(local))
    }

    /// The first node found by `from_injector`, else stolen from a lane's
    /// deque; looked for again while a steal was interrupted by another.
    fn steal_with(&self, from_injector: impl Fn(&Injector<Arc<Node>>) -> Steal<Arc<Node>>) -> Option<Arc<Node>> {
        loop {
            let mut retry = false;
            match from_injector(&self.injector) {
                Steal::Success(node) => return Some(node),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
            for stealer in &self.stealers {
                match stealer.steal() {
                    Steal::Success(node) => return Some(node),
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }

    /// Keeps looking for work a short while before the lane parks. Only
    /// one lane searches at a time, and only while fewer than the busy
    /// limit run; the others park right away.
    fn search(&self, local: &Worker<Arc<Node>>) -> Option<Arc<Node>> {
        if self.running.load(Ordering::SeqCst) >= self.busy_limit
            || self.spinning.compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst).is_err()
        {
            return None;
        }
        let started = Instant::now();
        let window = self.window.get();
        let mut round = 0u32;
        let found = loop {
            // Looks before it steals: a steal pins the epoch (a full
            // fence) and writes lines the submitter's push then has to
            // take back, while looking only reads them; on a core the
            // lane shares with a submitter (hyperthreads), a stealing
            // spin slowed the submitter more than the pause it saved.
            if self.has_work()
                && let Some(node) = self.find(local)
            {
                break Some(node);
            }
            round = round.wrapping_add(1);
            if round.is_multiple_of(16) && started.elapsed() >= window {
                break None;
            }
            for _ in 0..SEARCH_PAUSES {
                std::hint::spin_loop();
            }
        };
        self.spinning.fetch_sub(1, Ordering::SeqCst);
        match found {
            Some(_) => self.window.found(),
            None => self.window.found_nothing(),
        }
        found
    }

    /// Blocks an idle lane until there may be work. Returns false on
    /// shutdown.
    fn park(&self) -> bool {
        let mut guard = lock(&self.sleep_lock);
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        // A wake sent while no lane was parked (one was leaving) found no
        // one: it must not hold back the wake this lane may need.
        self.waking.store(false, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        while !self.has_work() {
            if self.shutdown.load(Ordering::SeqCst) {
                self.sleepers.fetch_sub(1, Ordering::SeqCst);
                return false;
            }
            // While lanes are busy, pushes do not wake this one (see the
            // busy limit): it looks again every millisecond, so work queued
            // behind a long node while its submitter sleeps elsewhere still
            // finds the idle core soon. Otherwise the timeout is a safety
            // net only; wake-ups come from `notify`.
            let nap = if self.running.load(Ordering::SeqCst) > 0 { BUSY_NAP } else { IDLE_NAP };
            guard = self.wake.wait_timeout(guard, nap).unwrap_or_else(|e| e.into_inner()).0;
            // Awake again: the next notify may wake another lane.
            self.waking.store(false, Ordering::SeqCst);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        self.waking.store(false, Ordering::SeqCst);
        true
    }
}

/// A lane-local queue handle given to the job runner, so completions on a
/// lane keep their ready dependents local.
pub(crate) struct LaneContext<'a> {
    pub(crate) local: Option<&'a Worker<Arc<Node>>>,
    pub(crate) shared: &'a LaneShared,
}

impl LaneContext<'_> {
    pub(crate) fn push(&self, node: Arc<Node>) {
        match self.local {
            Some(local) => {
                local.push(node);
                self.shared.notify();
            }
            None => self.shared.push(node),
        }
    }
}

pub(crate) struct LanePool {
    pub(crate) shared: Arc<LaneShared>,
}

impl LanePool {
    /// A pool of `lanes` lanes, each of which runs `run(node, ctx)` for
    /// every node it takes; their threads start with the first node queued
    /// for them.
    pub(crate) fn new<F>(lanes: usize, name: &str, run: F) -> LanePool
    where
        F: Fn(Arc<Node>, &LaneContext<'_>) + Send + Sync + 'static,
    {
        let workers: Vec<Worker<Arc<Node>>> = (0..lanes).map(|_| Worker::new_fifo()).collect();
        let shared = Arc::new(LaneShared::new(&workers));
        let run = Arc::new(run);
        // Weak: the state does not keep itself alive through its own
        // starter; the pool holds it while anything can queue a node.
        let weak = Arc::downgrade(&shared);
        let name = name.to_owned();
        let spawn = move |i: usize, local: Worker<Arc<Node>>| {
            let shared = weak.upgrade().expect("the pool holds the lanes' state while nodes are queued");
            let run = run.clone();
            std::thread::Builder::new().name(format!("{name}-lane{i}")).spawn(move || lane_main(&shared, &local, &*run))
        };
        *lock(&shared.threads) = Threads::NotStarted(Start { workers, spawn: Box::new(spawn) });
        LanePool { shared }
    }

    /// Stops the lanes once their queues are empty and joins them. Called
    /// from a lane itself it only signals (a thread cannot join itself).
    pub(crate) fn shutdown(&self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        {
            let _guard = lock(&self.shared.sleep_lock);
            self.shared.wake.notify_all();
        }
        let threads = match std::mem::replace(&mut *lock(&self.shared.threads), Threads::Stopped) {
            Threads::Running(threads) => threads,
            Threads::NotStarted(_) | Threads::Stopped => Vec::new(),
        };
        let me = std::thread::current().id();
        for t in threads {
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
    }
}

fn lane_main<F>(shared: &LaneShared, local: &Worker<Arc<Node>>, run: &F)
where
    F: Fn(Arc<Node>, &LaneContext<'_>),
{
    let ctx = LaneContext { local: Some(local), shared };
    loop {
        let (node, searched) = match shared.find(local) {
            Some(node) => (node, false),
            None => match shared.search(local) {
                Some(node) => (node, true),
                None => {
                    let parked = Instant::now();
                    if !shared.park() {
                        return;
                    }
                    shared.window.woken_after(parked.elapsed());
                    continue;
                }
            },
        };
        // Counted as running before it spreads, so the lane it may wake
        // sees it busy.
        shared.running.fetch_add(1, Ordering::SeqCst);
        if searched {
            shared.spread();
        }
        run(node, &ctx);
        shared.running.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ovstage_types::OpId;

    fn node(id: u64) -> Arc<Node> {
        Arc::new(Node::new(OpId::from_raw(id).expect("non-zero"), None, None, None))
    }

    /// A waiter takes queued nodes from outside first, then from the
    /// lanes' own deques (where a lane that found work put a batch).
    #[test]
    fn a_waiter_takes_from_the_injector_then_from_the_lanes_deques() {
        let workers: Vec<Worker<Arc<Node>>> = (0..2).map(|_| Worker::new_fifo()).collect();
        let shared = LaneShared::new(&workers);
        workers[1].push(node(3));
        workers[1].push(node(4));
        shared.injector.push(node(1));
        shared.injector.push(node(2));
        let taken: Vec<u64> = std::iter::from_fn(|| shared.take_queued()).map(|n| n.id.get()).collect();
        assert_eq!(taken, [1, 2, 3, 4]);
        assert!(!shared.has_work());
    }
}
