//! The mutation pipeline: the one protocol every write, map session, delete
//! and clone follows, so feature modules depend on it (and on the stage,
//! the families, the queries and the store), never on one another.
//!
//! 1. **Admission** ([`StageInner::submit_mutation`]) runs under the
//!    scheduler's ordering lock, inside `submit_with`'s build step: the
//!    floor check, the overlap check against the unsealed logs (per the
//!    admission policy), the `Reject` overflow policy's room check; then
//!    it records the change as unsealed and issues a [`Ticket`].
//! 2. **The job is built by admission**, with the ticket and what
//!    admission decided (the floors it was admitted under) moved into it:
//!    nothing reaches a job through a shared slot filled in later.
//! 3. **The ticket** keeps the mutation's ordinal pending (no column merges
//!    at or above it) until it is dropped: by the job once it has
//!    published (or failed), by a map session when it ends, or with a job
//!    that never runs. Nothing else adds or removes pending ordinals.
//! 4. **One commit path** ([`StageInner::commit`]): rows of a column, a
//!    payload, the semantic declared, published at the ordinal under the
//!    family's merge bound. It is the only caller of `ColumnGuard::publish`.
//!
//! Checks shared by several kinds (schema, INSERT, FORCE, floors) live here
//! too, so their messages are written once.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ovstage_sched::{Failure, IntoJob, Job, OpSpec};
use ovstage_types::{
    AdmissionPolicy, AttributeMode, Error, ErrorKind, OpId, PrimMode, PrimPath, Result, Semantic, Status,
};
use smallvec::SmallVec;

use crate::config::UnsealedOverflow;
use crate::family::{Family, UnsealedLog, prim_bit};
use crate::schema::Storage;
use crate::stage::{StageInner, lock};
use crate::state::Held;
use crate::state::QueryState;
pub(crate) use crate::state::{PerEntry, Ticket};
use crate::store::backend::Buffer;
use crate::store::column::{Column, Limits, Part, RowMap};
use crate::store::rows::{RowSet, Rows};

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

/// The prims a mutation changes, as a list and as a bitset over prim
/// indices (the query's own when it is the whole query: the unsealed log
/// shares it instead of copying it); both `None` when the query is not
/// resolved yet (every prim, for admission).
pub(crate) struct Targets {
    pub(crate) prims: Option<Arc<[PrimPath]>>,
    pub(crate) bits: Option<Arc<RowSet>>,
}

impl Targets {
    /// Every prim of the query.
    pub(crate) fn whole(q: &QueryState) -> Targets {
        Targets { prims: q.ready().map(|r| r.prims.clone()), bits: q.prim_bits().cloned() }
    }

    /// Prims not known yet (a query still to run).
    pub(crate) fn unknown() -> Targets {
        Targets { prims: None, bits: None }
    }

