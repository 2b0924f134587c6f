//! Reads: snapshot and change-range reads producing zero-copy groups.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use ovstage_sched::{Failure, OpSpec, Order, Unboxed};
use ovstage_types::{
    DType, Error, OpId, Ordinal, OrdinalRange, QueryHandle, ReadGroupId, ReadHandle, Result, Semantic, Status, Timeout,
    Token,
};
use smallvec::SmallVec;
use std::sync::atomic::Ordering;

use crate::api::{AttrRef, Enqueued};
use crate::family::Family;
use crate::group::{AttributeMeta, GroupData, GroupKind, GroupPreparer, Layout, PreparedSlot, PrimGroup, ReadGroup};
use crate::metadata::{self, Reserved};
use crate::schema::{Schema, ValueKind};
use crate::stage::{Stage, StageInner, lock};
use crate::state::QueryState;
use crate::state::{OpCell, ReadOutcome, ReadState};
use crate::store::column::{Column, Picked, RowMap, Snapshot};
use crate::store::image::Image;

const CALL: &str = "read_attributes";

/// A read of at most this many cells (see [`read_cells`]) runs
/// on the submitting thread when nothing it waits for is pending: handing
/// it to a lane and waking the waiter costs more than such a read, which
/// holds the submitter no longer than a copy of its arguments would. Larger
/// reads go to a lane, so enqueueing one stays cheap.
const INLINE_READ_CELLS: usize = 16 * 1024;

/// What visiting one attribute costs a read, in cells, whatever it finds
/// (locks, row map, group bookkeeping): a wide read of unchanged
/// attributes is not free.
const ATTRIBUTE_CELLS: usize = 64;

/// A read's cost in cells, up to a little above [`INLINE_READ_CELLS`]: a
/// snapshot reads every query prim of every attribute; a change range
/// reads what changed in it (at most the query's prims per column), so a
/// wide query over a few changed rows is cheap, and an attribute that did
/// not change in the range costs only its visit.
fn read_cells(prims: usize, requested: &[Requested], range: OrdinalRange) -> usize {
    let mut cells = requested.len().saturating_mul(ATTRIBUTE_CELLS);
    for r in requested {
        if cells > INLINE_READ_CELLS {
            break;
        }
        cells = cells.saturating_add(match (r, range) {
            // Derived attributes keep no history: nothing to read.
            (Requested::Derived(..), OrdinalRange::Changes { .. }) => 0,
            (Requested::Column(f, _), OrdinalRange::Changes { start, .. }) if !f.changed_since(start.get()) => 0,
            (Requested::Column(f, _), OrdinalRange::Changes { start, end }) => {
                let cap = prims.min(INLINE_READ_CELLS + 1);
                f.columns().iter().map(|c| c.changed_rows_hint(start.get(), end.get(), cap).min(prims)).sum()
            }
            (_, OrdinalRange::Snapshot { .. }) => prims,
        });
    }
    cells
}

/// A read's last step, run by its job (see
/// [`Stage::read_attributes_finishing`]): given the read's groups, or its
/// error.
pub type ReadFinisher = Box<dyn FnOnce(std::result::Result<&mut [ReadGroup], &Error>) -> Result<()> + Send>;

/// The attributes of a read (usually one or two: no allocation).
type ReadTargets = SmallVec<[ReadTarget; 2]>;

/// One attribute of a read.
enum ReadTarget {
    /// A recorded attribute, with the ordinal its values are taken at:
    /// `min(requested end, submitted floor at enqueue)`. Everything at or
    /// below it is sealed once the read runs (it runs after the advances
    /// submitted before it), so the result does not depend on timing.
    Column { family: Arc<Family>, label: Token, end: u64 },
    /// `usd-path`, `usd-parent` or `usd-children`, derived from the prims
    /// when the read runs.
    Derived { reserved: Reserved, token: Token },
}

/// An attribute named by a read, before its floor is known.
enum Requested {
    /// The family, and the name it was requested by (an alias labels its
    /// groups with the alias).
    Column(Arc<Family>, Token),
    Derived(Reserved, Token),
}

/// Query elements selected for a group: `(element index, row)`.
type Picks = Vec<(u32, u32)>;

