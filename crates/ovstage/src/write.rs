//! Copy-in writes: validation at enqueue, application on a lane.

use std::sync::Arc;

use ovstage_sched::{Cells, Failure, Job, OpSpec, Order};
use ovstage_types::{AttributeMode, OpId, Ordinal, PrimMode, PrimPath, QueryHandle, Result, Semantic, Status};

use crate::api::{AttrRef, AttributeWrite, WriteData};
use crate::family::Family;
use crate::metadata::{self, Reserved};
use crate::mutation::{Ctx, Payload, PerEntry, Reach, RowsOf, SchemaPlan, Targets};
use crate::schema::{Storage, ValueKind};
use crate::stage::{Stage, StageInner};
use crate::state::QueryState;
use crate::state::Ticket;
use crate::state::per_entry;
use crate::store::backend::{AllocFailed, Buffer, StorageBackend};
use crate::store::column::Column;
use crate::transport::{self, ElementPlan, Transport, check_semantic};

/// One entry of a write op: validated, or waiting for its query's prims.
pub(crate) enum Entry {
    Ready(PreparedWrite),
    Deferred { family: Arc<Family>, reserved: Option<Reserved>, data: WriteData },
}

/// A write of at most this many payload bytes, from memory that is there
/// already, runs on the submitting thread when nothing it waits for is
/// pending (as small reads do): handing it to a lane and waking its waiter
/// costs more than its copy (16 KiB: about half a microsecond), and a
/// producer of small writes then no longer competes with the lanes for
/// cores. Larger writes go to lanes, so independent ones run in parallel.
pub(crate) const INLINE_WRITE_BYTES: u64 = 16 * 1024;

impl Entry {
    fn family(&self) -> &Arc<Family> {
        match self {
            Entry::Ready(p) => &p.family,
            Entry::Deferred { family, .. } => family,
        }
    }

    /// Whether the entry replaces differing schemas (`FORCE`).
    fn forces(&self) -> bool {
        let mode = match self {
            Entry::Ready(p) => p.mode,
            Entry::Deferred { data, .. } => data.attribute_mode,
        };
        mode == AttributeMode::Force
    }

    /// The prims the entry writes, as admission needs them (unknown
    /// until its query runs).
    fn targets(&self, q: &QueryState) -> Targets {
        match self {
            Entry::Ready(p) => p.targets(q),
            Entry::Deferred { .. } => Targets::unknown(),
        }
    }

    /// The payload's size in bytes (for the op timeline).
    fn byte_len(&self) -> u64 {
        match self {
            Entry::Ready(p) => p.transport.byte_len(),
            Entry::Deferred { data, .. } => data.values.byte_len(),
        }
    }
}

/// One validated entry of a write op.
pub(crate) struct PreparedWrite {
    family: Arc<Family>,
    storage: Storage,
    semantic: Semantic,
    /// `FORCE` replaces a target prim's differing schema.
    mode: AttributeMode,
    transport: Transport,
    plan: ElementPlan,
}

impl PreparedWrite {
    /// The prims this entry writes (the query's own list when it writes
    /// them all).
    fn targets(&self, q: &QueryState) -> Targets {
        targets_of(&self.plan, q)
    }

    /// The prims this entry writes, without the bitset admission needs.
    fn target_list(&self, q: &QueryState) -> Option<Arc<[PrimPath]>> {
        let prims = q.prims();
        if self.plan.writes_first(prims.len()) {
            q.ready().map(|r| r.prims.clone())
        } else {
            Some(selected_prims(&self.plan, prims).into())
        }
    }
}

/// The prims a write of `plan`'s elements writes, in element order, out of
/// the query's `prims`.
fn selected_prims(plan: &ElementPlan, prims: &[PrimPath]) -> Vec<PrimPath> {
    let mut list = Vec::with_capacity(plan.selected_count());
    list.extend(plan.selected().map(|(i, _)| prims[i]));
    list
}

/// The prims a write of `plan`'s elements through `q` writes (the query's
/// own list when it writes them all).
fn targets_of(plan: &ElementPlan, q: &QueryState) -> Targets {
    let prims = q.prims();
    if plan.writes_first(prims.len()) { Targets::whole(q) } else { Targets::subset(selected_prims(plan, prims)) }
}

