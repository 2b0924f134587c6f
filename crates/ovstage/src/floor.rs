//! Write-floor advances, ordinal queries, and the retention trim that runs
//! when the global floor moves.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ovstage_sched::{CellKey, FloorScope as SchedScope, OpSpec, Order, Unboxed};
use ovstage_types::sync::read;
use ovstage_types::{Error, OpId, Ordinal, OrdinalQueryHandle, Result, Timeout};
use smallvec::SmallVec;

use crate::api::{AttrRef, Enqueued, FloorScope};
use crate::family::Family;
use crate::stage::{Stage, StageInner, lock};
use crate::state::{AnswerCell, OpCell, OrdinalQueryState};

/// What an advance raises.
enum Raise {
    /// The base floor (every attribute, present and future).
    All,
    /// These families' own floors.
    Families(Vec<Arc<Family>>),
}

impl Stage {
    /// Enqueues a write-floor advance to `ordinal`: it runs after every
    /// mutation at or below `ordinal` in its scope, then seals them. Floors
    /// never regress (an older ordinal is a no-op). Mutations at or below a
    /// submitted floor are rejected from the moment this returns.
    pub fn advance_write_floor(&self, ordinal: impl Into<Ordinal>, scope: FloorScope<'_>) -> Result<OpId> {
        self.inner.enqueue_advance(ordinal.into().get(), scope)
    }

    /// Enqueues a read of an attribute's write floor, or of the global floor
    /// (the lowest over all attributes) with `None`. It observes every floor
    /// advance submitted before it.
    pub fn get_attribute_write_floor(&self, attribute: Option<AttrRef<'_>>) -> Result<Enqueued<OrdinalQueryHandle>> {
        let inner = &self.inner;
        let family = match attribute {
            Some(a) => Some(inner.family(inner.attr_token(a, "get_attribute_write_floor")?)?),
            None => None,
        };
        let owner = inner.clone();
        let cost = if family.is_some() { AnswerCost::Constant } else { AnswerCost::PerAttribute };
        inner.enqueue_ordinal_query(cost, move || match &family {
            Some(f) => owner.floors.committed(f),
            None => owner.global_floor(),
        })
    }

    /// Enqueues a read of the retention frontier: snapshots and ranges from
    /// it up to the write floor are exact. It is the floor `history_depth`
    /// advances ago, or the end of a merged span (a producer that ran
    /// further ahead than `max_versions` under `UnsealedOverflow::Coalesce`)
    /// reaching at or below an attribute's floor. Merged spans wholly above
    /// the floor do not count: no read can ask for them yet.
    pub fn get_oldest_preserved_ordinal(&self) -> Result<Enqueued<OrdinalQueryHandle>> {
        let owner = self.inner.clone();
        self.inner.enqueue_ordinal_query(AnswerCost::PerAttribute, move || {
            let merged = owner
                .all_families()
                .iter()
                .flat_map(|f| {
                    let floor = owner.floors.committed(f);
                    f.columns().into_iter().map(move |c| c.lock().oldest_exact(floor))
                })
                .max()
                .unwrap_or(0);
            owner.floors.frontier.load(Ordering::Acquire).max(merged)
        })
    }

    /// The answer of an ordinal query, waiting up to `timeout`.
    pub fn fetch_ordinal(&self, handle: OrdinalQueryHandle, timeout: Timeout) -> Result<Ordinal> {
        let state = self
            .inner
            .ordinal_queries
            .get(handle.get())
            .ok_or_else(|| Error::invalid_handle(format!("fetch_ordinal: {handle} is unknown or was released")))?;
        if state.value.get().is_none() {
            self.inner.await_result(state.op.get().expect("set at enqueue"), timeout, "fetch_ordinal", handle)?;
        }
        match state.value.get() {
            Some(v) => Ok(Ordinal(v)),
            None => Err(Error::internal(format!("fetch_ordinal: {handle} completed without a value"))),
        }
    }

    /// Releases an ordinal query handle once its op has run.
    pub fn release_ordinal_query(&self, handle: OrdinalQueryHandle) -> Result<OpId> {
        let state = self.inner.ordinal_queries.remove(handle.get()).ok_or_else(|| {
            Error::invalid_handle(format!("release_ordinal_query: {handle} is unknown or already released"))
        })?;
        Ok(self
            .inner
            .sched
            .submit_marker(&OpSpec::independent().releasing(state.key).labelled("release_ordinal_query"))?)
    }
}

