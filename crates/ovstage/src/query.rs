//! Queries: the prims reads, writes and deletes target. A query from a path
//! list is resolved at once; a filter query is resolved when its op runs,
//! against the latest committed state, and every op using its handle runs
//! after that. Filters are evaluated column-wise (`eval`), and results whose
//! filter depends on structure only are reused while nothing structural
//! changes (`cache`).

mod cache;
mod eval;
mod values;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ovstage_sched::{Failure, OpSpec};
use ovstage_types::{
    Error, FilterOp, OpId, PathList, PrimPath, QueryHandle, QueryResultId, Result, Status, Timeout, Token,
};

use crate::api::{AttrRef, Enqueued};
use crate::family::prim_bit;
use crate::metadata::Reserved;
use crate::stage::{Stage, StageInner, lock};
use crate::state::{CachedRowMap, FilterKey, FilterScope, FilterTests, OpCell, QueryState, Resolved, Test};
use crate::store::column::{Column, ColumnGuard, RowMap};
use crate::store::rows::RowSet;

impl Resolved {
    fn new(list: PathList, prims: Arc<[PrimPath]>, attributes: Vec<Token>) -> Resolved {
        Resolved {
            list,
            prims,
            attributes,
            prim_bits: OnceLock::new(),
            repeats: OnceLock::new(),
            live_at: AtomicU64::new(0),
            row_maps: Mutex::new(HashMap::default()),
        }
    }
}

impl QueryState {
    fn new(key: u64) -> QueryState {
        QueryState { key, producer: OpCell::default(), resolved: OnceLock::new() }
    }

    /// The resolved prims, when known (always for path-list queries).
    pub(crate) fn ready(&self) -> Option<&Resolved> {
        self.resolved.get().and_then(|r| r.as_deref().ok())
    }

    /// The resolved prims for an op using the query: it runs after the
    /// query's op, so they are known unless the query failed.
    pub(crate) fn at_execution(&self) -> std::result::Result<&Resolved, Failure> {
        match self.resolved.get() {
            Some(Ok(r)) => Ok(r),
            Some(Err(e)) => Err(Failure {
                error: Error::new(Status::OpFailed, format!("the query this op uses failed: {e}")),
                caused_by: self.producer.get(),
            }),
            None => Err(Error::internal("an op ran before the query it uses was resolved").into()),
        }
    }

    /// The path list of a resolved query (the list of an unresolved one is
    /// never needed: groups are built when the query has run).
    pub(crate) fn list(&self) -> PathList {
        self.ready().map_or(PathList::from_raw(u64::MAX).expect("non-zero"), |r| r.list)
    }

    /// The prims (empty until resolved).
    pub(crate) fn prims(&self) -> &[PrimPath] {
        self.ready().map_or(&[], |r| &r.prims)
    }

    /// Whether every prim was seen live and none was removed since.
    pub(crate) fn known_live(&self, removals: u64) -> bool {
        self.ready().is_some_and(|r| r.live_at.load(Ordering::Acquire) == removals + 1)
    }

    pub(crate) fn mark_live(&self, removals: u64) {
        if let Some(r) = self.ready() {
            r.live_at.store(removals + 1, Ordering::Release);
        }
    }

    /// The prims as a bitset over prim indices; `None` until resolved.
    pub(crate) fn prim_bits(&self) -> Option<&Arc<RowSet>> {
        let r = self.ready()?;
        Some(r.prim_bits.get_or_init(|| {
            // Sized once for the highest prim, not grown word by word.
            let bits: Vec<u32> = r.prims.iter().map(|p| prim_bit(*p)).collect();
            let mut set = RowSet::new();
            set.insert_all(&bits);
            Arc::new(set)
        }))
    }

    /// The first prim of `selected` (some of the query's prims) that
    /// appears in it twice. Cheap when the query repeats no prim (known
    /// after the first call).
    pub(crate) fn first_repeat(&self, selected: impl Iterator<Item = PrimPath>) -> Option<PrimPath> {
        let r = self.ready()?;
        if !*r.repeats.get_or_init(|| repeated(r.prims.iter().copied()).is_some()) {
            return None;
        }
        repeated(selected)
    }

    /// The rows of the prims in `column` (cached until rows are added to
    /// the column, and shared by every handle of the same resolved prims),
    /// computed under the column's lock.
    pub(crate) fn row_map(&self, column: &Arc<Column>, guard: &ColumnGuard<'_>) -> RowMap {
        let Some(r) = self.ready() else { return guard.row_map(&[]) };
        let (id, rows) = (cache_id(column), guard.nrows());
        let mut cache = lock(&r.row_maps);
        if let Some(c) = cache.get(&id)
            && c.serves(column, rows)
        {
            return c.map.clone();
        }
        let map = guard.row_map(&r.prims);
        // Maps of columns the stage dropped (a replaced schema's, see
        // `Family::retire_dead_columns`) go with the next map built: a
        // rebuild walks every prim anyway, and the cache holds a few.
        cache.retain(|_, c| c.column.strong_count() > 0);
        cache.insert(id, CachedRowMap { column: Arc::downgrade(column), rows, map: map.clone() });
        map
    }

