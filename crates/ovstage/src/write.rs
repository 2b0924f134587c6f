//! Copy-in writes: validation at enqueue, application on a lane.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use ovstage_sched::{Cells, Failure, Job, OpSpec, Order};
use ovstage_types::{
    AdmissionPolicy, AttributeMode, Error, OpId, Ordinal, PrimMode, PrimPath, QueryHandle, Result, Semantic, Status,
};
use smallvec::SmallVec;

use crate::api::{AttrRef, AttributeWrite, WriteData};
use crate::config::UnsealedOverflow;
use crate::family::{Family, UnsealedLog, prim_bit};
use crate::metadata::{self, Reserved};
use crate::query::QueryState;
use crate::schema::{Storage, ValueKind};
use crate::stage::{Stage, StageInner, lock};
use crate::store::backend::StorageBackend;
use crate::store::buf::{AllocFailed, Buf};
use crate::store::column::{Column, MergeBound, Part, RowMap};
use crate::store::rows::RowSet;
use crate::store::rows::Rows;
use crate::transport::{self, ElementPlan, Transport, check_semantic};

/// One entry of a write op: validated, or waiting for its query's prims.
/// One value per entry of a write op: almost always one attribute, so kept
/// inline (a write op allocates no per-entry vectors).
type PerEntry<T> = SmallVec<[T; 1]>;

pub(crate) enum Entry {
    Ready(PreparedWrite),
    Deferred { family: Arc<Family>, reserved: Option<Reserved>, data: WriteData },
}

impl Entry {
    fn family(&self) -> &Arc<Family> {
        match self {
            Entry::Ready(p) => &p.family,
            Entry::Deferred { family, .. } => family,
        }
    }
}

/// One validated entry of a write op.
pub(crate) struct PreparedWrite {
    family: Arc<Family>,
    storage: Storage,
    semantic: Semantic,
    transport: Transport,
    plan: ElementPlan,
}

/// The prims a mutation changes, as a list and as a bitset over prim
/// indices (borrowed from the query when it is the whole query); both
/// `None` when the query is not resolved yet (every prim, for admission).
pub(crate) struct Targets<'a> {
    pub(crate) prims: Option<Arc<[PrimPath]>>,
    pub(crate) bits: Option<Cow<'a, RowSet>>,
}

impl<'a> Targets<'a> {
    pub(crate) fn whole(q: &'a QueryState) -> Targets<'a> {
        Targets { prims: q.ready().map(|r| r.prims.clone()), bits: q.prim_bits().map(Cow::Borrowed) }
    }

    fn subset(prims: Vec<PrimPath>) -> Targets<'a> {
        // Sized once for the highest bit rather than grown insert by insert.
        let mut bits = RowSet::new();
        if let Some(max) = prims.iter().map(|p| prim_bit(*p)).max() {
            bits.insert(max);
        }
        prims.iter().for_each(|p| bits.insert(prim_bit(*p)));
        Targets { prims: Some(prims.into()), bits: Some(Cow::Owned(bits)) }
    }

    /// The prims, once known.
    pub(crate) fn list(&self) -> &[PrimPath] {
        self.prims.as_deref().unwrap_or(&[])
    }

    /// Whether these are all of the query's prims.
    pub(crate) fn whole_of(&self, q: &QueryState) -> bool {
        match (&self.prims, q.ready()) {
            (Some(mine), Some(r)) => Arc::ptr_eq(mine, &r.prims),
            _ => false,
        }
    }
}

impl PreparedWrite {
    /// Whether this entry writes every prim of a query of `n` prims.
    fn writes_all(&self, n: usize) -> bool {
        matches!(self.plan, ElementPlan::Identity { count } if count as usize == n)
    }

    /// The prims this entry writes, in element order, out of the query's
    /// `prims`.
    fn selected_prims(&self, prims: &[PrimPath]) -> Vec<PrimPath> {
        let mut list = Vec::with_capacity(self.plan.selected_count());
        list.extend(self.plan.selected().map(|(i, _)| prims[i]));
        list
    }

