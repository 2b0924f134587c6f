//! Deletes: tombstones for listed attributes, or for whole prims.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ovstage_sched::{Cells, Failure, Job, OpSpec, Order};
use ovstage_types::{Error, OpId, Ordinal, QueryHandle, Result, Status};

use crate::api::AttrRef;
use crate::family::Family;
use crate::metadata;
use crate::query::QueryState;
use crate::stage::{Stage, StageInner, lock};
use crate::store::column::{Column, MergeBound, Part};
use crate::store::rows::Rows;
use crate::write::{Ctx, Targets};

const CALL: &str = "delete_attributes";

impl Stage {
    /// Enqueues a delete at `ordinal` of the listed attributes on the
    /// query's prims, or of the whole prims (every attribute, and the prims
    /// themselves) when `attributes` is empty. Change-range reads report the
    /// deleted cells as tombstones.
    pub fn delete_attributes(
        &self,
        query: QueryHandle,
        attributes: &[AttrRef<'_>],
        ordinal: impl Into<Ordinal>,
    ) -> Result<OpId> {
        self.inner.enqueue_delete(query, attributes, ordinal.into().get())
    }
}

/// What a delete op removes.
enum Target {
    Attributes(Vec<Arc<Family>>),
    /// Whole prims; with each family's submitted floor when the delete was
    /// submitted (and the base floor for families created later).
    Prims {
        floors: Vec<(u64, u64)>,
        base: u64,
    },
}

impl StageInner {
    fn enqueue_delete(self: &Arc<Self>, query: QueryHandle, attributes: &[AttrRef<'_>], ordinal: u64) -> Result<OpId> {
        let q = self.query(query, CALL)?;
        let q_check = q.clone();
        let owner = self.clone();
        // A delete removes what exists when it runs: order it with every
        // mutation of what it touches.
        if attributes.is_empty() {
            let spec = OpSpec::new(Order::Barrier { ordinal, cells: Cells::all() }).using(q.key);
            let target: Arc<std::sync::Mutex<Option<Target>>> = Arc::default();
            let job_target = target.clone();
            let job: Job = Box::new(move || {
                let target = lock(&job_target).take();
                let result = match target {
                    Some(t) => owner.apply_delete(&q, &t, ordinal),
                    None => Err(Error::internal("delete submitted without its target").into()),
                };
                owner.floors.pending_all.remove(ordinal);
                result
            });
            return self.sched.submit_checked(&spec, job, || {
                let base = self.floors.base_submitted.load(Ordering::Acquire);
                if ordinal <= base {
                    return Err(Error::new(
                        Status::WriteFloorViolation,
                        format!("{CALL}: ordinal {ordinal} is at or below the write floor {base}"),
                    )
                    .with_ordinal(ordinal));
                }
                let families = self.all_families();
                let targets = Targets::whole(&q_check);
                {
                    let all = lock(&self.floors.unsealed_all);
                    for f in &families {
                        self.admission(&[&f.unsealed(), &all], &targets, ordinal)
                            .map_err(|(at, prim)| self.conflict(CALL, &f.name_text, ordinal, at, prim))?;
                    }
                    if let Err((at, prim)) = self.admission(&[&all], &targets, ordinal) {
                        return Err(self.conflict(CALL, "(all)", ordinal, at, prim));
                    }
                }
                for f in &families {
                    self.check_unsealed_room(f, ordinal, CALL)?;
                }
                let floors = families.iter().map(|f| (f.id, self.submitted_floor(f))).collect();
                *lock(&target) = Some(Target::Prims { floors, base });
                lock(&self.floors.unsealed_all).push(ordinal, targets.bits.as_deref());
                self.floors.pending_all.add(ordinal);
                Ok(())
            });
        }
        let mut families: Vec<Arc<Family>> = Vec::with_capacity(attributes.len());
        for a in attributes {
            let token = self.attr_token(*a, CALL)?;
            if let Some(r) = self.reserved.lookup(token) {
                metadata::check_delete(r, CALL)?;
            }
            let family = self.family(token)?;
            if !families.iter().any(|f| Arc::ptr_eq(f, &family)) {
                families.push(family);
            }
        }
        let spec =
            OpSpec::new(Order::Barrier { ordinal, cells: Cells::keys(families.iter().map(|f| f.id)) }).using(q.key);
        let target = Target::Attributes(families.clone());
        let job: Job = Box::new(move || {
            let result = owner.apply_delete(&q, &target, ordinal);
            if let Target::Attributes(families) = &target {
                for f in families {
                    f.pending.remove(ordinal);
                }
            }
            result
        });
        // Admission treats every targeted cell as changed by the delete.
        let targets = Targets::whole(&q_check);
        let admitted: Vec<(&Arc<Family>, &Targets<'_>)> = families.iter().map(|f| (f, &targets)).collect();
        self.sched.submit_checked(&spec, job, || self.admit_mutation(&admitted, ordinal, CALL))
    }

    fn apply_delete(&self, q: &QueryState, target: &Target, ordinal: u64) -> std::result::Result<(), Failure> {
        q.at_execution()?;
        let families = match target {
            Target::Attributes(f) => f.clone(),
            Target::Prims { .. } => self.all_families(),
        };
        // Check every column first; nothing is published unless all pass.
        let mut plan: Vec<(Arc<Column>, Rows, MergeBound)> = Vec::new();
        for family in &families {
            let ctx = Ctx { call: CALL, attribute: &family.name_text, ordinal };
            for column in family.columns() {
                let guard = column.lock();
                let rows: Vec<u32> =
                    q.prims().iter().filter_map(|p| guard.row_of(*p)).filter(|r| guard.live_at_latest(*r)).collect();
                if rows.is_empty() {
                    continue;
                }
                if let Target::Prims { floors, base } = target {
                    let floor = floors.iter().find(|(id, _)| *id == family.id).map_or(*base, |(_, f)| *f);
                    if ordinal <= floor {
                        return Err(ctx
                            .err(
                                Status::WriteFloorViolation,
                                format!("ordinal {ordinal} is at or below the attribute's write floor {floor}"),
                            )
                            .with_prim(self.describe(guard.prim_of(rows[0])))
                            .into());
                    }
                }
                drop(guard);
                plan.push((column, Rows::from_vec(rows), self.merge_bound(family)));
            }
        }
        for (column, rows, floor) in plan {
            column.lock().publish(ordinal, Part::Delete { rows }, floor);
        }
        if matches!(target, Target::Prims { .. }) {
            let mut table = lock(&self.prims);
            for p in q.prims().iter() {
                if table.is_live(*p) {
                    table.remove(*p);
                }
            }
        }
        Ok(())
    }
}