    /// [`QueryState::row_map`] if it is cached and current, without
    /// building it.
    pub(crate) fn cached_row_map(&self, column: &Arc<Column>, guard: &ColumnGuard<'_>) -> Option<RowMap> {
        let r = self.ready()?;
        let cache = lock(&r.row_maps);
        let c = cache.get(&cache_id(column))?;
        c.serves(column, guard.nrows()).then(|| c.map.clone())
    }
}

/// A column's key in a query's row-map cache: its address without the
/// alignment zeros, which the id hasher's low bits would otherwise keep.
fn cache_id(column: &Arc<Column>) -> usize {
    Arc::as_ptr(column) as usize >> 4
}

/// One test of a filter: `attribute` compared with `values` by `op`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Predicate<'a> {
    /// The attribute tested.
    pub attribute: AttrRef<'a>,
    /// How it is tested.
    pub op: FilterOp,
    /// Match values (none for `HAS`).
    pub values: Vec<String>,
}

impl<'a> Predicate<'a> {
    /// A predicate.
    pub fn new<S: Into<String>>(
        attribute: impl Into<AttrRef<'a>>,
        op: FilterOp,
        values: impl IntoIterator<Item = S>,
    ) -> Self {
        Predicate { attribute: attribute.into(), op, values: values.into_iter().map(Into::into).collect() }
    }

    /// `HAS attribute`.
    pub fn has(attribute: impl Into<AttrRef<'a>>) -> Self {
        Predicate { attribute: attribute.into(), op: FilterOp::Has, values: Vec::new() }
    }
}

/// The result of a filter query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryResult {
    /// Identity of this result.
    pub id: QueryResultId,
    /// Attributes the matched prims carry (only those asked for, when a list
    /// was given).
    pub attributes: Vec<Token>,
    /// The handle reading the matched prims.
    pub handle: QueryHandle,
    /// Number of matched prims.
    pub total_prim_count: usize,
}

impl Test {
    /// Whether the test's outcome depends only on which prims exist and
    /// which cells are live (not on values), so its result may be cached.
    fn is_structural(&self) -> bool {
        !matches!(self, Test::TokensAny(..) | Test::Value(..))
    }
}

/// `values` sorted and deduplicated.
fn canonical<T: Ord>(mut values: Vec<T>) -> Vec<T> {
    values.sort_unstable();
    values.dedup();
    values
}

/// [`canonical`] for an inline list.
fn canonical_inline<A: smallvec::Array<Item: Ord>>(mut values: smallvec::SmallVec<A>) -> smallvec::SmallVec<A> {
    values.sort_unstable();
    values.dedup();
    values
}

impl Stage {
    /// A query of exactly the prims in `list` (in its order, existing or
    /// not). The query holds a reference to the list until it is released.
    pub fn query_from_path_list(&self, list: PathList) -> Result<QueryHandle> {
        let inner = &self.inner;
        let prims = inner.paths.path_list_paths(list).map_err(|e| e.prefixed("query_from_path_list"))?;
        inner.paths.add_path_list_reference(list)?;
        let state = QueryState::new(inner.next_handle_key());
        let _ = state.resolved.set(Ok(Arc::new(Resolved::new(list, prims, Vec::new()))));
        let raw = inner.queries.insert_with(|_| Arc::new(state));
        Ok(QueryHandle::from_raw(raw).expect("handle tables never mint 0"))
    }