/// What answering an ordinal query costs, which decides where it runs when
/// no floor advance it must observe is pending: a cheap answer is given on
/// the submitting thread (a lane handoff would cost more than the answer);
/// a costly one goes to a lane, so the enqueue stays cheap.
#[derive(Clone, Copy)]
enum AnswerCost {
    /// A load or two.
    Constant,
    /// A pass over every attribute: cheap while the stage has few.
    PerAttribute,
}

/// Up to this many attributes a pass over them is a cheap answer.
const INLINE_PASS_ATTRIBUTES: usize = 256;

impl StageInner {
    fn enqueue_ordinal_query(
        self: &Arc<Self>,
        cost: AnswerCost,
        answer: impl FnOnce() -> u64 + Send + 'static,
    ) -> Result<Enqueued<OrdinalQueryHandle>> {
        let key = self.next_handle_key();
        let state = Arc::new(OrdinalQueryState { key, op: OpCell::default(), value: AnswerCell::default() });
        let job_state = state.clone();
        let spec = OpSpec::new(Order::AfterFloors).producing(key).labelled("ordinal_query");
        let cheap = match cost {
            AnswerCost::Constant => true,
            AnswerCost::PerAttribute => read(&self.families).all.len() <= INLINE_PASS_ATTRIBUTES,
        };
        let answer = move || job_state.value.set(answer());
        // A cheap answer with no floor advance pending (the usual case) is
        // given as it is submitted: no job, node or completion. Otherwise
        // the op waits for the advances and answers where it then runs.
        let op = if cheap {
            self.sched.submit_brief(&spec.on_submitter_when_ready(), answer)?
        } else {
            self.sched.submit_unboxed(&spec, move || {
                answer();
                Ok(())
            })?
        };
        state.op.set(op);
        let raw = self.ordinal_queries.insert_with(|_| state);
        Ok(Enqueued { handle: OrdinalQueryHandle::from_raw(raw).expect("never 0"), op })
    }

    /// The global committed floor: the lowest effective floor over the
    /// attributes that hold data (the base floor when there are none).
    pub(crate) fn global_floor(&self) -> u64 {
        let base = self.floors.base_committed.load(Ordering::Acquire);
        self.all_families().iter().filter(|f| f.has_columns()).map(|f| self.floors.committed(f)).min().unwrap_or(base)
    }

