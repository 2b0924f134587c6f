//! Hierarchy lookups: parent, children or siblings of a list of prims, as
//! the prims are when the lookup runs.

use std::sync::{Arc, OnceLock};

use ovstage_sched::{Job, OpSpec, Order};
use ovstage_types::{
    Error, HierarchyHandle, HierarchyRelation, OpId, Ordinal, PathList, PrimPath, Result, Status, Timeout,
};

use crate::api::Enqueued;
use crate::stage::{Stage, StageInner, lock};
use crate::state::{HierarchyItem, HierarchyResult, HierarchyState, OpCell};

impl Stage {
    /// Enqueues a lookup of `relation` for every path of `list` (copied now;
    /// the caller may release the list at once). It reads the prims as they
    /// are when it runs, after every floor advance submitted before it.
    pub fn get_hierarchy(
        &self,
        list: PathList,
        ordinal: impl Into<Ordinal>,
        relation: HierarchyRelation,
    ) -> Result<Enqueued<HierarchyHandle>> {
        let inner = &self.inner;
        let paths = inner.paths.path_list_paths(list).map_err(|e| e.prefixed("get_hierarchy"))?;
        let ordinal = ordinal.into();
        let key = inner.next_handle_key();
        let state = Arc::new(HierarchyState { key, op: OpCell::default(), result: OnceLock::new() });
        let (owner, job_state) = (inner.clone(), state.clone());
        let job: Job = Box::new(move || {
            let _ = job_state.result.set(owner.lookup(&paths, ordinal, relation));
            Ok(())
        });
        let op = inner.sched.submit(&OpSpec::new(Order::AfterFloors).producing(key).labelled("get_hierarchy"), job)?;
        state.op.set(op);
        let raw = inner.hierarchies.insert_with(|_| state);
        Ok(Enqueued { handle: HierarchyHandle::from_raw(raw).expect("never 0"), op })
    }

    /// The result of a hierarchy lookup, waiting up to `timeout`.
    pub fn fetch_hierarchy_result(&self, handle: HierarchyHandle, timeout: Timeout) -> Result<HierarchyResult> {
        let state = self.inner.hierarchies.get(handle.get()).ok_or_else(|| {
            Error::invalid_handle(format!("fetch_hierarchy_result: {handle} is unknown or was released"))
        })?;
        if state.result.get().is_none() {
            self.inner.await_result(
                state.op.get().expect("set at enqueue"),
                timeout,
                "fetch_hierarchy_result",
                handle,
            )?;
        }
        state.result.get().cloned().ok_or_else(|| Error::internal(format!("{handle} completed without a result")))
    }

    /// Releases a hierarchy handle once its op has run.
    pub fn release_hierarchy(&self, handle: HierarchyHandle) -> Result<OpId> {
        let state = self.inner.hierarchies.remove(handle.get()).ok_or_else(|| {
            Error::invalid_handle(format!("release_hierarchy: {handle} is unknown or already released"))
        })?;
        Ok(self.inner.sched.submit_marker(&OpSpec::independent().releasing(state.key).labelled("release_hierarchy"))?)
    }
}

impl StageInner {
    fn lookup(&self, paths: &[PrimPath], ordinal: Ordinal, relation: HierarchyRelation) -> HierarchyResult {
        let prims = lock(&self.prims);
        let items = paths
            .iter()
            .map(|p| {
                if !prims.is_live(*p) {
                    return HierarchyItem { status: Status::NotFound, paths: Vec::new() };
                }
                let paths = match relation {
                    HierarchyRelation::Parent => prims.parent(*p).into_iter().collect(),
                    HierarchyRelation::Children => prims.children(*p).to_vec(),
                    HierarchyRelation::Siblings => prims.siblings(*p),
                };
                HierarchyItem { status: Status::Ok, paths }
            })
            .collect();
        HierarchyResult { ordinal, items }
    }
}