impl Stage {
    /// Enqueues a write of one attribute's values to the query's prims at
    /// `ordinal`.
    ///
    /// Shape, selection, schema and floor errors that can be proven now are
    /// returned now; admission conflicts, INSERT conflicts and schema
    /// conflicts that depend on pending ops surface through [`Stage::wait`].
    pub fn write_attribute<'a>(
        &self,
        query: QueryHandle,
        attribute: impl Into<AttrRef<'a>>,
        ordinal: impl Into<Ordinal>,
        data: WriteData,
        mode: PrimMode,
    ) -> Result<OpId> {
        let entry = AttributeWrite { attribute: attribute.into(), data };
        self.inner.enqueue_write(query, std::iter::once(entry), ordinal.into().get(), mode, "write_attribute")
    }

    /// Enqueues one op writing several attributes at `ordinal`. The whole
    /// batch is validated before it is queued; entries must name distinct
    /// attributes. Not a transaction: entries applied before a failing one
    /// stay applied.
    pub fn write_attributes(
        &self,
        query: QueryHandle,
        writes: Vec<AttributeWrite<'_>>,
        ordinal: impl Into<Ordinal>,
        mode: PrimMode,
    ) -> Result<OpId> {
        self.inner.enqueue_write(query, writes.into_iter(), ordinal.into().get(), mode, "write_attributes")
    }
}