    /// Some prims, with the bitset admission needs.
    pub(crate) fn subset(prims: Vec<PrimPath>) -> Targets {
        // Built in one go: sized once for the highest bit, or sparse when
        // the prims are few for that size.
        let mut bits = RowSet::new();
        bits.insert_all(&prims.iter().map(|p| prim_bit(*p)).collect::<Vec<_>>());
        Targets { prims: Some(prims.into()), bits: Some(Arc::new(bits)) }
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

/// What a mutation changes, for admission.
pub(crate) enum Reach<'a> {
    /// These attributes' cells of these prims (writes, map sessions,
    /// attribute deletes).
    Families(&'a [(&'a Arc<Family>, &'a Targets)]),
    /// Every attribute of the query's prims (a whole-prim delete; taken
    /// under the ordering lock, where a filter query may just have
    /// resolved).
    Prims(&'a QueryState),
    /// Every attribute of prims known only when it runs (a clone): it is
    /// not checked for overlaps now (it checks the cells it copies to when
    /// it runs) but counts as changing every prim until sealed.
    Unknown,
}

impl Ticket {
    /// The mutation's ordinal.
    pub(crate) fn ordinal(&self) -> u64 {
        self.ordinal
    }

    /// Takes back what admission logged for an attribute mutation that
    /// failed before publishing anything: a later mutation below its
    /// ordinal is not below a change of its cells any more. (Whole-prim
    /// mutations keep their entries until sealed.)
    pub(crate) fn retract(&self) {
        if let Held::Families(families) = &self.held {
            families.iter().for_each(|f| f.unsealed().retract(self.ordinal));
        }
    }

    /// The submitted floor of `family` when the mutation was admitted
    /// (whole-prim mutations; attribute mutations were checked against it
    /// at admission).
    pub(crate) fn admitted_floor(&self, family: &Family) -> u64 {
        match &self.held {
            Held::All { floors, base, .. } => {
                floors.iter().find(|(id, _)| *id == family.id).map_or(*base, |(_, floor)| *floor)
            }
            Held::Families(_) => 0,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        match &self.held {
            Held::Families(families) => families.iter().for_each(|f| f.pending.remove(self.ordinal)),
            Held::All { pending, .. } => pending.remove(self.ordinal),
        }
    }
}

/// What [`StageInner::plan_schema`] decided for one write or map commit.
pub(crate) struct SchemaPlan {
    storage: Storage,
    semantic: Semantic,
    /// The column taking the values; `None`: a new one, of the written
    /// schema.
    dest: Option<Arc<Column>>,
    /// Cells a `FORCE` ends: rows of other schemas' columns.
    pub(crate) replaced: Vec<(Arc<Column>, Rows)>,
}

impl SchemaPlan {
    /// The column taking the values (created when the plan found none),
    /// taken out of the plan: no second handle to count up and down.
    pub(crate) fn take_column(&mut self, family: &Family, limits: Limits) -> Arc<Column> {
        match self.dest.take() {
            Some(c) => c,
            None => family.column_for(self.storage, self.semantic, limits),
        }
    }
}

/// A part's rows in its column.
pub(crate) enum RowsOf<'a> {
    /// Assigned while checking every column first (deletes, clones).
    Assigned(Rows),
    /// The rows of `prims`, some of `q`'s (`whole`: all of them, in its
    /// order, so the query's cached row map serves when it is one run).
    Prims { q: &'a QueryState, prims: &'a [PrimPath], whole: bool },
}

/// What a part holds.
pub(crate) enum Payload {
    /// Values: fixed rows back to back, or arrays with each row's byte
    /// offset.
    Values { data: Buffer, offsets: Option<Arc<[u64]>> },
    /// Tombstones.
    Delete,
}

/// A mutation's work as admission leaves it: the caller's job, or the
/// failure of an ordinal conflict (rare, so boxed).
enum Admitted<J> {
    Job(J),
    Conflict(Job),
}

impl<J: IntoJob> IntoJob for Admitted<J> {
    fn into_job(self) -> Job {
        match self {
            Admitted::Job(job) => job.into_job(),
            Admitted::Conflict(job) => job,
        }
    }

    fn run(self) -> std::result::Result<(), Failure> {
        match self {
            Admitted::Job(job) => job.run(),
            Admitted::Conflict(job) => job(),
        }
    }
}

impl StageInner {
    /// Submits a mutation: admission of `reach` at `ordinal` runs under the
    /// ordering lock and issues the ticket, and `job` builds the op's job
    /// around it (the job drops the ticket once it has published).
    ///
    /// An ordinal conflict with changes already accepted is not an enqueue
    /// error: as the published library does, the op is accepted and fails
    /// when it runs (`OP_FAILED` at wait, the conflict as its error),
    /// changing nothing.
    pub(crate) fn submit_mutation<J: IntoJob>(
        &self,
        spec: &OpSpec,
        reach: Reach<'_>,
        ordinal: u64,
        call: &'static str,
        job: impl FnOnce(Ticket) -> J,
    ) -> Result<OpId> {
        self.submit_mutation_or(spec, reach, ordinal, call, job, |_| {})
    }

    /// [`StageInner::submit_mutation`], with `conflicted` called by the op
    /// when it fails with an ordinal conflict, before it completes (a map
    /// session keeps the error as its setup's, so a fetch reports it after
    /// the op is released).
    pub(crate) fn submit_mutation_or<J: IntoJob>(
        &self,
        spec: &OpSpec,
        reach: Reach<'_>,
        ordinal: u64,
        call: &'static str,
        job: impl FnOnce(Ticket) -> J,
        conflicted: impl FnOnce(&Error) + Send + 'static,
    ) -> Result<OpId> {
        self.sched.submit_with(spec, || match self.admit(reach, ordinal, call) {
            Ok(ticket) => Ok(Admitted::Job(job(ticket))),
            Err(e) if e.kind() == ErrorKind::OrdinalConflict => Ok(Admitted::Conflict(Box::new(move || {
                conflicted(&e);
                Err(Failure::from(e))
            }))),
            Err(e) => Err(e),
        })
    }

    /// [`StageInner::submit_mutation`] of a mutation of one attribute whose
    /// admission reads the family and targets `reach` finds in `held`,
    /// which `job` then takes over: admission borrows what the job keeps
    /// instead of copies of its handles (atomic read-modify-writes, each
    /// a few percent of a small write).
    pub(crate) fn submit_one<T, J: IntoJob>(
        &self,
        spec: &OpSpec,
        held: T,
        reach: impl FnOnce(&T) -> (&Arc<Family>, &Targets),
        ordinal: u64,
        call: &'static str,
        job: impl FnOnce(Ticket, T) -> J,
    ) -> Result<OpId> {
        self.sched.submit_with(spec, || {
            let admitted = {
                let (family, targets) = reach(&held);
                self.admit(Reach::Families(&[(family, targets)]), ordinal, call)
            };
            match admitted {
                Ok(ticket) => Ok(Admitted::Job(job(ticket, held))),
                Err(e) if e.kind() == ErrorKind::OrdinalConflict => {
                    Ok(Admitted::Conflict(Box::new(move || Err(Failure::from(e)))))
                }
                Err(e) => Err(e),
            }
        })
    }

    /// Rejects ordinals at or below a submitted floor and, per the
    /// admission policy, ordinals below (or, strictly, at) a change already
    /// accepted for one of its cells; under the `Reject` overflow policy,
    /// ordinals that would be one too many unsealed ones. Then records the
    /// mutation as unsealed and pending. Decided here, in submission order,
    /// mutations at different ordinals may then run in any order.
    fn admit(&self, reach: Reach<'_>, ordinal: u64, call: &'static str) -> Result<Ticket> {
        let entries = match reach {
            Reach::Families(entries) => entries,
            Reach::Prims(q) => return self.admit_all(Some(&Targets::whole(q)), ordinal, call),
            Reach::Unknown => return self.admit_all(None, ordinal, call),
        };
        if let [(f, t)] = entries {
            // One attribute (the usual write): its log locked once, for the
            // checks and the record.
            self.check_floor(Some(f), ordinal, call, false)?;
            let all = lock(&self.floors.unsealed_all);
            let mut log = f.unsealed();
            self.overlap(&[&log, &all], t, ordinal)
                .map_err(|(at, prim)| self.conflict(call, &f.name_text, ordinal, at, prim))?;
            self.check_unsealed_room_in(f, &log, &all, ordinal, call)?;
            drop(all);
            log.push(ordinal, t.bits.as_ref());
            drop(log);
            f.pending.add(ordinal);
            return Ok(Ticket { ordinal, held: Held::Families(smallvec::smallvec![Arc::clone(f)]) });
        }
        for (f, _) in entries {
            self.check_floor(Some(f), ordinal, call, false)?;
        }
        for (f, t) in entries {
            let all = lock(&self.floors.unsealed_all);
            self.overlap(&[&f.unsealed(), &all], t, ordinal)
                .map_err(|(at, prim)| self.conflict(call, &f.name_text, ordinal, at, prim))?;
        }
        for (f, _) in entries {
            self.check_unsealed_room(f, ordinal, call)?;
        }
        for (f, t) in entries {
            f.unsealed().push(ordinal, t.bits.as_ref());
            f.pending.add(ordinal);
        }
        Ok(Ticket { ordinal, held: Held::Families(entries.iter().map(|(f, _)| Arc::clone(f)).collect()) })
    }

    /// Admission of a mutation of every attribute of `targets` (`None`:
    /// prims known only when it runs).
    fn admit_all(&self, targets: Option<&Targets>, ordinal: u64, call: &'static str) -> Result<Ticket> {
        self.check_floor(None, ordinal, call, false)?;
        let base = self.floors.base_submitted.load(Ordering::Acquire);
        let families = self.all_families();
        if let Some(targets) = targets {
            let all = lock(&self.floors.unsealed_all);
            for f in &families {
                self.overlap(&[&f.unsealed(), &all], targets, ordinal)
                    .map_err(|(at, prim)| self.conflict(call, &f.name_text, ordinal, at, prim))?;
            }
            if let Err((at, prim)) = self.overlap(&[&all], targets, ordinal) {
                return Err(self.conflict(call, "(all)", ordinal, at, prim));
            }
        }
        for f in &families {
            self.check_unsealed_room(f, ordinal, call)?;
        }
        let floors = families.iter().map(|f| (f.id, self.floors.submitted(f))).collect();
        lock(&self.floors.unsealed_all).push(ordinal, targets.and_then(|t| t.bits.as_ref()));
        self.floors.pending_all.add(ordinal);
        Ok(Ticket { ordinal, held: Held::All { pending: self.floors.pending_all.clone(), floors, base } })
    }

    /// Fails when `ordinal` is at or below the submitted floor of `family`
    /// (the base floor with `None`); `session`: it is a map session's
    /// ordinal, admitted before the floor moved.
    pub(crate) fn check_floor(
        &self,
        family: Option<&Family>,
        ordinal: u64,
        call: &'static str,
        session: bool,
    ) -> Result<()> {
        let floor = match family {
            Some(f) => self.floors.submitted(f),
            None => self.floors.base_submitted.load(Ordering::Acquire),
        };
        if ordinal > floor {
            return Ok(());
        }
        let message = if session {
            format!("{call}: the session's ordinal {ordinal} is now at or below the write floor {floor}")
        } else {
            format!("{call}: ordinal {ordinal} is at or below the write floor {floor}")
        };
        let err = Error::new(Status::WriteFloorViolation, message);
        Err(match family {
            Some(f) => err.with_attribute(&*f.name_text),
            None => err,
        }
        .with_ordinal(ordinal))
    }

    /// Under [`UnsealedOverflow::Reject`], refuses (with `QUEUE_FULL`) a
    /// mutation at `ordinal` that would give `family` more than
    /// `max_versions` distinct unsealed ordinals: its columns then never
    /// merge, and every ordinal stays readable once sealed.
    fn check_unsealed_room(&self, family: &Family, ordinal: u64, call: &'static str) -> Result<()> {
        if self.config.unsealed_overflow != UnsealedOverflow::Reject {
            return Ok(());
        }
        let all = lock(&self.floors.unsealed_all);
        self.check_unsealed_room_in(family, &family.unsealed(), &all, ordinal, call)
    }

    /// [`StageInner::check_unsealed_room`] with the family's log (`log`) and
    /// the stage-wide one (`all`) locked by the caller.
    fn check_unsealed_room_in(
        &self,
        family: &Family,
        log: &UnsealedLog,
        all: &UnsealedLog,
        ordinal: u64,
        call: &'static str,
    ) -> Result<()> {
        if self.config.unsealed_overflow != UnsealedOverflow::Reject {
            return Ok(());
        }
        let floor = self.floors.submitted(family);
        let held = log.distinct_with(all, floor, ordinal);
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

    /// The accepted change in `logs` that blocks a change of `targets` at
    /// `ordinal` under the admission policy.
    fn overlap(
        &self,
        logs: &[&UnsealedLog],
        targets: &Targets,
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

    fn conflict(&self, call: &'static str, attribute: &str, ordinal: u64, at: u64, prim: Option<PrimPath>) -> Error {
        let policy = self.config.admission;
        let relation = if policy == AdmissionPolicy::StrictlyIncreasing { "not above" } else { "below" };
        let err = Error::new(
            Status::WriteFloorViolation,
            format!(
                "{call}: ordinal conflict: ordinal {ordinal} is {relation} the change at {at} already accepted for this cell (admission {})",
                policy_name(policy)
            ),
        )
        .with_kind(ErrorKind::OrdinalConflict)
        .with_attribute(attribute)
        .with_ordinal(ordinal);
        match prim {
            Some(p) => err.with_prim(self.describe(p)),
            None => err,
        }
    }

    /// Where a write (or map commit) of `storage` with `semantic` to
    /// `targets` goes, decided from the family's columns now.
    ///
    /// A target prim carrying the attribute in a column whose storage
    /// differs, or whose role conflicts with a declared semantic, is a
    /// schema conflict: refused with `REJECT`; with `FORCE` its cell there
    /// is ended (a tombstone at the write's ordinal) and the prim takes the
    /// written schema. Prims that carry a compatible schema keep their
    /// column (a `NONE` semantic keeps their role); prims without the
    /// attribute take the column of the written schema. Targets that would
    /// land in two columns of the same storage (several roles under one
    /// name, written with no semantic) are refused: the write must name one.
    pub(crate) fn plan_schema(
        &self,
        family: &Family,
        storage: Storage,
        semantic: Semantic,
        mode: AttributeMode,
        targets: &[PrimPath],
        ctx: &Ctx<'_>,
    ) -> Result<SchemaPlan> {
        // The usual case, decided without a look at any row: nothing to
        // replace, no column to choose.
        if let Some(dest) = family.only_fit(storage, semantic) {
            return Ok(SchemaPlan { storage, semantic, dest, replaced: Vec::new() });
        }
        let force = mode == AttributeMode::Force;
        let columns = family.columns();
        let fits = |c: &Column| c.fits(storage, semantic);
        let mut replaced: Vec<(Arc<Column>, Rows)> = Vec::new();
        for column in columns.iter().filter(|c| !fits(c)) {
            let guard = column.lock();
            let live = |p: &PrimPath| guard.row_of(*p).filter(|r| guard.live_at_latest(*r));
            if !force {
                let Some(p) = targets.iter().find(|p| live(p).is_some()) else { continue };
                let message = if column.storage == storage {
                    format!(
                        "the prim has this attribute with semantic {}; this write declares {} (delete the attribute before changing its semantic, or write it with ATTRIBUTE_MODE_FORCE)",
                        column.semantic().name(),
                        semantic.name()
                    )
                } else {
                    format!(
                        "the prim has this attribute as {}; this write is {} (delete the attribute before changing its type, or write it with ATTRIBUTE_MODE_FORCE)",
                        column.storage, storage
                    )
                };
                return Err(ctx.err(Status::InvalidArgument, message).with_prim(self.describe(*p)));
            }
            let rows: Vec<u32> = targets.iter().filter_map(live).collect();
            if !rows.is_empty() {
                drop(guard);
                replaced.push((column.clone(), Rows::from_vec(rows)));
            }
        }
        let fitting: SmallVec<[&Arc<Column>; 2]> = columns.iter().filter(|c| fits(c)).collect();
        let dest = match fitting[..] {
            [] => None,
            // The usual case: one compatible column takes every target, as
            // before any replacement (a NONE role adopts the semantic). A
            // replaced prim written with no semantic has no role, though: it
            // goes to the role-less column when no target keeps this one.
            [one] if replaced.is_empty() || semantic != Semantic::None || one.semantic() == Semantic::None => {
                Some(one.clone())
            }
            _ => {
                let mut holding: SmallVec<[&Arc<Column>; 2]> = SmallVec::new();
                for c in &fitting {
                    let guard = c.lock();
                    if targets.iter().any(|p| guard.row_of(*p).is_some_and(|r| guard.live_at_latest(r))) {
                        holding.push(c);
                    }
                }
                match holding[..] {
                    [one] => Some(one.clone()),
                    [] => {
                        let role = |r: Semantic| fitting.iter().find(|c| c.semantic() == r).map(|c| (*c).clone());
                        if semantic == Semantic::None {
                            role(Semantic::None)
                        } else {
                            role(semantic).or_else(|| role(Semantic::None))
                        }
                    }
                    _ => {
                        let roles: Vec<&str> = holding.iter().map(|c| c.semantic().name()).collect();
                        return Err(ctx.err(
                            Status::InvalidArgument,
                            format!(
                                "the target prims carry this attribute as {storage} with different semantics ({}): write them separately or declare a semantic",
                                roles.join(", ")
                            ),
                        ));
                    }
                }
            }
        };
        Ok(SchemaPlan { storage, semantic, dest, replaced })
    }

    /// Ends the cells a `FORCE` replaces (see [`StageInner::plan_schema`]):
    /// a tombstone in each old schema's column at the mutation's ordinal.
    pub(crate) fn end_replaced(
        &self,
        family: &Family,
        replaced: Vec<(Arc<Column>, Rows)>,
        ctx: &Ctx<'_>,
    ) -> Result<()> {
        for (column, rows) in replaced {
            self.commit(family, &column, RowsOf::Assigned(rows), Payload::Delete, None, ctx)?;
        }
        Ok(())
    }

    /// The INSERT conflict of a target prim that already exists.
    pub(crate) fn insert_conflict(&self, ctx: &Ctx<'_>, prim: PrimPath) -> Error {
        ctx.err(Status::PrimNotFound, "INSERT target prim already exists").with_prim(self.describe(prim))
    }

    /// INSERT checks, then creation of the missing prims, for each
    /// `(attribute name, targets)`; every target is one of `q`'s prims.
    pub(crate) fn create_prims(
        &self,
        q: &QueryState,
        targets: &[(&str, &Targets)],
        ordinal: u64,
        mode: PrimMode,
        call: &'static str,
    ) -> Result<()> {
        // Steady state: the whole query was seen live and no prim has been
        // removed since, so there is nothing to create (targets are always
        // some of the query's prims). Known without the table's lock: a
        // prim's removal (a whole-prim delete) is ordered with every
        // mutation, so one that could remove a target has completed (and
        // counted) before this op runs, and a racing one removes none.
        if mode == PrimMode::Upsert && q.known_live(self.prim_removals.load(Ordering::Acquire)) {
            return Ok(());
        }
        let mut table = lock(&self.prims);
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
                        return Err(self.insert_conflict(&ctx, *p));
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

    /// The one commit path: the part's rows in `column`, the semantic the
    /// mutation declares adopted (`declared`: the semantic and who declares
    /// it, for the error), then the part published at the ordinal under
    /// the family's merge bound.
    pub(crate) fn commit(
        &self,
        family: &Family,
        column: &Arc<Column>,
        rows: RowsOf<'_>,
        payload: Payload,
        declared: Option<(Semantic, &str)>,
        ctx: &Ctx<'_>,
    ) -> Result<()> {
        let mut guard = column.lock();
        let rows = match rows {
            RowsOf::Assigned(rows) => rows,
            RowsOf::Prims { q, prims, whole } => match whole.then(|| q.row_map(column, &guard)) {
                Some(RowMap::Run { start, len }) => Rows::Run { start, len },
                _ => guard.assign_rows(prims.iter().copied()),
            },
        };
        if let Some((semantic, by)) = declared
            && let Err(role) = column.adopt_semantic(semantic)
        {
            return Err(ctx.err(
                Status::InvalidArgument,
                format!("the attribute has semantic {}; {by} declares {}", role.name(), semantic.name()),
            ));
        }
        let part = match payload {
            Payload::Values { data, offsets: None } => Part::Write { rows, data: Arc::new(data) },
            Payload::Values { data, offsets: Some(offsets) } => {
                Part::WriteArray { rows, data: Arc::new(data), offsets }
            }
            Payload::Delete => Part::Delete { rows },
        };
        guard.publish(ctx.ordinal, part, self.floors.merge_bound(family));
        family.published(ctx.ordinal);
        self.mark_transforms_changed(family);
        Ok(())
    }
}

fn policy_name(policy: AdmissionPolicy) -> &'static str {
    match policy {
        AdmissionPolicy::FloorOnly => "FLOOR_ONLY",
        AdmissionPolicy::NonDecreasing => "NONDECREASING",
        AdmissionPolicy::StrictlyIncreasing => "STRICTLY_INCREASING",
    }
}
