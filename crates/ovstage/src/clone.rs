//! Clone: copies a prim's subtree, with every attribute, to target paths at
//! an ordinal. Path values (relationships, connections) that point inside
//! the source subtree are rebased to the target's; paths outside stay.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use ovstage_sched::{Cells, Failure, Job, OpSpec, Order};
use ovstage_types::{Error, ErrorKind, OpId, Ordinal, PrimPath, Result, Semantic, Status, Timeout};

use crate::family::Family;
use crate::mutation::{Ctx, Payload, Reach, RowsOf, Ticket};
use crate::schema::ValueKind;
use crate::stage::{Stage, StageInner, lock};
use crate::state::{CloneReports, CloneResult};
use crate::store::backend::StorageBackend;
use crate::store::column::Column;
use crate::store::rows::Rows;

const CALL: &str = "clone";

impl CloneReports {
    /// Forgets a released op's report (every released op comes here).
    pub(crate) fn forget(&self, op: OpId) {
        if self.held.load(Ordering::Acquire) == 0 {
            return;
        }
        let key = {
            let mut ops = lock(&self.ops);
            let key = ops.remove(&op);
            self.held.store(ops.len(), Ordering::Release);
            key
        };
        if let Some(key) = key {
            lock(&self.results).remove(&key);
        }
    }
}

impl Stage {
    /// Enqueues a clone of `source`'s subtree (every prim below it in the
    /// hierarchy, with all attributes) to each of `targets` at `ordinal`.
    ///
    /// A missing source fails with `NOT_FOUND`; a target that already exists
    /// fails the whole clone with `PRIM_NOT_FOUND` (nothing is cloned). The
    /// clone is ordered, in submission order, with every mutation; until its
    /// ordinal is sealed, mutations at lower ordinals and reads above the
    /// floor treat it as touching every prim.
    pub fn clone_subtree(&self, source: PrimPath, targets: &[PrimPath], ordinal: impl Into<Ordinal>) -> Result<OpId> {
        let inner = &self.inner;
        let ordinal = ordinal.into().get();
        let describe = |p: PrimPath| inner.describe(p);
        inner.paths.path_text(source).map_err(|e| e.prefixed(CALL))?;
        for (i, t) in targets.iter().enumerate() {
            inner.paths.path_text(*t).map_err(|e| e.prefixed(CALL))?;
            if targets[..i].contains(t) {
                return Err(Error::invalid_argument(format!("{CALL}: target '{}' is listed twice", describe(*t)))
                    .with_prim(describe(*t))
                    .with_ordinal(ordinal));
            }
        }
        let targets: Vec<PrimPath> = targets.to_vec();
        let key = inner.next_group_id();
        let spec = OpSpec::new(Order::Barrier { ordinal, cells: Cells::all() }).labelled("clone_subtree");
        let owner = inner.clone();
        // The prims a clone touches are known only when it runs.
        let checked_targets = targets.clone();
        let submitted = inner.submit_mutation(&spec, Reach::Unknown, ordinal, CALL, move |ticket| -> Job {
            Box::new(move || {
                let result = owner.apply_clone(source, &targets, &ticket);
                drop(ticket);
                let failure = result.as_ref().err().cloned();
                lock(&owner.clones.results).insert(key, result);
                failure.map_or(Ok(()), |e| Err(Failure::from(e)))
            })
        });
        let op = match submitted {
            Ok(op) => op,
            // As the published library: a clone at or below a floor is
            // accepted and fails when it runs (its report is the error); a
            // target that exists is reported first, as there.
            Err(e) if e.status() == Status::WriteFloorViolation => {
                let owner = inner.clone();
                // Ordered as the clone would be, so what it finds does not
                // depend on timing.
                inner.sched.submit(
                    &spec,
                    Box::new(move || {
                        let (source_live, existing) = {
                            let prims = lock(&owner.prims);
                            (prims.is_live(source), checked_targets.iter().copied().find(|t| prims.is_live(*t)))
                        };
                        let e = match existing {
                            _ if !source_live => Error::new(
                                Status::NotFound,
                                format!("{CALL}: source '{}' does not exist", owner.describe(source)),
                            )
                            .with_prim(owner.describe(source))
                            .with_ordinal(ordinal),
                            Some(t) => Error::new(
                                Status::PrimNotFound,
                                format!("{CALL}: target '{}' already exists", owner.describe(t)),
                            )
                            .with_prim(owner.describe(t))
                            .with_ordinal(ordinal),
                            None => e,
                        };
                        lock(&owner.clones.results).insert(key, Err(e.clone()));
                        Err(Failure::from(e))
                    }),
                )?
            }
            Err(e) => return Err(e),
        };
        let mut ops = lock(&inner.clones.ops);
        ops.insert(op, key);
        inner.clones.held.store(ops.len(), Ordering::Release);
        Ok(op)
    }

    /// The report of a finished clone (or its error), waiting up to
    /// `timeout`. Available until the op is released.
    pub fn fetch_clone_result(&self, op: OpId, timeout: Timeout) -> Result<CloneResult> {
        const FETCH: &str = "fetch_clone_result";
        let key = lock(&self.inner.clones.ops)
            .get(&op)
            .copied()
            .ok_or_else(|| Error::invalid_handle(format!("{FETCH}: {op} is not a live clone of this stage")))?;
        self.inner.await_result(op, timeout, FETCH, op)?;
        match lock(&self.inner.clones.results).get(&key) {
            Some(Ok(r)) => Ok(*r),
            Some(Err(e)) => Err(e.clone()),
            None => Err(Error::internal(format!("{FETCH}: {op} completed without a report"))),
        }
    }
}