impl StageInner {
    fn enqueue_write<'w>(
        self: &Arc<Self>,
        query: QueryHandle,
        mut writes: impl ExactSizeIterator<Item = AttributeWrite<'w>>,
        ordinal: u64,
        mode: PrimMode,
        call: &'static str,
    ) -> Result<OpId> {
        let q = self.query(query, call)?;
        if writes.len() == 1
            && let Some(w) = writes.next()
        {
            let entry = self.entry(&q, w, &[], ordinal, call)?;
            return self.enqueue_one(q, entry, ordinal, mode, call);
        }
        let mut entries: PerEntry<Entry> = PerEntry::with_capacity(writes.len());
        for w in writes {
            let entry = self.entry(&q, w, &entries, ordinal, call)?;
            entries.push(entry);
        }
        if mode == PrimMode::Insert {
            self.insert_check_now(&q, &entries, ordinal, call)?;
        }
        let spec = write_spec(&q, &entries, ordinal, mode, call);
        let families: PerEntry<Arc<Family>> = per_entry(entries.iter(), |e| e.family().clone());
        let targets: PerEntry<Targets> = per_entry(entries.iter(), |e| e.targets(&q));
        let admitted: PerEntry<(&Arc<Family>, &Targets)> = per_entry(families.iter().zip(&targets), |p| p);
        // The job reuses the target lists admission computed.
        let lists: PerEntry<Option<Arc<[PrimPath]>>> = per_entry(targets.iter(), |t| t.prims.clone());
        let (owner, job_q) = (self.clone(), q);
        // Boxed: the job holds the checked payload, hundreds of bytes that
        // each move of an unboxed closure would copy (measured: more
        // instructions than the allocation it saves).
        self.submit_mutation(&spec, Reach::Families(&admitted), ordinal, call, move |ticket| -> Job {
            Box::new(move || {
                // A write that fails its checks has published nothing: its
                // changes leave the unsealed logs (admission counts
                // committed changes only).
                let result = (owner.check_writes(&job_q, entries, lists, ordinal, call))
                    .inspect_err(|_| ticket.retract())
                    .and_then(|checked| owner.apply_writes(&job_q, checked, ordinal, mode, call));
                drop(ticket);
                result
            })
        })
    }

    /// [`StageInner::enqueue_write`] of one entry, the usual write: the
    /// same steps with no per-entry vectors to build, move and drop.
    fn enqueue_one(
        self: &Arc<Self>,
        q: Arc<QueryState>,
        entry: Entry,
        ordinal: u64,
        mode: PrimMode,
        call: &'static str,
    ) -> Result<OpId> {
        let one = std::slice::from_ref(&entry);
        if mode == PrimMode::Insert {
            self.insert_check_now(&q, one, ordinal, call)?;
        }
        let spec = write_spec(&q, one, ordinal, mode, call);
        let targets = entry.targets(&q);
        let owner = self.clone();
        self.submit_one(&spec, (entry, targets), reach_of, ordinal, call, move |ticket, (entry, targets)| -> Job {
            Box::new(move || {
                // The job reuses the target list admission had.
                let result = owner.run_one(&q, entry, targets.prims, ordinal, mode, call, &ticket);
                drop(ticket);
                result
            })
        })
    }

    /// One entry of a write as enqueued, after the batch's `earlier`
    /// ones: its attribute resolved and, with the query's prims known,
    /// everything checked now; through a filter query still to run, when
    /// the write runs.
    fn entry(
        &self,
        q: &QueryState,
        w: AttributeWrite<'_>,
        earlier: &[Entry],
        ordinal: u64,
        call: &'static str,
    ) -> Result<Entry> {
        let token = self.attr_token(w.attribute, call)?;
        let family = self.family(token)?;
        if earlier.iter().any(|e| Arc::ptr_eq(e.family(), &family)) {
            let ctx = Ctx { call, attribute: &family.name_text, ordinal };
            return Err(ctx.err(Status::InvalidArgument, "the batch names this attribute twice"));
        }
        let reserved = self.reserved.lookup(token);
        if let Some(r) = reserved.filter(|r| r.is_derived()) {
            metadata::check_write(
                r,
                call,
                Storage { dtype: ovstage_types::DType::U64, kind: ValueKind::Fixed },
                Semantic::None,
            )?;
        }
        Ok(match q.ready() {
            Some(_) => Entry::Ready(self.prepare_entry(q, family, reserved, w.data, call, ordinal)?),
            None => Entry::Deferred { family, reserved, data: w.data },
        })
    }

    /// INSERT onto a prim that exists now, with no pending op that could
    /// remove it (only whole-prim mutations do), is refused at enqueue, as
    /// the published library does; otherwise the op decides when it runs.
    fn insert_check_now(&self, q: &QueryState, entries: &[Entry], ordinal: u64, call: &'static str) -> Result<()> {
        if !self.floors.pending_all.is_empty() {
            return Ok(());
        }
        let table = ovstage_types::sync::lock(&self.prims);
        for e in entries {
            let Entry::Ready(p) = e else { continue };
            let targets = p.targets(q);
            if let Some(prim) = targets.list().iter().find(|p| table.is_live(**p)) {
                let ctx = Ctx { call, attribute: &p.family.name_text, ordinal };
                return Err(self.insert_conflict(&ctx, *prim));
            }
        }
        Ok(())
    }

    /// One entry checked against the query's prims. Takes the family by
    /// value and names it in errors by borrowing it (no second handle on
    /// its name to count up and down).
    fn prepare_entry(
        &self,
        q: &QueryState,
        family: Arc<Family>,
        reserved: Option<Reserved>,
        data: WriteData,
        call: &'static str,
        ordinal: u64,
    ) -> Result<PreparedWrite> {
        let ctx = &Ctx { call, attribute: &family.name_text, ordinal };
        let WriteData { values, selection, semantic, attribute_mode: mode } = data;
        if mode == AttributeMode::Force && reserved.is_some() {
            return Err(ctx.err(
                Status::InvalidArgument,
                "reserved metadata attributes accept only ATTRIBUTE_MODE_REJECT: their schema is fixed",
            ));
        }
        let (transport, plan) =
            transport::plan(q.prims().len(), values, selection).map_err(|m| ctx.err(Status::InvalidArgument, m))?;
        let storage = transport.storage();
        check_storable(storage.dtype, ctx)?;
        let semantic = match reserved {
            Some(r) => metadata::check_write(r, ctx.call, storage, semantic)?,
            None => semantic,
        };
        check_semantic(semantic, storage).map_err(|e| ctx.err(e.status(), e.message()))?;
        // Two elements naming one prim would make the written value depend
        // on row order: refused, as the published library does.
        if let Some(p) = q.first_repeat(plan.selected().map(|(i, _)| q.prims()[i])) {
            return Err(ctx
                .err(
                    Status::InvalidArgument,
                    "the query lists this prim more than once: a prim can be written once per op",
                )
                .with_prim(self.describe(p)));
        }
        // Schema conflicts provable from committed state (nothing pending on
        // the attribute could change it) are reported now.
        // None can arise when the attribute has at most one column and the
        // write fits it (the usual case): no plan is built then.
        if family.pending.is_empty()
            && self.floors.pending_all.is_empty()
            && !family.fits_its_only_column(storage, semantic)
        {
            self.plan_schema(&family, storage, semantic, mode, targets_of(&plan, q).list(), ctx)?;
        }
        Ok(PreparedWrite { family, storage, semantic, mode, transport, plan })
    }

    /// Executes a checked write op: creates its prims, then publishes each
    /// entry.
    fn apply_writes(
        &self,
        q: &QueryState,
        checked: CheckedWrites,
        ordinal: u64,
        mode: PrimMode,
        call: &'static str,
    ) -> std::result::Result<(), Failure> {
        let CheckedWrites { prepared, targets: targets_per_entry, plans } = checked;
        let entries = &prepared[..];
        let named: PerEntry<(&str, &Targets)> =
            entries.iter().zip(&targets_per_entry).map(|(e, t)| (&*e.family.name_text, t)).collect();
        self.create_prims(q, &named, ordinal, mode, call)?;
        for ((e, targets), plan) in entries.iter().zip(&targets_per_entry).zip(plans) {
            self.apply_entry(q, e, targets, plan, ordinal, call)?;
        }
        Ok(())
    }

    /// Publishes one checked entry whose prims exist.
    fn apply_entry(
        &self,
        q: &QueryState,
        e: &PreparedWrite,
        targets: &Targets,
        mut plan: SchemaPlan,
        ordinal: u64,
        call: &'static str,
    ) -> std::result::Result<(), Failure> {
        let ctx = Ctx { call, attribute: &e.family.name_text, ordinal };
        // A replacement: the old schema's cells end at this ordinal, then
        // the written values land in the new schema's column.
        let column = plan.take_column(&e.family, self.config.column_limits());
        self.end_replaced(&e.family, plan.replaced, &ctx)?;
        Ok(self.commit_entry(q, e, targets.list(), &column, &ctx)?)
    }

    /// The part of a write op that publishes nothing: every entry prepared,
    /// its payload arrived, its schema decided and its type names claimed.
    /// `lists` holds each entry's target prims as computed at enqueue
    /// (`None` where the query was not resolved then).
    fn check_writes(
        &self,
        q: &QueryState,
        entries: PerEntry<Entry>,
        lists: PerEntry<Option<Arc<[PrimPath]>>>,
        ordinal: u64,
        call: &'static str,
    ) -> std::result::Result<CheckedWrites, Failure> {
        q.at_execution()?;
        let mut prepared: PerEntry<PreparedWrite> = PerEntry::with_capacity(entries.len());
        let mut targets_per_entry: PerEntry<Targets> = PerEntry::with_capacity(entries.len());
        for (e, list) in entries.into_iter().zip(lists) {
            let (p, targets) = self.ready_entry(q, e, list, ordinal, call)?;
            prepared.push(p);
            targets_per_entry.push(targets);
        }
        let entries = &prepared[..];
        // Every entry's schema is decided before anything is published.
        let mut plans: PerEntry<SchemaPlan> = PerEntry::with_capacity(entries.len());
        for (e, targets) in entries.iter().zip(&targets_per_entry) {
            plans.push(self.plan_entry(e, targets, ordinal, call)?);
        }
        for e in entries {
            let ctx = Ctx { call, attribute: &e.family.name_text, ordinal };
            self.claim_type_names(e, &ctx)?;
        }
        Ok(CheckedWrites { prepared, targets: targets_per_entry, plans })
    }

    /// The job of [`StageInner::enqueue_one`]: the batch's check and apply
    /// of one entry, which stays where the job holds it (a prepared write
    /// is hundreds of bytes: each move is a `memcpy`).
    #[allow(clippy::too_many_arguments)]
    fn run_one(
        &self,
        q: &QueryState,
        entry: Entry,
        list: Option<Arc<[PrimPath]>>,
        ordinal: u64,
        mode: PrimMode,
        call: &'static str,
        ticket: &Ticket,
    ) -> std::result::Result<(), Failure> {
        // As in the batch's job: a failed check publishes nothing.
        if let Err(failure) = q.at_execution() {
            ticket.retract();
            return Err(failure);
        }
        let deferred;
        let p = match entry {
            Entry::Ready(ref p) => p,
            Entry::Deferred { family, reserved, data } => {
                let prepared = self.prepare_entry(q, family, reserved, data, call, ordinal);
                deferred = prepared.inspect_err(|_| ticket.retract())?;
                &deferred
            }
        };
        let checked = self.ready_targets(q, p, list, ordinal, call).and_then(|targets| {
            let plan = self.plan_entry(p, &targets, ordinal, call)?;
            self.claim_type_names(p, &Ctx { call, attribute: &p.family.name_text, ordinal })?;
            Ok((targets, plan))
        });
        let (targets, plan) = checked.inspect_err(|_| ticket.retract())?;
        let named = [(&*p.family.name_text, &targets)];
        self.create_prims(q, &named, ordinal, mode, call)?;
        self.apply_entry(q, p, &targets, plan, ordinal, call)
    }

    /// One entry prepared (of a query resolved by now) with its payload
    /// arrived, and its target prims: `list`, as computed at enqueue, when
    /// they were.
    fn ready_entry(
        &self,
        q: &QueryState,
        e: Entry,
        list: Option<Arc<[PrimPath]>>,
        ordinal: u64,
        call: &'static str,
    ) -> Result<(PreparedWrite, Targets)> {
        let p = match e {
            Entry::Ready(p) => p,
            Entry::Deferred { family, reserved, data } => {
                self.prepare_entry(q, family, reserved, data, call, ordinal)?
            }
        };
        let targets = self.ready_targets(q, &p, list, ordinal, call)?;
        Ok((p, targets))
    }

    /// A prepared entry's target prims (`list`, as computed at enqueue,
    /// when they were), once its payload has arrived.
    fn ready_targets(
        &self,
        q: &QueryState,
        p: &PreparedWrite,
        list: Option<Arc<[PrimPath]>>,
        ordinal: u64,
        call: &'static str,
    ) -> Result<Targets> {
        // A payload still being copied in (from device memory) is waited
        // for here, before anything reads it.
        p.transport
            .ready()
            .map_err(|m| Ctx { call, attribute: &p.family.name_text, ordinal }.err(Status::InvalidArgument, m))?;
        // Execution needs the list only (admission, which needs the
        // bitset, is decided).
        Ok(Targets { prims: list.or_else(|| p.target_list(q)), bits: None })
    }

    /// Where an entry's values go (see [`StageInner::plan_schema`]).
    fn plan_entry(&self, e: &PreparedWrite, targets: &Targets, ordinal: u64, call: &'static str) -> Result<SchemaPlan> {
        let ctx = Ctx { call, attribute: &e.family.name_text, ordinal };
        self.plan_schema(&e.family, e.storage, e.semantic, e.mode, targets.list(), &ctx)
    }

    /// The type, schema and ancestor-type names a recorded-metadata write
    /// names become names of their kind, as in the published library: a
    /// name already used by another kind, or by an attribute, fails the
    /// write when it runs (nothing of it is published).
    fn claim_type_names(&self, e: &PreparedWrite, ctx: &Ctx<'_>) -> Result<()> {
        let kind = match self.reserved.lookup(e.family.name) {
            Some(r @ (Reserved::PrimType | Reserved::Schemas | Reserved::AncestorTypes)) => r,
            _ => return Ok(()),
        };
        let mut names: Vec<u64> = Vec::new();
        for (_, r) in e.plan.selected() {
            names
                .extend(e.transport.row(r).chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))));
        }
        names.sort_unstable();
        names.dedup();
        let mut kinds = ovstage_types::sync::lock(&self.type_names);
        for raw in &names {
            let Some(token) = ovstage_types::Token::from_raw(*raw) else { continue };
            let clash = match kinds.get(raw) {
                Some(k) if *k != kind => true,
                Some(_) => false,
                None => self.existing_family(token).is_some_and(|f| f.has_columns()),
            };
            if clash {
                let text = self.paths.token_text(token).map(|t| t.to_string()).unwrap_or_default();
                return Err(ctx.err(
                    Status::InvalidArgument,
                    format!("the name '{text}' is already used by another kind of name or by an attribute"),
                ));
            }
        }
        for raw in names {
            kinds.insert(raw, kind);
        }
        Ok(())
    }

    fn commit_entry(
        &self,
        q: &QueryState,
        e: &PreparedWrite,
        targets: &[PrimPath],
        column: &Arc<Column>,
        ctx: &Ctx<'_>,
    ) -> Result<()> {
        let (data, offsets) = gather(&e.transport, &e.plan, column).map_err(|e| ctx.err(Status::OutOfMemory, e))?;
        let whole = e.plan.writes_first(q.prims().len());
        let rows = RowsOf::Prims { q, prims: targets, whole };
        self.commit(&e.family, column, rows, Payload::Values { data, offsets }, Some((e.semantic, "this write")), ctx)
    }
}

