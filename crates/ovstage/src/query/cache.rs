//! Resolved filter queries kept for reuse.
//!
//! A filter whose tests depend only on structure (which prims exist, the
//! hierarchy, which cells are live; not values) has the same result as long
//! as nothing structural changes. Such results are kept, keyed by the
//! canonical filter, with a stamp of the counters that move on every
//! structural change: the prim table's generation (creations and removals)
//! and each column's structure counter, family by family (so a new family
//! or column changes the stamp too). A repeated query whose stamp still
//! matches reuses the result (its prims, path list, attributes, prim bitset
//! and row maps) in O(#columns), adding a reference to the path list for the
//! new handle.
//!
//! The stamp is taken before evaluating: a change racing with the
//! evaluation moves a counter past the stamp, so the entry is never reused
//! then (counters are bumped under the lock that publishes the change, and
//! the evaluation takes that lock after reading them).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ovstage_types::{Result, Token};
use smallvec::SmallVec;

use crate::stage::{StageInner, lock};
use crate::state::{CacheEntry, FilterKey, Resolved, Stamp, Test};
use ovstage_types::sync::read;

/// Entries kept at most; stale entries are dropped on every miss anyway.
const CAPACITY: usize = 16;

/// Ends a family's column counters in a stamp.
const FAMILY_END: u64 = u64::MAX;

impl FilterKey {
    /// The key of a filter whose result depends only on structure; `None`
    /// for filters testing values (never cached).
    pub(super) fn of(tests: &[Test], scope: &[Token]) -> Option<FilterKey> {
        if !tests.iter().all(Test::is_structural) {
            return None;
        }
        Some(FilterKey {
            tests: super::canonical_inline(tests.iter().cloned().collect()),
            scope: super::canonical_inline(scope.into()),
        })
    }
}

impl CacheEntry {
    /// Whether this is the result of the filter `key` for the structure
    /// `stamp`.
    fn holds(&self, key: &FilterKey, stamp: &Stamp) -> bool {
        &self.key == key && &self.stamp == stamp
    }
}

impl StageInner {
    /// The counters structural changes move, read now.
    fn stamp(&self) -> Stamp {
        let prims = self.prims_generation.load(Ordering::Acquire);
        let families = read(&self.families);
        let mut columns = SmallVec::new();
        for family in &families.all {
            columns.extend(read(&family.columns).iter().map(|c| c.structure()));
            columns.push(FAMILY_END);
        }
        Stamp { prims, columns }
    }

    /// The result of a filter query: a cached one when its filter depends
    /// only on structure and nothing structural changed since, otherwise a
    /// fresh evaluation (cached when it may be). `key` is the filter's
    /// [`FilterKey::of`]. The caller's handle owns one reference to the
    /// result's path list.
    pub(super) fn resolve_filter(
        &self,
        tests: &[Test],
        scope: &[Token],
        key: Option<FilterKey>,
    ) -> Result<Arc<Resolved>> {
        let Some(key) = key else {
            return self.evaluate(tests, scope).map(Arc::new);
        };
        let stamp = self.stamp();
        {
            let entries = lock(&self.query_cache.entries);
            if let Some(e) = entries.iter().find(|e| e.holds(&key, &stamp)) {
                // Under the cache's lock, so the entry's own reference keeps
                // the list alive until this one is added.
                self.paths.add_path_list_reference(e.resolved.list)?;
                return Ok(e.resolved.clone());
            }
        }
        let resolved = Arc::new(self.evaluate(tests, scope)?);
        self.paths.add_path_list_reference(resolved.list)?;
        let dropped: Vec<CacheEntry> = {
            let mut entries = lock(&self.query_cache.entries);
            // Entries under another stamp can never match again.
            let (keep, mut dropped): (Vec<CacheEntry>, Vec<CacheEntry>) =
                entries.drain(..).partition(|e| e.stamp == stamp && e.key != key);
            entries.extend(keep);
            while entries.len() >= CAPACITY {
                dropped.extend(entries.pop_front());
            }
            entries.push_back(CacheEntry { key, stamp, resolved: resolved.clone() });
            dropped
        };
        for e in dropped {
            // The entry's reference; the list lives on while handles hold it.
            let _ = self.paths.release_path_list_reference(e.resolved.list);
        }
        Ok(resolved)
    }