    /// The prims this entry writes (the query's own list when it writes
    /// them all).
    fn targets<'q>(&self, q: &'q QueryState) -> Targets<'q> {
        let prims = q.prims();
        if self.writes_all(prims.len()) { Targets::whole(q) } else { Targets::subset(self.selected_prims(prims)) }
    }

    /// The prims this entry writes, without the bitset admission needs.
    fn target_list(&self, q: &QueryState) -> Option<Arc<[PrimPath]>> {
        let prims = q.prims();
        if self.writes_all(prims.len()) {
            q.ready().map(|r| r.prims.clone())
        } else {
            Some(self.selected_prims(prims).into())
        }
    }
}

/// Context of an error: the call, the attribute and the ordinal.
pub(crate) struct Ctx<'a> {
    pub(crate) call: &'static str,
    pub(crate) attribute: &'a str,
    pub(crate) ordinal: u64,
}

impl Ctx<'_> {
    pub(crate) fn err(&self, status: Status, message: impl std::fmt::Display) -> Error {
        Error::new(status, format!("{}: {message}", self.call))
            .with_attribute(self.attribute)
            .with_ordinal(self.ordinal)
    }
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
    /// The effective submitted floor of a family.
    pub(crate) fn submitted_floor(&self, family: &Family) -> u64 {
        family.own_floor_submitted.load(Ordering::Acquire).max(self.floors.base_submitted.load(Ordering::Acquire))
    }

    /// Versions of a family's columns below this may be merged: above the
    /// submitted floor and below every mutation still to run (so nothing
    /// lands inside a merged span out of ordinal order). The submitted
    /// floor, not the committed one: a read enqueued after an advance to F
    /// reads at F once the advance runs, so versions up to F must stay
    /// exact from the moment the advance is accepted.
    pub(crate) fn merge_bound(&self, family: &Family) -> MergeBound {
        let lowest = [family.pending.lowest(), self.floors.pending_all.lowest()].into_iter().flatten().min();
        MergeBound { floor: self.submitted_floor(family), below: lowest.unwrap_or(u64::MAX) }
    }

    /// The effective committed floor of a family.
    pub(crate) fn committed_floor(&self, family: &Family) -> u64 {
        family.own_floor_committed.load(Ordering::Acquire).max(self.floors.base_committed.load(Ordering::Acquire))
    }

    /// Run under the scheduler's ordering lock when a mutation at `ordinal`
    /// is submitted: rejects ordinals at or below a submitted floor and, per
    /// the admission policy, ordinals below (or, strictly, at) a change
    /// already accepted for one of its cells; then records the mutation as
    /// unsealed and pending. Admission is decided here, in submission order,
    /// so mutations at different ordinals may then run in any order.
    pub(crate) fn admit_mutation(
        &self,
        entries: &[(&Arc<Family>, &Targets<'_>)],
        ordinal: u64,
        call: &'static str,
    ) -> Result<()> {
        for (f, _) in entries {
            let floor = self.submitted_floor(f);
            if ordinal <= floor {
                return Err(Error::new(
                    Status::WriteFloorViolation,
                    format!("{call}: ordinal {ordinal} is at or below the write floor {floor}"),
                )
                .with_attribute(&*f.name_text)
                .with_ordinal(ordinal));
            }
        }
        for (f, t) in entries {
            let all = lock(&self.floors.unsealed_all);
            self.admission(&[&f.unsealed(), &all], t, ordinal)
                .map_err(|(at, prim)| self.conflict(call, &f.name_text, ordinal, at, prim))?;
        }
        for (f, _) in entries {
            self.check_unsealed_room(f, ordinal, call)?;
        }
        for (f, t) in entries {
            f.unsealed().push(ordinal, t.bits.as_deref());
            f.pending.add(ordinal);
        }
        Ok(())
    }

    /// Under [`UnsealedOverflow::Reject`], refuses (with `QUEUE_FULL`) a
    /// mutation at `ordinal` that would give `family` more than
    /// `max_versions` distinct unsealed ordinals: its columns then never
    /// merge, and every ordinal stays readable once sealed. Run under the
    /// ordering lock, where the unsealed logs and submitted floors change.
    pub(crate) fn check_unsealed_room(&self, family: &Family, ordinal: u64, call: &'static str) -> Result<()> {
        if self.config.unsealed_overflow != UnsealedOverflow::Reject {
            return Ok(());
        }
        let floor = self.submitted_floor(family);
        let all = lock(&self.floors.unsealed_all);
        let held = family.unsealed().distinct_with(&all, floor, ordinal);
        // At least one: a limit of 0 would refuse every mutation.
        let limit = self.config.max_versions.max(1);
        if held <= limit {
            return Ok(());
        }
        Err(Error::new(
            Status::QueueFull,
            format!(
                "{call}: ordinal {ordinal} would make {held} distinct unsealed ordinals of this attribute above its write floor {floor}, over the limit of {limit} (max_versions; unsealed overflow policy REJECT): advance the write floor to seal earlier ordinals, then submit again"
            ),
        )
        .with_attribute(&*family.name_text)
        .with_ordinal(ordinal))
    }

    /// The accepted change in `lists` that blocks a change of `targets` at
    /// `ordinal` under the admission policy.
    pub(crate) fn admission(
        &self,
        logs: &[&UnsealedLog],
        targets: &Targets<'_>,
        ordinal: u64,
    ) -> std::result::Result<(), (u64, Option<PrimPath>)> {
        let after = match self.config.admission {
            AdmissionPolicy::FloorOnly => return Ok(()),
            AdmissionPolicy::NonDecreasing => ordinal,
            AdmissionPolicy::StrictlyIncreasing => ordinal - 1,
        };
        match logs.iter().find_map(|l| l.overlap(after, u64::MAX, targets.bits.as_deref())) {
            Some(hit) => Err(hit),
            None => Ok(()),
        }
    }

    pub(crate) fn conflict(
        &self,
        call: &'static str,
        attribute: &str,
        ordinal: u64,
        at: u64,
        prim: Option<PrimPath>,
    ) -> Error {
        let policy = self.config.admission;
        let relation = if policy == AdmissionPolicy::StrictlyIncreasing { "not above" } else { "below" };
        let err = Error::new(
            Status::WriteFloorViolation,
            format!(
                "{call}: ordinal conflict: ordinal {ordinal} is {relation} the change at {at} already accepted for this cell (admission {})",
                policy_name(policy)
            ),
        )
        .with_attribute(attribute)
        .with_ordinal(ordinal);
        match prim {
            Some(p) => err.with_prim(self.describe(p)),
            None => err,
        }
    }

    fn enqueue_write<'w>(
        self: &Arc<Self>,
        query: QueryHandle,
        writes: impl ExactSizeIterator<Item = AttributeWrite<'w>>,
        ordinal: u64,
        mode: PrimMode,
        call: &'static str,
    ) -> Result<OpId> {
        let q = self.query(query, call)?;
        if writes.len() == 0 {
            return Err(Error::invalid_argument(format!("{call}: no attributes to write")).with_ordinal(ordinal));
        }
        let mut entries: PerEntry<Entry> = PerEntry::with_capacity(writes.len());
        for w in writes {
            let token = self.attr_token(w.attribute, call)?;
            let family = self.family(token)?;
            let name = family.name_text.clone();
            let ctx = Ctx { call, attribute: &name, ordinal };
            if entries.iter().any(|e| Arc::ptr_eq(e.family(), &family)) {
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
            // With the query's prims known, everything is checked now;
            // through a filter query still to run, when the write runs.
            entries.push(match q.ready() {
                Some(_) => Entry::Ready(self.prepare_entry(&q, family, reserved, w.data, &ctx)?),
                None => Entry::Deferred { family, reserved, data: w.data },
            });
        }
        let cells = Cells::keys(entries.iter().map(|e| e.family().id));
        // INSERT depends on which prims exist when it runs: order it with
        // every mutation of its attributes.
        let order = match mode {
            PrimMode::Upsert => Order::Mutation { ordinal, cells },
            PrimMode::Insert => Order::Barrier { ordinal, cells },
        };
        let spec = OpSpec::new(order).using(q.key);
        let families: PerEntry<Arc<Family>> = entries.iter().map(|e| e.family().clone()).collect();
        let targets: PerEntry<Targets<'_>> = entries
            .iter()
            .map(|e| match e {
                Entry::Ready(p) => p.targets(&q),
                Entry::Deferred { .. } => Targets { prims: None, bits: None },
            })
            .collect();
        let admitted: PerEntry<(&Arc<Family>, &Targets<'_>)> = families.iter().zip(&targets).collect();
        // The job reuses the target lists admission computed.
        let lists: PerEntry<Option<Arc<[PrimPath]>>> = targets.iter().map(|t| t.prims.clone()).collect();
        let (owner, job_q, families_done) = (self.clone(), q.clone(), families.clone());
        let job: Job = Box::new(move || {
            let result = owner.apply_writes(&job_q, entries, lists, ordinal, mode, call);
            for f in &families_done {
                f.pending.remove(ordinal);
            }
            result
        });
        self.sched.submit_checked(&spec, job, || self.admit_mutation(&admitted, ordinal, call))
    }

    fn prepare_entry(
        &self,
        q: &QueryState,
        family: Arc<Family>,
        reserved: Option<Reserved>,
        data: WriteData,
        ctx: &Ctx<'_>,
    ) -> Result<PreparedWrite> {
        let WriteData { values, selection, semantic, attribute_mode } = data;
        if attribute_mode == AttributeMode::Force {
            return Err(ctx.err(
                Status::NotSupported,
                "ATTRIBUTE_MODE_FORCE (schema replacement) is not implemented in this release; delete the attribute and write it again at a later ordinal",
            ));
        }
        let (transport, plan) =
            transport::plan(q.prims().len(), values, selection).map_err(|m| ctx.err(Status::InvalidArgument, m))?;
        let storage = transport.storage();
        let semantic = match reserved {
            Some(r) => metadata::check_write(r, ctx.call, storage, semantic)?,
            None => semantic,
        };
        check_semantic(semantic, storage).map_err(|e| ctx.err(e.status(), e.message()))?;
        let entry = PreparedWrite { family, storage, semantic, transport, plan };
        // Schema conflicts provable from committed state (nothing pending on
        // the attribute could change it) are reported now.
        if entry.family.pending.is_empty() && self.floors.pending_all.is_empty() {
            self.check_schema(&entry.family, entry.storage, entry.semantic, entry.targets(q).list(), ctx)?;
        }
        Ok(entry)
    }

    /// Fails when a target prim carries the attribute with another storage,
    /// or the column's role conflicts with the written semantic.
    pub(crate) fn check_schema(
        &self,
        family: &Family,
        storage: Storage,
        semantic: Semantic,
        targets: &[PrimPath],
        ctx: &Ctx<'_>,
    ) -> Result<()> {
        for column in family.columns() {
            if column.storage == storage {
                if !column.semantic_fits(semantic) {
                    return Err(ctx.err(
                        Status::InvalidArgument,
                        format!(
                            "the attribute has semantic {}; this write declares {} (delete the attribute before changing its semantic)",
                            column.semantic().name(),
                            semantic.name()
                        ),
                    ));
                }
                continue;
            }
            let guard = column.lock();
            if let Some(p) = targets.iter().find(|p| guard.row_of(**p).is_some_and(|r| guard.live_at_latest(r))) {
                return Err(ctx
                    .err(
                        Status::InvalidArgument,
                        format!(
                            "the prim has this attribute as {}; this write is {} (delete the attribute before changing its type)",
                            column.storage, storage
                        ),
                    )
                    .with_prim(self.describe(*p)));
            }
        }
        Ok(())
    }

    /// Executes a write op: checks every entry, then applies them. `lists`
    /// holds each entry's target prims as computed at enqueue (`None`
    /// where the query was not resolved then).
    fn apply_writes(
        &self,
        q: &QueryState,
        entries: PerEntry<Entry>,
        lists: PerEntry<Option<Arc<[PrimPath]>>>,
        ordinal: u64,
        mode: PrimMode,
        call: &'static str,
    ) -> std::result::Result<(), Failure> {
        q.at_execution()?;
        let mut prepared: PerEntry<PreparedWrite> = PerEntry::with_capacity(entries.len());
        let mut targets_per_entry: PerEntry<Targets<'_>> = PerEntry::with_capacity(entries.len());
        for (e, list) in entries.into_iter().zip(lists) {
            let p = match e {
                Entry::Ready(p) => p,
                Entry::Deferred { family, reserved, data } => {
                    let name = family.name_text.clone();
                    let ctx = Ctx { call, attribute: &name, ordinal };
                    self.prepare_entry(q, family, reserved, data, &ctx)?
                }
            };
            // Execution needs the list only (admission, which needs the
            // bitset, is decided).
            let prims = list.or_else(|| p.target_list(q));
            targets_per_entry.push(Targets { prims, bits: None });
            prepared.push(p);
        }
        let entries = &prepared[..];
        let mut columns: PerEntry<Arc<Column>> = PerEntry::with_capacity(entries.len());
        for (e, targets) in entries.iter().zip(&targets_per_entry) {
            let ctx = Ctx { call, attribute: &e.family.name_text, ordinal };
            self.check_schema(&e.family, e.storage, e.semantic, targets.list(), &ctx)?;
            columns.push(e.family.column_for(e.storage, self.config.column_limits()));
        }
        let named: PerEntry<(&str, &Targets<'_>)> =
            entries.iter().zip(&targets_per_entry).map(|(e, t)| (&*e.family.name_text, t)).collect();
        self.create_prims(q, &named, ordinal, mode, call)?;
        for ((e, targets), column) in entries.iter().zip(&targets_per_entry).zip(&columns) {
            let ctx = Ctx { call, attribute: &e.family.name_text, ordinal };
            self.commit_entry(q, e, targets.list(), column, ordinal, &ctx)?;
        }
        Ok(())
    }

    /// INSERT checks, then creation of the missing prims, for each
    /// `(attribute name, targets)`; every target is one of `q`'s prims.
    pub(crate) fn create_prims(
        &self,
        q: &QueryState,
        targets: &[(&str, &Targets<'_>)],
        ordinal: u64,
        mode: PrimMode,
        call: &'static str,
    ) -> Result<()> {
        let mut table = lock(&self.prims);
        // Steady state: the whole query was seen live and no prim has been
        // removed since, so there is nothing to create (targets are always
        // some of the query's prims).
        let known_live = q.known_live(table.removals());
        let mut create: Vec<PrimPath> = Vec::new();
        for (name, targets) in targets {
            if mode == PrimMode::Upsert && known_live {
                continue;
            }
            let ctx = Ctx { call, attribute: name, ordinal };
            for p in targets.list() {
                if table.is_live(*p) {
                    if mode == PrimMode::Insert {
                        return Err(ctx
                            .err(Status::PrimNotFound, "INSERT target prim already exists")
                            .with_prim(self.describe(*p)));
                    }
                } else {
                    create.push(*p);
                }
            }
        }
        for p in create {
            if !table.is_live(p) {
                table.create(p, self.paths.parent(p).ok().flatten());
            }
        }
        if targets.iter().any(|(_, t)| t.whole_of(q)) {
            q.mark_live(table.removals());
        }
        Ok(())
    }

    fn commit_entry(
        &self,
        q: &QueryState,
        e: &PreparedWrite,
        targets: &[PrimPath],
        column: &Arc<Column>,
        ordinal: u64,
        ctx: &Ctx<'_>,
    ) -> Result<()> {
        let (data, offsets) = gather(&e.transport, &e.plan, column).map_err(|e| ctx.err(Status::OutOfMemory, e))?;
        let whole_query = matches!(e.plan, ElementPlan::Identity { count } if count as usize == q.prims().len());
        let mut guard = column.lock();
        let rows = match whole_query.then(|| q.row_map(column, &guard)) {
            Some(RowMap::Run { start, len }) => Rows::Run { start, len },
            _ => guard.assign_rows(targets.iter().copied()),
        };
        if let Err(role) = column.adopt_semantic(e.semantic) {
            return Err(ctx.err(
                Status::InvalidArgument,
                format!("the attribute has semantic {}; this write declares {}", role.name(), e.semantic.name()),
            ));
        }
        let part = match offsets {
            None => Part::Write { rows, data: Arc::new(data) },
            Some(offsets) => Part::WriteArray { rows, data: Arc::new(data), offsets },
        };
        guard.publish(ordinal, part, self.merge_bound(&e.family));
        Ok(())
    }
}

/// A write's bytes in a buffer of the column's, with array rows' byte
/// offsets.
type Gathered = (Buf, Option<Arc<[u64]>>);

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
            return Ok((memory.upload_rows(src, src.len(), 1, std::iter::once(0))?, None));
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

pub(crate) fn policy_name(policy: AdmissionPolicy) -> &'static str {
    match policy {
        AdmissionPolicy::FloorOnly => "FLOOR_ONLY",
        AdmissionPolicy::NonDecreasing => "NONDECREASING",
        AdmissionPolicy::StrictlyIncreasing => "STRICTLY_INCREASING",
    }
}