impl Stage {
    /// Enqueues a read of `attributes` over the query's prims.
    ///
    /// A snapshot returns the values as of its end; a change range returns
    /// the cells that changed in it (values as of its end, then tombstones
    /// for cells deleted by then). Data above the write floor is never
    /// returned: a read whose end is above the floor fails with
    /// `WRITE_FLOOR_VIOLATION` when an unsealed change of a queried cell
    /// lies at or below its end, and otherwise reads as of the floor. The
    /// read runs after every floor advance submitted before it, so a
    /// write, an advance and a read submitted back to back without waiting
    /// read the written values.
    pub fn read_attributes(
        &self,
        query: QueryHandle,
        attributes: &[AttrRef<'_>],
        range: OrdinalRange,
    ) -> Result<Enqueued<ReadHandle>> {
        self.inner.enqueue_read(query, attributes, range, None)
    }

    /// [`Stage::read_attributes`], with `finish` run by the read's job once
    /// its groups are built (or it failed), before the op reports complete:
    /// a binding's last step on the read's groups (the placement
    /// extension's device copies and availability events). It runs exactly
    /// once for an accepted read, on success and on failure, and never for
    /// a read rejected at enqueue. An error it returns fails a read that
    /// had succeeded (no group is handed out); on a failed read its error is
    /// dropped and the read's own stays.
    pub fn read_attributes_finishing(
        &self,
        query: QueryHandle,
        attributes: &[AttrRef<'_>],
        range: OrdinalRange,
        finish: ReadFinisher,
    ) -> Result<Enqueued<ReadHandle>> {
        self.inner.enqueue_read(query, attributes, range, Some(finish))
    }

    /// The next group of a read, waiting up to `timeout` for the read to
    /// run. `Ok(None)` once every group was fetched (END_OF_ITERATION).
    pub fn fetch_read_next(&self, read: ReadHandle, timeout: Timeout) -> Result<Option<ReadGroup>> {
        self.fetch_popped(read, timeout, VecDeque::pop_front)
    }

    /// [`Stage::fetch_read_next`], the group moved into a box of `make`'s
    /// making: for bindings that keep a group in a structure of their own
    /// with what they build for it (its descriptors), one allocation in
    /// all. Passed out by value through nested results and wrappers, a
    /// group (a few hundred bytes) was copied a dozen times (measured: a
    /// tenth of a small read's time); the box is allocated first and the
    /// group moved into it as it leaves the read's queue.
    ///
    /// `make` runs under a lock of the stage (its table of reads, or the
    /// read's queue of groups): it should only place the group, and must
    /// not call into this stage.
    #[inline]
    pub fn fetch_read_next_into<H>(
        &self,
        read: ReadHandle,
        timeout: Timeout,
        make: impl Fn(ReadGroup) -> H,
    ) -> Result<Option<Box<H>>> {
        self.fetch_popped(read, timeout, |queue| {
            if queue.is_empty() {
                return None;
            }
            let slot = Box::new_uninit();
            queue.pop_front().map(|group| Box::write(slot, make(group)))
        })
    }

    /// The next group of `read` as `pop` takes it from the read's queue.
    #[inline]
    fn fetch_popped<G>(
        &self,
        read: ReadHandle,
        timeout: Timeout,
        pop: impl Fn(&mut VecDeque<ReadGroup>) -> Option<G>,
    ) -> Result<Option<G>> {
        // A read that has run (the usual case: small reads run as they
        // are enqueued) is served under the handle table's lock, without
        // taking a reference to its state.
        let mut group = None;
        let served = self.inner.reads.with_mut(read.get(), |state| {
            match state.outcome.get()? {
                Ok(()) => {}
                Err(e) => return Some(Err(e.clone())),
            }
            group = match Arc::get_mut(state) {
                // The job has let go of the state (it usually has, once its
                // outcome is set): no lock needed.
                Some(owned) => pop(owned.groups.get_mut().unwrap_or_else(PoisonError::into_inner)),
                None => pop(&mut lock(&state.groups)),
            };
            Some(Ok(()))
        });
        match served {
            Some(Some(Ok(()))) => Ok(group),
            Some(Some(Err(e))) => Err(e),
            Some(None) => self.fetch_read_pending(read, timeout, pop),
            None => Err(unknown_read(read)),
        }
    }

    /// [`Stage::fetch_read_next`] of a read that had not run when asked.
    #[cold]
    fn fetch_read_pending<G>(
        &self,
        read: ReadHandle,
        timeout: Timeout,
        pop: impl Fn(&mut VecDeque<ReadGroup>) -> Option<G>,
    ) -> Result<Option<G>> {
        let state = self.inner.reads.get(read.get()).ok_or_else(|| unknown_read(read))?;
        if state.outcome.get().is_none() {
            self.inner.await_result(state.op.get().expect("set at enqueue"), timeout, "fetch_read_next", read)?;
        }
        match state.outcome.get() {
            Some(Ok(())) => Ok(pop(&mut lock(&state.groups))),
            Some(Err(e)) => Err(e.clone()),
            None => Err(Error::internal(format!("fetch_read_next: {read} completed without a result"))),
        }
    }

    /// Sets the function that builds a binding's description of each read
    /// group while its read runs (see [`GroupPreparer`]); what it builds is
    /// taken with [`ReadGroup::take_prepared`]. Once per stage: a second
    /// call is `INVALID_ARGUMENT`. Reads enqueued before it is set run
    /// without it.
    pub fn set_group_preparer(&self, preparer: GroupPreparer) -> Result<()> {
        self.inner
            .preparer
            .set(preparer)
            .map_err(|_| Error::invalid_argument("set_group_preparer: this stage already has a group preparer"))
    }

    /// Releases a fetched group's pin on storage (dropping it does the same).
    pub fn release_group(&self, group: ReadGroup) {
        drop(group);
    }

    /// Releases a read handle once its op has run; unfetched groups are
    /// dropped.
    pub fn release_read(&self, read: ReadHandle) -> Result<OpId> {
        let state = self
            .inner
            .reads
            .remove(read.get())
            .ok_or_else(|| Error::invalid_handle(format!("release_read: {read} is unknown or already released")))?;
        Ok(self.inner.sched.submit_marker(&OpSpec::independent().releasing(state.key).labelled("release_read"))?)
    }
}

fn unknown_read(read: ReadHandle) -> Error {
    Error::invalid_handle(format!("fetch_read_next: {read} is unknown or was released"))
}

impl StageInner {
    fn enqueue_read(
        self: &Arc<Self>,
        query: QueryHandle,
        attributes: &[AttrRef<'_>],
        range: OrdinalRange,
        finish: Option<ReadFinisher>,
    ) -> Result<Enqueued<ReadHandle>> {
        let q = self.query(query, CALL)?;
        let mut requested: SmallVec<[Requested; 2]> = SmallVec::with_capacity(attributes.len());
        let derived = |t: Token| self.reserved.lookup(t).filter(|r| r.is_derived());
        let tokens = match self.known_tokens(attributes) {
            Some(tokens) => tokens,
            // Checked one by one, errors in argument order.
            None => {
                let mut tokens = SmallVec::<[Token; 4]>::with_capacity(attributes.len());
                for a in attributes {
                    let token = self.attr_token(*a, CALL)?;
                    if let Some(r) = derived(token) {
                        metadata::check_read(r, CALL)?;
                    }
                    tokens.push(token);
                }
                tokens
            }
        };
        let families = self.existing_families(&tokens, |t| derived(t).is_none());
        for (token, family) in tokens.into_iter().zip(families) {
            match derived(token) {
                Some(r) => {
                    metadata::check_read(r, CALL)?;
                    requested.push(Requested::Derived(r, token));
                }
                // Reading an attribute no prim carries yields no groups.
                None => requested.extend(family.map(|f| Requested::Column(f, token))),
            }
        }
        let end = range.end().get();
        // Below the retention frontier a snapshot is served only where the
        // attribute has not changed since (its value then is still the one
        // at the frontier): otherwise OUT_OF_RANGE at enqueue, as the
        // published library answers a snapshot whose cells changed later.
        let frontier = self.floors.frontier.load(std::sync::atomic::Ordering::Acquire);
        if end < frontier {
            for r in &requested {
                let Requested::Column(f, _) = r else { continue };
                // A dropped column (see `Family::retire_dead_columns`) last
                // changed at or below the frontier: its history is gone too.
                if end >= f.retired_through() && f.columns().iter().all(|c| c.lock().unchanged_between(end, frontier)) {
                    continue;
                }
                return Err(Error::new(
                    Status::OutOfRange,
                    format!(
                        "{CALL}: values at {end} are no longer retained: the attribute changed since, and history \
                         starts at the retention frontier {frontier} (see get_oldest_preserved_ordinal)"
                    ),
                )
                .with_attribute(&*f.name_text)
                .with_ordinal(end));
            }
        }
        // Built before the ordering lock is taken.
        let _ = q.prim_bits();
        let key = self.next_handle_key();
        let state = Arc::new(ReadState {
            key,
            op: OpCell::default(),
            outcome: ReadOutcome::default(),
            groups: Mutex::new(VecDeque::new()),
        });
        let spec = OpSpec::new(Order::AfterFloors).using(q.key).producing(key).labelled("read_attributes");
        let cells = q.ready().map_or(usize::MAX, |r| read_cells(r.prims.len(), &requested, range));
        let cheap = cells <= INLINE_READ_CELLS || self.views_ready(&q, &requested, range);
        let spec = if cheap { spec.on_submitter_when_ready() } else { spec };
        let (owner, job_state) = (self.clone(), state.clone());
        // The query and the families move into the job (each reference
        // taken once per read, not cloned again).
        let op = self.sched.submit_with(&spec, move || -> Result<Unboxed<_>> {
            // What to read is decided under the ordering lock, against the
            // submitted floors and unsealed changes as of this submission,
            // and travels in the job.
            let mut chosen = ReadTargets::with_capacity(requested.len());
            for r in requested {
                let (f, label) = match r {
                    Requested::Derived(reserved, token) => {
                        chosen.push(ReadTarget::Derived { reserved, token });
                        continue;
                    }
                    Requested::Column(f, label) => (f, label),
                };
                let floor = self.floors.submitted(&f);
                if end > floor {
                    let bits = q.prim_bits().map(Arc::as_ref);
                    let hit = f
                        .unsealed()
                        .overlap(floor, end, bits)
                        .or_else(|| lock(&self.floors.unsealed_all).overlap(floor, end, bits));
                    if let Some((at, prim)) = hit {
                        let err = Error::new(
                            Status::WriteFloorViolation,
                            format!(
                                "{CALL}: a queried prim has an unsealed change at {at}, above the write floor {floor} and at or below the read's end {}; reads see sealed data only",
                                Ordinal(end)
                            ),
                        )
                        .with_attribute(&*f.name_text)
                        .with_ordinal(end);
                        return Err(match prim {
                            Some(p) => err.with_prim(self.describe(p)),
                            None => err,
                        });
                    }
                }
                chosen.push(ReadTarget::Column { family: f, label, end: end.min(floor) });
            }
            Ok(Unboxed(move || {
                let mut result = owner.run_read(&q, &chosen, range);
                if let Ok(groups) = &mut result
                    && let Some(prepare) = owner.preparer.get()
                {
                    for g in groups.iter_mut() {
                        g.prepared = PreparedSlot(prepare(g));
                    }
                }
                if let Some(finish) = finish {
                    let finished = match &mut result {
                        Ok(groups) => finish(Ok(groups)),
                        Err(e) => finish(Err(e)).or(Ok(())),
                    };
                    if let Err(e) = finished {
                        result = Err(e);
                    }
                }
                let failure = result.as_ref().err().cloned();
                match result {
                    Ok(groups) => {
                        *lock(&job_state.groups) = groups.into();
                        job_state.outcome.succeed();
                    }
                    Err(e) => job_state.outcome.fail(e),
                }
                failure.map_or(Ok(()), |e| Err(Failure::from(e)))
            }))
        })?;
        state.op.set(op);
        let raw = self.reads.insert_with(|_| state);
        Ok(Enqueued { handle: ReadHandle::from_raw(raw).expect("never 0"), op })
    }

    /// Whether a snapshot read only hands out views: it reads columns only
    /// (a derived attribute's group is built prim by prim), and each
    /// column has its image as of the read's end built and the query's
    /// rows in it cached as a live run or span ([`ColumnGuard::view_ready`]).
    /// Such a read costs its visits whatever its prims, so it runs on its
    /// submitter as a small one does: a lane hand-off costs more. Asked of
    /// reads too large by their cells only; a write sealed in between may
    /// still leave the read an image to build.
    ///
    /// [`ColumnGuard::view_ready`]: crate::store::column::ColumnGuard::view_ready
    fn views_ready(&self, q: &QueryState, requested: &[Requested], range: OrdinalRange) -> bool {
        let OrdinalRange::Snapshot { end } = range else { return false };
        requested.len().saturating_mul(ATTRIBUTE_CELLS) <= INLINE_READ_CELLS
            && requested.iter().all(|r| match r {
                Requested::Derived(..) => false,
                Requested::Column(f, _) => {
                    let at = end.get().min(self.floors.submitted(f));
                    f.columns().iter().all(|c| {
                        let guard = c.lock();
                        q.cached_row_map(c, &guard).is_some_and(|map| guard.view_ready(at, &map))
                    })
                }
            })
    }

    fn run_read(&self, q: &QueryState, targets: &[ReadTarget], range: OrdinalRange) -> Result<Vec<ReadGroup>> {
        q.at_execution().map_err(|f| f.error)?;
        // Usually a group per attribute: sized once, not regrown (a group
        // is a few hundred bytes, so each regrowth copies them all).
        let mut values = Vec::with_capacity(targets.len());
        let mut tombstones = Vec::new();
        for t in targets {
            let (family, label, end) = match t {
                ReadTarget::Column { family, label, end } => (family, *label, *end),
                ReadTarget::Derived { reserved, token } => {
                    // Derived attributes keep no change history: a range
                    // read reports them as never changed.
                    if let OrdinalRange::Snapshot { end } = range {
                        values.extend(self.derived_group(q, *reserved, *token, end));
                    }
                    continue;
                }
            };
            // A change range costs what changed: an attribute with no
            // change since its start has nothing to report (no column lock).
            if let OrdinalRange::Changes { start, .. } = range
                && !family.changed_since(start.get())
            {
                continue;
            }
            if let OrdinalRange::Changes { start, .. } = range
                && family.retired_through() > 0
                && start.get() <= family.retired_through()
            {
                // A dropped column's last changes (its cells' ends) were in
                // the range, and it is gone.
                return Err(trimmed(family, start.get(), family.retired_through() + 1));
            }
            let floor = Ordinal(self.floors.committed(family));
            for column in family.columns() {
                let ctx = GroupCtx { q, family, label, column: &column, floor };
                match range {
                    OrdinalRange::Snapshot { .. } => self.snapshot_groups(&ctx, end, &mut values)?,
                    OrdinalRange::Changes { start, .. } => {
                        self.change_groups(&ctx, start.get(), end, &mut values, &mut tombstones)?;
                    }
                }
            }
        }
        values.append(&mut tombstones);
        Ok(values)
    }

    fn snapshot_groups(&self, ctx: &GroupCtx<'_>, at: u64, out: &mut Vec<ReadGroup>) -> Result<()> {
        let mut guard = ctx.column.lock();
        let map = ctx.q.row_map(ctx.column, &guard);
        if map.is_empty() {
            return Ok(());
        }
        if map.len() <= guard.nrows() as usize / FEW_ROWS_DIVISOR && guard.cheap_to_pick(at) {
            // A few rows of a large column whose image at `at` is not built
            // yet: copy them rather than build (copy) the whole image.
            let mut picks: Picks = Vec::with_capacity(map.len());
            picks.extend((0..map.len()).filter_map(|i| map.get(i).map(|r| (i as u32, r))));
            let rows: Vec<u32> = picks.iter().map(|p| p.1).collect();
            let (image, ordinal, live) = match guard.pick_at(&rows, at).map_err(|e| ctx.out_of_memory(&e))? {
                Picked::Rows { image, ordinal, live } => (image, ordinal, live),
                Picked::Trimmed { oldest } => return Err(ctx.trimmed(at, oldest)),
                Picked::Empty => return Ok(()),
            };
            let generation = guard.layout_generation();
            drop(guard);
            let picks: Picks = picks.into_iter().zip(live).filter(|(_, live)| *live).map(|(p, _)| p).collect();
            if !picks.is_empty() {
                out.push(self.value_group(ctx, &image, ordinal, generation, Selected::Packed(picks)));
            }
            return Ok(());
        }
        let (image, ordinal) = match guard.snapshot(at) {
            Snapshot::Empty => return Ok(()),
            Snapshot::Trimmed { oldest } => return Err(ctx.trimmed(at, oldest)),
            Snapshot::Image { image, ordinal } => (image, ordinal),
        };
        let generation = guard.layout_generation();
        drop(guard);
        let live = |r: u32| r < image.nrows && image.live.contains(r);
        if let RowMap::Run { start, len } = map
            && image.holds_live(start, len)
        {
            out.push(self.value_group(ctx, &image, ordinal, generation, Selected::Dense { start, len }));
            return Ok(());
        }
        if let RowMap::Sparse(sparse) = &map
            && let Some(span) = sparse.spanned()
            && image.holds_live(span.first, span.len)
        {
            // Every element's row is live (checked word by word over the
            // span): a view through the map's shared index map.
            let selected = Selected::Spanned { first: span.first, len: span.len, offsets: span.offsets.clone() };
            out.push(self.value_group(ctx, &image, ordinal, generation, selected));
            return Ok(());
        }
        let picks: Picks =
            (0..map.len()).filter_map(|i| map.get(i).filter(|r| live(*r)).map(|r| (i as u32, r))).collect();
        if !picks.is_empty() {
            out.push(self.value_group(ctx, &image, ordinal, generation, Selected::Picks(picks)));
        }
        Ok(())
    }

    fn change_groups(
        &self,
        ctx: &GroupCtx<'_>,
        start: u64,
        end: u64,
        values: &mut Vec<ReadGroup>,
        tombstones: &mut Vec<ReadGroup>,
    ) -> Result<()> {
        if start > end || ctx.column.last_change() < start {
            return Ok(());
        }
        let mut guard = ctx.column.lock();
        let map = ctx.q.row_map(ctx.column, &guard);
        if map.is_empty() {
            return Ok(());
        }
        let changed = guard.changed_between(start, end).map_err(|oldest| ctx.trimmed(start, oldest))?;
        let count = changed.count();
        if count == 0 {
            return Ok(());
        }
        // Visit the changed rows, not every element of the query.
        let picks = map.elements_of(changed.iter());
        if picks.is_empty() {
            return Ok(());
        }
        let (mut live, mut dead): (Picks, Picks) = (Vec::new(), Vec::new());
        let few = picks.len() <= guard.nrows() as usize / FEW_ROWS_DIVISOR;
        let (image, ordinal, selected) = if few {
            // A few rows of a large column: copy them rather than build
            // (copy) the column's whole image at `end`.
            let rows: Vec<u32> = picks.iter().map(|p| p.1).collect();
            let picked = guard.pick_at(&rows, end).map_err(|e| ctx.out_of_memory(&e))?;
            let (image, ordinal, is_live) = match picked {
                Picked::Rows { image, ordinal, live } => (image, ordinal, live),
                Picked::Trimmed { oldest } => return Err(ctx.trimmed(end, oldest)),
                Picked::Empty => return Ok(()),
            };
            for (pick, is_live) in picks.into_iter().zip(is_live) {
                if is_live { live.push(pick) } else { dead.push(pick) }
            }
            (image, ordinal, Selected::Packed(std::mem::take(&mut live)))
        } else {
            let (image, ordinal) = match guard.snapshot(end) {
                Snapshot::Image { image, ordinal } => (image, ordinal),
                Snapshot::Trimmed { oldest } => return Err(ctx.trimmed(end, oldest)),
                Snapshot::Empty => return Ok(()),
            };
            for (i, r) in picks {
                if r < image.nrows && image.live.contains(r) { live.push((i, r)) } else { dead.push((i, r)) }
            }
            (image, ordinal, Selected::Picks(std::mem::take(&mut live)))
        };
        let generation = guard.layout_generation();
        drop(guard);
        if !selected.is_empty() {
            values.push(self.value_group(ctx, &image, ordinal, generation, selected));
        }
        if !dead.is_empty() {
            let prims = prim_group(ctx.q, &dead);
            tombstones.push(self.group(ctx, ordinal, generation, GroupKind::Tombstones, prims, None));
        }
        Ok(())
    }

    fn group(
        &self,
        ctx: &GroupCtx<'_>,
        ordinal: u64,
        generation: u64,
        kind: GroupKind,
        prims: PrimGroup,
        data: Option<GroupData>,
    ) -> ReadGroup {
        ReadGroup {
            id: ReadGroupId::from_raw(self.next_group_id()).expect("ids start at 1"),
            attribute: ctx.label,
            ordinal: Ordinal(ordinal),
            kind,
            semantic: ctx.column.semantic(),
            prims,
            data,
            meta: AttributeMeta { write_floor: ctx.floor, layout_generation: generation },
            is_array: ctx.column.storage.kind == ValueKind::Array,
            prepared: PreparedSlot::default(),
        }
    }

    fn value_group(
        &self,
        ctx: &GroupCtx<'_>,
        image: &Arc<Image>,
        ordinal: u64,
        generation: u64,
        selected: Selected,
    ) -> ReadGroup {
        let schema: Schema = ctx.column.schema();
        let row_bytes = ctx.column.row_bytes;
        let (prims, layout) = match (selected, &image.arrays) {
            (Selected::Dense { start, len }, None) => (
                PrimGroup { list: ctx.q.list(), offset: 0, count: len, index_map: None },
                Layout::Fixed {
                    byte_offset: start as usize * row_bytes,
                    rows: u64::from(len),
                    row_bytes,
                    index_map: None,
                },
            ),
            (Selected::Dense { start, len }, Some(_)) => (
                PrimGroup { list: ctx.q.list(), offset: 0, count: len, index_map: None },
                Layout::ArraySpan { start: start as usize, len: len as usize },
            ),
            (Selected::Picks(picks), None) => {
                let min = picks.iter().map(|p| p.1).min().unwrap_or(0);
                let max = picks.iter().map(|p| p.1).max().unwrap_or(0);
                let consecutive = picks.iter().enumerate().all(|(i, p)| p.1 == min + i as u32);
                let index_map = (!consecutive).then(|| picks.iter().map(|p| p.1 - min).collect());
                let layout = Layout::Fixed {
                    byte_offset: min as usize * row_bytes,
                    rows: u64::from(max - min + 1),
                    row_bytes,
                    index_map,
                };
                (prim_group(ctx.q, &picks), layout)
            }
            (Selected::Spanned { first, len, offsets }, None) => {
                let count = offsets.as_ref().map_or(len, |o| o.len() as u32);
                (
                    PrimGroup { list: ctx.q.list(), offset: 0, count, index_map: None },
                    Layout::Fixed {
                        byte_offset: first as usize * row_bytes,
                        rows: u64::from(len),
                        row_bytes,
                        index_map: offsets,
                    },
                )
            }
            (Selected::Spanned { first, len, offsets }, Some(arrays)) => {
                let layout = match &offsets {
                    Some(o) => Layout::Array { rows: o.iter().map(|o| arrays.refs[(first + o) as usize]).collect() },
                    None => Layout::ArraySpan { start: first as usize, len: len as usize },
                };
                let count = offsets.as_ref().map_or(len, |o| o.len() as u32);
                (PrimGroup { list: ctx.q.list(), offset: 0, count, index_map: None }, layout)
            }
            (Selected::Packed(picks), None) => {
                let rows = picks.len() as u64;
                (prim_group(ctx.q, &picks), Layout::Fixed { byte_offset: 0, rows, row_bytes, index_map: None })
            }
            (Selected::Packed(picks), Some(_)) => {
                (prim_group(ctx.q, &picks), Layout::ArraySpan { start: 0, len: picks.len() })
            }
            (Selected::Picks(picks), Some(arrays)) => {
                let rows = picks.iter().map(|p| arrays.refs[p.1 as usize]).collect();
                (prim_group(ctx.q, &picks), Layout::Array { rows })
            }
        };
        let (shape, strides) = match &layout {
            Layout::Fixed { rows, .. } => {
                let shape = schema.read_shape(*rows);
                let strides = Schema::strides(&shape);
                (shape, strides)
            }
            Layout::Array { .. } | Layout::ArraySpan { .. } => Default::default(),
        };
        let data = GroupData {
            image: image.clone(),
            dtype: schema.dtype.scalar(),
            components: schema.element_dims(),
            layout,
            shape,
            strides,
        };
        self.group(ctx, ordinal, generation, GroupKind::Values, prims, Some(data))
    }
}

impl StageInner {
    /// A group of `usd-path`, `usd-parent` or `usd-children` for the query's
    /// prims that have a value, built from the prims as they are now.
    fn derived_group(&self, q: &QueryState, reserved: Reserved, token: Token, end: Ordinal) -> Option<ReadGroup> {
        let prims = lock(&self.prims);
        let mut picks: Picks = Vec::new();
        let mut ids: Vec<u64> = Vec::new();
        let mut offsets: Vec<u64> = vec![0];
        for (i, p) in q.prims().iter().enumerate() {
            if !prims.is_live(*p) {
                continue;
            }
            match reserved {
                Reserved::Path => ids.push(p.get()),
                Reserved::Parent => match prims.parent(*p) {
                    Some(parent) => ids.push(parent.get()),
                    None => continue,
                },
                Reserved::Children => {
                    let children = prims.children(*p);
                    if children.is_empty() {
                        continue;
                    }
                    ids.extend(children.iter().map(|c| c.get()));
                    offsets.push(ids.len() as u64 * 8);
                }
                _ => unreachable!("only derived attributes are read here"),
            }
            picks.push((i as u32, picks.len() as u32));
        }
        drop(prims);
        if picks.is_empty() {
            return None;
        }
        let nrows = picks.len() as u32;
        let values: &[u8] = bytemuck::cast_slice(&ids);
        let (image, layout, is_array) = if reserved == Reserved::Children {
            let image = Image::host_arrays(values, &offsets);
            let rows = image.array_refs().into();
            (image, Layout::Array { rows }, true)
        } else {
            let layout = Layout::Fixed { byte_offset: 0, rows: u64::from(nrows), row_bytes: 8, index_map: None };
            (Image::host_fixed(values, nrows), layout, false)
        };
        let (shape, strides) = if is_array {
            Default::default()
        } else {
            let shape = SmallVec::from_slice(&[u64::from(nrows)]);
            let strides = Schema::strides(&shape);
            (shape, strides)
        };
        let floor = self
            .existing_family(token)
            .map_or_else(|| self.floors.base_committed.load(Ordering::Acquire), |f| self.floors.committed(&f));
        Some(ReadGroup {
            id: ReadGroupId::from_raw(self.next_group_id()).expect("ids start at 1"),
            attribute: token,
            ordinal: end,
            kind: GroupKind::Values,
            semantic: Semantic::None,
            prims: prim_group(q, &picks),
            data: Some(GroupData {
                image: Arc::new(image),
                dtype: DType::U64,
                components: SmallVec::new(),
                layout,
                shape,
                strides,
            }),
            meta: AttributeMeta { write_floor: Ordinal(floor), layout_generation: 0 },
            is_array,
            prepared: PreparedSlot::default(),
        })
    }
}

struct GroupCtx<'a> {
    q: &'a QueryState,
    family: &'a Family,
    /// The name the attribute was requested by.
    label: Token,
    column: &'a Arc<Column>,
    floor: Ordinal,
}

impl GroupCtx<'_> {
    fn out_of_memory(&self, e: &dyn std::fmt::Display) -> Error {
        Error::new(Status::OutOfMemory, format!("{CALL}: {e}")).with_attribute(&*self.family.name_text)
    }

    fn trimmed(&self, at: u64, oldest: u64) -> Error {
        trimmed(self.family, at, oldest)
    }
}

/// `OUT_OF_RANGE` for a read at `at` of `family`, whose history starts at
/// `oldest`.
fn trimmed(family: &Family, at: u64, oldest: u64) -> Error {
    Error::new(
        Status::OutOfRange,
        format!(
            "{CALL}: values at {} are no longer retained (history of this attribute starts at {oldest}; see get_oldest_preserved_ordinal)",
            Ordinal(at)
        ),
    )
    .with_attribute(&*family.name_text)
    .with_ordinal(at)
}

enum Selected {
    /// Query elements `0..len` at rows `start..start + len`, all live.
    Dense {
        start: u32,
        len: u32,
    },
    Picks(Picks),
    /// Every query element, element `i` at row `first + offsets[i]` (or
    /// `first + i`) of `first..first + len`, all live.
    Spanned {
        first: u32,
        len: u32,
        offsets: Option<Arc<[u32]>>,
    },
    /// Query elements whose values are packed in the image, in order.
    Packed(Picks),
}

impl Selected {
    fn is_empty(&self) -> bool {
        match self {
            Selected::Dense { len, .. } | Selected::Spanned { len, .. } => *len == 0,
            Selected::Picks(picks) | Selected::Packed(picks) => picks.is_empty(),
        }
    }
}

/// A read copies the rows it picks instead of building the column's image
/// (a copy of every row) when they are at most one row of the column in
/// this many (a snapshot read also needs
/// [`cheap_to_pick`](crate::store::column::ColumnGuard::cheap_to_pick)).
const FEW_ROWS_DIVISOR: usize = 8;

fn prim_group(q: &QueryState, picks: &Picks) -> PrimGroup {
    let count = picks.len() as u32;
    let first = picks.first().map_or(0, |p| p.0);
    let contiguous = picks.iter().enumerate().all(|(i, p)| p.0 == first + i as u32);
    PrimGroup {
        list: q.list(),
        offset: if contiguous { first } else { 0 },
        count,
        index_map: (!contiguous).then(|| picks.iter().map(|p| p.0).collect()),
    }
}
