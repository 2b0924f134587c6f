//! A map keyed by ordinal for the admission records, which are keyed by
//! the ordinals of mutations in flight: almost always appended at the
//! high end and removed from the low end. A sorted deque does both in
//! O(1) and finds any key by binary search, where a B-tree pays a descent
//! and node bookkeeping on every call of the enqueue path.

use std::collections::VecDeque;
use std::ops::RangeInclusive;

use ovstage_types::sorted;

/// Values by ordinal, in ascending ordinal order.
#[derive(Debug)]
pub(crate) struct OrdinalMap<V> {
    entries: VecDeque<(u64, V)>,
}

impl<V> Default for OrdinalMap<V> {
    fn default() -> Self {
        OrdinalMap { entries: VecDeque::new() }
    }
}

impl<V> OrdinalMap<V> {
    fn find(&self, ordinal: u64) -> Result<usize, usize> {
        sorted::position(&self.entries, ordinal, |(o, _)| *o)
    }

    /// The value at `ordinal`, inserted with `make` when absent.
    pub(crate) fn entry_or_insert_with(&mut self, ordinal: u64, make: impl FnOnce() -> V) -> &mut V {
        let at = match self.find(ordinal) {
            Ok(at) => at,
            // Appending is the usual case: `push_back` skips the general
            // insert's shifting logic.
            Err(at) if at == self.entries.len() => {
                self.entries.push_back((ordinal, make()));
                at
            }
            Err(at) => {
                self.entries.insert(at, (ordinal, make()));
                at
            }
        };
        &mut self.entries[at].1
    }

    /// The value at `ordinal`.
    pub(crate) fn get_mut(&mut self, ordinal: u64) -> Option<&mut V> {
        let at = self.find(ordinal).ok()?;
        Some(&mut self.entries[at].1)
    }

    /// Removes the entry at `ordinal`.
    pub(crate) fn remove(&mut self, ordinal: u64) -> Option<V> {
        let at = self.find(ordinal).ok()?;
        self.entries.remove(at).map(|(_, v)| v)
    }

    /// Whether an entry exists at `ordinal`.
    pub(crate) fn contains(&self, ordinal: u64) -> bool {
        self.find(ordinal).is_ok()
    }

    /// The lowest ordinal held.
    pub(crate) fn first(&self) -> Option<u64> {
        self.entries.front().map(|(o, _)| *o)
    }

    /// The highest ordinal held.
    pub(crate) fn last(&self) -> Option<u64> {
        self.entries.back().map(|(o, _)| *o)
    }

    /// How many ordinals are held.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entries with ordinals in `range`, ascending.
    pub(crate) fn range(&self, range: RangeInclusive<u64>) -> impl Iterator<Item = (u64, &V)> {
        let (lo, hi) = (*range.start(), *range.end());
        let from = self.entries.partition_point(|(o, _)| *o < lo);
        self.entries.range(from..).take_while(move |(o, _)| *o <= hi).map(|(o, v)| (*o, v))
    }

    /// Drops every entry at or below `ordinal`.
    pub(crate) fn drop_through(&mut self, ordinal: u64) {
        while self.entries.front().is_some_and(|(o, _)| *o <= ordinal) {
            self.entries.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Step {
        Add(u64),
        Remove(u64),
        DropThrough(u64),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (0u64..40).prop_map(Step::Add),
            2 => (0u64..40).prop_map(Step::Remove),
            1 => (0u64..40).prop_map(Step::DropThrough),
        ]
    }

    proptest! {
        /// Against a B-tree: random adds (counted), removes and drops, and
        /// every query after each step.
        #[test]
        fn behaves_as_a_sorted_map(steps in proptest::collection::vec(step(), 0..80), lo in 0u64..40, len in 0u64..20) {
            let mut ours: OrdinalMap<u32> = OrdinalMap::default();
            let mut model: BTreeMap<u64, u32> = BTreeMap::new();
            for s in steps {
                match s {
                    Step::Add(o) => {
                        *ours.entry_or_insert_with(o, || 0) += 1;
                        *model.entry(o).or_default() += 1;
                    }
                    Step::Remove(o) => prop_assert_eq!(ours.remove(o), model.remove(&o)),
                    Step::DropThrough(o) => {
                        ours.drop_through(o);
                        model.retain(|k, _| *k > o);
                    }
                }
                prop_assert_eq!(ours.len(), model.len());
                prop_assert_eq!(ours.first(), model.keys().next().copied());
                prop_assert_eq!(ours.last(), model.keys().next_back().copied());
                let got: Vec<(u64, u32)> = ours.range(lo..=lo + len).map(|(o, v)| (o, *v)).collect();
                let want: Vec<(u64, u32)> = model.range(lo..=lo + len).map(|(o, v)| (*o, *v)).collect();
                prop_assert_eq!(got, want);
                prop_assert_eq!(ours.contains(lo), model.contains_key(&lo));
                prop_assert_eq!(ours.get_mut(lo).copied(), model.get(&lo).copied());
            }
        }
    }
}