    /// Whether a filter's result is cached for the structure as it is now,
    /// so resolving it at once would be a lookup (where to run it: a
    /// lookup costs less than a lane handoff).
    pub(super) fn has_cached(&self, key: Option<&FilterKey>) -> bool {
        let Some(key) = key else { return false };
        let stamp = self.stamp();
        lock(&self.query_cache.entries).iter().any(|e| e.holds(key, &stamp))
    }

    /// Number of cached filter results (for tests).
    #[cfg(test)]
    pub(crate) fn cached_queries(&self) -> usize {
        lock(&self.query_cache.entries).len()
    }
}

#[cfg(test)]
mod tests {
    use ovstage_types::{FilterOp, OpId, PrimMode, QueryHandle, Timeout};

    use crate::{Predicate, Stage, Tensor, WriteData};

    fn done(s: &Stage, op: OpId) {
        s.wait_ok(op, Timeout::INFINITE).unwrap();
    }

    fn write_x(s: &Stage, paths: &[&str], ordinal: u64) {
        let list = s.paths().create_path_list_from_strings(paths).unwrap();
        let q = s.query_from_path_list(list).unwrap();
        let data = WriteData::fixed(Tensor::rows(vec![1f32; paths.len()], 1).unwrap());
        done(s, s.write_attribute(q, "x", ordinal, data, PrimMode::Upsert).unwrap());
        done(s, s.release_query(q).unwrap());
        s.paths().release_path_list_reference(list).unwrap();
    }

    fn run(s: &Stage, filter: &[Predicate<'_>]) -> QueryHandle {
        let q = s.query(filter, &[]).unwrap();
        s.fetch_query_result(q.handle, Timeout::INFINITE).unwrap();
        q.handle
    }

    /// The shared result behind a handle.
    fn result(s: &Stage, q: QueryHandle) -> *const super::Resolved {
        s.inner.query(q, "test").unwrap().ready().unwrap()
    }

    #[test]
    fn structural_results_are_reused_until_structure_changes() {
        let s = Stage::new("cache");
        write_x(&s, &["/A", "/B"], 1);
        let has_x = [Predicate::has("x")];
        let (q1, q2) = (run(&s, &has_x), run(&s, &has_x));
        assert_eq!(result(&s, q1), result(&s, q2), "the second query reuses the first's result");
        assert_eq!(s.inner.cached_queries(), 1);
        let lists = s.paths().live_path_lists();
        done(&s, s.release_query(q1).unwrap());
        done(&s, s.release_query(q2).unwrap());
        assert_eq!(s.paths().live_path_lists(), lists, "the cache keeps its reference to the list");
        // New values, same structure: still reused.
        write_x(&s, &["/A", "/B"], 2);
        let q3 = run(&s, &has_x);
        let kept = result(&s, q3);
        assert_eq!(s.inner.cached_queries(), 1);
        // A new prim: evaluated again; the stale entry and its list go.
        write_x(&s, &["/C"], 3);
        let q4 = run(&s, &has_x);
        assert_ne!(result(&s, q4), kept);
        assert_eq!(s.query_prims(q4).unwrap().len(), 3);
        assert_eq!(s.inner.cached_queries(), 1, "stale entries are dropped on a miss");
        done(&s, s.release_query(q3).unwrap());
        assert_eq!(s.paths().live_path_lists(), lists, "q4's list replaced q3's");
        // Value filters are never cached.
        let by_type = [Predicate::new("usd-prim-type", FilterOp::In, ["Xform"])];
        let q5 = run(&s, &by_type);
        assert_eq!(s.inner.cached_queries(), 1);
        done(&s, s.release_query(q4).unwrap());
        done(&s, s.release_query(q5).unwrap());
    }

    #[test]
    fn the_cache_is_bounded() {
        let s = Stage::new("cache");
        write_x(&s, &["/A", "/B"], 1);
        for i in 0..2 * super::CAPACITY {
            let prefix = format!("/P{i}");
            let q = run(&s, &[Predicate::new("usd-path", FilterOp::Prefix, [prefix.as_str()])]);
            done(&s, s.release_query(q).unwrap());
        }
        assert_eq!(s.inner.cached_queries(), super::CAPACITY);
        assert_eq!(s.paths().live_path_lists(), super::CAPACITY, "one list per entry, none leaked");
    }
}