    /// Enqueues a query of the prims matching every predicate (an empty
    /// filter matches every prim), reporting which of `attributes` (all, when
    /// empty) they carry. It is evaluated against the latest committed state
    /// when it runs; the handle can be used at once.
    ///
    /// Supported: `HAS` on any attribute; `usd-path` `IN` and `PREFIX`;
    /// `usd-parent` `IN`; `usd-children` `CONTAINS`; `usd-prim-type` `IN`;
    /// `usd-schemas` and `usd-ancestor-types` `CONTAINS`. Anything else is
    /// `NOT_SUPPORTED`.
    pub fn query(&self, filter: &[Predicate<'_>], attributes: &[AttrRef<'_>]) -> Result<Enqueued<QueryHandle>> {
        const CALL: &str = "query";
        let inner = &self.inner;
        let tests = filter.iter().map(|p| inner.compile(p)).collect::<Result<FilterTests>>()?;
        let scope = attributes.iter().map(|a| inner.attr_token(*a, CALL)).collect::<Result<FilterScope>>()?;
        let state = Arc::new(QueryState::new(inner.next_handle_key()));
        // A repeated structural filter whose result is cached for the
        // structure as it is now resolves by a lookup: on this thread, when
        // no floor advance holds it back (it still resolves when it runs,
        // so a change in between is seen).
        let spec = OpSpec::new(ovstage_sched::Order::AfterFloors).producing(state.key).labelled("query");
        let key = FilterKey::of(&tests, &scope);
        let spec = if inner.has_cached(key.as_ref()) { spec.on_submitter_when_ready() } else { spec };
        let (owner, job_state) = (inner.clone(), state.clone());
        // Unboxed: a cached filter resolved on this thread at once (see
        // above) allocates no job.
        let op = inner.sched.submit_unboxed(&spec, move || {
            let result = owner.resolve_filter(&tests, &scope, key);
            let failure = result.as_ref().err().cloned();
            let _ = job_state.resolved.set(result);
            failure.map_or(Ok(()), |e| Err(Failure::from(e)))
        })?;
        state.producer.set(op);
        let raw = inner.queries.insert_with(|_| state);
        Ok(Enqueued { handle: QueryHandle::from_raw(raw).expect("never 0"), op })
    }

    /// The result of a query, waiting up to `timeout` for it to run.
    pub fn fetch_query_result(&self, query: QueryHandle, timeout: Timeout) -> Result<QueryResult> {
        const CALL: &str = "fetch_query_result";
        let state = self.inner.query(query, CALL)?;
        if state.resolved.get().is_none() {
            let op = state.producer.get().expect("unresolved queries have a producer");
            self.inner.await_result(op, timeout, CALL, query)?;
        }
        match state.resolved.get() {
            Some(Ok(r)) => Ok(QueryResult {
                id: QueryResultId::from_raw(self.inner.next_group_id()).expect("ids start at 1"),
                attributes: r.attributes.clone(),
                handle: query,
                total_prim_count: r.prims.len(),
            }),
            Some(Err(e)) => Err(e.clone()),
            None => Err(Error::internal(format!("{CALL}: {query} completed without a result"))),
        }
    }

    /// Releases a query result (dropping it does the same).
    pub fn release_query_result(&self, result: QueryResult) {
        drop(result);
    }

    /// The prims of a query (empty until a filter query has run).
    pub fn query_prims(&self, query: QueryHandle) -> Result<Arc<[PrimPath]>> {
        Ok(self.inner.query(query, "query_prims")?.ready().map_or_else(|| Arc::from([]), |r| r.prims.clone()))
    }

    /// The number of prims of a query, once known (a path-list query at
    /// once, a filter query when its op has run).
    pub fn query_prim_count(&self, query: QueryHandle) -> Result<Option<usize>> {
        Ok(self.inner.query(query, "query_prim_count")?.ready().map(|r| r.prims.len()))
    }

    /// Releases a query handle once every op using it has run.
    pub fn release_query(&self, query: QueryHandle) -> Result<OpId> {
        let inner = &self.inner;
        let state = inner
            .queries
            .remove(query.get())
            .ok_or_else(|| Error::invalid_handle(format!("release_query: {query} is unknown or already released")))?;
        let key = state.key;
        let owner = inner.clone();
        // A dictionary reference dropped: cheaper than a lane hand-off, and
        // its waiter raced the lanes for it (2% of releases in a query loop
        // went to a lane, each costing the waiter microseconds). Unboxed:
        // run here at once, it allocates no job.
        let spec = OpSpec::independent().releasing(key).labelled("release_query").on_submitter_when_ready();
        Ok(inner.sched.submit_unboxed(&spec, move || {
            if let Some(r) = state.ready() {
                owner.paths.release_path_list_reference(r.list).map_err(Failure::from)?;
            }
            Ok(())
        })?)
    }
}

