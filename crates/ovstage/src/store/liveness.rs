//! Which rows of a column may not be live at its newest version, tracked
//! cheaply enough to run on every publish, so that a cached filter query
//! can tell in O(1) per column whether the set of live rows may have
//! changed (see `query/cache.rs`).
//!
//! Invariant: a row that is neither *fresh* (assigned, no part published
//! yet) nor *maybe dead* (a delete was published for it and no later write
//! at the newest version proved it live again) is live at the newest
//! version. So a publish can change the live set only when it deletes, or
//! when it writes a fresh or maybe-dead row; only then is the structure
//! counter bumped. Conservative: some bumps change nothing (a delete of a
//! dead row, a write at an older ordinal), none is missed.

use super::rows::{RowSet, Rows};

/// Rows that may not be live at the newest version, and a counter of
/// publishes that may have changed the live set.
#[derive(Debug, Default)]
pub(crate) struct Liveness {
    fresh: RowSet,
    maybe_dead: RowSet,
    /// Whether `fresh` / `maybe_dead` may be non-empty (skips the checks in
    /// the steady state).
    any_fresh: bool,
    any_maybe_dead: bool,
}

impl Liveness {
    /// Rows `start..start + len` were just assigned (no part yet).
    pub(crate) fn assigned(&mut self, start: u32, len: u32) {
        if len > 0 {
            self.fresh.insert_range(start, len);
            self.any_fresh = true;
        }
    }

    /// A write of `rows` was published; `newest` when it went into the
    /// newest version (its rows are then live at the newest version).
    /// Returns whether the live set may have changed.
    pub(crate) fn written(&mut self, rows: &Rows, newest: bool) -> bool {
        let mut changed = false;
        if self.any_fresh && self.fresh.first_hit(rows).is_some() {
            // A fresh row has no other part: this write makes it live.
            self.fresh.remove_rows(rows);
            self.any_fresh = !self.fresh.is_empty();
            changed = true;
        }
        if self.any_maybe_dead && self.maybe_dead.first_hit(rows).is_some() {
            // Live at the newest version only when written there; a write
            // at an older ordinal may be hidden by a newer delete.
            if newest {
                self.maybe_dead.remove_rows(rows);
                self.any_maybe_dead = !self.maybe_dead.is_empty();
            }
            changed = true;
        }
        changed
    }

    /// A delete of `rows` was published. Always a possible change.
    pub(crate) fn deleted(&mut self, rows: &Rows) {
        self.maybe_dead.insert_rows(rows);
        self.any_maybe_dead = true;
        if self.any_fresh {
            self.fresh.remove_rows(rows);
            self.any_fresh = !self.fresh.is_empty();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(start: u32, len: u32) -> Rows {
        Rows::Run { start, len }
    }

    #[test]
    fn only_structural_publishes_count() {
        let mut l = Liveness::default();
        l.assigned(0, 4);
        assert!(l.written(&run(0, 2), true), "fresh rows become live");
        assert!(!l.written(&run(0, 2), true), "rewriting live rows changes nothing");
        assert!(l.written(&run(2, 2), false), "fresh rows written at an older ordinal still become live");
        assert!(!l.written(&run(0, 4), true));
        l.deleted(&Rows::List(vec![1].into()));
        assert!(l.written(&run(1, 1), false), "a row deleted before may be revived");
        assert!(l.written(&run(1, 1), false), "...and stays suspect until written at the newest version");
        assert!(l.written(&run(0, 2), true));
        assert!(!l.written(&run(0, 4), true), "proved live again");
    }
}