    fn enqueue_advance(self: &Arc<Self>, ordinal: u64, scope: FloorScope<'_>) -> Result<OpId> {
        const CALL: &str = "advance_write_floor";
        let resolve = |attrs: &[AttrRef<'_>]| -> Result<Vec<Arc<Family>>> {
            attrs.iter().map(|a| self.family(self.attr_token(*a, CALL)?)).collect()
        };
        let (sched_scope, include, exclude) = match &scope {
            FloorScope::All => (SchedScope::All, None, None),
            FloorScope::Exclude(attrs) if attrs.is_empty() => (SchedScope::All, None, None),
            FloorScope::Include(attrs) => {
                let fams = resolve(attrs)?;
                (SchedScope::Include(ids(&fams)), Some(fams), None)
            }
            FloorScope::Exclude(attrs) => {
                let fams = resolve(attrs)?;
                (SchedScope::Exclude(ids(&fams)), None, Some(fams))
            }
        };
        let spec = OpSpec::new(Order::FloorAdvance { ordinal, scope: sched_scope }).labelled("advance_write_floor");
        // An advance is cheap (it raises floors and trims what fell out of
        // the retention window, folding the changes of one seal into an
        // image, in place unless a read holds it), unless it recomputes the
        // world matrices: it then runs on its submitter when nothing holds
        // it back, as small writes do. A write/seal/read loop then runs on
        // one thread, with no lane woken (and left searching) per seal. The
        // flag read here is the one the job sees when it runs here: a
        // transform write still pending holds the advance back (it then runs
        // where that write completes), and one enqueued later is ordered
        // after it.
        let may_compute_world = match (&include, &exclude) {
            (Some(fams), _) => fams.iter().any(|f| is_world(f)),
            (None, Some(excluded)) => !excluded.iter().any(|f| is_world(f)),
            (None, None) => true,
        };
        let spec = if may_compute_world && self.xform_dirty.load(Ordering::Acquire) {
            spec
        } else {
            spec.on_submitter_when_ready()
        };
        let owner = self.clone();
        self.sched.submit_with(&spec, || -> Result<Unboxed<_>> {
            // Runs under the ordering lock: later enqueue checks see the new
            // submitted floors, and so do reads' unsealed-change checks. The
            // job commits exactly what was raised here.
            let raise = match (include, exclude) {
                (Some(fams), _) => Raise::Families(fams),
                (None, Some(excluded)) => Raise::Families(
                    self.all_families().into_iter().filter(|f| !excluded.iter().any(|e| Arc::ptr_eq(e, f))).collect(),
                ),
                (None, None) => Raise::All,
            };
            match &raise {
                Raise::All => {
                    self.floors.base_submitted.fetch_max(ordinal, Ordering::AcqRel);
                    for f in self.all_families() {
                        self.prune_unsealed(&f);
                    }
                    let base = self.floors.base_submitted.load(Ordering::Acquire);
                    lock(&self.floors.unsealed_all).prune(base);
                }
                Raise::Families(fams) => {
                    for f in fams {
                        f.raise_submitted(ordinal);
                        self.prune_unsealed(f);
                    }
                }
            }
            // An advance covering the world matrices recomputes them first
            // when a transform input changed (the contract's rule).
            let covers_world = match &raise {
                Raise::All => true,
                Raise::Families(fams) => fams.iter().any(|f| is_world(f)),
            };
            Ok(Unboxed(move || {
                if covers_world && owner.xform_dirty.load(Ordering::Acquire) {
                    // A failure (memory) leaves the world matrices as they
                    // were; the floor still moves.
                    let _ = owner.compute_world(ordinal, ordinal, crate::xform::Rule::Cpu);
                }
                owner.commit_advance(ordinal, &raise);
                Ok(())
            }))
        })
    }

    fn prune_unsealed(&self, family: &Family) {
        let floor = self.floors.submitted(family);
        family.unsealed().prune(floor);
    }

    fn commit_advance(&self, ordinal: u64, raise: &Raise) {
        match raise {
            Raise::All => {
                self.floors.base_committed.fetch_max(ordinal, Ordering::AcqRel);
            }
            Raise::Families(fams) => fams.iter().for_each(|f| f.raise_committed(ordinal)),
        }
        self.move_frontier();
    }

    /// The highest committed floor of any attribute (or the base floor):
    /// retention counts seals wherever they happen, so a loop that seals
    /// only some attributes (INCLUDE or EXCLUDE scopes) still moves the
    /// frontier, as the published library's does. Each family is trimmed
    /// no further than its own floor.
    fn highest_floor(&self) -> u64 {
        let base = self.floors.base_committed.load(Ordering::Acquire);
        self.with_families(|all| all.iter().map(|f| self.floors.committed(f)).max().unwrap_or(base).max(base))
    }

    /// Records the highest floor and, when the retention frontier moves,
    /// trims every column to it.
    fn move_frontier(&self) {
        let global = self.highest_floor();
        let frontier = {
            let mut history = lock(&self.floors.history);
            if history.back().is_none_or(|last| *last < global) {
                history.push_back(global);
            }
            while history.len() > self.config.history_depth + 1 {
                history.pop_front();
            }
            // The floor `history_depth` advances ago; everything until there
            // have been that many.
            let candidate = if history.len() > self.config.history_depth { history[0] } else { 0 };
            let old = self.floors.frontier.fetch_max(candidate, Ordering::AcqRel);
            if candidate <= old {
                return;
            }
            candidate
        };
        for family in self.all_families() {
            // Never past the family's own sealed data.
            let bound = frontier.min(self.floors.committed(&family));
            for column in family.columns() {
                column.lock().trim(bound);
            }
            family.retire_dead_columns(bound, &self.floors.pending_all);
        }
    }
}

/// Whether `family` is the world matrices, which an advance covering them
/// recomputes first when a transform input changed.
fn is_world(family: &Family) -> bool {
    &*family.name_text == crate::xform::WORLD
}

fn ids(families: &[Arc<Family>]) -> SmallVec<[CellKey; 4]> {
    families.iter().map(|f| f.id).collect()
}
