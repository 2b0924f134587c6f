//! Deletes: tombstones for listed attributes, or for whole prims.

use std::sync::Arc;

use ovstage_sched::{Cells, Failure, Job, OpSpec, Order};
use ovstage_types::{OpId, Ordinal, QueryHandle, Result, Status};

use crate::api::AttrRef;
use crate::family::Family;
use crate::metadata;
use crate::mutation::{Ctx, Payload, Reach, RowsOf, Targets, Ticket};
use crate::stage::{Stage, StageInner, lock};
use crate::state::QueryState;
use crate::store::column::Column;
use crate::store::rows::Rows;

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
    /// Whole prims (every attribute, and the prims themselves).
    Prims,
}

impl StageInner {
    fn enqueue_delete(self: &Arc<Self>, query: QueryHandle, attributes: &[AttrRef<'_>], ordinal: u64) -> Result<OpId> {
        let q = self.query(query, CALL)?;
        let job = |target: Target| {
            let (owner, q) = (self.clone(), q.clone());
            move |ticket: Ticket| -> Job {
                Box::new(move || {
                    let result = owner.apply_delete(&q, &target, &ticket, ordinal);
                    drop(ticket);
                    result
                })
            }
        };
        // A delete removes what exists when it runs: order it with every
        // mutation of what it touches.
        if attributes.is_empty() {
            let spec =
                OpSpec::new(Order::Barrier { ordinal, cells: Cells::all() }).using(q.key).labelled("delete_attributes");
            return self.submit_mutation(&spec, Reach::Prims(&q), ordinal, CALL, job(Target::Prims));
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
        let spec = OpSpec::new(Order::Barrier { ordinal, cells: Cells::keys(families.iter().map(|f| f.id)) })
            .using(q.key)
            .labelled("delete_attributes");
        // Admission treats every targeted cell as changed by the delete.
        let targets = Targets::whole(&q);
        let admitted: Vec<(&Arc<Family>, &Targets)> = families.iter().map(|f| (f, &targets)).collect();
        let reach = Reach::Families(&admitted);
        self.submit_mutation(&spec, reach, ordinal, CALL, job(Target::Attributes(families.clone())))
    }

    fn apply_delete(
        &self,
        q: &QueryState,
        target: &Target,
        ticket: &Ticket,
        ordinal: u64,
    ) -> std::result::Result<(), Failure> {
        q.at_execution()?;
        let families = match target {
            Target::Attributes(f) => f.clone(),
            Target::Prims => self.all_families(),
        };
        // Check every column first; nothing is published unless all pass.
        let mut plan: Vec<(&Arc<Family>, Arc<Column>, Rows)> = Vec::new();
        for family in &families {
            let ctx = Ctx { call: CALL, attribute: &family.name_text, ordinal };
            for column in family.columns() {
                let guard = column.lock();
                let rows: Vec<u32> =
                    q.prims().iter().filter_map(|p| guard.row_of(*p)).filter(|r| guard.live_at_latest(*r)).collect();
                if rows.is_empty() {
                    continue;
                }
                if let Target::Prims = target {
                    // Which attributes a whole-prim delete changes is known
                    // now: check each against its floor at admission.
                    let floor = ticket.admitted_floor(family);
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
                plan.push((family, column, Rows::from_vec(rows)));
            }
        }
        for (family, column, rows) in plan {
            let ctx = Ctx { call: CALL, attribute: &family.name_text, ordinal };
            self.commit(family, &column, RowsOf::Assigned(rows), Payload::Delete, None, &ctx)?;
        }
        if matches!(target, Target::Prims) {
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