impl StageInner {
    fn apply_clone(&self, source: PrimPath, targets: &[PrimPath], ticket: &Ticket) -> Result<CloneResult> {
        let ordinal = ticket.ordinal();
        let err = |status, message: String| Error::new(status, format!("{CALL}: {message}")).with_ordinal(ordinal);
        let subtree = {
            let prims = lock(&self.prims);
            if !prims.is_live(source) {
                return Err(err(
                    Status::NotFound,
                    format!("source prim does not exist at '{}'", self.describe(source)),
                )
                .with_prim(self.describe(source)));
            }
            let existing: Vec<String> =
                targets.iter().filter(|t| prims.is_live(**t)).map(|t| self.describe(*t)).collect();
            if !existing.is_empty() {
                return Err(err(
                    Status::PrimNotFound,
                    format!("target prim already exists at '{}'", existing.join("', '")),
                )
                .with_prim(existing[0].clone()));
            }
            prims.subtree(source)
        };
        // Source path -> target path, for each target.
        let source_text = self.paths.path_text(source)?;
        let mut mapping: Vec<HashMap<PrimPath, PrimPath>> = Vec::with_capacity(targets.len());
        for t in targets {
            let target_text = self.paths.path_text(*t)?;
            let mut map = HashMap::with_capacity(subtree.len());
            for p in &subtree {
                let text = self.paths.path_text(*p)?;
                let rebased = format!("{target_text}{}", &text[source_text.len()..]);
                map.insert(*p, self.paths.intern_path(&rebased)?);
            }
            mapping.push(map);
        }
        // Copy every column's cells, checking floors and retained history.
        let policy = self.config.admission;
        let mut plan: Vec<(Arc<Family>, Arc<Column>, Rows, Payload)> = Vec::new();
        for family in self.all_families() {
            if self.reserved.lookup(family.name).is_some_and(|r| r.is_derived()) {
                continue;
            }
            for column in family.columns() {
                let mut guard = column.lock();
                let cells: Vec<(PrimPath, Vec<u8>)> = subtree
                    .iter()
                    .filter_map(|p| guard.row_of(*p).and_then(|r| guard.latest_row(r)).map(|bytes| (*p, bytes)))
                    .collect();
                if cells.is_empty() {
                    continue;
                }
                // The attributes a clone copies are known now: check each
                // against its floor at admission.
                let floor = ticket.admitted_floor(&family);
                if ordinal <= floor {
                    return Err(err(
                        Status::WriteFloorViolation,
                        format!("ordinal {ordinal} is at or below the write floor {floor} of a cloned attribute"),
                    )
                    .with_attribute(&*family.name_text));
                }
                let rebase = matches!(column.semantic(), Semantic::RelationshipPathId | Semantic::ConnectionPathId);
                let stride = if column.semantic() == Semantic::ConnectionPathId { 2 } else { 1 };
                let array = column.storage.kind == ValueKind::Array;
                for map in &mapping {
                    let targets: Vec<PrimPath> = cells.iter().map(|(p, _)| map[p]).collect();
                    let rows = guard.assign_rows(targets.iter().copied());
                    if let Some(at) = guard.changed_above(&rows, ordinal, policy) {
                        return Err(err(
                            Status::WriteFloorViolation,
                            format!("ordinal conflict: a target cell has a retained change at {at}"),
                        )
                        .with_kind(ErrorKind::OrdinalConflict)
                        .with_attribute(&*family.name_text));
                    }
                    let mut bytes: Vec<u8> = Vec::new();
                    let mut offsets = vec![0u64];
                    for (_, value) in &cells {
                        let mut value = value.clone();
                        if rebase {
                            for (k, chunk) in value.chunks_exact_mut(8).enumerate() {
                                if k % stride == 0 {
                                    let id = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
                                    if let Some(p) = PrimPath::from_raw(id).and_then(|p| map.get(&p)) {
                                        chunk.copy_from_slice(&p.get().to_le_bytes());
                                    }
                                }
                            }
                        }
                        bytes.extend_from_slice(&value);
                        offsets.push(bytes.len() as u64);
                    }
                    // Into the column's memory through its backend.
                    let buf = column
                        .memory
                        .upload(&bytes)
                        .map_err(|e| err(Status::OutOfMemory, e.to_string()).with_attribute(&*family.name_text))?;
                    let payload = Payload::Values { data: buf, offsets: array.then(|| offsets.into()) };
                    plan.push((family.clone(), column.clone(), rows, payload));
                }
            }
        }
        // Everything checked: create the prims, then publish.
        {
            let mut prims = lock(&self.prims);
            for map in &mapping {
                for p in &subtree {
                    let t = map[p];
                    prims.create(t, self.paths.parent(t).ok().flatten());
                }
            }
        }
        for (family, column, rows, payload) in plan {
            let ctx = Ctx { call: CALL, attribute: &family.name_text, ordinal };
            self.commit(&family, &column, RowsOf::Assigned(rows), payload, None, &ctx)?;
        }
        let prims = lock(&self.prims);
        let prims_cloned = targets.iter().map(|t| prims.subtree(*t).len()).sum();
        Ok(CloneResult {
            ordinal: Ordinal(ordinal),
            target_count: targets.len(),
            source_prim_count: subtree.len(),
            prims_cloned,
        })
    }
}