impl StageInner {
    /// Checks one predicate and resolves its names and values.
    fn compile(&self, p: &Predicate<'_>) -> Result<Test> {
        const CALL: &str = "query";
        let token = self.attr_token(p.attribute, CALL)?;
        let reserved = self.reserved.lookup(token);
        let name = self.paths.token_text(token)?;
        // A value that is not a valid path (or token) names no prim (or
        // type): it matches nothing, and the filter is still accepted, as on
        // the reference. Values are interned, not looked up: a path or token
        // interned between enqueue and execution can still match.
        let paths = |values: &[String]| -> Vec<PrimPath> {
            canonical(values.iter().filter_map(|v| self.paths.intern_path(v).ok()).collect())
        };
        let tokens = |values: &[String]| -> Vec<u64> {
            canonical(values.iter().filter_map(|v| self.paths.intern_token(v).ok().map(|t| t.get())).collect())
        };
        // An empty value list matches no prim (`IN []`), as on the
        // reference: every value test below is "any of the values".
        Ok(match (reserved, p.op) {
            (Some(Reserved::Active), _) => {
                return Err(Error::not_supported(format!(
                    "{CALL}: usd-active is not supported: a live prim is always active"
                ))
                .with_attribute(&*name));
            }
            (r, FilterOp::Has) => Test::Has(token, r),
            (Some(Reserved::Path), FilterOp::In) => Test::PathIn(paths(&p.values)),
            (Some(Reserved::Path), FilterOp::Prefix) => Test::PathPrefix(canonical(p.values.clone())),
            (Some(Reserved::Parent), FilterOp::In) => Test::ParentIn(paths(&p.values)),
            (Some(Reserved::Children), FilterOp::Contains) => Test::ChildrenContain(paths(&p.values)),
            (Some(Reserved::PrimType), FilterOp::In)
            | (Some(Reserved::Schemas | Reserved::AncestorTypes), FilterOp::Contains) => {
                Test::TokensAny(token, tokens(&p.values))
            }
            // Value predicates on recorded attributes: ours evaluates them
            // (the published library refuses every one; see
            // `query/values.rs`). Built-in metadata keeps the pairings above.
            (
                None,
                op @ (FilterOp::In
                | FilterOp::Contains
                | FilterOp::Prefix
                | FilterOp::Lt
                | FilterOp::Le
                | FilterOp::Gt
                | FilterOp::Ge),
            ) => Test::Value(token, op as u32, canonical(p.values.clone())),
            (_, op) => {
                return Err(Error::not_supported(format!(
                    "{CALL}: the predicate {} on '{name}' is not supported (supported: HAS on any attribute; IN, CONTAINS, PREFIX, LT, LE, GT, GE on recorded attributes; usd-path IN and PREFIX; usd-parent IN; usd-children CONTAINS; usd-prim-type IN; usd-schemas and usd-ancestor-types CONTAINS)",
                    op.name()
                ))
                .with_attribute(&*name));
            }
        })
    }
}

/// The first prim seen twice in `prims`.
fn repeated(prims: impl Iterator<Item = PrimPath>) -> Option<PrimPath> {
    let mut seen = RowSet::new();
    for p in prims {
        let bit = prim_bit(p);
        if seen.contains(bit) {
            return Some(p);
        }
        seen.insert(bit);
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::{AttributeMode, FloorScope, OrdinalRange, PrimMode, Stage, StageConfig, Tensor, Timeout, WriteData};

    const LONG: Timeout = Timeout::from_nanos(20_000_000_000);

    /// A retained query read through while its attribute's schema is
    /// replaced every tick keeps at most one row map per column the stage
    /// holds (each keyed by a weak reference to its column).
    #[test]
    fn a_query_keeps_one_row_map_per_column() {
        let stage = Stage::with_config("row maps", StageConfig::default().with_lanes(1));
        let list = stage.paths().create_path_list_from_strings(&["/A", "/B"]).unwrap();
        let q = stage.query_from_path_list(list).unwrap();
        for tick in 1..=40u64 {
            // A new tuple width each tick: each FORCE write replaces the
            // column with one of a schema never seen before.
            let lanes = tick as u16;
            let values = Tensor::rows(vec![tick as f32; 2 * usize::from(lanes)], lanes).unwrap();
            let data = WriteData::fixed(values).with_attribute_mode(AttributeMode::Force);
            let ops = [
                stage.write_attribute(q, "v", tick, data, PrimMode::Upsert).unwrap(),
                stage.advance_write_floor(tick, FloorScope::All).unwrap(),
            ];
            let r = stage.read_attributes(q, &["v".into()], OrdinalRange::snapshot(tick)).unwrap();
            while stage.fetch_read_next(r.handle, LONG).unwrap().is_some() {}
            let release = stage.release_read(r.handle).unwrap();
            for op in ops.into_iter().chain([r.op, release]) {
                stage.wait_ok(op, LONG).unwrap();
                stage.release_op(op).unwrap();
            }
        }
        let state = stage.inner.query(q, "test").unwrap();
        let maps = state.ready().expect("a path-list query is resolved").row_maps.lock().unwrap().len();
        let columns = stage.inner.all_families().iter().map(|f| f.columns().len()).sum::<usize>();
        assert!(maps <= columns, "{maps} row maps kept for {columns} live columns");
    }
}