/// A write op's entries once checked, ready to publish.
struct CheckedWrites {
    prepared: PerEntry<PreparedWrite>,
    targets: PerEntry<Targets>,
    plans: PerEntry<SchemaPlan>,
}

/// What admission of a one-entry write reads: its family and targets.
fn reach_of((entry, targets): &(Entry, Targets)) -> (&Arc<Family>, &Targets) {
    (entry.family(), targets)
}

/// The op spec of a write of `entries` at `ordinal` through `q`.
fn write_spec(q: &QueryState, entries: &[Entry], ordinal: u64, mode: PrimMode, call: &'static str) -> OpSpec {
    let cells = match entries {
        [one] => Cells::one(one.family().id),
        many => Cells::keys(many.iter().map(|e| e.family().id)),
    };
    // INSERT depends on which prims exist when it runs, FORCE on which
    // schema each prim carries then: order them with every mutation of
    // their attributes (in submission order), so what they decide cannot
    // be changed under them by a mutation running alongside.
    let order = if mode == PrimMode::Insert || entries.iter().any(Entry::forces) {
        Order::Barrier { ordinal, cells }
    } else {
        Order::Mutation { ordinal, cells }
    };
    let spec = OpSpec::new(order).using(q.key).labelled(call).with_bytes(|| entries.iter().map(Entry::byte_len).sum());
    let small = entries
        .iter()
        .try_fold(0u64, |sum, e| match e {
            Entry::Ready(p) => p.transport.present_bytes().map(|b| sum + b),
            Entry::Deferred { .. } => None,
        })
        .is_some_and(|bytes| bytes <= INLINE_WRITE_BYTES);
    if small { spec.on_submitter_when_ready() } else { spec }
}

/// A write's bytes in a buffer of the column's, with array rows' byte
/// offsets.
type Gathered = (Buffer, Option<Arc<[u64]>>);

/// The selected rows of a payload in element order, uploaded into the
/// column's memory by its backend: one copy for a contiguous fixed
/// payload, one per selected row otherwise; array rows come with their
/// byte offsets.
fn gather(transport: &Transport, plan: &ElementPlan, column: &Column) -> std::result::Result<Gathered, AllocFailed> {
    let memory = &column.memory;
    if transport.kind() == ValueKind::Fixed {
        let row_bytes = column.row_bytes;
        if let (ElementPlan::Identity { .. }, Some(src)) = (plan, transport.leading(plan_len(plan))) {
            // `src` is the payload's own memory: its length is addressable.
            return Ok((memory.upload(src)?, None));
        }
        let buf = match transport.uniform() {
            Some(src) => {
                memory.upload_rows(src, row_bytes, plan.selected_count(), plan.selected().map(|(_, r)| r as usize))?
            }
            None => {
                let bytes = plan.selected_count().checked_mul(row_bytes).ok_or(AllocFailed { bytes: usize::MAX })?;
                memory.upload_ranges(plan.selected().map(|(_, r)| transport.row(r)), bytes)?
            }
        };
        return Ok((buf, None));
    }
    let mut offsets = Vec::new();
    offsets.try_reserve_exact(plan.selected_count() + 1).map_err(|_| AllocFailed { bytes: usize::MAX })?;
    let mut end = 0u64;
    offsets.push(end);
    for (_, r) in plan.selected() {
        // Rows are the payload's own memory (or gathered copies of it), so
        // their sum is addressable.
        end += transport.row(r).len() as u64;
        offsets.push(end);
    }
    let buf = memory.upload_ranges(plan.selected().map(|(_, r)| transport.row(r)), end as usize)?;
    Ok((buf, Some(offsets.into())))
}

fn plan_len(plan: &ElementPlan) -> usize {
    match plan {
        ElementPlan::Identity { count } => *count as usize,
        _ => 0,
    }
}

/// Refuses, with NOT_SUPPORTED, an element type no attribute can be stored
/// with (writes and map sessions alike).
pub(crate) fn check_storable(dtype: ovstage_types::DType, ctx: &Ctx<'_>) -> Result<()> {
    if dtype.is_storable() {
        return Ok(());
    }
    Err(ctx.err(
        Status::NotSupported,
        format!(
            "dtype {dtype} is not supported for attributes (supported: {}, with any lane count)",
            ovstage_types::DType::STORABLE
        ),
    ))
}
